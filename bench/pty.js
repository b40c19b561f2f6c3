// P3: a flood through a PtySession (PTY host worker, batched) against raw node-pty on the main
// thread in the same run: throughput ratio and main-loop delay while the output floods.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { sanitizeEnv } from '../dist/src/subprocess/env.js';
import { createPtyHost } from '../dist/src/subprocess/pty/pty-host.js';
import { measureFlood } from './measure.js';

const require = createRequire(import.meta.url);
const env = sanitizeEnv(process.env, {}, { TERM: 'xterm' });
// Pure ASCII without newlines: the tty passes it through unchanged (no \n → \r\n).
const flood = (bytes) => ['/bin/sh', '-c', `head -c ${bytes} /dev/zero | tr '\\0' a`];

// Raw node-pty on this thread, as an application would use it without Tether.
function rawRun(bytes) {
  const pty = require('node-pty');
  const [file, ...args] = flood(bytes);
  return new Promise((resolve) => {
    const term = pty.spawn(file, args, { cols: 80, rows: 24, cwd: process.cwd(), env });
    let chars = 0;
    term.onData((text) => {
      chars += text.length;
    });
    term.onExit(() => resolve(chars));
  });
}

// The same command through a PtySession of a PTY host.
async function tetherRun(host, bytes) {
  const session = await host.open({
    argv: flood(bytes),
    cwd: process.cwd(),
    env,
    cols: 80,
    rows: 24,
    cleanupGraceMs: 1000,
  });
  let chars = 0;
  session.onData((text) => {
    chars += text.length;
  });
  await session.exited;
  return chars;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// One measured flood; `result` is the number of characters that arrived before exit.
async function measure(bytes, run) {
  const m = await measureFlood(run, bytes);
  return { ...m, lostBytes: bytes - m.result };
}

/**
 * P3: `bytes` (default 256 MiB) through raw node-pty and through a PtySession, `runs` times
 * each, interleaved so that drift on a shared machine hits both alike; medians are reported.
 */
export async function runPtyBenchmarks({ bytes = 256 * 2 ** 20, runs = 5 } = {}) {
  const host = createPtyHost();
  try {
    await rawRun(2 ** 20); // warm-up: load node-pty, fault in the shell and coreutils
    await tetherRun(host, 2 ** 20); // warm-up: start the worker
    const all = { raw: [], tether: [] };
    for (let i = 0; i < runs; i++) {
      all.raw.push(await measure(bytes, () => rawRun(bytes)));
      all.tether.push(await measure(bytes, () => tetherRun(host, bytes)));
    }
    const summary = (list) => ({
      mbps: median(list.map((r) => r.mbps)),
      p99ms: median(list.map((r) => r.p99ms)),
      rssGrowthMiB: Math.max(...list.map((r) => r.rssGrowthMiB)),
      lostBytes: Math.max(...list.map((r) => r.lostBytes)),
      runs: list.map((r) => Math.round(r.mbps)),
    });
    return { raw: summary(all.raw), tether: summary(all.tether) };
  } finally {
    await host.dispose();
  }
}

const fmt = (x, digits = 2) => x.toFixed(digits);

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const { raw, tether } = await runPtyBenchmarks(quick ? { bytes: 64 * 2 ** 20, runs: 3 } : {});
  const size = quick ? '64 MiB' : '256 MiB';
  return [
    [
      `P3 PtySession ${size} MB/s`,
      fmt(raw.mbps, 0),
      fmt(tether.mbps, 0),
      `${fmt(tether.mbps / raw.mbps)}× raw`,
      '≥ 0.9× raw',
      `median of ${raw.runs.length} interleaved (raw ${raw.runs.join('/')}, tether ${tether.runs.join('/')}); raw = node-pty on the main thread; max bytes lost: raw ${raw.lostBytes}, tether ${tether.lostBytes}`,
    ],
    ['P3 PtySession event-loop p99 ms', fmt(raw.p99ms), fmt(tether.p99ms), '', '≤ 5', 'median of the runs'],
    [
      'P3 PtySession RSS growth MiB',
      fmt(raw.rssGrowthMiB, 1),
      fmt(tether.rssGrowthMiB, 1),
      '',
      '',
      'max of the runs',
    ],
  ];
}

// `node bench/pty.js` runs P3 alone (TETHER_BENCH_QUICK=1: 64 MiB).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
