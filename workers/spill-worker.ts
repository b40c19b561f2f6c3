/**
 * The spill writer's thread (C2): every blocking file operation of a spill happens here, never
 * on the main event loop. Each task is self-contained — it opens, works and closes its own fd —
 * so any thread of the pool can run any task, and a thread that exits holds no spill state.
 * I/O failures are returned as data, never thrown.
 *
 * Node ignores SIGXFSZ, so a write past RLIMIT_FSIZE fails with EFBIG instead of killing the
 * process (verified under `prlimit --fsize`, see test/output/spill.test.ts).
 */
import { closeSync, constants, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/** One unit of work for the spill thread. Paths are absolute. */
export type SpillTask =
  /** mkdir -p `dir`, then create `temp` exclusively (mode 0600: output may be private). */
  | { readonly op: 'create'; readonly dir: string; readonly temp: string }
  /**
   * Write `data[0, length)` at `position` (positional: batch order does not matter). `data` is
   * the caller's shared batch: it is not touched again until this task has answered.
   */
  | {
      readonly op: 'write';
      readonly temp: string;
      readonly data: SharedArrayBuffer;
      readonly length: number;
      readonly position: number;
    }
  /**
   * Rename `temp` to `final` (complete-or-absent: a reader never sees a partial name). With
   * `durable`, fsync `temp` first and `dir` after, so the file also survives an OS crash.
   * On failure nothing is left at `final`.
   */
  | {
      readonly op: 'commit';
      readonly dir: string;
      readonly temp: string;
      readonly final: string;
      readonly durable: boolean;
    }
  /** Remove `temp` if it exists. */
  | { readonly op: 'remove'; readonly temp: string };

/** What a task did: `error` is the errno text, e.g. `EFBIG: file too large, write`. */
export type SpillTaskResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/**
 * The piscina task function.
 *
 * @example
 * ```ts
 * const pool = new Piscina({ filename: workerUrl('spill-worker').href });
 * const result: SpillTaskResult = await pool.run({ op: 'write', temp, data, length, position });
 * ```
 */
export default function runSpillTask(task: SpillTask): SpillTaskResult {
  try {
    switch (task.op) {
      case 'create':
        return create(task.dir, task.temp);
      case 'write':
        write(task.temp, new Uint8Array(task.data, 0, task.length), task.position);
        return { ok: true };
      case 'commit':
        return commit(task);
      case 'remove':
        rmSync(task.temp, { force: true });
        return { ok: true };
    }
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

function create(dir: string, temp: string): SpillTaskResult {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  closeSync(openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600));
  return { ok: true };
}

/**
 * Bytes per write(2) of a batch. A 1 MiB write makes the kernel put 1 MiB page-cache folios in
 * the file (ext4 on Linux 6.x), high-order allocations; on this VM (a Firecracker guest that
 * reports free pages to its host, the likely reason) they took 5–8× the kernel time of the
 * whole spill in about half the runs (P2 spill on: 370–400 against 650–700 MB/s). 64 KiB writes,
 * the size a pipe read delivers, were never slow in 18 runs (BENCHMARKS.md).
 */
const WRITE_BYTES = 65_536;

// Without O_CREAT: a temp file removed behind our back is an error, not a fresh empty file.
function write(temp: string, bytes: Uint8Array, position: number): void {
  const fd = openSync(temp, constants.O_WRONLY);
  try {
    // A short write (e.g. up to RLIMIT_FSIZE) is followed by one that reports the errno.
    for (let done = 0; done < bytes.length; ) {
      const size = Math.min(WRITE_BYTES, bytes.length - done);
      const n = writeSync(fd, bytes, done, size, position + done);
      if (n === 0) throw new Error('spill write made no progress');
      done += n;
    }
  } finally {
    closeSync(fd);
  }
}

function commit({ dir, temp, final, durable }: Extract<SpillTask, { op: 'commit' }>): SpillTaskResult {
  if (!durable) {
    renameSync(temp, final);
    return { ok: true };
  }
  const fd = openSync(temp, constants.O_WRONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, final);
  try {
    syncDirectory(dir);
  } catch (err) {
    // The name is not durable: publish nothing rather than a file that may vanish on a crash.
    rmSync(final, { force: true });
    throw err;
  }
  return { ok: true };
}

// Makes the rename durable. Filesystems that cannot fsync a directory say EINVAL/ENOTSUP;
// Windows cannot open a directory at all (its rename is durable through the journal).
function syncDirectory(dir: string): void {
  if (process.platform === 'win32') return;
  const fd = openSync(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0));
  try {
    fsyncSync(fd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'ENOTSUP') throw err;
  } finally {
    closeSync(fd);
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
