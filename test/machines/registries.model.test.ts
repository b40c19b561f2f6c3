import { describe, expect, it } from 'vitest';
import { type EventFromLogic, type SnapshotFrom, transition } from 'xstate';
import { agentRegistryMachine } from '../../machines/agent-registry.js';
import { jobRegistryMachine, ownerActorId } from '../../machines/job-registry.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { explore, type ModelStep, untaken } from '../support/model-check.js';

type JobsSnapshot = SnapshotFrom<typeof jobRegistryMachine>;
type JobsEvent = EventFromLogic<typeof jobRegistryMachine>;
type AgentsSnapshot = SnapshotFrom<typeof agentRegistryMachine>;
type AgentsEvent = EventFromLogic<typeof agentRegistryMachine>;

const LIMIT = 2;
const OWNERS = ['o1', 'o2'] as const;
const liveOf = (s: JobsSnapshot, owner: string) => s.context.live[owner] ?? 0;
// Slots an owner reserved that no live job holds yet (a start between RESERVE and REGISTER).
const reservedOf = (s: JobsSnapshot, owner: string) => (s.context.slots[owner] ?? 0) - liveOf(s, owner);

// The registry's callers keep its protocol: REGISTER or RELEASE only a slot they reserved;
// a job's end (JOB_ENDED, from the owner's actor) arrives only for an owner with live jobs.
// The owner's actor itself is checked with real actors in test/machines/job-registry.test.ts.
function jobEvents(s: JobsSnapshot): JobsEvent[] {
  const out: JobsEvent[] = [{ type: 'CLOSE' }];
  for (const ownerKey of OWNERS) {
    out.push({ type: 'RESERVE', ownerKey });
    if (reservedOf(s, ownerKey) > 0) {
      const jobId = `${ownerKey}-j${liveOf(s, ownerKey) + 1}`;
      out.push(
        { type: 'RELEASE', ownerKey },
        { type: 'REGISTER', job: { jobId, ownerKey, kind: 'k', label: jobId, startedAt: 0 } },
      );
    }
    if (liveOf(s, ownerKey) > 0) out.push({ type: 'JOB_ENDED', ownerKey, jobId: `${ownerKey}-ended` });
  }
  return out;
}
const jobsKey = (s: JobsSnapshot) =>
  JSON.stringify([s.value, s.context.slots, s.context.live, Object.keys(s.children).sort()]);

function checkJobsStep(
  { event, prev, next }: ModelStep<typeof jobRegistryMachine>,
  actions: { type: string; params?: unknown }[],
): void {
  const at = `${jobsKey(prev)} --${event.type}--> ${jobsKey(next)}`;
  for (const owner of OWNERS) {
    expect(next.context.slots[owner] ?? 0, at).toBeLessThanOrEqual(LIMIT); // J4
    expect(liveOf(next, owner), at).toBeLessThanOrEqual(next.context.slots[owner] ?? 0);
  }
  expect([...Object.values(next.context.slots), ...Object.values(next.context.live)], at).not.toContain(0);
  // An owner has an actor exactly while it has live jobs.
  expect(Object.keys(next.children).sort(), at).toEqual(
    Object.keys(next.context.live).map(ownerActorId).sort(),
  );
  const types = actions.map((a) => a.type);
  if (event.type === 'RESERVE') {
    const accepted = prev.matches('accepting') && (prev.context.slots[event.ownerKey] ?? 0) < LIMIT;
    expect(next.context.slots[event.ownerKey] ?? 0, at).toBe(
      (prev.context.slots[event.ownerKey] ?? 0) + (accepted ? 1 : 0),
    );
    expect(prev.can(event), at).toBe(accepted); // J4: the service's preflight is the machine's guard
  }
  if (event.type === 'REGISTER') {
    const { ownerKey } = event.job;
    expect(liveOf(next, ownerKey), at).toBe(liveOf(prev, ownerKey) + 1);
    expect(next.context.slots, at).toEqual(prev.context.slots); // the reserved slot is the job's now
    // The owner's actor is spawned with its first job only; the job goes to it in the same step.
    expect(types.filter((t) => t === 'xstate.spawnChild').length, at).toBe(
      liveOf(prev, ownerKey) === 0 ? 1 : 0,
    );
    const sent = actions.filter((a) => a.type === 'xstate.sendTo').map((a) => a.params);
    expect(sent, at).toMatchObject([
      { targetId: ownerActorId(ownerKey), event: { type: 'REGISTER', job: event.job } },
    ]);
  }
  if (event.type === 'JOB_ENDED') {
    const owner = event.ownerKey;
    expect(liveOf(next, owner), at).toBe(liveOf(prev, owner) - 1);
    expect(next.context.slots[owner] ?? 0, at).toBe(prev.context.slots[owner]! - 1); // freed in the same step
    expect(types.includes('xstate.stopChild'), at).toBe(liveOf(prev, owner) === 1); // with its last job
    expect(
      actions.filter((a) => a.type === 'jobEnded').map((a) => a.params),
      at,
    ).toEqual([{ jobId: event.jobId }]); // reported once, with the slot freed
  } else {
    expect(
      types.filter((t) => t === 'jobEnded'),
      at,
    ).toEqual([]);
  }
  if (prev.matches('closed')) expect(next.matches('closed'), at).toBe(true);
}

describe('machines/job-registry, traversed', () => {
  const x = explore(jobRegistryMachine, { input: { limit: LIMIT }, events: jobEvents, serialize: jobsKey });

  it("J4: every step out of every reachable state keeps the cap, the slot ledger and the owners' actors in step", () => {
    expect(x.states.size).toBeGreaterThan(50);
    for (const step of x.steps) {
      const [, actions] = transition(jobRegistryMachine, step.prev, step.event);
      checkJobsStep(step, actions as { type: string; params?: unknown }[]);
    }
    // Both states, a full owner and a refused reservation are reached.
    const values = new Set([...x.states.values()].map((s) => JSON.stringify(s.snapshot.value)));
    expect(values).toEqual(new Set(['"accepting"', '"closed"']));
    expect([...x.states.values()].some((s) => s.snapshot.context.slots.o1 === LIMIT)).toBe(true);
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
function agentEvents(s: AgentsSnapshot): AgentsEvent[] {
  const out: AgentsEvent[] = [{ type: 'CLOSE' }];
  for (const pub of PUBS) {
    const [first, second] = routerIds(pub);
    const live = pub in s.context.agents;
    if (!live && !(first! in s.context.routers))
      out.push({
        type: 'PUBLISH',
        agent: agentInput(pub),
        router: { id: first!, publication: pub, windowMs: 50 },
      });
    if (live && !(second! in s.context.routers))
      out.push({ type: 'ATTACH', router: { id: second!, publication: pub, windowMs: 50 } });
  }
  for (const id of [...Object.keys(s.context.agents), ...Object.keys(s.context.routers)])
    out.push(actorDone<AgentsEvent>(id), actorFailed<AgentsEvent>(id, new Error('escaped')));
  return out;
}
const agentsKey = (s: AgentsSnapshot) =>
  JSON.stringify([
    s.value,
    Object.keys(s.context.agents).sort(),
    Object.keys(s.context.routers).sort(),
    Object.keys(s.children).sort(),
  ]);

describe('machines/agent-registry, traversed', () => {
  const x = explore(agentRegistryMachine, { events: agentEvents, serialize: agentsKey });

  it('W1, S5, D2: every step keeps the context and the children in step; closed spawns nothing', () => {
    expect(x.states.size).toBeGreaterThan(20);
    for (const { event, prev, next } of x.steps) {
      const at = `${agentsKey(prev)} --${event.type}--> ${agentsKey(next)}`;
      const ids = [...Object.keys(next.context.agents), ...Object.keys(next.context.routers)].sort();
      expect(Object.keys(next.children).sort(), at).toEqual(ids);
      for (const [id, ref] of Object.entries({ ...next.context.agents, ...next.context.routers }))
        expect(next.children[id], at).toBe(ref); // the context holds the live children themselves
      if (event.type === 'PUBLISH' && prev.matches('open')) {
        // W1: each publication gets its router in the same step
        expect(next.context.agents, at).toHaveProperty([event.agent.publication]);
        expect(next.context.routers, at).toHaveProperty([event.router.id]);
      }
      if (event.type === 'ATTACH' && prev.matches('open')) {
        // S5: a new router for the live publication; the agent actor is the same one
        expect(next.context.routers, at).toHaveProperty([event.router.id]);
        expect(next.context.agents[event.router.publication], at).toBe(
          prev.context.agents[event.router.publication],
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
