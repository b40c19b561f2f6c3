import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMirror } from '../../mirror/mirror-server.js';
import type { MirrorOptions } from '../../mirror/mirror-types.js';
import { createRuntime } from '../../runtime.js';
import type { RuntimeOptions } from '../../runtime-options.js';
import { bindTools, createToolRegistry, DEFAULT_OUTPUT_BUDGET_CHARS } from '../../tools/tool-registry.js';
import { type McpApproveMode, mcpPolicy } from './mcp-approval.js';
import { createMcpServer } from './mcp-server.js';

/** Options of `serveMcpOverStdio`. */
export interface McpStdioOptions {
  readonly runtime?: RuntimeOptions;
  /** `bash` runs in a hidden persistent terminal (SPEC section 8). Default `false`. */
  readonly persistentBash?: boolean;
  readonly outputBudgetChars?: number;
  /**
   * A5: who answers the policy's asks (commands rules cannot judge, escalations): `elicit`
   * asks the client's user through MCP elicitation, `allow` / `deny` answer themselves. It
   * replaces `runtime.policy`. Default: none (no policy; escalations are denied).
   */
  readonly approve?: McpApproveMode;
  /** V2: also serve the read-only web mirror of this runtime; its URL goes to `log`. */
  readonly mirror?: MirrorOptions;
  /** Reported to the client as the server's version. */
  readonly version?: string;
  /** Protocol in; default `process.stdin`. */
  readonly input?: Readable;
  /** Protocol out (nothing else is ever written here); default `process.stdout`. */
  readonly output?: Writable;
  /**
   * Diagnostics, one line each; default: written to stderr. A line that cannot be written (a
   * dead client's stderr) is dropped: logging never ends the server.
   */
  readonly log?: (line: string) => void;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Serves the tools to one MCP client over stdio until it disconnects, then stops everything
 * that client started and resolves. The connection is one owner (a host lease, O2); on
 * disconnect (stdin ends, the transport closes, stdout breaks, or SIGINT/SIGTERM/SIGHUP) the
 * owner is retired, its terminals and jobs are drained to verified-dead trees (D1), and the
 * runtime is disposed to quiescence (D2). `clean` is false when a teardown step failed.
 *
 * @example
 * ```ts
 * // the body of `tether mcp`
 * const { clean } = await serveMcpOverStdio({ persistentBash: false });
 * process.exitCode = clean ? 0 : 1;
 * ```
 */
export async function serveMcpOverStdio(options: McpStdioOptions = {}): Promise<{ clean: boolean }> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const log = neverThrowing(options.log ?? writeToStderr);
  const outputBudgetChars = options.outputBudgetChars ?? DEFAULT_OUTPUT_BUDGET_CHARS;

  let connection: Server | null = null; // the approver asks through it (A5)
  const rt = await createRuntime({
    ...options.runtime,
    ...(options.approve !== undefined ? { policy: mcpPolicy(options.approve, () => connection) } : {}),
  });
  const mirror = options.mirror ? await createMirror(rt, options.mirror) : null;
  if (mirror) log(`tether mcp: read-only mirror at ${mirror.url} (the code in it works once)`);
  const lease = rt.owners.host();
  const registry = createToolRegistry(rt, {
    outputBudgetChars,
    ...(options.persistentBash !== undefined ? { persistentBash: options.persistentBash } : {}),
  });
  const { server, stopNotices } = createMcpServer({
    tools: bindTools(registry, lease.token),
    completions: { jobs: rt.jobs, terminals: rt.terminals },
    owner: lease.token,
    outputBudgetChars,
    version: options.version ?? '0.0.0',
    onError: (err) => log(`tether mcp: could not send a notice: ${String(err)}`),
  });
  connection = server;

  // Acquire and release together: every way the connection can end is registered before connect.
  const ended = new AbortController();
  let why = '';
  const end = (reason: string) => () => {
    if (ended.signal.aborted) return;
    why = reason;
    ended.abort();
  };
  const onEnd = end('the client closed stdin');
  const onOutputError = end('stdout broke');
  const onSignal = Object.fromEntries(STOP_SIGNALS.map((s) => [s, end(`received ${s}`)]));
  input.once('end', onEnd);
  input.once('close', onEnd);
  output.on('error', onOutputError);
  for (const s of STOP_SIGNALS) process.once(s, onSignal[s]!);
  server.onclose = end('the transport closed');
  server.onerror = (err) => log(`tether mcp: protocol error: ${err.message}`);
  const stopped = new Promise<void>((resolve) => ended.signal.addEventListener('abort', () => resolve()));

  const steps: boolean[] = [];
  try {
    await server.connect(new StdioServerTransport(input, output));
    await stopped;
    log(`tether mcp: ${why}; stopping everything this client started`);
  } finally {
    // D1 for the connection's owner, then D2 for the runtime; each step runs even if one fails.
    lease.retire();
    stopNotices();
    steps.push(await step(log, 'closing the protocol', () => server.close())); // aborts calls in flight
    steps.push(await step(log, 'closing terminals', () => rt.terminals.drainOwner(lease.token)));
    steps.push(await step(log, 'stopping jobs', () => rt.jobs.drainOwner(lease.token)));
    steps.push(await step(log, 'disposing the runtime', () => rt.dispose()));
    if (mirror) steps.push(await step(log, 'closing the mirror', () => mirror.close()));
    input.off('end', onEnd);
    input.off('close', onEnd);
    output.off('error', onOutputError);
    for (const s of STOP_SIGNALS) process.off(s, onSignal[s]!);
    input.destroy(); // a signal ended us while stdin was still open: let the event loop go
  }
  const clean = steps.every(Boolean);
  log(
    clean
      ? 'tether mcp: stopped; nothing it started is still running'
      : 'tether mcp: stopped with errors (above)',
  );
  return { clean };
}

// Issue 33.1: logging must never end the server. A client that died leaves our stderr a pipe
// without a reader: the write fails with EPIPE and the stream emits 'error', which, unheard,
// kills the process before the drain has run. A line that cannot be written is dropped.
function writeToStderr(line: string): void {
  if (!process.stderr.listeners('error').includes(dropStderrError))
    process.stderr.on('error', dropStderrError);
  if (process.stderr.destroyed || !process.stderr.writable) return;
  process.stderr.write(`${line}\n`);
}

function dropStderrError(): void {}

// A log the caller gave may throw too; the teardown still runs.
function neverThrowing(log: (line: string) => void): (line: string) => void {
  return (line) => {
    try {
      log(line);
    } catch {}
  };
}

// One teardown step: a failure is reported and the next step still runs.
async function step(log: (line: string) => void, what: string, work: () => Promise<void>): Promise<boolean> {
  try {
    await work();
    return true;
  } catch (err) {
    log(`tether mcp: failed ${what}: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}
