import {
  type Actor,
  type ActorRefFrom,
  assign,
  createActor,
  fromPromise,
  type InspectionEvent,
} from 'xstate';
import { type JobExit, jobMachine } from '../../machines/job.js';
import { jobChildOf, jobOwnerMachine } from '../../machines/job-owner.js';
import { jobRegistryMachine, ownerActorOf } from '../../machines/job-registry.js';
import { jobShardMachine } from '../../machines/job-shard.js';

/** The effects the job machines name, implemented by the service. */
export interface JobSystemEffects {
  /** The producer's `done` for a registered job (the invoked `producer` actor). */
  done(jobId: string): Promise<JobExit>;
  /** Calls the producer's `cancel` hook (entry of `running.cancelRequested`, J7). */
  cancel(jobId: string): void;
  /** A job actor ended and its slot is free (runs inside the registry's transition). */
  ended(jobId: string): void;
  /** Wall clock for `endedAt`. */
  now(): number;
}

/** The running root actor: the registry, with each owner's actor (and its jobs) as children. */
export type JobSystem = Actor<typeof jobRegistryMachine>;

/** The actor system's id, as it shows in the inspector. */
export const JOB_SYSTEM_ID = 'tether.jobs';

/**
 * Starts the job actor system: the registry machine as root (system id `tether.jobs`) with
 * the job machine's effects provided. Pure machines, effects from here (CONVENTIONS).
 *
 * @example
 * ```ts
 * const system = startJobSystem(8, effects);
 * canReserve(system.getSnapshot(), 'o1'); // J4: the owner's actor's guard
 * ```
 */
export function startJobSystem(
  limit: number,
  effects: JobSystemEffects,
  inspect?: (event: InspectionEvent) => void,
): JobSystem {
  const job = jobMachine.provide({
    actors: { producer: fromPromise(({ input }) => effects.done(input.jobId)) },
    actions: {
      requestCancel: ({ context }) => effects.cancel(context.jobId),
      stampEnd: assign({ endedAt: () => effects.now() }),
    },
  });
  const registry = jobRegistryMachine.provide({
    actors: {
      shard: jobShardMachine.provide({ actors: { owner: jobOwnerMachine.provide({ actors: { job } }) } }),
    },
    actions: { jobEnded: (_, params) => effects.ended(params.jobId) },
  });
  const options = inspect
    ? { input: { limit }, systemId: JOB_SYSTEM_ID, inspect }
    : { input: { limit }, systemId: JOB_SYSTEM_ID };
  return createActor(registry, options).start();
}

/**
 * The actor of a registered job (a child of its owner's actor), or undefined once it ended.
 *
 * @example
 * ```ts
 * system.send({ type: 'REGISTER', job });
 * const actor = jobActorOf(system, job.ownerKey, job.jobId)!;
 * ```
 */
export function jobActorOf(
  system: JobSystem,
  ownerKey: string,
  jobId: string,
): ActorRefFrom<typeof jobMachine> | undefined {
  const owner = ownerActorOf(system.getSnapshot(), ownerKey);
  return owner && (jobChildOf(owner.getSnapshot(), jobId) as ActorRefFrom<typeof jobMachine> | undefined);
}
