import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import { type JobExit, jobMachine } from '../../machines/job.js';
import { jobOwnerMachine } from '../../machines/job-owner.js';
import { jobRegistryMachine, ownerActorId } from '../../machines/job-registry.js';

// A registry whose jobs settle when the test says so (the machine alone, no processes).
function registry(limit: number) {
  const finishers = new Map<string, (exit: JobExit) => void>();
  const ended: string[] = [];
  const job = jobMachine.provide({
    actors: {
      producer: fromPromise<JobExit, { jobId: string }>(
        ({ input }) => new Promise((resolve) => finishers.set(input.jobId, resolve)),
      ),
    },
  });
  const root = createActor(
    jobRegistryMachine.provide({
      actors: { owner: jobOwnerMachine.provide({ actors: { job } }) },
      actions: { jobEnded: (_, { jobId }) => ended.push(jobId) },
    }),
    { input: { limit }, systemId: 'tether.jobs' },
  ).start();
  const register = (jobId: string, ownerKey: string) =>
    root.send({ type: 'REGISTER', job: { jobId, ownerKey, kind: 'k', label: jobId, startedAt: 0 } });
  // The job actor, a child of its owner's actor.
  const jobActor = (ownerKey: string, jobId: string) =>
    root.getSnapshot().children[ownerActorId(ownerKey)]?.getSnapshot().children[jobId];
  const finish = async (jobId: string, exit: JobExit = { exitCode: 0, signal: null }) => {
    finishers.get(jobId)!(exit);
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { root, finishers, ended, register, jobActor, finish };
}

describe('machines/job-registry', () => {
  it('J4: canStart is a guard of the registry: RESERVE is refused once an owner holds the limit', () => {
    const { root } = registry(2);
    const reserve = (ownerKey: string) => ({ type: 'RESERVE', ownerKey }) as const;
    root.send(reserve('o1'));
    root.send(reserve('o1'));
    expect(root.getSnapshot().can(reserve('o1'))).toBe(false);
    expect(root.getSnapshot().can(reserve('o2'))).toBe(true);
    root.send(reserve('o1')); // refused: the guard holds, nothing changes
    expect(root.getSnapshot().context.slots).toEqual({ o1: 2 });
    root.send({ type: 'RELEASE', ownerKey: 'o1' });
    expect(root.getSnapshot().can(reserve('o1'))).toBe(true);
    expect(jobRegistryMachine.implementations.guards).toHaveProperty('canStart');
    root.stop();
  });

  it("J4: every job is a child of its owner's actor in the one system; its end frees the slot in the same step", async () => {
    const { root, finishers, ended, register, jobActor } = registry(1);
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    register('job_a', 'o1');
    const child = jobActor('o1', 'job_a')!;
    expect(child.system).toBe(root.system);
    expect(root.system.get('tether.jobs')).toBe(root);
    expect(root.getSnapshot().context.live).toEqual({ o1: 1 });
    expect(Object.keys(root.getSnapshot().children)).toEqual(['owner:o1']);
    expect(root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })).toBe(false);
    child.send({ type: 'CANCEL' });
    await Promise.resolve();
    finishers.get('job_a')!({ exitCode: null, signal: 'SIGTERM' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toEqual(['job_a']);
    expect(child.getSnapshot().value).toBe('killed');
    expect(root.getSnapshot().context).toMatchObject({ slots: {}, live: {} });
    expect(root.getSnapshot().children).toEqual({}); // the owner's actor went with its last job
    expect(root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })).toBe(true);
    root.stop();
  });

  it("J4: an owner's actor holds its own jobs only, lives while it has one, and comes back for the next", async () => {
    const { root, ended, register, jobActor, finish } = registry(2);
    for (const [jobId, ownerKey] of [
      ['a1', 'o1'],
      ['a2', 'o1'],
      ['b1', 'o2'],
    ] as const) {
      root.send({ type: 'RESERVE', ownerKey });
      register(jobId, ownerKey);
    }
    const children = (ownerKey: string) =>
      Object.keys(root.getSnapshot().children[ownerActorId(ownerKey)]?.getSnapshot().children ?? {});
    expect(Object.keys(root.getSnapshot().children).sort()).toEqual(['owner:o1', 'owner:o2']);
    expect([children('o1'), children('o2')]).toEqual([['a1', 'a2'], ['b1']]);
    const o1 = root.getSnapshot().children['owner:o1'];

    await finish('a1');
    expect(children('o1')).toEqual(['a2']);
    expect(root.getSnapshot().context).toMatchObject({ slots: { o1: 1, o2: 1 }, live: { o1: 1, o2: 1 } });
    await finish('a2');
    expect(Object.keys(root.getSnapshot().children)).toEqual(['owner:o2']);
    expect(o1?.getSnapshot().status).toBe('stopped');
    expect(jobActor('o2', 'b1')?.getSnapshot().value).toEqual({ running: 'active' });

    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    register('a3', 'o1');
    expect(root.getSnapshot().children['owner:o1']).not.toBe(o1); // a fresh actor for the owner
    expect(children('o1')).toEqual(['a3']);
    await finish('a3');
    await finish('b1');
    expect(ended).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(root.getSnapshot().children).toEqual({});
    expect(root.getSnapshot().context).toMatchObject({ slots: {}, live: {} });
    root.stop();
  });

  it('CLOSE stops accepting reservations but still tracks the jobs that live', async () => {
    const { root, finishers, ended, register } = registry(4);
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    root.send({ type: 'CLOSE' });
    expect(root.getSnapshot().matches('closed')).toBe(true);
    expect(root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })).toBe(false);
    register('job_b', 'o1');
    await Promise.resolve();
    finishers.get('job_b')!({ exitCode: 0, signal: null });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toEqual(['job_b']);
    expect(root.getSnapshot().context.slots).toEqual({});
    root.stop();
  });

  it("J4: over any interleaving of starts and ends, each owner's actor holds exactly its live jobs and every end is reported once", async () => {
    const op = fc.oneof(
      fc.record({ start: fc.constantFrom('o1', 'o2', 'o3') }),
      fc.record({ end: fc.nat(), failed: fc.boolean() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 24 }), async (ops) => {
        const { root, ended, register, finish } = registry(3);
        const live = new Map<string, string[]>(); // owner → its live jobs, in start order
        const endedByModel: string[] = [];
        let n = 0;
        for (const o of ops) {
          if ('start' in o) {
            if (!root.getSnapshot().can({ type: 'RESERVE', ownerKey: o.start })) continue;
            root.send({ type: 'RESERVE', ownerKey: o.start });
            const jobId = `j${++n}`;
            register(jobId, o.start);
            live.set(o.start, [...(live.get(o.start) ?? []), jobId]);
          } else {
            const all = [...live.values()].flat();
            if (all.length === 0) continue;
            const jobId = all[o.end % all.length]!;
            if (o.failed) {
              // A producer that reports its own failure (J1 `error`): `failed`, still one end.
              await finish(jobId, { exitCode: 1, signal: null, error: 'producer failed' });
            } else await finish(jobId);
            for (const [owner, jobs] of live) {
              const rest = jobs.filter((id) => id !== jobId);
              if (rest.length > 0) live.set(owner, rest);
              else live.delete(owner);
            }
            endedByModel.push(jobId);
          }
          const snapshot = root.getSnapshot();
          expect(Object.keys(snapshot.children).sort()).toEqual([...live.keys()].map(ownerActorId).sort());
          for (const [owner, jobs] of live) {
            const ownerActor = snapshot.children[ownerActorId(owner)]!;
            expect(Object.keys(ownerActor.getSnapshot().children)).toEqual(jobs);
            expect(snapshot.context.live[owner]).toBe(jobs.length);
            expect(snapshot.context.slots[owner]).toBe(jobs.length);
          }
          expect(ended).toEqual(endedByModel);
        }
        root.stop();
      }),
      { numRuns: 60 },
    );
  });
});
