/** What a hub routes: the final facts of something that ended, named by a unique `id`. */
export interface Completed {
  readonly id: string;
}

/** A completion listener; may be async. Its failures go to the service's error path. */
export type CompletionListener<T extends Completed> = (info: T) => void | Promise<void>;

/** A listener's registration; `dispose()` detaches it (idempotent). */
export interface CompletionSubscription extends Disposable {
  dispose(): void;
}

interface Subscriber<T extends Completed> {
  readonly ownerKey: string;
  readonly listener: CompletionListener<T>;
  /** Ids this subscriber was claimed for: the at-most-once ledger (J6, W1). */
  readonly claimed: Set<string>;
  active: boolean;
}

/**
 * Completion routing per owner (SPEC J6, S5, W1), shared by the job service (ended jobs)
 * and the terminal service (sessions that exited on their own).
 *
 * - Live: when something of an owner ends, every subscriber of that owner is claimed for it
 *   and called once.
 * - Replay (subscribe, then snapshot): a new subscriber first joins, then receives every
 *   ended item of its owner that no listener was ever called for (completions that fell into
 *   a gap with no subscriber, e.g. across a hot reload). Items already reported to a listener
 *   are not replayed, so a replacement router does not repeat notices.
 * - A claim is taken before the call, atomically (one thread), and never retried: a listener
 *   that throws or rejects is reported to `onError` once, other listeners still run, and the
 *   facts stay queryable.
 * - Calls happen on a later microtask, never inside a machine transition.
 *
 * @example
 * ```ts
 * const hub = new CompletionHub((error, info) => console.warn(info.id, error));
 * const sub = hub.subscribe('o1', (info) => notify(info), () => endedJobsOf('o1'));
 * hub.publish('o1', info); // notify(info) runs once
 * sub.dispose();
 * ```
 */
export class CompletionHub<T extends Completed> {
  readonly #onError: (error: unknown, info: T) => void;
  readonly #subscribers = new Set<Subscriber<T>>();
  /** Ids some listener was actually called for. */
  readonly #reported = new Set<string>();
  readonly #deliveries = new Set<Promise<void>>();

  constructor(onError: (error: unknown, info: T) => void) {
    this.#onError = onError;
  }

  /** Subscribed listeners. */
  get listeners(): number {
    return this.#subscribers.size;
  }

  /** Listener calls in flight. */
  get deliveries(): number {
    return this.#deliveries.size;
  }

  /** Joins first, then replays `ended()` items never reported to any listener. */
  subscribe(
    ownerKey: string,
    listener: CompletionListener<T>,
    ended: () => readonly T[],
  ): CompletionSubscription {
    const sub: Subscriber<T> = { ownerKey, listener, claimed: new Set(), active: true };
    this.#subscribers.add(sub);
    for (const info of ended()) {
      if (!this.#reported.has(info.id)) this.#deliver(sub, info);
    }
    const dispose = (): void => {
      sub.active = false;
      sub.claimed.clear();
      this.#subscribers.delete(sub);
    };
    return { dispose, [Symbol.dispose]: dispose };
  }

  /** Something of `ownerKey` ended: claim and call every subscriber of that owner. */
  publish(ownerKey: string, info: T): void {
    for (const sub of this.#subscribers) {
      if (sub.ownerKey === ownerKey) this.#deliver(sub, info);
    }
  }

  /** Detaches every subscriber (service disposal): nothing is delivered afterwards. */
  clear(): void {
    for (const sub of this.#subscribers) sub.active = false;
    this.#subscribers.clear();
  }

  /** The record behind `id` is gone: drop its claims. */
  forget(id: string): void {
    this.#reported.delete(id);
    for (const sub of this.#subscribers) sub.claimed.delete(id);
  }

  /** Resolves when no listener call is in flight. */
  async settle(): Promise<void> {
    while (this.#deliveries.size > 0) await Promise.allSettled([...this.#deliveries]);
  }

  // The error path must not become an unhandled rejection itself.
  #report(error: unknown, info: T): void {
    try {
      this.#onError(error, info);
    } catch {}
  }

  // Claims (sub, item) and schedules the one call; a disposed subscriber is skipped.
  #deliver(sub: Subscriber<T>, info: T): void {
    if (sub.claimed.has(info.id)) return;
    sub.claimed.add(info.id);
    const delivery = Promise.resolve()
      .then(() => {
        if (!sub.active) return;
        this.#reported.add(info.id);
        return sub.listener(info);
      })
      .then(
        () => {},
        (error: unknown) => this.#report(error, info),
      )
      .finally(() => {
        this.#deliveries.delete(delivery);
      });
    this.#deliveries.add(delivery);
  }
}
