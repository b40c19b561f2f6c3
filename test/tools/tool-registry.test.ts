import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { bindTools, createToolRegistry } from '../../src/tools/tool-registry.js';
import { dataOf, failed, ok, type ToolHarness, toolHarness } from './tool-harness.js';

let h: ToolHarness;
let scratch: string;
beforeAll(async () => {
  h = await toolHarness();
  scratch = await mkdtemp(join(tmpdir(), 'tether-registry-test-'));
});
afterAll(async () => {
  await h.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('createToolRegistry', () => {
  it('M: lists the eleven tools, each with a closed object schema and a description', () => {
    const tools = h.tools.list();
    expect(tools.map((t) => t.name)).toEqual([
      'bash',
      'job_list',
      'job_read',
      'job_wait',
      'job_kill',
      'terminal_open',
      'terminal_send',
      'terminal_read',
      'terminal_signal',
      'terminal_close',
      'terminal_list',
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(Object.keys(tool.inputSchema.properties)).not.toContain('owner');
      expect(tool.description.length).toBeGreaterThan(40);
    }
    expect(Object.isFrozen(tools[0]!.inputSchema.properties)).toBe(true);
  });

  it('M: schema errors name every wrong field and what it expected', async () => {
    const owner = h.rt.owners.host().token;
    const r = failed(
      await h.tools.call(owner, 'bash', { command: 42, timeout_ms: 0, run_in_background: 'yes' }),
      'INVALID_ARGUMENT',
    );
    expect(r.text).toContain("'command' must be a string, got 42");
    expect(r.text).toContain("'timeout_ms' must be >= 1, got 0");
    expect(r.text).toContain('\'run_in_background\' must be a boolean, got "yes"');
    expect(failed(await h.tools.call(owner, 'job_read', {}), 'INVALID_ARGUMENT').text).toContain(
      "missing required field 'job_id'",
    );
    expect(
      failed(
        await h.tools.call(owner, 'terminal_signal', { terminal_id: 't', signal: 'INT' }),
        'INVALID_ARGUMENT',
      ).text,
    ).toContain('\'signal\' must be one of "SIGINT"');
    expect(failed(await h.tools.call(owner, 'job_list', [1]), 'INVALID_ARGUMENT').text).toContain(
      'arguments must be a JSON object',
    );
  });

  it('O3: an `owner` argument is rejected as an unknown field and nothing runs', async () => {
    const owner = h.rt.owners.host().token;
    const other = h.rt.owners.host().token;
    const marker = join(scratch, 'ran');
    const r = failed(
      await h.tools.call(owner, 'bash', { command: `touch ${marker}`, owner: other }),
      'INVALID_ARGUMENT',
    );
    expect(r.text).toContain("unknown field 'owner'");
    expect(existsSync(marker)).toBe(false);
  });

  it('O3: a retired owner fails closed with OWNER_RETIRED before anything runs', async () => {
    const lease = h.rt.owners.host();
    lease.retire();
    const marker = join(scratch, 'retired-ran');
    const r = failed(
      await h.tools.call(lease.token, 'bash', { command: `touch ${marker}` }),
      'OWNER_RETIRED',
    );
    expect(r.text).toContain('Stop calling tools');
    expect(existsSync(marker)).toBe(false);
    failed(await h.tools.call(lease.token, 'job_list', {}), 'OWNER_RETIRED');
  });

  it('O3: a missing, wrong-type or foreign owner fails closed with OWNER_INVALID', async () => {
    const foreign = await createRuntime();
    try {
      for (const bad of [undefined, null, 'me', {}, foreign.owners.host().token]) {
        // @ts-expect-error: the caller is untyped at runtime (O3)
        failed(await h.tools.call(bad, 'bash', { command: 'true' }), 'OWNER_INVALID');
      }
    } finally {
      await foreign.dispose();
    }
  });

  it('M: an unknown tool is TOOL_NOT_FOUND and the text lists the tools', async () => {
    const r = failed(await h.tools.call(h.rt.owners.host().token, 'bsh', {}), 'TOOL_NOT_FOUND');
    expect(r.text).toContain('Available tools: bash, job_list');
  });

  it('J3: another owner’s job is not visible through the tools', async () => {
    const a = h.rt.owners.host().token;
    const b = h.rt.owners.host().token;
    const { job } = dataOf<{ job: { id: string } }>(
      await h.tools.call(a, 'bash', { command: 'sleep 30', run_in_background: true }),
    );
    const r = failed(await h.tools.call(b, 'job_kill', { job_id: job.id }), 'JOB_NOT_FOUND');
    expect(r.text).toContain('job_list');
    expect(ok(await h.tools.call(b, 'job_list', {})).text).toContain('no background jobs');
    ok(await h.tools.call(a, 'job_kill', { job_id: job.id }));
    ok(await h.tools.call(a, 'job_wait', { job_id: job.id }));
  });

  it('O3: bindTools calls with the bound owner only', async () => {
    const lease = h.rt.owners.host();
    const tools = bindTools(h.tools, lease.token);
    expect(ok(await tools.call('bash', { command: 'echo bound' })).text).toContain('bound');
    lease.retire();
    failed(await tools.call('bash', { command: 'echo bound' }), 'OWNER_RETIRED');
  });

  it('M: an aborted call is ABORTED and does not run', async () => {
    const marker = join(scratch, 'aborted-ran');
    const r = await h.tools.call(
      h.rt.owners.host().token,
      'bash',
      { command: `touch ${marker}` },
      { signal: AbortSignal.abort() },
    );
    failed(r, 'ABORTED');
    expect(existsSync(marker)).toBe(false);
  });

  it('M: the output budget must leave room for a useful result', () => {
    expect(() => createToolRegistry(h.rt, { outputBudgetChars: 100 })).toThrow(/outputBudgetChars/);
  });
});
