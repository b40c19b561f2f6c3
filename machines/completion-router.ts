import { assign, emit, fromCallback, fromPromise, setup, stateIn } from 'xstate';
import type { JobInfo, TerminalExit } from './facts.js';

/** One completion an agent hears of: a job of its owner ended, or a terminal's session exited. */
export type Completion =
  | { readonly kind: 'job'; readonly job: JobInfo }
  | { readonly kind: 'terminal'; readonly terminal: TerminalExit };

/** A coalesced completion notice (W1): the final facts of the jobs and terminals it reports. */
export interface Notice {
  readonly jobs: readonly JobInfo[];
  readonly terminals: readonly TerminalExit[];
}

/**
 * The ledger key of a completion: `job:<id>` or `terminal:<id>`.
 *
 * @example
 * ```ts
 * completionKey({ kind: 'terminal', terminal: exit }); // 'terminal:term_x1'
 * ```
 */
export function completionKey(completion: Completion): string {
  return completion.kind === 'job' ? `job:${completion.job.id}` : `terminal:${completion.terminal.id}`;
}

/**
 * The notice that reports `completions`, jobs and terminals each in arrival order.
 *
 * @example
 * ```ts
 * noticeOf([{ kind: 'job', job }, { kind: 'terminal', terminal }]); // { jobs: [job], terminals: [terminal] }
 * ```
 */
export function noticeOf(completions: readonly Completion[]): Notice {
  return {
    jobs: completions.flatMap((c) => (c.kind === 'job' ? [c.job] : [])),
    terminals: completions.flatMap((c) => (c.kind === 'terminal' ? [c.terminal] : [])),
  };
}

/** What a router actor is started with (never the owner token, O1). */
export interface RouterMachineInput {
  /** The router's own name and system id, `router:<sessionId>:<n>` (`…:<n>.<r>` after a reload). */
  readonly id: string;
  /** The agent publication it delivers to, `agent:<sessionId>:<n>`. */
  readonly publication: string;
  /** W1: completions within this many ms of the first one coalesce into one notice. */
  readonly windowMs: number;
}

/**
 * The router's facts. `claimed` is the at-most-once ledger (completion keys): a completion
 * enters it in the same step that queues it, and one whose key is in it is ignored.
 * `pending` waits for the quiet window; `batch` is the notice being delivered.
 */
export interface RouterMachineContext extends RouterMachineInput {
  readonly claimed: readonly string[];
  readonly pending: readonly Completion[];
  readonly batch: readonly Completion[];
  readonly delivered: number;
  readonly failed: number;
}

export type RouterMachineEvent =
  /** A job of the agent's owner ended or a terminal's session exited (from the `completions` source). */
  | { readonly type: 'COMPLETED'; readonly completion: Completion }
  /**
   * S5 (hot reload): detach from the source now and deliver what is already claimed without
   * waiting for the window, then stop. A new router attached after it hears the rest.
   */
  | { readonly type: 'DETACH' }
  /** D1: detach from the source and stop; undelivered completions are dropped. */
  | { readonly type: 'CLOSE' };

/** Emitted when a delivery failed (W1's error path); the job and terminal facts stay queryable. */
export interface DeliveryFailedEvent {
  readonly type: 'delivery.failed';
  readonly publication: string;
  readonly notice: Notice;
  readonly error: unknown;
}

/** What the invoked `deliver` actor is started with: one coalesced notice. */
export interface DeliverInput {
  readonly publication: string;
  readonly notice: Notice;
}

const sourceDetached = stateIn({ routing: { source: 'detached' } });

/**
 * The completion router of one agent publication (SPEC W1, S5). Two regions run in parallel
 * inside `routing`:
 *
 * - `source`: `attached` invokes the `completions` source (provided: subscribe to the job and
 *   terminal services first, which then replay the completions nobody heard, so there is no
 *   gap); `DETACH` (hot reload) leaves it, which detaches the listener.
 * - `delivery`: `quiet` → `collecting` on the first pending completion; the named delay
 *   `quietWindow` (from `windowMs`, on the actor system's clock) closes the window;
 *   `delivering` takes everything pending as one notice and invokes `deliver` once. A failed
 *   delivery is counted, emitted as `delivery.failed` and reported (`reportDeliveryFailure`):
 *   never retried, never counted as delivered. Once the source is detached, a window closes
 *   at once and `quiet` with nothing pending is `done`.
 *
 * `COMPLETED` is claimed atomically by the `unclaimed` guard and the `claim` action in one
 * step: a completion is queued at most once, whatever the source repeats. `CLOSE` (D1) leaves
 * `routing` from anywhere: the listener is detached, the window timer cancelled, and what was
 * not delivered is dropped. Both ways end in `closed`.
 *
 * @example
 * ```ts
 * const router = createActor(completionRouterMachine.provide({ actors: { completions, deliver } }), {
 *   input: { id: 'router:s1:1', publication: 'agent:s1:1', windowMs: 50 },
 * }).start();
 * router.send({ type: 'CLOSE' });
 * ```
 */
export const completionRouterMachine = setup({
  types: {
    context: {} as RouterMachineContext,
    input: {} as RouterMachineInput,
    events: {} as RouterMachineEvent,
    emitted: {} as DeliveryFailedEvent,
  },
  actors: {
    completions: fromCallback<RouterMachineEvent, { readonly publication: string }>(() => {
      throw new Error('machines/completion-router: the completions source was not provided');
    }),
    deliver: fromPromise<void, DeliverInput>(() =>
      Promise.reject(new Error('machines/completion-router: the deliver actor was not provided')),
    ),
  },
  delays: {
    quietWindow: ({ context }) => context.windowMs,
  },
  guards: {
    unclaimed: ({ context }, params: { readonly key: string }) => !context.claimed.includes(params.key),
    hasPending: ({ context }) => context.pending.length > 0,
    sourceDetached,
  },
  actions: {
    claim: assign(({ context }, params: { readonly completion: Completion }) => ({
      claimed: [...context.claimed, completionKey(params.completion)],
      pending: [...context.pending, params.completion],
    })),
    takeBatch: assign(({ context }) => ({ batch: context.pending, pending: [] })),
    countDelivered: assign(({ context }) => ({ delivered: context.delivered + 1, batch: [] })),
    countFailed: assign(({ context }) => ({ failed: context.failed + 1, batch: [] })),
    reportDeliveryFailure: (_, _params: { readonly notice: Notice; readonly error: unknown }) => {},
    reportSourceFailure: (_, _params: { readonly error: unknown }) => {},
  },
}).createMachine({
  id: 'router',
  context: ({ input }) => ({ ...input, claimed: [], pending: [], batch: [], delivered: 0, failed: 0 }),
  initial: 'routing',
  states: {
    routing: {
      type: 'parallel',
      on: { CLOSE: 'closed' },
      onDone: 'closed',
      states: {
        source: {
          initial: 'attached',
          states: {
            attached: {
              invoke: {
                id: 'completions',
                src: 'completions',
                input: ({ context }) => ({ publication: context.publication }),
                onError: {
                  target: '#router.closed',
                  actions: { type: 'reportSourceFailure', params: ({ event }) => ({ error: event.error }) },
                },
              },
              on: {
                COMPLETED: {
                  guard: {
                    type: 'unclaimed',
                    params: ({ event }) => ({ key: completionKey(event.completion) }),
                  },
                  actions: { type: 'claim', params: ({ event }) => ({ completion: event.completion }) },
                },
                DETACH: 'detached',
              },
            },
            detached: { type: 'final' },
          },
        },
        delivery: {
          initial: 'quiet',
          states: {
            quiet: {
              always: [
                { guard: 'hasPending', target: 'collecting' },
                { guard: 'sourceDetached', target: 'done' },
              ],
            },
            collecting: {
              always: { guard: 'sourceDetached', target: 'delivering' },
              after: { quietWindow: 'delivering' },
            },
            delivering: {
              entry: 'takeBatch',
              invoke: {
                id: 'deliver',
                src: 'deliver',
                input: ({ context }) => ({
                  publication: context.publication,
                  notice: noticeOf(context.batch),
                }),
                onDone: { target: 'quiet', actions: 'countDelivered' },
                onError: {
                  target: 'quiet',
                  actions: [
                    emit(({ context, event }) => ({
                      type: 'delivery.failed' as const,
                      publication: context.publication,
                      notice: noticeOf(context.batch),
                      error: event.error,
                    })),
                    {
                      type: 'reportDeliveryFailure',
                      params: ({ context, event }) => ({
                        notice: noticeOf(context.batch),
                        error: event.error,
                      }),
                    },
                    'countFailed',
                  ],
                },
              },
            },
            done: { type: 'final' },
          },
        },
      },
    },
    closed: { type: 'final' },
  },
});
