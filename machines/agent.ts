import { and, assign, fromPromise, setup } from 'xstate';
import type { Notice } from './completion-router.js';

/** W3/W4: what a completion notice does to an idle agent. */
export type WakePolicy = 'wakeup' | 'quiet';

/** Why a turn started: user-authored input, or a completion notice that woke the agent (W3). */
export type TurnReason = 'user' | 'notice';

/**
 * One entry of an agent's inbox. `seq` is the agent's arrival order (1, 2, …); `claim()`
 * returns items in that order. A notice carries the final facts of the jobs and terminals it
 * reports.
 */
export type InboxItem =
  | { readonly kind: 'user'; readonly seq: number; readonly text: string }
  | ({ readonly kind: 'notice'; readonly seq: number } & Notice);

/** What an agent actor is started with: serializable facts only, never the owner token (O1). */
export interface AgentMachineInput {
  /** The publication's name and system id, `agent:<sessionId>:<n>`. */
  readonly publication: string;
  readonly sessionId: string;
  readonly wake: WakePolicy;
  /** W3: consecutive wakes allowed before notices degrade to next-step injections. */
  readonly maxWakes: number;
}

/**
 * The agent's facts; its phase is the snapshot's state value. The inbox is split in two:
 * `nextTurn` holds what starts (or started) a turn, `nextStep` what is injected into the
 * current or next turn without waking. `wakes` counts consecutive wakes since user input
 * was last claimed (W3, W5).
 */
export interface AgentMachineContext extends AgentMachineInput {
  readonly nextTurn: readonly InboxItem[];
  readonly nextStep: readonly InboxItem[];
  readonly wakes: number;
  /** The last `seq` handed out. */
  readonly seq: number;
  /** Turns started so far; the current turn's number while running. */
  readonly turns: number;
  /** Items with a larger `seq` arrived during the current turn. */
  readonly turnStartSeq: number;
  readonly reason: TurnReason;
  /** What the last `CLAIM` took, and how many claims there were. */
  readonly claimed: readonly InboxItem[];
  readonly claims: number;
  /**
   * Set on `RETIRE`: everything pending that no turn claimed, in arrival order. The service
   * reports it (it is not silently dropped); empty until the agent retires.
   */
  readonly unclaimed: readonly InboxItem[];
}

export type AgentMachineEvent =
  /** User-authored input. */
  | { readonly type: 'SAY'; readonly text: string }
  /** A coalesced completion notice from the agent's router (W1). */
  | { readonly type: 'NOTICE'; readonly notice: Notice }
  /** The current turn takes everything pending (`turn.inbox.claim()`). */
  | { readonly type: 'CLAIM'; readonly turn: number }
  /** D1: start teardown. */
  | { readonly type: 'RETIRE' };

/** What the invoked `turn` actor (the orchestrator's `onTurn`) is started with. */
export interface TurnInput {
  readonly publication: string;
  readonly turn: number;
  readonly reason: TurnReason;
}

type Queue = 'nextTurn' | 'nextStep';
type NewItem = { readonly kind: 'user'; readonly text: string } | ({ readonly kind: 'notice' } & Notice);

// The inbox item a SAY or NOTICE carries (params mappers see the whole event union).
function itemOf(event: AgentMachineEvent): NewItem {
  if (event.type === 'SAY') return { kind: 'user', text: event.text };
  if (event.type === 'NOTICE')
    return { kind: 'notice', jobs: event.notice.jobs, terminals: event.notice.terminals };
  throw new Error(`machines/agent: ${event.type} carries no inbox item`);
}

// Whether an item of `kind` arrived after the current turn started (and is still pending).
const arrivedInTurn = (context: AgentMachineContext, kind: InboxItem['kind']): boolean =>
  [...context.nextTurn, ...context.nextStep].some((i) => i.kind === kind && i.seq > context.turnStartSeq);

const enqueue = (to: Queue, reason?: TurnReason) => ({
  type: 'enqueue' as const,
  params: ({ event }: { event: AgentMachineEvent }) => ({ to, item: itemOf(event), reason }),
});

/**
 * One agent publication (SPEC section 6): `idle` ⇄ `running` (one turn at a time) →
 * `retiring` → `retired`. The wake budget is this machine's guards and actions:
 *
 * - W2: while `running`, SAY and NOTICE go to `nextStep`; no wake is spent.
 * - W3: `idle` + `wakeup` + `canWake` → the notice starts a turn and spends a wake; past
 *   `maxWakes` consecutive wakes it is a `nextStep` injection that does not wake.
 * - W4: `idle` + `quiet` → the notice only queues (`canWake` is false).
 * - W5: `CLAIM` resets `wakes` only when the claimed batch holds user input.
 * - A turn that ends with user input that arrived during it starts the next turn at once;
 *   notices that arrived during it do so only if a wake is left. A turn that throws goes
 *   back to `idle` (its failure is `reportTurnError`); what it left pending waits there.
 * - `retiring`/`retired` accept nothing: on entry what no turn claimed moves to `unclaimed`
 *   and `retireOwner` runs (D1); leaving `running` stops the `turn` actor (its signal
 *   aborts), the `teardown` actor drains.
 *
 * Effects are provided from `src/agents`: the `turn` and `teardown` actors and the
 * `retireOwner` / `reportTurnError` / `reportTeardownError` actions.
 *
 * @example
 * ```ts
 * const agent = createActor(agentMachine.provide({ actors: { turn, teardown } }), { input }).start();
 * agent.send({ type: 'SAY', text: 'hello' }); // idle → running
 * ```
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentMachineContext,
    input: {} as AgentMachineInput,
    events: {} as AgentMachineEvent,
  },
  actors: {
    turn: fromPromise<void, TurnInput>(() =>
      Promise.reject(new Error('machines/agent: the turn actor was not provided')),
    ),
    teardown: fromPromise<void, { readonly publication: string }>(() =>
      Promise.reject(new Error('machines/agent: the teardown actor was not provided')),
    ),
  },
  guards: {
    // W3/W4: only the wakeup policy wakes, and only while the budget lasts.
    canWake: ({ context }) => context.wake === 'wakeup' && context.wakes < context.maxWakes,
    isCurrentTurn: ({ context }, params: { readonly turn: number }) => params.turn === context.turns,
    userArrivedInTurn: ({ context }) => arrivedInTurn(context, 'user'),
    noticeArrivedInTurn: ({ context }) => arrivedInTurn(context, 'notice'),
  },
  actions: {
    enqueue: assign(
      (
        { context },
        params: { readonly to: Queue; readonly item: NewItem; readonly reason?: TurnReason | undefined },
      ) => {
        const item = { ...params.item, seq: context.seq + 1 } as InboxItem;
        return {
          seq: item.seq,
          [params.to]: [...context[params.to], item],
          ...(params.reason === undefined ? {} : { reason: params.reason }),
        };
      },
    ),
    spendWake: assign({ wakes: ({ context }) => context.wakes + 1 }),
    beginTurn: assign({
      turns: ({ context }) => context.turns + 1,
      turnStartSeq: ({ context }) => context.seq,
    }),
    // What arrived during the turn that just ended becomes what the next turn is about.
    promoteArrivals: assign(({ context }, params: { readonly reason: TurnReason }) => {
      const fresh = context.nextStep.filter((i) => i.seq > context.turnStartSeq);
      return {
        nextTurn: [...context.nextTurn, ...fresh],
        nextStep: context.nextStep.filter((i) => i.seq <= context.turnStartSeq),
        reason: params.reason,
      };
    }),
    // W5: the batch is everything pending in arrival order; claimed user input resets the budget.
    claim: assign(({ context }) => {
      const claimed = [...context.nextTurn, ...context.nextStep].sort((a, b) => a.seq - b.seq);
      return {
        claimed,
        claims: context.claims + 1,
        nextTurn: [],
        nextStep: [],
        wakes: claimed.some((i) => i.kind === 'user') ? 0 : context.wakes,
      };
    }),
    // D1: what is still pending will never be claimed; keep it as a fact of the retirement.
    setAsideUnclaimed: assign(({ context }) => ({
      unclaimed: [...context.nextTurn, ...context.nextStep].sort((a, b) => a.seq - b.seq),
      nextTurn: [],
      nextStep: [],
    })),
    retireOwner: () => {},
    reportTurnError: (_, _params: { readonly turn: number; readonly error: unknown }) => {},
    reportTeardownError: (_, _params: { readonly error: unknown }) => {},
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    ...input,
    nextTurn: [],
    nextStep: [],
    wakes: 0,
    seq: 0,
    turns: 0,
    turnStartSeq: 0,
    reason: 'user',
    claimed: [],
    claims: 0,
    unclaimed: [],
  }),
  initial: 'idle',
  states: {
    idle: {
      on: {
        SAY: { target: 'running', actions: enqueue('nextTurn', 'user') },
        NOTICE: [
          // W3: a wake permit is left: the notice starts a turn.
          { guard: 'canWake', target: 'running', actions: [enqueue('nextTurn', 'notice'), 'spendWake'] },
          // W3 (budget spent) and W4 (quiet): queue for the next step, do not wake.
          { actions: enqueue('nextStep') },
        ],
        RETIRE: 'retiring',
      },
    },
    running: {
      entry: 'beginTurn',
      invoke: {
        id: 'turn',
        src: 'turn',
        input: ({ context }) => ({
          publication: context.publication,
          turn: context.turns,
          reason: context.reason,
        }),
        onDone: [
          {
            guard: 'userArrivedInTurn',
            target: 'running',
            reenter: true,
            actions: { type: 'promoteArrivals', params: { reason: 'user' } },
          },
          {
            guard: and(['noticeArrivedInTurn', 'canWake']),
            target: 'running',
            reenter: true,
            actions: [{ type: 'promoteArrivals', params: { reason: 'notice' } }, 'spendWake'],
          },
          { target: 'idle' },
        ],
        onError: {
          target: 'idle',
          actions: {
            type: 'reportTurnError',
            params: ({ context, event }) => ({ turn: context.turns, error: event.error }),
          },
        },
      },
      on: {
        // W2: while running, input and notices land in the current turn's next step.
        SAY: { actions: enqueue('nextStep') },
        NOTICE: { actions: enqueue('nextStep') },
        CLAIM: {
          guard: { type: 'isCurrentTurn', params: ({ event }) => ({ turn: event.turn }) },
          actions: 'claim',
        },
        RETIRE: 'retiring',
      },
    },
    // D1: the owner is retired on entry and the inbox set aside; nothing is accepted from here on.
    retiring: {
      entry: ['setAsideUnclaimed', 'retireOwner'],
      invoke: {
        id: 'teardown',
        src: 'teardown',
        input: ({ context }) => ({ publication: context.publication }),
        onDone: 'retired',
        onError: {
          target: 'retired',
          actions: { type: 'reportTeardownError', params: ({ event }) => ({ error: event.error }) },
        },
      },
    },
    retired: { type: 'final' },
  },
});
