import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import { type JobExit, jobMachine } from '../../machines/job.js';
import { jobRegistryMachine } from '../../machines/job-registry.js';

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
      actors: { job },
      actions: { jobEnded: (_, { jobId }) => ended.push(jobId) },
    }),
    { input: { limit }, systemId: 'tether.jobs' },
  ).start();
  const register = (jobId: string, ownerKey: string) =>
    root.send({ type: 'REGISTER', job: { jobId, ownerKey, kind: 'k', label: jobId, startedAt: 0 } });
  return { root, finishers, ended, register };
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

  it('J4: every job is a child actor of the one system; its end frees the slot in the same step', async () => {
    const { root, finishers, ended, register } = registry(1);
    root.send({ type: 'RESERVE', ownerKey: 'o1' });
    register('job_a', 'o1');
    const child = root.getSnapshot().children.job_a!;
    expect(child.system).toBe(root.system);
    expect(root.system.get('tether.jobs')).toBe(root);
    expect(root.getSnapshot().context.live).toEqual({ o1: ['job_a'] });
    expect(root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })).toBe(false);
    child.send({ type: 'CANCEL' });
    await Promise.resolve();
    finishers.get('job_a')!({ exitCode: null, signal: 'SIGTERM' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toEqual(['job_a']);
    expect(child.getSnapshot().value).toBe('killed');
    expect(root.getSnapshot().context).toMatchObject({ slots: {}, live: {} });
    expect(root.getSnapshot().children).toEqual({});
    expect(root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })).toBe(true);
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
});
