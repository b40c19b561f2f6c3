import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobInfo } from '../../src/index.js';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import { dataOf, ok, type ToolHarness, toolHarness } from './tool-harness.js';

let h: ToolHarness;
beforeAll(async () => {
  h = await toolHarness();
});
afterAll(async () => {
  await h.close();
});

describe('bash tool', () => {
  it('C1: a foreground command returns its output and exit code as facts', async () => {
    const r = ok(
      await h.tools.call(h.rt.owners.host().token, 'bash', { command: 'echo out; echo err >&2; exit 3' }),
    );
    expect(r.text).toMatch(/^out\nerr\n\[exit code 3 · (\d+ ms|\d+\.\d s)\]$/); // 1.6 s on a loaded machine
    expect(r.data).toMatchObject({ exitCode: 3, timedOut: false, cancelled: false, output: 'out\nerr\n' });
  });

  it('C1: a timeout is a result that says the tree was killed and what to do instead', async () => {
    const r = ok(
      await h.tools.call(h.rt.owners.host().token, 'bash', {
        command: 'echo started; sleep 30',
        timeout_ms: 300,
      }),
    );
    expect(r.data).toMatchObject({ timedOut: true });
    expect(r.text).toContain('started\n[timed out after 300 ms');
    expect(r.text).toContain('run_in_background: true');
  });

  it('C1: aborting the call cancels the command and says so', async () => {
    const abort = new AbortController();
    const call = h.tools.call(
      h.rt.owners.host().token,
      'bash',
      { command: 'sleep 30' },
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort(), 100);
    const r = ok(await call);
    expect(r.data).toMatchObject({ cancelled: true });
    expect(r.text).toContain('[cancelled:');
  });

  it('C2, M: output past the budget keeps the tail and names the published spill file', async () => {
    const tools = createToolRegistry(h.rt, { outputBudgetChars: 2_000 });
    const r = ok(await tools.call(h.rt.owners.host().token, 'bash', { command: 'seq 1 100000' }));
    const { spillPath } = r.data as { spillPath?: string };
    expect(spillPath).toBeDefined();
    expect(r.text.length).toBeLessThanOrEqual(2_000);
    expect(r.text).toMatch(/^\[tether: output cut to its last \d+ characters; full output: /);
    expect(r.text).toContain(`full output: ${spillPath}`);
    expect(r.text).toMatch(/\n99999\n100000\n\[exit code 0 · \d+ ms\]$/);
    const full = readFileSync(spillPath!, 'utf8');
    expect(full.startsWith('1\n2\n3\n')).toBe(true);
    expect(full.endsWith('99999\n100000\n')).toBe(true);
  });

  it('C3, J5: run_in_background returns a job id; job_wait and job_read follow it', async () => {
    const owner = h.rt.owners.host().token;
    const started = ok(
      await h.tools.call(owner, 'bash', {
        command: 'echo first; sleep 0.2; echo second; exit 4',
        run_in_background: true,
      }),
    );
    const { job } = started.data as { job: JobInfo };
    expect(started.text).toContain(`Started background job ${job.id}`);
    for (;;) {
      const wait = dataOf<{ finished: boolean }>(await h.tools.call(owner, 'job_wait', { job_id: job.id }));
      if (wait.finished) break;
    }
    const list = ok(await h.tools.call(owner, 'job_list', {}));
    expect(list.text).toContain(`${job.id} · failed (exit code 4)`);
    const page = ok(await h.tools.call(owner, 'job_read', { job_id: job.id }));
    expect(page.text).toBe('first\nsecond\n[end of output: the job failed (exit code 4)]');
    // Reading consumes: the next read continues after what was seen.
    const again = ok(await h.tools.call(owner, 'job_read', { job_id: job.id }));
    expect(again.text).toBe('(no new output)\n[end of output: the job failed (exit code 4)]');
  });

  it('J5: job_read pages by max_chars and says more is waiting', async () => {
    const owner = h.rt.owners.host().token;
    const { job } = dataOf<{ job: JobInfo }>(
      await h.tools.call(owner, 'bash', { command: 'printf "abcdefghij"', run_in_background: true }),
    );
    ok(await h.tools.call(owner, 'job_wait', { job_id: job.id }));
    const first = ok(await h.tools.call(owner, 'job_read', { job_id: job.id, max_chars: 4 }));
    expect(first.text).toBe('abcd\n[more output is waiting: call job_read again (cursor 4)]');
    const rest = ok(await h.tools.call(owner, 'job_read', { job_id: job.id }));
    expect(rest.text).toBe('efghij\n[end of output: the job succeeded (exit code 0)]');
  });

  it('J2, J7: job_kill says "kill requested" for a running job and "already stopped" after', async () => {
    const owner = h.rt.owners.host().token;
    const { job } = dataOf<{ job: JobInfo }>(
      await h.tools.call(owner, 'bash', { command: 'sleep 30', run_in_background: true }),
    );
    const kill = ok(await h.tools.call(owner, 'job_kill', { job_id: job.id }));
    expect(kill.text).toContain(`Kill requested for job ${job.id}`);
    expect(kill.data).toMatchObject({ result: 'requested' });
    const wait = ok(await h.tools.call(owner, 'job_wait', { job_id: job.id }));
    expect(wait.text).toMatch(new RegExp(`Background job ${job.id} killed`));
    const again = ok(await h.tools.call(owner, 'job_kill', { job_id: job.id }));
    expect(again.text).toContain(`Job ${job.id} had already stopped (killed`);
    expect(again.data).toMatchObject({ result: 'already_stopped' });
  });

  it('J2: job_wait that runs out says the job is still running and what to do', async () => {
    const owner = h.rt.owners.host().token;
    const { job } = dataOf<{ job: JobInfo }>(
      await h.tools.call(owner, 'bash', { command: 'sleep 30', run_in_background: true }),
    );
    const wait = ok(await h.tools.call(owner, 'job_wait', { job_id: job.id, timeout_ms: 50 }));
    expect(wait.data).toMatchObject({ finished: false });
    expect(wait.text).toContain(`Job ${job.id} is still running (after waiting 50 ms)`);
    expect(wait.text).toContain('job_kill');
    await h.rt.jobs.drainOwner(owner);
  });
});

describe('bash tool with persistentBash', () => {
  it('M: the hidden persistent shell keeps cwd and variables between calls', async () => {
    const tools = createToolRegistry(h.rt, { persistentBash: true });
    const owner = h.rt.owners.host().token;
    expect(tools.list()[0]!.description).toContain('persistent bash session');
    ok(await tools.call(owner, 'bash', { command: 'cd /tmp && export TETHER_T=42' }));
    const r = ok(await tools.call(owner, 'bash', { command: 'echo "$TETHER_T $(pwd)"; false' }));
    expect(r.text).toBe('42 /tmp\n[exit code 1]');
    expect(r.data).toMatchObject({ exitCode: 1, output: '42 /tmp\n', timedOut: false, shellReset: false });
    // Background commands still run as jobs, in a fresh shell.
    const bg = ok(
      await tools.call(owner, 'bash', { command: 'echo "[$TETHER_T]"', run_in_background: true }),
    );
    const { job } = bg.data as { job: JobInfo };
    ok(await tools.call(owner, 'job_wait', { job_id: job.id }));
    expect(ok(await tools.call(owner, 'job_read', { job_id: job.id })).text).toContain('[]\n');
    await h.rt.terminals.drainOwner(owner);
  });

  it('M: cancelling a persistent bash call interrupts the command; the session keeps its state', async () => {
    const tools = createToolRegistry(h.rt, { persistentBash: true });
    const owner = h.rt.owners.host().token;
    ok(await tools.call(owner, 'bash', { command: 'export TETHER_T=kept' }));
    const cancel = new AbortController();
    const running = tools.call(owner, 'bash', { command: 'sleep 1000' }, { signal: cancel.signal });
    setTimeout(() => cancel.abort(), 300);
    const r = await running;
    expect(r).toMatchObject({ ok: false, code: 'ABORTED' });
    const after = ok(await tools.call(owner, 'bash', { command: 'echo "$TETHER_T"; jobs -p | wc -l' }));
    expect(after.text).toBe('kept\n0\n[exit code 0]');
    expect(after.data).toMatchObject({ shellReset: false, fresh: false });
    await h.rt.terminals.drainOwner(owner);
  });

  it('C2, M: persistent output past the budget keeps the tail and says no copy was saved', async () => {
    const tools = createToolRegistry(h.rt, { persistentBash: true, outputBudgetChars: 2_000 });
    const owner = h.rt.owners.host().token;
    const r = ok(await tools.call(owner, 'bash', { command: 'seq 1 20000' }));
    expect(r.text.length).toBeLessThanOrEqual(2_000);
    expect(r.text).toMatch(/^\[tether: output cut to its last \d+ characters; no full copy was saved/);
    expect(r.text).toMatch(/\n20000\n\[exit code 0\]$/);
    await h.rt.terminals.drainOwner(owner);
  });
});
