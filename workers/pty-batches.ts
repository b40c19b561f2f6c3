/**
 * The PTY host's batch buffers, lent to a terminal only while it has bytes pending.
 *
 * Each terminal used to own a `batchBytes` buffer for its whole life: 1,000 idle terminals
 * held 64 MiB of this thread's malloc arena (P8, 2026-12-06), and since glibc keeps a freed
 * thread arena's touched pages, every runtime that came and went left a few more MiB resident.
 * An idle terminal holds none now; a busy one borrows one per batch, from a few spares.
 *
 * @example
 * ```ts
 * const batches = new BatchBuffers(64 * 1024, 8);
 * const batch = batches.take();
 * // … read into it, decode, post …
 * batches.give(batch);
 * ```
 */
export class BatchBuffers {
  readonly #spares: Buffer[] = [];

  constructor(
    readonly size: number,
    readonly maxSpares: number,
  ) {}

  /** A buffer of `size` bytes: a spare if one is kept, else a new one. */
  take(): Buffer {
    return this.#spares.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  /** Gives a taken buffer back; kept as a spare while fewer than `maxSpares` are. */
  give(buffer: Buffer): void {
    if (buffer.length === this.size && this.#spares.length < this.maxSpares) this.#spares.push(buffer);
  }
}
