import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, resolve, sep } from 'node:path';
import { assertArgument } from '../errors.js';
import {
  DEFAULT_DENY_READ,
  type IsolationMode,
  SANDBOX_UID,
  type SandboxDescription,
  type SandboxOptions,
} from './sandbox-types.js';

/**
 * One owner's confinement, resolved: what its enclave (one set of namespaces) is made of.
 * `null` from {@link resolveConfinement} means "no confinement": the base provider runs it.
 *
 * @example
 * ```ts
 * const c: Confinement | null = resolveConfinement({ mode: 'workspace-write' }, 'none', process.cwd());
 * ```
 */
export interface Confinement {
  readonly description: SandboxDescription;
  /** The runtime's working directory: kept visible (read-only) when it lives under `/tmp`. */
  readonly workspace: string;
}

/**
 * Validates sandbox and isolation options (INVALID_ARGUMENT naming the field) and resolves
 * them against the working directory: roots made absolute and real, `~` expanded, defaults
 * filled. `isolation: 'pid'` alone gives a confinement with mode `off`.
 *
 * @example
 * ```ts
 * resolveConfinement({ mode: 'workspace-write' }, 'none', '/work/repo');
 * // { description: { mode: 'workspace-write', writableRoots: ['/work/repo'], network: 'none', … } }
 * ```
 */
export function resolveConfinement(
  sandbox: SandboxOptions | undefined,
  isolation: IsolationMode | undefined,
  cwd: string,
  what = 'sandbox',
): Confinement | null {
  assertArgument(
    isolation === undefined || isolation === 'none' || isolation === 'pid',
    `isolation must be 'none' or 'pid' (got ${String(isolation)})`,
  );
  if (sandbox !== undefined) assertSandboxShape(sandbox, what);
  const mode = sandbox?.mode ?? 'off';
  const pid = isolation === 'pid';
  if (mode === 'off' && !pid) return null;
  const workspace = realDirectory(cwd, 'cwd');
  const writableRoots =
    mode === 'workspace-write'
      ? (sandbox?.writableRoots ?? [workspace]).map((root, i) =>
          realDirectory(root, `${what}.writableRoots[${i}]`),
        )
      : [];
  const denyRead = mode === 'off' ? [] : [...new Set([...DEFAULT_DENY_READ, ...(sandbox?.denyRead ?? [])])];
  return {
    workspace,
    description: {
      mode,
      mechanism: 'bubblewrap',
      network: mode === 'off' ? 'host' : (sandbox?.network ?? 'none'),
      // A sandbox always has a PID namespace of its own: a sandboxed `kill -9 -1` must not reach the host.
      isolation: 'pid',
      writableRoots,
      denyRead: denyRead.map(expandHome),
      uid: sandboxUid(mode),
    },
  };
}

/**
 * A6: the seccomp filter of every process in a confinement: `no-unix` (also AF_UNIX sockets)
 * for a sandbox without network, else `always`.
 *
 * @example
 * ```ts
 * syscallsOf(confinement.description); // 'no-unix'
 * ```
 */
export function syscallsOf(d: SandboxDescription): 'always' | 'no-unix' {
  return d.mode !== 'off' && d.network === 'none' ? 'no-unix' : 'always';
}

/**
 * True when `path` is `root` or lies below it (both absolute and normalized).
 *
 * @example
 * ```ts
 * isWithin('/tmp/ws/a', '/tmp/ws'); // true
 * ```
 */
export function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

const runtimeUid = (): number => process.getuid?.() ?? 0;

// A6: a sandbox never runs as the host's root; isolation alone keeps the runtime's uid.
function sandboxUid(mode: SandboxOptions['mode']): number {
  const own = runtimeUid();
  return mode !== 'off' && own === 0 ? SANDBOX_UID : own;
}

/**
 * A6: the uid and gid a confinement's processes change to before they exec (the sandbox uid
 * under a root runtime), or null when they keep the runtime's own.
 *
 * @example
 * ```ts
 * identityOf(confinement.description); // { uid: 65533, gid: 65533 } as root
 * ```
 */
export function identityOf(d: SandboxDescription): { uid: number; gid: number } | null {
  return d.uid === runtimeUid() ? null : { uid: d.uid, gid: d.uid };
}

function assertSandboxShape(sandbox: SandboxOptions, what: string): void {
  assertArgument(
    typeof sandbox === 'object' && sandbox !== null,
    `${what} must be an object { mode: 'off' | 'read-only' | 'workspace-write', ... }`,
  );
  assertArgument(
    sandbox.mode === 'off' || sandbox.mode === 'read-only' || sandbox.mode === 'workspace-write',
    `${what}.mode must be 'off', 'read-only' or 'workspace-write' (got ${String(sandbox.mode)})`,
  );
  assertArgument(
    sandbox.network === undefined || sandbox.network === 'none' || sandbox.network === 'host',
    `${what}.network must be 'none' or 'host' (got ${String(sandbox.network)})`,
  );
  for (const key of ['writableRoots', 'denyRead'] as const) {
    const list = sandbox[key];
    assertArgument(
      list === undefined || (Array.isArray(list) && list.every((p) => typeof p === 'string' && p.length > 0)),
      `${what}.${key} must be an array of non-empty path strings`,
    );
  }
  assertArgument(
    sandbox.writableRoots === undefined || sandbox.mode === 'workspace-write',
    `${what}.writableRoots is only meaningful with mode 'workspace-write'`,
  );
}

function realDirectory(path: string, name: string): string {
  const absolute = resolve(expandHome(path));
  let real: string | null = null;
  try {
    if (statSync(absolute).isDirectory()) real = realpathSync(absolute);
  } catch {}
  assertArgument(real !== null, `${name} '${path}' must be an existing directory`);
  return real;
}

function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return resolve(homedir(), path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(path);
}
