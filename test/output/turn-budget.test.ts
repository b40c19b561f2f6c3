import { setImmediate as nextImmediate } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { TurnBudget } from '../../src/output/turn-budget.js';

describe('TurnBudget', () => {
  it('issue 30.6: spending past the budget ends the turn; the next turn starts from zero', async () => {
    const budget = new TurnBudget(100);
    expect(budget.spend(60)).toBe(true);
    expect(budget.hasRoom).toBe(true);
    expect(budget.spend(60)).toBe(false);
    expect(budget.hasRoom).toBe(false);
    await budget.nextTurn();
    expect(budget.hasRoom).toBe(true);
    expect(budget.waiting).toBe(0);
  });

  it('issue 30.6: waiters go on in call order, as many per turn as their costs fit, at least one', async () => {
    const budget = new TurnBudget(100);
    const order: string[] = [];
    budget.spend(100); // this turn is spent
    for (const name of ['a', 'b', 'c', 'd', 'e']) budget.later(() => order.push(name), 40);
    budget.later(() => order.push('big'), 500);
    const turns: string[][] = [];
    for (let i = 0; i < 6; i++) {
      await nextImmediate(); // after the budget's immediate of this turn
      turns.push(order.splice(0));
    }
    // 40 + 40 fit in 100, a third does not; the 500 one goes alone (at least one per turn).
    expect(turns.filter((t) => t.length > 0)).toEqual([['a', 'b'], ['c', 'd'], ['e'], ['big']]);
    expect(budget.waiting).toBe(0);
  });
});
