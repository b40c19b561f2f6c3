// P3: a flood through a PtySession (PTY host worker, batched) against raw node-pty on the main
// thread in the same run: throughput ratio and main-loop delay while the output floods.
import { createRequire } from 'node:module';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sanitizeEnv } from '../dist/src/subprocess/env.js';
import { createPtyHost } from '../dist/src/terminals/pty-host.js';

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

// MB/s and the main loop's p99 delay while `run` floods.
async function measure(bytes, run) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const t0 = performance.now();
  const chars = await run();
  const seconds = (performance.now() - t0) / 1000;
  delay.disable();
  return { mbps: bytes / 1e6 / seconds, p99ms: delay.percentile(99) / 1e6, lostBytes: bytes - chars };
}

/** P3: `bytes` (default 256 MiB) through raw node-pty and through a PtySession, one run each. */
export async function runPtyBenchmarks({ bytes = 256 * 2 ** 20 } = {}) {
  const host = createPtyHost();
  try {
    await rawRun(2 ** 20); // warm-up: load node-pty, fault in the shell and coreutils
    await tetherRun(host, 2 ** 20); // warm-up: start the worker
    const raw = await measure(bytes, () => rawRun(bytes));
    const tether = await measure(bytes, () => tetherRun(host, bytes));
    return { raw, tether };
  } finally {
    await host.dispose();
  }
}

const fmt = (x, digits = 2) => x.toFixed(digits);

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const { raw, tether } = await runPtyBenchmarks(quick ? { bytes: 64 * 2 ** 20 } : {});
  const size = quick ? '64 MiB' : '256 MiB';
  return [
    [
      `P3 PtySession ${size} MB/s`,
      fmt(raw.mbps, 0),
      fmt(tether.mbps, 0),
      `${fmt(tether.mbps / raw.mbps)}× raw`,
      '≥ 0.9× raw',
      `raw: node-pty on the main thread; bytes lost: raw ${raw.lostBytes}, tether ${tether.lostBytes}`,
    ],
    ['P3 PtySession event-loop p99 ms', fmt(raw.p99ms), fmt(tether.p99ms), '', '≤ 5', ''],
  ];
}

// `node bench/pty.js` runs P3 alone (TETHER_BENCH_QUICK=1: 64 MiB).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
