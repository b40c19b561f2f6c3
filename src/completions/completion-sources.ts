import type { Completion } from '../../machines/completion-router.js';
import type { JobService } from '../jobs/job-types.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { TerminalService } from '../terminals/terminal-types.js';

/** Where an owner's completions come from: its ended jobs and, when given, its terminals' session exits. */
export interface CompletionSources {
  readonly jobs: Pick<JobService, 'onCompletion'>;
  readonly terminals?: Pick<TerminalService, 'onSessionExit'> | undefined;
}

/**
 * Subscribes `completed` to every completion of `owner` (W1, S5): each service joins the
 * listener first and then replays what ended while no listener heard it, and claims each
 * (listener, item) pair once — so nothing falls into a gap and nothing is doubled. Returns
 * the detach (idempotent).
 *
 * @example
 * ```ts
 * const detach = subscribeAll({ jobs: rt.jobs, terminals: rt.terminals }, owner, (c) => console.log(c.kind));
 * detach();
 * ```
 */
export function subscribeAll(
  sources: CompletionSources,
  owner: AgentOwnerToken,
  completed: (completion: Completion) => void | Promise<void>,
): () => void {
  const subscriptions = [sources.jobs.onCompletion(owner, (job) => completed({ kind: 'job', job }))];
  if (sources.terminals) {
    subscriptions.push(
      sources.terminals.onSessionExit(owner, (terminal) => completed({ kind: 'terminal', terminal })),
    );
  }
  return () => {
    for (const subscription of subscriptions.splice(0)) subscription.dispose();
  };
}
