import { type ActorRefFrom, type SnapshotFrom, sendTo, setup, spawnChild } from 'xstate';
import type { JobMachineInput } from './job.js';
import type { JobEndedEvent, jobOwnerMachine } from './job-owner.js';
import { type JobShardEvent, jobShardMachine, ownerChildOf, ownerOf } from './job-shard.js';

/** How many shards hold the owners' actors (see machines/job-shard.ts). */
export const JOB_SHARDS = 32;

/** The registry's facts: the per-owner cap its shards give each owner's actor. */
export interface JobRegistryContext {
  readonly limit: number;
}

export type JobRegistryEvent =
  /** Take a slot for a start about to call `run()` (J4: the owner's actor refuses it when full). */
  | { readonly type: 'RESERVE'; readonly ownerKey: string }
  /** Give a reserved slot back: `run()` failed, nothing was registered. */
  | { readonly type: 'RELEASE'; readonly ownerKey: string }
  /** Turn a reservation into a live job actor, a child of its owner's actor. */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** The owner ended and its jobs settled: end its actor (which refuses while it holds a slot). */
  | { readonly type: 'FORGET'; readonly ownerKey: string }
  /** Stop accepting starts (the service is being disposed). */
  | { readonly type: 'CLOSE' }
  /** Passed up by a shard when one of its owners' jobs reached a final state. */
  | JobEndedEvent;

/**
 * The child id of the shard that holds `ownerKey`'s actor (FNV-1a of the key, mod {@link JOB_SHARDS}).
 *
 * @example
 * ```ts
 * root.getSnapshot().children[shardActorId('o1')]; // the shard with o1's actor
 * ```
 */
export function shardActorId(ownerKey: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < ownerKey.length; i++) hash = Math.imul(hash ^ ownerKey.charCodeAt(i), 0x01000193);
  return `shard:${(hash >>> 0) % JOB_SHARDS}`;
}

/**
 * The actor of `ownerKey` (a child of its shard), or undefined before its first start and
 * after it was forgotten.
 *
 * @example
 * ```ts
 * ownerActorOf(root.getSnapshot(), 'o1')?.getSnapshot().context.running; // its jobs, by slot
 * ```
 */
export function ownerActorOf(
  snapshot: SnapshotFrom<typeof jobRegistryMachine>,
  ownerKey: string,
): ActorRefFrom<typeof jobOwnerMachine> | undefined {
  const shard = snapshot.children[shardActorId(ownerKey)] as ActorRefFrom<typeof jobShardMachine> | undefined;
  return (
    shard && (ownerChildOf(shard.getSnapshot(), ownerKey) as ActorRefFrom<typeof jobOwnerMachine> | undefined)
  );
}

/**
 * Whether a RESERVE for `ownerKey` would take a slot (J4): the registry accepts starts and the
 * owner's actor, if it has one yet, is under the cap (a new owner's actor starts with none).
 * The service's preflight, so its `JOB_LIMIT` is exactly the machines' guards.
 *
 * @example
 * ```ts
 * if (!canReserve(root.getSnapshot(), 'o1')) throw new TetherError('JOB_LIMIT', '…');
 * root.send({ type: 'RESERVE', ownerKey: 'o1' });
 * ```
 */
export function canReserve(snapshot: SnapshotFrom<typeof jobRegistryMachine>, ownerKey: string): boolean {
  const event = { type: 'RESERVE', ownerKey } as const;
  if (!snapshot.can(event)) return false;
  const owner = ownerActorOf(snapshot, ownerKey);
  return owner === undefined ? snapshot.context.limit > 0 : owner.getSnapshot().can(event);
}

/**
 * The root actor of the job system, all one actor system: {@link JOB_SHARDS} shards
 * (machines/job-shard.ts), each the parent of some owners' actors (machines/job-owner.ts:
 * that owner's slots, the per-owner cap of SPEC J4 as its `canStart` guard, its live jobs as
 * children). A start reserves a slot before the producer runs (`RESERVE`, forwarded through
 * the owner's shard to the owner's actor, spawned with the owner's first), then registers the
 * job or releases the slot; the slot is freed when the job's actor reaches a final state, in
 * the step that reports `JOB_ENDED`, passed up here, where `jobEnded` (provided by
 * `src/jobs`: waiters, completions) runs, so nothing can observe a settled job still holding
 * capacity. Once closed, no reservation is taken. This machine's context never changes.
 *
 * @example
 * ```ts
 * const root = createActor(jobRegistryMachine, { input: { limit: 8 }, systemId: 'tether.jobs' }).start();
 * if (!canReserve(root.getSnapshot(), 'o1')) throw new Error('full');
 * root.send({ type: 'RESERVE', ownerKey: 'o1' });
 * ```
 */
export const jobRegistryMachine = setup({
  types: {
    context: {} as JobRegistryContext,
    input: {} as { readonly limit: number },
    events: {} as JobRegistryEvent,
  },
  actors: { shard: jobShardMachine },
  actions: {
    forward: sendTo(
      ({ event }) => shardActorId(ownerOf(event)),
      ({ event }) => event as JobShardEvent,
    ),
    jobEnded: (_, _params: { readonly jobId: string }) => {},
  },
}).createMachine({
  id: 'jobs',
  context: ({ input }) => ({ limit: input.limit }),
  entry: Array.from({ length: JOB_SHARDS }, (_, i) =>
    spawnChild('shard', { id: `shard:${i}`, input: ({ context }) => ({ limit: context.limit }) }),
  ),
  initial: 'accepting',
  states: {
    accepting: {
      on: {
        RESERVE: { actions: 'forward' },
        CLOSE: 'closed',
      },
    },
    closed: {},
  },
  on: {
    RELEASE: { actions: 'forward' },
    REGISTER: { actions: 'forward' },
    FORGET: { actions: 'forward' },
    JOB_ENDED: { actions: { type: 'jobEnded', params: ({ event }) => ({ jobId: event.jobId }) } },
  },
});
