import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createRuntime, type Fact, type OwnerLease, type Runtime } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses, readProcStat } from '../../src/subprocess/proc.js';
import { currentProcSnapshotSeq } from '../../src/subprocess/proc-snapshot.js';
import { signalSessionShared } from '../../src/subprocess/pty/pty-signal.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';

const OWNERS = 24;

// Until the terminal printed something (its prompt): the shell runs.
async function untilOutput(rt: Runtime, owner: OwnerLease['token'], id: string): Promise<void> {
  while ((await rt.terminals.read(owner, id, 0)).text.length === 0) await sleep(20);
}

describe('terminals: many closed at once', () => {
  it('T8, D2: the sessions of 24 terminals signalled in one turn are found by one /proc scan, not one each (P8)', async () => {
    const rt = await createRuntime();
    try {
      const leases = Array.from({ length: OWNERS }, () => rt.owners.host());
      const terminals = await Promise.all(leases.map((l) => rt.terminals.open(l.token)));
      // Every shell at its prompt first: open resolves once the leader exists, and a leader that
      // has not yet made its session (setsid) has no member to signal (the CI of 2ef7678 saw 2 of 24).
      await Promise.all(terminals.map((t, i) => untilOutput(rt, leases[i]!.token, t.id)));
      const leaders = terminals.map(({ pid }) => ({ pid, startTime: readProcStat(pid)!.startTime }));
      const scans0 = currentProcSnapshotSeq();
      // SIGCONT: harmless to an idle shell, so what it reached is still there to be closed.
      const sent = await Promise.all(leaders.map((leader) => signalSessionShared(leader, 'SIGCONT')));
      expect(sent).toEqual(leaders.map(() => true));
      // A terminal's close hangs up its session this way: each close scanned all of /proc once,
      // one after another (quadratic in the terminals: 10-12 s to dispose of 1,000).
      expect(currentProcSnapshotSeq() - scans0).toBe(1);
    } finally {
      await rt.dispose();
    }
  });

  it('D2, T4: disposing 24 owners with a terminal at its prompt and a finished job each: each verdict proved by the cgroup, no record or process left (P8)', async () => {
    const rt = await createRuntime();
    try {
      const leases = Array.from({ length: OWNERS }, () => rt.owners.host());
      const terminals = await Promise.all(leases.map((l) => rt.terminals.open(l.token)));
      // Every shell at its prompt (inside its cgroup) before the dispose, as in the P8 bench.
      await Promise.all(terminals.map((t, i) => untilOutput(rt, leases[i]!.token, t.id)));
      for (const { token } of leases) {
        const job = await rt.shell.background(token, { command: 'echo tick' });
        while (!(await rt.jobs.wait(token, job.id, 1_000))) {}
        expect((await rt.jobs.read(token, job.id, 0)).text).toBe('tick\n');
      }
      const verdicts: Extract<Fact, { type: 'kill.verdict' }>[] = [];
      rt.observe((fact) => {
        if (fact.type === 'kill.verdict' && fact.actor.startsWith('terminal:')) verdicts.push(fact);
      });
      await rt.dispose();
      // A shell its hang-up just ended reads as in the root cgroup while it exits: its tree was
      // then killed as if it had never entered (the marker sweep, whose look-alikes on a shared
      // machine made verdicts 'escaped'). Each terminal's verdict is its cgroup's.
      const proof = rt.stats().containment === 'cgroup' ? 'cgroup' : 'proc';
      expect(verdicts.map((v) => `${v.status} ${v.proof}`)).toEqual(
        terminals.map(() => `quiescent ${proof}`),
      );
      expect(rt.terminals.stats()).toEqual(TERMINALS_QUIESCENT);
      const { jobs, processes, workers, timers, waiters } = rt.stats();
      expect({ jobs: jobs.jobs, processes, workers, timers, waiters }).toEqual({
        jobs: 0,
        processes: 0,
        workers: 0,
        timers: 0,
        waiters: 0,
      });
      expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    } finally {
      await rt.dispose();
    }
  });
});
