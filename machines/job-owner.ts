import { sendParent, setup, spawnChild, stopChild } from 'xstate';
import { type JobMachineInput, jobMachine } from './job.js';

/** What the job registry tells an owner's actor, and what its job actors tell it. */
export type JobOwnerEvent =
  /** Spawn the job actor (child id = job id); the registry has counted its slot. */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** Sent by a job actor that reached a final state (XState's child-done event). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string }
  /** Sent by a job actor an error escaped from (defensive: the job machine handles its errors). */
  | { readonly type: `xstate.error.actor.${string}`; readonly actorId: string };

/** What an owner's actor sends the registry when one of its jobs ended. */
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
 * spawnChild('job', { id: ({ event }) => registeredJob(event).jobId, input: ({ event }) => registeredJob(event) });
 * ```
 */
export function registeredJob(event: { readonly type: string }): JobMachineInput {
  if (event.type !== 'REGISTER' || !('job' in event))
    throw new Error(`machines: cannot register a job on ${event.type}`);
  return event.job as JobMachineInput;
}

/**
 * One owner's live jobs (P5): the job registry's child for an owner, whose children are that
 * owner's job actors. XState copies an actor's whole `children` map at every spawn and stop,
 * so one registry holding every job made each start and end O(jobs) and 512 ending together
 * O(jobs²); here each copy holds one owner's jobs, at most its `limit`. The registry counts
 * the slots (the J4 guard); this machine only keeps the actors and reports each end once.
 *
 * @example
 * ```ts
 * // spawned by machines/job-registry.ts on an owner's first REGISTER, stopped after its last job ends
 * owner.send({ type: 'REGISTER', job: { jobId: 'job_a', ownerKey: 'o1', kind: 'shell', label: 'ls', startedAt: 0 } });
 * ```
 */
export const jobOwnerMachine = setup({
  types: {
    context: {} as { readonly ownerKey: string },
    input: {} as { readonly ownerKey: string },
    events: {} as JobOwnerEvent,
  },
  actors: { job: jobMachine },
  actions: {
    // A job actor ended: forget the child and tell the registry, in one step.
    forgetJob: stopChild(({ event }) => (event as { readonly actorId: string }).actorId),
    reportEnd: sendParent(
      ({ context, event }): JobEndedEvent => ({
        type: 'JOB_ENDED',
        ownerKey: context.ownerKey,
        jobId: (event as { readonly actorId: string }).actorId,
      }),
    ),
  },
}).createMachine({
  id: 'jobOwner',
  context: ({ input }) => ({ ownerKey: input.ownerKey }),
  on: {
    REGISTER: {
      actions: spawnChild('job', {
        id: ({ event }) => registeredJob(event).jobId,
        input: ({ event }) => registeredJob(event),
      }),
    },
    'xstate.done.actor.*': { actions: ['forgetJob', 'reportEnd'] },
    'xstate.error.actor.*': { actions: ['forgetJob', 'reportEnd'] },
  },
});
