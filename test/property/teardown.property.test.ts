import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Agent, Notice, Turn } from '../../src/agents/agent-types.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listPids, listTaggedProcesses, readEnvironValue, readProcStat } from '../../src/subprocess/proc.js';
import { type AgentHarness, agentHarness, noticeJobIds, QUIESCENT } from '../agents/agent-harness.js';

// Model-based teardown property (D1–D3, W1, O1, S5) over random sequences of agent, job,
// terminal and hot-reload operations with real processes and PTYs. Each run is a fresh runtime, so the count is modest for
// CI: NUM_RUNS runs of up to MAX_COMMANDS commands (TETHER_PROPERTY_RUNS=200 for a soak).
const NUM_RUNS = Number(process.env.TETHER_PROPERTY_RUNS ?? 40);
const MAX_COMMANDS = 20;
const LIMIT = 3;

type Behaviour = 'claim' | 'linger' | 'throw' | 'hold';
interface ModelAgent {
  readonly sessionId: string;
  disposed: boolean;
  jobs: number;
  terminals: number;
}
interface Model {
  readonly agents: ModelAgent[];
  serviceDisposed: boolean;
}
interface Real {
  readonly h: AgentHarness;
  readonly agents: Agent[];
  readonly jobIds: Set<string>[];
  /** Job ids every agent saw in claimed notices, with counts (at most once each, W1/J6). */
  readonly claimed: Map<string, number>[];
  /** Job and terminal ids of every notice delivered to each agent (`onNotice`), with counts. */
  readonly delivered: Map<string, number>[];
  readonly terminalIds: string[][];
  /** Terminals whose shell was told to exit (their session exit must reach the agent). */
  readonly exited: Set<string>[];
  /** Every promise handed out (by the runtime, and the drivers' turns): all must settle. */
  readonly promises: { readonly label: string; settled: boolean }[];
}
type Cmd = fc.AsyncCommand<Model, Real>;

/** Env var that tags every process an agent started (an oracle the runtime does not keep). */
const AGENT_TAG = 'PROPERTY_AGENT';
let runNumber = 0;
const tagOf = (index: number) => `${process.pid}-${runNumber}-${index}`;
// Live processes (not zombies) carrying `tag`, read from /proc alone.
function taggedWith(tag: string): number[] {
  return listPids().filter((pid) => {
    const state = readProcStat(pid)?.state;
    return state !== undefined && state !== 'Z' && readEnvironValue(pid, AGENT_TAG) === tag;
  });
}

/** What the runs exercised, printed once (a property that never reaches a case proves nothing). */
const exercised = { runs: 0, commands: 0, terminals: 0, exits: 0, reloads: 0, jobs: 0, swaps: 0 };

function track(r: Real, label: string, promise: Promise<unknown>): Promise<unknown> {
  const entry = { label, settled: false };
  r.promises.push(entry);
  const done = () => {
    entry.settled = true;
  };
  promise.then(done, done);
  return promise;
}

// A driver that behaves as `behaviour` says; every turn honours its abort signal.
function driver(r: Real, index: number, behaviour: Behaviour): (turn: Turn) => Promise<void> {
  const take = (turn: Turn) => {
    for (const id of noticeJobIds(turn.inbox.claim())) {
      expect(r.jobIds[index], `agent ${index} was told about a job it does not own`).toContain(id); // J3
      r.claimed[index]!.set(id, (r.claimed[index]!.get(id) ?? 0) + 1);
    }
  };
  return (turn) => {
    const work = (async () => {
      take(turn);
      if (behaviour === 'throw') throw new Error('driver failed');
      if (behaviour === 'linger') await sleep(15, undefined, { signal: turn.signal }).catch(() => {});
      if (behaviour === 'hold')
        await new Promise((resolve) => turn.signal.addEventListener('abort', resolve, { once: true }));
      if (!turn.signal.aborted) take(turn);
    })();
    track(r, `turn ${turn.agent.id}#${turn.number}`, work);
    return work;
  };
}

const create = (session: number, wake: 'wakeup' | 'quiet', maxWakes: number, behaviour: Behaviour): Cmd => ({
  check: () => true,
  async run(m, r) {
    const sessionId = `s${session}`;
    const onTurn = driver(r, m.agents.length, behaviour);
    if (m.serviceDisposed) {
      expect(() => r.h.agents.create({ sessionId, wake, maxWakes, onTurn })).toThrow(
        expect.objectContaining({ code: 'RUNTIME_DISPOSED' }),
      );
      return;
    }
    const delivered = new Map<string, number>();
    const onNotice = (notice: Notice) => {
      for (const { id } of [...notice.jobs, ...notice.terminals])
        delivered.set(id, (delivered.get(id) ?? 0) + 1);
    };
    const agent = r.h.agents.create({ sessionId, wake, maxWakes, onTurn, onNotice });
    for (const other of r.agents) expect(agent.owner).not.toBe(other.owner); // O1, also for a reused sessionId
    m.agents.push({ sessionId, disposed: false, jobs: 0, terminals: 0 });
    r.agents.push(agent);
    r.jobIds.push(new Set());
    r.claimed.push(new Map());
    r.delivered.push(delivered);
    r.terminalIds.push([]);
    r.exited.push(new Set());
  },
  toString: () => `create(s${session}, ${wake}, ${maxWakes}, ${behaviour})`,
});

const start = (n: number, kind: 'hold' | 'quick', exitCode: number): Cmd => ({
  check: (m) => m.agents.length > 0,
  async run(m, r) {
    const index = n % m.agents.length;
    const model = m.agents[index]!;
    const command = kind === 'hold' ? 'exec sleep 300' : `exit ${exitCode}`;
    try {
      const info = await track(
        r,
        `start ${command}`,
        r.h.background(r.agents[index]!, command, { [AGENT_TAG]: tagOf(index) }),
      );
      expect(model.disposed).toBe(false);
      r.jobIds[index]!.add((info as { id: string }).id);
      exercised.jobs++;
      model.jobs++;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (model.disposed) expect(code, String(error)).toBe('OWNER_RETIRED');
      else {
        expect(code, String(error)).toBe('JOB_LIMIT');
        expect(model.jobs).toBeGreaterThanOrEqual(LIMIT);
      }
    }
  },
  toString: () => `start(#${n}, ${kind}, ${exitCode})`,
});

const kill = (n: number, j: number): Cmd => ({
  check: (m) => m.agents.some((a) => a.jobs > 0),
  async run(m, r) {
    const index = n % m.agents.length;
    const ids = [...r.jobIds[index]!];
    if (ids.length === 0) return;
    const promise = r.h.jobs.kill(r.agents[index]!.owner, ids[j % ids.length]!);
    track(r, 'kill', promise);
    if (m.agents[index]!.disposed) await expect(promise).rejects.toMatchObject({ code: 'OWNER_RETIRED' });
    else expect(['requested', 'already_stopped']).toContain(await promise);
  },
  toString: () => `kill(#${n}, job ${j})`,
});

const complete = (n: number, j: number, timeoutMs: number): Cmd => ({
  check: (m) => m.agents.some((a) => a.jobs > 0 && !a.disposed),
  async run(m, r) {
    const index = n % m.agents.length;
    const ids = [...r.jobIds[index]!];
    if (ids.length === 0 || m.agents[index]!.disposed) return;
    await track(r, 'wait', r.h.jobs.wait(r.agents[index]!.owner, ids[j % ids.length]!, timeoutMs));
  },
  toString: () => `complete(#${n}, job ${j}, ${timeoutMs} ms)`,
});

const openTerminal = (n: number): Cmd => ({
  check: (m) => m.agents.length > 0,
  async run(m, r) {
    const index = n % m.agents.length;
    const promise = r.h.terminals.open(r.agents[index]!.owner, { env: { [AGENT_TAG]: tagOf(index) } });
    track(r, 'terminal open', promise);
    if (m.agents[index]!.disposed) {
      await expect(promise).rejects.toMatchObject({ code: 'OWNER_RETIRED' });
      return;
    }
    r.terminalIds[index]!.push((await promise).id);
    exercised.terminals++;
    m.agents[index]!.terminals++;
  },
  toString: () => `openTerminal(#${n})`,
});

// Input to a terminal: leave processes behind (also outside its group), print, or end the shell.
const TERMINAL_INPUT = {
  spawn: 'sleep 1000 & setsid sleep 1000 &\r',
  echo: 'echo hi\r',
  exit: 'exit 3\r',
} as const;

const sendTerminal = (n: number, t: number, what: keyof typeof TERMINAL_INPUT): Cmd => ({
  check: (m) => m.agents.some((a) => a.terminals > 0),
  async run(m, r) {
    const index = n % m.agents.length;
    const ids = r.terminalIds[index]!;
    if (ids.length === 0) return;
    const id = ids[t % ids.length]!;
    const promise = r.h.terminals.send(r.agents[index]!.owner, id, TERMINAL_INPUT[what], {
      settleMs: 50,
      timeoutMs: 3_000,
    });
    track(r, `terminal send ${what}`, promise);
    try {
      await promise;
      if (what === 'exit') {
        r.exited[index]!.add(id);
        exercised.exits++;
      }
    } catch (error) {
      const code = (error as { code?: string }).code;
      const expected = m.agents[index]!.disposed ? 'OWNER_RETIRED' : 'TERMINAL_CLOSED';
      expect(code, String(error)).toBe(expected);
    }
  },
  toString: () => `sendTerminal(#${n}, terminal ${t}, ${what})`,
});

const say = (n: number): Cmd => ({
  check: (m) => m.agents.length > 0,
  async run(m, r) {
    const index = n % m.agents.length;
    if (m.agents[index]!.disposed)
      expect(() => r.agents[index]!.say('hi')).toThrow(expect.objectContaining({ code: 'OWNER_RETIRED' }));
    else r.agents[index]!.say('hi');
  },
  toString: () => `say(#${n})`,
});

const disposeAgent = (n: number, wait: boolean): Cmd => ({
  check: (m) => m.agents.length > 0,
  async run(m, r) {
    const index = n % m.agents.length;
    const agent = r.agents[index]!;
    m.agents[index]!.disposed = true;
    const disposing = track(r, `dispose ${agent.id}`, agent.dispose());
    expect(agent.phase).toBe('retired');
    if (!wait) return;
    await disposing;
    await expect(r.h.jobs.list(agent.owner)).rejects.toMatchObject({ code: 'OWNER_RETIRED' });
    // D1: once its dispose resolved, nothing the agent started lives on (checked in /proc).
    expect(taggedWith(tagOf(index)), `${agent.id} left processes`).toEqual([]);
  },
  toString: () => `disposeAgent(#${n}, ${wait ? 'awaited' : 'not awaited'})`,
});

const disposeAll = (wait: boolean): Cmd => ({
  check: () => true,
  async run(m, r) {
    m.serviceDisposed = true;
    for (const agent of m.agents) agent.disposed = true;
    const disposing = track(r, 'dispose all', r.h.agents.dispose());
    if (!wait) return;
    await disposing;
    // D2: every agent's processes are gone when the service's dispose resolved.
    for (const index of m.agents.keys()) expect(taggedWith(tagOf(index)), `agent ${index}`).toEqual([]);
  },
  toString: () => `disposeAll(${wait ? 'awaited' : 'not awaited'})`,
});

// S5: a hot reload of the wiring, with a gap of `gapMs` in which completions land unheard.
const reload = (gapMs: number, wait: boolean): Cmd => ({
  check: () => true,
  async run(m, r) {
    // S5: the gap swaps in a real new provider (new terminals and jobs go through it).
    const reloading = track(
      r,
      'reload',
      r.h.agents.reload(async () => {
        await sleep(gapMs);
        r.h.swapProvider();
        exercised.swaps++;
      }),
    );
    if (m.serviceDisposed) {
      await expect(reloading).rejects.toMatchObject({ code: 'RUNTIME_DISPOSED' });
      return;
    }
    exercised.reloads++;
    if (!wait) return;
    await reloading;
    const live = m.agents.filter((a) => !a.disposed).length;
    expect(r.h.agents.stats().listeners, 'one attached router per live agent').toBe(live);
  },
  toString: () => `reload(gap ${gapMs} ms, ${wait ? 'awaited' : 'not awaited'})`,
});

const createArb = fc
  .tuple(
    fc.nat(2),
    fc.constantFrom('wakeup', 'quiet' as const),
    fc.nat(3),
    fc.constantFrom<Behaviour>('claim', 'linger', 'throw', 'hold'),
  )
  .map(([s, w, k, b]) => create(s, w, k, b));
const startArb = fc
  .tuple(fc.nat(), fc.constantFrom('hold', 'quick' as const), fc.constantFrom(0, 1))
  .map(([n, k, c]) => start(n, k, c));
// Weighted so that runs do work before they tear down: starts and completions are common,
// disposing an agent less so, disposing the whole service rare.
const commands = [
  fc.oneof(
    { arbitrary: createArb, weight: 2 },
    { arbitrary: startArb, weight: 6 },
    { arbitrary: fc.tuple(fc.nat(), fc.nat()).map(([n, j]) => kill(n, j)), weight: 3 },
    {
      arbitrary: fc
        .tuple(fc.nat(), fc.nat(), fc.constantFrom(0, 20, 200))
        .map(([n, j, t]) => complete(n, j, t)),
      weight: 3,
    },
    { arbitrary: fc.nat().map(say), weight: 3 },
    { arbitrary: fc.nat().map(openTerminal), weight: 4 },
    {
      arbitrary: fc
        .tuple(fc.nat(), fc.nat(), fc.constantFrom('spawn', 'echo', 'exit' as const))
        .map(([n, t, w]) => sendTerminal(n, t, w)),
      weight: 10,
    },
    { arbitrary: fc.tuple(fc.nat(), fc.boolean()).map(([n, w]) => disposeAgent(n, w)), weight: 2 },
    {
      arbitrary: fc.tuple(fc.constantFrom(0, 5, 30), fc.boolean()).map(([g, w]) => reload(g, w)),
      weight: 2,
    },
    { arbitrary: fc.boolean().map(disposeAll), weight: 1 },
  ),
];

// W1, S5: every job of a live agent that ended, and every terminal whose shell it told to
// exit, reaches that agent in a notice — reloads and their gaps included — within a generous
// bound (none is lost).
async function everyCompletionDelivered(m: Model, r: Real): Promise<void> {
  for (const [index, model] of m.agents.entries()) {
    if (model.disposed) continue;
    const agent = r.agents[index]!;
    const ended = (await r.h.jobs.list(agent.owner)).filter((j) => j.isTerminal).map((j) => j.id);
    ended.push(...r.exited[index]!);
    await quiescentDelivery(r, agent, r.exited[index]!);
    const missing = ended.filter((id) => !r.delivered[index]!.has(id));
    expect(missing, `${agent.id} never heard of these ended jobs and terminals`).toEqual([]);
  }
}

// Resolves once the runtime says nothing is on its way to `agent`: no terminal it told to exit
// still being swept (its exit is published when the sweep ends), no completion being
// published, queued in a router, in a quiet window or being delivered, no reload in its gap.
// The decision is on the runtime's own state, not on how long we waited (the bound only
// turns a hang into a failure).
async function quiescentDelivery(r: Real, agent: Agent, exited: ReadonlySet<string>): Promise<void> {
  let sweeping = 0;
  const pending = () => {
    const a = r.h.agents.stats();
    return {
      sweeping,
      jobs: r.h.jobs.stats().deliveries,
      terminals: r.h.terminals.stats().deliveries,
      queued: a.queued,
      deliveries: a.deliveries,
      reloads: a.reloads,
    };
  };
  const idle = () => Object.values(pending()).every((n) => n === 0);
  for (let i = 0; ; i++) {
    sweeping = (await r.h.terminals.list(agent.owner)).filter((t) => exited.has(t.id)).length;
    if (idle()) return;
    if (i > 6_000) throw new Error(`deliveries never settled: ${JSON.stringify(pending())}`);
    await sleep(10);
  }
}

describe('teardown (model-based)', () => {
  it('D1–D3, S5: random agent/job/terminal/reload/dispose sequences end quiescent — no process, timer, listener, turn or pending promise', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(createArb, { minLength: 1, maxLength: 3 }),
        fc.commands(commands, { maxCommands: MAX_COMMANDS, size: 'max' }),
        fc.integer({ min: 1, max: 30 }),
        async (initial, cmds, windowMs) => {
          const h = agentHarness(
            { quietWindowMs: windowMs, turnGraceMs: 5_000 },
            { maxRunningPerOwner: LIMIT },
          );
          const real: Real = {
            h,
            agents: [],
            jobIds: [],
            claimed: [],
            delivered: [],
            terminalIds: [],
            exited: [],
            promises: [],
          };
          const model: Model = { agents: [], serviceDisposed: false };
          try {
            runNumber++; // before anything starts: every process of this run carries its tags
            for (const cmd of [...initial, openTerminal(0)]) await cmd.run(model, real);
            exercised.runs++;
            exercised.commands += [...cmds].length;
            await fc.asyncModelRun(() => ({ model, real }), cmds);
            if (!model.serviceDisposed) await everyCompletionDelivered(model, real);
          } finally {
            await h.close(); // D2 for agents, then jobs; asserts stats are all zero (D3)
            expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
            await sleep(0);
            expect(real.promises.filter((p) => !p.settled).map((p) => p.label)).toEqual([]);
          }
          for (const counts of [...real.claimed, ...real.delivered])
            for (const [id, n] of counts) expect(n, id).toBe(1);
          expect(h.agents.stats()).toEqual(QUIESCENT);
        },
      ),
      { numRuns: NUM_RUNS },
    );
    console.log(`teardown property: ${JSON.stringify(exercised)}`);
    expect(exercised.exits, 'some runs ended a terminal shell').toBeGreaterThan(0);
    expect(exercised.reloads, 'some runs reloaded').toBeGreaterThan(0);
    expect(exercised.swaps, 'some reloads swapped the provider').toBeGreaterThan(0);
  });
});
