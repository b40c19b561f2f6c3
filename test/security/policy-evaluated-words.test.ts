import { describe, it } from 'vitest';
import { assertHeldOnEveryEntry, type Shape } from './policy-entries.js';

const sub = (w: string) => `$(rm ${w})`;
const shapes: Shape[] = [
  { name: '[[ -v ]]', line: (w) => `a=1; [[ -v 'a[${sub(w)}]' ]]`, why: /rm .*a\[\$\(rm/ },
  { name: 'test -v', line: (w) => `a=1; test -v 'a[${sub(w)}]'`, why: /rm .*test -v/ },
  { name: 'printf -v', line: (w) => `printf -v 'a[${sub(w)}]' x`, why: /rm .*printf -v/ },
  { name: 'declare', line: (w) => `declare 'a[${sub(w)}]=1'`, why: /rm .*declare/ },
  { name: 'read', line: (w) => `read 'a[${sub(w)}]' <<< x`, why: /rm .*read/ },
  { name: 'mapfile -C', line: (w) => `mapfile -C 'rm ${w} #' -c 1 a <<< x`, why: /rm .*mapfile -C/ },
  { name: 'compgen -C', line: (w) => `compgen -C 'rm ${w}' x`, why: /rm .*compgen -C/ },
  { name: 'let', line: (w) => `let 'a[${sub(w)}]'`, why: /rm .*let/ },
  { name: '(( ))', line: (w) => `(( 'a[${sub(w)}]' ))`, why: /rm .*arithmetic/ },
  { name: '$(( ))', line: (w) => `echo $(( 'a[${sub(w)}]' ))`, why: /rm .*arithmetic/ },
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash expansion, on purpose
  { name: '${x:offset}', line: (w) => `y='a[${sub(w)}]'; x=abc; echo \${x:y}`, why: /rm .*arithmetic/ },
];

describe('policy: words bash evaluates (A6)', () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash expansion, on purpose
  it('A6: a $(…) inside a quoted subscript or arithmetic word (test -v, printf -v, declare, read, mapfile -C, compgen -C, let, ((…)), $((…)), ${x:…}) is judged on every entry', async () => {
    await assertHeldOnEveryEntry(shapes);
  }, 120_000);
});
