// V2's cost: P1 with a mirror nobody watches against the same runtime without one, and the main
// loop's p99 during a 1 GiB background-job flood with a browser attached to the mirror, against
// the same flood with no mirror — both in the same run, as ratios.
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';
import { createMirror, createRuntime } from '../dist/src/index.js';
import { measureFlood } from './measure.js';

const fmt = (x, digits = 2) => x.toFixed(digits);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function rawRun(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', reject);
    child.on('close', resolve);
  });
}

/** P1 interleaved: raw, a runtime without a mirror, a runtime with an unwatched mirror. */
async function latency(iterations) {
  const plain = await createRuntime();
  const watched = await createRuntime();
  const mirror = await createMirror(watched);
  const runs = {
    raw: () => rawRun('true'),
    plain: () => plain.shell.run({ command: 'true' }),
    mirrored: () => watched.shell.run({ command: 'true' }),
  };
  const times = { raw: [], plain: [], mirrored: [] };
  try {
    for (let i = 0; i < 20; i++) for (const run of Object.values(runs)) await run();
    for (let i = 0; i < iterations; i++)
      for (const [name, run] of Object.entries(runs)) {
        const t0 = performance.now();
        await run();
        times[name].push(performance.now() - t0);
      }
  } finally {
    await mirror.close();
    await Promise.all([plain.dispose(), watched.dispose()]);
  }
  return Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, median(xs)]));
}

// Reads a background job's output to its end, as bench/jobs.js does.
async function flood(rt, bytes) {
  const lease = rt.owners.host();
  const command = `head -c ${bytes} /dev/zero | tr '\\0' a`;
  return measureFlood(async () => {
    const info = await rt.shell.background(lease.token, { command });
    let cursor = 0;
    for (;;) {
      const page = await rt.jobs.read(lease.token, info.id, cursor, 65_536);
      cursor = page.cursor;
      if (page.done) return cursor;
      if (page.text.length === 0) await rt.jobs.wait(lease.token, info.id, 5);
    }
  }, bytes);
}

/** The flood alone, then the flood with Chromium showing the mirror's live page. */
async function floods(bytes) {
  const options = { spillDir: false, limits: { jobRetentionChars: 16 * 2 ** 20 } };
  const alone = await createRuntime(options);
  let bare;
  try {
    bare = await flood(alone, bytes);
  } finally {
    await alone.dispose();
  }
  const rt = await createRuntime(options);
  const mirror = await createMirror(rt);
  const browser = await chromium.launch({
    executablePath: process.env.TETHER_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(mirror.url);
    await page.waitForSelector('body[data-ready="true"]');
    const watched = await flood(rt, bytes);
    return { bare, watched };
  } finally {
    await browser.close();
    await mirror.close();
    await rt.dispose();
  }
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const p1 = await latency(quick ? 50 : 200);
  const bytes = quick ? 64 * 2 ** 20 : 2 ** 30;
  const { bare, watched } = await floods(bytes);
  const size = quick ? '64 MiB' : '1 GiB';
  return [
    [
      'V2 P1 shell.run("true") median ms, unwatched mirror',
      `${fmt(p1.raw)} (no mirror ${fmt(p1.plain)})`,
      fmt(p1.mirrored),
      `${fmt(p1.mirrored / p1.plain)}× no mirror`,
      'nothing measurable',
      `${fmt(p1.plain / p1.raw)}× / ${fmt(p1.mirrored / p1.raw)}× raw`,
    ],
    [
      `V2 event-loop p99 ms, ${size} job flood, browser attached`,
      `${fmt(bare.p99ms)} (no mirror)`,
      fmt(watched.p99ms),
      `${fmt(watched.mbps / bare.mbps)}× MB/s`,
      '≤ 10 ms',
      `MB/s ${fmt(bare.mbps, 0)} → ${fmt(watched.mbps, 0)}`,
    ],
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.env.TETHER_BENCH_QUICK === '1';
  console.log('| benchmark | raw | tether | ratio | goal | note |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const row of await rows(quick)) console.log(`| ${row.join(' | ')} |`);
}
