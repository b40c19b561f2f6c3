import { afterEach, describe, expect, it } from 'vitest';
import type { JobSpec } from '../../src/jobs/job-types.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { failsWith, type JobHarness, jobHarness, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

// A producer that runs until the test (or its cancel hook, one timer later) ends it.
function heldJob(i: number, ends: Array<() => void>, cancels: number[]): JobSpec {
  return {
    kind: 'custom',
    label: `held ${i}`,
    run: () => {
      let end!: () => void;
      const done = new Promise<{ exitCode: number; signal: null }>((resolve) => {
        end = () => resolve({ exitCode: 0, signal: null });
      });
      ends[i] = end;
      return {
        done,
        cancel: () => {
          cancels.push(i);
          setTimeout(end, 1);
        },
      };
    },
  };
}

// Runs after the current turn's I/O and microtasks, before the next turn's slice; called from a
// timer (`fromTimer`), so no slice of an earlier turn is still pending in this turn's check phase.
const afterThisTurn = <T>(read: () => T) => new Promise<T>((resolve) => setImmediate(() => resolve(read())));
const fromTimer = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('jobs.drainOwner, jobs.wait and dispose', () => {
  it('J8, D2: jobs ending in one turn settle 16 per turn, in the order they ended; a drain cancels 16 per turn', async () => {
    h = jobHarness({ maxRunningPerOwner: 80 });
    const owner = h.owners.agent().token;
    const ends: Array<() => void> = [];
    const cancels: number[] = [];
    const infos = await Promise.all(
      Array.from({ length: 80 }, (_, i) => h.jobs.start(owner, heldJob(i, ends, cancels))),
    );
    const order: string[] = [];
    h.jobs.onCompletion(owner, (info) => {
      order.push(info.label);
    });
    const terminal = async () => (await h.jobs.list(owner)).filter((info) => info.isTerminal).length;

    // 40 producers end in one synchronous loop: their actors end a slice per turn.
    await fromTimer();
    const firstTurn = afterThisTurn(() => order.length);
    for (let i = 0; i < 40; i++) ends[i]!();
    expect(await firstTurn).toBe(16);
    await Promise.all(infos.slice(0, 40).map((info) => h.jobs.wait(owner, info.id, 5000)));
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => `held ${i}`));
    expect(await terminal()).toBe(40);

    // The drain's cancels (each ending its job a timer later) go out a slice per turn too.
    await fromTimer();
    const cancelTurn = afterThisTurn(() => cancels.length);
    const drained = h.jobs.drainOwner(owner);
    expect(await cancelTurn).toBe(16);
    await drained;
    expect(cancels).toEqual(Array.from({ length: 40 }, (_, i) => 40 + i));
    expect(await terminal()).toBe(80);
    expect(h.jobs.stats()).toMatchObject({ running: 0, starting: 0 });
  });

  // J8 over real shell jobs: test/shell/shell-background-tree.test.ts. This one needs a producer
  // whose run() the test holds open, which only the test producer offers.
  it('J8: drainOwner also waits for a start in flight and stops the job it registers', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const job = processJob('exec sleep 300');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow: JobSpec = {
      ...job.spec,
      run: async (ctx) => {
        const hooks = await job.spec.run(ctx);
        await gate;
        return hooks;
      },
    };
    const starting = h.jobs.start(owner, slow);
    await job.handle;
    expect(h.jobs.stats().starting).toBe(1);
    const drained = h.jobs.drainOwner(owner);
    release();
    const info = await starting;
    await drained;
    expect((await h.jobs.list(owner)).find((j) => j.id === info.id)).toMatchObject({ state: 'killed' });
    expect(listTaggedProcesses((await job.handle).treeId)).toEqual([]);
  });

  it('wait resolves true at a terminal state and false at the timeout, leaving no timer or waiter behind', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const job = processJob('read line; exit 0', { stdin: true });
    const info = await h.jobs.start(owner, job.spec);
    expect(await h.jobs.wait(owner, info.id, 0)).toBe(false);
    expect(await h.jobs.wait(owner, info.id, 30)).toBe(false);
    expect(h.jobs.stats()).toMatchObject({ waiters: 0, timers: 0 });
    const long = h.jobs.wait(owner, info.id, 600_000);
    expect(h.jobs.stats()).toMatchObject({ waiters: 1, timers: 1 });
    await job.write('go');
    expect(await long).toBe(true);
    expect(h.jobs.stats()).toMatchObject({ waiters: 0, timers: 0 });
    expect(await h.jobs.wait(owner, info.id, 0)).toBe(true);
  });

  it('wait rejects a non-finite, negative or too large timeout with INVALID_ARGUMENT', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('exit 0').spec);
    for (const timeout of [Number.NaN, Number.POSITIVE_INFINITY, -1, 2 ** 31, '5' as unknown as number]) {
      expect(await failsWith(h.jobs.wait(owner, info.id, timeout), 'INVALID_ARGUMENT')).toContain(
        'timeoutMs',
      );
    }
    await settle(h.jobs, owner, info.id);
  });

  it('D2: dispose drains every owner, releases pending waiters and leaves the service quiescent', async () => {
    h = jobHarness();
    const a = h.owners.agent().token;
    const b = h.owners.host().token;
    const ja = await h.jobs.start(a, processJob('sleep 300 & wait').spec);
    await h.jobs.start(b, processJob(`trap '' TERM; exec sleep 300`).spec);
    const waiting = h.jobs.wait(a, ja.id, 600_000);
    const sub = h.jobs.onCompletion(a, () => {});
    await Promise.all([h.jobs.dispose(), h.jobs.dispose()]);
    expect(await waiting).toBe(true);
    expect(h.jobs.stats()).toMatchObject({
      jobs: 0,
      running: 0,
      starting: 0,
      waiters: 0,
      timers: 0,
      deliveries: 0,
    });
    await failsWith(h.jobs.start(a, processJob('exit 0').spec), 'RUNTIME_DISPOSED');
    await failsWith(h.jobs.list(a), 'RUNTIME_DISPOSED');
    // Subscriptions were detached by dispose; disposing one later is harmless.
    expect(h.jobs.stats().listeners).toBe(0);
    sub.dispose();
  });
});
