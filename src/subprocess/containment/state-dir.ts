import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  realpathSync,
  rmSync,
  statfsSync,
  writeSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { TetherError } from '../../errors.js';
import { assertTrustedStateDir } from './state-trust.js';

/** `statfs` f_type of the kernel's pseudo filesystems (linux/magic.h): no place for files. */
const PSEUDO_FILESYSTEMS = new Map([
  [0x9fa0, 'procfs'],
  [0x62656572, 'sysfs'],
  [0x63677270, 'cgroup2'],
  [0x27e0eb, 'cgroup'],
  [0x64626720, 'debugfs'],
]);

/**
 * Throws INVALID_ARGUMENT unless `path` is a place files can be made (R): a non-empty string
 * without NUL bytes whose nearest existing ancestor (after symlinks) is not on procfs, sysfs or
 * a cgroup filesystem. Checked before any `mkdirSync(path, { recursive: true })`: on Node 20 that
 * never returns for a path below `/proc`.
 *
 * @example
 * ```ts
 * assertFilesystemPath('/proc/x', 'stateDir'); // throws: stateDir /proc/x is on procfs, ...
 * ```
 */
export function assertFilesystemPath(path: unknown, what: string): asserts path is string {
  if (typeof path !== 'string' || path.length === 0)
    throw new TetherError('INVALID_ARGUMENT', `${what} must be a directory path`);
  if (path.includes('\0'))
    throw new TetherError(
      'INVALID_ARGUMENT',
      `${what} must not contain a NUL byte, got ${JSON.stringify(path)}`,
    );
  let at = resolve(path);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  let fs: string | undefined;
  try {
    fs = PSEUDO_FILESYSTEMS.get(statfsSync(realpathSync(at)).type);
  } catch {
    return; // unreadable: making it will fail with a reason of its own
  }
  if (fs !== undefined) {
    throw new TetherError(
      'INVALID_ARGUMENT',
      `${what} ${path} is on ${fs}, where no files can be kept; choose a directory on a real filesystem`,
    );
  }
}

/**
 * Makes the state directory (mode 0700) and proves it can be written and trusted (K3), before
 * the runtime makes anything it would have to clean up. Throws INVALID_ARGUMENT (a path that
 * names no place for files), STATE_DIR_UNUSABLE (it cannot be made or written: a full disk, a
 * file in the way, a read-only mount) or STATE_UNTRUSTED (someone else could write it).
 *
 * @example
 * ```ts
 * openStateDir('/tmp/tether-state-0');
 * ```
 */
export function openStateDir(stateDir: string): void {
  assertFilesystemPath(stateDir, 'stateDir');
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw unusable(stateDir, err);
  }
  assertTrustedStateDir(stateDir);
  const probe = join(stateDir, `.probe-${process.pid}`);
  try {
    const fd = openSync(probe, 'w', 0o600);
    try {
      writeSync(fd, 'x');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw unusable(stateDir, err);
  } finally {
    rmSync(probe, { force: true });
  }
}

/**
 * The STATE_DIR_UNUSABLE error for a failed write below the state directory (a TetherError is
 * passed on as it is).
 *
 * @example
 * ```ts
 * try { writeRuntimeRecord(stateDir, record); } catch (err) { throw unusable(stateDir, err); }
 * ```
 */
export function unusable(stateDir: string, err: unknown): TetherError {
  if (err instanceof TetherError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new TetherError(
    'STATE_DIR_UNUSABLE',
    `the state directory ${stateDir} cannot be written (${code}: ${(err as Error).message}); crash ` +
      'recovery needs it (K3): free space, fix its permissions or pass another stateDir',
    { cause: err },
  );
}
