import { TetherError } from '../../errors.js';
import { newTreeId, TREE_MARKER_ENV } from '../marker.js';
import { markBeforeSpawn } from '../pid-mark.js';
import { killProcessTree } from '../tree-kill.js';
import type { TreeKillVerdict } from '../types.js';
import type { Containment } from './containment-types.js';

/**
 * The fallback where no writable cgroup v2 exists (K1): every process of a tree inherits the
 * `TETHER_TREE` marker, and the kill sweeps /proc for it (S4; `ps` without /proc). Weaker than
 * a cgroup: a process that empties its environment and leaves the session is not found — the
 * kill then says `escaped` only if something still points at it, else nothing can. A look-alike
 * of such an escapee (no marker, own session, orphaned) counts only inside this process's cgroup
 * subtree, which the tree cannot leave without write access to cgroups (then cgroup mode is the
 * one to use): a privileged tree member that moves itself out is not found either.
 *
 * @example
 * ```ts
 * const c = createMarkerContainment();
 * const tree = c.openTree(['sleep', '5'], env); // tree.argv is the argv as given
 * ```
 */
export function createMarkerContainment(): Containment {
  let trees = 0;
  let disposed = false;
  return {
    mode: 'marker',
    cgroup: null,
    openTree(argv, env) {
      if (disposed) throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
      const treeId = newTreeId();
      const since = markBeforeSpawn();
      let inFlight: Promise<TreeKillVerdict> | null = null;
      let open = true;
      trees++;
      const close = () => {
        if (open) trees--;
        open = false;
      };
      return {
        treeId,
        argv,
        env: { ...env, [TREE_MARKER_ENV]: treeId },
        program: null,
        cgroup: null,
        kill(leader, opts) {
          inFlight ??= killProcessTree({ root: leader, treeId, since, inOwnCgroup: true }, opts).then(
            (verdict) => {
              inFlight = null;
              if (verdict.status === 'quiescent') close();
              return verdict;
            },
          );
          return inFlight;
        },
        release: async () => close(),
      };
    },
    get trees() {
      return trees;
    },
    async dispose() {
      disposed = true;
    },
  };
}
