/**
 * A budget of work per turn of the event loop, shared by everyone who spends from it (issue
 * 30.6). libuv reads a ready pipe up to 32 times in one callback and serves every ready pipe in
 * the same poll phase, so 64 floods handed the main thread 100+ MB to copy between two timers;
 * a reader that spends past the budget stops until the next turn (`later`), and the turn ends.
 * What waits goes on in call order, a slice per turn (as much as its costs fit, at least one).
 *
 * The same budget, counted in calls, lets a burst through a slice per turn (`take`, P5): an
 * orchestrator that starts hundreds of jobs in one synchronous loop would otherwise have every
 * start's preparation run in that one turn.
 *
 * Written here because no kept library does it: p-limit and p-queue bound concurrency, not work
 * per turn, and Node 20 has no `scheduler.yield`. One `setImmediate` at most is armed, and only
 * while the turn's budget is in use or someone waits.
 *
 * @example
 * ```ts
 * const budget = new TurnBudget(1_048_576);
 * if (!budget.spend(bytes.length)) { socket.pause(); budget.later(() => socket.resume()); }
 * const starts = new TurnBudget(16);
 * await starts.take(); // at once for the first 16 calls of a turn, later for the rest
 * ```
 */
export class TurnBudget {
  readonly perTurn: number;
  readonly #waiting: Array<{ readonly resume: () => void; readonly cost: number }> = [];
  #used = 0;
  #armed = false;

  constructor(perTurn: number) {
    this.perTurn = perTurn;
  }

  /** Callers waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Whether this turn's budget still has room (nothing was spent past it). */
  get hasRoom(): boolean {
    return this.#used < this.perTurn;
  }

  /** Counts `units` of work done in this turn; false once the turn's budget is spent. */
  spend(units: number): boolean {
    this.#used += units;
    this.#arm();
    return this.#used < this.perTurn;
  }

  /**
   * Runs `resume` at the start of a later turn, in FIFO order with the other waiters. `cost` is
   * what it will spend then (charged when it goes on): a turn lets waiters go while their costs
   * fit its budget, and always at least one, so 64 paused pipes resume a slice per turn rather
   * than all in the same poll phase.
   */
  later(resume: () => void, cost = 0): void {
    this.#waiting.push({ resume, cost });
    this.#arm();
  }

  /** Resolves in the next turn. */
  nextTurn(): Promise<void> {
    return new Promise((resolve) => this.later(resolve));
  }

  /**
   * Resolves in this turn while it has room for `cost` more and nobody waits (spending it),
   * else in a later turn, in call order (`later`).
   */
  take(cost = 1): Promise<void> {
    if (this.#waiting.length === 0 && this.#used + cost <= this.perTurn) {
      this.spend(cost);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.later(resolve, cost));
  }

  // The immediate that ends a turn: its budget starts from zero and its waiters go on.
  #arm(): void {
    if (this.#armed) return;
    this.#armed = true;
    setImmediate(() => {
      this.#armed = false;
      this.#used = 0;
      let go = 0;
      for (let used = 0; go < this.#waiting.length; go++) {
        const { cost } = this.#waiting[go]!;
        if (go > 0 && used + cost > this.perTurn) break;
        used += cost;
      }
      const going = this.#waiting.splice(0, go);
      this.#used = going.reduce((n, w) => n + w.cost, 0);
      for (const { resume } of going) resume();
      // Armed again while this turn's budget is in use, so the next turn starts from zero.
      if (this.#waiting.length > 0 || this.#used > 0) this.#arm();
    });
  }
}
