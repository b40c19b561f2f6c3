import type { PtySession } from './pty-host.js';
import { probeStdinRead, type StdinProof, stdinProofSupported } from './stdin-probe.js';
import { TimerCount } from './terminal-timers.js';
import type { WaitReason } from './terminal-types.js';

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
}

/**
 * A proof taken before the input was written (T5): the wait it saw is not evidence that our
 * input was consumed, so a later proof must come from another thread or a later wake-up.
 *
 * @example
 * ```ts
 * const before = proofBeforeInput(pty);
 * await pty.write(input);
 * const reason = await waitForReason(pty, before, { settleMs: 500, timeoutMs: 30_000, startedAt });
 * ```
 */
export function proofBeforeInput(pty: PtySession): StdinProof | null {
  return stdinProofSupported() ? probeStdinRead({ root: pty.identity, ttyPath: pty.ttyPath }) : null;
}

/**
 * Waits after the input was fully written until it is sensible to think again (T5): the
 * session ended, the foreground group provably waits for input on this terminal (T6), the
 * output was silent for `settleMs` (counted from the write, never from before it), or the
 * total deadline passed. Every timer it arms is cancelled when it returns, and counted in
 * `timers` while armed (D3).
 */
export async function waitForReason(
  pty: PtySession,
  before: StdinProof | null,
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
      if (before !== null && (await provenWaiting(pty, before, stop.signal, timers))) {
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

// T6 caller's half: a proof counts only if it is new since the write (T5) and no output
// arrived from the moment the scan began until stragglers had time to land.
async function provenWaiting(
  pty: PtySession,
  before: StdinProof,
  signal: AbortSignal,
  timers: TimerCount,
): Promise<boolean> {
  const scanStartedAt = performance.now();
  const proof = probeStdinRead({ root: pty.identity, ttyPath: pty.ttyPath });
  if (!proof.proven) return false;
  const fresh = !before.proven || proof.tid !== before.tid || proof.wakeups > before.wakeups;
  if (!fresh) return false;
  await timers.sleep(STRAGGLER_MS, undefined, { signal });
  return pty.lastOutputAt < scanStartedAt;
}
