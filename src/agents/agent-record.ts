import type { ActorRefFrom } from 'xstate';
import type { agentMachine, InboxItem } from '../../machines/agent.js';
import type { completionRouterMachine } from '../../machines/completion-router.js';
import { TetherError } from '../errors.js';
import type { OwnerLease } from '../owners/owner-registry.js';
import type {
  Agent,
  AgentDisposal,
  AgentErrorReporter,
  AgentErrorStage,
  AgentOptions,
  Notice,
} from './agent-types.js';
import type { AgentWork } from './agent-work.js';

export type AgentActor = ActorRefFrom<typeof agentMachine>;
export type RouterActor = ActorRefFrom<typeof completionRouterMachine>;

/**
 * What the service holds for one agent publication beside its actors: the owner lease (the
 * token never enters a machine, O1), the orchestrator's callbacks and the work in flight.
 */
export interface AgentRecord {
  /** `agent:<sessionId>:<n>`, the agent actor's system id. */
  readonly publication: string;
  readonly sessionId: string;
  readonly lease: OwnerLease;
  readonly onTurn: AgentOptions['onTurn'];
  readonly onNotice: AgentOptions['onNotice'];
  readonly work: AgentWork;
  /** The orchestrator's handle, made before the actors. */
  agent?: Agent;
  /** Set in the same step that spawns the actors. */
  actor?: AgentActor;
  /** The attached router, `router:<sessionId>:<n>` (`…:<n>.<r>` after the r-th reload); none in a reload's gap. */
  router?: RouterActor | undefined;
  /** Every router this publication had that may still be delivering (D1 closes them all). */
  readonly routers: Set<RouterActor>;
  /** The memoized D1 teardown. */
  disposing?: Promise<AgentDisposal>;
}

/**
 * Publishes a failure on the error path (W1): on a later microtask (never inside a machine
 * transition), tracked as `error` work so teardown waits for it, and never thrown back: a
 * reporter that fails is swallowed after the fact.
 *
 * @example
 * ```ts
 * publishError(record, onError, 'delivery', error, notice);
 * await record.work.settle('error');
 * ```
 */
export function publishError(
  record: AgentRecord,
  report: AgentErrorReporter,
  stage: AgentErrorStage,
  error: unknown,
  notice?: Notice,
): void {
  const where = {
    agent: record.publication,
    sessionId: record.sessionId,
    stage,
    ...(notice === undefined
      ? {}
      : { jobIds: notice.jobs.map((j) => j.id), terminalIds: notice.terminals.map((t) => t.id) }),
  };
  const publication = Promise.resolve()
    .then(() => report(error, where))
    .catch(() => {});
  void record.work.track('error', publication);
}

/**
 * The default error path: a process warning, visible and never thrown.
 *
 * @example
 * ```ts
 * createAgentService({ owners, jobs, onError: warnAgentError });
 * ```
 */
export function warnAgentError(error: unknown, where: Parameters<AgentErrorReporter>[1]): void {
  const text = error instanceof Error ? error.message : String(error);
  const ids = [...(where.jobIds ?? []), ...(where.terminalIds ?? [])];
  const about = ids.length > 0 ? ` (${ids.join(', ')})` : '';
  // Unclaimed input is not a failure of a stage: the message says what happened.
  const what = where.stage === 'input' ? '' : `${where.stage} failed${about}: `;
  process.emitWarning(`${where.agent}: ${what}${text}`, { code: 'TETHER_AGENT' });
}

/**
 * D1: the error the error path gets for user input that no turn claimed before the agent was
 * disposed (`INPUT_UNCLAIMED`), or `undefined` when every input was claimed. Unclaimed
 * notices are not errors: their jobs' facts stay queryable until the owner is drained.
 *
 * @example
 * ```ts
 * const error = unclaimedInputError(snapshot.context.unclaimed);
 * if (error) publishError(record, onError, 'input', error);
 * ```
 */
export function unclaimedInputError(unclaimed: readonly InboxItem[]): TetherError | undefined {
  const input = unclaimed.filter((item) => item.kind === 'user');
  if (input.length === 0) return undefined;
  const which = input.map((item) => `#${item.seq}`).join(', ');
  return new TetherError(
    'INPUT_UNCLAIMED',
    `${input.length} user input(s) (${which}) reached no turn: the agent was disposed first; ` +
      'await agent.idle() before agent.dispose(), or take them from the result of dispose()',
  );
}
