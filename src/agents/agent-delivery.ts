import type { Completion, Notice } from '../../machines/completion-router.js';
import { type CompletionSources, subscribeAll } from '../completions/completion-sources.js';
import { TetherError } from '../errors.js';
import type { AgentRecord } from './agent-record.js';

/** Service-wide count of the completion listeners routers hold (D3). */
export interface ListenerCount {
  listeners: number;
}

/**
 * The router's `completions` source (W1, S5): {@link subscribeAll} for the agent's owner,
 * counted while attached. Returns the detach that leaving the router's `attached` state
 * calls (D1, S5).
 *
 * @example
 * ```ts
 * const detach = subscribeCompletions({ jobs, terminals }, record, counts, (completion) =>
 *   router.send({ type: 'COMPLETED', completion }),
 * );
 * detach();
 * ```
 */
export function subscribeCompletions(
  sources: CompletionSources,
  record: AgentRecord,
  counts: ListenerCount,
  completed: (completion: Completion) => void,
): () => void {
  const detach = subscribeAll(sources, record.lease.token, completed);
  counts.listeners++;
  let attached = true;
  return () => {
    if (!attached) return;
    attached = false;
    counts.listeners--;
    detach();
  };
}

/**
 * The router's `deliver` actor (W1): one coalesced notice, attempted once. The optional
 * `onNotice` sender runs first; if it throws, the delivery fails (the router reports it and
 * does not retry). If the router was closed meanwhile (`signal`, D1) the notice is dropped;
 * otherwise it enters the agent's inbox, where the agent machine applies W2–W4.
 *
 * @example
 * ```ts
 * deliver: fromPromise(({ input, signal }) => deliverNotice(record, input.notice, signal)),
 * ```
 */
export function deliverNotice(record: AgentRecord, notice: Notice, signal: AbortSignal): Promise<void> {
  return record.work.track('delivery', send(record, notice, signal));
}

// Outside the router's transition: the sender, then the inbox (or the refusal as the failure).
async function send(record: AgentRecord, notice: Notice, signal: AbortSignal): Promise<void> {
  await null;
  if (signal.aborted) return;
  if (record.onNotice) await record.onNotice(notice);
  if (signal.aborted) return;
  const actor = record.actor!;
  const event = { type: 'NOTICE', notice } as const;
  if (!actor.getSnapshot().can(event)) {
    throw new TetherError('OWNER_RETIRED', 'the agent was retired before the notice could enter its inbox');
  }
  actor.send(event);
}
