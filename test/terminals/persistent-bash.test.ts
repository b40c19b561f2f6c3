import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';

let rt: Runtime;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
});
afterEach(async () => {
  await rt.dispose();
});

describe('rt.persistentBash', () => {
  it('T1: one hidden terminal per owner keeps state between calls', async () => {
    const a = rt.owners.host().token;
    const b = rt.owners.host().token;
    expect(await rt.persistentBash.run(a, 'cd /tmp; export P=a')).toMatchObject({ exitCode: 0, fresh: true });
    await rt.persistentBash.run(b, 'export P=b');
    expect(await rt.persistentBash.run(a, 'echo "$P $(pwd)"')).toEqual({
      output: 'a /tmp\n',
      exitCode: 0,
      timedOut: false,
      shellReset: false,
      fresh: false,
    });
    expect((await rt.persistentBash.run(b, 'echo $P')).output).toBe('b\n');
    expect(await rt.terminals.list(a)).toHaveLength(1);
  });

  it('T4: a drained owner’s hidden terminal is replaced on the next call and says fresh', async () => {
    const a = rt.owners.host().token;
    await rt.persistentBash.run(a, 'export P=1');
    await rt.terminals.drainOwner(a);
    expect(await rt.persistentBash.run(a, 'echo "[$P]"')).toMatchObject({ output: '[]\n', fresh: true });
  });
});
