import { type ChildProcess, type SpawnOptions, spawn as spawnChild } from 'node:child_process';
import { statSync } from 'node:fs';
import pLimit, { type LimitFunction } from 'p-limit';
import { findExecutable } from '../../workers/pty-path.js';
import { TetherError } from '../errors.js';
import type { Containment, TreeBoundary } from './containment/containment-types.js';
import { createMarkerContainment } from './containment/marker-containment.js';
import { type EnvPolicy, sanitizeEnv } from './env.js';
import { readIdentity } from './identity.js';
import { createPtyHost, type PtyHost } from './pty/pty-host.js';
import { type SpawnedChild, type Spawner, SpawnerGone, SpawnRefused } from './spawner/spawner.js';
import type {
  NamespaceJoin,
  ProcessIdentity,
  SubprocessExit,
  SubprocessHandle,
  SubprocessProvider,
  SubprocessSpawnSpec,
  TerminalHandle,
  TerminalSpawnSpec,
  TreeKillVerdict,
} from './types.js';

export interface LocalProviderOptions {
  /** How the host env is sanitized before the spec's overlay is applied (S3). */
  readonly env?: EnvPolicy;
  /**
   * Where terminals run (tests). By default the provider starts its own PTY host worker on the
   * first `spawnTerminal` and stops it in `dispose`; a given host is the caller's to dispose.
   */
  readonly ptyHost?: PtyHost;
  /**
   * The boundary every tree is started in (K1): a runtime passes its cgroup containment.
   * Default: the env marker (S4). The containment stays the caller's to dispose.
   */
  readonly containment?: Containment;
  /**
   * Starts `spawn` children without forking this process (P1; see tether-spawner.c). Default:
   * none, every child goes through `child_process`. The spawner stays the caller's to dispose;
   * once it is gone, children go through `child_process` again.
   */
  readonly spawner?: Spawner | null;
}

/** The local provider: also says whether its PTY worker runs (`workers`) and stops it (`dispose`). */
export interface LocalProvider extends SubprocessProvider {
  readonly workers: number;
  readonly containment: Containment['mode'];
  /**
   * `spawn`, with the child joining `join`'s namespaces between clone and exec (the sandbox's
   * way into an enclave without nsenter and setpriv, A3/K5). `null` when this provider cannot
   * do that now (no spawner): nothing started, the caller enters another way.
   */
  spawnJoined(spec: SubprocessSpawnSpec, join: NamespaceJoin): Promise<SubprocessHandle | null>;
  dispose(): Promise<void>;
}

/**
 * The provider that runs processes on this machine (S2). Every child leads its own process
 * group and session (`detached`), carries the tree marker in its env, and is killed as a tree.
 * Terminals run in one PTY host worker thread (node-pty is not thread-safe), started on the
 * first `spawnTerminal`.
 *
 * @example
 * ```ts
 * const provider = createLocalProvider();
 * const child = await provider.spawn({ argv: ['sleep', '10'], cwd: '/', cleanupGraceMs: 500,
 *   stdio: { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' } });
 * const verdict = await child.kill(); // { status: 'quiescent', ... }
 * const shell = await provider.spawnTerminal({ argv: ['/bin/bash', '-i'], cwd: '/', cols: 80, rows: 24,
 *   cleanupGraceMs: 500, env: { TERM: 'xterm-256color' } });
 * await shell.kill();
 * await provider.dispose(); // the PTY worker stops
 * ```
 */
export function createLocalProvider(options: LocalProviderOptions = {}): LocalProvider {
  const host = options.ptyHost ?? createPtyHost();
  const containment = options.containment ?? createMarkerContainment();
  const admit = pLimit(IN_FLIGHT);
  const ways = { options, containment, admit };
  return {
    name: 'local',
    containment: containment.mode,
    spawn: async (spec) => (await spawnLocal(spec, ways, null))!,
    spawnJoined: (spec, join) => spawnLocal(spec, ways, join),
    spawnTerminal: (spec) => spawnLocalTerminal(spec, host, options, containment),
    get workers() {
      return host.alive ? 1 : 0;
    },
    async dispose() {
      if (options.ptyHost === undefined) await host.dispose();
    },
  };
}

// How many starts are at the spawner at once. It starts one child at a time, so more would only
// wait in its socket, having been prepared all together in one turn of the loop (P5).
const IN_FLIGHT = 4;

// The one place a local process tree starts (S1, S4): where containment hooks in before exec.
// With `join`, only through the spawner: null when it is not there (nothing started).
async function spawnLocal(
  spec: SubprocessSpawnSpec,
  ways: { options: LocalProviderOptions; containment: Containment; admit: LimitFunction },
  join: NamespaceJoin | null,
): Promise<SubprocessHandle | null> {
  const { options, containment } = ways;
  const aborted = () => {
    if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  };
  aborted();
  assertDirectory(spec.cwd);
  if (options.spawner?.alive) {
    // A burst (hundreds of jobs started in one tick) is let in a few at a time, each as an
    // earlier one is answered: its preparation is spread over the burst, so the main loop is
    // never held for all of it at once (P5).
    const started = await ways.admit(() => {
      aborted();
      const spawner = options.spawner;
      return spawner?.alive ? spawnThrough(spawner, spec, ways, join) : null;
    });
    if (started !== null) return started;
  }
  if (join !== null) return null;
  const env = sanitizeEnv(process.env, options.env, spec.env);
  const tree = containment.openTree(spec.argv, env);
  const [file, ...args] = tree.argv;
  try {
    // Behind an entry wrapper a missing program would be the wrapper's exit 127: refuse first.
    if (tree.program !== null) assertExecutable(tree.program, spec.cwd, tree.env.PATH);
    const child = spawnOrRefuse(file, args, {
      cwd: spec.cwd,
      env: tree.env,
      detached: true,
      stdio: [spec.stdio.stdin, spec.stdio.stdout, spec.stdio.stderr],
    });
    await started(child, file, spec.cwd);
    return trackChild(nodeChild(child), tree, spec);
  } catch (err) {
    await tree.release();
    throw err;
  }
}

// `child_process.spawn`, whose synchronous throws (E2BIG, a NUL byte) become TetherErrors like
// the spawner's refusals (R).
function spawnOrRefuse(file: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  try {
    return spawnChild(file, args, options);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_INVALID_ARG_VALUE' || code === 'ERR_INVALID_ARG_TYPE')
      throw new TetherError('INVALID_ARGUMENT', (err as Error).message, { cause: err });
    throw new TetherError(
      'SPAWN_FAILED',
      `'${file}' could not be started: ${code ?? (err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}

// One start through the spawner; null when the spawner ended under it (nothing started, the
// caller starts it through child_process instead).
async function spawnThrough(
  spawner: Spawner,
  spec: SubprocessSpawnSpec,
  ways: { options: LocalProviderOptions; containment: Containment },
  join: NamespaceJoin | null,
): Promise<SubprocessHandle | null> {
  const env = sanitizeEnv(process.env, ways.options.env, spec.env);
  const tree = ways.containment.openTree(spec.argv, env, { entersAtClone: true });
  try {
    const child = await spawner.spawn({
      argv: tree.argv,
      env: tree.env,
      cwd: spec.cwd,
      stdio: spec.stdio,
      cgroup: tree.cgroup,
      join,
      ...(spec.onOutput ? { onOutput: spec.onOutput } : {}),
    });
    return trackChild(child, tree, spec);
  } catch (err) {
    if (err instanceof SpawnerGone && err.unanswered) return unansweredStart(tree, spec);
    await tree.release();
    if (err instanceof SpawnRefused) throw refusedError(err, tree.argv[0], spec.cwd);
    if (!(err instanceof SpawnerGone)) throw err;
    return null;
  }
}

// The spawner died with this start unanswered (issue 30.3): it may have started the leader and
// died before saying so. Whatever of it runs is killed; if something did, its output and exit
// are lost (it is not run a second time); if nothing did, null: the caller starts it afresh.
// (A leader that exec'd and exited within the few microseconds before its `S` line would be
// run again: the spawner writes that line right after the exec.)
async function unansweredStart(
  tree: TreeBoundary,
  spec: SubprocessSpawnSpec,
): Promise<SubprocessHandle | null> {
  const verdict = await tree.kill({ pid: -1, startTime: -1 }, { graceMs: 0 });
  if (verdict.status === 'quiescent' && verdict.killed === 0) return null;
  const lost: SubprocessExit = {
    exitCode: null,
    signal: null,
    lost: {
      by: 'spawner',
      reason:
        'the spawner process died while starting this command: it had started and was killed; its output and exit status are unknown',
    },
  };
  return {
    identity: { pid: -1, startTime: -1 },
    treeId: tree.treeId,
    stdin: null,
    stdout: null,
    stderr: null,
    outputFed: spec.onOutput !== undefined,
    exited: Promise.resolve(lost),
    kill: () => tree.kill({ pid: -1, startTime: -1 }, { graceMs: spec.cleanupGraceMs }),
  };
}

// What the spawner's refusal means to the caller: the same errors child_process gives.
function refusedError(err: SpawnRefused, file: string, cwd: string): TetherError {
  if (err.stage === 'enclave' || err.stage === 'setns') {
    return new TetherError(
      'SANDBOX_UNAVAILABLE',
      `the sandbox's enclave could not be entered (${err.code}); retry: a new one is made`,
      { cause: err },
    );
  }
  if (err.stage === 'chdir') return cwdNotFound(cwd);
  if (err.stage === 'exec' && err.code === 'ENOENT') return programNotFound(file, cwd, err);
  return new TetherError(
    'SPAWN_FAILED',
    `'${file}' could not be started: ${err.stage} failed with ${err.code}`,
    {
      cause: err,
    },
  );
}

/**
 * SPAWN_FAILED for a program that is not there (S1), in the words every spawn path uses.
 *
 * @example
 * ```ts
 * if (findExecutable(file, cwd, env) === null) throw programNotFound(file, cwd);
 * ```
 */
export function programNotFound(file: string, cwd: string, cause?: unknown): TetherError {
  return new TetherError(
    'SPAWN_FAILED',
    `'${file}' was not found (looked up in PATH from cwd '${cwd}'); pass an installed executable`,
    cause === undefined ? undefined : { cause },
  );
}

function cwdNotFound(cwd: string): TetherError {
  return new TetherError(
    'CWD_NOT_FOUND',
    `cwd '${cwd}' is not an existing directory; pass a directory that exists`,
  );
}

// A child_process child as the spawner's shape: its leader, pipes and exit.
function nodeChild(child: ChildProcess): SpawnedChild {
  const pid = child.pid!;
  // The leader cannot have been reaped yet (libuv reaps on the loop), so /proc still has it.
  const identity = readIdentity(pid);
  // Errors after spawn (e.g. EPIPE on stdin) are not the tree's fate; the exit event is.
  child.on('error', () => {});
  return {
    pid,
    startTime: identity?.startTime ?? null,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    outputFed: false,
    exited: new Promise<SubprocessExit>((resolve) => {
      child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
    }),
  };
}

function assertExecutable(program: string, cwd: string, path: string | undefined): void {
  if (findExecutable(program, cwd, path === undefined ? [] : [`PATH=${path}`]) === null) {
    throw programNotFound(program, cwd);
  }
}

// The one place a local terminal starts: its PTY is forked by the host worker (S1, S3).
async function spawnLocalTerminal(
  spec: TerminalSpawnSpec,
  host: PtyHost,
  options: LocalProviderOptions,
  containment: Containment,
): Promise<TerminalHandle> {
  if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  assertDirectory(spec.cwd);
  const { argv, cwd, cols, rows, cleanupGraceMs } = spec;
  const env = sanitizeEnv(process.env, options.env, spec.env);
  const boundary = containment.openTree(argv, env, { pty: true });
  const session = await host.open({ argv, cwd, cols, rows, cleanupGraceMs, env, boundary });
  if (spec.signal?.aborted) {
    // S1: aborted while the PTY was being opened: nothing of it outlives the call.
    await session.kill();
    throw new TetherError('ABORTED', 'the spawn was aborted while the terminal was opening');
  }
  return session;
}

/**
 * Throws CWD_NOT_FOUND unless `cwd` is an existing directory. Node reports a missing cwd as
 * "spawn <file> ENOENT", which blames the wrong thing, so every spawn path checks first.
 *
 * @example
 * ```ts
 * assertDirectory(opts.cwd ?? process.cwd());
 * ```
 */
export function assertDirectory(cwd: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(cwd).isDirectory();
  } catch {}
  if (!isDirectory) throw cwdNotFound(cwd);
}

// Resolves on the 'spawn' event; a spawn 'error' (ENOENT, EACCES) becomes SPAWN_FAILED.
function started(child: ChildProcess, file: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onSpawn = () => {
      child.off('error', onError);
      resolve();
    };
    const onError = (err: NodeJS.ErrnoException) => {
      child.off('spawn', onSpawn);
      reject(
        err.code === 'ENOENT'
          ? programNotFound(file, cwd, err)
          : new TetherError('SPAWN_FAILED', `'${file}' could not be started: ${err.message}`, { cause: err }),
      );
    };
    child.once('spawn', onSpawn);
    child.once('error', onError);
  });
}

function trackChild(child: SpawnedChild, tree: TreeBoundary, spec: SubprocessSpawnSpec): SubprocessHandle {
  const { treeId } = tree;
  const { pid, exited } = child;
  const identity: ProcessIdentity = { pid, startTime: child.startTime };
  // A write to a child that already exited raises EPIPE on stdin: the exit is the fact, not that.
  child.stdin?.on('error', () => {});

  let inFlight: Promise<TreeKillVerdict> | null = null;
  const kill = (): Promise<TreeKillVerdict> => {
    inFlight ??= tree.kill(identity, { graceMs: spec.cleanupGraceMs }).finally(() => {
      inFlight = null;
    });
    return inFlight;
  };

  const signal = spec.signal;
  if (signal?.aborted) {
    // S1: aborted while the spawn was in flight (after the fork): an 'abort' listener added
    // now would never fire, so the tree is killed at once.
    void kill();
  } else if (signal) {
    const onAbort = () => void kill();
    signal.addEventListener('abort', onAbort, { once: true });
    void exited.then(() => signal.removeEventListener('abort', onAbort));
  }

  const { stdin, stdout, stderr, outputFed } = child;
  return { identity, treeId, stdin, stdout, stderr, outputFed, exited, kill };
}
