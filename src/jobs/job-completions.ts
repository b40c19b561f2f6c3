import type { JobInfo, JobSubscription } from './job-types.js';

/** A completion listener; may be async. Its failures go to the service's error path. */
export type CompletionListener = (info: JobInfo) => void | Promise<void>;

interface Subscriber {
  readonly ownerKey: string;
  readonly listener: CompletionListener;
  /** Jobs this subscriber was claimed for: the at-most-once ledger (J6). */
  readonly claimed: Set<string>;
  active: boolean;
}

/**
 * Completion routing for the job service (SPEC J6, S5, W1).
 *
 * - Live: when a job ends, every subscriber of its owner is claimed for it and called once.
 * - Replay (subscribe, then snapshot): a new subscriber first joins, then receives every
 *   ended job of its owner that no listener was ever called for (completions that fell into
 *   a gap with no subscriber, e.g. across a hot reload). Jobs already reported to a listener
 *   are not replayed, so a replacement router does not repeat notices.
 * - A claim is taken before the call, atomically (one thread), and never retried: a listener
 *   that throws or rejects is reported to `onError` once, other listeners still run, and the
 *   job's facts stay queryable.
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
export class CompletionHub {
  readonly #onError: (error: unknown, info: JobInfo) => void;
  readonly #subscribers = new Set<Subscriber>();
  /** Jobs some listener was actually called for. */
  readonly #reported = new Set<string>();
  readonly #deliveries = new Set<Promise<void>>();

  constructor(onError: (error: unknown, info: JobInfo) => void) {
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

  /** Joins first, then replays `ended()` jobs never reported to any listener. */
  subscribe(
    ownerKey: string,
    listener: CompletionListener,
    ended: () => readonly JobInfo[],
  ): JobSubscription {
    const sub: Subscriber = { ownerKey, listener, claimed: new Set(), active: true };
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

  /** A job of `ownerKey` ended: claim and call every subscriber of that owner. */
  publish(ownerKey: string, info: JobInfo): void {
    for (const sub of this.#subscribers) {
      if (sub.ownerKey === ownerKey) this.#deliver(sub, info);
    }
  }

  /** Detaches every subscriber (service disposal): nothing is delivered afterwards. */
  clear(): void {
    for (const sub of this.#subscribers) sub.active = false;
    this.#subscribers.clear();
  }

  /** The job's record is gone: drop its claims. */
  forget(jobId: string): void {
    this.#reported.delete(jobId);
    for (const sub of this.#subscribers) sub.claimed.delete(jobId);
  }

  /** Resolves when no listener call is in flight. */
  async settle(): Promise<void> {
    while (this.#deliveries.size > 0) await Promise.allSettled([...this.#deliveries]);
  }

  // The error path must not become an unhandled rejection itself.
  #report(error: unknown, info: JobInfo): void {
    try {
      this.#onError(error, info);
    } catch {}
  }

  // Claims (sub, job) and schedules the one call; a disposed subscriber is skipped.
  #deliver(sub: Subscriber, info: JobInfo): void {
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
