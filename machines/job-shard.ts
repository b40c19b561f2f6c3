import {
  type AnyActorRef,
  assign,
  type SnapshotFrom,
  sendParent,
  sendTo,
  setup,
  spawnChild,
  stopChild,
} from 'xstate';
import { type ChildSlots, childOfKey, slotId, slotOfChild, withKey, withoutSlot } from './child-slots.js';
import type { JobMachineInput } from './job.js';
import { type JobEndedEvent, type JobOwnerEvent, jobOwnerMachine, registeredJob } from './job-owner.js';

/** A shard's facts: the per-owner cap it gives each owner's actor, and which owners have one. */
export interface JobShardContext {
  readonly limit: number;
  /**
   * The owner of each child slot (machines/child-slots.ts: an owner's actor's id is its slot's,
   * `owner#<slot>`). An array: a copy is one memcpy, where a spread of a 1,000-key object costs
   * ~0.3 ms (V8 keeps such objects in dictionary mode and rebuilds them key by key).
   */
  readonly owners: ChildSlots;
}

export type JobShardEvent =
  /** Take a slot for a start (J4: the owner's actor refuses it when full); spawns it first. */
  | { readonly type: 'RESERVE'; readonly ownerKey: string }
  /** Give a reserved slot back: `run()` failed, nothing was registered. */
  | { readonly type: 'RELEASE'; readonly ownerKey: string }
  /** Turn a reservation into a live job actor, a child of its owner's actor. */
  | { readonly type: 'REGISTER'; readonly job: JobMachineInput }
  /** The owner ended and its jobs settled: end its actor (which refuses while it holds a slot). */
  | { readonly type: 'FORGET'; readonly ownerKey: string }
  /** Sent by an owner's actor when one of its jobs reached a final state; passed up. */
  | JobEndedEvent
  /** Sent by an owner's actor that reached its final state (it was forgotten). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string };

const OWNER_SLOT = 'owner#';

/**
 * The actor of owner `ownerKey` among a shard's children, or undefined when it has none.
 *
 * @example
 * ```ts
 * ownerChildOf(shard.getSnapshot(), 'o1')?.getSnapshot().context.running; // its jobs, by slot
 * ```
 */
export function ownerChildOf(
  shard: SnapshotFrom<typeof jobShardMachine>,
  ownerKey: string,
): AnyActorRef | undefined {
  return childOfKey(shard.children, shard.context.owners, OWNER_SLOT, ownerKey);
}

/**
 * The child id of owner `ownerKey`'s actor in a shard whose context has these `owners` (its
 * slot's, `owner#<slot>`), once `addOwner` gave it a slot.
 *
 * @example
 * ```ts
 * shard.getSnapshot().children[ownerChildId(shard.getSnapshot().context.owners, 'o1')];
 * ```
 */
export function ownerChildId(owners: ChildSlots, ownerKey: string): string {
  return slotId(OWNER_SLOT, owners.indexOf(ownerKey));
}

/**
 * The owner a job-system event is about (`RESERVE`, `RELEASE`, `FORGET`, `JOB_ENDED` name it,
 * `REGISTER` through its job), or undefined for one about no owner (`CLOSE`, an actor's end).
 *
 * @example
 * ```ts
 * ownerKeyOf({ type: 'RESERVE', ownerKey: 'o1' }); // 'o1'
 * ```
 */
export function ownerKeyOf(event: { readonly type: string }): string | undefined {
  if (event.type === 'REGISTER') return registeredJob(event).ownerKey;
  return 'ownerKey' in event ? String(event.ownerKey) : undefined;
}

/** {@link ownerKeyOf} for an event that must name an owner (the machines' mappers). */
export function ownerOf(event: { readonly type: string }): string {
  const ownerKey = ownerKeyOf(event);
  if (ownerKey === undefined) throw new Error(`machines: ${event.type} names no owner`);
  return ownerKey;
}

/**
 * Some owners' actors (machines/job-owner.ts), children of one shard of the job registry
 * (machines/job-registry.ts): an owner's actor is spawned with its first RESERVE and ends when
 * it is forgotten idle; every event about an owner is forwarded to its actor, and its jobs'
 * ends are passed up to the registry. Shards exist because XState copies an actor's whole
 * `children` map at every spawn and stop: one parent of 1,000 owners made each owner's first
 * start cost ~0.4 ms and a dispose stopping them all O(owners²) (1.3 s at 1,000, P8); a shard
 * holds 1/32 of them.
 *
 * @example
 * ```ts
 * // spawned by the registry, which forwards an owner's events to its shard
 * shard.send({ type: 'RESERVE', ownerKey: 'o1' }); // spawns o1's actor, which takes the slot
 * ```
 */
export const jobShardMachine = setup({
  types: {
    context: {} as JobShardContext,
    input: {} as { readonly limit: number },
    events: {} as JobShardEvent,
  },
  actors: { owner: jobOwnerMachine },
  guards: {
    hasOwnerActor: ({ context, event }) => context.owners.includes(ownerOf(event)),
  },
  actions: {
    addOwner: assign(({ context, event }) => ({ owners: withKey(context.owners, ownerOf(event)) })),
    spawnOwner: spawnChild('owner', {
      id: ({ context, event }) => ownerChildId(context.owners, ownerOf(event)),
      input: ({ context, event }) => ({ ownerKey: ownerOf(event), limit: context.limit }),
    }),
    forward: sendTo(
      ({ context, event }) => ownerChildId(context.owners, ownerOf(event)),
      ({ event }) => event as JobOwnerEvent,
    ),
    passUp: sendParent((_, params: JobEndedEvent) => params),
    // An owner's actor reached its final state: stop and forget it, in one step.
    stopOwner: stopChild(({ event }) => (event as { readonly actorId: string }).actorId),
    removeOwner: assign(({ context, event }) => ({
      owners: withoutSlot(
        context.owners,
        slotOfChild(OWNER_SLOT, (event as { readonly actorId: string }).actorId),
      ),
    })),
  },
}).createMachine({
  id: 'jobShard',
  context: ({ input }) => ({ limit: input.limit, owners: [] }),
  on: {
    RESERVE: [
      { guard: 'hasOwnerActor', actions: 'forward' },
      { actions: ['addOwner', 'spawnOwner', 'forward'] },
    ],
    RELEASE: { guard: 'hasOwnerActor', actions: 'forward' },
    REGISTER: { guard: 'hasOwnerActor', actions: 'forward' },
    FORGET: { guard: 'hasOwnerActor', actions: 'forward' },
    JOB_ENDED: { actions: { type: 'passUp', params: ({ event }) => event as JobEndedEvent } },
    'xstate.done.actor.*': { actions: ['stopOwner', 'removeOwner'] },
  },
});
