import { afterEach, describe, expect, it } from 'vitest';
import { type JobHarness, jobHarness, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

describe('job lifecycle', () => {
  it('J2: Running → Succeeded on exit 0; Failed keeps the exit code; isTerminal separates them', async () => {
    h = jobHarness({
      now: (() => {
        let t = 1000;
        return () => t++;
      })(),
    });
    const owner = h.owners.host().token;
    const ok = await h.jobs.start(owner, processJob('exit 0').spec);
    const bad = await h.jobs.start(owner, processJob('exit 42').spec);
    expect(ok).toMatchObject({ state: 'running', isTerminal: false, cancelRequested: false, endedAt: null });
    const okEnd = await settle(h.jobs, owner, ok.id);
    const badEnd = await settle(h.jobs, owner, bad.id);
    expect(okEnd).toMatchObject({
      state: 'succeeded',
      isTerminal: true,
      exitCode: 0,
      signal: null,
      error: null,
    });
    expect(badEnd).toMatchObject({ state: 'failed', isTerminal: true, exitCode: 42, signal: null });
    expect(okEnd.endedAt).toBeGreaterThan(okEnd.startedAt);
  });

  it('J2: a process killed by someone else is Failed with the signal, not Killed', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('kill -KILL $$').spec);
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({
      state: 'failed',
      cancelRequested: false,
      exitCode: null,
      signal: 'SIGKILL',
    });
  });

  it('J2: a kill request is visible (cancelRequested) before the job is Killed', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    // Ignores INT and TERM, so only the tree kill's SIGKILL (after the grace) ends it.
    const job = processJob(`trap '' INT TERM; echo ready; while :; do sleep 0.05; done`);
    const info = await h.jobs.start(owner, job.spec);
    expect(await h.jobs.kill(owner, info.id)).toBe('requested');
    const [asked] = await h.jobs.list(owner);
    expect(asked).toMatchObject({ state: 'running', isTerminal: false, cancelRequested: true });
    expect(await h.jobs.kill(owner, info.id)).toBe('requested');
    expect(job.cancels).toBe(1);
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({
      state: 'killed',
      isTerminal: true,
      cancelRequested: true,
    });
    expect(await h.jobs.kill(owner, info.id)).toBe('already_stopped');
  });

  // J7 against the real shell producer, with /proc as the oracle: test/shell/shell-background-tree.test.ts.
  it('J2: kill of a finished job is already_stopped and changes nothing', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('exit 3').spec);
    await settle(h.jobs, owner, info.id);
    expect(await h.jobs.kill(owner, info.id)).toBe('already_stopped');
    expect((await h.jobs.list(owner))[0]).toMatchObject({
      state: 'failed',
      exitCode: 3,
      cancelRequested: false,
    });
  });
});
