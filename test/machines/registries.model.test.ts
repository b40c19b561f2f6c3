import { describe, expect, it } from 'vitest';
import { type EventFromLogic, type SnapshotFrom, transition } from 'xstate';
import { agentRegistryMachine } from '../../machines/agent-registry.js';
import { jobRegistryMachine, ownerOfJob } from '../../machines/job-registry.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { explore, type ModelStep, untaken } from '../support/model-check.js';

type JobsSnapshot = SnapshotFrom<typeof jobRegistryMachine>;
type JobsEvent = EventFromLogic<typeof jobRegistryMachine>;
type AgentsSnapshot = SnapshotFrom<typeof agentRegistryMachine>;
type AgentsEvent = EventFromLogic<typeof agentRegistryMachine>;

const LIMIT = 2;
const OWNERS = ['o1', 'o2'] as const;
const JOB_IDS = ['j1', 'j2', 'j3'];
const liveOf = (s: JobsSnapshot, owner: string) => (s.context.live[owner] ?? []).length;
const liveJobs = (s: JobsSnapshot) => Object.values(s.context.live).flat();
// Slots an owner reserved that no live job holds yet (a start between RESERVE and REGISTER).
const reservedOf = (s: JobsSnapshot, owner: string) => (s.context.slots[owner] ?? 0) - liveOf(s, owner);

// The registry's callers keep its protocol: REGISTER or RELEASE only a slot they reserved;
// a job's end arrives only from a live child.
function jobEvents(s: JobsSnapshot): JobsEvent[] {
  const out: JobsEvent[] = [{ type: 'CLOSE' }];
  for (const ownerKey of OWNERS) {
    out.push({ type: 'RESERVE', ownerKey });
    const jobId = JOB_IDS.find((id) => !liveJobs(s).includes(id));
    if (reservedOf(s, ownerKey) > 0) {
      out.push({ type: 'RELEASE', ownerKey });
      if (jobId !== undefined)
        out.push({ type: 'REGISTER', job: { jobId, ownerKey, kind: 'k', label: jobId, startedAt: 0 } });
    }
  }
  for (const jobId of liveJobs(s)) {
    out.push(actorDone<JobsEvent>(jobId), actorFailed<JobsEvent>(jobId, new Error('escaped')));
  }
  return out;
}
const jobsKey = (s: JobsSnapshot) =>
  JSON.stringify([
    s.value,
    s.context.slots,
    Object.entries(s.context.live)
      .map(([owner, jobs]) => [owner, [...jobs].sort()])
      .sort(),
    Object.keys(s.children).sort(),
  ]);

function checkJobsStep(
  { event, prev, next }: ModelStep<typeof jobRegistryMachine>,
  actions: { type: string; params?: unknown }[],
): void {
  const at = `${jobsKey(prev)} --${event.type}--> ${jobsKey(next)}`;
  for (const owner of OWNERS) {
    expect(next.context.slots[owner] ?? 0, at).toBeLessThanOrEqual(LIMIT); // J4
    expect(liveOf(next, owner), at).toBeLessThanOrEqual(next.context.slots[owner] ?? 0);
  }
  expect(Object.values(next.context.slots), at).not.toContain(0);
  // Every live job is a child actor, and every child is a live job.
  expect(Object.keys(next.children).sort(), at).toEqual(liveJobs(next).sort());
  expect(Object.values(next.context.live), at).not.toContainEqual([]); // an owner without jobs is dropped
  if (event.type === 'RESERVE') {
    const accepted = prev.matches('accepting') && (prev.context.slots[event.ownerKey] ?? 0) < LIMIT;
    expect(next.context.slots[event.ownerKey] ?? 0, at).toBe(
      (prev.context.slots[event.ownerKey] ?? 0) + (accepted ? 1 : 0),
    );
    expect(prev.can(event), at).toBe(accepted); // J4: the service's preflight is the machine's guard
  }
  if (event.type.startsWith('xstate.')) {
    const jobId = (event as { actorId: string }).actorId;
    const owner = ownerOfJob(prev.context, jobId)!;
    expect(ownerOfJob(next.context, jobId), at).toBeUndefined();
    expect(next.context.slots[owner] ?? 0, at).toBe(prev.context.slots[owner]! - 1); // freed in the same step
    const ended = actions.filter((a) => a.type === 'jobEnded');
    expect(
      ended.map((a) => a.params),
      at,
    ).toEqual([{ jobId }]); // reported once, with the slot freed
  } else {
    expect(
      actions.filter((a) => a.type === 'jobEnded'),
      at,
    ).toEqual([]);
  }
  if (prev.matches('closed')) expect(next.matches('closed'), at).toBe(true);
}

describe('machines/job-registry, traversed', () => {
  const x = explore(jobRegistryMachine, { input: { limit: LIMIT }, events: jobEvents, serialize: jobsKey });

  it('J4: every step out of every reachable state keeps the cap, the slot ledger and the children in step', () => {
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
