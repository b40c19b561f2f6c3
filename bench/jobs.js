// P2 (job part): a flood through a background job, read to the end in pages of several sizes,
// against a raw pipe read decoded as UTF-8 (`setEncoding`: jobs return text) in the same run.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../dist/src/index.js';
import { checkLoad, interleaved, median, ratioSpread, spread } from './measure.js';

const fmt = (x, digits = 2) => x.toFixed(digits);
const PAGE_SIZES = [32_000, 65_536, 262_144, 1_000_000];

function rawRead(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let chars = 0;
    child.stdout.setEncoding('utf8').on('data', (text) => {
      chars += text.length;
    });
    child.on('error', reject);
    child.on('close', () => resolve({ chars, dropped: 0 }));
  });
}

// Reads pages of `pageChars` until `done`, waiting on the job when it caught up.
async function jobRead(rt, lease, command, pageChars) {
  const info = await rt.shell.background(lease.token, { command });
  let chars = 0;
  let dropped = 0;
  let cursor = 0;
  for (;;) {
    const page = await rt.jobs.read(lease.token, info.id, cursor, pageChars);
    chars += page.text.length;
    dropped += page.dropped;
    cursor = page.cursor;
    if (page.done) return { chars, dropped };
    if (page.text.length === 0) await rt.jobs.wait(lease.token, info.id, 5);
  }
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const load = checkLoad('before the job benchmarks');
  const bytes = quick ? 64 * 2 ** 20 : Number(process.env.TETHER_BENCH_JOB_BYTES ?? 2 ** 30);
  const runs = quick ? 3 : 5;
  const command = `head -c ${bytes} /dev/zero | tr '\\0' a`;
  // A reader that keeps up loses nothing; retention only bounds how far behind it may fall.
  const rt = await createRuntime({ spillDir: false, limits: { jobRetentionChars: 16 * 2 ** 20 } });
  const lease = rt.owners.host();
  try {
    const variants = { raw: () => rawRead(command) };
    for (const size of PAGE_SIZES) variants[size] = () => jobRead(rt, lease, command, size);
    const all = await interleaved(runs, bytes, variants);
    const size = bytes >= 2 ** 30 ? `${bytes / 2 ** 30} GiB` : `${bytes / 2 ** 20} MiB`;
    const mbps = (list) => list.map((m) => m.mbps);
    const out = PAGE_SIZES.map((page) => [
      `P2 background job ${size} read to the end, ${page}-char pages, MB/s (${runs} interleaved runs)`,
      spread(mbps(all.raw)),
      spread(mbps(all[page])),
      ratioSpread(mbps(all[page]), mbps(all.raw)),
      '≥ 0.9× raw',
      `raw = pipe read with setEncoding('utf8'); this process's CPU ms (median): raw ${median(all.raw.map((m) => m.cpuMs)).toFixed(0)}, tether ${median(all[page].map((m) => m.cpuMs)).toFixed(0)}; chars read ${median(all[page].map((m) => m.result.chars))}, dropped ${Math.max(...all[page].map((m) => m.result.dropped))}`,
    ]);
    const jobRuns = PAGE_SIZES.flatMap((page) => all[page]);
    out.push(
      [
        'P2 job RSS growth MiB (max)',
        fmt(Math.max(...all.raw.map((m) => m.rssGrowthMiB)), 1),
        fmt(Math.max(...jobRuns.map((m) => m.rssGrowthMiB)), 1),
        '',
        '≤ 64',
        '',
      ],
      [
        'P2 job event-loop p99 ms (median)',
        fmt(median(all.raw.map((m) => m.p99ms))),
        fmt(median(jobRuns.map((m) => m.p99ms))),
        '',
        '≤ 10',
        `load ${fmt(load)} before, ${fmt(checkLoad('after the job benchmarks'))} after`,
      ],
    );
    return out;
  } finally {
    await rt.dispose();
  }
}

// `node bench/jobs.js` runs this section alone (TETHER_BENCH_QUICK=1: 64 MiB).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
