import { readdirSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isSameLiveProcess, readIdentity, signalIdentity } from '../identity.js';
import { listTaggedProcesses, readProcStat } from '../proc.js';
import type { ProcessIdentity } from '../types.js';
import { cgroupPids, isPopulated, killCgroup, removeCgroup } from './cgroup-fs.js';
import { waitUnpopulated } from './cgroup-watch.js';
import type { ContainmentMode } from './containment-types.js';
import {
  claimRecord,
  type LedgerEntry,
  listRuntimeRecords,
  processScope,
  type RuntimeRecord,
  removeRuntimeRecord,
} from './ledger.js';

/** What was reaped of one dead runtime (K3), as `rt.recovered` and `tether reap` report it. */
export interface RecoveredRuntime {
  readonly runtimeId: string;
  /** The dead runtime's process. */
  readonly pid: number;
  readonly containment: ContainmentMode;
  /** Processes of its trees that were alive and were killed. */
  readonly killed: number;
  /** Processes that could not be killed (state D included); empty when verified quiescent. */
  readonly escaped: readonly number[];
  /** Spill files removed with its spill directory. */
  readonly spillFiles: number;
  /** Its cgroup, removed (cgroup mode). */
  readonly cgroup: string | null;
  /** `proof` of the quiescence: the kernel's (`cgroup`) or the marker sweep's (`proc`). */
  readonly proof: 'cgroup' | 'proc';
}

export interface ReapOptions {
  /** Between SIGTERM and SIGKILL. */
  readonly graceMs: number;
  /** How long to wait after SIGKILL (default 2000). */
  readonly killDeadlineMs?: number;
}

/**
 * Finds the runtimes of `stateDir` whose process is dead (its pid no longer names the same
 * start time) and kills everything they left to verified quiescence (K3): their cgroups
 * (`cgroup.kill`, `populated 0`, removed), every process still carrying their marker prefix,
 * their spill directories; then their records go. A runtime whose process lives — another
 * process using the same state directory — is never touched. Two reapers never reap one
 * runtime twice (a record is claimed by an atomic rename; a dead reaper's claim is taken over).
 *
 * @example
 * ```ts
 * for (const r of await reapDeadRuntimes(stateDir, { graceMs: 2000 }))
 *   console.log(`runtime ${r.runtimeId} (pid ${r.pid}): ${r.killed} processes killed`);
 * ```
 */
export async function reapDeadRuntimes(stateDir: string, opts: ReapOptions): Promise<RecoveredRuntime[]> {
  const self = readIdentity(process.pid) ?? { pid: process.pid, startTime: null };
  const scope = processScope();
  const reaped: RecoveredRuntime[] = [];
  for (const entry of listRuntimeRecords(stateDir)) {
    if (!isOrphaned(entry, self, scope)) continue;
    const claim = claimRecord(entry.file, self);
    if (claim === null) continue; // another reaper was first
    if (entry.record === null) {
      removeRuntimeRecord(claim); // unreadable: nothing in it can be found
      continue;
    }
    reaped.push(await reapRuntime(entry.record, opts));
    removeRuntimeRecord(claim);
  }
  return reaped;
}

// Dead owner, and either unclaimed or claimed by a reaper that died too. A pid is judged only
// in the pid namespace it was recorded in (another namespace's pid 12 is not ours); a record
// of an earlier boot is dead whatever its pid says.
function isOrphaned(
  entry: LedgerEntry,
  self: ProcessIdentity,
  scope: ReturnType<typeof processScope>,
): boolean {
  const { record, claimedBy } = entry;
  if (record?.bootId && scope.bootId && record.bootId !== scope.bootId) return true;
  if (record !== null && record.pidNamespace !== scope.pidNamespace) return false;
  if (claimedBy !== null) {
    if (claimedBy.pid === self.pid && claimedBy.startTime === self.startTime) return false;
    if (isSameLiveProcess(claimedBy)) return false;
  }
  if (record === null) return claimedBy !== null || !entry.file.endsWith('.json');
  return !isSameLiveProcess({ pid: record.pid, startTime: record.startTime });
}

async function reapRuntime(record: RuntimeRecord, opts: ReapOptions): Promise<RecoveredRuntime> {
  const deadline = opts.killDeadlineMs ?? 2000;
  let killed = 0;
  const escaped: number[] = [];
  if (record.cgroup !== null) {
    const result = await reapCgroup(record.cgroup, opts.graceMs, deadline);
    killed += result.killed;
    escaped.push(...result.left);
  }
  // Marker mode's only evidence; in cgroup mode a net for a leader that never entered.
  const swept = await sweepMarker(record.markerPrefix, opts.graceMs, deadline);
  killed += swept.killed;
  escaped.push(...swept.left.filter((pid) => !escaped.includes(pid)));
  let spillFiles = 0;
  if (record.spillDir !== null) {
    try {
      spillFiles = readdirSync(record.spillDir).length;
    } catch {}
    try {
      rmSync(record.spillDir, { recursive: true, force: true });
    } catch {} // best effort: a spill dir that is not ours to remove keeps its files
  }
  return {
    runtimeId: record.runtimeId,
    pid: record.pid,
    containment: record.containment,
    killed,
    escaped,
    spillFiles,
    cgroup: record.cgroup,
    proof: record.containment === 'cgroup' ? 'cgroup' : 'proc',
  };
}

// TERM everything in the runtime's cgroup, grace, cgroup.kill (recursive), wait, remove.
async function reapCgroup(dir: string, graceMs: number, deadlineMs: number) {
  const pids = cgroupPids(dir);
  for (const pid of pids) {
    const stat = readProcStat(pid);
    if (stat !== null) signalIdentity({ pid, startTime: stat.startTime }, 'SIGTERM');
    if (stat?.state === 'T' || stat?.state === 't')
      signalIdentity({ pid, startTime: stat.startTime }, 'SIGCONT');
  }
  if (!(await waitUnpopulated(dir, graceMs))) {
    killCgroup(dir);
    await waitUnpopulated(dir, deadlineMs);
  }
  const left = isPopulated(dir) ? cgroupPids(dir) : [];
  if (left.length === 0) removeCgroup(dir);
  return { killed: pids.length, left };
}

/** Re-read period of the marker sweep: without a cgroup there is nothing to watch. */
const SWEEP_POLL_MS = 50;

// TERM every process carrying the prefix, until gone or the grace passed; then KILL likewise.
async function sweepMarker(prefix: string, graceMs: number, deadlineMs: number) {
  const seen = new Set<string>();
  for (const [signal, ms] of [
    ['SIGTERM', graceMs],
    ['SIGKILL', deadlineMs],
  ] as const) {
    const until = performance.now() + ms;
    for (;;) {
      const alive = listTaggedProcesses(prefix);
      if (alive.length === 0) return { killed: distinct(seen), left: [] };
      for (const pid of alive) {
        const stat = readProcStat(pid);
        if (stat === null) continue;
        const id = { pid, startTime: stat.startTime };
        const key = `${signal}:${pid}:${stat.startTime}`;
        if (!seen.has(key) && signalIdentity(id, signal)) seen.add(key);
        if (signal === 'SIGTERM') signalIdentity(id, 'SIGCONT');
      }
      if (performance.now() >= until) break;
      await sleep(SWEEP_POLL_MS);
    }
  }
  return { killed: distinct(seen), left: listTaggedProcesses(prefix) };
}

// `signal:pid:start` keys → distinct processes.
function distinct(sent: Set<string>): number {
  return new Set([...sent].map((k) => k.slice(k.indexOf(':') + 1))).size;
}
