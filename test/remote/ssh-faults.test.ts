import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import type { SshProvider } from '../../src/remote/ssh-provider.js';
import { probeCgroup } from '../../src/subprocess/containment/cgroup-fs.js';
import { listTaggedProcesses, readProcStat } from '../../src/subprocess/proc.js';
import type { SubprocessHandle, TerminalHandle } from '../../src/subprocess/types.js';
import { lines, until } from '../support/waits.js';
import { type Sshd, startSshd } from './sshd-fixture.js';

const codeOf = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
const grace = (ms: number) => ({ cwd: '/tmp', cleanupGraceMs: ms }) as const;

describe('ssh provider faults (X3)', () => {
  let sshd: Sshd;
  let provider: SshProvider | null = null;
  const handles: Array<SubprocessHandle | TerminalHandle> = [];
  afterEach(async () => {
    for (const pid of sshd.sshdPids()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
    try {
      for (const h of handles.splice(0)) await h.kill().catch(() => {});
      await provider?.dispose();
      provider = null;
      // After the goodbye the helper ends by itself (its trees released or killed).
      const pidFile = join(sshd.dir, 'helper', 'helper.pid');
      if (existsSync(pidFile)) {
        const helper = Number(readFileSync(pidFile, 'utf8'));
        await until(
          'the helper exits after dispose',
          () =>
            existsSync(`/proc/${helper}/cmdline`) &&
            readFileSync(`/proc/${helper}/cmdline`, 'utf8').includes('tether-helper'),
          (alive) => !alive,
        );
      }
    } finally {
      await sshd.stop(); // also when the check failed: one test's server must not outlive it
    }
  });

  const open = async (more = {}) => {
    sshd = await startSshd();
    provider = sshd.provider(more);
    return provider;
  };
  const daemonPid = () => Number(readFileSync(join(sshd.dir, 'helper', 'helper.pid'), 'utf8'));
  // The sshd processes serving connections (the listener's children), not the listener.
  const sessionPids = () => sshd.sshdPids().slice(1);

  it('X3: a wrong host key is refused with a clear error and nothing starts remotely', async () => {
    const other = await startSshd();
    try {
      sshd = await startSshd();
      provider = sshd.provider({ hostKey: other.hostKey });
      const err = await provider
        .spawn({ argv: ['true'], ...grace(500), stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' } })
        .catch((e: unknown) => e);
      expect(codeOf(err)).toBe('PROVIDER_UNAVAILABLE');
      expect((err as Error).message).toMatch(/host key of 127\.0\.0\.1:\d+ does not match/);
      expect(existsSync(join(sshd.dir, 'helper'))).toBe(false);
    } finally {
      await other.stop();
    }
  });

  it('X3: a wrong user is refused with a clear error and nothing starts remotely', async () => {
    await open({ username: 'tether-no-such-user' });
    const err = await provider!
      .spawnTerminal({ argv: ['bash'], ...grace(500), cols: 80, rows: 24 })
      .catch((e: unknown) => e);
    expect(codeOf(err)).toBe('PROVIDER_UNAVAILABLE');
    expect((err as Error).message).toMatch(/user 'tether-no-such-user' was refused/);
    expect(existsSync(join(sshd.dir, 'helper'))).toBe(false);
  });

  it('X3: sshd killed mid-job: the call in flight fails PROVIDER_LOST, the job re-attaches and reads on from its cursor', async () => {
    const p = await open();
    const stopFile = join(sshd.dir, 'stop');
    // Ignores TERM, so a kill with a long grace stays in flight on the helper.
    const script = `trap '' TERM; i=0; while [ ! -e ${stopFile} ]; do i=$((i+1)); echo $i; sleep 0.005; done; echo END`;
    const job = await p.spawn({
      argv: ['bash', '-c', script],
      ...grace(60_000),
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    handles.push(job);
    const out = lines(job.stdout!);
    await out.until('20');
    const inFlight = job.kill().catch((e: unknown) => e);
    await pause(50); // let the request leave (the helper holds it for the 60 s grace either way)
    for (const pid of sessionPids()) process.kill(pid, 'SIGKILL');
    expect(codeOf(await inFlight)).toBe('PROVIDER_LOST');
    // The provider reconnects by itself; the job goes on printing on the remote side.
    const seen = Number(out.text.trim().split('\n').pop());
    await out.until(String(seen + 50));
    writeFileSync(stopFile, '');
    await out.until('END');
    const numbers = out.text.trim().split('\n').slice(0, -1).map(Number);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1)); // nothing lost, nothing doubled
    expect(await job.exited).toEqual({ exitCode: 0, signal: null });
  });

  it('X3: sshd stopped (SIGSTOP) mid-send: the write fails PROVIDER_LOST within the keepalive bound; after SIGCONT the terminal works on', async () => {
    const p = await open();
    const t = await p.spawnTerminal({
      argv: ['bash', '--norc', '--noprofile'],
      ...grace(500),
      cols: 80,
      rows: 24,
      env: { PS1: '$ ' },
    });
    handles.push(t);
    let seen = '';
    t.onData((text) => {
      seen += text;
    });
    await until(
      'the first prompt',
      () => seen,
      (s) => s.includes('$ '),
    );
    await t.write('stty -echo; cat > /dev/null\r');
    // `cat` reads before the server stops: the ^C below interrupts it, not the shell still
    // starting it (which would leave the next line to `cat`).
    await until(
      'cat reading',
      () => t.probeInput(),
      (p) => 'waiting' in p && p.waiting,
    );
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGSTOP');
    // 32 MiB cannot pass the SSH window of a stopped server: only the keepalive can end it.
    const big = t.write('x'.repeat(32 << 20));
    expect(codeOf(await big.catch((e: unknown) => e))).toBe('PROVIDER_LOST');
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGCONT');
    // Re-attached: the terminal is still the same shell. The next line goes only once the
    // prompt is back: written at once after ^C, `cat` could read it before SIGINT ended it.
    const before = seen.length;
    await t.write('\x03');
    await until(
      'the prompt after ^C',
      () => seen.slice(before),
      (s) => s.includes('$ '),
    );
    await t.write('echo back-$((40+2))\r');
    await until(
      'the echo after reconnect',
      () => seen,
      (s) => s.includes('back-42'),
    );
    expect(p.workers).toBe(1);
  });

  it('X3: the helper killed: jobs end with the reason, their trees are killed when the host is reached again', async () => {
    const p = await open();
    const job = await p.spawn({
      argv: ['bash', '-c', 'setsid sleep 1000 & echo ready; sleep 1000'],
      ...grace(500),
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    await lines(job.stdout!).until('ready');
    // Both, once neither is mid-exec (its environ, where the marker is read, is briefly unreadable).
    await until(
      'bash and the setsid sleep',
      () => listTaggedProcesses(job.treeId).length,
      (n) => n === 2,
    );
    process.kill(daemonPid(), 'SIGKILL');
    expect(await job.exited).toEqual({ exitCode: null, signal: null });
    const err = await job.kill().catch((e: unknown) => e);
    expect(codeOf(err)).toBe('PROVIDER_LOST');
    expect((err as Error).message).toMatch(/helper on .* died/);
    // The reconnect that found a new helper killed the old trees by their marker.
    await until(
      'the orphaned tree killed',
      () => listTaggedProcesses(job.treeId),
      (pids) => pids.length === 0,
    );
  });

  // A process that left its session and dropped its env: no marker, no session, only the cgroup.
  const HIDDEN = 'env -i setsid sleep 1000 & echo $!; echo ready; exec sleep 1000';
  // A remote tree with such an escapee, and the escapee's pid once it is `sleep` (before that,
  // `env` and `setsid` still have bash's env).
  const hiddenTree = async () => {
    const job = await (await open()).spawn({
      argv: ['bash', '-c', HIDDEN],
      ...grace(500),
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    const out = lines(job.stdout!);
    await out.until('ready');
    const hidden = Number(out.text.split('\n')[0]);
    const cmdline = () =>
      existsSync(`/proc/${hidden}/cmdline`) ? readFileSync(`/proc/${hidden}/cmdline`, 'utf8') : '';
    await until('the escapee runs sleep', cmdline, (c) => c.startsWith('sleep'));
    return { job, hidden };
  };
  const gone = (pid: number) => {
    const stat = readProcStat(pid);
    return stat === null || stat.state === 'Z';
  };
  const cgroupDirOf = (pid: number) => {
    const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'))!;
    const probe = probeCgroup();
    if (!probe.ok) throw new Error(`this host has no writable cgroup v2: ${probe.reason}`);
    return join(probe.mount, line.slice(3));
  };

  it('X2, K1: each remote tree has its own cgroup; an escapee without marker or session is killed, proof cgroup', async () => {
    const { job, hidden } = await hiddenTree();
    expect(readFileSync(`/proc/${hidden}/environ`, 'utf8')).not.toContain('TETHER_TREE=');
    expect(listTaggedProcesses(job.treeId)).toEqual([job.identity.pid]);
    const dir = cgroupDirOf(job.identity.pid);
    expect(dir).toMatch(/\/tether-helper-\d+\/t-[^/]+$/);
    expect(cgroupDirOf(hidden)).toBe(dir);
    expect(await job.kill()).toEqual({ status: 'quiescent', proof: 'cgroup', killed: 2 });
    expect(gone(hidden)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('X2, K1: a remote leader is born in its tree’s cgroup (the first thing it does is read its own), and the helper is back in its own cgroup after each start', async () => {
    const p = await open();
    let home: string | undefined; // the helper's cgroup after its first start
    for (let i = 0; i < 5; i++) {
      const job = await p.spawn({
        // Builtins only: nothing forks or execs before the read.
        argv: [
          'bash',
          '-c',
          'while read -r l; do case "$l" in 0::*) echo "$l";; esac; done </proc/$$/cgroup',
        ],
        ...grace(500),
        stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
      });
      const out = lines(job.stdout!);
      expect(await job.exited).toEqual({ exitCode: 0, signal: null });
      // Its output can arrive after its exit: wait for the line.
      await until(
        'the cgroup line',
        () => out.text,
        (t) => t.endsWith('\n'),
      );
      expect(out.text).toMatch(/^0::.*\/tether-helper-\d+\/t-[^/]+\n$/);
      home ??= readFileSync(`/proc/${daemonPid()}/cgroup`, 'utf8');
      expect(home).not.toMatch(/\/t-/); // no tree's kill reaches it
      expect(readFileSync(`/proc/${daemonPid()}/cgroup`, 'utf8')).toBe(home);
      await job.kill();
    }
  });

  it('X2, K1: after the leader exited, kill still takes a hidden child from the cgroup; an empty cgroup is proven at exit, with no round trip', async () => {
    const p = await open();
    const spawn = (script: string) =>
      p.spawn({
        argv: ['bash', '-c', script],
        ...grace(500),
        stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
      });
    const left = await spawn('env -i setsid sleep 1000 >/dev/null 2>&1 & echo $!');
    const out = lines(left.stdout!);
    await until(
      'the hidden pid',
      () => out.text,
      (t) => t.endsWith('\n'),
    );
    const hidden = Number(out.text.trim());
    expect(await left.exited).toEqual({ exitCode: 0, signal: null });
    expect(gone(hidden)).toBe(false);
    expect(await left.kill()).toEqual({ status: 'quiescent', proof: 'cgroup', killed: 1 });
    expect(gone(hidden)).toBe(true);
    const empty = await spawn('true');
    expect(await empty.exited).toEqual({ exitCode: 0, signal: null });
    // The helper said at exit that the cgroup was empty: the verdict comes from a stopped server.
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGSTOP');
    expect(await empty.kill()).toEqual({ status: 'quiescent', proof: 'cgroup', killed: 0 });
  });

  it('X2, X3: after the helper was killed, the next one kills its orphans through their cgroup', async () => {
    const { job, hidden } = await hiddenTree();
    const dir = cgroupDirOf(hidden);
    process.kill(daemonPid(), 'SIGKILL');
    expect(await job.exited).toEqual({ exitCode: null, signal: null });
    // The marker finds the leader only; the reconnect's helper finds the rest in the cgroup.
    await until(
      'the hidden orphan killed',
      () => gone(hidden),
      (g) => g,
    );
    await until(
      'its cgroup removed',
      () => existsSync(dir),
      (e) => !e,
    );
  });

  it('X3: dispose while a reconnect is killing orphans leaves no connection and no helper behind', async () => {
    const p = await open();
    // Every process of the tree ignores TERM, so the orphan kill on reconnect holds its grace.
    const job = await p.spawn({
      argv: ['bash', '-c', "trap '' TERM; setsid sleep 1000 & echo ready; sleep 1000"],
      ...grace(500),
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    await lines(job.stdout!).until('ready');
    const first = daemonPid();
    process.kill(first, 'SIGKILL');
    await job.exited;
    // The reconnect's new helper is up and its orphan kill is under way (the tree still lives).
    const second = await until(
      'a new helper',
      () => (existsSync(join(sshd.dir, 'helper', 'helper.pid')) ? daemonPid() : first),
      (pid) => pid !== first && existsSync(`/proc/${pid}`),
    );
    expect(listTaggedProcesses(job.treeId).length).toBe(2);
    await p.dispose();
    expect(p.workers).toBe(0);
    await until('no SSH session left', sessionPids, (pids) => pids.length === 0);
    await until(
      'the second helper gone',
      () => existsSync(`/proc/${second}`),
      (alive) => !alive,
    );
  });

  it('X3: dispose never hangs on a stopped host; the helper kills the abandoned trees after lingerMs', async () => {
    const p = await open({ lingerMs: 500 });
    const job = await p.spawn({
      argv: ['sleep', '1000'],
      ...grace(500),
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    const daemon = daemonPid();
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGSTOP');
    expect(codeOf(await job.kill().catch((e: unknown) => e))).toBe('PROVIDER_LOST');
    // D2: the abandoned tree could not be killed: dispose says so (bounded, never a silent done).
    const disposed = await p.dispose().then(
      () => null,
      (e: unknown) => e,
    );
    expect(codeOf(disposed)).toBe('PROVIDER_LOST');
    expect(String(disposed)).toContain('1 remote tree(s)');
    expect(p.workers).toBe(0);
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGCONT');
    await until(
      'the abandoned tree killed',
      () => listTaggedProcesses(job.treeId),
      (pids) => pids.length === 0,
    );
    await until(
      'the helper gone',
      () => existsSync(`/proc/${daemon}`),
      (alive) => !alive,
    );
  });
});
