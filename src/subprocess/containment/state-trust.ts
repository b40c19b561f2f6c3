import { lstatSync, readdirSync, realpathSync, type Stats, statfsSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { TetherError } from '../../errors.js';
import type { RuntimeRecord } from './ledger.js';
import { POD_PLACES } from './pod-places.js';

/** `statfs` f_type of cgroup v2 (linux/magic.h CGROUP2_SUPER_MAGIC). */
const CGROUP2_MAGIC = 0x63677270;

/**
 * Refuses a state directory whose records anyone but this user could have written (K3), the way
 * `ssh` refuses a key file others can read: the directory (after symlinks), its `runtimes`
 * folder and every record in it must belong to this user and be writable by nobody else, and
 * every ancestor must belong to root or this user and be writable by nobody else unless sticky
 * (`/tmp`); so must its `pods` folder and files (X6). A record is believed only then: it names
 * processes to kill, a cgroup and a directory to remove, an API server to delete pods through,
 * and the bash startup file beside it runs in every `shell.run`. A missing directory passes
 * (there is nothing to believe yet). Throws STATE_UNTRUSTED.
 *
 * @example
 * ```ts
 * assertTrustedStateDir('/tmp/tether-state-0'); // throws when it is 0777 or another user's
 * ```
 */
export function assertTrustedStateDir(stateDir: string): void {
  let real: string;
  try {
    real = realpathSync(stateDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw untrusted(stateDir, `it cannot be read (${(err as Error).message})`);
  }
  assertPrivate(real, statSync(real), 'directory', stateDir);
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    const stat = statSync(dir);
    if (stat.uid !== 0 && stat.uid !== uid())
      throw untrusted(stateDir, `its ancestor ${dir} belongs to uid ${stat.uid}`);
    if ((stat.mode & 0o022) !== 0 && (stat.mode & 0o1000) === 0)
      throw untrusted(stateDir, `its ancestor ${dir} is writable by others (mode ${octal(stat.mode)})`);
    if (dir === dirname(dir)) break;
  }
  // Every `shell.run` sources it (cgroup-entry.ts): as private as the records.
  const entry = join(real, 'enter-cgroup.bash');
  const entryStat = existing(entry);
  if (entryStat !== null) assertPrivate(entry, entryStat, 'file', stateDir);
  // The ledger's records, and the places of their pods (X6: an API server to call, pods to delete).
  for (const folder of ['runtimes', POD_PLACES]) assertPrivateFolder(join(real, folder), stateDir);
}

function assertPrivateFolder(folder: string, stateDir: string): void {
  let names: string[];
  try {
    assertPrivate(folder, lstatSync(folder), 'directory', stateDir);
    names = readdirSync(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) {
    const file = join(folder, name);
    try {
      assertPrivate(file, lstatSync(file), 'file', stateDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; // a reaper removed it
    }
  }
}

/** What of a dead runtime's record may be removed: each named thing checked (K3), or `null`. */
export interface TrustedTargets {
  /** Its cgroup, when it still exists. */
  readonly cgroup: string | null;
  /** Its spill directory, when it still exists. */
  readonly spillDir: string | null;
}

/**
 * Checks what a record names before anything is killed or removed (K3): its marker prefix is
 * its own (`<pid>.<8 random>.`), its cgroup is a Tether runtime cgroup of this user
 * (`tether-<pid>-<start>-<n>` on the cgroup v2 filesystem, owned by this user) and its spill
 * directory is `tether-<runtime id>`, directly below the spill root it was created in, a real
 * directory of this user. Throws STATE_UNTRUSTED naming what does not fit.
 *
 * @example
 * ```ts
 * const { cgroup, spillDir } = trustedTargets(record, 'tether reap');
 * ```
 */
export function trustedTargets(record: RuntimeRecord, stateDir: string): TrustedTargets {
  const id = record.runtimeId;
  const refuse = (why: string) => untrusted(stateDir, `the record of runtime ${JSON.stringify(id)} ${why}`);
  if (!new RegExp(`^${record.pid}-(${record.startTime ?? 'x'}|x)-\\d+$`).test(id))
    throw refuse(`does not name its own process (pid ${record.pid}, start ${record.startTime})`);
  if (!new RegExp(`^${record.pid}\\.[A-Za-z0-9_-]{8}\\.$`).test(record.markerPrefix))
    throw refuse(`names the marker ${JSON.stringify(record.markerPrefix)}, not one of its own`);
  const own = `tether-${id}`;
  let cgroup: string | null = null;
  if (record.cgroup !== null) {
    const dir = record.cgroup;
    if (!isAbsolute(dir) || normalize(dir) !== dir || basename(dir) !== own)
      throw refuse(`names the cgroup ${JSON.stringify(dir)}, not a runtime cgroup ${own}`);
    const stat = existing(dir);
    if (stat !== null) {
      if (!stat.isDirectory() || statfsSync(dir).type !== CGROUP2_MAGIC)
        throw refuse(`names ${dir}, which is not a cgroup v2 directory`);
      if (stat.uid !== uid()) throw refuse(`names the cgroup ${dir} of uid ${stat.uid}`);
      cgroup = dir;
    }
  }
  let spillDir: string | null = null;
  if (record.spillDir !== null) {
    const dir = record.spillDir;
    const root = record.spillRoot ?? dirname(dir);
    if (!isAbsolute(dir) || normalize(dir) !== dir || dir !== join(root, own))
      throw refuse(`names the spill directory ${JSON.stringify(dir)}, not ${own} below its spill root`);
    const stat = existing(dir);
    if (stat !== null) {
      if (!stat.isDirectory() || basename(realpathSync(dir)) !== own)
        throw refuse(`names ${dir}, which is not a directory of its own (a symlink?)`);
      if (stat.uid !== uid()) throw refuse(`names the spill directory ${dir} of uid ${stat.uid}`);
      spillDir = dir;
    }
  }
  return { cgroup, spillDir };
}

function assertPrivate(path: string, stat: Stats, kind: 'directory' | 'file', stateDir: string): void {
  if (kind === 'directory' ? !stat.isDirectory() : !stat.isFile())
    throw untrusted(stateDir, `${path} is not a ${kind}${stat.isSymbolicLink() ? ' (a symlink)' : ''}`);
  if (stat.uid !== uid())
    throw untrusted(stateDir, `${path} belongs to uid ${stat.uid}, not to uid ${uid()} (this user)`);
  if ((stat.mode & 0o022) !== 0)
    throw untrusted(stateDir, `${path} is writable by others (mode ${octal(stat.mode)})`);
}

// `lstat`, or null when it is gone (already removed: nothing to do).
function existing(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

const uid = (): number => process.getuid?.() ?? -1;
const octal = (mode: number) => `0${(mode & 0o7777).toString(8)}`;

function untrusted(stateDir: string, why: string): TetherError {
  return new TetherError(
    'STATE_UNTRUSTED',
    `refusing the state directory ${stateDir}: ${why}. Its records name processes to kill and ` +
      `directories to remove, so only a directory of uid ${uid()} that nobody else can write is ` +
      `believed; nothing was reaped. Fix the owner and mode (chown ${uid()}, chmod 700) or use another stateDir`,
  );
}
