import { existsSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { TetherError } from '../../errors.js';
import { newTreeId, TREE_MARKER_ENV } from '../marker.js';
import { markBeforeSpawn } from '../pid-mark.js';
import { killProcessTree } from '../tree-kill.js';
import type { TreeKillVerdict } from '../types.js';
import { CGROUP_PROCS_ENV, entersThroughBashEnv, installBashEntry, SH_ENTRY_SCRIPT } from './cgroup-entry.js';
import { cgroupPids, killCgroup, removeCgroup, subgroups } from './cgroup-fs.js';
import { type CgroupTree, killCgroupTree } from './cgroup-tree-kill.js';
import { waitUnpopulated } from './cgroup-watch.js';
import type { Containment, TreeBoundary } from './containment-types.js';
import { unusable } from './state-dir.js';

export interface CgroupContainmentOptions {
  /** The cgroup v2 mount point (from `probeCgroup`). */
  readonly mount: string;
  /** The runtime's own cgroup directory, to be created (named after the runtime, K3). */
  readonly dir: string;
  /** Where the `BASH_ENV` entry file is kept. */
  readonly stateDir: string;
}

/**
 * Cgroup containment (K1, K2): one cgroup per runtime (`dir`), one per tree below it
 * (`t<n>`). Every leader is in its tree's cgroup before it execs the caller's program —
 * cloned into it by the spawner (clone3, x86-64) or written in between clone and exec when
 * the spawner starts it, else a `bash -c` through `BASH_ENV` and anything else through a `sh`
 * wrapper — so not even its first fork is outside. Kill is `cgroup.kill`, dead is `populated 0`.
 *
 * @example
 * ```ts
 * const probe = probeCgroup();
 * if (probe.ok) {
 *   const c = createCgroupContainment({ mount: probe.mount, dir: `${probe.self}/tether-1`, stateDir });
 *   const tree = c.openTree(['/bin/bash', '-c', 'sleep 1 &'], env);
 *   await c.dispose();
 * }
 * ```
 */
export function createCgroupContainment(opts: CgroupContainmentOptions): Containment {
  const { mount, dir } = opts;
  try {
    mkdirSync(dir);
  } catch (err) {
    throw new TetherError(
      'CONTAINMENT_UNAVAILABLE',
      `could not create the runtime's cgroup ${dir}: ${(err as Error).message}; use containment: 'marker' or a delegated cgroup`,
      { cause: err },
    );
  }
  if (!existsSync(join(dir, 'cgroup.kill'))) {
    removeCgroup(dir);
    throw new TetherError(
      'CONTAINMENT_UNAVAILABLE',
      `the cgroup ${dir} has no cgroup.kill (Linux 5.14 or later is needed); use containment: 'marker'`,
    );
  }
  let bashEnv: string;
  try {
    bashEnv = installBashEntry(opts.stateDir);
  } catch (err) {
    removeCgroup(dir); // nothing of a runtime that could not start stays behind
    throw unusable(opts.stateDir, err);
  }
  // One stat per spawn: a startup file someone deleted is written again, never skipped.
  const entryFile = () => (existsSync(bashEnv) ? bashEnv : installBashEntry(opts.stateDir));
  const open = new Map<string, CgroupTree>();
  let next = 0;
  let disposing: Promise<void> | null = null;

  const openTree: Containment['openTree'] = (argv, env, o = {}) => {
    if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
    const treeDir = join(dir, `t${++next}`);
    mkdirSync(treeDir);
    const tree: CgroupTree = { dir: treeDir, path: `/${relative(mount, treeDir)}` };
    open.set(treeDir, tree);
    const treeId = newTreeId();
    const since = markBeforeSpawn();
    const procs = join(treeDir, 'cgroup.procs');
    const atClone = o.entersAtClone === true && !o.pty;
    const bash = !atClone && !o.pty && entersThroughBashEnv(argv, env);
    let inFlight: Promise<TreeKillVerdict> | null = null;
    const boundary: TreeBoundary = {
      treeId,
      argv: atClone || bash ? argv : ['/bin/sh', '-c', SH_ENTRY_SCRIPT, procs, ...argv],
      env: {
        ...env,
        [TREE_MARKER_ENV]: treeId,
        ...(bash ? { BASH_ENV: entryFile(), [CGROUP_PROCS_ENV]: procs } : {}),
      },
      program: atClone || bash ? null : argv[0],
      cgroup: atClone ? treeDir : null,
      kill(leader, killOpts) {
        inFlight ??= killCgroupTree(tree, leader, killOpts, () =>
          killProcessTree({ root: leader, treeId, since }, { graceMs: killOpts.graceMs }),
        ).then((verdict) => {
          inFlight = null;
          if (verdict.status === 'quiescent') open.delete(treeDir);
          return verdict;
        });
        return inFlight;
      },
      async release() {
        open.delete(treeDir);
        if (removeCgroup(treeDir)) return;
        // A leader cloned into it whose exec failed may not have left it yet: remove it as
        // soon as it is empty, not at dispose (the failed spawn's error waits for this).
        await waitUnpopulated(treeDir, 2000);
        removeCgroup(treeDir);
      },
    };
    return boundary;
  };

  return {
    mode: 'cgroup',
    cgroup: dir,
    openTree,
    get trees() {
      return open.size;
    },
    dispose() {
      disposing ??= (async () => {
        // Normally empty: every tree was killed by its owner. Whatever is left goes now.
        await Promise.all(
          subgroups(dir).map(async (tree) => {
            if (cgroupPids(tree).length > 0) killCgroup(tree);
            await waitUnpopulated(tree, 2000);
            removeCgroup(tree);
          }),
        );
        open.clear();
        removeCgroup(dir);
      })();
      return disposing;
    },
  };
}
