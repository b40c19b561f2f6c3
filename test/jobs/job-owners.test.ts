import { afterEach, describe, expect, it } from 'vitest';
import type { AgentOwnerToken } from '../../src/owners/owner-token.js';
import { failsWith, type JobHarness, jobHarness, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

describe('job owners', () => {
  it('J3: read, wait and kill by another owner are JOB_NOT_FOUND; list shows only own jobs', async () => {
    h = jobHarness();
    const alice = h.owners.agent().token;
    const bob = h.owners.agent().token;
    const job = await h.jobs.start(alice, processJob('exec sleep 300').spec);
    const bobs = await h.jobs.start(bob, processJob('exit 0').spec);
    for (const attempt of [
      h.jobs.read(bob, job.id, 0),
      h.jobs.wait(bob, job.id, 10),
      h.jobs.kill(bob, job.id),
    ]) {
      const message = await failsWith(attempt, 'JOB_NOT_FOUND');
      expect(message).toContain(job.id);
    }
    expect((await h.jobs.list(bob)).map((j) => j.id)).toEqual([bobs.id]);
    expect((await h.jobs.list(alice)).map((j) => j.id)).toEqual([job.id]);
    // Bob's kill did nothing to Alice's job.
    expect((await h.jobs.list(alice))[0]).toMatchObject({ state: 'running', cancelRequested: false });
    await h.jobs.kill(alice, job.id);
    await settle(h.jobs, alice, job.id);
    await settle(h.jobs, bob, bobs.id);
  });

  it('J3: a completion listener only hears about its own owner’s jobs', async () => {
    h = jobHarness();
    const alice = h.owners.agent().token;
    const bob = h.owners.agent().token;
    const heard: string[] = [];
    const sub = h.jobs.onCompletion(bob, (info) => {
      heard.push(info.id);
    });
    const a = await h.jobs.start(alice, processJob('exit 0').spec);
    const b = await h.jobs.start(bob, processJob('exit 0').spec);
    await settle(h.jobs, alice, a.id);
    await settle(h.jobs, bob, b.id);
    await h.jobs.dispose(); // settles every delivery in flight
    expect(heard).toEqual([b.id]);
    sub.dispose();
  });

  it('O3: unknown and malformed job ids fail with JOB_NOT_FOUND / INVALID_ARGUMENT', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    expect(await failsWith(h.jobs.read(owner, 'job_nope', 0), 'JOB_NOT_FOUND')).toContain('list()');
    await failsWith(h.jobs.kill(owner, ''), 'INVALID_ARGUMENT');
    await failsWith(h.jobs.wait(owner, 42 as unknown as string, 10), 'INVALID_ARGUMENT');
  });

  it('O3: a missing, forged or foreign owner fails closed with OWNER_INVALID on every operation', async () => {
    h = jobHarness();
    const foreign = jobHarness();
    const spec = processJob('exit 0').spec;
    for (const bad of [undefined, 'host', {}, foreign.owners.host().token] as unknown as AgentOwnerToken[]) {
      await failsWith(h.jobs.start(bad, spec), 'OWNER_INVALID');
      await failsWith(h.jobs.list(bad), 'OWNER_INVALID');
      await failsWith(h.jobs.read(bad, 'job_x', 0), 'OWNER_INVALID');
      await failsWith(h.jobs.wait(bad, 'job_x', 1), 'OWNER_INVALID');
      await failsWith(h.jobs.kill(bad, 'job_x'), 'OWNER_INVALID');
      await failsWith(() => h.jobs.onCompletion(bad, () => {}), 'OWNER_INVALID');
      await failsWith(h.jobs.drainOwner(bad), 'OWNER_INVALID');
    }
    await foreign.close();
  });

  it('O3: a retired owner fails closed with OWNER_RETIRED; draining it still works and releases its facts', async () => {
    h = jobHarness();
    const lease = h.owners.agent();
    const owner = lease.token;
    const job = await h.jobs.start(owner, processJob('exec sleep 300').spec);
    lease.retire();
    await failsWith(h.jobs.start(owner, processJob('exit 0').spec), 'OWNER_RETIRED');
    await failsWith(h.jobs.list(owner), 'OWNER_RETIRED');
    await failsWith(h.jobs.read(owner, job.id, 0), 'OWNER_RETIRED');
    await failsWith(h.jobs.wait(owner, job.id, 1), 'OWNER_RETIRED');
    await failsWith(h.jobs.kill(owner, job.id), 'OWNER_RETIRED');
    await failsWith(() => h.jobs.onCompletion(owner, () => {}), 'OWNER_RETIRED');
    expect(h.jobs.stats()).toMatchObject({ jobs: 1, running: 1 });
    await h.jobs.drainOwner(owner);
    expect(h.jobs.stats()).toMatchObject({ jobs: 0, running: 0 });
  });
});
