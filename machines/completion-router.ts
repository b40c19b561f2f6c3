import { assign, emit, fromCallback, fromPromise, setup } from 'xstate';
import type { JobInfo } from '../src/jobs/job-types.js';

/** What a router actor is started with (never the owner token, O1). */
export interface RouterMachineInput {
  /** The router's own name and system id, `router:<sessionId>:<n>`. */
  readonly id: string;
  /** The agent publication it delivers to, `agent:<sessionId>:<n>`. */
  readonly publication: string;
  /** W1: completions within this many ms of the first one coalesce into one notice. */
  readonly windowMs: number;
}

/**
 * The router's facts. `claimed` is the at-most-once ledger: a job id enters it in the same
 * step that queues the completion, and a completion whose id is in it is ignored.
 * `pending` waits for the quiet window; `batch` is the notice being delivered.
 */
export interface RouterMachineContext extends RouterMachineInput {
  readonly claimed: readonly string[];
  readonly pending: readonly JobInfo[];
  readonly batch: readonly JobInfo[];
  readonly delivered: number;
  readonly failed: number;
}

export type RouterMachineEvent =
  /** A job of the agent's owner ended (from the `completions` source). */
  | { readonly type: 'COMPLETED'; readonly job: JobInfo }
  /** D1: detach from the source and stop; undelivered completions are dropped. */
  | { readonly type: 'CLOSE' };

/** Emitted when a delivery failed (W1's error path); the job facts stay queryable. */
export interface DeliveryFailedEvent {
  readonly type: 'delivery.failed';
  readonly publication: string;
  readonly jobIds: readonly string[];
  readonly error: unknown;
}

/** What the invoked `deliver` actor is started with: one coalesced notice. */
export interface DeliverInput {
  readonly publication: string;
  readonly jobs: readonly JobInfo[];
}

/**
 * The completion router of one agent publication (SPEC W1).
 *
 * - `listening` invokes the `completions` source (provided: subscribe to the job service
 *   first, which then replays the completions nobody heard, so there is no gap) and leaving
 *   it (CLOSE) detaches the listener and cancels the quiet-window timer (D1).
 * - `COMPLETED` is claimed atomically by the `unclaimed` guard and the `claim` action in one
 *   step: a job is queued at most once, whatever the source repeats.
 * - `quiet` → `collecting` on the first pending completion; the named delay `quietWindow`
 *   (from `windowMs`, on the actor system's clock) closes the window; `delivering` takes
 *   everything pending as one notice and invokes `deliver` once. A failed delivery is
 *   counted, emitted as `delivery.failed` and reported (`reportDeliveryFailure`): never
 *   retried, never counted as delivered. Completions arriving meanwhile open the next window.
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
    unclaimed: ({ context }, params: { readonly jobId: string }) => !context.claimed.includes(params.jobId),
    hasPending: ({ context }) => context.pending.length > 0,
  },
  actions: {
    claim: assign(({ context }, params: { readonly job: JobInfo }) => ({
      claimed: [...context.claimed, params.job.id],
      pending: [...context.pending, params.job],
    })),
    takeBatch: assign(({ context }) => ({ batch: context.pending, pending: [] })),
    countDelivered: assign(({ context }) => ({ delivered: context.delivered + 1, batch: [] })),
    countFailed: assign(({ context }) => ({ failed: context.failed + 1, batch: [] })),
    reportDeliveryFailure: (
      _,
      _params: { readonly jobIds: readonly string[]; readonly error: unknown },
    ) => {},
    reportSourceFailure: (_, _params: { readonly error: unknown }) => {},
  },
}).createMachine({
  id: 'router',
  context: ({ input }) => ({ ...input, claimed: [], pending: [], batch: [], delivered: 0, failed: 0 }),
  initial: 'listening',
  states: {
    listening: {
      invoke: {
        id: 'completions',
        src: 'completions',
        input: ({ context }) => ({ publication: context.publication }),
        onError: {
          target: 'closed',
          actions: { type: 'reportSourceFailure', params: ({ event }) => ({ error: event.error }) },
        },
      },
      on: {
        COMPLETED: {
          guard: { type: 'unclaimed', params: ({ event }) => ({ jobId: event.job.id }) },
          actions: { type: 'claim', params: ({ event }) => ({ job: event.job }) },
        },
        CLOSE: 'closed',
      },
      initial: 'quiet',
      states: {
        quiet: { always: { guard: 'hasPending', target: 'collecting' } },
        collecting: { after: { quietWindow: 'delivering' } },
        delivering: {
          entry: 'takeBatch',
          invoke: {
            id: 'deliver',
            src: 'deliver',
            input: ({ context }) => ({ publication: context.publication, jobs: context.batch }),
            onDone: { target: 'quiet', actions: 'countDelivered' },
            onError: {
              target: 'quiet',
              actions: [
                emit(({ context, event }) => ({
                  type: 'delivery.failed' as const,
                  publication: context.publication,
                  jobIds: context.batch.map((j) => j.id),
                  error: event.error,
                })),
                {
                  type: 'reportDeliveryFailure',
                  params: ({ context, event }) => ({
                    jobIds: context.batch.map((j) => j.id),
                    error: event.error,
                  }),
                },
                'countFailed',
              ],
            },
          },
        },
      },
    },
    closed: { type: 'final' },
  },
});
