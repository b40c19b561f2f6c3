import { lstatSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { type Confinement, isWithin } from './sandbox-options.js';

/**
 * The enclave's pid 1: reaps every orphan the owner's commands leave (bash reaps adopted
 * children while it waits), survives a `kill -9 -1` from inside (the kernel never delivers
 * SIGKILL from inside a PID namespace to its init), and prints `ready` on stderr (bubblewrap gives
 * the info fd, stdout, to itself alone) once bubblewrap has built every mount, so nothing enters a half-made sandbox.
 */
const HOLDER =
  'trap : CHLD; echo ready >&2; exec >/dev/null 2>&1 </dev/null; while :; do sleep 86400 & wait; done';

/**
 * The bubblewrap arguments of one owner's enclave (A3, K5): a PID namespace with the holder
 * as pid 1, dying with the runtime (`--die-with-parent`), reporting its child pid on fd 1.
 * Sandboxed (mode not `off`): the host root read-only, a fresh `/dev` and `/proc`, a private
 * `/tmp` (the workspace stays visible read-only when it lives there), the writable roots
 * bound read-write with their `.git/hooks` and `.git/config` read-only again, the denied
 * paths covered by unreadable empty ones, no capabilities, and a network namespace of its
 * own unless `network: 'host'`. Bubblewrap applies these in order, so later ones win.
 * `unreadable` is an empty mode-000 file (the bind keeps it alive after it is unlinked).
 *
 * @example
 * ```ts
 * spawn('bwrap', [...enclaveArgs(confinement, '/tmp/x/empty'), '--', '/bin/bash', '-c', HOLDER]);
 * ```
 */
export function enclaveArgs(confinement: Confinement, unreadable: string): string[] {
  const { description: d, workspace } = confinement;
  const common = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--as-pid-1', '--info-fd', '1'];
  const holder = ['--', '/bin/bash', '-c', HOLDER];
  if (d.mode === 'off') {
    // K5 only: the whole host filesystem as it is, a /proc of the new PID namespace.
    return [...common, '--dev-bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc', ...holder];
  }
  const args = [...common, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  if (isWithin(workspace, '/tmp') && !d.writableRoots.some((root) => isWithin(workspace, root))) {
    args.push('--ro-bind', workspace, workspace);
  }
  for (const root of d.writableRoots) {
    args.push('--bind', root, root);
    args.push(...gitGuards(root));
  }
  for (const denied of d.denyRead) {
    const path = realOrNull(denied);
    if (path === null) continue;
    const kind = kindOf(path);
    if (kind === 'dir') args.push('--perms', '0000', '--tmpfs', path, '--remount-ro', path);
    else if (kind === 'file') args.push('--ro-bind', unreadable, path);
  }
  if (d.network === 'none') args.push('--unshare-net');
  args.push('--cap-drop', 'ALL');
  return [...args, ...holder];
}

// A3: a planted hook or `core.fsmonitor` would run outside the sandbox the next time a person
// uses git, so these two stay read-only even inside a writable root (a missing hooks directory
// becomes an empty read-only one). A `.git` file (a worktree) points outside the root.
function gitGuards(root: string): string[] {
  const git = join(root, '.git');
  if (kindOf(git) !== 'dir') return [];
  const hooks = join(git, 'hooks');
  const config = join(git, 'config');
  const guards =
    kindOf(hooks) === 'dir'
      ? ['--ro-bind', hooks, hooks]
      : ['--perms', '0555', '--tmpfs', hooks, '--remount-ro', hooks];
  if (kindOf(config) === 'file') guards.push('--ro-bind', config, config);
  return guards;
}

function kindOf(path: string): 'dir' | 'file' | null {
  try {
    const stat = lstatSync(path);
    if (stat.isDirectory()) return 'dir';
    return stat.isFile() ? 'file' : null;
  } catch {
    return null;
  }
}

// Where a denied path really is (a symlinked ~/.ssh is covered where it points); null if absent.
function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
