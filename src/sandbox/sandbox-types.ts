/**
 * A3: how much of the machine a sandboxed process may change. `read-only`: nothing but a
 * private `/tmp`; `workspace-write`: also the writable roots (default: the working directory);
 * `off`: no sandbox.
 *
 * @example
 * ```ts
 * const mode: SandboxMode = 'workspace-write';
 * ```
 */
export type SandboxMode = 'off' | 'read-only' | 'workspace-write';

/**
 * A3: `none` gives the sandbox a network namespace of its own (loopback only); `host` shares the host's.
 *
 * @example
 * ```ts
 * createRuntime({ sandbox: { mode: 'read-only', network: 'host' } });
 * ```
 */
export type SandboxNetwork = 'none' | 'host';

/** The modes, for validation and usage texts. */
export const SANDBOX_MODES: readonly SandboxMode[] = ['off', 'read-only', 'workspace-write'];

/**
 * A3: the sandbox of a runtime (`createRuntime({ sandbox })`) or of one agent or host owner
 * (`agents.create({ sandbox })`, `rt.owners.host({ sandbox })`), enforced by the kernel
 * through bubblewrap on Linux.
 *
 * @example
 * ```ts
 * const rt = await createRuntime({ cwd: '/work/repo', sandbox: { mode: 'workspace-write' } });
 * const sealed = rt.agents.create({ sessionId: 's1', onTurn, sandbox: { mode: 'read-only', network: 'none' } });
 * ```
 */
export interface SandboxOptions {
  readonly mode: SandboxMode;
  /** `workspace-write` only: directories writable inside; default `[cwd]` (the runtime's cwd). */
  readonly writableRoots?: readonly string[];
  /** Default `'none'`. */
  readonly network?: SandboxNetwork;
  /**
   * Paths made unreadable inside (`~` is the home directory), added to
   * {@link DEFAULT_DENY_READ}. A directory becomes an empty one nobody may list, a file an
   * empty one nobody may read.
   */
  readonly denyRead?: readonly string[];
}

/**
 * K5: `pid` runs an owner's processes in a PID namespace of their own. Default `none`.
 *
 * @example
 * ```ts
 * rt.agents.create({ sessionId: 's', onTurn, isolation: 'pid' });
 * ```
 */
export type IsolationMode = 'none' | 'pid';

/**
 * What `rt.stats().sandbox` and a sandboxed `ShellResult` say about the sandbox in force:
 * the mode, the mechanism (`bubblewrap`, or `none` when off), the network, the writable
 * roots and the denied paths.
 *
 * @example
 * ```ts
 * const r = await rt.shell.run({ owner, command: 'make' });
 * if (r.sandbox?.network === 'none') console.log('ran without network');
 * ```
 */
export interface SandboxDescription {
  readonly mode: SandboxMode;
  readonly mechanism: 'bubblewrap' | 'none';
  readonly network: SandboxNetwork;
  readonly isolation: IsolationMode;
  readonly writableRoots: readonly string[];
  readonly denyRead: readonly string[];
  /**
   * A6: the host uid the sandbox's processes run as: {@link SANDBOX_UID} when the runtime runs
   * as root (never the host's root), else the runtime's own uid; with isolation alone (mode
   * `off`), the runtime's uid (without capabilities).
   */
  readonly uid: number;
}

/**
 * A6: the unprivileged host uid (and gid) of sandboxed processes when the runtime is root. Not
 * 65534 (`nobody`): that is the kernel's overflow id, which every unmapped owner shows as
 * through an idmapped mount.
 *
 * @example
 * ```ts
 * if (rt.stats().sandbox.uid === SANDBOX_UID) console.log('sandboxed as an unprivileged uid');
 * ```
 */
export const SANDBOX_UID = 65533;

/**
 * The default `denyRead` list (A3): credentials of shells, clouds, registries and tools.
 * Paths that do not exist on this machine are skipped.
 *
 * @example
 * ```ts
 * createRuntime({ sandbox: { mode: 'read-only', denyRead: [...DEFAULT_DENY_READ, '~/.config/gh'] } });
 * ```
 */
export const DEFAULT_DENY_READ: readonly string[] = [
  '~/.ssh',
  '~/.aws',
  '~/.gnupg',
  '~/.config/gcloud',
  '~/.azure',
  '~/.docker',
  '~/.kube',
  '~/.netrc',
  '~/.npmrc',
  '~/.pypirc',
  '~/.git-credentials',
  '~/.config/gh',
  '~/.terraform.d',
  '~/.cargo/credentials',
  '~/.cargo/credentials.toml',
];
