/**
 * The `start` calls between their capacity reservation and their registration, per owner.
 * A drain must wait for these too, or a job registered mid-drain would escape it (J8, C3).
 *
 * @example
 * ```ts
 * const starts = new StartsInFlight();
 * const record = await starts.track('o1', register('o1', spec));
 * while (await starts.settle('o1')) {} // nothing in flight for o1 any more
 * ```
 */
export class StartsInFlight {
  readonly #byOwner = new Map<string, Set<Promise<unknown>>>();

  /** Starts in flight, all owners. */
  get count(): number {
    let n = 0;
    for (const set of this.#byOwner.values()) n += set.size;
    return n;
  }

  /** Owner keys with a start in flight. */
  owners(): string[] {
    return [...this.#byOwner.keys()];
  }

  /** Tracks `registration` under `ownerKey` until it settles; returns its result. */
  async track<T>(ownerKey: string, registration: Promise<T>): Promise<T> {
    const set = this.#byOwner.get(ownerKey) ?? new Set();
    this.#byOwner.set(ownerKey, set.add(registration));
    try {
      return await registration;
    } finally {
      set.delete(registration);
      if (set.size === 0) this.#byOwner.delete(ownerKey);
    }
  }

  /** Waits for the owner's starts in flight; `false` at once when there were none. */
  async settle(ownerKey: string): Promise<boolean> {
    const set = this.#byOwner.get(ownerKey);
    if (set === undefined || set.size === 0) return false;
    await Promise.allSettled([...set]);
    return true;
  }
}
