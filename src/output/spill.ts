import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Piscina } from 'piscina';
import type { SpillTask, SpillTaskResult } from '../../workers/spill-worker.js';
import { assertArgument, TetherError } from '../errors.js';
import { workerUrl } from '../worker-url.js';

/** What a finished spill is: a published path, or why nothing was published (C2). */
export type SpillOutcome = { readonly path: string } | { readonly error: string };

/**
 * One spill file being written. The main thread only copies bytes into a batch; the spill
 * worker does every open, write, fsync and rename.
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
   * Flush, fsync, atomic rename; resolves { path } only when every byte was written and synced,
   * else { error } (and the temp file is removed). Never rejects; calling it again returns the
   * same outcome.
   */
  finish(): Promise<SpillOutcome>;
  /** Discard: remove the temp file; never rejects. After finish() it only waits for it. */
  abort(): Promise<void>;
}

/** A pool of spill threads shared by every writer of a runtime. */
export interface SpillPool {
  open(): SpillWriter;
  /** Aborts unfinished writers, waits for in-flight tasks, then ends every thread. Idempotent. */
  destroy(): Promise<void>;
  /** Worker threads alive right now (0 when idle long enough, and after destroy()). */
  readonly threads: number;
}

export interface SpillPoolOptions {
  /** Where spill files go; created (mkdir -p) by the worker on first use. */
  readonly dir: string;
  /** Default 1. */
  readonly maxThreads?: number;
  /** Bytes copied together before one message to the worker. Default 1 MiB. */
  readonly batchBytes?: number;
  /** Per writer; write() returns false above it. Default 8 MiB (never below batchBytes). */
  readonly maxInFlightBytes?: number;
  /** How long an idle worker thread lives. Default 5 s. */
  readonly idleTimeoutMs?: number;
}

type Limits = { readonly batchBytes: number; readonly maxInFlightBytes: number };
type Run = (task: SpillTask, transferList?: ArrayBuffer[]) => Promise<SpillTaskResult>;

/**
 * Starts a spill pool (C2). No thread starts until the first spill.
 *
 * @example
 * ```ts
 * const pool = createSpillPool({ dir: '/tmp/tether-spill' });
 * const spill = pool.open();
 * spill.write(bytes);
 * const outcome = await spill.finish(); // { path: '/tmp/tether-spill/3f9c….log' } or { error: 'ENOSPC: …' }
 * await pool.destroy();
 * ```
 */
export function createSpillPool(opts: SpillPoolOptions): SpillPool {
  const { dir, maxThreads = 1, batchBytes = 1 << 20, maxInFlightBytes = 8 << 20, idleTimeoutMs = 5000 } = opts;
  assertArgument(typeof dir === 'string' && dir !== '', 'spill dir must be a non-empty path');
  for (const [name, value] of Object.entries({ maxThreads, batchBytes, maxInFlightBytes })) {
    assertArgument(Number.isSafeInteger(value) && value > 0, `spill ${name} must be a positive integer`);
  }
  const absDir = resolve(dir);
  const piscina = new Piscina<SpillTask, SpillTaskResult>({
    filename: workerUrl('spill-worker').href,
    minThreads: 0,
    maxThreads,
    idleTimeout: idleTimeoutMs,
  });
  // A task that could not run (pool torn down, thread crashed) is a failed task, not a rejection.
  const run: Run = (task, transferList) =>
    piscina.run(task, transferList ? { transferList } : {}).catch((err: unknown) => ({
      ok: false as const,
      error: `spill worker failed: ${err instanceof Error ? err.message : String(err)}`,
    }));
  const limits = { batchBytes, maxInFlightBytes: Math.max(maxInFlightBytes, batchBytes) };
  const writers = new Set<Writer>();
  let destroying: Promise<void> | null = null;

  return {
    open() {
      if (destroying) throw new TetherError('RUNTIME_DISPOSED', 'the spill pool was destroyed; open a new one');
      const writer = new Writer(absDir, run, limits, (w) => writers.delete(w));
      writers.add(writer);
      return writer;
    },
    destroy() {
      destroying ??= (async () => {
        await Promise.all([...writers].map((w) => w.close('the spill pool was destroyed')));
        await piscina.destroy();
      })();
      return destroying;
    },
    get threads() {
      return piscina.threads.length;
    },
  };
}

// One spill file: batches in the main thread, tasks in the pool, outcome decided once.
class Writer implements SpillWriter {
  readonly #dir: string;
  readonly #temp: string;
  readonly #final: string;
  readonly #run: Run;
  readonly #limits: Limits;
  readonly #onSettled: (w: Writer) => void;
  readonly #ready: Promise<SpillTaskResult>;
  readonly #pending = new Set<Promise<void>>();
  #batch: Uint8Array<ArrayBuffer> | null = null;
  #batchUsed = 0;
  #position = 0;
  #inFlight = 0;
  #error: string | null = null;
  #closing: Promise<SpillOutcome> | null = null;
  #drain: { promise: Promise<void>; resolve: () => void } | null = null;

  constructor(dir: string, run: Run, limits: Limits, onSettled: (w: Writer) => void) {
    const id = randomBytes(12).toString('hex');
    this.#dir = dir;
    this.#temp = join(dir, `.${id}.spill.tmp`);
    this.#final = join(dir, `${id}.log`);
    this.#run = run;
    this.#limits = limits;
    this.#onSettled = onSettled;
    this.#ready = run({ op: 'create', dir, temp: this.#temp }).then((r) => {
      if (!r.ok) this.#fail(r.error);
      return r;
    });
  }

  write(chunk: Uint8Array): boolean {
    if (this.#closing || this.#error !== null) return true;
    this.#inFlight += chunk.length;
    const { batchBytes } = this.#limits;
    for (let offset = 0; offset < chunk.length; ) {
      this.#batch ??= new Uint8Array(batchBytes);
      const n = Math.min(chunk.length - offset, batchBytes - this.#batchUsed);
      this.#batch.set(chunk.subarray(offset, offset + n), this.#batchUsed);
      this.#batchUsed += n;
      offset += n;
      if (this.#batchUsed === batchBytes) this.#flush();
    }
    return this.#inFlight <= this.#limits.maxInFlightBytes;
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
        const committed = await this.#run({ op: 'commit', dir: this.#dir, temp: this.#temp, final: this.#final });
        if (!committed.ok) this.#fail(committed.error);
      }
      if (this.#error === null) return { path: this.#final };
      await this.#run({ op: 'remove', temp: this.#temp });
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
      this.#batch = null;
      this.#batchUsed = 0;
      await this.#quiesce();
      await this.#run({ op: 'remove', temp: this.#temp });
      return { error: reason };
    });
    return this.#closing;
  }

  // Sends the current batch; its ArrayBuffer moves to the worker (no copy, no per-chunk message).
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
        return this.#run({ op: 'write', temp: this.#temp, data, length, position }, [data]);
      })
      .then((written) => {
        if (!written.ok) this.#fail(written.error);
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
    return this.#closing === null && this.#error === null && this.#inFlight > this.#limits.maxInFlightBytes;
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
      this.#onSettled(this);
    }
  }
}
