import { assertArgument, TetherError } from '../../errors.js';
import { workerUrl } from '../../worker-url.js';
import type { TreeBoundary } from '../containment/containment-types.js';
import { newTreeId, TREE_MARKER_ENV } from '../marker.js';
import { PtyHostWorker } from './pty-host-worker.js';
import type { PtyHostWorkerData } from './pty-protocol.js';
import { assertWindowSize, type PtySession } from './pty-session.js';

export type { PtyExit, PtySession } from './pty-session.js';
export type { PtySignalTarget } from './pty-signal.js';

/** One process to start on a new pseudo-terminal. Everything is explicit (S1). */
export interface PtyOpenSpec {
  /** argv[0] is the executable (looked up in `env.PATH` when it has no slash); no shell. */
  readonly argv: readonly [string, ...string[]];
  readonly cwd: string;
  /**
   * The complete environment of the child, already sanitized by the caller (S3, `sanitizeEnv`);
   * nothing is guessed (no TERM, no PWD). The host adds `TETHER_TREE=<tree id>` (replacing any
   * given one) so that the tree kill finds children that escape the session (S4).
   */
  readonly env: Readonly<Record<string, string>>;
  readonly cols: number;
  readonly rows: number;
  /** Between SIGTERM and SIGKILL when the session is killed. */
  readonly cleanupGraceMs: number;
  /**
   * The tree's boundary (K1), opened by the caller for this spec: the PTY runs its `argv` (an
   * entry wrapper) with its `env`, and the session's kill is its kill. Default: the env marker.
   */
  readonly boundary?: TreeBoundary;
}

/** The PTY host: one worker thread owning every PTY (node-pty is not thread-safe), supervised. */
export interface PtyHost {
  /** Forks `spec.argv` on a new PTY; starts a worker if none runs. Rejects SPAWN_FAILED, CWD_NOT_FOUND. */
  open(spec: PtyOpenSpec): Promise<PtySession>;
  /** Whether a worker is running now (false before the first open, after a crash and after dispose). */
  readonly alive: boolean;
  /**
   * Kills every session's tree (SIGKILL to each PTY group first), waits until the worker reported
   * every exit, then terminates the worker. Idempotent; `open` fails with RUNTIME_DISPOSED after.
   */
  dispose(): Promise<void>;
}

export interface PtyHostOptions {
  /** Output is posted to the main thread at most this long after it was read. Default 5 ms. */
  readonly flushMs?: number;
  /** ...or as soon as this many bytes are pending. Default 64 KiB. */
  readonly batchBytes?: number;
  /** A PTY is paused while more characters than this were not yet delivered here. Default 8 Mi. */
  readonly maxUnackedChars?: number;
}

interface HostInternals {
  crash(how: 'throw' | 'exit'): void;
}

const internals = new WeakMap<PtyHost, HostInternals>();

/**
 * Creates a PTY host. No thread starts before the first `open`; a crashed worker is replaced on
 * the next `open`, and every session it hosted ends with reason `host_crashed` after its tree
 * was killed from the main thread.
 *
 * @example
 * ```ts
 * const host = createPtyHost();
 * const session = await host.open({ argv: ['/bin/bash', '--norc', '-i'], cwd: process.cwd(),
 *   env: sanitizeEnv(process.env, {}, { TERM: 'xterm-256color' }), cols: 80, rows: 24, cleanupGraceMs: 2000 });
 * session.onData((text) => console.log(JSON.stringify(text)));
 * await session.write('exit 3\r');
 * console.log(await session.exited); // { exitCode: 3, signal: null, reason: 'exit' }
 * await host.dispose();
 * ```
 */
export function createPtyHost(options: PtyHostOptions = {}): PtyHost {
  const tuning: PtyHostWorkerData = {
    flushMs: options.flushMs ?? 5,
    batchBytes: options.batchBytes ?? 64 * 1024,
    maxUnackedChars: options.maxUnackedChars ?? 8 * 1024 * 1024,
  };
  for (const [name, value] of Object.entries(tuning)) {
    assertArgument(
      Number.isSafeInteger(value) && value >= 0,
      `pty host ${name} must be a non-negative integer`,
    );
  }
  assertArgument(tuning.batchBytes >= 4, 'pty host batchBytes must be at least 4 (one UTF-8 character)');
  assertArgument(tuning.maxUnackedChars > 0, 'pty host maxUnackedChars must be positive');
  const url = workerUrl('pty-host');
  let current: PtyHostWorker | null = null;
  // Every generation whose thread may still run, crashed ones included: dispose waits for all.
  const generations = new Set<PtyHostWorker>();
  let disposing: Promise<void> | null = null;
  let nextId = 1;
  const forget = (generation: PtyHostWorker) => {
    if (current === generation) current = null;
  };

  const host: PtyHost = {
    async open(spec) {
      if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the PTY host was disposed; create a new one');
      assertOpenSpec(spec);
      const { boundary } = spec;
      const treeId = boundary?.treeId ?? newTreeId();
      const env = Object.entries(boundary?.env ?? spec.env)
        .filter(([name]) => name !== TREE_MARKER_ENV)
        .map(([name, value]) => `${name}=${value}`);
      env.push(`${TREE_MARKER_ENV}=${treeId}`);
      const [file, ...args] = boundary?.argv ?? spec.argv;
      if (current === null || !current.running) {
        const generation = new PtyHostWorker(url, tuning, forget);
        generations.add(generation);
        void generation.ended.then(() => generations.delete(generation));
        current = generation;
      }
      const request = {
        type: 'open',
        id: nextId++,
        file,
        args,
        cwd: spec.cwd,
        env,
        cols: spec.cols,
        rows: spec.rows,
        program: boundary?.program ?? null,
      } as const;
      return current.open(request, treeId, spec.cleanupGraceMs, boundary).catch(async (err: unknown) => {
        await boundary?.release();
        throw err;
      });
    },
    get alive() {
      return current?.running ?? false;
    },
    dispose() {
      disposing ??= (async () => {
        current = null;
        await Promise.all([...generations].map((generation) => generation.stop()));
      })();
      return disposing;
    },
  };
  internals.set(host, { crash: (how) => current?.crash(how) });
  return host;
}

/**
 * Test hook: makes the host's worker die — `throw`: an uncaught exception inside it; `exit`:
 * `process.exit()` inside it. Not exported from the package.
 *
 * @example
 * ```ts
 * crashPtyHostForTest(host, 'throw');
 * expect((await session.exited).reason).toBe('host_crashed');
 * ```
 */
export function crashPtyHostForTest(host: PtyHost, how: 'throw' | 'exit'): void {
  internals.get(host)?.crash(how);
}

// Misuse throws INVALID_ARGUMENT with the field named (C1).
function assertOpenSpec(spec: PtyOpenSpec): void {
  assertArgument(typeof spec === 'object' && spec !== null, 'open(spec): spec must be an object');
  const { argv, cwd, env, cols, rows, cleanupGraceMs } = spec;
  assertArgument(
    Array.isArray(argv) && argv.length > 0 && argv.every((a) => typeof a === 'string' && !a.includes('\0')),
    'argv must be a non-empty array of strings without NUL',
  );
  assertArgument(argv[0] !== '', 'argv[0] must name an executable');
  assertArgument(
    typeof cwd === 'string' && cwd !== '' && !cwd.includes('\0'),
    'cwd must be a non-empty path',
  );
  assertArgument(typeof env === 'object' && env !== null, 'env must be an object of strings');
  for (const [name, value] of Object.entries(env)) {
    assertArgument(
      name !== '' &&
        !name.includes('=') &&
        !name.includes('\0') &&
        typeof value === 'string' &&
        !value.includes('\0'),
      `env ${JSON.stringify(name)} must be a name without '=' with a string value without NUL`,
    );
  }
  assertWindowSize(cols, rows);
  assertArgument(
    Number.isFinite(cleanupGraceMs) && cleanupGraceMs >= 0,
    'cleanupGraceMs must be a non-negative number',
  );
}
