import { describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses, readProcStat } from '../../src/subprocess/proc.js';
import { currentProcSnapshotSeq } from '../../src/subprocess/proc-snapshot.js';
import { signalSessionShared } from '../../src/subprocess/pty/pty-signal.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';

const OWNERS = 24;

describe('terminals: many closed at once', () => {
  it('P8: the sessions of 24 terminals signalled in one turn are found by one /proc scan, not one each', async () => {
    const rt = await createRuntime();
    try {
      const leases = Array.from({ length: OWNERS }, () => rt.owners.host());
      const terminals = await Promise.all(leases.map((l) => rt.terminals.open(l.token)));
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

  it('P8, D2: disposing 24 owners with a terminal and a finished job each leaves no record and no process', async () => {
    const rt = await createRuntime();
    try {
      const leases = Array.from({ length: OWNERS }, () => rt.owners.host());
      await Promise.all(leases.map((l) => rt.terminals.open(l.token)));
      for (const { token } of leases) {
        const job = await rt.shell.background(token, { command: 'echo tick' });
        while (!(await rt.jobs.wait(token, job.id, 1_000))) {}
        expect((await rt.jobs.read(token, job.id, 0)).text).toBe('tick\n');
      }
      await rt.dispose();
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
