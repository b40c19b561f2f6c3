import { afterEach, describe, expect, it } from 'vitest';
import type { JobExit, JobHooks } from '../../src/jobs/job-types.js';
import { collected } from '../support/collected.js';
import { type JobHarness, jobHarness, readAll, settle } from '../support/job-harness.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

describe('job retention', () => {
  it("J5, D3: a finished job keeps its output and info until its owner ends, but not its producer's hooks (what held the process; P8)", async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    let hooksRef: WeakRef<object> | undefined;
    let finish: ((exit: JobExit) => void) | undefined;
    const info = await h.jobs.start(owner, {
      kind: 'test',
      label: 'a process stand-in',
      run: ({ append }) => {
        append('tick\n');
        // Stands for a child process handle with its pipes: only the hooks reach it.
        const hooks: JobHooks & { handle: ArrayBuffer } = {
          handle: new ArrayBuffer(1 << 20),
          cancel() {},
          done: new Promise<JobExit>((resolve) => {
            finish = resolve;
          }),
        };
        hooksRef = new WeakRef(hooks);
        return hooks;
      },
    });
    finish!({ exitCode: 0, signal: null });
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({ state: 'succeeded', exitCode: 0 });
    finish = undefined;
    expect(await collected(hooksRef!)).toBe(true);
    expect((await readAll(h.jobs, owner, info.id)).text).toBe('tick\n');
    expect(h.jobs.stats().jobs).toBe(1);
  });

  it("J5, J2: a finished job keeps what its actor's final snapshot said, not the stopped actor (its mailbox and closures, ~1.3 KB a job; P8)", async () => {
    let actorRef: WeakRef<object> | undefined;
    h = jobHarness({
      inspect: (event) => {
        const snapshot = event.type === '@xstate.snapshot' ? (event.snapshot as { context?: unknown }) : {};
        const context = snapshot.context as { jobId?: string; kind?: string } | undefined;
        if (context?.kind === 'ended-job' && actorRef === undefined) actorRef = new WeakRef(event.actorRef);
      },
    });
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, {
      kind: 'ended-job',
      label: 'exits 3',
      run: ({ append }) => {
        append('out\n');
        return { cancel() {}, done: Promise.resolve({ exitCode: 3, signal: null }) };
      },
    });
    const ended = await settle(h.jobs, owner, info.id);
    expect(ended).toMatchObject({ id: info.id, state: 'failed', exitCode: 3, isTerminal: true });
    expect(actorRef).toBeDefined(); // the inspector saw the job's actor
    expect(await collected(actorRef!)).toBe(true);
    // Everything a caller asks of it still answers from what the final snapshot said.
    expect(await h.jobs.list(owner)).toEqual([ended]);
    expect(await h.jobs.wait(owner, info.id, 10)).toBe(true);
    expect(await h.jobs.kill(owner, info.id)).toBe('already_stopped');
    expect((await readAll(h.jobs, owner, info.id)).text).toBe('out\n');
    expect(h.jobs.stats()).toMatchObject({ jobs: 1, running: 0 });
    // What one caller does to its answer is not the next caller's answer.
    const [listed] = (await h.jobs.list(owner)) as unknown as [{ exitCode: number | null }];
    listed.exitCode = 99;
    expect(await h.jobs.list(owner)).toEqual([ended]);
  });

  it("J4, O2: an owner's actor lives from its first start until the owner ended and its jobs drained, then the job system lets it go (P8)", async () => {
    // Each shard's owners, from the snapshots the inspector sees (a shard's id is `shard:N`).
    const shards = new Map<string, readonly (string | null)[]>();
    h = jobHarness({
      inspect: (event) => {
        const id = (event.actorRef as { id?: string }).id ?? '';
        if (event.type !== '@xstate.snapshot' || !/^shard:\d+$/.test(id)) return;
        shards.set(
          id,
          (event.snapshot as unknown as { context: { owners: readonly (string | null)[] } }).context.owners,
        );
      },
    });
    const owners = () =>
      [...shards.values()]
        .flat()
        .filter((key) => key !== null)
        .sort();
    const quick = (append: (text: string) => void): JobHooks => {
      append('tick\n');
      return { cancel() {}, done: Promise.resolve({ exitCode: 0, signal: null }) };
    };
    const [a, b] = [h.owners.host(), h.owners.host()];
    for (const lease of [a, b]) {
      const info = await h.jobs.start(lease.token, {
        kind: 'test',
        label: 'quick',
        run: ({ append }) => quick(append),
      });
      await settle(h.jobs, lease.token, info.id);
    }
    const [keyA, keyB] = [h.owners.keyOf(a.token), h.owners.keyOf(b.token)];
    expect(owners()).toEqual([keyA, keyB].sort()); // idle, but still there
    await h.jobs.drainOwner(a.token); // a live owner's drain keeps its actor
    expect(owners()).toEqual([keyA, keyB].sort());
    a.retire();
    await h.jobs.drainOwner(a.token);
    expect(owners()).toEqual([keyB]);
  });
  it('J5, D3: the job machines see one child-end event type per slot, not one per job or owner (XState keeps what it memoized per event type for the life of the machine; P8)', async () => {
    const types = new Set<string>();
    h = jobHarness({
      inspect: (event) => {
        if (event.type !== '@xstate.event') return;
        const type = (event as { event: { type: string } }).event.type;
        if (/^xstate\.(done|error)\.actor\./.test(type)) types.add(type);
      },
    });
    const ids: string[] = [];
    // 20 owners one after the other, two jobs each, each owner ended and drained before the next.
    for (let o = 0; o < 20; o++) {
      const lease = h.owners.host();
      for (let i = 0; i < 2; i++) {
        const info = await h.jobs.start(lease.token, {
          kind: 'test',
          label: `job ${o}.${i}`,
          run: () => ({ cancel() {}, done: Promise.resolve({ exitCode: 0, signal: null }) }),
        });
        expect(await settle(h.jobs, lease.token, info.id)).toMatchObject({ state: 'succeeded' });
        ids.push(info.id);
      }
      lease.retire();
      await h.jobs.drainOwner(lease.token);
    }
    expect(new Set(ids).size).toBe(40);
    expect(h.jobs.stats().jobs).toBe(0); // every owner's records went with it
    // One job slot and one owner slot, reused, and the producer each job invokes: with a child
    // id per job and per owner, 40 jobs of 20 owners made 61 types.
    expect([...types].sort()).toEqual([
      'xstate.done.actor.job#0',
      'xstate.done.actor.owner#0',
      expect.stringMatching(/^xstate\.done\.actor\.[^#]+$/), // the producer's invoke id
    ]);
  });
});
