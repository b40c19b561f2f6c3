import { TetherError } from '../errors.js';
import type { JobInfo, JobService } from '../jobs/job-types.js';
import type { AgentRecord } from './agent-record.js';

/** Service-wide count of the completion listeners routers hold (D3). */
export interface ListenerCount {
  listeners: number;
}

/**
 * The router's `completions` source (W1, S5): subscribes to the owner's completions; the
 * job service joins the listener first and then replays every ended job no listener heard,
 * and claims each (listener, job) pair once — so nothing falls into a gap and nothing is
 * doubled. Returns the detach that leaving the router's `listening` state calls (D1).
 *
 * @example
 * ```ts
 * const detach = subscribeCompletions(jobs, record, counts, (job) => router.send({ type: 'COMPLETED', job }));
 * detach();
 * ```
 */
export function subscribeCompletions(
  jobs: JobService,
  record: AgentRecord,
  counts: ListenerCount,
  completed: (job: JobInfo) => void,
): () => void {
  const subscription = jobs.onCompletion(record.lease.token, (job) => completed(job));
  counts.listeners++;
  let attached = true;
  return () => {
    if (!attached) return;
    attached = false;
    counts.listeners--;
    subscription.dispose();
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
 * deliver: fromPromise(({ input, signal }) => deliverNotice(record, input.jobs, signal)),
 * ```
 */
export function deliverNotice(
  record: AgentRecord,
  jobs: readonly JobInfo[],
  signal: AbortSignal,
): Promise<void> {
  return record.work.track('delivery', send(record, jobs, signal));
}

// Outside the router's transition: the sender, then the inbox (or the refusal as the failure).
async function send(record: AgentRecord, jobs: readonly JobInfo[], signal: AbortSignal): Promise<void> {
  await null;
  if (signal.aborted) return;
  if (record.onNotice) await record.onNotice({ jobs });
  if (signal.aborted) return;
  const actor = record.actor!;
  const event = { type: 'NOTICE', jobs } as const;
  if (!actor.getSnapshot().can(event)) {
    throw new TetherError('OWNER_RETIRED', 'the agent was retired before the notice could enter its inbox');
  }
  actor.send(event);
}
