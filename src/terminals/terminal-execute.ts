import { randomBytes } from 'node:crypto';
import { assertArgument, TetherError } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { decisionPassed } from '../policy/policy-passed.js';
import type { TerminalHandle } from '../subprocess/types.js';
import { ExecutionCapture } from './execution-capture.js';
import { executeLine } from './shell-protocol.js';
import { FIRST_PROMPT_WAIT_MS } from './terminal-record.js';
import type { TerminalTable } from './terminal-table.js';
import { TimerCount } from './terminal-timers.js';
import type { TerminalCommandResult } from './terminal-types.js';

/** After Ctrl-C on timeout, how long the shell has to print its prompt again before it is replaced. */
const INTERRUPT_GRACE_MS = 2_000;
/** Characters of one command's output kept (its tail). */
const OUTPUT_CAP_CHARS = 1_048_576;

/** What `execute` needs from the terminal it runs on. */
export interface ExecuteTarget {
  readonly pty: TerminalHandle;
  /** Kills the current shell's tree and starts a fresh one behind the same terminal id. */
  resetShell(): Promise<void>;
  /**
   * The transcript shows `command` where the shell echoes `line` (T7 hygiene of `read` and
   * `screen`); the returned function ends that once the call is over.
   */
  expectEcho?(nonce: string, line: string, command: string): () => void;
}

/**
 * `execute` (T7) in the terminal's one turn: a shell reset spawns a fresh shell through the
 * provider that opened the terminal, after the old tree's kill verdict; what execute covered
 * is consumed from the read cursor.
 *
 * @example
 * ```ts
 * const r = await executeCommand(table, owner, id, 'echo hi', {});
 * r.output; // 'hi\n'
 * ```
 */
export async function executeCommand(
  table: TerminalTable,
  owner: AgentOwnerToken,
  id: string,
  command: string,
  opts: { timeoutMs?: number; signal?: AbortSignal },
): Promise<TerminalCommandResult> {
  const record = table.lookup(owner, id);
  assertArgument(typeof command === 'string', 'command must be a string');
  const timeoutMs = opts.timeoutMs ?? 120_000;
  assertArgument(
    Number.isFinite(timeoutMs) && timeoutMs > 0,
    `timeoutMs must be a positive finite number, got ${timeoutMs}`,
  );
  assertArgument(
    opts.signal === undefined || opts.signal instanceof AbortSignal,
    'signal must be an AbortSignal',
  );
  // A1: every command is judged, a hidden terminal's too (A6), unless the persistent bash
  // decided it already and passed that decision on (see decideOpen).
  if (!decisionPassed(opts)) {
    await table.config.decide?.({
      action: 'terminal.execute',
      owner,
      command,
      cwd: record.spec.cwd,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }
  return table.withTurn(record, 'execute', async () => {
    record.executing = true;
    try {
      const from = record.output.end;
      await record.shellReady(FIRST_PROMPT_WAIT_MS, table.timers);
      const result = await executeInTerminal(
        {
          pty: record.pty,
          resetShell: async () => {
            await record.pty.kill();
            // T4: a terminal closed while its command ran is not given a new shell (it
            // would outlive the close); execute then fails TERMINAL_CLOSED.
            const ended = () => !record.actor.getSnapshot().matches('busy');
            if (ended()) throw closedWhileExecuting(record.id);
            const fresh = await record.provider.spawnTerminal(record.spec);
            if (ended()) {
              await fresh.kill();
              throw closedWhileExecuting(record.id);
            }
            record.replacePty(fresh);
            record.actor.send({ type: 'SHELL_RESET' });
            table.watchExit(record);
          },
          expectEcho: (nonce, line, typed) => record.expectEcho(nonce, line, typed),
        },
        command,
        timeoutMs,
        opts.signal,
        table.timers,
      );
      record.output.read(from, Number.MAX_SAFE_INTEGER); // what execute covered is consumed
      return result;
    } finally {
      record.executing = false;
    }
  });
}

/**
 * Runs one command in the terminal's shell and waits for its nonce-marked end (T7). On timeout
 * the foreground group gets SIGINT; a shell that does not come back within a grace period, or
 * that exited (e.g. `exit`, or `set -e` and a failure), is replaced: `shellReset` says so.
 * Aborting `signal` interrupts the command the same way and then rejects with `ABORTED` (the
 * shell is back at its prompt, or was replaced, before it does).
 *
 * @example
 * ```ts
 * const r = await executeInTerminal(target, 'make test', 120_000);
 * if (r.shellReset) console.log('the shell was restarted; its state is gone');
 * ```
 */
export async function executeInTerminal(
  target: ExecuteTarget,
  command: string,
  timeoutMs: number,
  signal?: AbortSignal,
  count: TimerCount = new TimerCount(),
): Promise<TerminalCommandResult> {
  if (signal?.aborted) throw abortedError();
  const pty = target.pty;
  const capture = new ExecutionCapture(randomBytes(8).toString('hex'), OUTPUT_CAP_CHARS, pty);
  const timers = new AbortController();
  const line = executeLine(capture.nonce, command);
  const endEcho = target.expectEcho?.(capture.nonce, line, command);
  try {
    await pty.write(line);
    const ended = await race(capture, pty, timeoutMs, count, timers.signal, signal);
    if (ended === 'finished') return finished(capture, false);
    if (ended === 'timeout' || ended === 'aborted') {
      pty.signal('SIGINT', 'foreground');
      if ((await race(capture, pty, INTERRUPT_GRACE_MS, count, timers.signal)) === 'finished') {
        if (ended === 'aborted') throw abortedError();
        return finished(capture, true);
      }
    }
    const exit = ended === 'exited' ? await pty.exited : null;
    const output = await capture.partial();
    await target.resetShell();
    if (ended === 'aborted') throw abortedError();
    return {
      output,
      exitCode: exit?.exitCode ?? null,
      timedOut: ended === 'timeout',
      shellReset: true,
    };
  } finally {
    timers.abort();
    capture.abandon();
    endEcho?.();
  }
}

function finished(capture: ExecutionCapture, timedOut: boolean): TerminalCommandResult {
  const { output, exitCode } = capture.result!;
  return { output, exitCode, timedOut, shellReset: false };
}

function abortedError(): TetherError {
  return new TetherError('ABORTED', 'execute was aborted: the command was interrupted');
}

// Which comes first: the end marker, the shell's exit, the deadline, or the caller's abort.
async function race(
  capture: ExecutionCapture,
  pty: TerminalHandle,
  ms: number,
  count: TimerCount,
  stop: AbortSignal,
  caller?: AbortSignal,
): Promise<'finished' | 'exited' | 'timeout' | 'aborted'> {
  const deadline = new AbortController();
  const onStop = () => deadline.abort();
  stop.addEventListener('abort', onStop, { once: true });
  let onCaller: (() => void) | undefined;
  const aborted = new Promise<'aborted'>((resolve) => {
    onCaller = () => resolve('aborted');
    caller?.addEventListener('abort', onCaller, { once: true });
  });
  try {
    return await Promise.race([
      capture.finished().then(() => (capture.result ? ('finished' as const) : ('exited' as const))),
      pty.exited.then(() => (capture.result ? ('finished' as const) : ('exited' as const))),
      count.sleep(ms, 'timeout' as const, { signal: deadline.signal }).catch(() => 'timeout' as const),
      aborted,
    ]);
  } finally {
    deadline.abort();
    stop.removeEventListener('abort', onStop);
    if (onCaller) caller?.removeEventListener('abort', onCaller);
  }
}

function closedWhileExecuting(id: string): TetherError {
  return new TetherError(
    'TERMINAL_CLOSED',
    `terminal '${id}' was closed while its command ran; open a new one`,
  );
}
