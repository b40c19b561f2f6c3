import { setTimeout as sleep } from 'node:timers/promises';
import { TetherError } from '../errors.js';
import type { Approval, Approver, DecidedBy, PolicyRequest } from './policy-types.js';

/**
 * How an ask ended: a decision with who made it, or the call was cancelled.
 *
 * @example
 * ```ts
 * if (answer.outcome === 'cancelled') throw answer.error;
 * ```
 */
export type AskOutcome =
  | { readonly outcome: 'allow' | 'deny'; readonly decidedBy: DecidedBy; readonly reason: string }
  | { readonly outcome: 'cancelled'; readonly error: TetherError };

/**
 * Asks the host's approver once (SPEC A1), bounded three ways: `timeoutMs` (then it denies,
 * `decidedBy: 'timeout'`), the call's `signal` (then `ABORTED`), and `lifetime` — the runtime's
 * dispose (then `RUNTIME_DISPOSED`): a pending ask never holds teardown. The approver's own
 * signal aborts in every case, and its timer is cleared when the ask settles.
 *
 * @example
 * ```ts
 * const answer = await askApprover(approve, request, { timeoutMs: 60_000, signal, lifetime });
 * ```
 */
export async function askApprover(
  approve: Approver,
  request: PolicyRequest,
  bounds: { readonly timeoutMs: number; readonly signal?: AbortSignal; readonly lifetime: AbortSignal },
): Promise<AskOutcome> {
  const ask = new AbortController();
  const ended = (outcome: AskOutcome) => () => {
    settle?.(outcome);
  };
  let settle: ((outcome: AskOutcome) => void) | undefined;
  const stopped = new Promise<AskOutcome>((resolve) => {
    settle = resolve;
  });
  const onAbort = ended({
    outcome: 'cancelled',
    error: new TetherError('ABORTED', 'the call was cancelled while its approval was pending'),
  });
  const onDispose = ended({
    outcome: 'cancelled',
    error: new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed while an approval was pending'),
  });
  bounds.signal?.addEventListener('abort', onAbort, { once: true });
  bounds.lifetime.addEventListener('abort', onDispose, { once: true });
  if (bounds.signal?.aborted) onAbort();
  if (bounds.lifetime.aborted) onDispose();
  const timeout = sleep(bounds.timeoutMs, undefined, { signal: ask.signal }).then(
    (): AskOutcome => ({
      outcome: 'deny',
      decidedBy: 'timeout',
      reason: `nobody answered the approval request within ${bounds.timeoutMs} ms`,
    }),
    () => new Promise<never>(() => {}), // cleared: the ask settled another way
  );
  const answered = Promise.resolve()
    .then(() => approve(request, ask.signal))
    .then(readApproval, (error: unknown): AskOutcome => {
      return {
        outcome: 'deny',
        decidedBy: 'error',
        reason: `the approver failed (${error instanceof Error ? error.message : String(error)}); failing closed`,
      };
    });
  try {
    return await Promise.race([stopped, timeout, answered]);
  } finally {
    ask.abort(new Error('the ask settled'));
    bounds.signal?.removeEventListener('abort', onAbort);
    bounds.lifetime.removeEventListener('abort', onDispose);
  }
}

// Only a clear yes allows; anything else the approver returns denies (fail closed).
function readApproval(answer: Approval): AskOutcome {
  const decision = typeof answer === 'string' ? answer : answer?.decision;
  const said = typeof answer === 'object' && typeof answer?.reason === 'string' ? answer.reason : null;
  if (decision === 'allow')
    return { outcome: 'allow', decidedBy: 'approver', reason: said ?? 'the approver allowed it' };
  if (decision === 'deny')
    return { outcome: 'deny', decidedBy: 'approver', reason: said ?? 'the approver refused it' };
  return {
    outcome: 'deny',
    decidedBy: 'error',
    reason: `the approver answered ${JSON.stringify(answer) ?? String(answer)}, not 'allow' or 'deny'; failing closed`,
  };
}
