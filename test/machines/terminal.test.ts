import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventFromLogic, type SnapshotFrom, transition } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { terminalMachine } from '../../machines/terminal.js';
import { createRuntime, type Runtime, type TerminalInfo, type TetherError } from '../../src/index.js';
import { actorDone } from '../support/actor-events.js';

type TerminalSnapshot = SnapshotFrom<typeof terminalMachine>;
type TerminalEvent = EventFromLogic<typeof terminalMachine>;

const closerDone = actorDone<TerminalEvent>('0.terminal.closing');
const events: TerminalEvent[] = [
  { type: 'OPENED' },
  { type: 'OPEN_FAILED' },
  { type: 'BEGIN', activity: 'send' },
  { type: 'BEGIN', activity: 'execute' },
  { type: 'END' },
  { type: 'SHELL_RESET' },
  { type: 'CLOSE' },
  { type: 'SESSION_EXIT' },
  closerDone,
];
const traversal = {
  input: { terminalId: 'term_x', ownerKey: 'o1' },
  events,
  filterEvents: (s: TerminalSnapshot) => s.status === 'active',
  // `resets` counts without bound; the lifecycle does not depend on it.
  serializeState: (s: TerminalSnapshot) =>
    JSON.stringify([
      s.value,
      s.status,
      s.context.activity,
      s.context.endReason,
      Math.min(s.context.resets, 1),
    ]),
};

// Invariants of every reachable terminal snapshot (T2, T4).
function checkInvariants(s: TerminalSnapshot): void {
  expect(s.status === 'done').toBe(s.matches('closed'));
  expect(s.context.activity !== null).toBe(s.matches('busy'));
  expect(s.context.endReason !== null).toBe(s.matches('closing') || s.matches('closed'));
  // Nothing but the outcome of the open is accepted while opening.
  if (s.matches('opening')) {
    for (const e of events.filter((e) => e.type !== 'OPENED' && e.type !== 'OPEN_FAILED')) {
      expect(s.can(e)).toBe(false);
    }
  }
  // T2: a second send or execute is never accepted while one is in flight.
  if (s.matches('busy')) {
    expect(s.can({ type: 'BEGIN', activity: 'send' })).toBe(false);
    expect(s.can({ type: 'BEGIN', activity: 'execute' })).toBe(false);
  }
  // Once ending, nothing brings the terminal back.
  if (s.context.endReason !== null) {
    for (const e of events.filter((e) => e.type !== closerDone.type)) {
      const [next] = transition(terminalMachine, s, e);
      expect(next.value).toEqual(s.value);
    }
  }
}

describe('machines/terminal', () => {
  it('T2, T4: every state on every simple path satisfies the lifecycle invariants', () => {
    const paths = getSimplePaths(terminalMachine, traversal);
    expect(paths.length).toBeGreaterThanOrEqual(6);
    for (const path of paths) for (const step of path.steps) checkInvariants(step.state);
  });

  describe('driven for real along every shortest path', () => {
    let rt: Runtime;
    beforeAll(async () => {
      rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    });
    afterAll(async () => {
      await rt.dispose();
    });

    const paths = getShortestPaths(terminalMachine, traversal);
    it.each(paths.map((p) => [p.steps.map((s) => s.event.type).join(' → ') || '(start)', p] as const))(
      'T2, T4: %s',
      async (_name, path) => {
        const owner = rt.owners.host().token;
        if (path.steps.some((step) => step.event.type === 'OPEN_FAILED')) {
          const failed = await rt.terminals
            .open(owner, { cwd: '/no/such/dir' })
            .catch((e: TetherError) => e.code);
          expect(failed).toBe('CWD_NOT_FOUND');
          expect(await rt.terminals.list(owner)).toEqual([]);
          return;
        }
        const t = await rt.terminals.open(owner);
        let inFlight: Promise<unknown> | null = null;
        for (const { event } of path.steps) {
          if (event.type === 'OPENED') {
            // open() above returned: the terminal is open.
          } else if (event.type === 'BEGIN') {
            // A send that stays in flight: the silence budget is long and output keeps coming.
            const started =
              event.activity === 'send'
                ? rt.terminals.send(owner, t.id, 'for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done\n', {
                    settleMs: 5_000,
                    timeoutMs: 30_000,
                  })
                : rt.terminals.execute(owner, t.id, 'sleep 0.5');
            inFlight = started.catch(() => undefined);
            const busy = await rt.terminals.send(owner, t.id, 'x').catch((e: TetherError) => e.code);
            expect(busy).toBe('TERMINAL_BUSY');
          } else if (event.type === 'END') {
            await inFlight;
          } else if (event.type === 'SHELL_RESET') {
            // Only reachable while busy: the busy execute's shell dies and is replaced.
          } else if (event.type === 'CLOSE') {
            await rt.terminals.close(owner, t.id);
          } else if (event.type === 'SESSION_EXIT') {
            await rt.terminals.execute(owner, t.id, 'true').catch(() => undefined);
            await rt.terminals.send(owner, t.id, 'exit\n', { settleMs: 5_000 }).catch(() => undefined);
          }
        }
        await inFlight;
        const state = path.state.value as string;
        const list: TerminalInfo[] = await rt.terminals.list(owner);
        if (state === 'closed' || state === 'closing') {
          await rt.terminals.close(owner, t.id);
          expect(await rt.terminals.list(owner)).toEqual([]);
        } else {
          expect(list.map((i) => i.state)).toEqual(['idle']);
          await rt.terminals.close(owner, t.id);
        }
      },
    );
  });
});
