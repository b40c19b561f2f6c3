import { type ChildProcess, spawn as spawnChild } from 'node:child_process';
import { statSync } from 'node:fs';
import { TetherError } from '../errors.js';
import { type EnvPolicy, sanitizeEnv } from './env.js';
import { readIdentity } from './identity.js';
import { newTreeId, TREE_MARKER_ENV } from './marker.js';
import { markPids, type PidMark } from './pid-mark.js';
import { createPtyHost, type PtyHost } from './pty/pty-host.js';
import { killProcessTree } from './tree-kill.js';
import type {
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
}

/** The local provider: also says whether its PTY worker runs (`workers`) and stops it (`dispose`). */
export interface LocalProvider extends SubprocessProvider {
  readonly workers: number;
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
  return {
    name: 'local',
    spawn: (spec) => spawnLocal(spec, options),
    spawnTerminal: (spec) => spawnLocalTerminal(spec, host, options),
    get workers() {
      return host.alive ? 1 : 0;
    },
    async dispose() {
      if (options.ptyHost === undefined) await host.dispose();
    },
  };
}

// The one place a local process tree starts (S1, S4): where containment hooks in before exec.
async function spawnLocal(
  spec: SubprocessSpawnSpec,
  options: LocalProviderOptions,
): Promise<SubprocessHandle> {
  if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  assertDirectory(spec.cwd);
  const treeId = newTreeId();
  const env = { ...sanitizeEnv(process.env, options.env, spec.env), [TREE_MARKER_ENV]: treeId };
  const [file, ...args] = spec.argv;
  const since = markPids();
  const child = spawnChild(file, args, {
    cwd: spec.cwd,
    env,
    detached: true,
    stdio: [spec.stdio.stdin, spec.stdio.stdout, spec.stdio.stderr],
  });
  await started(child, file, spec.cwd);
  return trackChild(child, { treeId, since }, spec);
}

// The one place a local terminal starts: its PTY is forked by the host worker (S1, S3).
async function spawnLocalTerminal(
  spec: TerminalSpawnSpec,
  host: PtyHost,
  options: LocalProviderOptions,
): Promise<TerminalHandle> {
  if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
  assertDirectory(spec.cwd);
  const { argv, cwd, cols, rows, cleanupGraceMs } = spec;
  const env = sanitizeEnv(process.env, options.env, spec.env);
  return host.open({ argv, cwd, cols, rows, cleanupGraceMs, env });
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
  if (!isDirectory) {
    throw new TetherError(
      'CWD_NOT_FOUND',
      `cwd '${cwd}' is not an existing directory; pass a directory that exists`,
    );
  }
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
      const hint =
        err.code === 'ENOENT'
          ? `'${file}' was not found (looked up in PATH from cwd '${cwd}'); pass an installed executable`
          : `'${file}' could not be started: ${err.message}`;
      reject(new TetherError('SPAWN_FAILED', hint, { cause: err }));
    };
    child.once('spawn', onSpawn);
    child.once('error', onError);
  });
}

function trackChild(
  child: ChildProcess,
  tree: { readonly treeId: string; readonly since: PidMark | null },
  spec: SubprocessSpawnSpec,
): SubprocessHandle {
  const { treeId } = tree;
  const pid = child.pid!;
  // The leader cannot have been reaped yet (libuv reaps on the loop), so /proc still has it.
  const identity: ProcessIdentity = readIdentity(pid) ?? { pid, startTime: null };
  const exited = new Promise<SubprocessExit>((resolve) => {
    child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  // Errors after spawn (e.g. EPIPE on stdin) are not the tree's fate; the exit event is.
  child.on('error', () => {});
  // A write to a child that already exited raises EPIPE on stdin: the exit is the fact, not that.
  child.stdin?.on('error', () => {});

  let inFlight: Promise<TreeKillVerdict> | null = null;
  const kill = (): Promise<TreeKillVerdict> => {
    inFlight ??= killProcessTree({ root: identity, ...tree }, { graceMs: spec.cleanupGraceMs }).finally(
      () => {
        inFlight = null;
      },
    );
    return inFlight;
  };

  const signal = spec.signal;
  if (signal) {
    const onAbort = () => void kill();
    signal.addEventListener('abort', onAbort, { once: true });
    void exited.then(() => signal.removeEventListener('abort', onAbort));
  }

  return { identity, treeId, stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, exited, kill };
}
