import { afterEach, describe, expect, it } from 'vitest';
import type { JobInfo } from '../../src/jobs/job-types.js';
import { type JobHarness, jobHarness, settle } from '../support/job-harness.js';
import { manualJob } from '../support/manual-job.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

const tick = (n: number): Promise<void> =>
  n === 0 ? Promise.resolve() : Promise.resolve().then(() => tick(n - 1));

describe('jobs.onCompletion', () => {
  it('J6: each listener hears each completion of a real process exactly once, with its final facts', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const first: JobInfo[] = [];
    const second: JobInfo[] = [];
    const a = h.jobs.onCompletion(owner, (info) => {
      first.push(info);
    });
    const b = h.jobs.onCompletion(owner, async (info) => {
      second.push(info);
    });
    const ok = await h.jobs.start(owner, processJob('exit 0').spec);
    const bad = await h.jobs.start(owner, processJob('exit 5').spec);
    await settle(h.jobs, owner, ok.id);
    await settle(h.jobs, owner, bad.id);
    await h.jobs.dispose();
    for (const heard of [first, second]) {
      expect(heard.map((i) => i.id).sort()).toEqual([ok.id, bad.id].sort());
      expect(heard.find((i) => i.id === bad.id)).toMatchObject({
        state: 'failed',
        exitCode: 5,
        isTerminal: true,
      });
    }
    a.dispose();
    b[Symbol.dispose]();
    expect(h.jobs.stats().listeners).toBe(0);
  });

  it('J6: completion racing subscription, at every microtask offset, is delivered exactly once', async () => {
    h = jobHarness();
    for (let offset = 0; offset < 12; offset++) {
      const owner = h.owners.agent().token;
      const job = manualJob();
      const info = await h.jobs.start(owner, job.spec);
      const calls: string[] = [];
      job.finish();
      await tick(offset);
      const sub = h.jobs.onCompletion(owner, (i) => {
        calls.push(i.id);
      });
      await settle(h.jobs, owner, info.id);
      await tick(20);
      expect(calls, `offset ${offset}`).toEqual([info.id]);
      sub.dispose();
    }
  });

  it('J6: a completion with no subscriber is replayed once to the next subscriber, not to later ones (S5)', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const info = await h.jobs.start(owner, processJob('exit 0').spec);
    await settle(h.jobs, owner, info.id);
    const replacement: string[] = [];
    const later: string[] = [];
    const r = h.jobs.onCompletion(owner, (i) => {
      replacement.push(i.id);
    });
    await tick(5);
    const l = h.jobs.onCompletion(owner, (i) => {
      later.push(i.id);
    });
    await tick(5);
    expect(replacement).toEqual([info.id]);
    expect(later).toEqual([]);
    r.dispose();
    l.dispose();
  });

  it('J6: a throwing or rejecting listener does not break the others; the failure is reported once, never retried', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const good: string[] = [];
    let throws = 0;
    let rejects = 0;
    h.jobs.onCompletion(owner, () => {
      throws++;
      throw new Error('listener threw');
    });
    h.jobs.onCompletion(owner, async () => {
      rejects++;
      throw new Error('listener rejected');
    });
    h.jobs.onCompletion(owner, (i) => {
      good.push(i.id);
    });
    const info = await h.jobs.start(owner, processJob('exit 0').spec);
    await settle(h.jobs, owner, info.id);
    await h.jobs.dispose();
    expect(good).toEqual([info.id]);
    expect([throws, rejects]).toEqual([1, 1]);
    expect(h.errors.map((e) => [(e.error as Error).message, e.hook, e.jobId])).toEqual([
      ['listener threw', 'onCompletion', info.id],
      ['listener rejected', 'onCompletion', info.id],
    ]);
  });

  it('J6: the job’s facts stay queryable after a failed delivery', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const sub = h.jobs.onCompletion(owner, () => {
      throw new Error('nope');
    });
    const info = await h.jobs.start(owner, processJob('exit 9').spec);
    await settle(h.jobs, owner, info.id);
    await tick(5);
    expect(await h.jobs.list(owner)).toMatchObject([{ id: info.id, state: 'failed', exitCode: 9 }]);
    sub.dispose();
  });

  it('J6: a disposed subscription hears nothing more', async () => {
    h = jobHarness();
    const owner = h.owners.agent().token;
    const heard: string[] = [];
    const sub = h.jobs.onCompletion(owner, (i) => {
      heard.push(i.id);
    });
    const job = manualJob();
    const info = await h.jobs.start(owner, job.spec);
    sub.dispose();
    sub.dispose();
    job.finish();
    await settle(h.jobs, owner, info.id);
    await tick(5);
    expect(heard).toEqual([]);
  });
});
