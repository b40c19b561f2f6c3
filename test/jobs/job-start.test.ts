import { afterEach, describe, expect, it } from 'vitest';
import { newJobId } from '../../src/jobs/job-record.js';
import type { JobSpec } from '../../src/jobs/job-types.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import type { SubprocessProvider } from '../../src/subprocess/types.js';
import { failsWith, type JobHarness, jobHarness, readAll, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

describe('jobs.start', () => {
  it('J1: job ids drawn from the pooled random bytes are all distinct across refills, 12 base64url characters each', () => {
    // 256 ids a pool: 2,000 ids take eight refills and end partway through one.
    const ids = Array.from({ length: 2_000 }, () => newJobId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^job_[\w-]{12}$/);
  });

  it('J1: a job is kind, label and the hooks its producer returns; the registry owns the rest', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, {
      ...processJob('echo out; echo err >&2').spec,
      kind: 'shell',
      label: 'demo',
    });
    expect(info).toMatchObject({ kind: 'shell', label: 'demo', state: 'running', isTerminal: false });
    expect(info.id).toMatch(/^job_[\w-]{12}$/);
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      signal: null,
    });
    const { text } = await readAll(h.jobs, owner, info.id);
    expect(text.split('\n').sort()).toEqual(['', 'err', 'out']);
  });

  it('J1: a producer is not necessarily a process: a pull-style readOutput is consumed into the same channel', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    let pending = 'first ';
    let finish!: () => void;
    const spec: JobSpec = {
      kind: 'custom',
      label: 'pull',
      run: (ctx) => {
        ctx.append('pushed ');
        return {
          cancel: () => finish(),
          done: new Promise((resolve) => {
            finish = () => {
              pending += 'last';
              resolve({ exitCode: 0, signal: null });
            };
          }),
          readOutput: () => {
            const text = pending;
            pending = '';
            return text;
          },
        };
      },
    };
    const info = await h.jobs.start(owner, spec);
    expect(await h.jobs.read(owner, info.id, 0)).toMatchObject({
      text: 'pushed first ',
      cursor: 13,
      done: false,
    });
    finish();
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({ state: 'succeeded' });
    expect(await h.jobs.read(owner, info.id, 13)).toMatchObject({ text: 'last', done: true });
  });

  it('J1: if run() throws or rejects, start fails with that error, nothing stays registered and the slot is freed', async () => {
    h = jobHarness({ maxRunningPerOwner: 1 });
    const owner = h.owners.host().token;
    const boom = new Error('spawn failed for real');
    const throwing: JobSpec = {
      kind: 'x',
      label: 'sync',
      run: () => {
        throw boom;
      },
    };
    const rejecting: JobSpec = { kind: 'x', label: 'async', run: async () => Promise.reject(boom) };
    await expect(h.jobs.start(owner, throwing)).rejects.toBe(boom);
    await expect(h.jobs.start(owner, rejecting)).rejects.toBe(boom);
    await failsWith(
      h.jobs.start(owner, processJob('exit 0', { provider: missingCwdProvider() }).spec),
      'CWD_NOT_FOUND',
    );
    expect(await h.jobs.list(owner)).toEqual([]);
    expect(h.jobs.stats()).toMatchObject({ jobs: 0, starting: 0 });
    // The single slot is free again.
    const ok = await h.jobs.start(owner, processJob('exit 0').spec);
    await settle(h.jobs, owner, ok.id);
  });

  it('J1: run() returning malformed hooks is INVALID_ARGUMENT and frees the slot', async () => {
    h = jobHarness({ maxRunningPerOwner: 1 });
    const owner = h.owners.host().token;
    const bad = { kind: 'x', label: 'bad', run: () => ({ cancel: 'no' }) } as unknown as JobSpec;
    await failsWith(h.jobs.start(owner, bad), 'INVALID_ARGUMENT');
    expect(h.jobs.stats()).toMatchObject({ jobs: 0, starting: 0 });
  });

  it('J1: a done promise that rejects (a broken producer) becomes failed with the error text', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('exit 7', { rejectOnExit: 7 }).spec);
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({
      state: 'failed',
      isTerminal: true,
      error: 'producer exploded',
      exitCode: null,
    });
  });

  it('J1: a malformed spec is INVALID_ARGUMENT with the field named', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const run = processJob('exit 0').spec.run;
    expect(await failsWith(h.jobs.start(owner, { kind: '', label: 'x', run }), 'INVALID_ARGUMENT')).toContain(
      'kind',
    );
    expect(
      await failsWith(h.jobs.start(owner, { kind: 'k', label: 'x', outputCap: 0, run }), 'INVALID_ARGUMENT'),
    ).toContain('outputCap');
    expect(await failsWith(h.jobs.start(owner, null as unknown as JobSpec), 'INVALID_ARGUMENT')).toContain(
      'JobSpec',
    );
  });

  it('C3: an already aborted signal is checked before anything: ABORTED, run() never called', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    let runs = 0;
    const spec: JobSpec = {
      kind: 'x',
      label: 'never',
      run: () => {
        runs++;
        throw new Error('ran');
      },
    };
    await failsWith(h.jobs.start(owner, spec, { signal: AbortSignal.abort() }), 'ABORTED');
    // Even a bad owner is not looked at first: the signal wins.
    await failsWith(h.jobs.start('nobody' as never, spec, { signal: AbortSignal.abort() }), 'ABORTED');
    expect(runs).toBe(0);
  });

  it('C3: once registered the job belongs to the runtime: aborting the start signal later does not kill it', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const controller = new AbortController();
    const job = processJob('read line; echo "got $line"', { stdin: true });
    const info = await h.jobs.start(owner, job.spec, { signal: controller.signal });
    controller.abort();
    await job.write('hi');
    expect(await settle(h.jobs, owner, info.id)).toMatchObject({ state: 'succeeded' });
    expect((await readAll(h.jobs, owner, info.id)).text).toBe('got hi\n');
  });

  it('J4: the 9th running job fails with JOB_LIMIT and starts nothing', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const jobs = Array.from({ length: 8 }, () => processJob('exec sleep 300'));
    for (const job of jobs) await h.jobs.start(owner, job.spec);
    const leaders = await Promise.all(jobs.map(async (j) => (await j.handle).identity.pid));
    let ran = false;
    const ninth: JobSpec = {
      kind: 'x',
      label: '9th',
      run: () => {
        ran = true;
        return processJob('sleep 300').spec.run({ jobId: 'x', append: () => {} });
      },
    };
    const message = await failsWith(h.jobs.start(owner, ninth), 'JOB_LIMIT');
    expect(message).toContain('8');
    expect(ran).toBe(false);
    // Nothing was spawned: every tagged process is one of the 8 leaders.
    expect(listTaggedProcesses(treeIdPrefix()).filter((pid) => !leaders.includes(pid))).toEqual([]);
    expect(await h.jobs.list(owner)).toHaveLength(8);
    // The cap is per owner: another owner still starts.
    const other = h.owners.host().token;
    const theirs = await h.jobs.start(other, processJob('exit 0').spec);
    await settle(h.jobs, other, theirs.id);
    // A finished job frees its slot at once.
    const first = (await h.jobs.list(owner))[0]!;
    await h.jobs.kill(owner, first.id);
    await settle(h.jobs, owner, first.id);
    const next = await h.jobs.start(owner, processJob('exit 0').spec);
    await settle(h.jobs, owner, next.id);
  });

  it('J4: concurrent starts cannot overshoot the cap (slots are reserved before run())', async () => {
    h = jobHarness({ maxRunningPerOwner: 3 });
    const owner = h.owners.host().token;
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => h.jobs.start(owner, processJob('sleep 300').spec)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused.map((r) => (r.reason as { code?: string }).code)).toEqual(['JOB_LIMIT', 'JOB_LIMIT']);
    expect(h.jobs.stats()).toMatchObject({ running: 3, starting: 0 });
  });

  it('J4, J8: a burst of starts in one turn goes on 16 per turn of the loop, in call order; those still waiting when the owner is retired start nothing', async () => {
    h = jobHarness({ maxRunningPerOwner: 64 });
    const lease = h.owners.host();
    const ran: number[] = [];
    // A producer that runs until cancelled (J1: not necessarily a process).
    const spec = (i: number): JobSpec => ({
      kind: 'custom',
      label: `burst ${i}`,
      run: () => {
        ran.push(i);
        let cancel!: () => void;
        const done = new Promise<{ exitCode: number; signal: null }>((resolve) => {
          cancel = () => resolve({ exitCode: 0, signal: null });
        });
        return { cancel, done };
      },
    });
    // Queued before the burst, this runs after the burst's own turn and before the next slice.
    const firstTurn = new Promise<{ ran: number; starting: number }>((resolve) =>
      setImmediate(() => resolve({ ran: ran.length, starting: h.jobs.stats().starting })),
    );
    const burst = Array.from({ length: 40 }, (_, i) => h.jobs.start(lease.token, spec(i)));
    expect(await firstTurn).toEqual({ ran: 16, starting: 24 });
    const started = await Promise.all(burst.slice(0, 32));
    expect(ran).toEqual(Array.from({ length: 32 }, (_, i) => i));
    expect(started.every((info) => info.state === 'running')).toBe(true);

    // Retired while 8 still wait for their turn: they fail as the retired owner's calls do.
    lease.retire();
    for (const late of burst.slice(32)) await failsWith(late, 'OWNER_RETIRED');
    expect(ran).toHaveLength(32);
    await h.jobs.drainOwner(lease.token);
    expect(h.jobs.stats()).toMatchObject({ running: 0, starting: 0 });
  });
});

// A provider whose spawn fails the way a real one does for a missing directory.
function missingCwdProvider(): SubprocessProvider {
  const local = createLocalProvider();
  const missing = '/nonexistent/tether-test-dir';
  return {
    name: 'missing-cwd',
    spawn: (spec) => local.spawn({ ...spec, cwd: missing }),
    spawnTerminal: (spec) => local.spawnTerminal({ ...spec, cwd: missing }),
  };
}
