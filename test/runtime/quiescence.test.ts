import { mkdtempSync, readdirSync, readlinkSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { threadCount } from '../support/proc-oracle.js';

// D3 with oracles the runtime does not keep: Node's own list of active handles and requests,
// the kernel's thread count and open file descriptors of this process, before and after.

const resources = () => {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
};
const fds = () =>
  readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return null; // the fd readdir itself used
      }
    })
    .filter((l): l is string => l !== null && !l.startsWith('/proc/'))
    .sort();
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('D3 quiescence, seen by the platform', () => {
  it('D3: timers, threads, fds and handles in use while working are all gone after dispose (stats().timers counts terminal timers)', async () => {
    const spillDir = mkdtempSync(join(tmpdir(), 'tether-d3-'));
    // libuv opens one inotify fd per loop on the first fs.watch and keeps it until the loop
    // closes (src/unix/linux.c, uv__inotify_fd); cgroup containment watches cgroup.events, so
    // that fd is made part of the baseline here, not counted as the runtime's.
    watch(spillDir, { persistent: false }).close();
    await settle();
    const before = { resources: resources(), threads: threadCount(), fds: fds() };
    const rt = await createRuntime({ spillDir, limits: { cleanupGraceMs: 200, outputCapChars: 1_000 } });
    try {
      const lease = rt.owners.host();
      const spilled = await rt.shell.run({ command: 'seq 1 20000' });
      expect(spilled.spillPath).toBeDefined(); // the spill worker ran
      await rt.shell.background(lease.token, { command: 'sleep 300' });
      const t = await rt.terminals.open(lease.token);
      // A send that only the deadline can end: it holds a timer while in flight.
      const sending = rt.terminals.send(lease.token, t.id, 'while :; do echo .; sleep 0.05; done\n', {
        settleMs: 600_000,
        timeoutMs: 600_000,
      });
      // It ends when the SIGINT below ends the loop, or at dispose: handled from the start.
      void sending.catch(() => undefined);
      // The loop's output means the input was written and the send waits on its deadline (a
      // SIGINT sent earlier, while the shell still starts, would end the shell instead).
      await vi.waitFor(
        async () => {
          const lines = (await rt.terminals.screen(lease.token, t.id)).text.split('\n');
          expect(lines.filter((line) => line.trim() === '.').length).toBeGreaterThan(1);
          expect(rt.stats().terminals.timers).toBeGreaterThan(0);
        },
        { timeout: 10_000, interval: 10 },
      );
      const during = rt.stats();
      expect(during.terminals.timers).toBeGreaterThan(0);
      expect(during.timers).toBeGreaterThanOrEqual(during.terminals.timers); // counted in the total
      // Node sees the job's pipes and the spawner's channel (the job is the spawner's child,
      // not a ProcessWrap of this process) and the PTY worker's port (its Timeout entries are
      // per timer list, not per timer, so they are compared only after dispose).
      expect(resources().PipeWrap ?? 0).toBeGreaterThan(before.resources.PipeWrap ?? 0);
      expect(resources().MessagePort ?? 0).toBeGreaterThan(before.resources.MessagePort ?? 0);
      expect(threadCount()).toBeGreaterThan(before.threads); // the PTY worker
      expect(fds().length).toBeGreaterThan(before.fds.length); // the PTY, the job's pipes
      await rt.terminals.signal(lease.token, t.id, 'SIGINT');
    } finally {
      await rt.dispose();
      rmSync(spillDir, { recursive: true, force: true });
    }
    await settle();
    expect(rt.stats()).toMatchObject({ processes: 0, workers: 0, timers: 0, waiters: 0 });
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    // The platform's view is back where it started: no handle, thread or fd of the runtime left.
    // (Something of the test runner's own may have ended meanwhile: nothing may be above the baseline.)
    const after = resources();
    const above = Object.keys(after).filter((k) => after[k]! > (before.resources[k] ?? 0));
    expect(above, JSON.stringify({ before: before.resources, after })).toEqual([]);
    expect(threadCount()).toBe(before.threads);
    expect(fds()).toEqual(before.fds);
  });
});
