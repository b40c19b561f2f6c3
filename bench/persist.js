// P9 (K6): a persisted runtime restarted under 64 jobs and 8 terminals — the time from the new
// createRuntime to all adopted, and the bytes lost; and P1 (`shell.run('true')`) with persist
// against without, as a ratio. `node bench/persist.js` runs it alone (TETHER_BENCH_QUICK=1: one
// restart, fewer iterations). Needs `npm run build`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createRuntime } from '../dist/src/index.js';
import { checkLoad, median, ratioSpread, spread } from './measure.js';

const DIST = new URL('../dist/src/index.js', import.meta.url).href;
const JOBS = 64;
const TERMINALS = 8;
const LINES = 20_000; // per job: ~110 KiB of numbered lines, then it waits
const limits = { maxJobsPerOwner: JOBS, maxTerminalsPerOwner: TERMINALS, cleanupGraceMs: 300 };

// The first runtime, in a child process: starts the jobs and terminals, reports, and is SIGKILLed.
async function firstRuntime(stateDir, name) {
  const script = `(async () => {
    const { createRuntime } = await import(${JSON.stringify(DIST)});
    const rt = await createRuntime({ stateDir: ${JSON.stringify(stateDir)}, persist: { name: ${JSON.stringify(name)} },
      limits: ${JSON.stringify(limits)} });
    const owner = rt.owners.host().token;
    const cmd = 'i=0; while [ $i -lt ${LINES} ]; do i=$((i+1)); echo $i; done; sleep 60';
    await Promise.all(Array.from({ length: ${JOBS} }, () => rt.shell.background(owner, { command: cmd })));
    for (let i = 0; i < ${TERMINALS}; i++) {
      const t = await rt.terminals.open(owner, { cols: 80, rows: 24 });
      await rt.terminals.send(owner, t.id, 'seq 1 2000; cat\\r', { timeoutMs: 5000 });
    }
    console.log('ready');
  })()`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const closed = new Promise((resolve) => child.once('close', resolve));
  await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the first runtime exited (${code}) before it was ready`)));
  });
  return { kill: () => child.kill('SIGKILL'), closed };
}

// Every job's output read from its cursor to the last line: the bytes missing from `1..LINES`.
async function lostBytes(rt, owner, jobs) {
  const expected = Array.from({ length: LINES }, (_, i) => `${i + 1}\n`).join('');
  let lost = 0;
  for (const job of jobs) {
    let text = '';
    for (let at = job.cursor; !text.endsWith(`${LINES}\n`); ) {
      const page = await rt.jobs.read(owner, job.id, at, 1_000_000);
      text += page.text;
      at = page.cursor;
      if (page.done) break;
      if (page.text === '') await new Promise((r) => setTimeout(r, 10));
    }
    lost += expected.length - text.length; // a cursor past 0 (a dropped start) counts too
    if (!expected.endsWith(text)) lost += expected.length; // not a tail of the lines: count it all
  }
  return lost;
}

/** One restart: ms from the new createRuntime to every job and terminal adopted, bytes lost. */
export async function restartOnce(n) {
  const stateDir = mkdtempSync(join(tmpdir(), 'tether-p9-'));
  const name = `p9-${n}`;
  try {
    const first = await firstRuntime(stateDir, name);
    await new Promise((r) => setTimeout(r, 1500)); // the jobs have written their lines
    first.kill();
    await first.closed;
    const t0 = performance.now();
    const rt = await createRuntime({ stateDir, persist: { name }, limits });
    const owner = rt.owners.host().token;
    const survivors = await rt.resumable();
    await Promise.all(
      survivors.map((t) => (t.kind === 'job' ? rt.jobs.adopt(owner, t.id) : rt.terminals.adopt(owner, t.id))),
    );
    const ms = performance.now() - t0;
    const jobs = survivors.filter((t) => t.kind === 'job');
    const terminals = survivors.length - jobs.length;
    if (jobs.length !== JOBS || terminals !== TERMINALS)
      throw new Error(
        `P9: ${jobs.length} jobs and ${terminals} terminals survived, not ${JOBS} and ${TERMINALS}`,
      );
    const lost = await lostBytes(rt, owner, jobs);
    await rt.dispose();
    return { ms, lost };
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** P1 with and without persist: `iterations` of shell.run('true') each, `runs` interleaved runs. */
export async function persistP1(runs, iterations) {
  const stateDir = mkdtempSync(join(tmpdir(), 'tether-p9-p1-'));
  const plain = await createRuntime({ stateDir });
  const persisted = await createRuntime({ stateDir, persist: { name: 'p1' } });
  const times = { plain: [], persisted: [] };
  try {
    for (let run = 0; run < runs; run++) {
      for (const [key, rt] of run % 2 === 0
        ? [
            ['plain', plain],
            ['persisted', persisted],
          ]
        : [
            ['persisted', persisted],
            ['plain', plain],
          ]) {
        const each = [];
        for (let i = 0; i < iterations; i++) {
          const t0 = performance.now();
          await rt.shell.run({ command: 'true' });
          each.push(performance.now() - t0);
        }
        times[key].push(median(each));
      }
    }
  } finally {
    await persisted.dispose();
    await plain.dispose();
    rmSync(stateDir, { recursive: true, force: true });
  }
  return times;
}

export async function rows(quick = false) {
  const load = checkLoad('at the start of P9');
  const restarts = [];
  for (let n = 0; n < (quick ? 1 : 5); n++) restarts.push(await restartOnce(n));
  const p1 = await persistP1(quick ? 2 : 5, quick ? 20 : 200);
  return [
    [
      'P9',
      `restart under ${JOBS} jobs + ${TERMINALS} terminals: new createRuntime to all adopted (ms)`,
      spread(restarts.map((r) => r.ms)),
      '≤ 500 ms',
    ],
    ['P9', 'bytes lost across the restart (all runs)', String(restarts.reduce((n, r) => n + r.lost, 0)), '0'],
    [
      'P9',
      "P1 shell.run('true') with persist / without (median ms each)",
      `${ratioSpread(p1.persisted, p1.plain)}; ${median(p1.persisted).toFixed(2)} vs ${median(p1.plain).toFixed(2)} ms`,
      'say it',
    ],
    ['P9', 'load average at start', load.toFixed(2), ''],
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
