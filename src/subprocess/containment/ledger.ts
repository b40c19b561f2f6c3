import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ContainmentMode } from './containment-types.js';

/**
 * What a successor needs to find everything of one runtime after it died (K3).
 *
 * One record per runtime start, not per spawn: every tree of a runtime lives under its cgroup
 * (cgroup mode) or carries its marker prefix (marker mode), and all of its spills live in its
 * own spill directory, so the record is complete before the first spawn and never changes. A
 * per-spawn synced append would cost every `shell.run` an fsync (milliseconds, P1) to record
 * nothing new. The record is fsynced (file and directory) before the runtime spawns anything:
 * a crash of the process leaves it in the page cache anyway, and a crash of the machine kills
 * every tree with it.
 */
export interface RuntimeRecord {
  readonly version: 1;
  readonly runtimeId: string;
  /** The runtime's process: pid + start time (field 22 of /proc/<pid>/stat) name it for life. */
  readonly pid: number;
  readonly startTime: number | null;
  /**
   * The pid namespace the pid is valid in (`/proc/self/ns/pid`) and the boot it was started in
   * (`/proc/sys/kernel/random/boot_id`): a reaper elsewhere cannot judge the pid and leaves the
   * record alone; a record of an earlier boot is dead for sure.
   */
  readonly pidNamespace: string | null;
  readonly bootId: string | null;
  readonly containment: ContainmentMode;
  /** The runtime's cgroup directory (cgroup mode). */
  readonly cgroup: string | null;
  /** Every `TETHER_TREE` value of this runtime's process starts with it. */
  readonly markerPrefix: string;
  /** The runtime's own spill directory (removed with it), or `null` when it never spills. */
  readonly spillDir: string | null;
  /** The `spillDir` option it was created below (`spillDir` is `<spillRoot>/tether-<runtimeId>`). */
  readonly spillRoot?: string | null;
  readonly startedAt: number;
}

/**
 * Where a pid of this process is meaningful: its pid namespace and boot.
 *
 * @example
 * ```ts
 * const { pidNamespace, bootId } = processScope(); // 'pid:[4026531836]', '3f0c…'
 * ```
 */
export function processScope(): { readonly pidNamespace: string | null; readonly bootId: string | null } {
  let pidNamespace: string | null = null;
  let bootId: string | null = null;
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid');
  } catch {}
  try {
    bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {}
  return { pidNamespace, bootId };
}

/** A record found in the state directory, and the file that holds it. */
export interface LedgerEntry {
  readonly file: string;
  /** `null` when the file could not be parsed (it is reported, never guessed at). */
  readonly record: RuntimeRecord | null;
  /** The reaper that claimed it, when the file is a claim (`<id>.json.reaping-<pid>-<start>`). */
  readonly claimedBy: { readonly pid: number; readonly startTime: number | null } | null;
}

const RECORDS = 'runtimes';

/**
 * Where the spawner of runtime `runtimeId` keeps its FIFOs: below the state directory, so that
 * recovery removes what a crashed runtime left there (K3).
 *
 * @example
 * ```ts
 * startSpawner(spawnerBinary(), spawnerFifoDir(stateDir, runtimeId));
 * ```
 */
export function spawnerFifoDir(stateDir: string, runtimeId: string): string {
  return join(stateDir, 'spawn', runtimeId);
}

/**
 * Writes and syncs the record of a starting runtime (K3); returns its file, which `dispose`
 * removes.
 *
 * @example
 * ```ts
 * const file = writeRuntimeRecord(stateDir, record);
 * // ... spawn ...
 * removeRuntimeRecord(file);
 * ```
 */
export function writeRuntimeRecord(stateDir: string, record: RuntimeRecord): string {
  return writeSyncedJson(join(stateDir, RECORDS), `${record.runtimeId}.json`, record);
}

/**
 * Writes `value` as `dir/name` (0600; `dir` made 0700) and syncs it and its directory, so a
 * successor finds it whole after a crash (K3): the runtime record, the places of its pods (X6).
 *
 * @example
 * ```ts
 * const file = writeSyncedJson(join(stateDir, 'pods'), `${runtimeId}.json`, places);
 * ```
 */
export function writeSyncedJson(dir: string, name: string, value: unknown): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, name);
  const temp = `${file}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(value)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  syncDirectory(dir);
  return file;
}

/**
 * Removes a record (the runtime was disposed, or a reaper finished with it).
 *
 * @example
 * ```ts
 * removeRuntimeRecord(file);
 * ```
 */
export function removeRuntimeRecord(file: string): void {
  rmSync(file, { force: true });
}

/**
 * Every record and claim in the state directory.
 *
 * @example
 * ```ts
 * for (const { record } of listRuntimeRecords(stateDir)) console.log(record?.runtimeId);
 * ```
 */
export function listRuntimeRecords(stateDir: string): LedgerEntry[] {
  const dir = join(stateDir, RECORDS);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const entries: LedgerEntry[] = [];
  for (const name of names) {
    const claim = /\.json\.reaping-(\d+)-(\d+|null)$/.exec(name);
    if (!name.endsWith('.json') && claim === null) continue;
    const file = join(dir, name);
    const claimedBy =
      claim === null
        ? null
        : { pid: Number(claim[1]), startTime: claim[2] === 'null' ? null : Number(claim[2]) };
    entries.push({ file, record: parseRecord(file), claimedBy });
  }
  return entries;
}

/**
 * Claims a record for reaping by renaming it (atomic: of two reapers, one wins). Returns the
 * claim's path, or `null` when another reaper was first.
 *
 * @example
 * ```ts
 * const claim = claimRecord(entry.file, self);
 * if (claim) { reap(entry.record); removeRuntimeRecord(claim); }
 * ```
 */
export function claimRecord(
  file: string,
  reaper: { readonly pid: number; readonly startTime: number | null },
): string | null {
  const base = file.replace(/\.reaping-[^/]*$/, '');
  const claim = `${base}.reaping-${reaper.pid}-${reaper.startTime}`;
  try {
    renameSync(file, claim);
    return claim;
  } catch {
    return null;
  }
}

function parseRecord(file: string): RuntimeRecord | null {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<RuntimeRecord>;
    if (value.version !== 1 || typeof value.runtimeId !== 'string' || typeof value.pid !== 'number')
      return null;
    if (typeof value.markerPrefix !== 'string' || value.markerPrefix === '') return null;
    return value as RuntimeRecord;
  } catch {
    return null;
  }
}

// A rename is durable only once its directory is synced.
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
