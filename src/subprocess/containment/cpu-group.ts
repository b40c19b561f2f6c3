import { mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isSameLiveProcess } from '../identity.js';
import { ownCgroupDir } from './cgroup-fs.js';

/**
 * One CPU weight for all of a runtime's trees together (issue 30.6). A `nice` per tree is not
 * enough where the kernel groups by session (autogroup, on by default): every tree's `setsid`
 * makes a scheduling group as heavy as the runtime's whole process, so 64 floods outweigh the
 * event loop 64 to 1 whatever their nice. Measured (`node bench/floods.js`): the main thread
 * then waited for a CPU 56 of 65 ms in its stalls. In one cgroup of the CPU controller the trees
 * leave their autogroups (the kernel applies those to the root group only) and together weigh
 * what one process `nice` levels below the runtime weighs.
 */
export interface CpuGroup {
  /** The group's `cgroup.procs`: a process writing `0` there joins it (the spawner's children). */
  readonly procs: string;
  /** Moves `pid` (a leader the spawner did not start: terminals, the fallback) into it; best effort. */
  join(pid: number): void;
  /** Removes the group once every tree ended (an empty cgroup: rmdir). */
  close(): void;
}

const NAME = /^tether-(\d+)-(\d+)-\d+$/;

/**
 * Makes the runtime's CPU group `tether-<runtimeId>` beside this process in the cgroup v1 `cpu`
 * hierarchy, with the `cpu.shares` of one process `nice` levels below (the kernel's weight
 * table: 1024 / 1.25^nice). Null when there is nothing to do or no way to do it: `nice` 0, no
 * v1 `cpu` hierarchy (a pure cgroup v2 host, where the trees' cgroups are below this process's
 * own and the CPU controller cannot be enabled there), or no right to make one. Then each tree
 * keeps its own nice and autogroup nice (tether-spawner.c).
 *
 * @example
 * ```ts
 * const group = openCpuGroup('4242-123456-1', 10); // shares 110
 * group?.join(child.pid);
 * group?.close(); // after every tree was killed
 * ```
 */
export function openCpuGroup(runtimeId: string, nice: number): CpuGroup | null {
  if (nice <= 0) return null;
  const own = ownCgroupDir('cpu');
  if (!own.ok) return null;
  const dir = join(own.self, `tether-${runtimeId}`);
  try {
    mkdirSync(dir);
  } catch {
    return null; // not root, read-only, or no such hierarchy here: the per-tree nice remains
  }
  try {
    writeFileSync(join(dir, 'cpu.shares'), String(Math.max(2, Math.round(1024 / 1.25 ** nice))));
  } catch {
    rmdirSync(dir);
    return null;
  }
  const procs = join(dir, 'cgroup.procs');
  return {
    procs,
    join(pid) {
      try {
        writeFileSync(procs, String(pid));
      } catch {} // it exited already, or the group went: a scheduling hint, never a failure
    },
    close() {
      try {
        rmdirSync(dir);
      } catch {} // a tree outlived its kill (reported there); the next runtime's sweep removes it
    },
  };
}

/**
 * Removes the CPU groups that crashed runtimes left beside this process (`tether-<pid>-<start>-<n>`
 * whose process is no longer alive with that start time). Only an empty cgroup can be removed,
 * so nothing of a live tree is touched; one that still holds processes stays for a later sweep
 * (the runtime's reap kills them through its own cgroup first). Returns how many went.
 *
 * @example
 * ```ts
 * sweepDeadCpuGroups(); // 1 after a SIGKILLed runtime
 * ```
 */
export function sweepDeadCpuGroups(): number {
  const own = ownCgroupDir('cpu');
  if (!own.ok) return 0;
  let names: string[];
  try {
    names = readdirSync(own.self);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const match = NAME.exec(name);
    if (match === null) continue;
    if (isSameLiveProcess({ pid: Number(match[1]), startTime: Number(match[2]) })) continue;
    try {
      rmdirSync(join(own.self, name));
      removed++;
    } catch {}
  }
  return removed;
}
