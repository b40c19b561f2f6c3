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
    expect(await rt.terminals.list(a)).toEqual([]); // hidden: the model never sees it in terminal_list
    expect(rt.terminals.stats().open).toBe(2); // … but it is a real terminal of its owner
  });

  it('W1: the hidden shell ending on its own is not a completion; the next call opens a fresh one', async () => {
    const a = rt.owners.host().token;
    const heard: string[] = [];
    using _sub = rt.terminals.onSessionExit(a, (exit) => void heard.push(exit.id));
    await rt.persistentBash.run(a, '(sleep 0.2; kill -KILL $$) >/dev/null 2>&1 &');
    for (let i = 0; i < 500 && rt.terminals.stats().open > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(rt.terminals.stats().open).toBe(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual([]);
    expect(await rt.persistentBash.run(a, 'echo again')).toMatchObject({ output: 'again\n', fresh: true });
  });

  it('T4: a drained owner’s hidden terminal is replaced on the next call and says fresh', async () => {
    const a = rt.owners.host().token;
    await rt.persistentBash.run(a, 'export P=1');
    await rt.terminals.drainOwner(a);
    expect(await rt.persistentBash.run(a, 'echo "[$P]"')).toMatchObject({ output: '[]\n', fresh: true });
  });
});
