import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { SECCOMP_FILTER } from '../subprocess/spawner/spawner.js';
import { type Confinement, isWithin, syscallsOf } from './sandbox-options.js';

/**
 * The enclave's pid 1: reaps every orphan the owner's commands leave (bash reaps adopted
 * children while it waits), survives a `kill -9 -1` from inside (the kernel never delivers
 * SIGKILL from inside a PID namespace to its init), and prints `ready` on stderr (bubblewrap gives
 * the info fd, stdout, to itself alone) once bubblewrap has built every mount, so nothing enters a half-made sandbox.
 */
const CONFINE = '/.tether-confine';

const HOLDER =
  'trap : CHLD; echo ready >&2; exec >/dev/null 2>&1 </dev/null; while :; do sleep 86400 & wait; done';

/**
 * The bubblewrap arguments of one owner's enclave (A3, A6, K5): a PID namespace with the
 * holder as pid 1, dying with the runtime (`--die-with-parent`), reporting its child pid on fd 1.
 *
 * In every mode the host's top-level directories are bound one by one, never `/` as a whole:
 * a bind of `/` would carry the host's `/proc` beneath the enclave's own, and unmounting the
 * enclave's would show it. So `/proc` is the enclave's alone (its `sys` and `sysrq-trigger`
 * read-only), and `/sys` (with the cgroup filesystem) is read-only: a process inside cannot
 * write a kernel setting, a sibling's `cgroup.kill`, or itself into another cgroup.
 *
 * Sandboxed (mode not `off`): the directories read-only and `/` itself too, a fresh `/dev`, a
 * private `/tmp`, the workspace bound read-only (unless in a writable root: also when it lives
 * in `/tmp`), the writable roots bound read-write with their `.git` read-only as a whole, each
 * reachable by the sandbox's uid (`pathTo`), the denied paths covered by unreadable empty ones,
 * no capabilities, and a network namespace of its own unless `network: 'host'`. `staged` maps
 * a root (or the workspace) to its idmapped mount (idmap-mode.h), bound in its place.
 * Bubblewrap applies these in order, so later ones win. `unreadable` is an empty mode-000 file
 * (the bind keeps it alive after it is unlinked).
 *
 * @example
 * ```ts
 * spawn('bwrap', enclaveArgs(confinement, '/tmp/x/empty', new Map(), '/…/build/tether-spawner'));
 * ```
 */
export function enclaveArgs(
  confinement: Confinement,
  unreadable: string,
  staged: ReadonlyMap<string, string>,
  spawner: string,
): string[] {
  const { description: d, workspace } = confinement;
  const sandboxed = d.mode !== 'off';
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--as-pid-1', '--info-fd', '1'];
  args.push(...hostTopLevel(sandboxed ? '--ro-bind' : '--dev-bind', sandboxed ? ['/tmp'] : []));
  args.push(...(sandboxed ? ['--dev', '/dev'] : ['--dev-bind', '/dev', '/dev']));
  args.push('--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys');
  args.push('--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger', '--ro-bind', '/sys', '/sys');
  // The holder runs confined like everything else inside (`--confine`), through the spawner
  // binary bound at a fixed path of the enclave's own root (its host path may not be visible).
  const filter = String(SECCOMP_FILTER[syscallsOf(d)]);
  args.push('--ro-bind', spawner, CONFINE);
  const holder = ['--', CONFINE, '--confine', filter, '/bin/bash', '-c', HOLDER];
  if (!sandboxed) return [...args, '--cap-drop', 'ALL', ...holder];
  args.push('--perms', '1777', '--tmpfs', '/tmp');
  // A path as bubblewrap should read it: through the idmapped mount of the root it lies in, if
  // any, so what is bound over it shows the same owner as the rest of that root.
  const source = (path: string): string => {
    for (const [root, stage] of staged) {
      if (isWithin(path, root)) return join(stage, relative(root, path));
    }
    return path;
  };
  const inRoot = (path: string) => d.writableRoots.some((root) => isWithin(path, root));
  const covered = new Set<string>();
  const reach = (path: string) => args.push(...pathTo(path, d.uid, covered));
  // A home the sandbox's uid may not search (root's 0700) becomes an empty one: its tools then
  // find no config file (ENOENT) instead of warning about one they may not read (EACCES).
  const home = homedir();
  if (home !== '/' && !isWithin(home, '/tmp') && closedTo(home, d.uid)) {
    args.push('--perms', '0755', '--tmpfs', home);
    covered.add(home);
  }
  if (!inRoot(workspace)) {
    reach(workspace);
    args.push('--ro-bind', source(workspace), workspace);
  }
  for (const root of d.writableRoots) {
    reach(root);
    args.push('--bind', source(root), root);
  }
  for (const root of d.writableRoots) {
    for (const git of gitPaths(root).filter(inRoot)) args.push('--ro-bind', source(git), git);
  }
  for (const own of runtimePaths(spawner).filter(inRoot)) args.push('--ro-bind', source(own), own);
  for (const denied of d.denyRead) {
    const path = realOrNull(denied);
    if (path === null) continue;
    const kind = kindOf(path);
    if (kind === 'dir') args.push('--perms', '0000', '--tmpfs', path, '--remount-ro', path);
    else if (kind === 'file') args.push('--ro-bind', unreadable, path);
  }
  if (d.network === 'none') args.push('--unshare-net');
  args.push('--remount-ro', '/', '--cap-drop', 'ALL');
  return [...args, ...holder];
}

// Every entry of the host's `/` but the ones the enclave makes itself, as bind (directories,
// files) or symlink (merged-/usr links such as /bin -> usr/bin) arguments.
function hostTopLevel(bind: '--dev-bind' | '--ro-bind', alsoSkip: readonly string[]): string[] {
  const skip = new Set(['/proc', '/sys', '/dev', ...alsoSkip]);
  const args: string[] = [];
  for (const name of readdirSync('/').sort()) {
    const path = `/${name}`;
    if (skip.has(path)) continue;
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (stat.isDirectory() || stat.isFile()) args.push(bind, path, path);
    } catch {} // gone since readdir
  }
  return args;
}

// How the sandbox's uid reaches `path` (a writable root or the workspace): inside the private
// /tmp through directories of mode 0755 (bubblewrap would make them 0700); elsewhere, when an
// ancestor is closed to that uid (others may not search it: root's 0700 home, a 0700 mkdtemp
// directory), that ancestor is covered by an empty tmpfs holding only the way down. Nothing is
// lost: what the uid could not search before it cannot see now. `covered` is shared between
// the calls of one enclave, so each ancestor is covered once.
function pathTo(path: string, uid: number, covered: Set<string>): string[] {
  const chain: string[] = [];
  for (let dir = dirname(path); dir !== '/' && dir !== '/tmp'; dir = dirname(dir)) chain.unshift(dir);
  const args: string[] = [];
  let skeleton = isWithin(path, '/tmp');
  for (const dir of chain) {
    if (skeleton) {
      if (!covered.has(dir)) args.push('--perms', '0755', '--dir', dir);
    } else if (closedTo(dir, uid)) {
      if (!covered.has(dir)) args.push('--perms', '0755', '--tmpfs', dir);
      skeleton = true;
    }
    if (skeleton) covered.add(dir);
  }
  return args;
}

// True when `uid` may not search `dir` (no x bit for it as owner, nor for others).
function closedTo(dir: string, uid: number): boolean {
  try {
    const { mode, uid: owner } = lstatSync(dir);
    return owner === uid ? (mode & 0o100) === 0 : (mode & 0o001) === 0;
  } catch {
    return false;
  }
}

/**
 * A6: what of a writable root's git repository stays read-only, because the host's own git runs
 * what is written there (hooks, `core.fsmonitor`, filter drivers, `commondir` and `alternates`
 * pointing elsewhere): `.git` as a whole (a bind, so it cannot be renamed away either: EBUSY),
 * and for a `.git` file (a worktree) the directory it names and that directory's `commondir`.
 * A missing `.git` returns nothing: one made inside the sandbox is the agent's (README).
 *
 * @example
 * ```ts
 * gitPaths('/work/repo'); // ['/work/repo/.git']
 * ```
 */
export function gitPaths(root: string): string[] {
  const git = join(root, '.git');
  const kind = kindOf(git);
  if (kind === 'dir') return [git];
  if (kind !== 'file') return [];
  const paths = [git];
  const gitdir = pointer(git, /^gitdir:\s*(.+)$/m, root);
  if (gitdir !== null && kindOf(gitdir) === 'dir') {
    paths.push(gitdir);
    const common = pointer(join(gitdir, 'commondir'), /^(.+)$/m, gitdir);
    if (common !== null && kindOf(common) === 'dir') paths.push(common);
  }
  return [...new Set(paths)];
}

// The real path a git indirection file names (relative to `base`), or null.
function pointer(file: string, pattern: RegExp, base: string): string | null {
  try {
    const target = pattern.exec(readFileSync(file, 'utf8'))?.[1]?.trim();
    return target ? realpathSync(resolve(base, target)) : null;
  } catch {
    return null;
  }
}

// A6: what of this runtime's own install the host executes later as itself — the spawner binary
// (every terminal, enclave and fallback spawn execs it) and the compiled code — stays read-only
// when a writable root holds it (a project's node_modules/tether-runtime): replaced there, it
// would run outside the sandbox with the runtime's rights.
function runtimePaths(spawner: string): string[] {
  const root = dirname(dirname(spawner)); // <package>/build/tether-spawner
  return [join(root, 'build'), join(root, 'dist')].filter((path) => kindOf(path) === 'dir');
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
