/**
 * Waits for jobs to settle with a deadline, owning every timer it arms: each wait's timer is
 * cancelled and has settled before the wait returns, so a finished wait leaves nothing
 * behind (D3). The live counts are what `JobService.stats()` reports.
 *
 * @example
 * ```ts
 * const waiters = new JobWaiters();
 * const terminal = await waiters.wait(record.settled, () => isTerminal(record), 5_000);
 * waiters.waiters; // 0 again
 * ```
 */
export class JobWaiters {
  #waiters = 0;
  #timers = 0;
  // One reaction per settled promise, however many waits: a reader polling `wait` with a short
  // timeout on a long job would otherwise add a reaction to it per call, kept until the job
  // ends (issue 30.6). A timed-out wait takes its resolver out again.
  readonly #pending = new Map<Promise<void>, Set<() => void>>();

  /** Pending `wait` calls. */
  get waiters(): number {
    return this.#waiters;
  }

  /** Timers armed and not yet settled. */
  get timers(): number {
    return this.#timers;
  }

  /**
   * `true` once `settled` resolves (or at once when `isTerminal()`), `false` when `timeoutMs`
   * passes first. `timeoutMs` 0 only looks. The deadline is a plain timer cleared when the wait
   * ends: an aborted `timers/promises` sleep would build an AbortError (and its stack) per wait.
   */
  async wait(settled: Promise<void>, isTerminal: () => boolean, timeoutMs: number): Promise<boolean> {
    if (isTerminal()) return true;
    if (timeoutMs === 0) return false;
    this.#waiters++;
    this.#timers++;
    let timer: NodeJS.Timeout | undefined;
    let onSettled: (() => void) | undefined;
    try {
      return await new Promise<boolean>((resolve) => {
        onSettled = () => resolve(true);
        this.#whenSettled(settled).add(onSettled);
        timer = setTimeout(resolve, timeoutMs, false);
      });
    } finally {
      clearTimeout(timer);
      this.#timers--;
      if (onSettled) this.#pending.get(settled)?.delete(onSettled);
      this.#waiters--;
    }
  }

  // The resolvers waiting for `settled`, called once when it resolves.
  #whenSettled(settled: Promise<void>): Set<() => void> {
    let waiting = this.#pending.get(settled);
    if (waiting === undefined) {
      const created = new Set<() => void>();
      waiting = created;
      this.#pending.set(settled, created);
      void settled.then(() => {
        this.#pending.delete(settled);
        for (const resolve of created) resolve();
      });
    }
    return waiting;
  }
}
