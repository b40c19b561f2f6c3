import type { Readable, Writable } from 'node:stream';
import type { CaptureMarks, CaptureReport } from './pty/marked-capture.js';

export type { CaptureMarks, CaptureReport } from './pty/marked-capture.js';

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
  /**
   * Where the bytes of the piped stdout and stderr may go instead of the streams' 'data' events,
   * in arrival order: each read is a view of one reused buffer, valid only during the call (copy
   * what you keep). A provider that honours it says so with `outputFed` on the handle; one that
   * does not (a caller's own provider) leaves it to the streams, which is always correct.
   * Why: a stream allocates a fresh buffer for every read, and at pipe speed that churn drives
   * the host's garbage collector into back-to-back full collections (P2, BENCHMARKS.md).
   */
  readonly onOutput?: OutputFeed;
  /**
   * K6: what the tree is for the runtime (kind, id, label, owner): a persisting provider keeps it
   * with the tree and lists it to a successor runtime; other providers ignore it.
   */
  readonly tag?: Readonly<Record<string, string | number>>;
}

/**
 * Receives a child's output bytes as they are read, with the pipe they came from (1 stdout,
 * 2 stderr: each stream decodes on its own); `bytes` is reused after the call returns.
 */
export type OutputFeed = (bytes: Uint8Array, fd: 1 | 2) => void;

/**
 * The namespaces of a running process (an owner's enclave, A3/K5) that a child joins before it
 * execs, and what it gives up there (A6): every capability and new privileges, the host's uid
 * (for an unprivileged one), and the system calls of the seccomp filter.
 */
export interface NamespaceJoin {
  readonly holder: ProcessIdentity;
  readonly namespaces: readonly ('mnt' | 'pid' | 'ipc' | 'net')[];
  readonly dropCapabilities: boolean;
  /** The uid and gid the child changes to before it execs, or null to keep the runtime's. */
  readonly identity: { readonly uid: number; readonly gid: number } | null;
  /**
   * The seccomp filter (src/subprocess/spawner/seccomp-filter.h): `always` refuses the calls
   * no confined process may make; `no-unix` also AF_UNIX sockets (network `none`).
   */
  readonly syscalls: 'none' | 'always' | 'no-unix';
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

/**
 * `cgroup`: the kernel said the tree's cgroup is empty (K2; nothing can hide from it).
 * `proc`: decided from /proc (Linux), by the env marker, group and session (S4).
 * `ps`: walked with ps; weaker (no start times, no env marker).
 */
export type TreeProof = 'cgroup' | 'proc' | 'ps';

export interface SubprocessExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /**
   * Set when what started the process died under it (the local spawner, issue 30.3) and its
   * exit status or its output could not be learned: `exitCode` and `signal` are then null (an
   * unknown status is never reported as 0) and `reason` says what is unknown.
   */
  readonly lost?: SubprocessLoss;
}

/** What a process's {@link SubprocessExit} could not learn, and why (a sentence). */
export interface SubprocessLoss {
  readonly by: 'spawner';
  readonly reason: string;
}

/** A running process tree handed out by a provider. Its owner must call `kill()` or await `exited`. */
export interface SubprocessHandle {
  readonly identity: ProcessIdentity;
  /** Value of the inherited env marker that tags every process of this tree. */
  readonly treeId: string;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /**
   * True when the pipes' bytes went to the spec's `onOutput` (the streams then carry no 'data',
   * only their 'close'; pause(), resume() and destroy() still act on the read).
   */
  readonly outputFed?: boolean;
  /** Resolves when the leader has exited (never rejects). */
  readonly exited: Promise<SubprocessExit>;
  /**
   * Sends `signal` to the leader's process group on the host that runs it, only while the
   * leader is the same live process (J7's interrupt). Optional: without it a caller signals
   * the group through this machine's kernel, which only a local provider can mean.
   */
  signalGroup?(signal: NodeJS.Signals): Promise<boolean>;
  /**
   * Kill the whole tree: TERM, CONT, grace, KILL, observe until gone (S4). Also the way to
   * sweep what is left after the leader exited (returns at once when nothing is).
   */
  kill(): Promise<TreeKillVerdict>;
}

/**
 * A process to start on a pseudo-terminal (S1, S2): the same explicit fields as
 * {@link SubprocessSpawnSpec} (the env is an overlay on the provider's sanitized host env), a
 * window size instead of stdio dispositions.
 */
export interface TerminalSpawnSpec extends Omit<SubprocessSpawnSpec, 'stdio'> {
  readonly cols: number;
  readonly rows: number;
}

/** How a terminal's process ended. `host_crashed`: what hosted the PTY died; its tree was killed. */
export interface TerminalHandleExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly reason: 'exit' | 'host_crashed';
}

/** Which processes of a terminal a signal is for: its foreground process group, or its whole session. */
export type TerminalSignalTarget = 'foreground' | 'session';

/**
 * A thread of the terminal's foreground process group that was seen blocked waiting for input
 * on this terminal (T6). `tid` and `wakeups` (how often that thread was scheduled so far) let
 * a caller that probed before writing tell a wait that began after its input from one that
 * already existed (T5): a later proof counts only with another `tid` or more `wakeups`.
 */
export interface InputWaitProof {
  readonly pid: number;
  readonly tid: number;
  /** The blocking call, e.g. `read` or `pselect6`. */
  readonly via: string;
  readonly wakeups: number;
}

/**
 * A terminal handle's answer to "does its foreground group wait for input?" (T6), for the
 * moment of the probe. `waiting: true` carries the proof; `waiting: false` says the provider
 * looked and the group is running, blocked elsewhere or absent; `unknown` says it cannot tell
 * (no proof on this platform or placement, an unreadable or vanished process, a race). A
 * provider without a proof mechanism always answers `unknown`, and `send` then answers
 * `inferred_idle`, never a false `stdin_read`. `readBytes`, where the provider can count it, is
 * how many bytes the terminal's processes have read so far (every read, counted before the
 * scan): `send` requires it to have grown by the input's complete lines (T5).
 *
 * @example
 * ```ts
 * const answer = await handle.probeInput();
 * if ('unknown' in answer) console.log(`cannot tell: ${answer.unknown}`);
 * else if (answer.waiting) console.log(`pid ${answer.proof.pid} waits in ${answer.proof.via}`);
 * ```
 */
export type InputProbe =
  | { readonly waiting: true; readonly proof: InputWaitProof; readonly readBytes?: number }
  | { readonly waiting: false; readonly reason: string; readonly readBytes?: number }
  | { readonly unknown: string };

/**
 * A process on a pseudo-terminal handed out by a provider (S2). Its owner must call `kill()`.
 * Everything the terminal service needs is here: it decides wait reasons from `probeInput`
 * answers alone and never looks at processes itself, so a remote or sandboxed terminal
 * answers the same questions from its own side.
 */
/**
 * A terminal's output being watched for one command's markers (T7), where the provider does it
 * off the main thread. `report` resolves once: complete, or — after `release()` or the
 * terminal's exit — with what it held.
 *
 * @example
 * ```ts
 * const watch = handle.watchMarked!(executionMarks(nonce), 1_048_576);
 * const report = await watch.report; // { body, omitted, status, complete }
 * ```
 */
export interface MarkedOutputWatch {
  readonly report: Promise<CaptureReport>;
  release(): void;
}

export interface TerminalHandle {
  /** The leader (session and group leader of the terminal), with its start time. */
  readonly identity: ProcessIdentity;
  /** The `TETHER_TREE` marker every process of this terminal inherits (S4). */
  readonly treeId: string;
  /** The slave side, e.g. `/dev/pts/7`. */
  readonly ttyPath: string;
  /** Resolves once all of `data` was written to the terminal; rejects TERMINAL_CLOSED after exit. */
  write(data: string): Promise<void>;
  /** Sets the window size (positive integers); ignored after exit. */
  resize(cols: number, rows: number): void;
  /**
   * Batches of output, in order, every byte before `exited` resolves. Output that arrives while
   * no listener is subscribed is kept and replayed to the next one. Returns the unsubscribe.
   */
  onData(listener: (text: string) => void): () => void;
  /** `performance.now()` when the last batch of output arrived (the open time before any). */
  readonly lastOutputAt: number;
  /** Resolves, never rejects, after all output was delivered. */
  readonly exited: Promise<TerminalHandleExit>;
  /**
   * Sends `signal` to the foreground process group or to every process of the session,
   * re-reading identities first (T8). `false` when nothing was delivered, always after the
   * leader's exit was observed.
   */
  signal(signal: NodeJS.Signals, target: TerminalSignalTarget): boolean;
  /**
   * Delivers `signal` to what runs in the foreground now (T8): like `signal(s, 'foreground')`,
   * but it retries a delivery that raced a foreground program's exit, and for SIGINT, SIGQUIT
   * and SIGTSTP re-checks for a moment that another program did not take the foreground
   * instead. `false` when no live foreground process got it.
   */
  signalForeground(signal: NodeJS.Signals): Promise<boolean>;
  /** Whether the foreground group waits for input on this terminal right now (T5, T6). */
  probeInput(): Promise<InputProbe>;
  /**
   * Optional (T5): resolves once every byte the terminal's processes wrote before the call was
   * handed to `onData` listeners (or the terminal ended). Without it `send` gives stragglers a
   * short fixed time instead.
   */
  settled?(): Promise<void>;
  /**
   * T7: watches output from the next batch on for `marks`, keeping the body within `capChars`,
   * where the provider can do it away from the main thread (the PTY host worker does). Optional:
   * without it, `execute` scans the batches on the main thread (still O(batch) each).
   */
  watchMarked?(marks: CaptureMarks, capChars: number): MarkedOutputWatch;
  /**
   * Hangs the terminal up, then kills the whole tree and verifies it is gone (S4, T4).
   * Resolves after `exited` when the verdict is quiescent.
   */
  kill(): Promise<TreeKillVerdict>;
}

/**
 * The execution seam (S2). The local provider runs on this machine; a remote provider
 * (SSH, a cloud sandbox) can replace it without any tool contract changing. A runtime that
 * was handed a provider (`createRuntime({ provider })`, `rt.reload({ provider })`) owns it
 * from then on: `rt.dispose()` calls its `dispose`.
 */
export interface SubprocessProvider {
  readonly name: string;
  /** Starts the process; rejects with TetherError SPAWN_FAILED / CWD_NOT_FOUND when it cannot. */
  spawn(spec: SubprocessSpawnSpec): Promise<SubprocessHandle>;
  /** Starts the process on a new pseudo-terminal; rejects like `spawn`. */
  spawnTerminal(spec: TerminalSpawnSpec): Promise<TerminalHandle>;
  /** Worker threads (or connections) it runs now; 0 when it holds nothing (D3). */
  readonly workers?: number;
  /**
   * Releases what the provider itself holds (e.g. the PTY worker), after every handle it gave
   * out was killed. Idempotent; spawning afterwards fails with RUNTIME_DISPOSED.
   */
  dispose?(): Promise<void>;
}
