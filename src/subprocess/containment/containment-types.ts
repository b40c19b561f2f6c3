import type { ProcessIdentity, TreeKillVerdict } from '../types.js';

/** Which boundary holds the runtime's process trees (K1). */
export type ContainmentMode = 'cgroup' | 'marker';

/** How the kill of one tree runs. */
export interface BoundaryKillOptions {
  /** Between SIGTERM and the hard kill. */
  readonly graceMs: number;
  /** How long to wait for the tree to vanish after the hard kill (default 2000). */
  readonly killDeadlineMs?: number;
}

/**
 * The boundary of one process tree, made before its leader is spawned (K1): what to exec so the
 * leader is inside before it runs the caller's program, the env it needs, and the kill.
 */
export interface TreeBoundary {
  /** The `TETHER_TREE` marker value every process of the tree inherits (S4). */
  readonly treeId: string;
  /** What to exec: the caller's argv, or a wrapper that enters the boundary and execs it. */
  readonly argv: readonly [string, ...string[]];
  /** The complete child env: the caller's, plus the marker and what entering needs. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The executable to check before spawning when `argv` is a wrapper (so a missing program is
   * still SPAWN_FAILED, not a wrapper's exit 127); `null` when `argv[0]` is the program.
   */
  readonly program: string | null;
  /**
   * The tree's cgroup directory when the boundary was opened with `entersAtClone` (cgroup
   * mode): the spawner puts the leader in it between clone and exec, so `argv` and `env`
   * carry no entry. Otherwise `null`.
   */
  readonly cgroup: string | null;
  /**
   * Kills the whole tree (S4, K2) and says what it proved. `leader` is the spawned leader
   * (`{ pid: -1, startTime: -1 }` when it never became known). Idempotent; after the leader
   * exited it sweeps what is left. The boundary is released when the tree is proven dead.
   */
  kill(leader: ProcessIdentity, opts: BoundaryKillOptions): Promise<TreeKillVerdict>;
  /**
   * Frees the boundary of a tree whose spawn failed (nothing ran in it); resolves once it is
   * gone (a leader whose exec failed may take a moment to leave its cgroup; at most 2 s).
   */
  release(): Promise<void>;
}

/** A runtime's containment: one per runtime, used by whatever starts a tree (K1). */
export interface Containment {
  readonly mode: ContainmentMode;
  /** The runtime's cgroup directory (cgroup mode), else `null`. */
  readonly cgroup: string | null;
  /**
   * Prepares the boundary of one tree. `argv` and `env` are what the caller would exec;
   * `pty`: the leader runs on a terminal (no `bash -c` shortcut applies); `entersAtClone`:
   * the caller starts the leader inside `cgroup` itself (the spawner), so no entry is needed.
   *
   * @example
   * ```ts
   * const tree = containment.openTree(['/bin/bash', '-c', 'make'], env);
   * const child = spawn(tree.argv[0], tree.argv.slice(1), { env: tree.env, detached: true });
   * ```
   */
  openTree(
    argv: readonly [string, ...string[]],
    env: Readonly<Record<string, string>>,
    opts?: { readonly pty?: boolean; readonly entersAtClone?: boolean },
  ): TreeBoundary;
  /** Boundaries opened and not yet released. */
  readonly trees: number;
  /** Kills what is left in any tree, then removes the runtime's cgroup. Idempotent. */
  dispose(): Promise<void>;
}
