import {
  type AnyActorRef,
  assign,
  type SnapshotFrom,
  sendParent,
  setup,
  spawnChild,
  stopChild,
} from 'xstate';
import { type ChildSlots, childOfKey, slotId, slotOfChild, withKey, withoutSlot } from './child-slots.js';
import { type JobMachineInput, jobMachine } from './job.js';

/** What an owner's actor counts: slots (reserved or held by a live job), and its live jobs. */
export interface JobOwnerContext {
  readonly ownerKey: string;
  /** The per-owner cap (SPEC J4). */
  readonly limit: number;
  /** Reserved for a start in progress, or held by a live job. */
  readonly slots: number;
  /**
   * The job of each child slot (machines/child-slots.ts: a job actor's id is its slot's); its
   * live jobs ({@link liveJobs}) are never more than `slots`.
   */
  readonly running: ChildSlots;
}

/**
 * How many live job actors (children) an owner's actor has: its filled child slots.
 *
 * @example
 * ```ts
 * liveJobs(owner.getSnapshot().context); // 1 while one job runs
 * ```
 */
export function liveJobs(context: JobOwnerContext): number {
  let live = 0;
  for (const jobId of context.running) if (jobId !== null) live++;
  return live;
}

/** What the owner's shard forwards to an owner's actor, and what its job actors tell it. */
export type JobOwnerEvent =
  /** Take a slot for a start about to call `run()` (J4: refused when the owner is full). */
  | { readonly type: 'RESERVE'; readonly ownerKey: string }
  /** Give a reserved slot back: `run()` failed, nothing was registered. */
  | { readonly type: 'RELEASE'; readonly ownerKey: string }
  /** Turn a reserved slot into a live job actor (child id = its slot's, {@link jobSlotId}). */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** The owner ended and holds nothing: reach the final state (refused while it holds a slot). */
  | { readonly type: 'FORGET'; readonly ownerKey: string }
  /** Sent by a job actor that reached a final state (XState's child-done event). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string }
  /** Sent by a job actor an error escaped from (defensive: the job machine handles its errors). */
  | { readonly type: `xstate.error.actor.${string}`; readonly actorId: string };

/** What an owner's actor sends its shard (which passes it up to the registry) when one of its jobs ended. */
export interface JobEndedEvent {
  readonly type: 'JOB_ENDED';
  readonly ownerKey: string;
  readonly jobId: string;
}

/**
 * The job a REGISTER event carries (an action's mappers see its machine's whole event union).
 *
 * @example
 * ```ts
 * spawnChild('job', { input: ({ event }) => registeredJob(event) });
 * ```
 */
export function registeredJob(event: { readonly type: string }): JobMachineInput {
  if (event.type !== 'REGISTER' || !('job' in event))
    throw new Error(`machines: cannot register a job on ${event.type}`);
  return event.job as JobMachineInput;
}

const JOB_SLOT = 'job#';

/**
 * The child id of the job actor in an owner actor's slot `slot` (`job#<slot>`).
 *
 * @example
 * ```ts
 * owner.getSnapshot().children[jobSlotId(owner.getSnapshot().context.running.indexOf('job_a'))];
 * ```
 */
export function jobSlotId(slot: number): string {
  return slotId(JOB_SLOT, slot);
}

/**
 * The actor of job `jobId` among an owner actor's children, or undefined when it is not live.
 *
 * @example
 * ```ts
 * jobChildOf(owner.getSnapshot(), 'job_a')?.getSnapshot().value; // 'running'
 * ```
 */
export function jobChildOf(
  owner: SnapshotFrom<typeof jobOwnerMachine>,
  jobId: string,
): AnyActorRef | undefined {
  return childOfKey(owner.children, owner.context.running, JOB_SLOT, jobId);
}

// The slot a child's done or error event names (`xstate.done.actor.job#2` → 2).
const slotOf = (event: JobOwnerEvent): number =>
  slotOfChild(JOB_SLOT, (event as { readonly actorId: string }).actorId);

// What a job's end reports up: the job of the slot, before the slot is freed.
const reportEnd = {
  type: 'reportEnd',
  params: ({ context, event }: { context: JobOwnerContext; event: JobOwnerEvent }) => ({
    ownerKey: context.ownerKey,
    jobId: context.running[slotOf(event)] as string,
  }),
} as const;

/**
 * One owner's jobs (P5, P8): a child of the owner's shard (machines/job-shard.ts), whose children
 * are that owner's job actors, and whose context counts that owner's slots, so the per-owner cap (SPEC
 * J4) is this machine's `canStart` guard. Each start and end touches this owner's facts only:
 * XState copies an actor's whole `children` map at every spawn and stop, and an `assign` copies
 * what it changes, so one registry holding every owner's counts or jobs made each start and end
 * O(owners) (P8: 1,000 owners, 200 starts a second, 11 % of the main thread's time spent in
 * those copies). The actor lives from its owner's first start until the owner ended and holds
 * nothing (`FORGET`), not one spawn and stop per job.
 *
 * @example
 * ```ts
 * // spawned by its shard (machines/job-shard.ts) on the owner's first RESERVE, which it forwards here
 * owner.send({ type: 'RESERVE', ownerKey: 'o1' });
 * owner.send({ type: 'REGISTER', job: { jobId: 'job_a', ownerKey: 'o1', kind: 'shell', label: 'ls', startedAt: 0 } });
 * ```
 */
export const jobOwnerMachine = setup({
  types: {
    context: {} as JobOwnerContext,
    input: {} as { readonly ownerKey: string; readonly limit: number },
    events: {} as JobOwnerEvent,
  },
  actors: { job: jobMachine },
  guards: {
    canStart: ({ context }) => context.slots < context.limit,
    hasReservation: ({ context }) => context.slots > liveJobs(context),
    holdsNothing: ({ context }) => context.slots === 0,
  },
  actions: {
    takeSlot: assign({ slots: ({ context }) => context.slots + 1 }),
    freeSlot: assign({ slots: ({ context }) => context.slots - 1 }),
    // After `countJob`, which put the job in a slot.
    spawnJob: spawnChild('job', {
      id: ({ context, event }) => jobSlotId(context.running.indexOf(registeredJob(event).jobId)),
      input: ({ event }) => registeredJob(event),
    }),
    countJob: assign(({ context, event }) => ({
      running: withKey(context.running, registeredJob(event).jobId),
    })),
    // A job actor ended: forget the child, tell the registry and free its slot, in one step.
    forgetJob: stopChild(({ event }) => (event as { readonly actorId: string }).actorId),
    uncountJob: assign(({ context, event }) => ({
      slots: context.slots - 1,
      running: withoutSlot(context.running, slotOf(event)),
    })),
    reportEnd: sendParent(
      (_, params: { readonly ownerKey: string; readonly jobId: string }): JobEndedEvent => ({
        type: 'JOB_ENDED',
        ...params,
      }),
    ),
  },
}).createMachine({
  id: 'jobOwner',
  context: ({ input }) => ({ ownerKey: input.ownerKey, limit: input.limit, slots: 0, running: [] }),
  initial: 'active',
  states: {
    active: {
      on: {
        RESERVE: { guard: 'canStart', actions: 'takeSlot' },
        RELEASE: { guard: 'hasReservation', actions: 'freeSlot' },
        REGISTER: { guard: 'hasReservation', actions: ['countJob', 'spawnJob'] },
        'xstate.done.actor.*': { actions: ['forgetJob', reportEnd, 'uncountJob'] },
        'xstate.error.actor.*': { actions: ['forgetJob', reportEnd, 'uncountJob'] },
        FORGET: { guard: 'holdsNothing', target: 'forgotten' },
      },
    },
    forgotten: { type: 'final' },
  },
});
