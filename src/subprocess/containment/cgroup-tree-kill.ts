import { isDeadState, isSameLiveProcess, signalIdentity } from '../identity.js';
import { isExiting, killPending, readProcStat } from '../proc.js';
import type { ProcessIdentity, TreeKillVerdict } from '../types.js';
import { cgroupOf, cgroupPids, isPopulated, killCgroup, removeCgroup } from './cgroup-fs.js';
import { waitUnpopulated } from './cgroup-watch.js';
import type { BoundaryKillOptions } from './containment-types.js';

/** One tree's cgroup: its directory, and its path as /proc/<pid>/cgroup shows it. */
export interface CgroupTree {
  readonly dir: string;
  readonly path: string;
}

/**
 * Kills the tree in cgroup `tree` (K1, K2): SIGTERM (and SIGCONT) to every process in it,
 * wait until `populated 0` or the grace passed, then `cgroup.kill` and wait again; the cgroup
 * is removed once it is empty. Nothing can fork its way out in between: a fork lands in the
 * same cgroup, and `cgroup.kill` takes forks in flight too. `quiescent` (proof `cgroup`) only
 * when the kernel says the cgroup is empty.
 *
 * A leader that is alive but not inside (it has not reached its entry yet, or something made
 * it skip the entry) has run nothing of the caller's program in the cgroup, so `outside` — the
 * marker kill — handles it; its verdict is then the one returned (proof `proc`).
 *
 * @example
 * ```ts
 * const verdict = await killCgroupTree(tree, leader, { graceMs: 2000 }, () => markerKill());
 * ```
 */
export async function killCgroupTree(
  tree: CgroupTree,
  leader: ProcessIdentity,
  opts: BoundaryKillOptions,
  outside: () => Promise<TreeKillVerdict>,
): Promise<TreeKillVerdict> {
  let fallback: TreeKillVerdict | null = null;
  if (
    leader.pid > 0 &&
    isSameLiveProcess(leader) &&
    cgroupOf(leader.pid) !== tree.path &&
    !exitingSince(leader)
  ) {
    fallback = await outside();
  }
  const killed = new Set<number>();
  let left: number[] = [];
  if (isPopulated(tree.dir)) {
    for (const pid of cgroupPids(tree.dir)) {
      const stat = readProcStat(pid);
      if (stat === null) continue;
      const id = { pid, startTime: stat.startTime };
      if (signalIdentity(id, 'SIGTERM')) killed.add(pid);
      if (stat.state === 'T' || stat.state === 't') signalIdentity(id, 'SIGCONT');
    }
    if (!(await waitUnpopulated(tree.dir, opts.graceMs))) {
      for (const pid of cgroupPids(tree.dir)) killed.add(pid);
      killCgroup(tree.dir);
      const deadlineMs = opts.killDeadlineMs ?? 2000;
      if (!(await waitUnpopulated(tree.dir, deadlineMs))) left = await exitsFinished(tree.dir, deadlineMs);
    }
  }
  if (left.length === 0) removeCgroup(tree.dir);
  const count = killed.size + (fallback?.killed ?? 0);
  const proof = fallback === null ? 'cgroup' : fallback.proof;
  const stuck = left.filter((pid) => readProcStat(pid)?.state === 'D');
  const escaped = left.filter((pid) => !stuck.includes(pid));
  if (fallback?.status === 'escaped') {
    escaped.push(...fallback.escaped);
    stuck.push(...fallback.stuck);
  }
  if (escaped.length + stuck.length === 0) return { status: 'quiescent', proof, killed: count };
  return { status: 'escaped', proof, killed: count, escaped, stuck };
}

// The members still in `dir` after the kill deadline, once those the kill reached finished dying:
// past the start of their exit or with the SIGKILL pending, they run nothing of their program any
// more, so they are waited for, one more deadline at a time while at least one of them finishes (P8: 1,000 shells hung up at once
// on a loaded 2-core machine took longer than grace + deadline to leave their cgroups).
async function exitsFinished(dir: string, deadlineMs: number): Promise<number[]> {
  let left = cgroupPids(dir);
  while (left.length > 0 && left.every(exitingOrGone)) {
    if (await waitUnpopulated(dir, deadlineMs)) return [];
    const before = left.length;
    left = cgroupPids(dir);
    if (left.length >= before) break;
  }
  return left;
}

// Past the start of its exit, or killed and not yet run since (a SIGKILL pending), or gone.
function exitingOrGone(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat === null || isDeadState(stat.state) || isExiting(stat) || killPending(pid);
}

// Read after its cgroup: a leader past the start of its exit reads as in the root cgroup (P8: a
// terminal's shell that its hang-up just ended), so where it was says nothing. Inside, it was
// where its tree is; not yet inside, it never ran the program (the entry comes before exec), so
// nothing of it is outside. True too when it is a zombie or gone by now.
function exitingSince(leader: ProcessIdentity): boolean {
  const stat = readProcStat(leader.pid);
  return stat === null || stat.startTime !== leader.startTime || isDeadState(stat.state) || isExiting(stat);
}
