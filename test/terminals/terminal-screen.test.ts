import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime } from '../../src/index.js';

let rt: Runtime;
let owner: OwnerLease['token'];

beforeEach(async () => {
  rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 300 } });
  owner = rt.owners.host().token;
});

afterEach(async () => {
  await rt.dispose();
});

describe('rt.terminals.screen after execute', () => {
  it('T7: the screen shows each command as written, its output and the prompt — never the nonce machinery', async () => {
    const t = await rt.terminals.open(owner, { cols: 100, rows: 30 });
    const commands = [
      'echo one',
      'for i in 1 2; do\n  echo "n=$i"\ndone',
      `echo 'wow!' "it's \\"quoted\\"" !!`,
      'false',
      'cat <<EOF\nliteral $((1 + 1)) !x\nEOF\n',
    ];
    for (const command of commands) await rt.terminals.execute(owner, t.id, command);
    const screen = await rt.terminals.screen(owner, t.id);
    expect(screen.text).toBe(
      [
        '$ echo one',
        'one',
        '$ for i in 1 2; do',
        '>   echo "n=$i"',
        '> done',
        'n=1',
        'n=2',
        `$ echo 'wow!' "it's \\"quoted\\"" !!`,
        `wow! it's "quoted" !!`,
        '$ false',
        '$ cat <<EOF',
        '> literal $((1 + 1)) !x',
        '> EOF',
        'literal 2 !x',
        '$',
      ].join('\n'),
    );
    expect(screen.text).not.toMatch(/__tether|697|eval \$'|\\x/);
    expect(screen.cursor).toEqual({ row: 14, col: 2 });
  });

  it('T7: what a person types with send still shows as typed, between executes', async () => {
    const t = await rt.terminals.open(owner, { cols: 80, rows: 24 });
    await rt.terminals.execute(owner, t.id, 'X=7');
    let sent = await rt.terminals.send(owner, t.id, 'echo "typed $X"\n', { settleMs: 300 });
    while (!/typed 7/.test(sent.output)) sent = await rt.terminals.send(owner, t.id, '', { settleMs: 300 });
    await rt.terminals.execute(owner, t.id, 'echo after');
    const lines = (await rt.terminals.screen(owner, t.id)).text.split('\n');
    expect(lines).toEqual(['$ X=7', '$ echo "typed $X"', 'typed 7', '$ echo after', 'after', '$']);
  });
});
