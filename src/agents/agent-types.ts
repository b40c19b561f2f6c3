import type { InspectionEvent } from 'xstate';
import type { InboxItem, TurnReason, WakePolicy } from '../../machines/agent.js';
import type { Notice } from '../../machines/completion-router.js';
import type { JobService } from '../jobs/job-types.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { PlacementOptions } from '../placement/placement-types.js';
import type { Policy } from '../policy/policy-types.js';
import type { TerminalService } from '../terminals/terminal-types.js';
import type { OwnerTools } from '../tools/tool-types.js';
import type { Clock } from './agent-clock.js';

export type { InboxItem, TurnReason, WakePolicy } from '../../machines/agent.js';
/** A coalesced completion notice (W1): the final facts of the jobs and terminals it reports. */
export type { Completion, Notice } from '../../machines/completion-router.js';

/** `retired` covers teardown in progress: from `dispose()` on, the agent accepts nothing. */
export type AgentPhase = 'idle' | 'running' | 'retired';

/** The inbox as one turn sees it. */
export interface TurnInbox {
  /**
   * Takes everything pending for this step, in arrival order: user input and notices that
   * started the turn or arrived since the last claim (W2). Claimed user input resets the
   * wake budget (W5). Throws `OWNER_RETIRED` once the agent is being disposed and
   * `INVALID_ARGUMENT` when this turn is over (a later turn owns the inbox).
   */
  claim(): InboxItem[];
  /** How many items `claim()` would take now. */
  readonly pending: number;
}

/**
 * One turn of an agent, handed to the orchestrator's `onTurn` driver.
 *
 * @example
 * ```ts
 * async function onTurn(turn: Turn) {
 *   for (let items = turn.inbox.claim(); items.length > 0 && !turn.signal.aborted; items = turn.inbox.claim()) {
 *     await llmStep(items); // tools run with turn.agent.owner
 *   }
 * }
 * ```
 */
export interface Turn {
  readonly agent: Agent;
  /** 1, 2, … per agent publication. */
  readonly number: number;
  /** What started it: user input, or a notice that woke the agent (W3). */
  readonly reason: TurnReason;
  /** Aborted when the agent is disposed mid-turn (D1); the driver should return soon after. */
  readonly signal: AbortSignal;
  readonly inbox: TurnInbox;
}

/**
 * What `create` needs. `onTurn` is the orchestrator's driver (its LLM loop): a turn ends
 * when its promise settles; a throw or rejection is reported on the error path and the
 * agent goes back to `idle`. Also where the agent's processes run (X4, A3, K5): `provider`,
 * `sandbox`, `isolation`.
 */
export interface AgentOptions extends PlacementOptions {
  readonly sessionId: string;
  /** W3/W4; default `'wakeup'`. */
  readonly wake?: WakePolicy;
  /** W3: consecutive wakes before notices stop waking; default 3 (0 = never wake). */
  readonly maxWakes?: number;
  onTurn(turn: Turn): void | Promise<void>;
  /**
   * The notice sender (optional): called with each coalesced notice before it enters the
   * inbox, e.g. to record it in a transcript. A throw or rejection fails that delivery: the
   * notice is not queued, not retried, and the failure goes to the error path (W1).
   */
  onNotice?(notice: Notice): void | Promise<void>;
  /** A1: this agent's policy; replaces the runtime's (`createRuntime({ policy })`). */
  readonly policy?: Policy;
}

/** A snapshot of one agent's machine, for operators and tests. */
export interface AgentStatus {
  readonly phase: AgentPhase;
  readonly turns: number;
  /** Consecutive wakes since user input was last claimed (W3, W5). */
  readonly wakes: number;
  readonly maxWakes: number;
  readonly wake: WakePolicy;
  /** Items waiting to start or be claimed by a turn (`nextTurn`) … */
  readonly pendingTurn: number;
  /** … and items injected into the next step without waking (`nextStep`). */
  readonly pendingStep: number;
}

/**
 * What `agent.dispose()` resolves with. `unclaimed` is every inbox item no turn claimed
 * before the agent was disposed (user input and notices, in arrival order): input given to
 * an agent that is disposed before a turn takes it is reported here, and its user input
 * also on the error path (`stage: 'input'`, code `INPUT_UNCLAIMED`), never dropped silently.
 *
 * @example
 * ```ts
 * const { unclaimed } = await agent.dispose();
 * for (const item of unclaimed) if (item.kind === 'user') requeue(item.text);
 * ```
 */
export interface AgentDisposal {
  readonly unclaimed: readonly InboxItem[];
}

/**
 * One agent publication. `owner` is its capability for tools and services (O1): a fresh
 * token per publication, never serialized (`toJSON` leaves it out).
 *
 * @example
 * ```ts
 * const agent = agents.create({ sessionId: 's1', onTurn: drive });
 * agent.say('run the tests and then lint');
 * await agent.idle();    // the turn it started (and any it led to) has ended
 * await agent.dispose(); // D1: { unclaimed: [] }
 * ```
 */
export interface Agent {
  /** The publication's system id, `agent:<sessionId>:<n>`. */
  readonly id: string;
  readonly sessionId: string;
  readonly owner: AgentOwnerToken;
  readonly phase: AgentPhase;
  /**
   * The model tools with this agent as the trusted owner (O3): arguments can never name an
   * owner, and after `dispose` every call fails closed with `OWNER_RETIRED`.
   */
  readonly tools: OwnerTools;
  /**
   * User-authored input: starts a turn when idle, else lands in the next step (W2). Returns
   * at once (it does not return a promise: a fire-and-forget `say` must never become an
   * unhandled rejection); `await agent.idle()` waits for the turns it causes. Throws
   * `OWNER_RETIRED` after dispose.
   */
  say(text: string): void;
  /**
   * Resolves once the agent is idle: no turn running and none due — every turn that user
   * input or a wake started has ended (also when one threw: that failure is on the error
   * path). At once when it is idle already. It waits for turns, not for background jobs:
   * a job that ends later may wake the agent again (W3). Rejects with `OWNER_RETIRED` when
   * the agent is disposed first and with `ABORTED` when `signal` aborts. From inside
   * `onTurn`, do not await it: it waits for that very turn to end.
   */
  idle(options?: { readonly signal?: AbortSignal }): Promise<void>;
  status(): AgentStatus;
  /**
   * D1: retire the owner, abort the running turn, detach the router, drain the owner's
   * resources (in reverse start order), then wait for the turn, deliveries and error
   * publication (each bounded by `turnGraceMs`). Resolves with what no turn claimed
   * (`AgentDisposal`). Idempotent: every call gets the same result. From inside `onTurn`,
   * call it and return rather than await it: teardown waits for that very turn to settle.
   */
  dispose(): Promise<AgentDisposal>;
}

/**
 * Where an agent-side failure happened. `input`: user input no turn claimed before the agent
 * was disposed (a `TetherError` with code `INPUT_UNCLAIMED`).
 */
export type AgentErrorStage = 'turn' | 'delivery' | 'subscribe' | 'drain' | 'teardown' | 'input';

/** The error path (W1): called once per failure, outside any machine transition. */
export type AgentErrorReporter = (
  error: unknown,
  where: {
    readonly agent: string;
    readonly sessionId: string;
    readonly stage: AgentErrorStage;
    /** A failed delivery's jobs and terminals (`stage: 'delivery'`). */
    readonly jobIds?: readonly string[];
    readonly terminalIds?: readonly string[];
  },
) => void | Promise<void>;

/** A service whose per-owner resources an agent's teardown drains (terminals, …). */
export interface Drainable {
  drainOwner(owner: AgentOwnerToken): Promise<void>;
}

/** Options of `createAgentService`. */
export interface AgentServiceOptions {
  readonly owners: OwnerRegistry;
  readonly jobs: JobService;
  /** Where terminal session exits come from; without it, notices report jobs only. */
  readonly terminals?: Pick<TerminalService, 'onSessionExit'>;
  /**
   * Services started after `jobs`, in start order (e.g. `[terminals]`). D1 drains them in
   * reverse start order: the last of these first, `jobs` last.
   */
  readonly drainables?: readonly Drainable[];
  /** W1 quiet window in ms; default 50. */
  readonly quietWindowMs?: number;
  /** D1: how long teardown waits for an aborted turn to settle; default 5,000 ms. */
  readonly turnGraceMs?: number;
  /** XState inspector for the agent system (root `tether.agents`). */
  readonly inspect?: (event: InspectionEvent) => void;
  /** Default: a process warning (`TETHER_AGENT`). */
  readonly onError?: AgentErrorReporter;
  /** The agent system's clock (quiet windows); default the real one. Tests may inject `SimulatedClock`. */
  readonly clock?: Clock;
  /** Binds the model tools to an agent's owner (the composition root passes the registry's `bindTools`). */
  readonly tools?: (owner: AgentOwnerToken) => OwnerTools;
}

/** Live resources of the agent service; all zero when it is quiescent (D3). */
export interface AgentServiceStats {
  /** Agent publications not yet fully torn down. */
  readonly agents: number;
  /** Agent and router actors alive in the agent system. */
  readonly actors: number;
  /** `onTurn` calls not yet settled (including those that outlived their agent's teardown). */
  readonly turns: number;
  /** Of `turns`: turns that outlived `turnGraceMs` at teardown and are still pending. */
  readonly abandonedTurns: number;
  /** Completion listeners the routers hold (one per router, on jobs and terminals). */
  readonly listeners: number;
  /** Completions claimed by a router and waiting for their quiet window. */
  readonly queued: number;
  /** Notices being delivered. */
  readonly deliveries: number;
  /** Armed timers: quiet windows and teardown deadlines. */
  readonly timers: number;
  /** Agent teardowns in progress and `agent.idle()` calls still waiting. */
  readonly waiters: number;
  /** Error publications in flight. */
  readonly errors: number;
  /** Hot reloads (S5) not yet settled. */
  readonly reloads: number;
}

/**
 * `rt.agents` (SPEC sections 6, 7).
 *
 * @example
 * ```ts
 * const agents = createAgentService({ owners, jobs });
 * const agent = agents.create({ sessionId: 's1', onTurn });
 * await agents.dispose(); // D2: every agent torn down, stats all zero
 * ```
 */
export interface AgentService {
  create(options: AgentOptions): Agent;
  stats(): AgentServiceStats;
  /**
   * S5, hot reload of the lifecycle wiring: every live agent's router is detached (what it
   * already claimed is still delivered, without waiting for its window), `during()` runs —
   * e.g. loading a new provider module — and then every agent still live gets a new router,
   * which subscribes first and then replays the completions that ended in the gap: none is
   * lost, none is doubled. An agent disposed during the gap is still torn down and drained
   * (teardown does not go through a router). Reloads run one at a time (one called from inside
   * `during` is refused with INVALID_ARGUMENT: it would wait for itself); `during`'s error is
   * rethrown after the routers are back.
   */
  reload<T>(during: () => T | Promise<T>): Promise<T>;
  /** D2: D1 for every agent, then the actor system stops. Idempotent. */
  dispose(): Promise<void>;
}
