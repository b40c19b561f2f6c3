import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SshProvider } from '../../src/remote/ssh-provider.js';
import { createSshProvider } from '../../src/remote/ssh-provider.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import type { SubprocessHandle, TreeKillVerdict } from '../../src/subprocess/types.js';
import { until } from '../support/waits.js';
import { type Sshd, startSshd } from './sshd-fixture.js';
import { createUnprivilegedUser, type UnprivilegedUser } from './unprivileged-user.js';

describe('ssh provider edge cases (issue 33.7)', () => {
  let sshd: Sshd | null = null;
  let provider: SshProvider | null = null;
  let rt: Runtime | null = null;
  afterEach(async () => {
    for (const pid of sshd?.sshdPids() ?? []) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
    try {
      await rt?.dispose();
      await provider?.dispose();
    } finally {
      await sshd?.stop();
      rt = provider = sshd = null;
    }
  });

  it('X3, D2: rt.dispose with a job running on a stalled host returns within the connect bound after the stall is noticed, and the helper kills the tree after lingerMs', async () => {
    sshd = await startSshd();
    const keepalive = { intervalMs: 300, countMax: 2 };
    const connectTimeoutMs = 1500;
    provider = sshd.provider({ keepalive, lingerMs: 500, connectTimeoutMs });
    rt = await createRuntime({ provider, cwd: '/tmp', limits: { cleanupGraceMs: 500 } });
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, { command: 'sleep 1000' });
    const tree = await until(
      'the remote sleep',
      () => listTaggedProcesses(treeIdPrefix()),
      (found) => found.length > 0,
    );
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGSTOP');
    const t0 = performance.now();
    await rt.dispose();
    const ms = performance.now() - t0;
    rt = null;
    // The kill in flight waits for the keepalive to notice the stall (interval × countMax), then
    // one more connect is tried within connectTimeoutMs to kill the tree (D2; the handshake with
    // the stopped server never ends), then the tree is left to the helper's linger and the
    // goodbye is skipped: the bound the docs give, plus scheduling. No reconnect attempts are
    // waited out.
    expect(ms, `dispose took ${ms.toFixed(0)} ms (job ${job.id})`).toBeLessThan(
      keepalive.intervalMs * (keepalive.countMax + 1) + connectTimeoutMs + 600,
    );
    for (const pid of sshd.sshdPids()) process.kill(pid, 'SIGCONT');
    await until(
      'the abandoned tree killed by the helper after lingerMs',
      () => tree.filter((pid) => existsSync(`/proc/${pid}`)),
      (alive) => alive.length === 0,
    );
  });

  it('T5, X3: a stdin_read proof is counted only after every byte written before it, also across a reconnect', async () => {
    sshd = await startSshd();
    provider = sshd.provider();
    // Each round prints more than a pty holds, then its marker, then waits in `read`.
    const script =
      "stty -echo; for i in 1 2 3 4 5 6; do head -c 200000 /dev/zero | tr '\\0' a; echo; echo END-$i; read x; sleep 0.3; done";
    const t = await provider.spawnTerminal({
      argv: ['bash', '--norc', '--noprofile', '-c', script],
      cwd: '/tmp',
      cleanupGraceMs: 500,
      cols: 80,
      rows: 24,
    });
    let seen = '';
    t.onData((text) => {
      seen += text;
    });
    let before: unknown = null;
    for (let round = 1; round <= 6; round++) {
      // A fresh proof (another tid or more wakeups than the last one), as `send` asks for.
      const answer = await until(
        `round ${round} waiting in read`,
        () => t.probeInput(),
        (a) =>
          'waiting' in a &&
          a.waiting &&
          (before === null || JSON.stringify(a.proof) !== JSON.stringify(before)),
      );
      before = 'waiting' in answer && answer.waiting ? answer.proof : null;
      // No straggler time: the proof's own end says what must have arrived.
      await t.settled!();
      expect(seen.includes(`END-${round}`), `round ${round}: the marker written before the wait`).toBe(true);
      await t.write('\r');
      // Rounds 3 and 5 are written while the connection is down (killed once `read` returned):
      // their output reaches us after the re-attach, and a probe's reply can come before it.
      if (round === 2 || round === 4) {
        await until(
          `round ${round} read its line`,
          () => t.probeInput(),
          (a) => !('waiting' in a && a.waiting),
        );
        for (const pid of sshd.sshdPids().slice(1)) process.kill(pid, 'SIGKILL');
      }
    }
    await t.kill();
  });
});

// X2 without a cgroup: the remote user cannot make one, so kills go by marker, session, parentage
// and the orphans the helper adopts as every tree's subreaper.
describe('marker mode: an unprivileged remote user (issue 33.7)', () => {
  let sshd: Sshd | null = null;
  let user: UnprivilegedUser | null = null;
  let provider: SshProvider | null = null;
  const escapees: number[] = [];
  afterEach(async () => {
    for (const pid of sshd?.sshdPids() ?? []) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
    try {
      await provider?.dispose();
      const helper = user?.helperPid() ?? null;
      if (helper !== null) {
        await until(
          'the helper exits after dispose',
          () => existsSync(`/proc/${helper}`),
          (alive) => !alive,
        );
      }
    } finally {
      // An escapee a failed run left behind (this test started it, as that user).
      for (const pid of escapees.splice(0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      user?.remove();
      await sshd?.stop();
      sshd = user = provider = null;
    }
  });
  const open = async () => {
    sshd = await startSshd();
    user = createUnprivilegedUser(sshd);
    provider = createSshProvider(user.options());
    return provider;
  };
  const pipes = { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' } as const;
  const firstLine = async (job: SubprocessHandle) => {
    let text = '';
    job.stdout!.setEncoding('utf8');
    job.stdout!.on('data', (chunk: string) => {
      text += chunk;
    });
    return Number(
      await until(
        'the first line',
        () => text,
        (t) => t.includes('\n'),
      ),
    );
  };
  const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^\S+ \S+ [ZX]/.test(stat(pid));
  const stat = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, 'x');
    } catch {
      return '';
    }
  };
  // A verdict may say quiescent only when it is so (S4): otherwise it must say escaped.
  const honest = (verdict: TreeKillVerdict, escapee: number) =>
    verdict.status === 'escaped' ? verdict.escaped.includes(escapee) : !alive(escapee);

  it("X2: in marker mode a running tree's `env -i setsid` escapee is killed with it (found by its parent), proof proc", async () => {
    const p = await open();
    const job = await p.spawn({
      argv: ['bash', '-c', 'env -i setsid sleep 1000 & echo $!; sleep 1000'],
      cwd: '/tmp',
      cleanupGraceMs: 500,
      stdio: pipes,
    });
    const escapee = await firstLine(job);
    escapees.push(escapee);
    expect(alive(escapee)).toBe(true);
    const verdict = await job.kill();
    expect(verdict.proof).toBe('proc'); // marker mode indeed: no cgroup for this user
    expect(honest(verdict, escapee), JSON.stringify(verdict)).toBe(true);
    expect(verdict.status).toBe('quiescent');
    expect(alive(escapee)).toBe(false);
  });

  it("X2: in marker mode the escapee a finished leader left behind is the helper's adopted orphan: kill takes it", async () => {
    const p = await open();
    const job = await p.spawn({
      argv: ['bash', '-c', 'env -i setsid sleep 1000 & echo $!'],
      cwd: '/tmp',
      cleanupGraceMs: 500,
      stdio: pipes,
    });
    const escapee = await firstLine(job);
    escapees.push(escapee);
    await job.exited;
    expect(alive(escapee)).toBe(true);
    const verdict = await job.kill();
    expect(honest(verdict, escapee), JSON.stringify(verdict)).toBe(true);
    expect(verdict).toMatchObject({ status: 'quiescent', proof: 'proc' });
    expect(alive(escapee)).toBe(false);
  });

  it('X2: in marker mode a tree whose leader exited leaving nothing is proven gone at exit: kill needs no round trip', async () => {
    const p = await open();
    const job = await p.spawn({ argv: ['true'], cwd: '/tmp', cleanupGraceMs: 500, stdio: pipes });
    await job.exited;
    // A stopped server answers nothing: a kill that asked the helper would wait for the keepalive.
    for (const pid of sshd!.sshdPids()) process.kill(pid, 'SIGSTOP');
    const verdict = await job.kill();
    expect(verdict).toEqual({ status: 'quiescent', proof: 'proc', killed: 0 });
  });
});
