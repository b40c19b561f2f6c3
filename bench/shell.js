// P1 and P2 (shell part): rt.shell.run against the raw baseline in the same run, as ratios.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { createRuntime } from '../dist/src/index.js';
import { measureFlood } from './measure.js';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The same shell, no runtime: spawn, wait for exit and stdio close.
function rawRun(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let bytes = 0;
    child.stdout.on('data', (chunk) => {
      bytes += chunk.length;
    });
    child.stderr.on('data', (chunk) => {
      bytes += chunk.length;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, bytes }));
  });
}

// The durable work C2 asks for, done by hand: pipe read, every byte to a file, fsync.
async function rawRunToFile(command, path) {
  const file = createWriteStream(path);
  const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout.pipe(file);
  await new Promise((resolve) => file.on('finish', resolve));
  const handle = await open(path, 'r+');
  await handle.sync();
  await handle.close();
  await rm(path);
}

/** P1: median latency of `true`, interleaved so drift hits all three alike. */
export async function benchLatency(rt, iterations = 200) {
  const times = { raw: [], tether: [], execa: [] };
  const runs = {
    raw: () => rawRun('true'),
    tether: () => rt.shell.run({ command: 'true' }),
    execa: () => execa('/bin/bash', ['-c', 'true']),
  };
  for (let i = 0; i < 20; i++) for (const run of Object.values(runs)) await run(); // warm-up
  for (let i = 0; i < iterations; i++) {
    for (const [name, run] of Object.entries(runs)) {
      const t0 = performance.now();
      await run();
      times[name].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([name, xs]) => [name, median(xs)]));
}

/** P2: MB/s of `bytes` of output, RSS growth and event-loop delay p99 while it floods. */
export async function benchFlood(rt, rtNoSpill, bytes, scratch) {
  const command = `head -c ${bytes} /dev/zero`;
  const raw = await measureFlood(() => rawRun(command), bytes);
  const rawToFile = await measureFlood(() => rawRunToFile(command, join(scratch, 'raw.out')), bytes);
  const tether = await measureFlood(() => rt.shell.run({ command }), bytes);
  if (tether.result.spillPath) await rm(tether.result.spillPath, { force: true });
  const tetherNoSpill = await measureFlood(() => rtNoSpill.shell.run({ command }), bytes);
  return { raw, rawToFile, tether, tetherNoSpill };
}

export async function runShellBenchmarks({ floodBytes = 2 ** 30, iterations = 200 } = {}) {
  const spillDir = join(tmpdir(), `tether-bench-${process.pid}`);
  const rt = await createRuntime({ spillDir });
  const rtNoSpill = await createRuntime({ spillDir: false });
  try {
    const latency = await benchLatency(rt, iterations);
    const flood = await benchFlood(rt, rtNoSpill, floodBytes, tmpdir());
    return { latency, flood };
  } finally {
    await rt.dispose();
    await rtNoSpill.dispose();
    await rm(spillDir, { recursive: true, force: true });
  }
}

const fmt = (x, digits = 2) => x.toFixed(digits);

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const { latency, flood } = await runShellBenchmarks(
    quick ? { floodBytes: 64 * 2 ** 20, iterations: 50 } : {},
  );
  const size = quick ? '64 MiB' : '1 GiB';
  const { raw, rawToFile, tether, tetherNoSpill } = flood;
  return [
    [
      'P1 shell.run("true") median ms',
      fmt(latency.raw),
      fmt(latency.tether),
      `${fmt(latency.tether / latency.raw)}× raw`,
      '≤ 1.15× raw, < execa',
      `execa ${fmt(latency.execa)} ms`,
    ],
    [
      `P2 shell.run ${size} MB/s, spill on`,
      fmt(raw.mbps, 0),
      fmt(tether.mbps, 0),
      `${fmt(tether.mbps / raw.mbps)}× raw`,
      '≥ 0.9× raw',
      `vs raw read + file + fsync (${fmt(rawToFile.mbps, 0)} MB/s): ${fmt(tether.mbps / rawToFile.mbps)}×`,
    ],
    [
      `P2 shell.run ${size} MB/s, spill off`,
      fmt(raw.mbps, 0),
      fmt(tetherNoSpill.mbps, 0),
      `${fmt(tetherNoSpill.mbps / raw.mbps)}× raw`,
      '≥ 0.9× raw',
      'tail only: the runtime’s own cost',
    ],
    [
      'P2 RSS growth MiB, spill on / off',
      fmt(raw.rssGrowthMiB, 1),
      `${fmt(tether.rssGrowthMiB, 1)} / ${fmt(tetherNoSpill.rssGrowthMiB, 1)}`,
      '',
      '≤ 64',
      '',
    ],
    [
      'P2 event-loop p99 ms, spill on / off',
      fmt(raw.p99ms),
      `${fmt(tether.p99ms)} / ${fmt(tetherNoSpill.p99ms)}`,
      '',
      '≤ 10',
      '',
    ],
  ];
}
