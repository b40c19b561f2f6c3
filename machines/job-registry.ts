import { type ActorRefFrom, assign, type SnapshotFrom, sendTo, setup, spawnChild, stopChild } from 'xstate';
import type { JobMachineInput } from './job.js';
import { type JobEndedEvent, type JobOwnerEvent, jobOwnerMachine } from './job-owner.js';

/**
 * The registry's facts: the per-owner cap it gives each owner's actor, and which owners have
 * one (an owner's actor lives from its first start until the owner is forgotten). The slots
 * themselves are counted by each owner's actor (machines/job-owner.ts).
 */
export interface JobRegistryContext {
  readonly limit: number;
  /**
   * The owners that have an actor (a child of this machine), in order of their first start. An
   * array: a copy is one memcpy, where a spread of a 1,000-key object costs ~0.3 ms (V8 keeps
   * such objects in dictionary mode and rebuilds them key by key).
   */
  readonly owners: readonly string[];
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
  return `${OWNER_ACTOR}${ownerKey}`;
}

const OWNER_ACTOR = 'owner:';

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
  /** Sent by an owner's actor when one of its jobs reached a final state. */
  | JobEndedEvent
  /** Sent by an owner's actor that reached its final state (it was forgotten). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string };

// The owner an event is about.
function ownerOf(event: JobRegistryEvent): string {
  if (event.type === 'REGISTER') return event.job.ownerKey;
  if ('ownerKey' in event) return event.ownerKey;
  throw new Error(`machines/job-registry: ${event.type} names no owner`);
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
  const owner = snapshot.children[ownerActorId(ownerKey)] as ActorRefFrom<typeof jobOwnerMachine> | undefined;
  return owner === undefined ? snapshot.context.limit > 0 : owner.getSnapshot().can(event);
}

/**
 * The root actor of the job system: every owner that started a job is a child actor of this
 * machine (machines/job-owner.ts: its slots, the per-owner cap of SPEC J4 as its `canStart`
 * guard, its live jobs as children), all one actor system. A start reserves a slot before the
 * producer runs (`RESERVE`, forwarded to the owner's actor, spawned with the owner's first),
 * then registers the job or releases the slot; the slot is freed when the job's actor reaches
 * a final state, in the step that reports `JOB_ENDED` here, where `jobEnded` (provided by
 * `src/jobs`: waiters, completions) runs, so nothing can observe a settled job still holding
 * capacity. This machine's context changes only when an owner comes or goes, never per job.
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
  actors: { owner: jobOwnerMachine },
  guards: {
    hasOwnerActor: ({ context, event }) => context.owners.includes(ownerOf(event)),
  },
  actions: {
    addOwner: assign(({ context, event }) => ({ owners: [...context.owners, ownerOf(event)] })),
    spawnOwner: spawnChild('owner', {
      id: ({ event }) => ownerActorId(ownerOf(event)),
      input: ({ context, event }) => ({ ownerKey: ownerOf(event), limit: context.limit }),
    }),
    forward: sendTo(
      ({ event }) => ownerActorId(ownerOf(event)),
      ({ event }) => event as JobOwnerEvent,
    ),
    // An owner's actor reached its final state: stop and forget it, in one step.
    stopOwner: stopChild(({ event }) => (event as { readonly actorId: string }).actorId),
    removeOwner: assign(({ context, event }) => {
      const ownerKey = (event as { readonly actorId: string }).actorId.slice(OWNER_ACTOR.length);
      return { owners: context.owners.filter((key) => key !== ownerKey) };
    }),
    jobEnded: (_, _params: { readonly jobId: string }) => {},
  },
}).createMachine({
  id: 'jobs',
  context: ({ input }) => ({ limit: input.limit, owners: [] }),
  initial: 'accepting',
  states: {
    accepting: {
      on: {
        RESERVE: [
          { guard: 'hasOwnerActor', actions: 'forward' },
          { actions: ['addOwner', 'spawnOwner', 'forward'] },
        ],
        CLOSE: 'closed',
      },
    },
    closed: {},
  },
  on: {
    RELEASE: { guard: 'hasOwnerActor', actions: 'forward' },
    REGISTER: { guard: 'hasOwnerActor', actions: 'forward' },
    FORGET: { guard: 'hasOwnerActor', actions: 'forward' },
    JOB_ENDED: { actions: { type: 'jobEnded', params: ({ event }) => ({ jobId: event.jobId }) } },
    'xstate.done.actor.*': { actions: ['stopOwner', 'removeOwner'] },
  },
});
