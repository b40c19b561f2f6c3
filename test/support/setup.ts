import { readFileSync } from 'node:fs';
import { afterEach, expect } from 'vitest';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { enterLeakCgroup } from './leak-cgroup.js';
import { isOwnSpawner } from './proc-oracle.js';

// The cgroup oracle: every process this test process started, marker or not, is in it.
const leakCgroup = enterLeakCgroup();

// After every test: nothing this test started is alive (zombies count as dead). First the
// cgroup oracle (it sees what the env marker cannot: `env -i setsid`), then the marker check.
afterEach(async () => {
  // A runtime a test file keeps open across tests has its spawner process (P1), as it has its
  // worker threads: not a leak. Its end is proven where runtimes are disposed (D3,
  // test/subprocess/spawner.test.ts), and it dies with this process (PR_SET_PDEATHSIG).
  const look = () => ({
    inCgroup: (leakCgroup?.leaked() ?? []).filter((pid) => !isOwnSpawner(pid)),
    tagged: listTaggedProcesses(treeIdPrefix()),
  });
  let alive = look();
  // A tree the test just finished with may take a moment to be reaped by its parent.
  for (let i = 0; i < 50 && alive.inCgroup.length + alive.tagged.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    alive = look();
  }
  const described = alive.inCgroup.map(describeProcess);
  // The leak is this test's: kill it so the next test starts clean, then fail.
  for (const pid of new Set([...alive.inCgroup, ...alive.tagged])) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  expect(described, `processes left alive by this test in its cgroup ${leakCgroup?.dir}`).toEqual([]);
  expect(alive.tagged, 'tagged processes left alive by this test').toEqual([]);
});

function describeProcess(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`;
  } catch {
    return String(pid);
  }
}
