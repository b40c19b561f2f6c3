import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Counts the timers terminal sends and executes arm (their deadlines, silence checks and
 * interrupt graces), so `rt.stats().timers` sees them (D3). A cancellable sleep, counted from
 * the moment it is armed until it fired or was aborted.
 *
 * @example
 * ```ts
 * const timers = new TimerCount();
 * await timers.sleep(10, undefined, { signal });
 * timers.live; // 0 again
 * ```
 */
export class TimerCount {
  #live = 0;

  /** Timers armed and not yet fired or aborted. */
  get live(): number {
    return this.#live;
  }

  /** `timers/promises` `setTimeout`, counted while armed. */
  sleep<T>(ms: number, value: T, options: { signal?: AbortSignal } = {}): Promise<T> {
    this.#live++;
    return sleep(ms, value, options).finally(() => {
      this.#live--;
    });
  }
}
