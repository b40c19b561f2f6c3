import type { Readable, Writable } from 'node:stream';

/** What a child's stdio slot is connected to. 'pipe' gives the caller a stream. */
export type StdioDisposition = 'pipe' | 'ignore' | 'inherit';

/**
 * Everything needed to start one process, explicitly (SPEC S1): the provider never
 * guesses a shell, a directory, a buffer cap or a deadline.
 *
 * @example
 * ```ts
 * const spec: SubprocessSpawnSpec = {
 *   argv: ['/bin/bash', '-c', 'echo hi'], cwd: '/tmp',
 *   stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
 *   cleanupGraceMs: 2000, env: { TERM: 'dumb' },
 * };
 * ```
 */
export interface SubprocessSpawnSpec {
  /** argv[0] is the executable (looked up in PATH when it has no slash); no shell interpretation. */
  readonly argv: readonly [string, ...string[]];
  readonly cwd: string;
  readonly stdio: {
    readonly stdin: StdioDisposition;
    readonly stdout: StdioDisposition;
    readonly stderr: StdioDisposition;
  };
  /** Between SIGTERM and SIGKILL when the tree is killed. */
  readonly cleanupGraceMs: number;
  /** Aborting kills the whole tree (S4). */
  readonly signal?: AbortSignal;
  /** Applied over the sanitized host env: a string sets, `undefined` deletes (S3). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** A process as the kernel knows it: a pid is only meaningful together with its start time. */
export interface ProcessIdentity {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot); `null` where there is no /proc. */
  readonly startTime: number | null;
}

/**
 * What a tree kill proved. `quiescent` means every process of the tree was observed dead
 * (zombies count as dead). Anything else lists the pids that are still alive.
 */
export type TreeKillVerdict =
  | { readonly status: 'quiescent'; readonly proof: TreeProof; readonly killed: number }
  | {
      readonly status: 'escaped';
      readonly proof: TreeProof;
      readonly killed: number;
      /** Alive after SIGKILL and the kill deadline, not in uninterruptible sleep. */
      readonly escaped: readonly number[];
      /** In uninterruptible sleep (state D): the kernel will not let them die yet. */
      readonly stuck: readonly number[];
    };

/** `proc`: decided from /proc (Linux). `ps`: walked with ps; weaker (no start times, no env marker). */
export type TreeProof = 'proc' | 'ps';

export interface SubprocessExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A running process tree handed out by a provider. Its owner must call `kill()` or await `exited`. */
export interface SubprocessHandle {
  readonly identity: ProcessIdentity;
  /** Value of the inherited env marker that tags every process of this tree. */
  readonly treeId: string;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** Resolves when the leader has exited (never rejects). */
  readonly exited: Promise<SubprocessExit>;
  /**
   * Kill the whole tree: TERM, CONT, grace, KILL, observe until gone (S4). Also the way to
   * sweep what is left after the leader exited (returns at once when nothing is).
   */
  kill(): Promise<TreeKillVerdict>;
}

/** Options for a terminal child (used by the PTY host; S2). */
export interface TerminalSpawnSpec extends Omit<SubprocessSpawnSpec, 'stdio'> {
  readonly cols: number;
  readonly rows: number;
}

/**
 * The execution seam (S2). The local provider runs on this machine; a remote provider
 * (SSH, a cloud sandbox) can replace it without any tool contract changing.
 */
export interface SubprocessProvider {
  readonly name: string;
  /** Starts the process; rejects with TetherError SPAWN_FAILED / CWD_NOT_FOUND when it cannot. */
  spawn(spec: SubprocessSpawnSpec): Promise<SubprocessHandle>;
}
