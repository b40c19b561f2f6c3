import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { SpillTask, SpillTaskResult } from '../../workers/spill-worker.js';

/** What a finished spill is: a published path, or why nothing was published (C2). */
export type SpillOutcome = { readonly path: string } | { readonly error: string };

/**
 * One spill file being written. The main thread only copies bytes into a batch; the spill
 * worker does every open, write, rename (and fsync, when durable).
 *
 * @example
 * ```ts
 * const spill = pool.open();
 * stream.on('data', (chunk) => { if (!spill.write(chunk)) { stream.pause(); void spill.drained().then(() => stream.resume()); } });
 * stream.on('end', async () => { const outcome = await spill.finish(); if ('path' in outcome) publish(outcome.path); });
 * ```
 */
export interface SpillWriter {
  /**
   * Queue raw bytes (copied: the caller may reuse its buffer after return). Returns false when
   * in-flight bytes exceed the cap: pause the source and await drained(). After a write error,
   * finish() or abort(), bytes are dropped and the result is true.
   */
  write(chunk: Uint8Array): boolean;
  /** Resolves once in-flight bytes are back under the cap, or the writer failed or closed. */
  drained(): Promise<void>;
  /**
   * Flush, atomic rename (fsync first when the pool is `durable`); resolves { path } only when
   * every byte was written, else { error } (and the temp file is removed). Never rejects; calling it again returns the
   * same outcome.
   */
  finish(): Promise<SpillOutcome>;
  /** Discard: remove the temp file; never rejects. After finish() it only waits for it. */
  abort(): Promise<void>;
}

/** What a writer needs from its pool. */
export interface SpillContext {
  /** Absolute directory of the spill files. */
  readonly dir: string;
  readonly batchBytes: number;
  readonly maxInFlightBytes: number;
  /** fsync the file and its directory before the rename is published (`spill: { durable: true }`). */
  readonly durable: boolean;
  /** Runs one task on the pool; never rejects (a task that could not run is `{ ok: false }`). */
  readonly run: (task: SpillTask) => Promise<SpillTaskResult>;
  /** A batch buffer of `batchBytes` (recycled; its old contents are overwritten). */
  readonly takeBuffer: () => SharedArrayBuffer;
  /** A batch buffer no task uses any more. */
  readonly recycleBuffer: (buffer: SharedArrayBuffer) => void;
  /** Called once, when the writer's outcome is settled. */
  readonly onSettled: (writer: SpillFileWriter) => void;
}

/**
 * One spill file (C2): the main thread copies bytes into batches; each full batch moves to the
 * pool as one task. The outcome is decided once, by finish() or close().
 *
 * @example
 * ```ts
 * const writer = new SpillFileWriter(context); // normally through SpillPool.open()
 * writer.write(bytes);
 * await writer.finish();
 * ```
 */
export class SpillFileWriter implements SpillWriter {
  readonly #ctx: SpillContext;
  readonly #temp: string;
  readonly #final: string;
  readonly #ready: Promise<SpillTaskResult>;
  readonly #pending = new Set<Promise<void>>();
  #batch: Uint8Array<SharedArrayBuffer> | null = null;
  #batchUsed = 0;
  #position = 0;
  #inFlight = 0;
  #error: string | null = null;
  #closing: Promise<SpillOutcome> | null = null;
  #drain: { promise: Promise<void>; resolve: () => void } | null = null;

  constructor(ctx: SpillContext) {
    const id = randomBytes(12).toString('hex');
    this.#ctx = ctx;
    this.#temp = join(ctx.dir, `.${id}.spill.tmp`);
    this.#final = join(ctx.dir, `${id}.log`);
    this.#ready = ctx.run({ op: 'create', dir: ctx.dir, temp: this.#temp }).then((r) => {
      if (!r.ok) this.#fail(r.error);
      return r;
    });
  }

  write(chunk: Uint8Array): boolean {
    if (this.#closing || this.#error !== null) return true;
    this.#inFlight += chunk.length;
    const { batchBytes } = this.#ctx;
    for (let offset = 0; offset < chunk.length; ) {
      this.#batch ??= new Uint8Array(this.#ctx.takeBuffer());
      const n = Math.min(chunk.length - offset, batchBytes - this.#batchUsed);
      this.#batch.set(chunk.subarray(offset, offset + n), this.#batchUsed);
      this.#batchUsed += n;
      offset += n;
      if (this.#batchUsed === batchBytes) this.#flush();
    }
    return this.#inFlight <= this.#ctx.maxInFlightBytes;
  }

  drained(): Promise<void> {
    if (!this.#mustWait()) return Promise.resolve();
    if (!this.#drain) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.#drain = { promise, resolve };
    }
    return this.#drain.promise;
  }

  finish(): Promise<SpillOutcome> {
    this.#closing ??= this.#settle(async () => {
      this.#flush();
      this.#releaseDrain();
      await this.#quiesce();
      if (this.#error === null) {
        const committed = await this.#ctx.run({
          op: 'commit',
          dir: this.#ctx.dir,
          temp: this.#temp,
          final: this.#final,
          durable: this.#ctx.durable,
        });
        if (!committed.ok) this.#fail(committed.error);
      }
      if (this.#error === null) return { path: this.#final };
      await this.#ctx.run({ op: 'remove', temp: this.#temp });
      return { error: this.#error };
    });
    return this.#closing;
  }

  async abort(): Promise<void> {
    await this.close('the spill was aborted');
  }

  /** Discards unless finish() already started; resolves when the outcome is settled. */
  close(reason: string): Promise<SpillOutcome> {
    this.#closing ??= this.#settle(async () => {
      this.#fail(reason);
      if (this.#batch) this.#ctx.recycleBuffer(this.#batch.buffer);
      this.#batch = null;
      this.#batchUsed = 0;
      await this.#quiesce();
      await this.#ctx.run({ op: 'remove', temp: this.#temp });
      return { error: reason };
    });
    return this.#closing;
  }

  // Sends the current batch: the worker reads it where it is (shared memory, no copy, no
  // per-chunk message), and it is reused once the write is done. Shared rather than transferred:
  // a transferred buffer comes back as a new ArrayBuffer each time, and that churn alone makes
  // V8 collect (P2, BENCHMARKS.md).
  #flush(): void {
    const batch = this.#batch;
    const length = this.#batchUsed;
    if (!batch || length === 0) return;
    const position = this.#position;
    this.#position += length;
    this.#batch = null;
    this.#batchUsed = 0;
    const data = batch.buffer;
    const done = this.#ready
      .then((created) => {
        // After a failure or an abort the bytes are not worth writing.
        if (!created.ok || this.#error !== null) return created;
        return this.#ctx.run({ op: 'write', temp: this.#temp, data, length, position });
      })
      .then((written) => {
        if (!written.ok) this.#fail(written.error);
        this.#ctx.recycleBuffer(data);
        this.#inFlight -= length;
        if (!this.#mustWait()) this.#releaseDrain();
      });
    this.#pending.add(done);
    void done.then(() => this.#pending.delete(done));
  }

  // Waits until the temp file exists (or failed) and no write task is outstanding.
  async #quiesce(): Promise<void> {
    await this.#ready;
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  #mustWait(): boolean {
    return this.#closing === null && this.#error === null && this.#inFlight > this.#ctx.maxInFlightBytes;
  }

  // The first error wins; it is what finish() reports. Paused sources may resume: bytes drop.
  #fail(error: string): void {
    this.#error ??= error;
    this.#releaseDrain();
  }

  #releaseDrain(): void {
    this.#drain?.resolve();
    this.#drain = null;
  }

  // Runs the closing step once; a bug inside it still yields an outcome, never a rejection.
  async #settle(step: () => Promise<SpillOutcome>): Promise<SpillOutcome> {
    try {
      return await step();
    } catch (err) {
      return { error: `spill failed: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      this.#ctx.onSettled(this);
    }
  }
}
