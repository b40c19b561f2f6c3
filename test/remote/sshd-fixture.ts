import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import {
  createSshProvider,
  type SshProvider,
  type SshProviderOptions,
} from '../../src/remote/ssh-provider.js';

/**
 * A real OpenSSH server for one test (X1, X3): its own host key, authorized key and config on a
 * random loopback port, `sshd -D -e` as a child of this test process (never the system sshd,
 * never port 22). Everything it starts is this test's, so the leak oracle watches it too.
 */
export interface Sshd {
  readonly port: number;
  readonly dir: string;
  /** The server's public host key line, for `hostKey`. */
  readonly hostKey: string;
  /** The authorized private key. */
  readonly userKey: string;
  readonly username: string;
  /** The listener and every sshd process under it (the per-connection ones). */
  sshdPids(): number[];
  /** Provider options for this server (a per-server helper directory). */
  options(more?: Partial<SshProviderOptions>): SshProviderOptions;
  provider(more?: Partial<SshProviderOptions>): SshProvider;
  /** Stops the listener and every sshd process under it (only the ones this fixture started). */
  stop(): Promise<void>;
}

const SSHD = ['/usr/sbin/sshd', '/usr/bin/sshd'].find((p) => {
  try {
    readFileSync(p);
    return true;
  } catch {
    return false;
  }
});

/** Whether OpenSSH's sshd is installed here (`.ci/run` installs openssh-server). */
export const sshdAvailable = SSHD !== undefined;

/**
 * Starts one sshd; retries another port when the chosen one is taken.
 *
 * @example
 * ```ts
 * const sshd = await startSshd();
 * const provider = sshd.provider();
 * ```
 */
export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-sshd-'));
  mkdirSync('/run/sshd', { recursive: true });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'user_key')]);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'user_key.pub')));
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${join(dir, 'host_key')}`,
        'PidFile none',
        'UsePAM no',
        'StrictModes no',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'MaxStartups 100',
        'LogLevel INFO',
        '',
      ].join('\n'),
    );
    const child = spawn(SSHD!, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    const listening = await new Promise<boolean>((resolve) => {
      let log = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (/Server listening on/.test(log)) resolve(true);
      });
      child.once('exit', () => resolve(false));
    });
    if (listening) return fixture(child, port, dir);
    if (attempt >= 5) throw new Error(`sshd did not start (port ${port})`);
  }
}

function fixture(child: ChildProcess, port: number, dir: string): Sshd {
  const username = userInfo().username;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const sshdPids = () => descendants(child.pid!).filter((pid) => /sshd/.test(comm(pid)));
  const options = (more: Partial<SshProviderOptions> = {}): SshProviderOptions => ({
    host: '127.0.0.1',
    port,
    username,
    privateKey: readFileSync(join(dir, 'user_key')),
    hostKey: readFileSync(join(dir, 'host_key.pub'), 'utf8'),
    helperDir: join(dir, 'helper'),
    keepalive: { intervalMs: 500, countMax: 2 },
    connectTimeoutMs: 3000,
    reconnect: { attempts: 3, delayMs: 200 },
    lingerMs: 20_000,
    ...more,
  });
  return {
    port,
    dir,
    username,
    hostKey: readFileSync(join(dir, 'host_key.pub'), 'utf8'),
    userKey: readFileSync(join(dir, 'user_key'), 'utf8'),
    sshdPids,
    options,
    provider: (more) => createSshProvider(options(more)),
    async stop() {
      for (const pid of [child.pid!, ...sshdPids()]) {
        try {
          process.kill(pid, 'SIGCONT');
          process.kill(pid, 'SIGTERM');
        } catch {}
      }
      await exited;
      // A helper that crashed says why in its log: show it with the test's output.
      const log = join(dir, 'helper', 'helper.log');
      if (existsSync(log) && readFileSync(log, 'utf8').trim() !== '')
        console.error(readFileSync(log, 'utf8'));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// The processes below `root` (by parent pid), root included.
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === out[i]) out.push(pid);
  }
  return out;
}

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
