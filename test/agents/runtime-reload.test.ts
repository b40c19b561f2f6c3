import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createLocalProvider,
  createRuntime,
  type Runtime,
  type SubprocessProvider,
  TetherError,
} from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { waitFor } from '../support/spawn-tree.js';

let rt: Runtime;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
});
afterEach(async () => {
  await rt.dispose();
});

const codeOf = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every notice an agent received, as `job:<id>` / `terminal:<id>` keys, in order. */
function recorder(sessionId: string, runtime: Runtime = rt) {
  const keys: string[] = [];
  const agent = runtime.agents.create({
    sessionId,
    onTurn: () => {},
    onNotice: (notice) => {
      keys.push(...notice.jobs.map((j) => `job:${j.id}`), ...notice.terminals.map((t) => `terminal:${t.id}`));
    },
  });
  return { agent, keys };
}

describe('rt.reload (hot reload of provider and lifecycle wiring)', () => {
  it('S5, W1: a job that ends in the listener gap is replayed to the live agent once the new router attaches', async () => {
    const { agent, keys } = recorder('gap');
    const job = await rt.shell.background(agent.owner, { command: 'sleep 0.3; echo done' });
    await rt.reload({
      provider: async () => {
        // the gap: no router listens while the "new module" loads; the job ends meanwhile
        expect(rt.agents.stats().listeners).toBe(0);
        await rt.jobs.wait(agent.owner, job.id, 10_000);
        return createLocalProvider();
      },
    });
    expect(rt.agents.stats().listeners).toBe(1);
    await waitFor(() => keys.length > 0, 'the replayed notice');
    await sleep(200); // a second delivery would arrive within the quiet window
    expect(keys).toEqual([`job:${job.id}`]);
  });

  it('S5, W1: a completion the old router already claimed is delivered by it after DETACH, and not again by the new one', async () => {
    // A 10 s quiet window: the claim is certainly still pending when the reload comes.
    const slow = await createRuntime({ limits: { cleanupGraceMs: 200, quietWindowMs: 10_000 } });
    try {
      const { agent, keys } = recorder('claimed', slow);
      const job = await slow.shell.background(agent.owner, { command: 'true' });
      await slow.jobs.wait(agent.owner, job.id, 10_000);
      await waitFor(() => slow.agents.stats().queued > 0, 'the old router to claim it');
      await slow.reload();
      // Flushed at DETACH, long before the 10 s window would have closed.
      await waitFor(() => keys.length > 0, 'the flushed notice', 5_000);
      await sleep(200);
      expect(keys).toEqual([`job:${job.id}`]);
      expect(slow.agents.stats()).toMatchObject({ listeners: 1, queued: 0, actors: 2 });
    } finally {
      await slow.dispose();
    }
  });

  it('S5, W1: a terminal whose shell exits in the gap is replayed too', async () => {
    const { agent, keys } = recorder('term');
    const t = await rt.terminals.open(agent.owner);
    await rt.reload({
      provider: async () => {
        await rt.terminals.send(agent.owner, t.id, 'exit 0\r', { timeoutMs: 10_000 });
        await waitFor(() => rt.terminals.stats().open === 0, 'the terminal to be swept');
        return createLocalProvider();
      },
    });
    await waitFor(() => keys.length > 0, 'the replayed session exit');
    await sleep(200);
    expect(keys).toEqual([`terminal:${t.id}`]);
  });

  it('S5, W1: an agent created during the gap gets one router, not two; its completions arrive once', async () => {
    let born: ReturnType<typeof recorder> | undefined;
    await rt.reload({
      provider: () => {
        born = recorder('born'); // published with its own router while the others are detached
        return createLocalProvider();
      },
    });
    expect(rt.agents.stats()).toMatchObject({ agents: 1, listeners: 1 });
    const job = await rt.shell.background(born!.agent.owner, { command: 'true' });
    await waitFor(() => born!.keys.length > 0, 'the notice');
    await sleep(200);
    expect(born!.keys).toEqual([`job:${job.id}`]);
  });

  it('S5, D1: an agent disposed during the gap is still drained to verified-dead trees and gets no new router', async () => {
    const gone = rt.agents.create({ sessionId: 'gone', onTurn: () => {} });
    const stays = rt.agents.create({ sessionId: 'stays', onTurn: () => {} });
    await rt.shell.background(gone.owner, { command: 'sleep 1000 & setsid sleep 1000 & wait' });
    const t = await rt.terminals.open(gone.owner);
    await rt.terminals.execute(gone.owner, t.id, 'sleep 1000 &');
    await rt.reload({
      provider: async () => {
        await gone.dispose();
        return createLocalProvider();
      },
    });
    expect(gone.phase).toBe('retired');
    expect(await rt.jobs.list(gone.owner).catch(codeOf)).toBe('OWNER_RETIRED');
    expect(rt.terminals.stats().open).toBe(0);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    expect(rt.agents.stats()).toMatchObject({ agents: 1, actors: 2, listeners: 1 });
    expect(stays.phase).toBe('idle');
  });

  it('S2, S5: commands and terminals after a reload spawn through the new provider; what started before stays usable and killable', async () => {
    const local = createLocalProvider();
    const spawned: string[] = [];
    let disposed = 0;
    const counting: SubprocessProvider = {
      name: 'counting',
      spawn: (spec) => {
        spawned.push(spec.argv.join(' '));
        return local.spawn(spec);
      },
      spawnTerminal: (spec) => {
        spawned.push(`terminal ${spec.argv[0]}`);
        return local.spawnTerminal(spec);
      },
      get workers() {
        return local.workers;
      },
      dispose: () => {
        disposed++;
        return local.dispose();
      },
    };
    const lease = rt.owners.host();
    const before = await rt.shell.background(lease.token, { command: 'sleep 1000' });
    const oldTerminal = await rt.terminals.open(lease.token);
    await rt.reload({ provider: counting });
    const after = await rt.shell.run({ command: 'echo via-new' });
    expect(after.output).toBe('via-new\n');
    const t = await rt.terminals.open(lease.token);
    expect((await rt.terminals.execute(lease.token, t.id, 'echo in-new')).output).toBe('in-new\n');
    expect(spawned).toEqual([expect.stringContaining('echo via-new'), 'terminal /bin/bash']);
    expect((await rt.terminals.execute(lease.token, oldTerminal.id, 'echo in-old')).output).toBe('in-old\n');
    expect(await rt.jobs.kill(lease.token, before.id)).toBe('requested');
    expect(await rt.jobs.wait(lease.token, before.id, 10_000)).toBe(true);
    const [info] = await rt.jobs.list(lease.token);
    expect(info).toMatchObject({ id: before.id, state: 'killed' });
    await rt.dispose(); // the runtime owns the providers it was handed: both are disposed
    expect(disposed).toBe(1);
    expect(local.workers).toBe(0);
    expect(rt.terminals.stats().hostAlive).toBe(false);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });

  it('S5: a bad provider is refused with a clear error and the old one stays; after dispose, reload says so', async () => {
    const failed = await rt.reload({ provider: { spawn: 'no' } as never }).catch((err: unknown) => err);
    expect(codeOf(failed)).toBe('INVALID_ARGUMENT');
    expect(String((failed as Error).message)).toMatch(/SubprocessProvider/);
    const thrown = await rt
      .reload({
        provider: () => {
          throw new Error('module failed to load');
        },
      })
      .catch((err: unknown) => err);
    expect(String(thrown)).toMatch(/module failed to load/);
    expect((await rt.shell.run({ command: 'echo still' })).output).toBe('still\n');
    const agent = rt.agents.create({ sessionId: 'after', onTurn: () => {} });
    expect(agent.phase).toBe('idle');
    expect(rt.agents.stats().listeners).toBe(1); // the routers came back after the failed reload
    let inner: unknown;
    await rt.reload({
      provider: async () => {
        inner = await rt.reload().catch((err: unknown) => err); // from inside the gap: refused, no deadlock
        return createLocalProvider();
      },
    });
    expect(codeOf(inner)).toBe('INVALID_ARGUMENT');
    expect(String(inner)).toMatch(/from inside a reload/);
    await rt.dispose();
    expect(codeOf(await rt.reload().catch((err: unknown) => err))).toBe('RUNTIME_DISPOSED');
  });
});
