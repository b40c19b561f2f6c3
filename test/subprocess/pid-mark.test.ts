import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { MARK_REUSE_MS, markBeforeSpawn, markPids, pidsSince } from '../../src/subprocess/pid-mark.js';

describe('pid-mark', () => {
  it('S4: every process spawned after the mark has a pid inside the bounded range', async () => {
    const mark = markPids();
    expect(mark).not.toBeNull();
    const children = Array.from({ length: 5 }, () => spawn('true'));
    const pids = children.map((c) => c.pid!);
    await Promise.all(children.map((c) => once(c, 'exit')));
    const range = pidsSince(mark);
    expect(range).not.toBeNull();
    for (const pid of pids) expect(range).toContain(pid);
  });

  it('S4: a range that cannot be bounded says so (null), so the caller scans everything', () => {
    expect(pidsSince(null)).toBeNull();
    const mark = markPids()!;
    // A mark from "after now" means the allocator wrapped as far as we can tell.
    expect(pidsSince({ lastPid: mark.lastPid + 10_000, forks: mark.forks })).toBeNull();
    // As many forks as half the pid space: a wrap is possible.
    expect(pidsSince({ lastPid: mark.lastPid, forks: mark.forks - 1_000_000 })).toBeNull();
  });

  it('S4: a mark reused for a later spawn still bounds its pids, and is taken anew once older than MARK_REUSE_MS', async () => {
    const t0 = performance.now();
    const mark = markBeforeSpawn(t0);
    const early = spawn('true');
    await once(early, 'exit');
    // Within MARK_REUSE_MS the same mark serves the next spawn; it was taken before both.
    const reused = markBeforeSpawn(t0 + MARK_REUSE_MS / 2);
    expect(reused).toBe(mark);
    const late = spawn('true');
    await once(late, 'exit');
    const range = pidsSince(reused);
    expect(range).toContain(early.pid);
    expect(range).toContain(late.pid);
    // Older than that, it is read again: the allocator has moved past both spawns.
    const fresh = markBeforeSpawn(t0 + MARK_REUSE_MS * 2);
    expect(fresh).not.toBe(mark);
    expect(fresh!.lastPid).toBeGreaterThanOrEqual(late.pid!);
  });
});
