import { describe, it } from 'vitest';
import { assertHeldOnEveryEntry, type Shape } from './policy-entries.js';

const shapes: Shape[] = [
  {
    name: 'BASH_CMDS',
    line: (w) => `BASH_CMDS[ls]=/bin/rm; ls ${w}`,
    why: /BASH_CMDS.*looks up command names/,
  },
  {
    name: 'a nameref onto BASH_CMDS',
    line: (w) => `declare -n p=BASH_CMDS; p[ls]=/bin/rm; ls ${w}`,
    why: /nameref/,
  },
  { name: 'PS4', line: (w) => `PS4='$(rm ${w})'; set -x; :`, why: /rm .*PS4/ },
  { name: 'trap', line: (w) => `trap 'rm ${w}' EXIT`, why: /rm .*trap/ },
  {
    name: 'PATH',
    line: (w) => `ln -s /bin/rm ./ls && PATH=.:$PATH ls ${w}`,
    why: /PATH.*looks up command names/,
  },
];

describe('policy: command lookup and strings bash runs later (A6)', () => {
  it('A6: BASH_CMDS, namerefs, PATH, PS4 and trap strings are judged (ask with the lookup change, or the string parsed as code) on every entry', async () => {
    await assertHeldOnEveryEntry(shapes);
  }, 120_000);
});
