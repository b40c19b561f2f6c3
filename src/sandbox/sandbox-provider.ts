import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { TetherError } from '../errors.js';
import { type LocalProvider, programNotFound } from '../subprocess/local-provider.js';
import { joinField } from '../subprocess/spawner/spawner.js';
import type {
  NamespaceJoin,
  SubprocessHandle,
  SubprocessProvider,
  SubprocessSpawnSpec,
  TerminalHandle,
  TerminalSpawnSpec,
} from '../subprocess/types.js';
import { type Enclave, startEnclave } from './enclave.js';
import { type Confinement, identityOf, isWithin, syscallsOf } from './sandbox-options.js';
import { findSandboxTools, type SandboxTools } from './sandbox-tools.js';
import type { SandboxDescription } from './sandbox-types.js';

/**
 * A provider whose processes run confined; says how (`sandbox`) and how many enclaves run.
 *
 * @example
 * ```ts
 * const p: SandboxProvider = createSandboxProvider(local, { confinement });
 * console.log(p.sandbox.mode, p.enclaves);
 * ```
 */
export interface SandboxProvider extends SubprocessProvider {
  readonly sandbox: SandboxDescription;
  /** 1 while this provider's enclave runs, else 0. */
  readonly enclaves: number;
  dispose(): Promise<void>;
}

/**
 * Options of {@link createSandboxProvider}.
 *
 * @example
 * ```ts
 * const options: SandboxProviderOptions = { confinement: resolveConfinement({ mode: 'read-only' }, 'none', cwd)! };
 * ```
 */
export interface SandboxProviderOptions {
  /** From `resolveConfinement`. */
  readonly confinement: Confinement;
  /** Grace of the enclave's own tree kill; default 2,000 ms. */
  readonly cleanupGraceMs?: number;
  /** Default: found in PATH (`findSandboxTools`), SANDBOX_UNAVAILABLE when missing. */
  readonly tools?: SandboxTools;
}

/**
 * A3, K5: a provider decorating `inner` (or the provider a function returns at each spawn):
 * every process and terminal it starts runs inside one enclave — a standing set of
 * namespaces bubblewrap makes on the first spawn (PID and IPC always; mount, network and no
 * capabilities when sandboxed) — joined by the inner provider's spawner between clone and
 * exec where it has one (`spawnJoined`), else entered with the spawner binary's `--enter`, as
 * terminals always are. Every entered process gives up every capability and new privileges,
 * runs as an unprivileged uid when sandboxed as root, and under the seccomp filter (A6). The inner provider still spawns,
 * sanitizes the env (S3), marks and kills the tree (S4) and proves `stdin_read` from the host /proc (the host sees the real pids).
 * `dispose()` ends the enclave: every process in it dies with its pid 1. Nothing falls back
 * to running unconfined: a spawn whose enclave cannot start rejects SANDBOX_UNAVAILABLE.
 *
 * @example
 * ```ts
 * const confinement = resolveConfinement({ mode: 'workspace-write' }, 'none', '/work/repo')!;
 * const provider = createSandboxProvider(createLocalProvider(), { confinement });
 * const child = await provider.spawn({ argv: ['touch', '/etc/x'], cwd: '/work/repo', cleanupGraceMs: 500,
 *   stdio: { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' } }); // EROFS
 * await child.exited;
 * await provider.dispose();
 * ```
 */
export function createSandboxProvider(
  inner: SubprocessProvider | (() => SubprocessProvider),
  options: SandboxProviderOptions,
): SandboxProvider {
  const innerNow = typeof inner === 'function' ? inner : () => inner;
  const { confinement } = options;
  const tools = options.tools ?? findSandboxTools();
  const description = confinement.description;
  const sandboxed = description.mode !== 'off';
  let starting: Promise<Enclave> | null = null;
  let current: Enclave | null = null;
  let disposed: Promise<void> | null = null;

  // One enclave at a time, started lazily; a dead one is replaced on the next spawn.
  const enclave = async (): Promise<Enclave> => {
    if (disposed) throw new TetherError('RUNTIME_DISPOSED', "this owner's sandbox was disposed");
    if (current?.alive()) return current;
    starting ??= startEnclave(innerNow(), tools, confinement, options.cleanupGraceMs ?? 2_000).then(
      (made) => {
        current = made;
        return made;
      },
    );
    try {
      return await starting;
    } finally {
      starting = null;
    }
  };

  // Before any spawn: the checks the entry would fail less clearly, then the enclave.
  const prepare = async (spec: SubprocessSpawnSpec | TerminalSpawnSpec): Promise<Enclave> => {
    if (spec.signal?.aborted) throw new TetherError('ABORTED', 'the spawn was aborted before it started');
    assertVisible(spec.cwd, confinement);
    assertProgram(spec.argv[0], spec.cwd, spec.env?.PATH ?? process.env.PATH ?? '');
    return enclave();
  };
  const namespaces = sandboxed ? (['mnt', 'pid', 'ipc', 'net'] as const) : (['mnt', 'pid', 'ipc'] as const);
  // A6: what every process entering the enclave gives up (confine.h): every capability and new
  // privileges, the host's root (sandboxed, as root: SANDBOX_UID), the seccomp filter's calls.
  const identity = identityOf(description);
  const syscalls = syscallsOf(description);
  const joinOf = ({ holder }: Enclave): NamespaceJoin => ({
    holder,
    namespaces,
    dropCapabilities: true,
    identity,
    syscalls,
  });

  // The spawner binary's `--enter` joins the enclave, takes the cwd there and confines the
  // process the way the spawner's own children are: for terminals (node-pty forks and execs
  // it) and for spawns when the spawner process is gone.
  const entered = <S extends SubprocessSpawnSpec | TerminalSpawnSpec>(spec: S, made: Enclave): S => {
    const argv: [string, ...string[]] = [
      tools.enter,
      '--enter',
      joinField(joinOf(made)),
      spec.cwd,
      ...spec.argv,
    ];
    return { ...spec, argv };
  };

  return {
    name: `sandbox(${innerNow().name})`,
    sandbox: description,
    get enclaves() {
      return current?.alive() ? 1 : 0;
    },
    async spawn(spec): Promise<SubprocessHandle> {
      const inner = innerNow();
      const made = await prepare(spec);
      // The same namespaces and confinement, joined by the spawner between clone and exec: no
      // extra exec (A3 cost). Else (the spawner process is gone) through `--enter`.
      if (joinsNamespaces(inner)) {
        const handle = await inner.spawnJoined(spec, joinOf(made));
        if (handle !== null) return handle;
      }
      return inner.spawn(entered(spec, made));
    },
    async spawnTerminal(spec): Promise<TerminalHandle> {
      const made = await prepare(spec);
      return innerNow().spawnTerminal(entered(spec, made));
    },
    get workers() {
      return 0; // the inner provider's workers are counted where the inner provider is
    },
    dispose() {
      disposed ??= (async () => {
        const made = await starting?.catch(() => null);
        await (made ?? current)?.dispose();
        current = null;
      })();
      return disposed;
    },
  };
}

// A provider that can start a child inside an enclave itself (the local one, with its spawner).
function joinsNamespaces(
  provider: SubprocessProvider,
): provider is SubprocessProvider & Pick<LocalProvider, 'spawnJoined'> {
  return typeof (provider as Partial<LocalProvider>).spawnJoined === 'function';
}

// S1: a missing program is SPAWN_FAILED, as with the inner provider, not an exit 127 of the
// entry. Looked up on the host: the sandbox sees the host's filesystem (read-only),
// except a private /tmp and the denyRead paths, where the exec inside still fails (exit 127).
function assertProgram(file: string, cwd: string, path: string): void {
  const runnable = (candidate: string) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  };
  const found = file.includes('/')
    ? runnable(isAbsolute(file) ? file : resolve(cwd, file))
    : path.split(delimiter).some((dir) => dir !== '' && runnable(join(resolve(cwd, dir), file)));
  if (!found) throw programNotFound(file, cwd);
}

// A cwd under the host /tmp is not inside the sandbox (its /tmp is private) unless it is a
// writable root or the workspace: say so instead of letting the entry fail with a bare ENOENT.
function assertVisible(cwd: string, confinement: Confinement): void {
  const { description: d, workspace } = confinement;
  if (d.mode === 'off' || !isWithin(cwd, '/tmp')) return;
  if (isWithin(cwd, workspace) || d.writableRoots.some((root) => isWithin(cwd, root))) return;
  throw new TetherError(
    'CWD_NOT_FOUND',
    `cwd '${cwd}' is under /tmp, which is private inside the sandbox (only the workspace and the writable roots are shared); ` +
      'use a directory in the workspace or add it to sandbox.writableRoots',
  );
}
