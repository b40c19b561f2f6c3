import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import type { ToolRegistry, ToolResult } from '../../src/tools/tool-types.js';
import { failed, ok } from './tool-harness.js';

let rt: Runtime;
let tools: ToolRegistry;

beforeEach(async () => {
  rt = await createRuntime({
    spillDir: false,
    limits: { cleanupGraceMs: 200, maxJobsPerOwner: 1, maxTerminalsPerOwner: 1 },
  });
  tools = createToolRegistry(rt);
});
afterEach(async () => {
  await rt.dispose();
});

// A model never reads library words: owners, method calls, "create a new one".
function modelText(result: ToolResult, code: string): string {
  const { text } = failed(result, code);
  // The stable code stays (OWNER_RETIRED); the words after it are for a model.
  expect(text.slice(`Error ${code}: `.length)).not.toMatch(/owner|\(\)|rt\.|create a new|TetherError/i);
  return text;
}

describe('model-facing failure texts', () => {
  it("M: an unknown or another agent's job names job_list", async () => {
    const me = rt.owners.host().token;
    const other = rt.owners.host().token;
    const job = await rt.shell.background(other, { command: 'true' });
    for (const id of ['job_nope', job.id]) {
      expect(modelText(await tools.call(me, 'job_read', { job_id: id }), 'JOB_NOT_FOUND')).toBe(
        `Error JOB_NOT_FOUND: you have no job '${id}'\nCall job_list to see the ids of your jobs.`,
      );
    }
    await rt.jobs.wait(other, job.id, 30_000);
  });

  it('M: the job limit says how many may run and how to make room', async () => {
    const me = rt.owners.host().token;
    ok(await tools.call(me, 'bash', { command: 'sleep 30', run_in_background: true }));
    expect(
      modelText(await tools.call(me, 'bash', { command: 'true', run_in_background: true }), 'JOB_LIMIT'),
    ).toBe(
      'Error JOB_LIMIT: you already run 1 background jobs, the most that may run at once; this one was not started\n' +
        'Wait for one with job_wait, or stop one with job_kill, then start this one again.',
    );
  });

  it('M: terminal failures name the terminal tools', async () => {
    const me = rt.owners.host().token;
    expect(
      modelText(
        await tools.call(me, 'terminal_send', { terminal_id: 'term_x', input: '' }),
        'TERMINAL_NOT_FOUND',
      ),
    ).toBe(
      "Error TERMINAL_NOT_FOUND: you have no terminal 'term_x'\n" +
        'Call terminal_list to see your open terminals, or terminal_open for a new one.',
    );
    const opened = ok(await tools.call(me, 'terminal_open', {}));
    const id = (opened.data.terminal as { id: string }).id;
    expect(modelText(await tools.call(me, 'terminal_open', {}), 'TERMINAL_LIMIT')).toBe(
      'Error TERMINAL_LIMIT: you already have 1 open terminals, the most you may have; no terminal was opened\n' +
        'Close one you no longer need with terminal_close, then call terminal_open again.',
    );
    const slow = tools.call(me, 'terminal_send', { terminal_id: id, input: 'sleep 2\n', settle_ms: 5_000 });
    let busy = await tools.call(me, 'terminal_send', { terminal_id: id, input: '' });
    // The first send may not have begun yet on a loaded machine: ask until it has.
    while (busy.ok) busy = await tools.call(me, 'terminal_send', { terminal_id: id, input: '' });
    expect(modelText(busy, 'TERMINAL_BUSY')).toBe(
      `Error TERMINAL_BUSY: terminal '${id}' is still handling an earlier call\n` +
        'Wait for that call to return before sending again.',
    );
    await slow;
    ok(await tools.call(me, 'terminal_send', { terminal_id: id, input: 'exit\n' }));
    expect(
      modelText(await tools.call(me, 'terminal_send', { terminal_id: id, input: '' }), 'TERMINAL_CLOSED'),
    ).toBe(
      `Error TERMINAL_CLOSED: terminal '${id}' has ended: its shell and every process in it are gone\n` +
        'Open a new one with terminal_open if you need one.',
    );
    expect(modelText(await tools.call(me, 'terminal_open', { cwd: '/no/such/dir' }), 'CWD_NOT_FOUND')).toBe(
      "Error CWD_NOT_FOUND: cwd '/no/such/dir' is not an existing directory; nothing was run\n" +
        'Pass a directory that exists as cwd.',
    );
  });

  it('M: a retired or unknown caller is told plainly, without internals', async () => {
    const lease = rt.owners.host();
    lease.retire();
    expect(modelText(await tools.call(lease.token, 'job_list', {}), 'OWNER_RETIRED')).toBe(
      'Error OWNER_RETIRED: your session has ended: its jobs and terminals are closed\n' +
        'No tool can be used any more. Stop calling tools.',
    );
    const fake = {} as unknown as typeof lease.token;
    expect(modelText(await tools.call(fake, 'job_list', {}), 'OWNER_INVALID')).toBe(
      'Error OWNER_INVALID: this tool call did not come from a known session\n' +
        'This is a setup error of the program that runs you, not yours to fix.',
    );
  });
});
