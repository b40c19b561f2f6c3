import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { TetherError } from '../errors.js';
import { spawnerBinary } from '../subprocess/spawner/spawner.js';

/** The executables an enclave needs, by absolute path. */
export interface SandboxTools {
  readonly bwrap: string;
  /**
   * The compiled spawner (`build/tether-spawner`): its `--enter` mode joins an enclave and
   * confines the process as the spawner's own children are (A6: uid, capabilities, seccomp),
   * its `--idmap` mode prepares the writable roots for bubblewrap.
   */
  readonly enter: string;
}

/**
 * Finds bwrap in PATH and the compiled spawner, or throws SANDBOX_UNAVAILABLE naming what to
 * install (A3: nothing silently runs unsandboxed). Linux only: elsewhere the error says the
 * sandbox is not provided (macOS `sandbox-exec` and Windows are not wired).
 *
 * @example
 * ```ts
 * const tools = findSandboxTools(); // { bwrap: '/usr/bin/bwrap', enter: '/…/build/tether-spawner' }
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
  const bwrap = dirs.map((dir) => join(dir, 'bwrap')).find(isExecutable);
  if (bwrap === undefined) {
    throw new TetherError(
      'SANDBOX_UNAVAILABLE',
      "the sandbox needs 'bwrap' (Debian/Ubuntu package 'bubblewrap': apt-get install -y bubblewrap), " +
        'and it is not in PATH; install it, or run without sandbox/isolation',
    );
  }
  const enter = spawnerBinary();
  if (enter === null) {
    throw new TetherError(
      'SANDBOX_UNAVAILABLE',
      'the sandbox needs the compiled spawner (build/tether-spawner), which confines every sandboxed process ' +
        '(unprivileged uid, no capabilities, seccomp); the install script builds it with a C compiler: ' +
        'apt-get install -y gcc, then npm rebuild tether-runtime; or run without sandbox/isolation',
    );
  }
  return { bwrap, enter };
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
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
