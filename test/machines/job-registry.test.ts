import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import { type JobExit, jobMachine } from '../../machines/job.js';
import { jobChildOf, jobOwnerMachine, liveJobs } from '../../machines/job-owner.js';
import { canReserve, JOB_SHARDS, jobRegistryMachine, ownerActorOf } from '../../machines/job-registry.js';
import { jobShardMachine } from '../../machines/job-shard.js';

// A registry whose jobs settle when the test says so (the machine alone, no processes).
function registry(limit: number) {
  const finishers = new Map<string, (exit: JobExit) => void>();
  const ended: string[] = [];
  // Each end's owner counts as `jobEnded` saw them: the slot must already be free.
  const seenAtEnd: ({ slots: number; live: number } | undefined)[] = [];
  const job = jobMachine.provide({
    actors: {
      producer: fromPromise<JobExit, { jobId: string }>(
        ({ input }) => new Promise((resolve) => finishers.set(input.jobId, resolve)),
      ),
    },
  });
  const root = createActor(
    jobRegistryMachine.provide({
      actors: {
        shard: jobShardMachine.provide({ actors: { owner: jobOwnerMachine.provide({ actors: { job } }) } }),
      },
      actions: {
        jobEnded: ({ event }, { jobId }) => {
          ended.push(jobId);
          seenAtEnd.push(counts((event as { ownerKey: string }).ownerKey));
        },
      },
    }),
    { input: { limit }, systemId: 'tether.jobs' },
  ).start();
  const register = (jobId: string, ownerKey: string) =>
    root.send({ type: 'REGISTER', job: { jobId, ownerKey, kind: 'k', label: jobId, startedAt: 0 } });
  // The job actor, a child of its owner's actor.
  const jobActor = (ownerKey: string, jobId: string) => {
    const owner = ownerActorOf(root.getSnapshot(), ownerKey);
    return owner && jobChildOf(owner.getSnapshot(), jobId);
  };
  // The owner's actor's counts (slots: reserved or live; live: job actors), or undefined without one.
  function counts(ownerKey: string) {
    const owner = ownerActorOf(root.getSnapshot(), ownerKey);
    if (owner === undefined) return undefined;
    const { context } = owner.getSnapshot();
    return { slots: context.slots, live: liveJobs(context) };
  }
  const finish = async (jobId: string, exit: JobExit = { exitCode: 0, signal: null }) => {
    finishers.get(jobId)!(exit);
    await new Promise((resolve) => setImmediate(resolve));
  };
  // Every owner's actor, across the shards, named by its owner (`owner:<key>`; its child id is its slot's).
  const owners = () =>
    Object.values(root.getSnapshot().children)
      .flatMap((shard) => Object.values(shard!.getSnapshot().children))
      .map((owner) => `owner:${owner!.getSnapshot().context.ownerKey}`)
      .sort();
  return { root, finishers, ended, seenAtEnd, register, jobActor, counts, owners, finish };
}

// The jobs of an owner's actor's children (each job actor's input names its job; its child id
// is its slot's), in the order of their slots.
function jobsOf(root: ReturnType<typeof registry>['root'], ownerKey: string): string[] {
  const owner = ownerActorOf(root.getSnapshot(), ownerKey)?.getSnapshot();
  return Object.values(owner?.children ?? {}).map((child) => String(child!.getSnapshot().context.jobId));
}

describe('machines/job-registry', () => {
  it("J4: canStart is a guard of the owner's actor: RESERVE is refused once an owner holds the limit", () => {
    const { root, counts } = registry(2);
    const reserve = (ownerKey: string) => ({ type: 'RESERVE', ownerKey }) as const;
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(true); // no actor yet: a new owner holds nothing
    root.send(reserve('o1'));
    root.send(reserve('o1'));
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(false);
    expect(canReserve(root.getSnapshot(), 'o2')).toBe(true);
    root.send(reserve('o1')); // refused: the guard holds, nothing changes
    expect(counts('o1')).toEqual({ slots: 2, live: 0 });
    root.send({ type: 'RELEASE', ownerKey: 'o1' });
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(true);
    expect(counts('o1')).toEqual({ slots: 1, live: 0 });
    expect(jobOwnerMachine.implementations.guards).toHaveProperty('canStart');
    root.stop();
  });

  it("J4: every job is a child of its owner's actor in the one system; its end frees the slot in the same step", async () => {
    const { root, finishers, ended, seenAtEnd, register, jobActor, counts, owners } = registry(1);
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    register('job_a', 'o1');
    const child = jobActor('o1', 'job_a')!;
    expect(child.system).toBe(root.system);
    expect(root.system.get('tether.jobs')).toBe(root);
    expect(counts('o1')).toEqual({ slots: 1, live: 1 });
    expect(owners()).toEqual(['owner:o1']);
    expect(Object.keys(root.getSnapshot().children)).toHaveLength(JOB_SHARDS); // the owners' shards
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(false);
    child.send({ type: 'CANCEL' });
    await Promise.resolve();
    finishers.get('job_a')!({ exitCode: null, signal: 'SIGTERM' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toEqual(['job_a']);
    expect(child.getSnapshot().value).toBe('killed');
    expect(seenAtEnd).toEqual([{ slots: 0, live: 0 }]); // freed before the end was reported
    expect(owners()).toEqual(['owner:o1']); // until the owner is forgotten
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(true);
    root.stop();
  });

  it("J4: an owner's actor holds its own jobs only and lives from its first start until FORGET, which it refuses while it holds a slot", async () => {
    const { root, ended, register, counts, owners, finish } = registry(2);
    for (const [jobId, ownerKey] of [
      ['a1', 'o1'],
      ['a2', 'o1'],
      ['b1', 'o2'],
    ] as const) {
      root.send({ type: 'RESERVE', ownerKey });
      register(jobId, ownerKey);
    }
    const children = (ownerKey: string) => jobsOf(root, ownerKey);
    expect(owners()).toEqual(['owner:o1', 'owner:o2']);
    expect([children('o1'), children('o2')]).toEqual([['a1', 'a2'], ['b1']]);
    const o1 = ownerActorOf(root.getSnapshot(), 'o1');

    await finish('a1');
    expect(children('o1')).toEqual(['a2']);
    expect([counts('o1'), counts('o2')]).toEqual([
      { slots: 1, live: 1 },
      { slots: 1, live: 1 },
    ]);
    root.send({ type: 'FORGET', ownerKey: 'o1' }); // refused: a2 still runs
    expect(owners()).toEqual(['owner:o1', 'owner:o2']);
    await finish('a2');
    expect(ownerActorOf(root.getSnapshot(), 'o1')).toBe(o1); // the same actor, idle
    expect(counts('o1')).toEqual({ slots: 0, live: 0 });
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    root.send({ type: 'FORGET', ownerKey: 'o1' }); // refused: a reserved slot is held
    expect(owners()).toEqual(['owner:o1', 'owner:o2']);
    root.send({ type: 'RELEASE', ownerKey: 'o1' });
    root.send({ type: 'FORGET', ownerKey: 'o1' });
    expect(owners()).toEqual(['owner:o2']);
    expect(o1?.getSnapshot().status).toBe('done'); // it reached its final state, and the registry let it go;

    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    register('a3', 'o1');
    expect(ownerActorOf(root.getSnapshot(), 'o1')).not.toBe(o1); // a fresh actor for the owner
    expect(children('o1')).toEqual(['a3']);
    await finish('a3');
    await finish('b1');
    expect(ended).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect([counts('o1'), counts('o2')]).toEqual([
      { slots: 0, live: 0 },
      { slots: 0, live: 0 },
    ]);
    root.stop();
  });

  it('CLOSE stops accepting reservations but still tracks the jobs that live', async () => {
    const { root, finishers, ended, register, counts } = registry(4);
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    root.send({ type: 'CLOSE' });
    expect(root.getSnapshot().matches('closed')).toBe(true);
    expect(canReserve(root.getSnapshot(), 'o1')).toBe(false);
    register('job_b', 'o1');
    await Promise.resolve();
    finishers.get('job_b')!({ exitCode: 0, signal: null });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toEqual(['job_b']);
    expect(counts('o1')).toEqual({ slots: 0, live: 0 });
    root.stop();
  });

  it("J4: over any interleaving of starts, ends and forgets, each owner's actor holds exactly its live jobs, lives until forgotten idle, and every end is reported once", async () => {
    const owner = fc.constantFrom('o1', 'o2', 'o3');
    const op = fc.oneof(
      fc.record({ start: owner }),
      fc.record({ end: fc.nat(), failed: fc.boolean() }),
      fc.record({ forget: owner }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 24 }), async (ops) => {
        const { root, ended, seenAtEnd, register, counts, owners, finish } = registry(3);
        const live = new Map<string, string[]>(); // owner → its live jobs, in start order
        const known = new Set<string>(); // owners with an actor: started, not forgotten idle
        const endedByModel: string[] = [];
        let n = 0;
        for (const o of ops) {
          if ('start' in o) {
            const full = (live.get(o.start)?.length ?? 0) >= 3;
            expect(canReserve(root.getSnapshot(), o.start)).toBe(!full);
            if (full) continue;
            root.send({ type: 'RESERVE', ownerKey: o.start });
            const jobId = `j${++n}`;
            register(jobId, o.start);
            live.set(o.start, [...(live.get(o.start) ?? []), jobId]);
            known.add(o.start);
          } else if ('forget' in o) {
            root.send({ type: 'FORGET', ownerKey: o.forget });
            if (!live.has(o.forget)) known.delete(o.forget);
          } else {
            const all = [...live.values()].flat();
            if (all.length === 0) continue;
            const jobId = all[o.end % all.length]!;
            if (o.failed) {
              // A producer that reports its own failure (J1 `error`): `failed`, still one end.
              await finish(jobId, { exitCode: 1, signal: null, error: 'producer failed' });
            } else await finish(jobId);
            for (const [key, jobs] of live) {
              const rest = jobs.filter((id) => id !== jobId);
              if (rest.length > 0) live.set(key, rest);
              else live.delete(key);
            }
            endedByModel.push(jobId);
          }
          expect(owners()).toEqual([...known].map((key) => `owner:${key}`).sort());
          for (const key of known) {
            const jobs = live.get(key) ?? [];
            expect(jobsOf(root, key).sort()).toEqual([...jobs].sort());
            expect(counts(key)).toEqual({ slots: jobs.length, live: jobs.length });
          }
          expect(ended).toEqual(endedByModel);
          // Each end was reported with its slot already free: never more held than still live.
          for (const seen of seenAtEnd) expect(seen!.slots).toBe(seen!.live);
        }
        root.stop();
      }),
      { numRuns: 60 },
    );
  });
});
