// Issue 31, "the runtime's memory per remote tree": m idle jobs (`sleep`) of one owner on one
// helper link (a runtime on the exec provider over `/usr/bin/env`), against m `sleep` children
// of this process spawned with child_process (stdout and stderr piped, as a job's are): this
// process's RSS and heap per tree (all started − first started, / (m − 1), after GC), the
// helper daemon's Pss and fds per tree, and an idle window (loop delay, CPU here and in the
// helper) with the m trees running.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime } from '../dist/src/index.js';
import { timed } from './drive.js';
import { localExecProvider } from './local-host.js';
import { childrenOf, collectedRss, fdCount, heapNow, living, memoryOf, pool, window } from './proc-stats.js';

const START_WIDTH = 16; // trees started at a time

// What both sides measure around their trees. `side.start()` gives { tree(i), helpers(),
// treePids(), dispose(), left() }.
async function measured(m, idleSeconds, side) {
  const rss0 = await collectedRss();
  const s = await side.start();
  await s.tree(0);
  const rssOne = await collectedRss();
  const heapOne = heapNow();
  const helperOne = s.helpers();
  const started = await timed(() => pool(m - 1, START_WIDTH, (i) => s.tree(i + 1)));
  await sleep(1_000);
  const rssAll = await collectedRss();
  const heapAll = heapNow();
  const helperAll = s.helpers();
  const idle = await window(idleSeconds, { pids: helperAll.pids });
  const trees = s.treePids();
  const disposed = await timed(() => s.dispose());
  const left = { ...(await s.left()), trees: trees.length, treesLeft: living(trees).length };
  // What dispose left is ours to end (after the daemon, a tree's parent is init): not the next run's.
  for (const pid of living(trees)) process.kill(pid, 'SIGKILL');
  return {
    rss0,
    rssOne,
    rssAll,
    perTreeRss: (rssAll - rssOne) / (m - 1),
    perTreeHeap: (heapAll - heapOne) / (m - 1),
    perTreeHelperPss: (helperAll.pss - helperOne.pss) / (m - 1),
    perTreeHelperFds: (helperAll.fds - helperOne.fds) / (m - 1),
    helperPss: helperAll.pss,
    fds: fdCount(),
    startMs: started.ms,
    startFailures: started.result,
    idle,
    disposeMs: disposed.ms,
    left,
  };
}

/** Tether: m background `sleep` jobs of one owner, all on one helper link. */
export function tetherTrees(m, idleSeconds) {
  const dir = mkdtempSync(join(tmpdir(), 'tether-scale-trees-'));
  let rt = null;
  let lease = null;
  let daemon = null;
  return measured(m, idleSeconds, {
    async start() {
      const provider = localExecProvider(dir, 'trees');
      rt = await createRuntime({ provider, cwd: '/tmp', spillDir: false, limits: { maxJobsPerOwner: m } });
      lease = rt.owners.host();
      return {
        tree: async () => {
          await rt.shell.background(lease.token, { command: 'exec sleep 100000' });
          daemon ??= Number(readFileSync(join(dir, 'helper.pid'), 'utf8'));
        },
        // The relay (a child here) and the daemon, without the trees under the daemon.
        helpers() {
          const relay = childrenOf(process.pid).filter((p) =>
            p.argv.some((w) => w.includes('tether-helper')),
          );
          const pids = [...relay.map((p) => p.pid), daemon];
          return { pids, ...memoryOf(pids), fds: fdCount(daemon) };
        },
        treePids: () => childrenOf(daemon).map((p) => p.pid),
        dispose: () => rt.dispose(),
        async left() {
          const t0 = performance.now();
          while (living([daemon]).length > 0 && performance.now() - t0 < 20_000) await sleep(200);
          const alive = living([daemon]);
          for (const pid of alive) process.kill(pid, 'SIGKILL'); // ours: started by our link
          rmSync(dir, { recursive: true, force: true });
          return { daemonsLeft: alive.length };
        },
      };
    },
  });
}

/** Raw: m `sleep` children of this process, stdout and stderr piped. */
export function rawTrees(m, idleSeconds) {
  const children = [];
  return measured(m, idleSeconds, {
    async start() {
      return {
        tree: (i) =>
          new Promise((resolve, reject) => {
            const child = spawn('sleep', ['100000'], { stdio: ['ignore', 'pipe', 'pipe'] });
            children[i] = child;
            child.once('spawn', resolve);
            child.once('error', reject);
          }),
        helpers: () => ({ pids: [], pss: 0, fds: 0 }),
        dispose: () =>
          Promise.all(
            children.map(
              (child) =>
                new Promise((resolve) => {
                  child.once('close', resolve);
                  child.kill('SIGKILL');
                }),
            ),
          ),
        treePids: () => children.map((c) => c.pid),
        left: async () => ({ daemonsLeft: 0 }),
      };
    },
  });
}
