import { readProcText } from './proc.js';

/**
 * Where the kernel's pid allocator stood at one moment: the last pid handed out and the
 * number of forks since boot. Taken just before a spawn, it bounds which pids the new tree
 * can have: every process created since then got a pid in (lastPid, now's lastPid], unless
 * the allocator wrapped around pid_max, which the fork count rules out.
 */
export interface PidMark {
  readonly lastPid: number;
  readonly forks: number;
}

/**
 * The allocator's position now; `null` where /proc does not expose it.
 *
 * @example
 * ```ts
 * const mark = markPids(); // before spawn
 * // ... later, after the leader exited:
 * const pids = pidsSince(mark); // null: scan everything
 * ```
 */
export function markPids(): PidMark | null {
  const lastPid = readNumber('/proc/sys/kernel/ns_last_pid');
  const forks = readForks();
  return lastPid === null || forks === null ? null : { lastPid, forks };
}

/** How long a mark is reused by {@link markBeforeSpawn}. */
export const MARK_REUSE_MS = 20;
let lastMark: { mark: PidMark | null; at: number } | null = null;

/**
 * A mark for a spawn about to happen: one taken at most {@link MARK_REUSE_MS} ago, else a new
 * one. Any mark taken before the spawn bounds its pids (an older one only widens the range by
 * the pids handed out since), and reading the allocator costs two /proc reads (/proc/stat is
 * the dear one: 50 µs idle, 200+ µs at load) per spawn on the main thread (P8: 200 jobs/s).
 *
 * @example
 * ```ts
 * const since = markBeforeSpawn();
 * spawn(...);
 * ```
 */
export function markBeforeSpawn(now = performance.now()): PidMark | null {
  if (lastMark === null || now - lastMark.at > MARK_REUSE_MS || now < lastMark.at) {
    lastMark = { mark: markPids(), at: now };
  }
  return lastMark.mark;
}

/** Above this many candidates a full scan is as cheap. */
const MAX_RANGE = 4096;

/**
 * Every pid a process created since `mark` can have, or `null` when that cannot be bounded
 * (the allocator may have wrapped, or the range is too wide to be worth it).
 *
 * @example
 * ```ts
 * const range = pidsSince(mark) ?? listPids();
 * ```
 */
export function pidsSince(mark: PidMark | null): number[] | null {
  if (mark === null) return null;
  const now = markPids();
  const pidMax = readNumber('/proc/sys/kernel/pid_max');
  if (now === null || pidMax === null) return null;
  // A wrap needs at least ~pid_max forks (in-use pids are skipped, hence the margin).
  const wrapPossible = now.lastPid < mark.lastPid || now.forks - mark.forks >= pidMax / 2;
  if (wrapPossible || now.lastPid - mark.lastPid > MAX_RANGE) return null;
  const pids: number[] = [];
  for (let pid = mark.lastPid + 1; pid <= now.lastPid; pid++) pids.push(pid);
  return pids;
}

// Both reads go through proc.ts's reused buffer: readFileSync allocates per call (P1, P5).
function readNumber(path: string): number | null {
  const text = readProcText(path);
  if (text === null) return null;
  const trimmed = text.trim();
  const value = Number(trimmed);
  return trimmed !== '' && Number.isSafeInteger(value) ? value : null;
}

// The `processes` line of /proc/stat: forks (and clones) since boot.
function readForks(): number | null {
  const text = readProcText('/proc/stat');
  const match = text === null ? null : /^processes (\d+)$/m.exec(text);
  return match?.[1] === undefined ? null : Number(match[1]);
}
