import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameLiveProcess, readIdentity, signalIdentity } from '../../src/subprocess/identity.js';
import { TREE_MARKER_ENV } from '../../src/subprocess/marker.js';
import {
  hasProcfs,
  isExiting,
  killPending,
  listPids,
  listTaggedProcesses,
  parseProcStat,
  readEnvironValue,
  readProcStat,
} from '../../src/subprocess/proc.js';
import { currentProcSnapshotSeq, procSnapshotAfter } from '../../src/subprocess/proc-snapshot.js';
import { killSpawnedTrees, spawnTree, tagged, waitFor } from '../support/spawn-tree.js';

afterEach(killSpawnedTrees);

const linux = hasProcfs();

describe('proc', () => {
  it('S4: parses a stat line whose comm holds spaces and parentheses (split at the last ")")', () => {
    const rest = 'S 10 20 30 34816 20 4194304 0 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100';
    const stat = parseProcStat(`4242 (a (b) c) d) ${rest}\n`);
    expect(stat).toEqual({
      pid: 4242,
      comm: 'a (b) c) d',
      state: 'S',
      ppid: 10,
      pgrp: 20,
      session: 30,
      ttyNr: 34816,
      tpgid: 20,
      flags: 4194304,
      startTime: 987654,
    });
    expect(isExiting(stat!)).toBe(false);
    // PF_EXITING (0x4) in field 9: past the start of its exit (P8: it then reads as in the root cgroup).
    expect(isExiting(parseProcStat(`4242 (sh) ${rest.replace(' 4194304 ', ' 4194308 ')}`)!)).toBe(true);
    expect(parseProcStat('garbage')).toBeNull();
    expect(parseProcStat('12 (x) ')).toBeNull();
  });

  it.runIf(linux)('S4: reads a live process whose executable is named "a b) c"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-comm-'));
    try {
      const exe = join(dir, 'a b) c');
      copyFileSync('/bin/sleep', exe);
      const tree = spawnTree([exe, '1000']);
      const stat = await waitFor(() => {
        const s = readProcStat(tree.target.root.pid);
        return s?.comm === 'a b) c' ? s : null;
      }, 'exec of the oddly named sleep');
      expect(stat.pid).toBe(tree.target.root.pid);
      expect(stat.ppid).toBe(process.pid);
      // detached: true makes it lead its own group and session.
      expect(stat.pgrp).toBe(stat.pid);
      expect(stat.session).toBe(stat.pid);
      expect(stat.startTime).toBe(tree.target.root.startTime);
      expect(['S', 'R']).toContain(stat.state);
      process.kill(stat.pid, 'SIGKILL');
      await tree.exited;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(linux)(
    'P8: no SIGKILL is pending for a live process that was sent none, nor for a gone pid',
    () => {
      expect(killPending(process.pid)).toBe(false);
      expect(killPending(2 ** 22 + 1)).toBe(false); // above pid_max: never a process
    },
  );

  it.runIf(linux)('lists pids and reads this process', () => {
    expect(listPids()).toContain(process.pid);
    const self = readProcStat(process.pid);
    expect(self?.pid).toBe(process.pid);
    expect(self?.ppid).toBe(process.ppid);
    expect(readProcStat(2 ** 22 + 12345)).toBeNull();
  });

  it.runIf(linux)('S4: reads the tree marker from environ, first variable or not', async () => {
    const tree = spawnTree(['sleep', '1000']);
    const pid = tree.target.root.pid;
    expect(readEnvironValue(pid, TREE_MARKER_ENV)).toBe(tree.treeId);
    expect(readEnvironValue(pid, 'TETHER_NO_SUCH_VARIABLE')).toBeNull();
    expect(readEnvironValue(pid, 'TETHER_TRE')).toBeNull();
    expect(listTaggedProcesses(tree.treeId)).toEqual([pid]);
    process.kill(pid, 'SIGKILL');
    await tree.exited;
    expect(readEnvironValue(pid, TREE_MARKER_ENV)).toBeNull();
    expect(listTaggedProcesses(tree.treeId)).toEqual([]);
  });

  it.runIf(linux)('shares one /proc scan between callers in the same tick', async () => {
    const before = currentProcSnapshotSeq();
    const snaps = await Promise.all(Array.from({ length: 50 }, () => procSnapshotAfter(before)));
    expect(new Set(snaps.map((s) => s.seq)).size).toBe(1);
    expect(snaps[0]!.seq).toBeGreaterThan(before);
    expect(snaps[0]!.self.has(process.pid)).toBe(true);
    expect(snaps[0]!.self.has(process.ppid)).toBe(true);
    // Asking for something newer than what was seen never returns the same scan.
    const next = await procSnapshotAfter(snaps[0]!.seq);
    expect(next.seq).toBeGreaterThan(snaps[0]!.seq);
  });
});

describe('identity', () => {
  it.runIf(linux)('S4: refuses to signal a live pid whose start time differs', async () => {
    const tree = spawnTree(['sleep', '1000']);
    const real = tree.target.root;
    expect(readIdentity(real.pid)).toEqual(real);
    const stale = { pid: real.pid, startTime: (real.startTime ?? 0) - 1 };
    expect(isSameLiveProcess(stale)).toBe(false);
    expect(signalIdentity(stale, 'SIGKILL')).toBe(false);
    expect(isSameLiveProcess(real)).toBe(true);
    expect(tagged(tree.treeId)).toEqual([real.pid]);
    expect(signalIdentity(real, 'SIGKILL')).toBe(true);
    expect((await tree.exited).signal).toBe('SIGKILL');
    // Gone (and reaped): never signalled again.
    expect(isSameLiveProcess(real)).toBe(false);
    expect(signalIdentity(real, 'SIGKILL')).toBe(false);
    expect(readIdentity(real.pid)).toBeNull();
  });

  it.runIf(linux)('S4: a zombie counts as dead and is never signalled', async () => {
    // The subshell exits after a moment; its parent has exec'd sleep, which never reaps it.
    const tree = spawnTree(['bash', '-c', '(sleep 0.2; exit 0) & echo $!; exec sleep 1000']);
    const zombiePid = Number(await waitFor(() => tree.stdout().trim(), 'the subshell pid'));
    const zombie = await waitFor(() => {
      const s = readProcStat(zombiePid);
      return s?.state === 'Z' ? s : null;
    }, 'the subshell to become a zombie');
    expect(zombie.ppid).toBe(tree.target.root.pid);
    const identity = { pid: zombie.pid, startTime: zombie.startTime };
    expect(isSameLiveProcess(identity)).toBe(false);
    // A zombie keeps its identity (its pid is held until reaped), but it is not alive.
    expect(readIdentity(zombie.pid)).toEqual(identity);
    expect(signalIdentity(identity, 'SIGKILL')).toBe(false);
    expect(listTaggedProcesses(tree.treeId)).toEqual([tree.target.root.pid]);
    process.kill(tree.target.root.pid, 'SIGKILL');
    await tree.exited;
  });
});
