import { TREE_MARKER_ENV } from './marker.js';
import { listPids, type ProcStat, readEnvironValue, readProcStat } from './proc.js';

/**
 * One full scan of /proc: every readable stat, plus the env marker of each process, read
 * lazily at most once per scan. Shared by concurrent tree kills (S4) so that N kills in
 * the same poll tick cost one scan, not N.
 */
export interface ProcSnapshot {
  /** Increases with every scan: a caller asks for a scan newer than the one it last used. */
  readonly seq: number;
  /** `performance.now()` when the scan started. */
  readonly startedAt: number;
  readonly stats: readonly ProcStat[];
  readonly byPid: ReadonlyMap<number, ProcStat>;
  /** This Node process and its ancestors: never members of a tree we kill. */
  readonly self: ReadonlySet<number>;
  /** The `TETHER_TREE` value of `pid` (cached for this scan). */
  /** `undefined`: unknown for now (an empty environ, e.g. a process in the middle of exec). */
  marker(pid: number): string | null | undefined;
}

/** How old a scan may be and still serve a caller that has not seen it yet. */
const SNAPSHOT_REUSE_MS = 10;
let latest: ProcSnapshot | undefined;
let pending: Promise<ProcSnapshot> | undefined;
let seqCounter = 0;

/**
 * Scans /proc now (synchronously) and makes the result the shared latest snapshot.
 *
 * @example
 * ```ts
 * const snap = scanProcSnapshot();
 * snap.stats.filter((s) => snap.marker(s.pid) === treeId);
 * ```
 */
export function scanProcSnapshot(): ProcSnapshot {
  latest = snapshotOf(listPids());
  return latest;
}

/**
 * A private snapshot of just `pids` (not shared with other callers): for a sweep whose
 * candidates are already bounded (see pid-mark.ts).
 *
 * @example
 * ```ts
 * const snap = scanPidsSnapshot(pidsSince(mark) ?? listPids());
 * ```
 */
export function scanPidsSnapshot(pids: readonly number[]): ProcSnapshot {
  return snapshotOf(pids);
}

// Reads the stat of every pid (vanished ones skipped) and numbers the scan.
function snapshotOf(pids: readonly number[]): ProcSnapshot {
  const startedAt = performance.now();
  const stats: ProcStat[] = [];
  const byPid = new Map<number, ProcStat>();
  for (const pid of pids) {
    const stat = readProcStat(pid);
    if (stat === null) continue;
    stats.push(stat);
    byPid.set(pid, stat);
  }
  const self = new Set<number>();
  for (let pid: number | undefined = process.pid; pid !== undefined && pid > 0 && !self.has(pid); ) {
    self.add(pid);
    pid = byPid.get(pid)?.ppid;
  }
  const markers = new Map<number, string | null | undefined>();
  const marker = (pid: number): string | null | undefined => {
    if (!markers.has(pid)) markers.set(pid, readEnvironValue(pid, TREE_MARKER_ENV));
    return markers.get(pid);
  };
  return { seq: ++seqCounter, startedAt, stats, byPid, self, marker };
}

/**
 * A snapshot whose scan started after the one numbered `seq` (so it reflects everything
 * the caller did since): the shared latest when it is newer and at most ~10 ms old,
 * otherwise one scan that every caller asking in this turn of the event loop shares.
 * Pass `currentProcSnapshotSeq()` to demand a scan that has not started yet.
 *
 * @example
 * ```ts
 * let snap = await procSnapshotAfter(currentProcSnapshotSeq());
 * snap = await procSnapshotAfter(snap.seq); // next poll
 * ```
 */
export function procSnapshotAfter(seq: number): Promise<ProcSnapshot> {
  if (latest !== undefined && latest.seq > seq && performance.now() - latest.startedAt <= SNAPSHOT_REUSE_MS) {
    return Promise.resolve(latest);
  }
  pending ??= new Promise<ProcSnapshot>((resolve) => {
    setImmediate(() => {
      pending = undefined;
      resolve(scanProcSnapshot());
    });
  });
  return pending;
}

/**
 * The number of the latest scan (0 before any): `procSnapshotAfter(currentProcSnapshotSeq())`
 * returns a scan that starts after this call.
 *
 * @example
 * ```ts
 * const fresh = await procSnapshotAfter(currentProcSnapshotSeq());
 * ```
 */
export function currentProcSnapshotSeq(): number {
  return seqCounter;
}

/**
 * The shared latest snapshot if at most ~10 ms old, else a new synchronous scan.
 *
 * @example
 * ```ts
 * const snap = recentProcSnapshot();
 * ```
 */
export function recentProcSnapshot(): ProcSnapshot {
  if (latest !== undefined && performance.now() - latest.startedAt <= SNAPSHOT_REUSE_MS) return latest;
  return scanProcSnapshot();
}

/**
 * The processes of `among` that are in `members` or descend from one of them (by ppid), in
 * `among`'s order: a tree's membership once its roots are known (S4, K3). Adds to `members`.
 *
 * @example
 * ```ts
 * const tree = withDescendants(new Set([leader.pid]), snap.stats);
 * ```
 */
export function withDescendants(members: Set<number>, among: readonly ProcStat[]): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const s of among) {
    const list = children.get(s.ppid);
    if (list === undefined) children.set(s.ppid, [s]);
    else list.push(s);
  }
  const queue = [...members];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    for (const child of children.get(pid) ?? []) {
      if (members.has(child.pid)) continue;
      members.add(child.pid);
      queue.push(child.pid);
    }
  }
  return among.filter((s) => members.has(s.pid));
}
