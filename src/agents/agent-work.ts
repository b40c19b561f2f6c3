import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The kinds of asynchronous work an agent publication hands out and teardown waits for (D1);
 * `reload` is the service's own (a hot reload's gap, S5).
 */
export type WorkKind = 'turn' | 'delivery' | 'error' | 'reload';

/** Service-wide counts of the deadline timers the trackers arm (D3). */
export interface WorkTimers {
  timers: number;
}

/**
 * The promises one agent publication has in flight, by kind, so teardown can wait for each
 * kind to settle (D1) and `stats()` can count them (D3). Tracking never changes a promise:
 * `track` returns it as is, and its rejection stays the caller's to handle.
 *
 * @example
 * ```ts
 * const work = new AgentWork({ timers: 0 });
 * await work.track('delivery', deliver(notice));
 * await work.settle('delivery');                      // nothing in flight any more
 * const settled = await work.settleWithin('turn', 5_000); // false: a turn outlived the deadline
 * ```
 */
export class AgentWork {
  readonly #live: Record<WorkKind, Set<Promise<unknown>>> = {
    turn: new Set(),
    delivery: new Set(),
    error: new Set(),
    reload: new Set(),
  };
  readonly #timers: WorkTimers;

  constructor(timers: WorkTimers) {
    this.#timers = timers;
  }

  /** Promises of `kind` not yet settled. */
  count(kind: WorkKind): number {
    return this.#live[kind].size;
  }

  /** Whether nothing of any kind is in flight. */
  get idle(): boolean {
    return Object.values(this.#live).every((set) => set.size === 0);
  }

  /** Counts `promise` under `kind` until it settles; returns it unchanged. */
  track<T>(kind: WorkKind, promise: Promise<T>): Promise<T> {
    const set = this.#live[kind];
    set.add(promise);
    const forget = (): void => {
      set.delete(promise);
    };
    promise.then(forget, forget);
    return promise;
  }

  /** Resolves when nothing of `kind` is in flight (work tracked meanwhile included). */
  async settle(kind: WorkKind): Promise<void> {
    const set = this.#live[kind];
    while (set.size > 0) await Promise.allSettled([...set]);
  }

  /** Like `settle`, but gives up after `ms`: `true` when everything settled in time. */
  async settleWithin(kind: WorkKind, ms: number): Promise<boolean> {
    if (this.count(kind) === 0) return true;
    const deadline = new AbortController();
    this.#timers.timers++;
    const expired = sleep(ms, undefined, { signal: deadline.signal })
      .catch(() => {}) // aborted: the work settled first
      .finally(() => {
        this.#timers.timers--;
      });
    try {
      return await Promise.race([this.settle(kind).then(() => true), expired.then(() => false)]);
    } finally {
      deadline.abort();
      await expired;
    }
  }
}
