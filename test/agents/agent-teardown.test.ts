import { afterEach, describe, expect, it } from 'vitest';
import { type InspectionEvent, SimulatedClock } from 'xstate';
import type { AgentOwnerToken } from '../../src/owners/owner-token.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { failsWith } from '../support/job-harness.js';
import { waitFor } from '../support/spawn-tree.js';
import { type AgentHarness, agentHarness, heldDriver, QUIESCENT } from './agent-harness.js';

let h: AgentHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tagged = () => listTaggedProcesses(treeIdPrefix());

describe('agents: teardown (D1–D3)', () => {
  it('D1: dispose retires the owner, aborts the turn, drains real jobs and leaves nothing behind', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'd1', onTurn: d.onTurn });
    agent.say('start the servers');
    const t1 = await d.turn(1);
    const jobs = await Promise.all([1, 2, 3].map(() => h!.background(agent, 'sleep 1000')));
    await h.background(agent, 'exit 0');
    expect(tagged().length).toBeGreaterThanOrEqual(3);
    const disposing = agent.dispose();
    expect(agent.dispose()).toBe(disposing);
    expect(agent.phase).toBe('retired');
    expect(t1.turn.signal.aborted).toBe(true);
    await disposing;
    // Every new operation with the retired owner fails closed.
    expect(() => agent.say('hello?')).toThrow(expect.objectContaining({ code: 'OWNER_RETIRED' }));
    expect(() => t1.turn.inbox.claim()).toThrow(expect.objectContaining({ code: 'OWNER_RETIRED' }));
    await failsWith(h.jobs.list(agent.owner), 'OWNER_RETIRED');
    await failsWith(h.jobs.read(agent.owner, jobs[0]!.id, 0), 'OWNER_RETIRED');
    await failsWith(h.background(agent, 'true'), 'OWNER_RETIRED');
    // No process, job record, listener, timer, turn or actor of the agent is left.
    expect(tagged()).toEqual([]);
    expect(h.jobs.stats()).toMatchObject({ jobs: 0, running: 0, listeners: 0, deliveries: 0 });
    expect(h.agents.stats()).toEqual(QUIESCENT);
  });

  it('D1: drains run in reverse start order — later services (terminals) first, jobs last', async () => {
    const order: string[] = [];
    const spy = (name: string, fail = false) => ({
      async drainOwner(owner: AgentOwnerToken) {
        order.push(name);
        // Drained after the owner was retired and its router detached.
        expect(() => h!.owners.assertLive(owner)).toThrow(expect.objectContaining({ code: 'OWNER_RETIRED' }));
        expect(h!.agents.stats().listeners).toBe(0);
        if (fail) throw new Error(`${name} drain failed`);
      },
    });
    h = agentHarness({ drainables: [spy('terminals'), spy('browsers', true)] });
    const { jobs } = h;
    const originalDrain = jobs.drainOwner.bind(jobs);
    jobs.drainOwner = async (owner) => {
      order.push('jobs');
      await originalDrain(owner);
    };
    const agent = h.agents.create({ sessionId: 'order', onTurn: () => {} });
    await h.background(agent, 'sleep 1000');
    await agent.dispose();
    expect(order).toEqual(['browsers', 'terminals', 'jobs']);
    expect(h.errors).toMatchObject([{ stage: 'drain', agent: 'agent:order:1' }]);
    expect(tagged()).toEqual([]);
  });

  it('D1: a completion waiting in the quiet window is dropped with its timer; nothing is delivered after dispose', async () => {
    const clock = new SimulatedClock();
    h = agentHarness({ clock, quietWindowMs: 50 });
    let notices = 0;
    const agent = h.agents.create({ sessionId: 'window', onTurn: () => {}, onNotice: () => void notices++ });
    await h.background(agent, 'exit 0');
    await waitFor(() => h!.agents.stats().queued === 1, 'the completion in the window');
    expect(h.agents.stats().timers).toBe(1);
    await agent.dispose();
    expect(h.agents.stats()).toEqual(QUIESCENT);
    clock.increment(1_000);
    expect(notices).toBe(0);
  });

  it('D1: a turn that ignores its abort signal is abandoned after turnGraceMs and reported, then counted until it settles', async () => {
    h = agentHarness({ turnGraceMs: 20 });
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    const agent = h.agents.create({ sessionId: 'stuck', onTurn: () => stuck });
    agent.say('never ends');
    await waitFor(() => h!.agents.stats().turns === 1, 'the turn running');
    await agent.dispose();
    expect(h.errors).toMatchObject([
      // the turn never claimed its input: reported, not dropped
      { stage: 'input', agent: 'agent:stuck:1', error: { code: 'INPUT_UNCLAIMED' } },
      { stage: 'turn', agent: 'agent:stuck:1' },
    ]);
    expect(h.agents.stats()).toMatchObject({ agents: 0, actors: 0, turns: 1, abandonedTurns: 1 });
    release();
    await stuck;
    await waitFor(() => h!.agents.stats().turns === 0, 'the abandoned turn settled');
    expect(h.agents.stats()).toEqual(QUIESCENT);
  });

  it('D2: disposing the service tears down every agent: no process, timer, listener, turn or actor is left', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agents = Array.from({ length: 5 }, (_, i) =>
      h!.agents.create({ sessionId: `d2-${i}`, onTurn: d.onTurn }),
    );
    for (const agent of agents) {
      await h.background(agent, 'sleep 1000');
      await h.background(agent, 'sleep 1000');
    }
    agents[0]!.say('busy');
    agents[1]!.say('busy too');
    await d.turn(2);
    const stats = h.agents.stats();
    expect(stats).toMatchObject({ agents: 5, actors: 10, listeners: 5, turns: 2, waiters: 0 });
    await h.agents.dispose();
    expect(agents.map((a) => a.phase)).toEqual(Array(5).fill('retired'));
    expect(d.turns.every((t) => t.turn.signal.aborted)).toBe(true);
    expect(h.agents.stats()).toEqual(QUIESCENT);
    expect(tagged()).toEqual([]);
    expect(() => h!.agents.create({ sessionId: 'late', onTurn: () => {} })).toThrow(
      expect.objectContaining({ code: 'RUNTIME_DISPOSED' }),
    );
  });

  it('D3: stats() counts what is live — agents, actors, listeners, timers, turns — and reaches zero', async () => {
    const clock = new SimulatedClock();
    h = agentHarness({ clock });
    const d = heldDriver();
    const a = h.agents.create({ sessionId: 'd3-a', wake: 'quiet', onTurn: d.onTurn });
    h.agents.create({ sessionId: 'd3-b', onTurn: d.onTurn });
    expect(h.agents.stats()).toEqual({ ...QUIESCENT, agents: 2, actors: 4, listeners: 2 });
    await h.background(a, 'exit 0');
    await waitFor(() => h!.agents.stats().queued === 1, 'queued');
    a.say('hi');
    await d.turn(1);
    expect(h.agents.stats()).toMatchObject({ agents: 2, turns: 1, queued: 1, timers: 1 });
    const disposing = h.agents.dispose();
    expect(h.agents.stats().waiters).toBe(2);
    await disposing;
    expect(h.agents.stats()).toEqual(QUIESCENT);
  });

  it('O1: a replacement agent for the same sessionId is a new publication with a new owner token', async () => {
    h = agentHarness();
    const first = h.agents.create({ sessionId: 'same', onTurn: () => {} });
    const job = await h.background(first, 'sleep 1000');
    await first.dispose();
    const second = h.agents.create({ sessionId: 'same', onTurn: () => {} });
    expect(second.owner).not.toBe(first.owner);
    expect([first.id, second.id]).toEqual(['agent:same:1', 'agent:same:2']);
    await failsWith(h.jobs.list(first.owner), 'OWNER_RETIRED');
    expect(await h.jobs.list(second.owner)).toEqual([]);
    await failsWith(h.jobs.read(second.owner, job.id, 0), 'JOB_NOT_FOUND');
    expect(JSON.parse(JSON.stringify(second))).toEqual({
      id: 'agent:same:2',
      sessionId: 'same',
      phase: 'idle',
    });
  });

  it('R: agents and routers are actors of one system with readable system ids, visible to the inspector', async () => {
    const events: InspectionEvent[] = [];
    h = agentHarness({ inspect: (e) => events.push(e), quietWindowMs: 1 });
    const d = heldDriver({ autoClaim: true, autoEnd: true });
    const agent = h.agents.create({ sessionId: 'seen', onTurn: d.onTurn });
    await h.background(agent, 'exit 0');
    await d.turn(1);
    await agent.dispose();
    const systemIds = new Set(events.map((e) => systemIdOf(e)).filter((id) => id !== undefined));
    expect([...systemIds].sort()).toEqual(['agent:seen:1', 'router:seen:1', 'tether.agents']);
    // The router's transitions are visible: the delivery, and the close at teardown (D1).
    const routerEvents = events
      .filter((e) => e.type === '@xstate.event' && systemIdOf(e) === 'router:seen:1')
      .map((e) => (e as { event: { type: string } }).event.type);
    expect(routerEvents).toEqual(expect.arrayContaining(['COMPLETED', 'xstate.done.actor.deliver', 'CLOSE']));
  });

  it('D3: the agent system sees one child-end event type per slot, not one per agent or router ever published (XState keeps what it memoized per event type for the life of the machine; P8)', async () => {
    const types = new Set<string>();
    h = agentHarness({
      inspect: (event) => {
        if (event.type !== '@xstate.event' || systemIdOf(event) !== 'tether.agents') return;
        const type = (event as { event: { type: string } }).event.type;
        if (/^xstate\.(done|error)\.actor\./.test(type)) types.add(type);
      },
    });
    const d = heldDriver({ autoClaim: true, autoEnd: true });
    // Ten agents one after the other, each with a reload (a second router) before it is disposed.
    for (let i = 0; i < 10; i++) {
      const agent = h.agents.create({ sessionId: `retained-${i}`, onTurn: d.onTurn });
      await h.agents.reload(() => {});
      await agent.dispose();
    }
    expect(h.agents.stats()).toMatchObject({ agents: 0, actors: 0 });
    // With a child id per publication and per router, these were 30 types (a detached router
    // with nothing pending ends at once, so the next one reuses its slot).
    expect([...types].sort()).toEqual(['xstate.done.actor.agent#0', 'xstate.done.actor.router#0']);
  });
});

// The system id of the actor an inspection event is about (short-lived invoked actors have none).
function systemIdOf(event: InspectionEvent): string | undefined {
  return (event.actorRef as { systemId?: string }).systemId;
}
