import { assign, setup, spawnChild, stopChild } from 'xstate';
import { type JobMachineInput, jobMachine } from './job.js';

/**
 * The registry's facts: the per-owner cap, how many slots each owner holds (reserved for a
 * start in progress, or held by a live job), and which owner each live job belongs to.
 */
export interface JobRegistryContext {
  readonly limit: number;
  readonly slots: Readonly<Record<string, number>>;
  readonly live: Readonly<Record<string, string>>;
}

export type JobRegistryEvent =
  /** Take a slot for a start about to call `run()` (J4: refused when the owner is full). */
  | { readonly type: 'RESERVE'; readonly ownerKey: string }
  /** Give a reserved slot back: `run()` failed, nothing was registered. */
  | { readonly type: 'RELEASE'; readonly ownerKey: string }
  /** Turn a reservation into a live job actor (child id = job id). */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** Stop accepting starts (the service is being disposed). */
  | { readonly type: 'CLOSE' }
  /** Sent by a job actor that reached a final state (XState's child-done event). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string }
  /** Sent by a job actor an error escaped from (defensive: the job machine handles its errors). */
  | { readonly type: `xstate.error.actor.${string}`; readonly actorId: string };

// The job a REGISTER event carries (spawnChild's id mapper sees the machine's whole event union).
function registeredJob(event: JobRegistryEvent): JobMachineInput {
  if (event.type !== 'REGISTER')
    throw new Error(`machines/job-registry: cannot spawn a job on ${event.type}`);
  return event.job;
}

/**
 * The root actor of the job system: every job is a child actor of this machine (one actor
 * system), and the per-owner concurrency cap (SPEC J4) is its `canStart` guard, so the rule
 * is visible in the machine. A slot is taken by `RESERVE` before the producer runs and is
 * freed when the job's actor reaches a final state (or by `RELEASE` when `run()` failed).
 * `jobEnded` is provided by `src/jobs` (waiters, completions) and runs in the same step that
 * frees the slot, so nothing can observe a settled job still holding capacity.
 *
 * @example
 * ```ts
 * const root = createActor(jobRegistryMachine, { input: { limit: 8 }, systemId: 'tether.jobs' }).start();
 * if (!root.getSnapshot().can({ type: 'RESERVE', ownerKey: 'o1' })) throw new Error('full');
 * root.send({ type: 'RESERVE', ownerKey: 'o1' });
 * ```
 */
export const jobRegistryMachine = setup({
  types: {
    context: {} as JobRegistryContext,
    input: {} as { readonly limit: number },
    events: {} as JobRegistryEvent,
  },
  actors: { job: jobMachine },
  guards: {
    canStart: ({ context }, params: { readonly ownerKey: string }) =>
      (context.slots[params.ownerKey] ?? 0) < context.limit,
  },
  actions: {
    takeSlot: assign(({ context }, params: { readonly ownerKey: string }) => ({
      slots: { ...context.slots, [params.ownerKey]: (context.slots[params.ownerKey] ?? 0) + 1 },
    })),
    freeSlot: assign(({ context }, params: { readonly ownerKey: string | undefined }) => {
      const { ownerKey } = params;
      if (ownerKey === undefined) return {};
      const { [ownerKey]: held = 0, ...others } = context.slots;
      return { slots: held > 1 ? { ...others, [ownerKey]: held - 1 } : others };
    }),
    forgetLive: assign(({ context }, params: { readonly jobId: string }) => {
      const { [params.jobId]: _gone, ...live } = context.live;
      return { live };
    }),
    jobEnded: (_, _params: { readonly jobId: string }) => {},
  },
}).createMachine({
  id: 'jobs',
  context: ({ input }) => ({ limit: input.limit, slots: {}, live: {} }),
  initial: 'accepting',
  states: {
    accepting: {
      on: {
        RESERVE: {
          guard: { type: 'canStart', params: ({ event }) => ({ ownerKey: event.ownerKey }) },
          actions: { type: 'takeSlot', params: ({ event }) => ({ ownerKey: event.ownerKey }) },
        },
        CLOSE: 'closed',
      },
    },
    closed: {},
  },
  on: {
    RELEASE: { actions: { type: 'freeSlot', params: ({ event }) => ({ ownerKey: event.ownerKey }) } },
    REGISTER: {
      actions: [
        assign({
          live: ({ context, event }) => ({ ...context.live, [event.job.jobId]: event.job.ownerKey }),
        }),
        spawnChild('job', {
          id: ({ event }) => registeredJob(event).jobId,
          input: ({ event }) => registeredJob(event),
        }),
      ],
    },
    // A job actor ended (final state, or an error escaping it): free its slot, then report.
    'xstate.done.actor.*': {
      actions: [
        { type: 'freeSlot', params: ({ context, event }) => ({ ownerKey: context.live[event.actorId] }) },
        { type: 'forgetLive', params: ({ event }) => ({ jobId: event.actorId }) },
        stopChild(({ event }) => event.actorId),
        { type: 'jobEnded', params: ({ event }) => ({ jobId: event.actorId }) },
      ],
    },
    'xstate.error.actor.*': {
      actions: [
        { type: 'freeSlot', params: ({ context, event }) => ({ ownerKey: context.live[event.actorId] }) },
        { type: 'forgetLive', params: ({ event }) => ({ jobId: event.actorId }) },
        stopChild(({ event }) => event.actorId),
        { type: 'jobEnded', params: ({ event }) => ({ jobId: event.actorId }) },
      ],
    },
  },
});
