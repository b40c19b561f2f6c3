import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { type DrawnState, drawMachines } from '../../src/mirror/machine-graphs.js';

const drawn = drawMachines();
const machine = (name: string) => drawn.find((m) => m.machine === name)!;

// Whether a point lies on or inside a state's box (2 px of slack for dagre's rounding).
function within(state: DrawnState, p: { readonly x: number; readonly y: number }): boolean {
  return Math.abs(p.x - state.x) <= state.width / 2 + 2 && Math.abs(p.y - state.y) <= state.height / 2 + 2;
}

describe('machine-graphs', () => {
  it('V2 (issue 33.6): a machine without states (one that only keeps children) is one box listing the events it handles', () => {
    const keeper = setup({ actions: { keep: () => {} } }).createMachine({
      id: 'keeper',
      on: { ADD: { actions: 'keep' }, 'xstate.done.actor.*': { actions: 'keep' } },
    });
    const [drawnKeeper] = drawMachines([keeper]);
    expect(drawnKeeper!.width).toBeGreaterThan(0);
    expect(drawnKeeper!.height).toBeGreaterThan(0);
    expect(drawnKeeper!.states).toHaveLength(1);
    expect(drawnKeeper!.states[0]).toMatchObject({
      id: 'keeper',
      label: 'keeper',
      events: ['ADD', 'xstate.done.actor.*'],
    });
  });

  it('V2 (issue 33.6): a self transition is listed in its state, never routed as a line that ends nowhere', () => {
    for (const m of drawn) {
      const states = new Map(m.states.map((s) => [s.id, s]));
      for (const t of m.transitions) {
        expect(t.from, `${m.machine}: ${t.event}`).not.toBe(t.to);
        // Every line starts on its source's box and ends on its target's (a compound state's
        // line may start on the child it is anchored on, inside the compound's box).
        expect(within(states.get(t.from)!, t.points[0]!), `${m.machine}: ${t.event} starts`).toBe(true);
        expect(within(states.get(t.to)!, t.points.at(-1)!), `${m.machine}: ${t.event} ends`).toBe(true);
        expect(t.events.length).toBeGreaterThan(0);
      }
    }
    expect(machine('terminal').states.find((s) => s.id === 'terminal.busy')?.events).toEqual(['SHELL_RESET']);
    expect(machine('agent').states.find((s) => s.id === 'agent.running')?.events).toEqual(
      expect.arrayContaining(['SAY', 'NOTICE', 'CLAIM']),
    );
    // The root's own transitions hold in every state: said once, beside the machine's name.
    expect(machine('jobs').everywhere).toEqual(['RELEASE', 'REGISTER', 'FORGET', 'JOB_ENDED']);
  });

  it('V2: parallel transitions between the same two states share one line, one label line per event', () => {
    const job = machine('job');
    const toKilled = job.transitions.filter((t) => t.from === 'job.running' && t.to === 'job.killed');
    expect(toKilled).toHaveLength(1);
    expect(toKilled[0]!.events).toEqual(['xstate.done.actor.producer', 'xstate.error.actor.producer']);
  });
});
