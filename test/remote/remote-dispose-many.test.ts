import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createExecProvider } from '../../src/remote/exec-provider.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { until } from './remote-waits.js';

const TREES = 200;
const STARTED_AT_ONCE = 16;
// Five processes a tree (a shell and four sleeps, 1,000 in all): the helper's work per signal
// and per kill step grew with every process on the host, so the 200 cancels stalled its loop
// for seconds (the sleeps in the background ignore the SIGINT: the kill ends them).
const COMMAND = 'sleep 100000 & sleep 100000 & sleep 100000 & sleep 100000 & wait';
const PER_TREE = 5;

// Live processes whose env carries one of this test process's tree markers (TETHER_TREE=<pid>.…).
function markedPids(): number[] {
  const marker = Buffer.from(`TETHER_TREE=${process.pid}.`);
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if ('ZX'.includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3))) continue;
      if (readFileSync(`/proc/${name}/environ`).includes(marker)) found.push(Number(name));
    } catch {}
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('dispose with hundreds of remote trees on one helper link (issue 31)', () => {
  let dir: string | null = null;
  let rt: Runtime | null = null;
  let daemon: number | null = null;
  afterEach(async () => {
    await rt?.dispose().catch(() => {});
    rt = null;
    // What a failing run left is this test's to end, by pid: the trees, then their daemon.
    for (const pid of markedPids()) process.kill(pid, 'SIGKILL');
    if (daemon !== null && isAlive(daemon)) process.kill(daemon, 'SIGKILL');
    daemon = null;
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });

  it(`X2, X3, D2, D3: rt.dispose() with ${TREES} idle remote jobs on one exec link kills every tree (no marked process left), reports no failed cancel, and its helper daemon ends`, async () => {
    dir = mkdtempSync(join(tmpdir(), 'tether-dispose-many-'));
    // The helper runs here over /usr/bin/env. The heartbeat's bound (500 ms × 3) is shorter than
    // the default 2 s × 3, so that a helper whose loop stalls for 1.5 s is a lost link on an idle
    // machine too (the stall that dropped the link at dispose, a /proc scan per signal, was 7-18 s
    // for 300 trees at load 10-19). A helper that keeps answering never trips it.
    const provider = createExecProvider({
      argv: ['/usr/bin/env', 'PATH=/usr/bin:/bin'],
      helperDir: dir,
      label: 'dispose-many',
      heartbeat: { intervalMs: 500, countMax: 3 },
    });
    rt = await createRuntime({ provider, cwd: '/tmp', spillDir: false, limits: { maxJobsPerOwner: TREES } });
    const lease = rt.owners.host();
    for (let i = 0; i < TREES; i += STARTED_AT_ONCE) {
      await Promise.all(
        Array.from({ length: Math.min(STARTED_AT_ONCE, TREES - i) }, () =>
          rt?.shell.background(lease.token, { command: COMMAND }),
        ),
      );
    }
    daemon = Number(readFileSync(join(dir, 'helper.pid'), 'utf8'));
    expect((await rt.jobs.list(lease.token)).filter((j) => j.state === 'running')).toHaveLength(TREES);
    await until('every tree started its sleeps', markedPids, (pids) => pids.length === TREES * PER_TREE);

    // A cancel that could not reach the host, or a provider that could not kill what it held,
    // is a process warning: dispose must have had none (never a silent "done" with trees alive).
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => {
      if (w.code === 'TETHER_JOB_HOOK' || w.code === 'TETHER_PROVIDER') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      await rt.dispose();
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.slice(0, 3)).toEqual([]);
    expect(markedPids()).toEqual([]);
    expect(provider.workers).toBe(0);
    // The daemon ends on its own once no client and no tree is left (it was never killed here).
    const helper = daemon;
    await until(
      'the helper daemon ended',
      () => isAlive(helper),
      (alive) => !alive,
    );
  }, 300_000);
});
