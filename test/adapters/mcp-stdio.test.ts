import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { CompletionNoticeData } from '../../src/adapters/mcp/mcp-notices.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';

// The built CLI, as an MCP client launches it (npm test builds before vitest).
const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

interface ToolCall {
  readonly text: string;
  readonly isError: boolean;
  readonly data: Record<string, unknown>;
}

// Starts `tether mcp` as a child process and connects the SDK's own client to it.
async function connect() {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp'],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'tether-test', version: '1.0.0' });
  const notices: CompletionNoticeData[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    if (n.params.logger === 'tether') notices.push(n.params.data as CompletionNoticeData);
  });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<ToolCall> => {
    const r = await client.callTool({ name, arguments: args });
    const content = r.content as { type: string; text: string }[];
    return {
      text: content.map((c) => c.text).join(''),
      isError: r.isError === true,
      data: (r.structuredContent ?? {}) as Record<string, unknown>,
    };
  };
  return { client, transport, pid: transport.pid!, notices, call, stderr: () => stderr };
}

// Polls (with a pause, so I/O runs) until `probe` holds.
async function until(probe: () => boolean): Promise<void> {
  while (!probe()) await sleep(20);
}

describe('tether mcp (stdio, SDK client)', () => {
  it('M: lists the tools with their JSON schemas and runs bash', async () => {
    const s = await connect();
    try {
      const { tools } = await s.client.listTools();
      expect(tools.map((t) => t.name)).toContain('terminal_send');
      expect(tools).toHaveLength(11);
      const bash = tools.find((t) => t.name === 'bash')!;
      expect(bash.inputSchema).toMatchObject({
        type: 'object',
        required: ['command'],
        additionalProperties: false,
      });
      const r = await s.call('bash', { command: 'echo hello from mcp; exit 2' });
      expect(r).toMatchObject({ isError: false, data: { exitCode: 2 } });
      expect(r.text).toMatch(/^hello from mcp\n\[exit code 2 · \d+ ms\]$/);
      // O3: the connection is the owner; arguments cannot name one.
      const bad = await s.call('bash', { command: 'true', owner: 'someone-else' });
      expect(bad.isError).toBe(true);
      expect(bad.data).toEqual({ error: { code: 'INVALID_ARGUMENT' } });
      expect(bad.text).toContain("unknown field 'owner'");
    } finally {
      await s.client.close();
    }
  });

  it('M, D1, W1: completions (jobs and terminal exits) arrive as notifications, prompts are answered, and disconnecting stops everything', async () => {
    const s = await connect();
    // A background job that completes: its notice arrives as notifications/message.
    const started = await s.call('bash', { command: 'echo bg-done', run_in_background: true });
    const jobId = (started.data.job as { id: string }).id;
    const ofJob = (n: CompletionNoticeData) => n.event === 'job_completed' && n.job.id === jobId;
    await until(() => s.notices.some(ofJob));
    const notice = s.notices.find(ofJob)!;
    expect(notice).toMatchObject({ event: 'job_completed', job: { state: 'succeeded', exitCode: 0 } });
    expect(notice.text).toContain(`Background job ${jobId} succeeded (exit code 0)`);
    // … and as a note on the next tool result, for clients that do not show logs to the model.
    expect((await s.call('bash', { command: 'true' })).text).toContain(`[notice] Background job ${jobId}`);
    expect((await s.call('job_read', { job_id: jobId })).text).toContain('bg-done\n[end of output');

    // A terminal that asks a question: stdin_read, then the answer is taken.
    const opened = await s.call('terminal_open');
    const terminalId = (opened.data.terminal as { id: string }).id;
    // A long silence budget: the proof (stdin_read) answers first, whatever the machine's load.
    const type = (input: string) =>
      s.call('terminal_send', { terminal_id: terminalId, input, settle_ms: 10_000 });
    const asked = await type('read -p "name? " n\n');
    expect(asked.data).toMatchObject({ waitReason: 'stdin_read' });
    expect(asked.text).toContain('[waiting for input');
    await type('Ada\n');
    const greeted = await type('echo "hi $n"\n');
    expect(greeted.text).toContain('hi Ada');

    // W1: a terminal whose shell exits on its own is a completion too.
    const other = await s.call('terminal_open');
    const otherId = (other.data.terminal as { id: string }).id;
    await s.call('terminal_send', { terminal_id: otherId, input: 'exit 7\n' });
    await until(() => s.notices.some((n) => n.event === 'terminal_exited' && n.terminal.id === otherId));
    expect(s.notices.find((n) => n.event === 'terminal_exited')).toMatchObject({
      terminal: { id: otherId, exitCode: 7, reason: 'exit' },
      text: expect.stringContaining(`Terminal ${otherId} ended on its own (exit code 7)`),
    });

    // Leave work running: a background job, and a foreground program in the terminal.
    await s.call('bash', { command: 'sleep 300', run_in_background: true });
    await s.call('terminal_send', { terminal_id: terminalId, input: 'sleep 300\n', settle_ms: 100 });
    const prefix = `${s.pid}.`;
    expect(listTaggedProcesses(prefix).length).toBeGreaterThan(0);

    await s.client.close(); // closes the server's stdin
    await until(() => !existsSync(`/proc/${s.pid}`));
    expect(s.stderr()).toContain('the client closed stdin; stopping everything this client started');
    expect(s.stderr()).toContain('tether mcp: stopped; nothing it started is still running');
    expect(s.stderr()).not.toContain('SIGTERM'); // it exited on its own, before the client's SIGTERM
    expect(listTaggedProcesses(prefix)).toEqual([]);
  });

  it('--help explains the notifications; a bad flag exits 2', () => {
    const help = spawnSync(process.execPath, [cli, 'mcp', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('notifications/message');
    const bad = spawnSync(process.execPath, [cli, 'mcp', '--nope'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("tether mcp: unknown option '--nope'\nRun 'tether mcp --help' for usage.");
  });
});
