import { afterEach, describe, expect, it } from 'vitest';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { type JobHarness, jobHarness, readAll, settle } from '../support/job-harness.js';
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

  it('J7: kill interrupts the foreground process group, then the whole tree is gone (escapees too)', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const job = processJob(
      `trap 'echo interrupted; exit 130' INT; sleep 300 & setsid sleep 300 & echo started; wait`,
    );
    const info = await h.jobs.start(owner, job.spec);
    const { treeId } = await job.handle;
    // Wait until the script runs its trap-aware wait (it printed 'started').
    let seen = '';
    let cursor = 0;
    while (!seen.includes('started')) {
      const page = await h.jobs.read(owner, info.id, cursor);
      seen += page.text;
      cursor = page.cursor;
      if (!page.text) await h.jobs.wait(owner, info.id, 20);
    }
    expect(listTaggedProcesses(treeId).length).toBeGreaterThanOrEqual(3);
    expect(await h.jobs.kill(owner, info.id)).toBe('requested');
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({ state: 'killed', error: null });
    // The tree was verified gone before done resolved: no polling needed here.
    expect(listTaggedProcesses(treeId)).toEqual([]);
    expect(seen + (await readAll(h.jobs, owner, info.id)).text).toContain('interrupted');
  });

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
