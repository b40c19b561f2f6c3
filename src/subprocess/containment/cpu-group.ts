import { mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isSameLiveProcess } from '../identity.js';
import { ownCgroupDir } from './cgroup-fs.js';
import type { Containment } from './containment-types.js';

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
    close() {
      try {
        rmdirSync(dir);
      } catch {} // a tree outlived its kill (reported there); the next runtime's sweep removes it
    },
  };
}

/**
 * `sh -c SCRIPT <cgroup.procs> <program> <args…>`: the leader writes its own pid into the CPU
 * group, then execs the program (same pid), so nothing it runs or forks starts outside. Best
 * effort, unlike the containment entry (cgroup-entry.ts): the group is a scheduling weight, not
 * a boundary, so a failed write runs the program anyway.
 */
const CPU_ENTRY_SCRIPT = `{ echo $$ >"$0"; } 2>/dev/null; exec "$@"`;

/**
 * The containment whose trees all start in `group`: those the spawner starts enter it between
 * clone and exec (`entersAtClone`, its `procs`); every other leader (terminals, `child_process`
 * after the spawner died) is started through the CPU entry, which joins it before the program
 * runs. Moving a leader in after it started would let its first children escape the weight.
 *
 * @example
 * ```ts
 * const weighed = enterCpuGroup(containment, openCpuGroup(runtimeId, 10));
 * weighed.openTree(['/bin/bash', '-c', 'make'], env).argv; // ['/bin/sh', '-c', …, procs, '/bin/bash', '-c', 'make']
 * ```
 */
export function enterCpuGroup(containment: Containment, group: CpuGroup | null): Containment {
  if (group === null) return containment;
  return {
    mode: containment.mode,
    cgroup: containment.cgroup,
    get trees() {
      return containment.trees;
    },
    openTree(argv, env, opts = {}) {
      const tree = containment.openTree(argv, env, opts);
      if (opts.entersAtClone === true && !opts.pty) return tree;
      return {
        treeId: tree.treeId,
        argv: ['/bin/sh', '-c', CPU_ENTRY_SCRIPT, group.procs, ...tree.argv],
        env: tree.env,
        program: tree.program ?? tree.argv[0],
        cgroup: tree.cgroup,
        kill: (leader, killOpts) => tree.kill(leader, killOpts),
        release: () => tree.release(),
      };
    },
    dispose: () => containment.dispose(),
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
