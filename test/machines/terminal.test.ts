import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventFromLogic, type InspectionEvent, type SnapshotFrom, transition } from 'xstate';
import { terminalMachine } from '../../machines/terminal.js';
import { createRuntime, type Runtime, TetherError } from '../../src/index.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { explore, type ModelStep, takenEdges, untaken } from '../support/model-check.js';

type TerminalSnapshot = SnapshotFrom<typeof terminalMachine>;
type TerminalEvent = EventFromLogic<typeof terminalMachine>;
type Step = ModelStep<typeof terminalMachine>;

const input = { terminalId: 'term_x', ownerKey: 'o1' };
const closerDone = actorDone<TerminalEvent>('0.terminal.closing');
const closerFailed = actorFailed<TerminalEvent>('0.terminal.closing', new Error('kill failed'));
const outside: TerminalEvent[] = [
  { type: 'OPENED' },
  { type: 'OPEN_FAILED' },
  { type: 'BEGIN', activity: 'send' },
  { type: 'BEGIN', activity: 'execute' },
  { type: 'END' },
  { type: 'SHELL_RESET' },
  { type: 'CLOSE' },
  { type: 'SESSION_EXIT' },
];
// The closer's settlement arrives only while it runs (an error event of a child that does not
// exist would put the machine in `error`: it cannot happen, so it is not offered).
const eventsIn = (s: TerminalSnapshot): TerminalEvent[] =>
  s.matches('closing') ? [...outside, closerDone, closerFailed] : outside;
/** Model edges the real service cannot be made to take, and why. */
const notDrivable = {
  'terminal.closing --xstate.error.actor.0.terminal.closing--> terminal.closed':
    "the closer rejects only if the provider's kill throws (a provider fault, not producible with the local one)",
};
// `resets` counts without bound; the lifecycle does not depend on it past the first.
const abstract = (s: TerminalSnapshot) =>
  JSON.stringify([s.value, s.status, s.context.activity, s.context.endReason, Math.min(s.context.resets, 1)]);
// What the real actor must show at each step (resets exact).
const shown = (s: Pick<TerminalSnapshot, 'value' | 'status' | 'context'>) =>
  JSON.stringify([s.value, s.status, s.context.activity, s.context.endReason, s.context.resets]);
const model = explore(terminalMachine, { input, events: eventsIn, serialize: abstract });

// Invariants of every reachable terminal snapshot (T2, T4).
function checkState(s: TerminalSnapshot): void {
  const at = shown(s);
  expect(s.status === 'done', at).toBe(s.matches('closed'));
  expect(s.context.activity !== null, at).toBe(s.matches('busy'));
  expect(s.context.endReason !== null, at).toBe(s.matches('closing') || s.matches('closed'));
  // Nothing but the outcome of the open is accepted while opening.
  if (s.matches('opening')) {
    for (const e of outside.filter((e) => e.type !== 'OPENED' && e.type !== 'OPEN_FAILED'))
      expect(s.can(e), `${at} ${e.type}`).toBe(false);
  }
  // T2: a second send or execute is never accepted while one is in flight.
  if (s.matches('busy')) {
    expect(s.can({ type: 'BEGIN', activity: 'send' }), at).toBe(false);
    expect(s.can({ type: 'BEGIN', activity: 'execute' }), at).toBe(false);
  }
  // Once ending, nothing but the closer's end moves the terminal, and nothing brings it back.
  if (s.context.endReason !== null) {
    for (const e of outside) {
      const [next] = transition(terminalMachine, s, e);
      expect(shown(next), `${at} ${e.type}`).toBe(at);
    }
  }
}

function checkStep({ event, prev, next }: Step): void {
  const at = `${shown(prev)} --${event.type}--> ${shown(next)}`;
  if (event.type === 'SHELL_RESET' && prev.matches('busy'))
    expect(next.context.resets, at).toBe(prev.context.resets + 1); // T7: each reset is counted
  else expect(next.context.resets, at).toBe(prev.context.resets);
  if (prev.context.endReason !== null) expect(next.context.endReason, at).toBe(prev.context.endReason);
}

describe('machines/terminal', () => {
  it('T2, T4: every reachable state and every step out of it keeps the lifecycle invariants', () => {
    expect(model.states.size).toBeGreaterThanOrEqual(12);
    for (const { snapshot } of model.states.values()) checkState(snapshot);
    for (const step of model.steps) {
      checkState(step.next);
      checkStep(step);
    }
  });

  it('T2, T4, T7: the exploration takes every transition the machine defines', () => {
    expect(untaken(terminalMachine, model.taken)).toEqual([]);
  });
});

/**
 * The paths the real service can be driven along. Two things the model allows are not
 * producible for real, by design of the service: a shell that exits during `execute` is a
 * reset (T7), never a session exit; and `execute` returns right after the reset, so the step
 * after SHELL_RESET is always END. Every other step is one the real service is made to take.
 */
type Drive = { readonly snapshot: TerminalSnapshot; readonly path: readonly Step[] };
function drivablePaths(): Drive[] {
  const key = (d: Drive) => `${abstract(d.snapshot)}|${d.path.at(-1)?.event.type === 'SHELL_RESET'}`;
  const offered = (d: Drive): TerminalEvent[] => {
    if (d.path.at(-1)?.event.type === 'SHELL_RESET') return [{ type: 'END' }];
    const s = d.snapshot;
    return eventsIn(s).filter((e) => {
      const executing = s.matches('busy') && s.context.activity === 'execute';
      if (e.type === 'SESSION_EXIT') return !executing; // an exit during execute is a reset (T7)
      if (e.type === 'SHELL_RESET') return executing; // only execute replaces a shell
      return e !== closerFailed; // see notDrivable
    });
  };
  const [first] = [...model.states.values()];
  const seen = new Map<string, Drive>();
  const candidates: Drive[] = [];
  const queue: Drive[] = [{ snapshot: first!.snapshot, path: [] }];
  seen.set(key(queue[0]!), queue[0]!);
  const stepOf = (at: Drive, event: TerminalEvent): Drive | null => {
    const edges = takenEdges(terminalMachine, at.snapshot, event);
    if (edges.length === 0) return null; // ignored events are covered by the invariants above
    const [next] = transition(terminalMachine, at.snapshot, event);
    return { snapshot: next, path: [...at.path, { event, prev: at.snapshot, next, edges }] };
  };
  while (queue.length > 0) {
    const at = queue.shift()!;
    if (at.snapshot.status !== 'active') continue;
    for (const event of offered(at)) {
      const d = stepOf(at, event);
      if (d === null) continue;
      // Every step out of every state is a candidate (the BFS tree alone misses edges into seen states).
      candidates.push(d);
      if (!seen.has(key(d))) {
        seen.set(key(d), d);
        queue.push(d);
      }
    }
  }
  // A drive ends where the real terminal stays put: not mid-reset, not while its closer runs.
  const settle = (d: Drive): Drive => {
    if (d.path.at(-1)?.event.type === 'SHELL_RESET') return settle(stepOf(d, { type: 'END' })!);
    if (d.snapshot.matches('closing')) return stepOf(d, closerDone)!;
    return d;
  };
  const all = candidates.map(settle);
  // Greedy cover: every drivable abstract step (so every defined edge and every state), longest first.
  const stepKey = (s: Step) => `${abstract(s.prev)} ${nameOf(s.event)}`;
  // A drive ends where the real terminal stays put: not mid-reset, not while its closer runs.
  const chosen: Drive[] = [];
  const edges = new Set<string>();
  const states = new Set<string>();
  const steps = new Set<string>();
  for (const d of [...all].sort((a, b) => b.path.length - a.path.length)) {
    if (d.path.every((s) => steps.has(stepKey(s)))) continue;
    chosen.push(d);
    for (const s of d.path) {
      for (const e of s.edges) edges.add(e);
      states.add(abstract(s.next));
      steps.add(stepKey(s));
    }
  }
  expect(untaken(terminalMachine, edges, notDrivable), 'edges no real drive takes').toEqual([]);
  expect([...model.states.keys()].filter((k) => k !== abstract(first!.snapshot) && !states.has(k))).toEqual(
    [],
  );
  return chosen;
}

const nameOf = (e: TerminalEvent) =>
  e.type === 'BEGIN'
    ? `BEGIN(${e.activity})`
    : e.type.replace(/^xstate\.(done|error)\.actor\..*/, 'closer $1');

// Processes whose cwd is `dir`: every process of a terminal opened there (shell, sleep, a reset's new shell).
function processesIn(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readlinkSync(`/proc/${name}/cwd`) === dir) out.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

describe('machines/terminal driven for real (every edge, real snapshot = model snapshot at every step)', () => {
  let rt: Runtime;
  /** Every snapshot each terminal actor published, in order, by terminal id. */
  const history = new Map<string, string[]>();
  const waiters = new Set<() => void>();
  const inspect = (e: InspectionEvent) => {
    if (e.type !== '@xstate.snapshot') return;
    const s = e.snapshot as TerminalSnapshot;
    const ctx = s.context as Partial<TerminalSnapshot['context']> | undefined;
    if (ctx?.terminalId === undefined || !('resets' in ctx)) return;
    const list = history.get(ctx.terminalId) ?? [];
    if (list.at(-1) !== shown(s)) list.push(shown(s));
    history.set(ctx.terminalId, list);
    for (const w of waiters) w();
  };
  // Resolves when `ok()` holds, re-checked on every terminal snapshot; fails after 60 s with `why()`.
  const until = (ok: () => boolean, why: () => string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!ok()) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(why()));
      }, 60_000);
      waiters.add(check);
      check();
    });
  beforeAll(async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 }, inspect });
  });
  afterAll(async () => {
    await rt?.dispose();
  });

  // The command a BEGIN starts: it waits for the test to write what it does next into ./go.
  // It first marks ./started, so the test knows the input was written and runs (the send or
  // execute may first wait for a fresh shell's prompt: a CLOSE before the write would fail it
  // TERMINAL_CLOSED instead of ending it with the session).
  const gated = ': > started; until [ -s go ]; do sleep 0.05; done; c=$(cat go); rm -f go; eval "$c"';
  // Resolves once the gated command runs (or the call ended first: its result then fails the run).
  const running = async (dir: string, result: Promise<unknown>) => {
    let settled = false;
    void result.then(() => {
      settled = true;
    });
    while (!existsSync(join(dir, 'started')) && !settled) await sleep(20);
    rmSync(join(dir, 'started'), { force: true });
  };
  const runs = drivablePaths();
  it.each(runs.map((d) => [d.path.map((s) => nameOf(s.event)).join(' → '), d] as const))(
    'T2, T4, T5, T7: %s',
    async (_name, { path }) => {
      const owner = rt.owners.host().token;
      const dir = mkdtempSync(join(tmpdir(), 'tether-model-'));
      const go = (what: string) => writeFileSync(join(dir, 'go'), `${what}\n`);
      let id: string | undefined;
      try {
        const before = new Set(history.keys());
        let inFlight: { kind: 'send' | 'execute'; result: Promise<unknown> } | null = null;
        let closing: Promise<void> | null = null;
        const want = [shown(path[0]!.prev)];
        for (const [k, step] of path.entries()) {
          const { event, prev, next } = step;
          if (event.type === 'OPENED') {
            id = (await rt.terminals.open(owner, { cwd: dir })).id;
          } else if (event.type === 'OPEN_FAILED') {
            const code = await rt.terminals.open(owner, { cwd: join(dir, 'missing') }).then(
              () => 'opened',
              (e: TetherError) => e.code,
            );
            expect(code).toBe('CWD_NOT_FOUND');
            const fresh = [...history.keys()].filter((k) => !before.has(k));
            expect(fresh).toHaveLength(1);
            id = fresh[0];
          } else if (event.type === 'BEGIN') {
            const call =
              event.activity === 'send'
                ? // Only a proof or the session's end can end it: the silence budget is 10 minutes.
                  rt.terminals.send(owner, id!, `${gated}\n`, { settleMs: 600_000, timeoutMs: 600_000 })
                : rt.terminals.execute(owner, id!, gated);
            inFlight = {
              kind: event.activity,
              result: call.then(
                (r) => r,
                (e: unknown) => e,
              ),
            };
            const busy = await rt.terminals.send(owner, id!, 'x').catch((e: TetherError) => e.code);
            expect(busy).toBe('TERMINAL_BUSY'); // T2
            await running(dir, inFlight.result);
          } else if (event.type === 'END') {
            if (path[k - 1]?.event.type !== 'SHELL_RESET') go('true');
            const r = await inFlight!.result;
            if (inFlight!.kind === 'send')
              expect(r).toMatchObject({ waitReason: 'stdin_read' }); // T5, T6
            else if (path[k - 1]?.event.type === 'SHELL_RESET')
              // T7: what the shell printed as it ended (bash's own `exit`), its code, and the reset
              expect(r).toEqual({ output: 'exit\n', exitCode: 7, timedOut: false, shellReset: true });
            else expect(r).toEqual({ output: '', exitCode: 0, timedOut: false, shellReset: false });
            inFlight = null;
          } else if (event.type === 'SHELL_RESET') {
            go('exit 7'); // the shell ends inside execute: it is replaced (T7)
          } else if (event.type === 'CLOSE') {
            closing = rt.terminals.close(owner, id!);
          } else if (event.type === 'SESSION_EXIT') {
            if (prev.matches('busy')) go('exit 3');
            else process.kill((await rt.terminals.list(owner)).find((t) => t.id === id)!.pid, 'SIGKILL');
          } else if (event === closerDone) {
            await closing; // a close returns only once the tree is gone (T4)
            if (inFlight !== null) {
              const r = await inFlight.result;
              // A send ends with the session; an execute on a closed terminal fails, it is not reset.
              if (inFlight.kind === 'send') expect(r).toMatchObject({ waitReason: 'session_exit' });
              else expect(r).toMatchObject({ code: 'TERMINAL_CLOSED' });
              if (inFlight.kind === 'execute') expect(r).toBeInstanceOf(TetherError);
              inFlight = null;
            }
            await until(
              () => processesIn(dir).length === 0,
              () => `T4: processes left in ${dir}: ${processesIn(dir).join(', ')}`,
            );
          }
          if (want.at(-1) !== shown(next)) want.push(shown(next));
          const seen = () => history.get(id ?? '') ?? [];
          await until(
            () => seen().length >= want.length,
            () => `${event.type}: real ${JSON.stringify(seen())} ≠ model ${JSON.stringify(want)}`,
          );
          expect(seen().slice(0, want.length), `after ${event.type}`).toEqual(want);
        }
        expect(history.get(id!), 'no real transition beyond the model path').toEqual(want);
        if (inFlight !== null) {
          go('true');
          await inFlight.result;
        }
        if (closing === null) await rt.terminals.close(owner, id!).catch(() => undefined);
        expect(processesIn(dir)).toEqual([]);
      } finally {
        if (id !== undefined) await rt.terminals.close(owner, id).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
