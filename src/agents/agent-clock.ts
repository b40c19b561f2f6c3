/**
 * The timer interface an XState actor system schedules delayed events on (the shape of
 * xstate's `Clock`, which the package does not export). `SimulatedClock` implements it.
 */
export interface Clock {
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** An XState clock that knows how many of its timers are armed (D3). */
export interface CountingClock extends Clock {
  /** Timers set and neither fired nor cleared. */
  readonly live: number;
}

const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};

/**
 * Wraps `base` (default: the real timers) so every delayed event of the actor system is
 * counted while it is armed: named delays such as the router's `quietWindow` go through
 * the system clock, so `live` is the agent system's timer count.
 *
 * @example
 * ```ts
 * const clock = countingClock();
 * createActor(root, { clock }).start();
 * clock.live; // 0 once every quiet window fired or was cancelled
 * ```
 */
export function countingClock(base: Clock = realClock): CountingClock {
  const armed = new Set<unknown>();
  return {
    get live() {
      return armed.size;
    },
    setTimeout(fn, ms) {
      const id = base.setTimeout((...args: unknown[]) => {
        armed.delete(id);
        fn(...args);
      }, ms);
      armed.add(id);
      return id;
    },
    clearTimeout(id) {
      armed.delete(id);
      base.clearTimeout(id);
    },
  };
}
