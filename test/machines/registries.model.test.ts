import { describe, expect, it } from 'vitest';
import { type EventFromLogic, type SnapshotFrom, transition } from 'xstate';
import { agentChildOf, agentRegistryMachine, routerChildOf } from '../../machines/agent-registry.js';
import { jobOwnerMachine, jobSlotId, liveJobs } from '../../machines/job-owner.js';
import { JOB_SHARDS, jobRegistryMachine, shardActorId } from '../../machines/job-registry.js';
import { jobShardMachine, ownerChildId, ownerKeyOf } from '../../machines/job-shard.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { explore, type ModelStep, untaken } from '../support/model-check.js';

type JobsSnapshot = SnapshotFrom<typeof jobRegistryMachine>;
type JobsEvent = EventFromLogic<typeof jobRegistryMachine>;
type ShardSnapshot = SnapshotFrom<typeof jobShardMachine>;
type ShardEvent = EventFromLogic<typeof jobShardMachine>;
type OwnerSnapshot = SnapshotFrom<typeof jobOwnerMachine>;
type OwnerEvent = EventFromLogic<typeof jobOwnerMachine>;
type AgentsSnapshot = SnapshotFrom<typeof agentRegistryMachine>;
type AgentsEvent = EventFromLogic<typeof agentRegistryMachine>;
type Action = { type: string; params?: unknown };

const LIMIT = 2;
const OWNERS = ['o1', 'o2'] as const;

// One owner's actor: every event its registry forwards and its job actors send, in any order
// (it guards its own ledger: a REGISTER or RELEASE without a reservation is refused).
// The live jobs (by their slots' ledger) and the child ids of their actors (their slots').
const jobIds = (s: OwnerSnapshot) => s.context.running.filter((id): id is string => id !== null).sort();
const childIds = (s: OwnerSnapshot) => Object.keys(s.children).sort();
const reservedOf = (s: OwnerSnapshot) => s.context.slots - liveJobs(s.context);
function ownerEvents(s: OwnerSnapshot): OwnerEvent[] {
  const free = ['j1', 'j2', 'j3'].find((id) => !s.context.running.includes(id))!;
  return [
    { type: 'RESERVE', ownerKey: 'o1' },
    { type: 'RELEASE', ownerKey: 'o1' },
    { type: 'REGISTER', job: { jobId: free, ownerKey: 'o1', kind: 'k', label: free, startedAt: 0 } },
    { type: 'FORGET', ownerKey: 'o1' },
    ...childIds(s).flatMap((id) => [
      actorDone<OwnerEvent>(id),
      actorFailed<OwnerEvent>(id, new Error('escaped')),
    ]),
  ];
}
const ownerKey = (s: OwnerSnapshot) =>
  JSON.stringify([s.value, s.status, s.context.slots, s.context.running, childIds(s)]);

function checkOwnerStep({ event, prev, next }: ModelStep<typeof lonelyOwner>, actions: Action[]): void {
  const at = `${ownerKey(prev)} --${event.type}--> ${ownerKey(next)}`;
  const { slots } = next.context;
  const live = liveJobs(next.context);
  expect(slots, at).toBeLessThanOrEqual(LIMIT); // J4
  expect(live, at).toBeLessThanOrEqual(slots);
  expect(live, at).toBe(childIds(next).length); // the count is its children
  // Each live job's actor is the child of its slot, a slot below the cap: the child ids (and the
  // `xstate.done.actor.<id>` event types XState memoizes per type) are bounded by the cap.
  expect(childIds(next), at).toEqual(
    jobIds(next)
      .map((id) => jobSlotId(next.context.running.indexOf(id)))
      .sort(),
  );
  expect(next.context.running.length, at).toBeLessThanOrEqual(LIMIT);
  expect(prev.can({ type: 'RESERVE', ownerKey: 'o1' }), at).toBe(prev.context.slots < LIMIT); // J4: the preflight is the guard
  const types = actions.map((a) => a.type);
  const delta = [slots - prev.context.slots, live - liveJobs(prev.context)];
  if (event.type === 'RESERVE') expect(delta, at).toEqual([prev.context.slots < LIMIT ? 1 : 0, 0]);
  if (event.type === 'RELEASE') expect(delta, at).toEqual([reservedOf(prev) > 0 ? -1 : 0, 0]);
  if (event.type === 'REGISTER') {
    const accepted = reservedOf(prev) > 0; // the reserved slot becomes the job's
    expect(delta, at).toEqual([0, accepted ? 1 : 0]);
    expect(jobIds(next).includes(event.job.jobId), at).toBe(accepted);
  }
  const ends = actions.filter((a) => a.type === 'reportEnd').map((a) => a.params);
  if (event.type.startsWith('xstate.')) {
    // A job's end frees its slot and reports it to the registry once, in the same step.
    const slot = (event as { actorId: string }).actorId;
    const jobId = prev.context.running.find((id, i) => id !== null && jobSlotId(i) === slot);
    expect(delta, at).toEqual([-1, -1]);
    expect(jobIds(next), at).not.toContain(jobId);
    expect(childIds(next), at).not.toContain(slot);
    expect(ends, at).toEqual([{ ownerKey: 'o1', jobId }]);
  } else expect(ends, at).toEqual([]);
  if (event.type === 'FORGET') expect(next.status, at).toBe(prev.context.slots === 0 ? 'done' : 'active');
  else expect(next.status, at).toBe('active');
  expect(types.filter((t) => t === 'xstate.spawnChild').length, at).toBe(
    event.type === 'REGISTER' && reservedOf(prev) > 0 ? 1 : 0,
  );
}

// Stepped alone there is no parent to send to: the report is checked as the action the machine
// takes with its params (test/machines/job-registry.test.ts runs the real one under a registry).
const lonelyOwner = jobOwnerMachine.provide({ actions: { reportEnd: () => {} } });

describe('machines/job-owner, traversed', () => {
  const x = explore(lonelyOwner, {
    input: { ownerKey: 'o1', limit: LIMIT },
    events: ownerEvents,
    serialize: ownerKey,
  });

  it("J4: every step out of every reachable state keeps the cap and the owner's slot ledger in step with its jobs", () => {
    expect(x.states.size).toBeGreaterThan(8);
    for (const step of x.steps) {
      const [, actions] = transition(lonelyOwner, step.prev, step.event);
      checkOwnerStep(step, actions as Action[]);
    }
    // A full owner, a refused reservation and a forgotten owner are reached.
    const reached = [...x.states.values()].map((s) => s.snapshot);
    expect(reached.some((s) => s.context.slots === LIMIT && liveJobs(s.context) === LIMIT)).toBe(true);
    expect(reached.some((s) => s.status === 'done')).toBe(true);
  });

  it('J4: the traversal takes every transition the owner machine defines', () => {
    expect(untaken(lonelyOwner, x.taken)).toEqual([]);
  });
});

// A shard: its registry keeps the protocol (REGISTER, RELEASE and FORGET name an owner that
// reserved); what an owner's actor does with a forwarded event is the traversal above. Stepped
// alone, a job's end passed up is checked as the action with its params.
const lonelyShard = jobShardMachine.provide({ actions: { passUp: () => {} } });
function shardEvents(s: ShardSnapshot): ShardEvent[] {
  const out: ShardEvent[] = [{ type: 'JOB_ENDED', ownerKey: 'o1', jobId: 'j1' }];
  for (const ownerKey of OWNERS) {
    out.push({ type: 'RESERVE', ownerKey }, { type: 'RELEASE', ownerKey }, { type: 'FORGET', ownerKey });
    out.push({ type: 'REGISTER', job: { jobId: 'j1', ownerKey, kind: 'k', label: 'j1', startedAt: 0 } });
    if (s.context.owners.includes(ownerKey))
      out.push(actorDone<ShardEvent>(ownerChildId(s.context.owners, ownerKey)));
  }
  return out;
}
const shardKey = (s: ShardSnapshot) => JSON.stringify([s.context.owners, Object.keys(s.children).sort()]);

function checkShardStep({ event, prev, next }: ModelStep<typeof lonelyShard>, actions: Action[]): void {
  const at = `${shardKey(prev)} --${event.type}--> ${shardKey(next)}`;
  // An owner has an actor exactly while the context names it, as the child of its slot: the
  // child ids (and the event types XState memoizes) are bounded by the owners held at once.
  const named = next.context.owners.filter((key): key is string => key !== null);
  expect(Object.keys(next.children).sort(), at).toEqual(
    named.map((key) => ownerChildId(next.context.owners, key)).sort(),
  );
  expect(next.context.owners.length, at).toBeLessThanOrEqual(OWNERS.length);
  const types = actions.map((a) => a.type);
  const sent = actions.filter((a) => a.type === 'xstate.sendTo').map((a) => a.params);
  const key = event.type === 'JOB_ENDED' ? undefined : ownerKeyOf(event); // an event forwarded to the owner's actor
  if (key !== undefined) {
    const had = prev.context.owners.includes(key);
    const spawns = event.type === 'RESERVE' && !had; // with its first start only
    expect(types.filter((t) => t === 'xstate.spawnChild').length, at).toBe(spawns ? 1 : 0);
    expect(sent, at).toMatchObject(
      had || spawns ? [{ targetId: ownerChildId(next.context.owners, key), event }] : [],
    );
    if (!spawns) expect(next.context, at).toBe(prev.context); // the context changes per owner, never per job
  } else expect(sent, at).toEqual([]);
  expect(
    actions.filter((a) => a.type === 'passUp').map((a) => a.params),
    at,
  ).toEqual(event.type === 'JOB_ENDED' ? [event] : []); // passed up once, as it came
  if (event.type.startsWith('xstate.done.actor.')) {
    const id = (event as unknown as { actorId: string }).actorId;
    expect(next.children, at).not.toHaveProperty([id]); // a forgotten owner is stopped and dropped in one step
    expect(types, at).toContain('xstate.stopChild');
  }
}

describe('machines/job-shard, traversed', () => {
  const x = explore(lonelyShard, { input: { limit: LIMIT }, events: shardEvents, serialize: shardKey });

  it("J4: every step out of every reachable state keeps the owners' actors in step and forwards each owner's events to its own", () => {
    expect(x.states.size).toBeGreaterThan(3);
    for (const step of x.steps) {
      const [, actions] = transition(lonelyShard, step.prev, step.event);
      checkShardStep(step, actions as Action[]);
    }
  });

  it('J4: the traversal takes every transition the shard defines', () => {
    expect(untaken(lonelyShard, x.taken)).toEqual([]);
  });
});

// The registry: every owner's event goes to the owner's shard, RESERVE only while accepting,
// and a job's end (passed up by a shard) runs `jobEnded` once.
function jobEvents(): JobsEvent[] {
  const out: JobsEvent[] = [{ type: 'CLOSE' }, { type: 'JOB_ENDED', ownerKey: 'o1', jobId: 'j1' }];
  for (const ownerKey of OWNERS) {
    out.push({ type: 'RESERVE', ownerKey }, { type: 'RELEASE', ownerKey }, { type: 'FORGET', ownerKey });
    out.push({ type: 'REGISTER', job: { jobId: 'j1', ownerKey, kind: 'k', label: 'j1', startedAt: 0 } });
  }
  return out;
}
const jobsKey = (s: JobsSnapshot) => JSON.stringify([s.value, Object.keys(s.children).length]);

function checkJobsStep({ event, prev, next }: ModelStep<typeof jobRegistryMachine>, actions: Action[]): void {
  const at = `${jobsKey(prev)} --${event.type}--> ${jobsKey(next)}`;
  expect(Object.keys(next.children).sort(), at).toEqual(
    Array.from({ length: JOB_SHARDS }, (_, i) => `shard:${i}`).sort(),
  );
  expect(next.context, at).toBe(prev.context); // never changes
  const sent = actions.filter((a) => a.type === 'xstate.sendTo').map((a) => a.params);
  const key = event.type === 'JOB_ENDED' ? undefined : ownerKeyOf(event); // an event forwarded to the owner's actor
  if (key !== undefined) {
    const refused = event.type === 'RESERVE' && prev.matches('closed');
    expect(sent, at).toMatchObject(refused ? [] : [{ targetId: shardActorId(key), event }]);
    expect(prev.can(event), at).toBe(!refused);
  } else expect(sent, at).toEqual([]);
  expect(
    actions.filter((a) => a.type === 'jobEnded').map((a) => a.params),
    at,
  ).toEqual(event.type === 'JOB_ENDED' ? [{ jobId: event.jobId }] : []); // reported once
  if (prev.matches('closed')) expect(next.matches('closed'), at).toBe(true);
}

describe('machines/job-registry, traversed', () => {
  const x = explore(jobRegistryMachine, { input: { limit: LIMIT }, events: jobEvents, serialize: jobsKey });

  it("J4: every step out of every reachable state forwards each owner's events to its shard, and takes no reservation once closed", () => {
    for (const step of x.steps) {
      const [, actions] = transition(jobRegistryMachine, step.prev, step.event);
      checkJobsStep(step, actions as Action[]);
    }
    const values = new Set([...x.states.values()].map((s) => JSON.stringify(s.snapshot.value)));
    expect(values).toEqual(new Set(['"accepting"', '"closed"']));
    // Owners spread over the shards (the hash is not one bucket).
    expect(new Set(Array.from({ length: 64 }, (_, i) => shardActorId(`o${i}`))).size).toBeGreaterThan(
      JOB_SHARDS / 2,
    );
  });

  it('J4: the traversal takes every transition the registry defines', () => {
    expect(untaken(jobRegistryMachine, x.taken)).toEqual([]);
  });
});

// Agent registry: two sessions' publications, each with up to two routers (a reload's ATTACH).
const PUBS = ['agent:s1:1', 'agent:s2:1'];
const agentInput = (publication: string) => ({
  publication,
  sessionId: publication.split(':')[1]!,
  wake: 'wakeup' as const,
  maxWakes: 3,
});
const routerIds = (pub: string) => [`router:${pub.split(':')[1]}:1`, `router:${pub.split(':')[1]}:1.1`];
// The publications and router ids the registry holds (its slots, without the free ones).
const held = (slots: readonly (string | null)[]) => slots.filter((key) => key !== null);
function agentEvents(s: AgentsSnapshot): AgentsEvent[] {
  const out: AgentsEvent[] = [{ type: 'CLOSE' }];
  for (const pub of PUBS) {
    const [first, second] = routerIds(pub);
    const live = s.context.agents.includes(pub);
    if (!live && !s.context.routers.includes(first!))
      out.push({
        type: 'PUBLISH',
        agent: agentInput(pub),
        router: { id: first!, publication: pub, windowMs: 50 },
      });
    if (live && !s.context.routers.includes(second!))
      out.push({ type: 'ATTACH', router: { id: second!, publication: pub, windowMs: 50 } });
  }
  for (const id of Object.keys(s.children))
    out.push(actorDone<AgentsEvent>(id), actorFailed<AgentsEvent>(id, new Error('escaped')));
  return out;
}
const agentsKey = (s: AgentsSnapshot) =>
  JSON.stringify([s.value, s.context.agents, s.context.routers, Object.keys(s.children).sort()]);
// The child ids the slots name (`agent#0`, `router#1`).
const slotChildren = (s: AgentsSnapshot) =>
  [
    ...s.context.agents.flatMap((key, n) => (key === null ? [] : [`agent#${n}`])),
    ...s.context.routers.flatMap((key, n) => (key === null ? [] : [`router#${n}`])),
  ].sort();

describe('machines/agent-registry, traversed', () => {
  const x = explore(agentRegistryMachine, { events: agentEvents, serialize: agentsKey });

  it('W1, S5, D2: every step keeps the slots and the children in step; closed spawns nothing', () => {
    expect(x.states.size).toBeGreaterThan(20);
    for (const { event, prev, next } of x.steps) {
      const at = `${agentsKey(prev)} --${event.type}--> ${agentsKey(next)}`;
      expect(Object.keys(next.children).sort(), at).toEqual(slotChildren(next));
      for (const pub of held(next.context.agents))
        expect(agentChildOf(next, pub)?.getSnapshot().context.publication, at).toBe(pub);
      for (const id of held(next.context.routers))
        expect(routerChildOf(next, id)?.getSnapshot().context.id, at).toBe(id);
      // Slots are reused: the children never outnumber what was live at once (P8).
      expect(next.context.agents.length, at).toBeLessThanOrEqual(PUBS.length);
      expect(next.context.routers.length, at).toBeLessThanOrEqual(PUBS.length * 2);
      if (event.type === 'PUBLISH' && prev.matches('open')) {
        // W1: each publication gets its router in the same step
        expect(next.context.agents, at).toContain(event.agent.publication);
        expect(next.context.routers, at).toContain(event.router.id);
      }
      if (event.type === 'ATTACH' && prev.matches('open')) {
        // S5: a new router for the live publication; the agent actor is the same one
        expect(next.context.routers, at).toContain(event.router.id);
        expect(agentChildOf(next, event.router.publication), at).toBe(
          agentChildOf(prev, event.router.publication),
        );
      }
      if (prev.matches('closed') && (event.type === 'PUBLISH' || event.type === 'ATTACH'))
        expect(agentsKey(next), at).toBe(agentsKey(prev)); // D2: refused once closed
      if (event.type.startsWith('xstate.')) {
        const id = (event as { actorId: string }).actorId;
        expect(next.children, at).not.toHaveProperty([id]); // stopped and forgotten in one step
      }
      if (prev.matches('closed')) expect(next.matches('closed'), at).toBe(true);
    }
  });

  it('W1, S5: the traversal takes every transition the registry defines', () => {
    expect(untaken(agentRegistryMachine, x.taken)).toEqual([]);
  });
});
