import { setTimeout as sleep } from 'node:timers/promises';

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
   * passes first. `timeoutMs` 0 only looks.
   */
  async wait(settled: Promise<void>, isTerminal: () => boolean, timeoutMs: number): Promise<boolean> {
    if (isTerminal()) return true;
    if (timeoutMs === 0) return false;
    const controller = new AbortController();
    this.#waiters++;
    this.#timers++;
    const deadline = sleep(timeoutMs, false, { signal: controller.signal })
      .catch(() => false)
      .finally(() => {
        this.#timers--;
      });
    try {
      return await Promise.race([settled.then(() => true), deadline]);
    } finally {
      controller.abort();
      await deadline;
      this.#waiters--;
    }
  }
}
