import { assign, setup, spawnChild, stopChild } from 'xstate';
import { type JobMachineInput, jobMachine } from './job.js';

/**
 * The registry's facts: the per-owner cap, how many slots each owner holds (reserved for a
 * start in progress, or held by a live job), and each owner's live jobs. Kept per owner so a
 * step copies one owner's entry, never every live job: with hundreds of jobs a flat map made
 * each start and end O(jobs), a burst O(jobs²) (P5).
 */
export interface JobRegistryContext {
  readonly limit: number;
  readonly slots: Readonly<Record<string, number>>;
  /** Owner key → the ids of its live jobs. */
  readonly live: Readonly<Record<string, readonly string[]>>;
}

/**
 * The owner of a live job, or undefined (O(owners), each holding at most `limit` jobs).
 *
 * @example
 * ```ts
 * ownerOfJob(root.getSnapshot().context, 'job_a'); // 'o1'
 * ```
 */
export function ownerOfJob(context: JobRegistryContext, jobId: string): string | undefined {
  for (const [ownerKey, jobs] of Object.entries(context.live)) if (jobs.includes(jobId)) return ownerKey;
  return undefined;
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
    // A live job ended: its owner's slot is freed and the job forgotten, in one step.
    forgetJob: assign(({ context }, params: { readonly jobId: string }) => {
      const ownerKey = ownerOfJob(context, params.jobId);
      if (ownerKey === undefined) return {};
      const { [ownerKey]: held = 0, ...otherSlots } = context.slots;
      const { [ownerKey]: jobs = [], ...otherLive } = context.live;
      const rest = jobs.filter((id) => id !== params.jobId);
      return {
        slots: held > 1 ? { ...otherSlots, [ownerKey]: held - 1 } : otherSlots,
        live: rest.length > 0 ? { ...otherLive, [ownerKey]: rest } : otherLive,
      };
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
          live: ({ context, event }) => {
            const { jobId, ownerKey } = event.job;
            return { ...context.live, [ownerKey]: [...(context.live[ownerKey] ?? []), jobId] };
          },
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
        { type: 'forgetJob', params: ({ event }) => ({ jobId: event.actorId }) },
        stopChild(({ event }) => event.actorId),
        { type: 'jobEnded', params: ({ event }) => ({ jobId: event.actorId }) },
      ],
    },
    'xstate.error.actor.*': {
      actions: [
        { type: 'forgetJob', params: ({ event }) => ({ jobId: event.actorId }) },
        stopChild(({ event }) => event.actorId),
        { type: 'jobEnded', params: ({ event }) => ({ jobId: event.actorId }) },
      ],
    },
  },
});
