import type { InputProbe } from '../types.js';
import { sessionReadBytes } from './session-reads.js';
import { probeStdinRead, type StdinProbeTarget, type StdinProofFailure } from './stdin-probe.js';

/**
 * Failures that mean "looked and it does not wait"; every other one means "cannot tell" (no
 * proof here, an unreadable or vanished process, the foreground changed during the scan).
 */
const NOT_WAITING: ReadonlySet<StdinProofFailure> = new Set([
  'busy',
  'not-waiting',
  'not-this-tty',
  'no-foreground',
]);

/**
 * The local provider's answer to a terminal handle's `probeInput()` (T5, T6), from this
 * machine's /proc through {@link probeStdinRead}. Never throws; never a proof it did not see.
 *
 * @example
 * ```ts
 * const answer = probeInputWait({ root: session.identity, ttyPath: session.ttyPath });
 * if ('waiting' in answer && answer.waiting) console.log(answer.proof.via); // 'read'
 * ```
 */
export function probeInputWait(target: StdinProbeTarget): InputProbe {
  // Counted before the scan: a lower bound of what was read by the time of the proof (T5).
  const counted = sessionReadBytes(target.root);
  const readBytes = counted === null ? {} : { readBytes: counted };
  const proof = probeStdinRead(target);
  if (proof.proven) {
    const { pid, tid, via, wakeups } = proof;
    return { waiting: true, proof: { pid, tid, via, wakeups }, ...readBytes };
  }
  return NOT_WAITING.has(proof.reason)
    ? { waiting: false, reason: proof.reason, ...readBytes }
    : { unknown: proof.reason };
}
