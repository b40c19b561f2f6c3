// P2 (job part): 1 GiB through a background job, read to the end, against a raw pipe read.
import { spawn } from 'node:child_process';
import { createRuntime } from '../dist/src/index.js';
import { measureFlood } from './measure.js';

const fmt = (x, digits = 2) => x.toFixed(digits);

function rawRead(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let chars = 0;
    child.stdout.setEncoding('utf8').on('data', (text) => {
      chars += text.length;
    });
    child.on('error', reject);
    child.on('close', () => resolve(chars));
  });
}

// Reads pages until `done`, waiting on the job between pages; returns what it saw.
async function jobRead(rt, lease, command) {
  const info = await rt.shell.background(lease.token, { command });
  let chars = 0;
  let dropped = 0;
  let cursor = 0;
  for (;;) {
    // Pages about the size of a pipe read: a page that spans many chunks costs a join.
    const page = await rt.jobs.read(lease.token, info.id, cursor, 65_536);
    chars += page.text.length;
    dropped += page.dropped;
    cursor = page.cursor;
    if (page.done) return { chars, dropped };
    if (page.text.length === 0) await rt.jobs.wait(lease.token, info.id, 5);
  }
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const bytes = quick ? 64 * 2 ** 20 : 2 ** 30;
  const command = `head -c ${bytes} /dev/zero | tr '\\0' a`;
  // A reader that keeps up loses nothing; retention only bounds how far behind it may fall.
  const rt = await createRuntime({ spillDir: false, limits: { jobRetentionChars: 16 * 2 ** 20 } });
  const lease = rt.owners.host();
  try {
    const raw = await measureFlood(() => rawRead(command), bytes);
    const job = await measureFlood(() => jobRead(rt, lease, command), bytes);
    const size = quick ? '64 MiB' : '1 GiB';
    return [
      [
        `P2 background job ${size} read to the end, MB/s`,
        fmt(raw.mbps, 0),
        fmt(job.mbps, 0),
        `${fmt(job.mbps / raw.mbps)}× raw`,
        '≥ 0.9× raw',
        `read ${job.result.chars} chars, dropped ${job.result.dropped}`,
      ],
      ['P2 job RSS growth MiB', fmt(raw.rssGrowthMiB, 1), fmt(job.rssGrowthMiB, 1), '', '≤ 64', ''],
      ['P2 job event-loop p99 ms', fmt(raw.p99ms), fmt(job.p99ms), '', '≤ 10', ''],
    ];
  } finally {
    await rt.dispose();
  }
}
