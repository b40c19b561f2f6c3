/**
 * Lets a burst of calls through a slice at a time, one slice per turn of the event loop, in
 * call order (P5). An orchestrator that starts hundreds of jobs in one synchronous loop would
 * otherwise have every start's preparation (reservation, registration, spawn request) run in
 * that same turn; here the first `perTurn` go on at once and the rest wait for later turns,
 * so timers and I/O run between slices.
 *
 * Written here because no kept library does it: p-limit and p-queue bound concurrency, not
 * work per turn, and Node 20 has no `scheduler.yield`. Nothing outlives the queue: the one
 * `setImmediate` it arms re-arms only after a turn in which calls went through.
 *
 * @example
 * ```ts
 * const turns = new TurnSlices(16);
 * await turns.next(); // at once for the first 16 calls of a turn, later for the rest
 * ```
 */
export class TurnSlices {
  readonly #perTurn: number;
  readonly #waiting: Array<() => void> = [];
  #used = 0;
  #armed = false;

  constructor(perTurn: number) {
    this.#perTurn = perTurn;
  }

  /** Calls waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves in this turn while it has room and nobody waits, else in a later turn (FIFO). */
  next(): Promise<void> {
    this.#arm();
    if (this.#waiting.length === 0 && this.#used < this.#perTurn) {
      this.#used++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  // One immediate per turn in use: it opens the next turn's slice and lets its callers go.
  #arm(): void {
    if (this.#armed) return;
    this.#armed = true;
    setImmediate(() => {
      this.#armed = false;
      this.#used = 0;
      while (this.#used < this.#perTurn && this.#waiting.length > 0) {
        this.#used++;
        this.#waiting.shift()!();
      }
      // Armed again while this turn's slice is in use, so the next turn starts from zero.
      if (this.#used > 0) this.#arm();
    });
  }
}
