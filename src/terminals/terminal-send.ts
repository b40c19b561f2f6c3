import { assertArgument, TetherError } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { InputProbe, TerminalHandle } from '../subprocess/types.js';
import { FIRST_PROMPT_WAIT_MS } from './terminal-record.js';
import type { TerminalTable } from './terminal-table.js';
import { TimerCount } from './terminal-timers.js';
import {
  TERMINAL_SIGNALS,
  type TerminalSendResult,
  type TerminalSignal,
  type WaitReason,
} from './terminal-types.js';

/**
 * How long `send` waits before looking again (output silence, the stdin proof, the deadline):
 * front-loaded, since a program usually blocks on input within a few ms of reading ours.
 */
const TICKS_MS = [2, 3, 5, 10];
/**
 * The PTY worker batches output for up to 5 ms (PtyHostOptions.flushMs): a proof waits this long
 * for stragglers. Output later than that is not lost; it shows up in the next read.
 */
const STRAGGLER_MS = 7;

export interface SendWait {
  readonly settleMs: number;
  readonly timeoutMs: number;
  /** `performance.now()` when the send began (the total deadline counts from here). */
  readonly startedAt: number;
  /** Bytes a proof's processes must have read since `before` (T5); see {@link completeLineBytes}. */
  readonly mustRead?: number;
}

/**
 * The bytes of `input` a reader must have taken before its wait can prove the input was read
 * (T5): everything up to the last line end. A canonical-mode terminal keeps a trailing partial
 * line in its own buffer, where the reader cannot see it yet, so that part is not counted.
 *
 * @example
 * ```ts
 * completeLineBytes('read x\r'); // 7
 * completeLineBytes('abc'); // 0
 * ```
 */
export function completeLineBytes(input: string): number {
  const end = Math.max(input.lastIndexOf('\r'), input.lastIndexOf('\n'));
  return end < 0 ? 0 : Buffer.byteLength(input.slice(0, end + 1));
}

/**
 * `send` (T5): writes `input` in the terminal's one turn and returns the output that followed
 * with why it returned — `stdin_read` only on the handle's proof (T6), else `inferred_idle`,
 * `timeout` or `session_exit`.
 *
 * @example
 * ```ts
 * const r = await sendToTerminal(table, owner, id, 'read x\r', {});
 * r.waitReason; // 'stdin_read'
 * ```
 */
export async function sendToTerminal(
  table: TerminalTable,
  owner: AgentOwnerToken,
  id: string,
  input: string,
  opts: { settleMs?: number; timeoutMs?: number },
): Promise<TerminalSendResult> {
  const record = table.lookup(owner, id);
  assertArgument(typeof input === 'string', 'input must be a string (use "\\r" or "\\n" for Enter)');
  const settleMs = opts.settleMs ?? 500;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  assertArgument(
    Number.isFinite(settleMs) && settleMs >= 0,
    `settleMs must be a finite number >= 0, got ${settleMs}`,
  );
  assertArgument(
    Number.isFinite(timeoutMs) && timeoutMs > 0,
    `timeoutMs must be a positive finite number, got ${timeoutMs}`,
  );
  await table.config.decide?.({
    action: 'terminal.send',
    owner,
    command: input,
    cwd: record.spec.cwd,
    hidden: record.hidden,
  });
  return table.withTurn(record, 'send', async () => {
    const from = record.output.end; // the first prompt, if this waits for it, is output of this send
    await record.shellReady(FIRST_PROMPT_WAIT_MS, table.timers);
    const startedAt = performance.now();
    const pty = record.pty;
    const before = await proofBeforeInput(pty);
    await pty.write(input);
    const wait = { settleMs, timeoutMs, startedAt, mustRead: completeLineBytes(input) };
    const waitReason = await waitForReason(pty, before, wait, table.timers);
    const page = record.output.read(from, Number.MAX_SAFE_INTEGER);
    return { output: page.text, cursor: page.cursor, lossy: page.lossy, waitReason };
  });
}

/**
 * `signal` (T8): the provider's handle delivers it to what runs in the foreground now.
 *
 * @example
 * ```ts
 * await signalTerminal(table, owner, id, 'SIGINT');
 * ```
 */
export async function signalTerminal(
  table: TerminalTable,
  owner: AgentOwnerToken,
  id: string,
  signal: TerminalSignal,
): Promise<void> {
  const record = table.lookup(owner, id);
  assertArgument(
    (TERMINAL_SIGNALS as readonly string[]).includes(signal),
    `signal must be one of ${TERMINAL_SIGNALS.join(', ')}, got ${String(signal)}`,
  );
  if (!(await record.pty.signalForeground(signal))) {
    throw new TetherError('TERMINAL_CLOSED', `terminal '${id}' has no live foreground process to signal`);
  }
}

/**
 * A proof taken before the input was written (T5): the wait it saw is not evidence that our
 * input was consumed, so a later proof must come from another thread or a later wake-up.
 *
 * @example
 * ```ts
 * const before = await proofBeforeInput(pty);
 * await pty.write(input);
 * const reason = await waitForReason(pty, before, { settleMs: 500, timeoutMs: 30_000, startedAt });
 * ```
 */
export function proofBeforeInput(pty: TerminalHandle): Promise<InputProbe> {
  return pty.probeInput();
}

/**
 * Waits after the input was fully written until it is sensible to think again (T5): the
 * session ended, the foreground group provably waits for input on this terminal (T6), the
 * output was silent for `settleMs` (counted from the write, never from before it), or the
 * total deadline passed. Every timer it arms is cancelled when it returns, and counted in
 * `timers` while armed (D3).
 */
export async function waitForReason(
  pty: TerminalHandle,
  before: InputProbe,
  wait: SendWait,
  timers: TimerCount = new TimerCount(),
): Promise<WaitReason> {
  const writtenAt = performance.now();
  let exited = false;
  void pty.exited.then(() => {
    exited = true;
  });
  const stop = new AbortController();
  try {
    for (let tick = 0; ; tick++) {
      if (exited) return 'session_exit';
      const now = performance.now();
      if (now - wait.startedAt >= wait.timeoutMs) return 'timeout';
      if (now - Math.max(writtenAt, pty.lastOutputAt) >= wait.settleMs) return 'inferred_idle';
      if (await provenWaiting(pty, before, wait.mustRead ?? 0, stop.signal, timers)) {
        if (exited) return 'session_exit';
        return 'stdin_read';
      }
      await timers.sleep(TICKS_MS[Math.min(tick, TICKS_MS.length - 1)] ?? 10, undefined, {
        signal: stop.signal,
      });
    }
  } finally {
    stop.abort();
  }
}

// T6 caller's half: a proof counts only if it is new since the write (T5), the terminal's
// processes have read the input's complete lines since (where the handle counts reads: a
// loaded machine can deliver a write in pieces, and a reader back in its wait with half the
// line read is not done with it), and no output arrived from the moment the probe began until
// stragglers had time to land. Only the handle's answer counts: `unknown` and `waiting: false`
// prove nothing.
async function provenWaiting(
  pty: TerminalHandle,
  before: InputProbe,
  mustRead: number,
  signal: AbortSignal,
  timers: TimerCount,
): Promise<boolean> {
  const scanStartedAt = performance.now();
  const answer = await pty.probeInput();
  if (!('waiting' in answer) || !answer.waiting) return false;
  const { proof } = answer;
  const was = 'waiting' in before && before.waiting ? before.proof : null;
  const fresh = was === null || proof.tid !== was.tid || proof.wakeups > was.wakeups;
  if (!fresh) return false;
  const readBefore = 'readBytes' in before ? before.readBytes : undefined;
  if (
    readBefore !== undefined &&
    answer.readBytes !== undefined &&
    answer.readBytes - readBefore < mustRead
  ) {
    return false;
  }
  await timers.sleep(STRAGGLER_MS, undefined, { signal });
  return pty.lastOutputAt < scanStartedAt;
}
