import { existsSync } from 'node:fs';
import { setTimeout as pause } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { SshProvider } from '../../src/remote/ssh-provider.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { type Sshd, startSshd } from './sshd-fixture.js';

// Bounded polls for facts (the bound only turns a hang into a failure).
async function until<T>(what: string, probe: () => T | Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let last = await probe();
  for (let i = 0; i < 3000 && !ok(last); i++) {
    await pause(10);
    last = await probe();
  }
  if (!ok(last)) throw new Error(`${what} never happened; last: ${JSON.stringify(last)}`);
  return last;
}

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

  it('X3: rt.dispose with a job running on a stalled host returns within one keepalive interval after the stall is noticed', async () => {
    sshd = await startSshd();
    const keepalive = { intervalMs: 300, countMax: 2 };
    provider = sshd.provider({ keepalive, lingerMs: 500 });
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
    // the tree is abandoned to the host (no reconnect attempts are waited out, no handshake with
    // the stopped server), and the goodbye is skipped: the bound the docs give, plus scheduling.
    expect(ms, `dispose took ${ms.toFixed(0)} ms (job ${job.id})`).toBeLessThan(
      keepalive.intervalMs * (keepalive.countMax + 1) + 600,
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
