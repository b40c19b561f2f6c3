import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { type EventFromLogic, initialTransition, type SnapshotFrom, transition } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import { type AgentMachineInput, agentMachine } from '../../machines/agent.js';
import type { AgentDisposal } from '../../src/agents/agent-types.js';
import type { JobInfo } from '../../src/jobs/job-types.js';
import { type AgentHarness, agentHarness, heldDriver } from '../agents/agent-harness.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { failsWith } from '../support/job-harness.js';

type AgentSnapshot = SnapshotFrom<typeof agentMachine>;
type AgentEvent = EventFromLogic<typeof agentMachine>;
type Step = { readonly event: AgentEvent; readonly prev: AgentSnapshot; readonly next: AgentSnapshot };

const job = {
  id: 'job_graph',
  kind: 'shell',
  label: 'exit 0',
  state: 'succeeded',
  isTerminal: true,
} as JobInfo;
const turnDone = actorDone<AgentEvent>('turn');
const turnFailed = actorFailed<AgentEvent>('turn', new Error('boom'));
const tornDown = actorDone<AgentEvent>('teardown');
const claim = (s: AgentSnapshot): AgentEvent => ({ type: 'CLAIM', turn: s.context.turns });
const outside: AgentEvent[] = [
  { type: 'SAY', text: 'hello' },
  { type: 'NOTICE', notice: { jobs: [job], terminals: [] } },
  { type: 'RETIRE' },
];
// What can happen in each state: a turn settles only while running, teardown only while retiring.
const events = (s: AgentSnapshot): AgentEvent[] => {
  if (s.matches('running')) return [...outside, claim(s), turnDone, turnFailed];
  if (s.matches('retiring')) return [...outside, claim(s), tornDown];
  return [...outside, claim(s)];
};
const inputs: AgentMachineInput[] = [
  { publication: 'agent:graph:1', sessionId: 'graph', wake: 'wakeup', maxWakes: 3 },
  { publication: 'agent:graph:1', sessionId: 'graph', wake: 'quiet', maxWakes: 3 },
];

// Fine abstraction: everything the guards read (turn and seq numbers aside).
function fine(s: AgentSnapshot): string {
  const { context: c } = s;
  const pending = [...c.nextTurn, ...c.nextStep];
  const fresh = (kind: string) => pending.some((i) => i.kind === kind && i.seq > c.turnStartSeq);
  const user = pending.some((i) => i.kind === 'user');
  return JSON.stringify([
    s.value,
    c.wakes,
    c.nextTurn.length > 0,
    c.nextStep.length > 0,
    user,
    fresh('user'),
    fresh('notice'),
    c.unclaimed.some((i) => i.kind === 'user'),
    c.unclaimed.some((i) => i.kind === 'notice'),
  ]);
}
// Coarse abstraction: what `agent.status()` shows.
const coarse = (s: AgentSnapshot): string =>
  JSON.stringify([s.value, s.context.wakes, s.context.nextTurn.length > 0, s.context.nextStep.length > 0]);
const pathsOf = (input: AgentMachineInput, serializeState: (s: AgentSnapshot) => string) =>
  getShortestPaths(agentMachine, {
    input,
    events,
    serializeState,
    filterEvents: (s) => s.status === 'active',
  });

// A path's events replayed on real snapshots (a path's steps hold one representative per
// abstract state, not necessarily the successor of the previous step).
function replay(input: AgentMachineInput, path: StatePath<AgentSnapshot, AgentEvent>): Step[] {
  let [prev] = initialTransition(agentMachine, input);
  const steps: Step[] = [];
  for (const { event: recorded } of path.steps.slice(1)) {
    const event = recorded.type === 'CLAIM' ? claim(prev) : recorded;
    if (!events(prev).some((e) => e.type === event.type)) break;
    const [next] = transition(agentMachine, prev, event);
    steps.push({ event, prev, next });
    prev = next;
  }
  return steps;
}

// Invariants of one step (SPEC W2–W5, D1).
function checkStep(input: AgentMachineInput, { event, prev, next }: Step): void {
  const at = `${JSON.stringify(prev.value)} --${event.type}--> ${JSON.stringify(next.value)}`;
  expect(next.context.wakes, at).toBeGreaterThanOrEqual(0);
  expect(next.context.wakes, at).toBeLessThanOrEqual(input.maxWakes); // W3
  if (input.wake === 'quiet') expect(next.context.wakes, at).toBe(0); // W4: quiet never wakes
  if (event.type === 'NOTICE' && prev.matches('running')) {
    expect(next.context.wakes, at).toBe(prev.context.wakes); // W2: no permit spent
    expect(next.context.nextStep.length, at).toBe(prev.context.nextStep.length + 1);
  }
  if (event.type === 'NOTICE' && prev.matches('idle')) {
    const canWake = input.wake === 'wakeup' && prev.context.wakes < input.maxWakes;
    expect(next.matches('running'), at).toBe(canWake); // W3/W4
    expect(next.context.wakes, at).toBe(prev.context.wakes + (canWake ? 1 : 0));
  }
  if (event.type === 'CLAIM' && prev.matches('running')) {
    const hasUser = next.context.claimed.some((i) => i.kind === 'user');
    expect(next.context.wakes, at).toBe(hasUser ? 0 : prev.context.wakes); // W5
    expect(next.context.nextTurn.length + next.context.nextStep.length, at).toBe(0);
  } else expect(next.context.wakes, at).toBeGreaterThanOrEqual(prev.context.wakes); // only a claim resets
  if (event.type === 'SAY' && prev.matches('idle')) expect(next.matches('running'), at).toBe(true);
  if (event.type === 'RETIRE' && (prev.matches('idle') || prev.matches('running'))) {
    // D1: nothing pending is dropped: it is set aside as `unclaimed`, in arrival order
    const pending = [...prev.context.nextTurn, ...prev.context.nextStep].map((i) => i.seq);
    expect(
      next.context.unclaimed.map((i) => i.seq),
      at,
    ).toEqual(pending.sort((a, b) => a - b));
    expect(next.context.nextTurn.length + next.context.nextStep.length, at).toBe(0);
  }
  if (prev.matches('retiring') && event !== tornDown) {
    // D1: retiring accepts nothing; retired is final.
    expect(next.value, at).toEqual(prev.value);
    expect(next.context, at).toEqual(prev.context);
  }
}

describe('machines/agent', () => {
  it.each(inputs.map((i) => [i.wake, i] as const))(
    'W2–W5, D1: every reachable state (%s) keeps the wake invariants',
    (_wake, input) => {
      const paths = pathsOf(input, fine);
      expect(paths.length).toBeGreaterThan(input.wake === 'wakeup' ? 100 : 20);
      const reached = new Set<string>();
      for (const path of paths) {
        for (const step of replay(input, path)) {
          checkStep(input, step);
          // every step out of a reached state, not only the ones on a shortest path
          for (const event of events(step.next)) {
            checkStep(input, { event, prev: step.next, next: transition(agentMachine, step.next, event)[0] });
          }
          reached.add(JSON.stringify(step.next.value));
          reached.add(`wakes=${step.next.context.wakes}`);
          if (step.next.status === 'done') {
            expect(step.next.value).toBe('retired');
            for (const event of events(step.next))
              expect(transition(agentMachine, step.next, event)[0]).toBe(step.next);
          }
        }
      }
      expect(reached).toEqual(
        new Set([
          '"idle"',
          '"running"',
          '"retiring"',
          '"retired"',
          ...Array.from(
            { length: (input.wake === 'wakeup' ? input.maxWakes : 0) + 1 },
            (_, n) => `wakes=${n}`,
          ),
        ]),
      );
    },
  );

  it('D1: retired is final; entering retiring retires the owner and invokes the teardown', () => {
    expect(agentMachine.states.retired!.type).toBe('final');
    const [path] = pathsOf(inputs[0]!, fine).filter((p) => p.state.matches('idle'));
    const [retiring, actions] = transition(agentMachine, path!.state, { type: 'RETIRE' });
    expect(retiring.value).toBe('retiring');
    expect(actions.map((a) => a.type)).toEqual(expect.arrayContaining(['retireOwner', 'xstate.spawnChild']));
  });
});

// Only the longest paths: every shorter path's events are a prefix of one of them.
function maximal(input: AgentMachineInput, paths: StatePath<AgentSnapshot, AgentEvent>[]): Step[][] {
  const runs = paths.map((path) => replay(input, path));
  const keys = runs.map((run) => run.map((s) => s.event.type).join('>'));
  return runs.filter(
    (_, i) => !keys.some((k, j) => j !== i && (k.startsWith(`${keys[i]}>`) || (k === keys[i] && j < i))),
  );
}

// What `agent.status()` must show for a model snapshot.
const expected = (s: AgentSnapshot) => ({
  phase: s.matches('idle') ? 'idle' : s.matches('running') ? 'running' : 'retired',
  turns: s.context.turns,
  wakes: s.context.wakes,
  pendingTurn: s.context.nextTurn.length,
  pendingStep: s.context.nextStep.length,
});
const shown = (status: ReturnType<typeof expected>) => {
  const { phase, turns, wakes, pendingTurn, pendingStep } = status;
  return JSON.stringify({ phase, turns, wakes, pendingTurn, pendingStep });
};

describe('machines/agent driven for real along the shortest paths', () => {
  let h: AgentHarness;
  afterAll(async () => {
    await h?.close();
  });

  for (const input of inputs) {
    const runs = maximal(input, pathsOf(input, coarse)).filter((run) => run.length > 0);
    const name = (run: Step[]) => run.map((s) => s.event.type.replace('xstate.', '')).join(' → ');
    it.each(runs.map((run, i) => [`${input.wake} #${i + 1}: ${name(run)}`, run] as const))(
      'W2–W5/D1: the real agent follows %s',
      async (_name, run) => {
        h ??= agentHarness({ quietWindowMs: 1 });
        const d = heldDriver();
        const agent = h.agents.create({
          sessionId: 'graph',
          wake: input.wake,
          maxWakes: input.maxWakes,
          onTurn: d.onTurn,
        });
        let disposing: Promise<AgentDisposal> | undefined;
        for (const { event, prev, next } of run) {
          const current = d.turns.at(-1);
          const closed = prev.matches('retiring');
          if (closed && event.type === 'SAY') expect(() => agent.say('hello')).toThrow(/disposed/);
          else if (closed && event.type === 'NOTICE')
            await failsWith(h.background(agent, 'exit 0'), 'OWNER_RETIRED');
          else if (event.type === 'SAY') agent.say('hello');
          else if (event.type === 'NOTICE') await h.background(agent, 'exit 0');
          else if (event.type === 'CLAIM' && !prev.matches('running')) {
            if (current) expect(() => current.claim()).toThrow(); // a turn that is over, or retired
          } else if (event.type === 'CLAIM') {
            expect(current!.claim().map((i) => i.kind)).toEqual(next.context.claimed.map((i) => i.kind));
          } else if (event.type === 'RETIRE') disposing = agent.dispose();
          else if (event === turnDone) current!.end();
          else if (event === turnFailed) current!.fail(new Error('driver broke'));
          else if (event === tornDown) {
            // D1: dispose reports exactly what the machine set aside, in arrival order
            const { unclaimed } = await disposing!;
            expect(unclaimed.map((i) => i.kind)).toEqual(next.context.unclaimed.map((i) => i.kind));
          }
          const want = shown(expected(next));
          await until(
            () => shown(agent.status()) === want,
            () => `${event.type}: ${shown(agent.status())} ≠ ${want}`,
          );
        }
        await agent.dispose();
      },
    );
  }
});

// Polls `ok` every 5 ms; fails with `why()` after about 30 s.
async function until(ok: () => boolean, why: () => string): Promise<void> {
  for (let i = 0; !ok(); i++) {
    if (i > 6_000) throw new Error(why());
    await sleep(5);
  }
}
