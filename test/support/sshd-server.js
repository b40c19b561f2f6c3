// A real OpenSSH server on a random loopback port, with its own host key, authorized key and
// config (X1, X3), for the tests (test/remote/sshd-fixture.ts) and bench/remote.js. Plain
// JavaScript so that the benchmark, which runs on the build, can start the same server.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SSHD = ['/usr/sbin/sshd', '/usr/bin/sshd'].find((p) => existsSync(p));

/** Starts `sshd -D -e -f <config>` as a child of this process; retries another port when taken. */
export async function startSshdServer() {
  if (SSHD === undefined) throw new Error('sshd not found: install openssh-server (.ci/run does)');
  const dir = mkdtempSync(join(tmpdir(), 'tether-sshd-'));
  mkdirSync('/run/sshd', { recursive: true }); // sshd's privilege-separation directory
  for (const key of ['host_key', 'user_key']) {
    const made = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, key)]);
    if (made.status !== 0) throw new Error(`ssh-keygen failed: ${made.stderr}`);
  }
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
        // bench/remote.js sends SHLVL=2 with its raw execs: then the login bash does not source
        // ~/.bashrc (Debian's bash does for `ssh host cmd`), so the baseline is the exec alone.
        'AcceptEnv SHLVL',
        'LogLevel INFO',
        '',
      ].join('\n'),
    );
    const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    const listening = await new Promise((resolve) => {
      let log = '';
      child.stderr.on('data', (chunk) => {
        log += chunk.toString();
        if (/Server listening on/.test(log)) resolve(true);
      });
      child.once('exit', () => resolve(false));
    });
    if (listening) return server(child, port, dir);
    if (attempt >= 5) throw new Error(`sshd did not start (last port ${port})`);
  }
}

function server(child, port, dir) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const pids = () => descendants(child.pid).filter((pid) => /sshd/.test(comm(pid)));
  return {
    port,
    dir,
    hostKey: readFileSync(join(dir, 'host_key.pub'), 'utf8'),
    userKey: readFileSync(join(dir, 'user_key'), 'utf8'),
    pids,
    async stop() {
      for (const pid of [child.pid, ...pids()]) {
        try {
          process.kill(pid, 'SIGCONT');
          process.kill(pid, 'SIGTERM');
        } catch {}
      }
      await exited;
      // A helper that crashed says why in its log: show it with the caller's output.
      const log = join(dir, 'helper', 'helper.log');
      if (existsSync(log) && readFileSync(log, 'utf8').trim() !== '')
        console.error(readFileSync(log, 'utf8'));
      // The helper, once its connection is gone, may still be removing its own files in there
      // for a moment (ENOTEMPTY): retry rather than fail the test's teardown.
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    },
  };
}

// The processes below `root` (by parent pid), root first.
function descendants(root) {
  const parents = new Map();
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

function comm(pid) {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}
