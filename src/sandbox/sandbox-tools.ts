import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { TetherError } from '../errors.js';

/** The executables an enclave needs, by absolute path. */
export interface SandboxTools {
  readonly bwrap: string;
  readonly nsenter: string;
  readonly setpriv: string;
  /**
   * How a command gets its cwd inside the enclave's mount namespace: `nsenter --wdns`
   * (util-linux 2.38+), else `env --chdir` after entering. Never `nsenter --wd`: it opens the
   * directory before entering, so the command would write through the host's mount.
   */
  readonly chdir: (cwd: string) => { readonly nsenter: readonly string[]; readonly exec: readonly string[] };
}

const PACKAGES: Readonly<Record<'bwrap' | 'nsenter' | 'setpriv', string>> = {
  bwrap: 'bubblewrap',
  nsenter: 'util-linux',
  setpriv: 'util-linux',
};

/**
 * Finds bwrap, nsenter and setpriv in PATH, or throws SANDBOX_UNAVAILABLE naming the Debian
 * package to install (A3: nothing silently runs unsandboxed). Linux only: elsewhere the
 * error says the sandbox is not provided (macOS `sandbox-exec` and Windows are not wired).
 *
 * @example
 * ```ts
 * const tools = findSandboxTools(); // { bwrap: '/usr/bin/bwrap', ... }
 * ```
 */
export function findSandboxTools(env: NodeJS.ProcessEnv = process.env): SandboxTools {
  if (process.platform !== 'linux') {
    throw new TetherError(
      'SANDBOX_UNAVAILABLE',
      `sandbox and isolation: 'pid' are provided on Linux only (bubblewrap); on ${process.platform} ` +
        "they are not provided (macOS sandbox-exec and Windows are not supported): use sandbox: { mode: 'off' }",
    );
  }
  const dirs = (env.PATH ?? '').split(delimiter).filter((d) => d.length > 0);
  const find = (name: keyof typeof PACKAGES): string => {
    for (const dir of dirs) {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {}
    }
    throw new TetherError(
      'SANDBOX_UNAVAILABLE',
      `the sandbox needs '${name}' (Debian/Ubuntu package '${PACKAGES[name]}': apt-get install -y ${PACKAGES[name]}), ` +
        'and it is not in PATH; install it, or run without sandbox/isolation',
    );
  };
  const bwrap = find('bwrap');
  const nsenter = find('nsenter');
  const wdns = supportsWdns(nsenter);
  return {
    bwrap,
    nsenter,
    setpriv: find('setpriv'),
    chdir: (cwd) =>
      wdns ? { nsenter: [`--wdns=${cwd}`], exec: [] } : { nsenter: [], exec: ['env', `--chdir=${cwd}`] },
  };
}

const wdnsSupport = new Map<string, boolean>();

// Asked once per nsenter binary (its --help lists --wdns from util-linux 2.38 on).
function supportsWdns(nsenter: string): boolean {
  let known = wdnsSupport.get(nsenter);
  if (known === undefined) {
    try {
      known = execFileSync(nsenter, ['--help'], { encoding: 'utf8', timeout: 10_000 }).includes('--wdns');
    } catch {
      known = false;
    }
    wdnsSupport.set(nsenter, known);
  }
  return known;
}

/**
 * Proves this machine can make the namespaces a sandbox needs, by running bubblewrap once
 * with them (`createRuntime` calls it for a runtime-wide sandbox or isolation). Rejects
 * SANDBOX_UNAVAILABLE with bubblewrap's own words and the kernel settings that refuse it.
 *
 * @example
 * ```ts
 * await probeSandbox(tools, ['--unshare-pid', '--unshare-net']);
 * ```
 */
export function probeSandbox(tools: SandboxTools, unshare: readonly string[]): Promise<void> {
  const args = ['--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', ...unshare, '--', 'true'];
  return new Promise((resolve, reject) => {
    execFile(tools.bwrap, args, { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (error === null) return resolve();
      reject(namespacesRefused(String(stderr).trim() || error.message));
    });
  });
}

/**
 * The error for bubblewrap refusing to make namespaces, naming the kernel settings to check.
 *
 * @example
 * ```ts
 * throw namespacesRefused('bwrap: No permissions to create new namespace');
 * ```
 */
export function namespacesRefused(detail: string): TetherError {
  return new TetherError(
    'SANDBOX_UNAVAILABLE',
    `bubblewrap could not create the sandbox's namespaces (${detail}). As root this needs no setting; ` +
      'as another user it needs user namespaces: sysctl kernel.unprivileged_userns_clone=1 (Debian), ' +
      'user.max_user_namespaces > 0, and on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0 ' +
      '(or an AppArmor profile for bwrap); in a container, allow the unshare/clone syscalls',
  );
}
