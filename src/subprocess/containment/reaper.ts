import { readdirSync, rmSync } from 'node:fs';
import { isSameLiveProcess, readIdentity, signalIdentity } from '../identity.js';
import { readProcStat } from '../proc.js';
import type { ProcessIdentity } from '../types.js';
import { cgroupPids, isPopulated, killCgroup, removeCgroup } from './cgroup-fs.js';
import { waitUnpopulated } from './cgroup-watch.js';
import { listLabelledContainers, type RecoveredContainer, removeContainersOf } from './container-sweep.js';
import type { ContainmentMode } from './containment-types.js';
import { sweepDeadCpuGroups } from './cpu-group.js';
import { sweepDeadRuntime } from './dead-runtime-sweep.js';
import {
  claimRecord,
  type LedgerEntry,
  listRuntimeRecords,
  processScope,
  type RuntimeRecord,
  removeRuntimeRecord,
  spawnerFifoDir,
} from './ledger.js';
import { removePodPlaces } from './pod-places.js';
import { type RecoveredPod, removePodsOf } from './pod-sweep.js';
import { assertTrustedStateDir, type TrustedTargets, trustedTargets } from './state-trust.js';

/** What was reaped of one dead runtime (K3), as `rt.recovered` and `tether reap` report it. */
export interface RecoveredRuntime {
  readonly runtimeId: string;
  /** The dead runtime's process. */
  readonly pid: number;
  readonly containment: ContainmentMode;
  /** Processes of its trees that were alive and were killed. */
  readonly killed: number;
  /**
   * Processes that could not be killed (state D included) or, in marker mode, that only look
   * like escapees of its trees (orphaned session leaders without a marker: never signalled);
   * empty when verified quiescent.
   */
  readonly escaped: readonly number[];
  /** Spill files removed with its spill directory. */
  readonly spillFiles: number;
  /** Its cgroup, removed (cgroup mode). */
  readonly cgroup: string | null;
  /** `proof` of the quiescence: the kernel's (`cgroup`) or the marker sweep's (`proc`). */
  readonly proof: 'cgroup' | 'proc';
  /** X6: the containers it placed owners in, found by their labels and removed (`podman rm -f`). */
  readonly containers: readonly RecoveredContainer[];
  /** X6: the pods it placed owners in, found by their labels where it recorded them, and deleted. */
  readonly pods: readonly RecoveredPod[];
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
 * (`cgroup.kill`, `populated 0`, removed), every process still carrying their marker prefix
 * and every process in a session or group of one of those or below one, their spill and spawner
 * directories, and the containers and pods they placed owners in (found by their `tether.runtime`
 * label, X6; pods only where the runtime recorded placing them); then their records go. What survives (or, in marker mode, what only looks like
 * an escapee of theirs) is in `escaped`, never called dead. A runtime whose process lives —
 * another process using the same state directory — is never touched. Two reapers never reap one
 * runtime twice (a record is claimed by an atomic rename; a dead reaper's claim is taken over).
 * Nothing is believed of a state directory or record another user could have written, nor a
 * cgroup or directory that is not the runtime's own: that throws STATE_UNTRUSTED before
 * anything is killed or removed (state-trust.ts).
 *
 * @example
 * ```ts
 * for (const r of await reapDeadRuntimes(stateDir, { graceMs: 2000 }))
 *   console.log(`runtime ${r.runtimeId} (pid ${r.pid}): ${r.killed} processes killed`);
 * ```
 */
export async function reapDeadRuntimes(stateDir: string, opts: ReapOptions): Promise<RecoveredRuntime[]> {
  assertTrustedStateDir(stateDir);
  const self = readIdentity(process.pid) ?? { pid: process.pid, startTime: null };
  const scope = processScope();
  const orphans = listRuntimeRecords(stateDir)
    .filter((entry) => isOrphaned(entry, self, scope))
    // Every record is checked before the first is acted on: one bad record stops them all.
    .map((entry) => ({ entry, targets: entry.record && trustedTargets(entry.record, stateDir) }));
  const reaped: RecoveredRuntime[] = [];
  // X6: one listing by label, and only when there is a dead runtime to reap.
  const containers = orphans.length > 0 ? await listLabelledContainers() : [];
  for (const { entry, targets } of orphans) {
    const claim = claimRecord(entry.file, self);
    if (claim === null) continue; // another reaper was first
    if (entry.record === null || targets === null) {
      removeRuntimeRecord(claim); // unreadable: nothing in it can be found
      continue;
    }
    const sameBoot = !(entry.record.bootId && scope.bootId && entry.record.bootId !== scope.bootId);
    const placed = await removeContainersOf(containers, entry.record);
    const pods = await removePodsOf(stateDir, entry.record);
    reaped.push({ ...(await reapRuntime(entry.record, targets, sameBoot, opts)), containers: placed, pods });
    removePodPlaces(stateDir, entry.record.runtimeId);
    rmSync(spawnerFifoDir(stateDir, entry.record.runtimeId), { recursive: true, force: true });
    removeRuntimeRecord(claim);
  }
  // Issue 30.6: the CPU groups of crashed runtimes, empty once their trees were killed above.
  sweepDeadCpuGroups();
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

async function reapRuntime(
  record: RuntimeRecord,
  targets: TrustedTargets,
  sameBoot: boolean,
  opts: ReapOptions,
): Promise<Omit<RecoveredRuntime, 'containers' | 'pods'>> {
  const deadline = opts.killDeadlineMs ?? 2000;
  let killed = 0;
  const escaped: number[] = [];
  if (targets.cgroup !== null) {
    const result = await reapCgroup(targets.cgroup, opts.graceMs, deadline);
    killed += result.killed;
    escaped.push(...result.left);
  }
  // Marker mode's only evidence; in cgroup mode a net for a leader that never entered.
  if (sameBoot) {
    const swept = await sweepDeadRuntime(
      {
        markerPrefix: record.markerPrefix,
        startTime: record.startTime,
        suspects: record.containment === 'marker',
      },
      opts.graceMs,
      deadline,
    );
    killed += swept.killed;
    escaped.push(...swept.left.filter((pid) => !escaped.includes(pid)));
  }
  let spillFiles = 0;
  if (targets.spillDir !== null) {
    try {
      spillFiles = readdirSync(targets.spillDir).length;
    } catch {}
    try {
      rmSync(targets.spillDir, { recursive: true, force: true });
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
