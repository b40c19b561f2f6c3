import { assign, sendTo, setup, spawnChild, stopChild } from 'xstate';
import type { JobMachineInput } from './job.js';
import { type JobEndedEvent, jobOwnerMachine, registeredJob } from './job-owner.js';

/**
 * The registry's facts: the per-owner cap, how many slots each owner holds (reserved for a
 * start in progress, or held by a live job), and how many live jobs each owner has. An owner
 * with live jobs has an owner actor (machines/job-owner.ts) whose children are those jobs.
 */
export interface JobRegistryContext {
  readonly limit: number;
  readonly slots: Readonly<Record<string, number>>;
  /** Owner key → how many of its jobs are live (never 0: an owner without jobs is dropped). */
  readonly live: Readonly<Record<string, number>>;
}

/**
 * The child id of an owner's actor.
 *
 * @example
 * ```ts
 * root.getSnapshot().children[ownerActorId('o1')]?.getSnapshot().children.job_a; // the job actor
 * ```
 */
export function ownerActorId(ownerKey: string): string {
  return `owner:${ownerKey}`;
}

export type JobRegistryEvent =
  /** Take a slot for a start about to call `run()` (J4: refused when the owner is full). */
  | { readonly type: 'RESERVE'; readonly ownerKey: string }
  /** Give a reserved slot back: `run()` failed, nothing was registered. */
  | { readonly type: 'RELEASE'; readonly ownerKey: string }
  /** Turn a reservation into a live job actor, a child of its owner's actor. */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** Stop accepting starts (the service is being disposed). */
  | { readonly type: 'CLOSE' }
  /** Sent by an owner's actor when one of its jobs reached a final state. */
  | JobEndedEvent;

// The owner an event is about (CLOSE names none).
function ownerOf(event: JobRegistryEvent): string {
  if (event.type === 'REGISTER') return event.job.ownerKey;
  if (event.type === 'JOB_ENDED' || event.type === 'RESERVE' || event.type === 'RELEASE')
    return event.ownerKey;
  throw new Error(`machines/job-registry: ${event.type} names no owner`);
}

/**
 * The root actor of the job system: every owner with live jobs is a child actor of this machine
 * and every job a child of its owner's (one actor system), and the per-owner concurrency cap
 * (SPEC J4) is its `canStart` guard, so the rule is visible in the machine. A slot is taken by
 * `RESERVE` before the producer runs and is freed when the job's actor reaches a final state
 * (`JOB_ENDED` from the owner's actor) or by `RELEASE` when `run()` failed. `jobEnded` is
 * provided by `src/jobs` (waiters, completions) and runs in the same step that frees the slot,
 * so nothing can observe a settled job still holding capacity. Jobs are kept per owner because
 * XState copies an actor's `children` at every spawn and stop (see machines/job-owner.ts).
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
  actors: { owner: jobOwnerMachine },
  guards: {
    canStart: ({ context }, params: { readonly ownerKey: string }) =>
      (context.slots[params.ownerKey] ?? 0) < context.limit,
    hasOwnerActor: ({ context, event }) => (context.live[ownerOf(event)] ?? 0) > 0,
    isOwnersLastJob: ({ context, event }) => context.live[ownerOf(event)] === 1,
  },
  actions: {
    takeSlot: assign(({ context }, params: { readonly ownerKey: string }) => ({
      slots: { ...context.slots, [params.ownerKey]: (context.slots[params.ownerKey] ?? 0) + 1 },
    })),
    freeSlot: assign(({ context }, params: { readonly ownerKey: string }) => ({
      slots: less(context.slots, params.ownerKey),
    })),
    countJob: assign(({ context, event }) => {
      const ownerKey = ownerOf(event);
      return { live: { ...context.live, [ownerKey]: (context.live[ownerKey] ?? 0) + 1 } };
    }),
    // A live job ended: its owner's slot is freed and the job uncounted, in one step.
    uncountJob: assign(({ context, event }) => {
      const ownerKey = ownerOf(event);
      return { slots: less(context.slots, ownerKey), live: less(context.live, ownerKey) };
    }),
    spawnOwner: spawnChild('owner', {
      id: ({ event }) => ownerActorId(ownerOf(event)),
      input: ({ event }) => ({ ownerKey: ownerOf(event) }),
    }),
    forwardJob: sendTo(
      ({ event }) => ownerActorId(ownerOf(event)),
      ({ event }) => ({ type: 'REGISTER' as const, job: registeredJob(event) }),
    ),
    stopOwner: stopChild(({ event }) => ownerActorId(ownerOf(event))),
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
    REGISTER: [
      { guard: 'hasOwnerActor', actions: ['countJob', 'forwardJob'] },
      { actions: ['countJob', 'spawnOwner', 'forwardJob'] },
    ],
    // A job of an owner's actor ended: free its slot (and the actor with the owner's last job), then report.
    JOB_ENDED: [
      {
        guard: 'isOwnersLastJob',
        actions: [
          'uncountJob',
          'stopOwner',
          { type: 'jobEnded', params: ({ event }) => ({ jobId: event.jobId }) },
        ],
      },
      {
        guard: 'hasOwnerActor',
        actions: ['uncountJob', { type: 'jobEnded', params: ({ event }) => ({ jobId: event.jobId }) }],
      },
    ],
  },
});

// `counts` with `key` one lower; a key that reaches 0 is dropped. A copy and a delete: V8's
// rest destructuring (`{ [key]: _, ...others }`) is several times slower on a map of 64 owners.
function less(counts: Readonly<Record<string, number>>, key: string): Readonly<Record<string, number>> {
  const next = { ...counts };
  const held = next[key] ?? 0;
  if (held > 1) next[key] = held - 1;
  else delete next[key];
  return next;
}
