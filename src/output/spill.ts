import { resolve } from 'node:path';
import { Piscina } from 'piscina';
import type { SpillTask, SpillTaskResult } from '../../workers/spill-worker.js';
import { assertArgument, TetherError } from '../errors.js';
import { workerExecArgv } from '../worker-exec-argv.js';
import { workerUrl } from '../worker-url.js';
import { type SpillContext, SpillFileWriter, type SpillWriter } from './spill-writer.js';

export type { SpillOutcome, SpillWriter } from './spill-writer.js';

/** A pool of spill threads shared by every writer of a runtime (C2). */
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
  /**
   * fsync each spill and its directory before publishing it (survives an OS crash or power
   * loss). Default false: the rename alone makes a spill complete-or-absent for every reader
   * and across a crash of this process (see the G matrix in the README).
   */
  readonly durable?: boolean;
}

/**
 * Starts a spill pool (C2). No thread starts until the first spill; batch buffers are shared
 * memory the worker writes from (never copied), reused while any spill is open.
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
  const {
    dir,
    maxThreads = 1,
    batchBytes = 1 << 20,
    maxInFlightBytes = 8 << 20,
    idleTimeoutMs = 5000,
    durable = false,
  } = opts;
  assertArgument(typeof dir === 'string' && dir !== '', 'spill dir must be a non-empty path');
  for (const [name, value] of Object.entries({ maxThreads, batchBytes, maxInFlightBytes, idleTimeoutMs })) {
    assertArgument(Number.isSafeInteger(value) && value >= 0, `spill ${name} must be a non-negative integer`);
  }
  assertArgument(maxThreads > 0 && batchBytes > 0, 'spill maxThreads and batchBytes must be positive');
  const piscina = new Piscina<SpillTask, SpillTaskResult>({
    filename: workerUrl('spill-worker').href,
    minThreads: 0,
    maxThreads,
    idleTimeout: idleTimeoutMs,
    // Nothing reads its run/wait-time histograms; off, they are not recorded per task nor kept.
    recordTiming: false,
    // Its own filtered options: the host's may fail a worker (`node --input-type=module -e …`).
    execArgv: workerExecArgv(),
  });
  const writers = new Set<SpillFileWriter>();
  // Spare batch buffers: at most what one writer can have in flight, dropped when no spill is open.
  const spares: SharedArrayBuffer[] = [];
  const maxSpares = Math.ceil(Math.max(maxInFlightBytes, batchBytes) / batchBytes);
  let destroying: Promise<void> | null = null;

  const context: Omit<SpillContext, 'onSettled'> = {
    dir: resolve(dir),
    batchBytes,
    maxInFlightBytes: Math.max(maxInFlightBytes, batchBytes),
    durable,
    // A task that could not run (pool torn down, thread crashed) is a failed task, not a rejection.
    run: (task) =>
      piscina.run(task).catch((err: unknown) => ({
        ok: false as const,
        error: `spill worker failed: ${err instanceof Error ? err.message : String(err)}`,
      })),
    takeBuffer: () => spares.pop() ?? new SharedArrayBuffer(batchBytes),
    recycleBuffer: (buffer) => {
      if (spares.length < maxSpares && writers.size > 0) spares.push(buffer);
    },
  };
  const onSettled = (writer: SpillFileWriter): void => {
    writers.delete(writer);
    if (writers.size === 0) spares.length = 0;
  };

  return {
    open() {
      if (destroying)
        throw new TetherError('RUNTIME_DISPOSED', 'the spill pool was destroyed; open a new one');
      const writer = new SpillFileWriter({ ...context, onSettled });
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
