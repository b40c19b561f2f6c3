import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { judgeLine } from '../../src/policy/policy-rules.js';
import type { PolicyRule } from '../../src/policy/policy-types.js';
import { loadShellParser, type ShellParser } from '../../src/policy/shell-parse.js';

let parser: ShellParser;
beforeAll(async () => {
  parser = await loadShellParser();
});

const rules: PolicyRule[] = [{ decision: 'deny', prefix: ['rm'] }];
const runs = Number(process.env.TETHER_PROPERTY_RUNS ?? 400);

const single = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
const double = (s: string) => `"${s.replace(/[\\"$`]/g, (c) => `\\${c}`)}"`;

const program = fc.constantFrom('rm', '/bin/rm', "'r'm", '\\rm', '"rm"', '/usr/bin/rm');
const wrapper = fc.constantFrom(
  'env',
  'env -i FOO=1',
  'command',
  'nohup',
  'nice -n 5',
  'timeout 5',
  'time',
  'stdbuf -o0',
  'xargs',
  'setsid',
  'setsid -f',
  'flock /tmp/l',
  'flock -w 5 /tmp/l',
  'taskset 0x1',
  'taskset -c 0',
  'ionice -c 3',
  'chrt -o 0',
  'setpriv --nnp',
  'strace -f -o /dev/null',
  'unshare -r',
  'nsenter -t 1 -m',
  'busybox',
  'sudo',
  'runuser -u nobody --',
  'prlimit --nofile=10',
  'chroot /',
  'fakeroot',
  'mystery-launcher', // not in the table: its argument names rm, so it asks
);
type Quote = (s: string) => string;
const quote = fc.constantFrom<Quote>(single, double);
// A context takes a command line and a quoting and gives a line bash runs it from.
type Context = (code: string, q: Quote) => string;
const context = fc.constantFrom<Context>(
  (c) => c,
  (c) => `echo $(${c})`,
  (c) => `(${c})`,
  (c) => `{ ${c}; }`,
  (c) => `if true; then ${c}; fi`,
  (c) => `cat <(${c})`,
  (c, q) => `bash -c ${q(c)}`,
  (c, q) => `sh -ec ${q(c)}`,
  (c, q) => `eval ${q(c)}`,
  (c, q) => `trap ${q(c)} EXIT`,
  (c, q) => `su -c ${q(c)}`,
  (c, q) => `script -qc ${q(c)} /dev/null`,
  (c, q) => `flock /tmp/l -c ${q(c)}`,
  (c, q) => `[[ -v ${q(`a[$(${c})]`)} ]]`,
  (c, q) => `test -v ${q(`a[$(${c})]`)}`,
  (c, q) => `printf -v ${q(`a[$(${c})]`)} x`,
  (c, q) => `declare ${q(`a[$(${c})]=1`)}`,
  (c, q) => `local -a ${q(`a[$(${c})]`)}`,
  (c, q) => `read ${q(`a[$(${c})]`)} <<< x`,
  (c, q) => `let ${q(`a[$(${c})]`)}`,
  (c, q) => `(( ${q(`a[$(${c})]`)} ))`,
  (c, q) => `echo $(( ${q(`a[$(${c})]`)} ))`,
  (c, q) => `x=${q(`a[$(${c})]`)}`,
  (c, q) => `arr=([${q(`a[$(${c})]`)}]=1)`,
  (c, q) => `PS1=${q(`$(${c})`)}`,
  (c, q) => `export PS4=${q(`\`${c}\``)}`,
  (c, q) => `PROMPT_COMMAND=${q(c)}`,
  (c, q) => `mapfile -C ${q(c)} -c 1 a <<< x`,
  (c, q) => `compgen -C ${q(c)} x`,
  (c, q) => `complete -C ${q(c)} git`,
  (c, q) => `compgen -W ${q(`$(${c})`)} x`,
  (c, q) => `builtin printf -v ${q(`a[$(${c})]`)} x`,
);
const separator = fc.constantFrom('; ', ' && ', ' || ', ' | ', '\n', ' & ');
const harmless = fc.constantFrom('echo ok', 'ls -la', 'true', 'git status', 'cat a.txt');

const line = fc
  .record({
    program,
    wrappers: fc.array(wrapper, { maxLength: 3 }),
    layers: fc.array(fc.tuple(context, quote), { minLength: 1, maxLength: 3 }),
    before: fc.option(fc.tuple(harmless, separator), { nil: undefined }),
    after: fc.option(fc.tuple(separator, harmless), { nil: undefined }),
  })
  .map(({ program, wrappers, layers, before, after }) => {
    let code = [...wrappers, program, 'w'].join(' ');
    for (const [wrap, q] of layers) code = wrap(code, q);
    return `${before ? before.join('') : ''}${code}${after ? after.join('') : ''}`;
  });

describe('policy property (A6)', () => {
  it('A6 property: a denied program under any composition of wrappers, quoting, evaluation contexts and separators is never allowed', () => {
    fc.assert(
      fc.property(line, (text) => {
        const verdict = judgeLine(parser.parse(text), rules, 'allow');
        expect(verdict.decision, `${text}\n→ ${verdict.reason}`).not.toBe('allow');
      }),
      { numRuns: runs },
    );
  });
});
