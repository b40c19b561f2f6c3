import { beforeAll, describe, expect, it } from 'vitest';
import { judgeLine } from '../../src/policy/policy-rules.js';
import type { PolicyDecision, PolicyRule } from '../../src/policy/policy-types.js';
import { loadShellParser, type ShellParser } from '../../src/policy/shell-parse.js';

let parser: ShellParser;
beforeAll(async () => {
  parser = await loadShellParser();
});

const rules: PolicyRule[] = [{ decision: 'deny', prefix: ['rm'] }];
const judge = (line: string, fallback: PolicyDecision = 'allow') =>
  judgeLine(parser.parse(line), rules, fallback);
const R = '$(rm w)';

describe('words bash evaluates (A6)', () => {
  it.each([
    `[[ -v 'a[${R}]' ]]`,
    `test -v 'a[${R}]'`,
    `[ -v 'a[${R}]' ]`,
    `printf -v 'a[${R}]' x`,
    `declare 'a[${R}]=1'`,
    `typeset -i x='a[${R}]'`,
    `x='a[${R}]'`,
    `read 'a[${R}]' <<< x`,
    `mapfile -C 'rm w' -c 1 a <<< x`,
    `compgen -C 'rm w' x`,
    `compgen -W '${R}' x`,
    `complete -C 'rm w' git`,
    `let 'a[${R}]'`,
    `(( 'a[${R}]' ))`,
    `echo $(( 'a[${R}]' ))`,
    `echo $[ 'a[${R}]' ]`,
    `[[ 'a[${R}]' -eq 1 ]]`,
    `for (( i='a[${R}]'; 0; )); do :; done`,
    `arr=(['a[${R}]']=1)`,
    `array['a[${R}]']=1`,
    `trap 'rm w' EXIT`,
    `PS1='${R}'`,
    `PS0='\\$(rm w)'`,
    `export PS4='\`rm w\`'`,
    `PROMPT_COMMAND='rm w'`,
    `PROMPT_COMMAND=('rm w')`,
    `declare PROMPT_COMMAND='rm w'`,
    `declare 'PS1=${R}'`,
    `builtin printf -v 'a[${R}]' x`,
    `command let 'a[${R}]'`,
    `eval 'rm w'`,
    `su -c 'rm w'`,
    `script -qc 'rm w' /dev/null`,
    `flock /tmp/l -c 'rm w'`,
  ])('A6: %s is denied (the evaluated word is parsed as code)', (line) => {
    expect(judge(line).decision, line).toBe('deny');
    expect(judge(line).reason, line).toContain('rm');
  });

  it.each([
    [`x=abc; echo \${x:y}`, 'arithmetic'],
    [`echo \${!y}`, 'indirect'],
    [`[[ -v 'a[i]' ]]`, 'arithmetic'],
    [`printf -v "$n" x`, 'run time'],
    [`read PS1`, 'PS1'],
    [`printf -v PROMPT_COMMAND x`, 'PROMPT_COMMAND'],
    [`BASH_CMDS[ls]=/tmp/x`, 'BASH_CMDS'],
    [`BASH_CMDS=([ls]=/tmp/x)`, 'BASH_CMDS'],
    [`BASH_ALIASES[ls]='make'`, 'BASH_ALIASES'],
    [`declare -n p=PATH`, 'nameref'],
    [`local -n b=BASH_CMDS`, 'nameref'],
    [`export PATH=/tmp/x`, 'PATH'],
    [`declare 'PATH=/tmp'`, 'PATH'],
    [`for PATH in /tmp; do ls; done`, 'PATH'],
    [`enable -n echo`, 'enable'],
    [`hash -p /tmp/x ls`, 'hash'],
    [`trap "$x" EXIT`, 'run time'],
    [`PS1=$x`, 'PS1'],
    [`setsid $x`, 'setsid'],
    [`strace -o /dev/null make`, ''],
    [`ld.so /bin/rm w`, 'rm'],
    [`mywrap rm w`, '`rm`'],
    [`python3 -c 'import os; os.system("rm w")'`, '`rm`'],
  ])('A6: %s asks', (line, why) => {
    const v = judge(line);
    if (line.startsWith('strace')) return expect(v.decision).toBe('allow'); // make: default allow
    expect(v.decision, `${line}: ${v.reason}`).toBe('ask');
    expect(v.reason, line).toContain(why);
  });

  it.each([
    'setsid rm w',
    'setsid -f rm w',
    'flock /tmp/l rm w',
    'flock -w 5 /tmp/l rm w',
    'ionice -c 3 rm w',
    'taskset 0x1 rm w',
    'taskset -c 0 rm w',
    'strace -f -o /dev/null rm w',
    'unshare -r rm w',
    'unshare --map-root-user --mount rm w',
    'nsenter -t 1 -m rm w',
    'setpriv --reuid=1000 rm w',
    'chrt -f 10 rm w',
    'chrt -b 0 rm w',
    'runuser -u nobody -- rm w',
    "runuser -l nobody -c 'rm w'",
    "su nobody -c 'rm w'",
    'busybox rm w',
    'watch -n 1 rm w',
    'sg users rm w',
    'chroot / rm w',
    'prlimit --nofile=10 rm w',
    'numactl -N 0 rm w',
    'fakeroot rm w',
    'valgrind --tool=none rm w',
  ])('A6: the program of wrapper %s is judged', (line) => {
    const v = judge(line);
    expect(v.decision, `${line}: ${v.reason}`).toBe('deny');
  });

  it.each([
    'echo hi',
    `[[ -v HOME ]]`,
    `test -v a`,
    `printf -v x '%s' 1`,
    `read -r line <<< x`,
    `mapfile -t lines <<< x`,
    `declare -a arr=(1 2)`,
    `export FOO=bar`,
    `export FOO`,
    `local x=1`,
    `x=5`,
    `echo $((1 + 2))`,
    `(( 1 + 2 ))`,
    `trap - EXIT`,
    `trap 'echo bye' EXIT`,
    `PS1='\\u@\\h:\\w\\$ '`,
    `compgen -W 'a b c' a`,
    `setsid make`,
    `flock /tmp/l make`,
    `echo rm`,
    `echo \${x:-default}`,
    `echo \${x:1:2}`,
  ])('A6: %s stays allowed', (line) => {
    const v = judge(line);
    expect(v.decision, `${line}: ${v.reason} ${v.undecidable.join('; ')}`).toBe('allow');
  });
});
