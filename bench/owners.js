// P8 (issue 31): one machine, 1,000 owners (`rt.owners.host()`), each with an idle terminal and
// a background job (`echo tick`, read to its end) every 5 s for 60 s, the owners' first jobs
// spread evenly over the first 5 s (200 jobs/s in all). Measured per run:
// - host RSS per idle terminal: the process's RSS once the first terminal is idle (the runtime's
//   fixed cost: its PTY worker, spawner, spill worker) and once all are, / (owners − 1), after a
//   GC; the main isolate's heap + external part of it (the rest is the PTY worker thread's heap,
//   node-pty's native state and malloc: threads share one RSS, so that part is not split further);
// - the children (every descendant of this process, from /proc): count, Rss and Pss summed;
// - the main loop's p99 and max delay over the jobs phase (`monitorEventLoopDelay`, 1 ms), and
//   the floor: the same of an idle Node process beside it (bench/idle-probe.js), what the load
//   alone costs a loop with no work of its own;
// - jobs started, read to the end, failed (by error code), their latency (start to last byte);
// - after dispose and a GC: RSS against the RSS before the runtime was created (goal within
//   10 %), every counter of `rt.stats()` (goal: all zero), descendants left.
// Raw = the same work with nobody in between, in the same run: the same shells on raw node-pty
// terminals held by a worker thread (bench/raw-pty-worker.js; the main thread only schedules,
// as Tether's main thread does), and the same job started by `child_process.spawn` in a small
// spawn-helper process and read with setEncoding('utf8') (bench/raw-spawn-helper.js says why
// not on the main thread: the fork of this big process stalled the loop for seconds).
// First one warm-up run of each side (the same owners, a 5 s jobs phase), not in the figures
// but for its RSS after dispose: a process's first runtime leaves compiled code, lazily loaded
// modules and a grown V8 heap behind that later runs reuse (2026-12-05: heap snapshots after
// the 1st and 3rd dispose differ by compiled code only; no owner, terminal or job retained).
// Then runs are interleaved (raw, tether, …): TETHER_BENCH_RUNS (default 5), TETHER_BENCH_OWNERS
// (1,000), TETHER_BENCH_OWNERS_SECONDS (60; shorter only for smoke runs); TETHER_BENCH_QUICK=1
// is 50 owners × 10 s, one run. Run it as `node --expose-gc bench/owners.js` (without the flag
// it turns V8's gc on at run time). A full run (warm-up + 5 × 2 sides) takes about 15 minutes.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRuntime } from '../dist/src/index.js';
import { readJobToEnd, timed } from './drive.js';
import { checkLoad, median, spread } from './measure.js';
import { collectedRss, heapNow, window } from './proc-stats.js';

const PERIOD_MS = 5_000;
const JOB = 'echo tick';
const fmt = (x, digits = 1) => (x === undefined || Number.isNaN(x) ? '—' : x.toFixed(digits));
const sp = (xs, digits) => (xs.length > 0 ? spread(xs, digits) : '—');
const ratio = (a, b) => `${fmt(median(a) / median(b), 2)}× raw`;

// Every descendant of this process (/proc ppid links) but `skip` (the idle probe): how many, and
// their Rss and Pss summed (smaps_rollup, kB → bytes). Pss shares bash's text and libc among the
// shells that map them.
function descendants(skip = null) {
  const parent = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(name), ppid);
    } catch {} // gone
  }
  const mine = (pid) => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p))
      if (p === process.pid) return true;
    return false;
  };
  let count = 0;
  let rss = 0;
  let pss = 0;
  for (const pid of parent.keys()) {
    if (pid === skip || !mine(pid)) continue;
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      count++;
    } catch {} // gone, or a zombie without maps
  }
  return { count, rss, pss };
}

// RSS after a dispose, polled every second (up to 30 s) until it is back within 10 % of `rss0`:
// V8 gives the heap's free pages back only when its memory reducer runs, a few seconds after
// the allocation rate fell (gc() collects but keeps the grown heap committed). Returns the last
// RSS, how long it took and the main isolate's committed heap then.
async function rssBack(rss0) {
  const t0 = performance.now();
  let rss = await collectedRss();
  while (rss > rss0 * 1.1 && performance.now() - t0 < 30_000) {
    await sleep(1_000);
    rss = await collectedRss();
  }
  return { rssAfter: rss, backMs: performance.now() - t0, heapTotal: process.memoryUsage().heapTotal };
}

// What the machine's limits were while the terminals were open: PTYs in use against
// /proc/sys/kernel/pty/max, this process's open fds against its soft RLIMIT_NOFILE.
function limitsNow() {
  const read = (path) => readFileSync(path, 'utf8').trim();
  const nofile = /^Max open files\s+(\S+)/m.exec(read('/proc/self/limits'))?.[1];
  return {
    ptys: Number(read('/proc/sys/kernel/pty/nr')),
    ptyMax: Number(read('/proc/sys/kernel/pty/max')),
    fds: readdirSync('/proc/self/fd').length,
    nofile,
  };
}

// Every owner's job every PERIOD_MS for `seconds`, owner i's first at i × PERIOD_MS / owners;
// `startJob(i)` resolves when that job was read to its end. The loop's delay is sampled over
// the whole phase (until the last job ended): proc-stats.js's window, as the remote-scale bench.
async function jobPhase(owners, seconds, startJob) {
  const w = await window(seconds, { callers: owners, periodMs: PERIOD_MS, call: startJob });
  return {
    p99ms: w.p99ms,
    maxms: w.maxms,
    done: w.calls,
    failed: w.failed,
    failures: w.failures,
    jobsPerS: (w.calls + w.failed) / (w.wallMs / 1000),
    latencyP50: w.latencyP50,
    latencyP99: w.latencyP99,
  };
}

// What is not zero in `rt.stats()` once disposed: every number and boolean, except the
// configuration it also reports (containment, the sandbox's mode and uid).
function nonZeroCounters(stats) {
  const left = [];
  const walk = (value, path) => {
    if (typeof value === 'number' || typeof value === 'boolean') {
      if (value !== 0 && value !== false) left.push(`${path}=${value}`);
    } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key);
    }
  };
  const { containment, sandbox, ...counters } = stats;
  walk({ ...counters, sandbox: { enclaves: sandbox?.enclaves ?? 0 } }, '');
  return left;
}

// The raw side's spawn helper (bench/raw-spawn-helper.js), ready: `job()` resolves once a job's
// stdout was read to its end and was `tick`; `close()` ends the helper.
async function spawnHelper() {
  const helper = fork(new URL('./raw-spawn-helper.js', import.meta.url), [], {
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise((resolve, reject) => helper.once('spawn', resolve).once('error', reject));
  const waiting = new Map();
  let next = 0;
  helper.on('message', ({ id, text, error }) => {
    const job = waiting.get(id);
    waiting.delete(id);
    if (error !== undefined) job?.reject(new Error(error));
    else if (text !== 'tick\n') job?.reject(new Error('raw job output'));
    else job?.resolve();
  });
  const exited = new Promise((resolve) => helper.once('exit', resolve));
  return {
    job: () =>
      new Promise((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        helper.send({ id, command: JOB });
      }),
    async close() {
      helper.disconnect();
      await exited;
    },
  };
}

// The idle probe (bench/idle-probe.js), forked before a side starts (a fork of this process once
// it holds 1,000 PTYs would stall its loop): `around(work)` is `work()` with the probe measuring
// its own loop meanwhile, `{ result, floor: { p99ms, maxms } }`; `close()` ends it.
async function idleProbe() {
  const probe = fork(new URL('./idle-probe.js', import.meta.url), [], {
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise((resolve, reject) => probe.once('spawn', resolve).once('error', reject));
  const exited = new Promise((resolve) => probe.once('exit', resolve));
  return {
    pid: probe.pid,
    async around(work) {
      probe.send('start');
      const result = await work();
      const floor = new Promise((resolve) => probe.once('message', resolve));
      probe.send('stop');
      return { result, floor: await floor };
    },
    async close() {
      probe.disconnect();
      await exited;
    },
  };
}

// What both sides measure the same way around a side's own work: RSS before it starts, once its
// first terminal is idle, once all are (1 s after the last opened), after the jobs phase and
// after its dispose; descendants and limits at idle; the heap before and after; the idle probe's
// loop delay over the jobs phase (the floor, not counted in descendants). `start()` makes
// the side: { open(count), job(i), dispose(), mainHeap?, perTerminal(...), atIdle?(), atEnd() }.
async function measured(owners, seconds, start) {
  const rss0 = await collectedRss();
  const heap0 = heapNow();
  const heapTotal0 = process.memoryUsage().heapTotal;
  const probe = await idleProbe();
  const side = await start();
  const first = await side.open(1);
  const rssOne = await collectedRss();
  const heapOne = side.mainHeap ? process.memoryUsage() : null;
  const opened = await timed(() => side.open(owners - 1));
  await sleep(1_000);
  const rssIdle = await collectedRss();
  const heapIdle = side.mainHeap ? process.memoryUsage() : null;
  const idle = (await side.atIdle?.()) ?? {};
  const children = descendants(probe.pid);
  const limits = limitsNow();
  const { result: jobs, floor } = await probe.around(() => jobPhase(owners, seconds, side.job));
  await probe.close();
  const rssJobs = await collectedRss();
  const disposed = await timed(() => side.dispose());
  const { rssAfter, backMs, heapTotal } = await rssBack(rss0);
  return {
    backMs,
    heapTotal0,
    heapTotal,
    rss0,
    rssOne,
    rssIdle,
    rssJobs,
    rssAfter,
    openMs: opened.ms,
    children,
    limits,
    jobs,
    floor,
    disposeMs: disposed.ms,
    ...side.perTerminal({ first, rest: opened.result, heapOne, heapIdle }),
    heap0,
    heapAfter: heapNow(),
    ...idle,
    left: descendants().count,
    ...side.atEnd(),
  };
}

// Raw: the terminals on a worker thread of raw node-pty (opened 1, then owners − 1), the jobs
// through a spawn helper.
function raw(owners, seconds) {
  return measured(owners, seconds, async () => {
    const jobs = await spawnHelper();
    const worker = new Worker(new URL('./raw-pty-worker.js', import.meta.url), {
      workerData: { cwd: process.cwd() },
    });
    const reply = (type) =>
      new Promise((resolve, reject) => {
        const on = (message) => {
          if (message.type !== type) return;
          worker.off('message', on);
          resolve(message);
        };
        worker.on('message', on);
        worker.once('error', reject);
      });
    return {
      open(count) {
        const idle = reply('idle');
        worker.postMessage({ type: 'open', count });
        return idle;
      },
      job: () => jobs.job(),
      async dispose() {
        const closed = reply('closed');
        worker.postMessage({ type: 'close' });
        await closed;
        await worker.terminate();
        await jobs.close();
      },
      perTerminal: ({ first, rest }) => ({
        mainHeapPerTerminal: 0,
        workerHeapPerTerminal:
          (rest.heapUsed + rest.external - first.heapUsed - first.external) / (owners - 1),
      }),
      atEnd: () => ({ openFailures: {}, counters: [] }),
    };
  });
}

// Until terminal `id` printed something (its prompt), looking again after 10, 20, … 200 ms.
async function firstOutput(rt, owner, id) {
  for (let ms = 10; (await rt.terminals.read(owner, id, 0)).text.length === 0; ms = Math.min(200, ms * 2))
    await sleep(ms);
}

// Tether: a runtime with its defaults; each owner a host lease with one terminal (opened 1, then
// owners − 1, all at once) and its jobs through shell.background, read to the end (bench/drive.js).
function tether(owners, seconds) {
  return measured(owners, seconds, async () => {
    const rt = await createRuntime();
    const leases = Array.from({ length: owners }, () => rt.owners.host());
    const openFailures = {};
    // Idle as the raw side counts it: open, and the shell printed its prompt (open resolves once
    // the PTY's leader exists, before the shell has entered its cgroup and started).
    const openOne = (lease) =>
      rt.terminals
        .open(lease.token)
        .then((t) => firstOutput(rt, lease.token, t.id))
        .catch((err) => {
          openFailures[err.code ?? err.message] = (openFailures[err.code ?? err.message] ?? 0) + 1;
        });
    let opened = 0;
    return {
      open(count) {
        const some = leases.slice(opened, opened + count);
        opened += count;
        return Promise.all(some.map(openOne));
      },
      job: (i) => readJobToEnd(rt, leases[i], JOB),
      dispose: () => rt.dispose(),
      mainHeap: true,
      perTerminal: ({ heapOne, heapIdle }) => ({
        mainHeapPerTerminal:
          (heapIdle.heapUsed + heapIdle.external - heapOne.heapUsed - heapOne.external) / (owners - 1),
        workerHeapPerTerminal: Number.NaN,
      }),
      async atIdle() {
        const idle = (await Promise.all(leases.map((l) => rt.terminals.list(l.token)))).flat();
        return { notIdle: idle.filter((t) => t.state !== 'idle').length, terminals: idle.length };
      },
      atEnd: () => ({ openFailures, counters: nonZeroCounters(rt.stats()), stats: rt.stats() }),
    };
  });
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const load0 = loadavg()[0];
  checkLoad('before the owners benchmark');
  const env = (name, full, small) => Number(process.env[name] ?? (quick ? small : full));
  const owners = env('TETHER_BENCH_OWNERS', 1_000, 50);
  const seconds = env('TETHER_BENCH_OWNERS_SECONDS', 60, 10);
  const runs = env('TETHER_BENCH_RUNS', 5, 1);
  // Not in the figures but for its RSS after dispose (see the top of this file).
  const warm = {
    raw: await raw(owners, Math.min(5, seconds)),
    tether: await tether(owners, Math.min(5, seconds)),
  };
  const all = { raw: [], tether: [] };
  for (let i = 0; i < runs; i++) {
    all.raw.push(await raw(owners, seconds));
    all.tether.push(await tether(owners, seconds));
  }
  const load1 = loadavg()[0];
  const of = (side, f) => all[side].map(f);
  const both = (f, digits) => [sp(of('raw', f), digits), sp(of('tether', f), digits)];
  const withRatio = (f, digits) => [...both(f, digits), ratio(of('tether', f), of('raw', f))];
  const kb = (x) => x / 1024;
  const growth = (m) => ((m.rssAfter - m.rss0) / m.rss0) * 100;
  const mb = (x) => x / 2 ** 20;
  const perTerminal = (m) => kb((m.rssIdle - m.rssOne) / (owners - 1));
  const size = `${owners} owners × (1 idle terminal + \`${JOB}\` every ${PERIOD_MS / 1000} s for ${seconds} s)`;
  const t = all.tether;
  const last = t.at(-1);
  const failures = (side) =>
    JSON.stringify(
      all[side].reduce((acc, m) => {
        for (const [code, n] of Object.entries({ ...m.openFailures, ...m.jobs.failures }))
          acc[code] = (acc[code] ?? 0) + n;
        return acc;
      }, {}),
    );
  return [
    [
      `P8 ${size}: open ${owners - 1} terminals at once to idle (each printed its prompt), s (${runs} interleaved runs)`,
      ...withRatio((m) => m.openMs / 1000, 2),
      '—',
      `load ${fmt(load0, 2)} → ${fmt(load1, 2)}; tether terminals idle ${t.map((m) => m.terminals - m.notIdle).join(', ')} of ${owners}; raw terminals on a worker thread, raw jobs by a spawn helper process`,
    ],
    [
      'P8 host RSS per idle terminal, KiB ((all idle − first idle) / (owners − 1), after GC)',
      ...withRatio(perTerminal, 0),
      '—',
      `tether main isolate heap + external per terminal ${sp(
        t.map((m) => kb(m.mainHeapPerTerminal)),
        1,
      )} KiB (the rest: PTY worker heap, node-pty, malloc); raw worker heap ${sp(
        of('raw', (m) => kb(m.workerHeapPerTerminal)),
        1,
      )} KiB; fixed cost (first terminal idle − before start) raw ${sp(
        of('raw', (m) => mb(m.rssOne - m.rss0)),
        0,
      )}, tether ${sp(
        t.map((m) => mb(m.rssOne - m.rss0)),
        0,
      )} MiB`,
    ],
    [
      'P8 children per idle terminal (all descendants at idle): Pss KiB / Rss KiB',
      `${sp(
        of('raw', (m) => kb(m.children.pss / owners)),
        0,
      )} / ${sp(
        of('raw', (m) => kb(m.children.rss / owners)),
        0,
      )}`,
      `${sp(
        t.map((m) => kb(m.children.pss / owners)),
        0,
      )} / ${sp(
        t.map((m) => kb(m.children.rss / owners)),
        0,
      )}`,
      ratio(
        t.map((m) => m.children.pss),
        of('raw', (m) => m.children.pss),
      ),
      '—',
      `descendants raw ${of('raw', (m) => m.children.count).join(', ')}, tether ${t.map((m) => m.children.count).join(', ')} (each side's spawn helper included: raw a Node process, tether its C spawner); PTYs in use ${last.limits.ptys} of ${last.limits.ptyMax}, fds ${last.limits.fds} of ${last.limits.nofile}`,
    ],
    [
      `P8 loop p99 ms over the jobs phase (${seconds} s)`,
      ...withRatio((m) => m.jobs.p99ms, 1),
      'p99 ≤ 5',
      `the floor: an idle Node process beside the side (bench/idle-probe.js), its own loop over the same window: p99 raw side ${sp(
        of('raw', (m) => m.floor.p99ms),
        1,
      )}, tether side ${sp(
        t.map((m) => m.floor.p99ms),
        1,
      )} ms`,
    ],
    ['P8 loop max ms over the jobs phase', ...withRatio((m) => m.jobs.maxms, 0), '—', ''],
    [
      'P8 jobs read to the end (failed) per run; jobs/s',
      `${of('raw', (m) => `${m.jobs.done} (${m.jobs.failed})`).join(', ')}; ${sp(
        of('raw', (m) => m.jobs.jobsPerS),
        0,
      )}`,
      `${t.map((m) => `${m.jobs.done} (${m.jobs.failed})`).join(', ')}; ${sp(
        t.map((m) => m.jobs.jobsPerS),
        0,
      )}`,
      '',
      `${(owners * seconds * 1000) / PERIOD_MS} each`,
      `failures raw ${failures('raw')}, tether ${failures('tether')}`,
    ],
    [
      'P8 job latency (start to last byte read) p50 / p99 ms',
      `${sp(
        of('raw', (m) => m.jobs.latencyP50),
        1,
      )} / ${sp(
        of('raw', (m) => m.jobs.latencyP99),
        1,
      )}`,
      `${sp(
        t.map((m) => m.jobs.latencyP50),
        1,
      )} / ${sp(
        t.map((m) => m.jobs.latencyP99),
        1,
      )}`,
      ratio(
        t.map((m) => m.jobs.latencyP50),
        of('raw', (m) => m.jobs.latencyP50),
      ),
      '—',
      'p50 ratio',
    ],
    [
      'P8 RSS growth over the jobs phase per finished job, bytes (finished jobs stay queryable until their owner ends)',
      ...withRatio((m) => (m.rssJobs - m.rssIdle) / Math.max(1, m.jobs.done), 0),
      '—',
      '',
    ],
    [
      'P8 dispose (all terminals and jobs) to quiescence, s',
      ...withRatio((m) => m.disposeMs / 1000, 2),
      '—',
      `descendants left after: raw ${of('raw', (m) => m.left).join(', ')}, tether ${t.map((m) => m.left).join(', ')}`,
    ],
    [
      'P8 RSS after dispose against before start (after GC), % (after a warm-up run of each side)',
      ...both(growth, 1),
      '',
      'within 10 %',
      `warm-up run (the process's first, not in the figures): raw ${fmt(growth(warm.raw), 1)} %, tether ${fmt(growth(warm.tether), 1)} %; RSS before each run MiB raw ${of('raw', (m) => fmt(mb(m.rss0), 0)).join(', ')}, tether ${t.map((m) => fmt(mb(m.rss0), 0)).join(', ')}; after dispose, back within 10 % after raw ${sp(
        of('raw', (m) => m.backMs / 1000),
        1,
      )}, tether ${sp(
        t.map((m) => m.backMs / 1000),
        1,
      )} s (polled each second up to 30 s: V8 returns free heap pages when its memory reducer runs); main heap committed MiB before → after, tether ${t.map((m) => `${fmt(mb(m.heapTotal0), 0)} → ${fmt(mb(m.heapTotal), 0)}`).join(', ')}; MiB before → after, tether: ${t.map((m) => `${fmt(mb(m.rss0), 0)} → ${fmt(mb(m.rssAfter), 0)}`).join(', ')}; main heap + external MiB before → after: raw ${of('raw', (m) => `${fmt(mb(m.heap0), 1)} → ${fmt(mb(m.heapAfter), 1)}`).join(', ')}, tether ${t.map((m) => `${fmt(mb(m.heap0), 1)} → ${fmt(mb(m.heapAfter), 1)}`).join(', ')}`,
    ],
    [
      'P8 `rt.stats()` after dispose: counters not zero',
      '',
      t.map((m) => (m.counters.length === 0 ? 'none' : m.counters.join(' '))).join('; '),
      '',
      'all zero',
      `last: ${JSON.stringify({ ...last.stats, sandbox: undefined, agents: undefined })}`,
    ],
  ];
}

// `node --expose-gc bench/owners.js` runs this section alone (TETHER_BENCH_QUICK=1: 50 owners × 10 s).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
