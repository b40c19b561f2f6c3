import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { judgeLine } from '../../src/policy/policy-rules.js';
import type { PolicyDecision, PolicyRule } from '../../src/policy/policy-types.js';
import { loadShellParser, type ShellParser } from '../../src/policy/shell-parse.js';

let parser: ShellParser;
beforeAll(async () => {
  parser = await loadShellParser();
});

const rules: PolicyRule[] = [
  { decision: 'allow', prefix: ['git', 'status'] },
  { decision: 'allow', prefix: ['ls'] },
  { decision: 'allow', prefix: ['echo'] },
  { decision: 'allow', prefix: ['cat'] },
  { decision: 'allow', prefix: ['wc'] },
  { decision: 'allow', prefix: ['bash'] },
  { decision: 'allow', prefix: ['sh'] },
  { decision: 'allow', prefix: ['nohup'] },
  { decision: 'deny', prefix: ['rm'] },
  { decision: 'ask', prefix: ['git', 'push'] },
];
const judge = (line: string, fallback: PolicyDecision = 'deny', escalate = false) =>
  judgeLine(parser.parse(line), rules, fallback, escalate);

describe('policy rules (A2)', () => {
  it('A2: parses every simple command of lists, pipelines, subshells and compound commands', () => {
    const { commands, undecidable } = parser.parse(
      "ls -la | wc -l && (cd /tmp; git status) > out.txt; if true; then echo 'a b'; fi",
    );
    expect(commands.map((c) => c.argv)).toEqual([
      ['ls', '-la'],
      ['wc', '-l'],
      ['cd', '/tmp'],
      ['git', 'status'],
      ['true'],
      ['echo', 'a b'],
    ]);
    expect(undecidable).toEqual([]);
  });

  it('A2: quotes and escapes do not hide a command name; runtime values are null', () => {
    const argvs = (line: string) => parser.parse(line).commands.map((c) => c.argv);
    expect(argvs('\'r\'m -rf "/"')).toEqual([['rm', '-rf', '/']]);
    expect(argvs('\\rm x')).toEqual([['rm', 'x']]);
    expect(argvs('ls $HOME *.txt ~/x')).toEqual([['ls', null, null, null]]);
    expect(judge("'r'm -rf /").decision).toBe('deny');
    expect(judge('\\rm -rf /').decision).toBe('deny');
  });

  it('A2: a line is allowed only when every simple command is; any deny denies', () => {
    expect(judge('git status && ls | wc -l').decision).toBe('allow');
    expect(judge('git status; rm -rf /').decision).toBe('deny');
    expect(judge('ls | (cat; rm x)').decision).toBe('deny');
    expect(judge('ls && make').decision).toBe('deny'); // make: no rule, default deny
    expect(judge('ls && make', 'ask').decision).toBe('ask');
    expect(judge('git push origin', 'allow').decision).toBe('ask');
    expect(judge('git status --short').reason).toContain('rule allow [git status]');
  });

  it('A2: a deny rule catches the command behind a path or a wrapper; an allow rule never matches a path', () => {
    for (const line of [
      '/bin/rm -rf /',
      'env rm -rf /',
      'command rm x',
      'nohup nice -n 5 rm x',
      'timeout 5 rm x',
      'xargs rm',
      'find . -exec rm {} ;',
      'env FOO=1 rm x',
    ]) {
      expect(judge(line, 'allow').decision, line).toBe('deny');
    }
    expect(judge('nohup ls').decision).toBe('allow'); // a wrapper passes the decision on
    expect(judge('./ls').decision).toBe('deny'); // a planted ./ls is not ls: default deny
    expect(judge('sudo -u root ls', 'allow').decision).toBe('ask'); // an option we cannot read
  });

  it.each([
    ['command substitution', 'echo $(whoami)', 'command substitution'],
    ['backticks', 'echo `whoami`', 'backticks'],
    ['process substitution', 'cat <(ls)', 'process substitution'],
    ['a redirection target substitution', 'ls > $(echo f)', 'command substitution'],
    ['a variable in command position', '$CMD -rf /', 'command position'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash expansion, on purpose
    ['an expansion in command position', '${CMD} x', 'command position'],
    ['eval', "eval 'ls'", '`eval`'],
    ['exec', 'exec ls', '`exec`'],
    ['source', 'source ./env.sh', '`source`'],
    ['dot', '. ./env.sh', '`.`'],
    ['bash -c', "bash -c 'ls'", '`bash -c`'],
    ['sh -c', "sh -c 'ls'", '`sh -c`'],
    ['bash -lc', "bash -lc 'ls'", '`bash -c`'],
    ['a shell reading its input', 'echo ls | bash', 'reading commands'],
    ['env bash -c', "env bash -c 'make'", '`bash -c`'],
    ['a function definition', 'f() { ls; }; f', 'function definition'],
    ['an alias', "alias ls='rm -rf /'", 'alias'],
    ['arithmetic on variables', "x='a[$(make)]'; ((x))", 'arithmetic'],
    ['PATH assignment', 'PATH=/tmp/evil ls', 'PATH'],
    ['invalid syntax', 'ls (', 'not valid bash'],
    // Found by the property below: the syntax error sat beside a redirection the walk skipped.
    ['invalid syntax inside a redirection', 'nohup f() { ls; } > out.txt', 'not valid bash'],
  ])('A2: %s is never allowed by a rule: it asks', (_name, line, why) => {
    const verdict = judge(line, 'allow');
    expect(verdict.decision, line).toBe('ask');
    expect(verdict.undecidable.join('; ')).toContain(why);
    expect(judge(line, 'deny').decision, `${line} with default deny`).toBe('deny'); // the stricter default wins
  });

  it('A2: a deny rule still denies inside an undecidable line', () => {
    expect(judge('rm -rf $(pwd)', 'allow').decision).toBe('deny');
    expect(judge('echo $(rm -rf /)', 'allow').decision).toBe('deny');
    // A6: the string a shell or a quoted subscript evaluates is parsed too.
    expect(judge("env bash -c 'rm -rf /'", 'allow').decision).toBe('deny');
    expect(judge("x='a[$(rm)]'; ((x))", 'allow').decision).toBe('deny');
  });

  it('A4: escalation is never allowed by a rule alone', () => {
    expect(judge('ls', 'allow', true).decision).toBe('ask');
    expect(judge('rm x', 'allow', true).decision).toBe('deny');
  });

  it('A2 property: a generated composition is allowed only if every part is allowed', () => {
    const allowed = fc.constantFrom('ls -la', 'git status', 'echo hi', "cat 'a b'", 'wc -l');
    const forbidden = fc.constantFrom(
      'rm -rf /',
      '$X',
      'eval ls',
      'echo $(id)',
      'echo `id`',
      "bash -c 'ls'",
      '/bin/rm x',
      'env rm x',
      'cat <(ls)',
      'f() { ls; }',
      'git push',
    );
    type Part = { text: string; ok: boolean };
    const simple = fc.oneof(
      allowed.map((text) => ({ text, ok: true })),
      forbidden.map((text) => ({ text, ok: false })),
    );
    // A wrapper passes its command's verdict on.
    const part: fc.Arbitrary<Part> = fc.oneof(
      simple,
      simple.map((p) => ({ text: `nohup ${p.text}`, ok: p.ok })),
    );
    const compose: fc.Arbitrary<Part> = fc.letrec<{ node: Part }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        part,
        fc
          .tuple(tie('node'), fc.constantFrom(' && ', ' || ', '; ', ' | ', ' & '), tie('node'))
          .map(([a, op, b]) => ({ text: `${a.text}${op}${b.text}`, ok: a.ok && b.ok })),
        tie('node').map((a) => ({ text: `( ${a.text} )`, ok: a.ok })), // `((` would be arithmetic
        tie('node').map((a) => ({ text: `{ ${a.text}; }`, ok: a.ok })),
        tie('node').map((a) => ({ text: `${a.text} > out.txt 2>&1`, ok: a.ok })),
        tie('node').map((a) => ({ text: `if ${a.text}; then ls; fi`, ok: a.ok })),
        tie('node').map((a) => ({ text: `while ${a.text}; do echo x; done`, ok: a.ok })),
      ),
    })).node;
    fc.assert(
      fc.property(compose, fc.constantFrom<PolicyDecision>('allow', 'ask', 'deny'), (line, fallback) => {
        const verdict = judgeLine(parser.parse(line.text), rules, fallback);
        if (verdict.decision === 'allow') expect(line.ok, line.text).toBe(true);
        if (line.ok) expect(verdict.decision, line.text).toBe('allow');
      }),
      { numRuns: Number(process.env.TETHER_PROPERTY_RUNS ?? 300) },
    );
  });
});
