import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SshProviderOptions } from '../../src/remote/ssh-provider.js';
import type { Sshd } from './sshd-fixture.js';

/**
 * A local user without privileges for one test's sshd (X2 marker mode): the helper it runs cannot
 * make a cgroup, so kills go by marker, session and the subreaper's record. Made with `useradd`
 * (the tests run as root) and removed again by `remove()`; its home is in the server's directory.
 */
export interface UnprivilegedUser {
  readonly username: string;
  readonly helperDir: string;
  options(more?: Partial<SshProviderOptions>): SshProviderOptions;
  /** The helper daemon's pid, once it is up. */
  helperPid(): number | null;
  remove(): void;
}

/**
 * Creates the user and lets it log in to `sshd` with the server's user key.
 *
 * @example
 * ```ts
 * const user = createUnprivilegedUser(sshd);
 * const provider = createSshProvider(user.options());
 * ```
 */
export function createUnprivilegedUser(sshd: Sshd): UnprivilegedUser {
  const username = `tether-m${process.pid % 1_000_000}`;
  const home = join(sshd.dir, username);
  const made = spawnSync('useradd', ['-M', '-d', home, '-s', '/bin/bash', '-p', '*', username], {
    encoding: 'utf8',
  });
  if (made.status !== 0) throw new Error(`useradd ${username} failed: ${made.stderr}`);
  const uid = Number(spawnSync('id', ['-u', username], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', username], { encoding: 'utf8' }).stdout.trim());
  mkdirSync(home);
  chownSync(home, uid, gid);
  // `-p '*'`: no password, yet not locked (sshd without PAM refuses a locked account). sshd
  // reads the authorized keys as the user: the server's directory must be passable.
  chmodSync(sshd.dir, 0o711);
  chmodSync(join(sshd.dir, 'authorized_keys'), 0o644);
  const helperDir = join(home, 'helper');
  return {
    username,
    helperDir,
    options: (more = {}) => sshd.options({ username, helperDir, ...more }),
    helperPid() {
      const file = join(helperDir, 'helper.pid');
      return existsSync(file) ? Number(readFileSync(file, 'utf8')) : null;
    },
    remove() {
      spawnSync('userdel', ['-f', username]);
    },
  };
}
