// Issue 31, "how many helper links one runtime holds": n owners of one runtime, each placed on a
// provider of its own (X4) — the exec provider over `/usr/bin/env` on this machine, its own
// helper directory, so its own helper daemon as a host of its own would have — each holding one
// idle job (`sleep`), against n raw python3 line servers (bench/raw-line-server.js) each holding
// one `sleep`. Measured per side: this process's RSS and heap per link (all open − first open,
// / (n − 1), after GC), the helper processes' Pss per link, fds, an idle window (loop delay,
// CPU here and in the helpers) and a window where each link runs `true` every 5 s (loop delay,
// call latency), then the time to dispose and what is left.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime } from '../dist/src/index.js';
import { timed } from './drive.js';
import { localExecProvider } from './local-host.js';
import { childrenOf, collectedRss, fdCount, heapNow, living, memoryOf, pool, window } from './proc-stats.js';
import { startRawServer } from './raw-line-server.js';

const OPEN_WIDTH = 8; // links opened at a time

// What both sides measure around their own links. `side.start()` gives { open(i), pids(), call(i),
// treePids(), dispose(), left() }.
async function measured(n, { idleSeconds, callSeconds }, side) {
  const rss0 = await collectedRss();
  const s = await side.start();
  const firstFailures = await pool(1, 1, s.open);
  if (Object.keys(firstFailures).length > 0)
    throw new Error(`the first link failed: ${JSON.stringify(firstFailures)}`);
  const rssOne = await collectedRss();
  const heapOne = heapNow();
  const opened = await timed(() => pool(n - 1, OPEN_WIDTH, (i) => s.open(i + 1)));
  await sleep(1_000);
  const rssAll = await collectedRss();
  const heapAll = heapNow();
  const pids = s.pids();
  const helpers = memoryOf(pids);
  const fds = fdCount();
  const idle = await window(idleSeconds, { pids });
  const calls = await window(callSeconds, { callers: n, call: s.call, pids });
  const trees = s.treePids();
  const disposed = await timed(() => s.dispose());
  const left = { ...(await s.left()), trees: trees.length, treesLeft: living(trees).length };
  // What dispose left is ours to end (after the daemon, a tree's parent is init): not the next run's.
  for (const pid of living(trees)) process.kill(pid, 'SIGKILL');
  const rssAfter = await collectedRss();
  return {
    rss0,
    rssOne,
    rssAll,
    rssAfter,
    perLinkRss: (rssAll - rssOne) / (n - 1),
    perLinkHeap: (heapAll - heapOne) / (n - 1),
    fixedRss: rssOne - rss0,
    helpers,
    fds,
    openMs: opened.ms,
    openFailures: opened.result,
    idle,
    calls,
    disposeMs: disposed.ms,
    left,
  };
}

/** Tether: one runtime, n owners each on an exec provider of its own, one idle job each. */
export function tetherLinks(n, windows) {
  const base = mkdtempSync(join(tmpdir(), 'tether-scale-links-'));
  let rt = null;
  const leases = [];
  const daemons = new Set();
  const dirOf = (i) => join(base, `h${i}`);
  return measured(n, windows, {
    async start() {
      rt = await createRuntime({ cwd: '/tmp', spillDir: false });
      for (let i = 0; i < n; i++) {
        const provider = localExecProvider(dirOf(i), `link-${i}`);
        leases.push(rt.owners.host({ provider }));
      }
      return {
        open: async (i) => {
          await rt.shell.background(leases[i].token, { command: 'exec sleep 100000' });
          daemons.add(Number(readFileSync(join(dirOf(i), 'helper.pid'), 'utf8')));
        },
        // The helper processes: each link's relay (a child here) and its daemon (not: it forked away).
        pids: () => [
          ...childrenOf(process.pid)
            .filter((p) => p.argv.some((w) => w.includes('tether-helper')))
            .map((p) => p.pid),
          ...daemons,
        ],
        call: (i) =>
          rt.shell.run({ command: 'true', owner: leases[i].token }).then((r) => {
            if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
          }),
        treePids: () => [...daemons].flatMap((pid) => childrenOf(pid).map((p) => p.pid)),
        dispose: () => rt.dispose(),
        // Daemons still running 20 s after dispose (each ends once its last client and tree are gone).
        async left() {
          const t0 = performance.now();
          let alive = living([...daemons]);
          while (alive.length > 0 && performance.now() - t0 < 20_000) {
            await sleep(200);
            alive = living(alive);
          }
          for (const pid of alive) process.kill(pid, 'SIGKILL'); // ours: started by our links
          rmSync(base, { recursive: true, force: true });
          return { daemonsLeft: alive.length, daemonsGoneMs: performance.now() - t0 };
        },
      };
    },
  });
}

/** Raw: n python3 line servers, each holding one `sleep`, driven from this thread. */
export function rawLinks(n, windows) {
  const servers = [];
  return measured(n, windows, {
    async start() {
      return {
        open: async (i) => {
          servers[i] = await startRawServer({ idle: true });
        },
        pids: () => servers.filter(Boolean).map((s) => s.pid),
        call: (i) =>
          servers[i].call('true').then((r) => {
            if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
          }),
        treePids: () => servers.filter(Boolean).flatMap((s) => childrenOf(s.pid).map((p) => p.pid)),
        dispose: () => Promise.all(servers.filter(Boolean).map((s) => s.close())),
        left: async () => ({ daemonsLeft: 0, daemonsGoneMs: 0 }),
      };
    },
  });
}
