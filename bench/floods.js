// Floods at once (issue 30.6): eight owners × eight background jobs each printing 20 MiB, read
// to the end by one reader per job, while eight terminals (one per owner) `execute`
// `seq 1 200000`. Measured per run: the main loop's delay (p99 and max,
// `monitorEventLoopDelay`, 1 ms resolution), the time until all 64 `shell.background` calls
// returned, peak RSS, and the bytes (every job's chars + dropped must be its 20 MiB exactly).
// Raw = the same work with nobody in between: 64 `child_process.spawn`s of the same command read
// with `setEncoding('utf8')` plus 8 node-pty terminals on this thread running `seq 1 200000`.
// A third side is a runtime made with `nice: 0` (its trees at its own priority, as before the
// default of 10), to show what the niceness buys in the same run.
// Goal: p99 ≤ 5 ms and no stall over 50 ms.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../dist/src/index.js';
import { rawPtyChars } from './drive.js';
import { checkLoad, interleaved, median, spread } from './measure.js';

const fmt = (x, digits = 1) => (x === undefined ? '—' : x.toFixed(digits));
const sp = (xs, digits) => (xs.length > 0 ? spread(xs, digits) : '—');
const OWNERS = 8;
const JOBS_PER_OWNER = 8;
const PAGE_CHARS = 65_536;
const SEQ = 'seq 1 200000';
// `seq 1 200000` prints this many bytes (6 × 9 + 90 × 2 + … digits plus a newline each).
const SEQ_BYTES = 1_288_895;

// Lines of printable ASCII (what a build or test log looks like), `bytes` in all.
const jobCommand = (bytes) => `yes 'flood line: 0123456789 abcdefghijklmnopqrstuvwxyz' | head -c ${bytes}`;

// The main thread's CPU time and its wait for a CPU so far, in ms (/proc/<pid>/schedstat, the
// leader's: ns run, ns waited on a run queue); zeros where there is none.
function mainThread() {
  try {
    const [ran, waited] = readFileSync(`/proc/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { ranMs: ran / 1e6, waitedMs: waited / 1e6 };
  } catch {
    return { ranMs: 0, waitedMs: 0 };
  }
}
const since = (t0) => {
  const t1 = mainThread();
  return { mainRanMs: t1.ranMs - t0.ranMs, mainWaitedMs: t1.waitedMs - t0.waitedMs };
};

// The loop's delay from now to the end of the run: the flood alone, once every job started.
function floodDelay() {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  return () => {
    h.disable();
    return { floodP99ms: h.percentile(99) / 1e6, floodMaxms: h.max / 1e6 };
  };
}

// Peak RSS over a run, sampled every 20 ms (measureFlood gives growth; the figure is the peak).
// TETHER_BENCH_FLOOD_TRACE=1 also prints what the peak was made of (heap, external, buffers).
function rssPeak() {
  // memoryUsage() walks the heap's spaces (about 1 ms each time here): the sampling would stall
  // the loop it measures, so only rss() is sampled and the rest read at a new peak when tracing.
  const trace = process.env.TETHER_BENCH_FLOOD_TRACE === '1';
  let peak = process.memoryUsage();
  const timer = setInterval(() => {
    const rss = process.memoryUsage.rss();
    if (rss > peak.rss) peak = trace ? process.memoryUsage() : { rss };
  }, 20);
  return () => {
    clearInterval(timer);
    if (trace) {
      const mb = (x) => (x / 1e6).toFixed(0);
      console.error(
        `peak rss ${mb(peak.rss)} MB: heap ${mb(peak.heapUsed)} of ${mb(peak.heapTotal)}, external ${mb(peak.external)}, array buffers ${mb(peak.arrayBuffers)}`,
      );
    }
    return Math.max(peak.rss, process.memoryUsage().rss) / 1e6;
  };
}

function rawJob(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let chars = 0;
    child.stdout.setEncoding('utf8').on('data', (text) => {
      chars += text.length;
    });
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', () => resolve(chars));
  });
}

// monitorEventLoopDelay records nothing of its first interval: let it fire once before the
// burst, or a synchronous start (raw's 64 spawns) would hide in that interval (as bench/agents.js).
const arm = () => new Promise((resolve) => setTimeout(resolve, 20));

async function raw(jobBytes) {
  await arm();
  const main0 = mainThread();
  const peak = rssPeak();
  const t0 = performance.now();
  const jobs = [];
  for (let i = 0; i < OWNERS * JOBS_PER_OWNER; i++) jobs.push(rawJob(jobCommand(jobBytes)));
  const startMs = performance.now() - t0; // spawn is synchronous: they are all started here
  const terms = Array.from({ length: OWNERS }, () => rawPtyChars(SEQ));
  const flood = floodDelay();
  const chars = await Promise.all(jobs);
  const termChars = await Promise.all(terms);
  return {
    ...flood(),
    ...since(main0),
    startMs,
    rssMB: peak(),
    exact: chars.every((n) => n === jobBytes),
    termOk: termChars.every((n) => n >= SEQ_BYTES), // \n becomes \r\n on a PTY
  };
}

// Reads pages until `done`, waiting on the job when it caught up; chars + dropped is every byte.
async function readJob(rt, owner, id) {
  let chars = 0;
  let dropped = 0;
  let cursor = 0;
  for (;;) {
    const page = await rt.jobs.read(owner, id, cursor, PAGE_CHARS);
    chars += page.text.length;
    dropped += page.dropped;
    cursor = page.cursor;
    if (page.done) return { chars, dropped };
    if (page.text.length === 0) await rt.jobs.wait(owner, id, 5);
  }
}

async function tether(rt, leases, terminals, jobBytes) {
  await arm();
  const main0 = mainThread();
  const peak = rssPeak();
  const t0 = performance.now();
  let startMs = 0;
  const starts = [];
  for (const lease of leases)
    for (let j = 0; j < JOBS_PER_OWNER; j++)
      starts.push(rt.shell.background(lease.token, { command: jobCommand(jobBytes) }));
  const reads = starts.map(async (started, i) => {
    const info = await started;
    return readJob(rt, leases[Math.floor(i / JOBS_PER_OWNER)].token, info.id);
  });
  let flood = () => ({ floodP99ms: 0, floodMaxms: 0 });
  void Promise.all(starts).then(() => {
    startMs = performance.now() - t0;
    flood = floodDelay();
  });
  const execs = terminals.map(({ owner, id }) =>
    rt.terminals.execute(owner, id, SEQ, { timeoutMs: 600_000 }),
  );
  const results = await Promise.all(reads);
  const termResults = await Promise.all(execs);
  return {
    ...flood(),
    ...since(main0),
    startMs,
    rssMB: peak(),
    exact: results.every((r) => r.chars + r.dropped === jobBytes),
    dropped: results.reduce((n, r) => n + r.dropped, 0),
    termOk: termResults.every((r) => r.exitCode === 0 && r.output.endsWith('\n200000\n')),
  };
}

// TETHER_BENCH_FLOOD_ONLY=tether (or raw) measures one side alone, for a profile of it; the rows
// then print the other side as empty. TETHER_BENCH_FLOOD_TRACE=1 prints every stall over 50 ms
// on stderr with its monotonic time in µs (the clock of a --cpu-prof profile's samples).
function only(variants) {
  const side = process.env.TETHER_BENCH_FLOOD_ONLY;
  const chosen = side ? { [side]: variants[side] } : variants;
  if (process.env.TETHER_BENCH_FLOOD_TRACE !== '1') return chosen;
  return Object.fromEntries(
    Object.entries(chosen).map(([name, run]) => [
      name,
      async () => {
        // The main thread's CPU time and its wait on a run queue (ns, /proc/<pid>/schedstat):
        // a stall spent waiting for a CPU is the machine's, one spent running is this thread's.
        const sched = () => readFileSync(`/proc/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
        const gcs = new PerformanceObserver((list) => {
          for (const e of list.getEntries())
            if (e.duration > 10)
              console.error(`gc ${name} kind ${e.detail?.kind} ${e.duration.toFixed(0)} ms`);
        });
        gcs.observe({ entryTypes: ['gc'] });
        let last = process.hrtime.bigint();
        let [cpu0, wait0] = sched();
        const timer = setInterval(() => {
          const now = process.hrtime.bigint();
          const [cpu, wait] = sched();
          if (now - last > 50_000_000n)
            console.error(
              `stall ${name} ${(now - last) / 1_000_000n} ms from ${last / 1000n} to ${now / 1000n} µs: ` +
                `ran ${((cpu - cpu0) / 1e6).toFixed(0)} ms, waited for a CPU ${((wait - wait0) / 1e6).toFixed(0)} ms`,
            );
          last = now;
          cpu0 = cpu;
          wait0 = wait;
        }, 1);
        try {
          return await run();
        } finally {
          clearInterval(timer);
          gcs.disconnect();
        }
      },
    ]),
  );
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const load0 = loadavg()[0];
  checkLoad('before the flood benchmarks');
  const jobBytes = quick ? 2 * 2 ** 20 : Number(process.env.TETHER_BENCH_FLOOD_BYTES ?? 20 * 2 ** 20);
  const runs = quick ? 1 : Number(process.env.TETHER_BENCH_FLOOD_RUNS ?? 5);
  // The runtime as shipped (its trees at nice 10) and one with `nice: 0` (its trees at its own
  // priority: what issue 30.6 measured), interleaved with raw in the same run.
  const rt = await createRuntime({ spillDir: false });
  const rtSame = await createRuntime({ spillDir: false, nice: 0 });
  try {
    const prepare = async (runtime) => {
      const leases = Array.from({ length: OWNERS }, () => runtime.owners.host());
      const terminals = await Promise.all(
        leases.map(async (lease) => {
          const t = await runtime.terminals.open(lease.token);
          await runtime.terminals.execute(lease.token, t.id, 'true');
          return { owner: lease.token, id: t.id };
        }),
      );
      return () => tether(runtime, leases, terminals, jobBytes);
    };
    const total = OWNERS * JOBS_PER_OWNER * jobBytes + OWNERS * SEQ_BYTES;
    const all = await interleaved(
      runs,
      total,
      only({ raw: () => raw(jobBytes), tether: await prepare(rt), nice0: await prepare(rtSame) }),
      { warmup: quick ? 0 : Number(process.env.TETHER_BENCH_FLOOD_WARMUP ?? 1) },
    );
    const load1 = loadavg()[0];
    all.raw ??= [];
    all.tether ??= [];
    all.nice0 ??= [];
    const of = (list, key) => list.map((m) => m[key]);
    const res = (list, key) => list.map((m) => m.result[key]);
    const size = `${OWNERS}×${JOBS_PER_OWNER} jobs × ${jobBytes / 2 ** 20} MiB + ${OWNERS} terminals \`${SEQ}\``;
    const loads = `load ${fmt(load0, 2)} → ${fmt(load1, 2)}`;
    return [
      [
        `Floods ${size}: loop p99 ms, per run (${runs} interleaved runs)`,
        sp(of(all.raw, 'p99ms'), 1),
        sp(of(all.tether, 'p99ms'), 1),
        '',
        'p99 ≤ 5',
        loads,
      ],
      [
        'Floods: loop max ms, per run',
        sp(of(all.raw, 'maxms'), 0),
        sp(of(all.tether, 'maxms'), 0),
        '',
        'max ≤ 50',
        `runs over 50 ms: raw ${of(all.raw, 'maxms').filter((x) => x > 50).length}, tether ${of(all.tether, 'maxms').filter((x) => x > 50).length}`,
      ],
      [
        'Floods: loop p99 / max ms once all 64 had started (the flood alone), per run',
        `${sp(res(all.raw, 'floodP99ms'), 1)} / ${sp(res(all.raw, 'floodMaxms'), 0)}`,
        `${sp(res(all.tether, 'floodP99ms'), 1)} / ${sp(res(all.tether, 'floodMaxms'), 0)}`,
        '',
        'p99 ≤ 5, max ≤ 50',
        "raw's whole-run max is its synchronous spawns; this row leaves them out on both sides",
      ],
      [
        'Floods with `nice: 0` (the trees at the runtime’s priority): loop p99 / max ms, whole run; once all 64 had started',
        '',
        `${sp(of(all.nice0, 'p99ms'), 1)} / ${sp(of(all.nice0, 'maxms'), 0)}; ${sp(res(all.nice0, 'floodP99ms'), 1)} / ${sp(res(all.nice0, 'floodMaxms'), 0)}`,
        '',
        'p99 ≤ 5, max ≤ 50',
        `start ${sp(res(all.nice0, 'startMs'), 0)} ms, wall ${sp(
          of(all.nice0, 'ms').map((x) => x / 1000),
          1,
        )} s, main thread ran / waited for a CPU ${fmt(median(res(all.nice0, 'mainRanMs')), 0)} / ${fmt(median(res(all.nice0, 'mainWaitedMs')), 0)} ms; every byte ${res(all.nice0, 'exact').every(Boolean)}`,
      ],
      [
        'Floods: start of the 64 jobs, ms',
        sp(res(all.raw, 'startMs'), 0),
        sp(res(all.tether, 'startMs'), 0),
        `${fmt(median(res(all.tether, 'startMs')) / median(res(all.raw, 'startMs')), 2)}× raw`,
        '—',
        'raw: 64 synchronous spawns; tether: until every shell.background returned',
      ],
      [
        'Floods: wall time of a run, s',
        sp(
          of(all.raw, 'ms').map((x) => x / 1000),
          1,
        ),
        sp(
          of(all.tether, 'ms').map((x) => x / 1000),
          1,
        ),
        `${fmt(median(of(all.tether, 'ms')) / median(of(all.raw, 'ms')), 2)}× raw`,
        '—',
        `CPU ms of this process (median): raw ${fmt(median(of(all.raw, 'cpuMs')), 0)}, tether ${fmt(median(of(all.tether, 'cpuMs')), 0)}; of its main thread: raw ${fmt(median(res(all.raw, 'mainRanMs')), 0)}, tether ${fmt(median(res(all.tether, 'mainRanMs')), 0)}, which waited for a CPU raw ${fmt(median(res(all.raw, 'mainWaitedMs')), 0)}, tether ${fmt(median(res(all.tether, 'mainWaitedMs')), 0)} ms`,
      ],
      [
        'Floods: peak RSS MB',
        sp(res(all.raw, 'rssMB'), 0),
        sp(res(all.tether, 'rssMB'), 0),
        '',
        '≤ 314 (issue 30)',
        `every byte: raw ${res(all.raw, 'exact').every(Boolean)}, tether ${res(all.tether, 'exact').every(Boolean)} (chars + dropped; dropped max ${fmt(Math.max(...res(all.tether, 'dropped')), 0)}); terminals ok: raw ${res(all.raw, 'termOk').every(Boolean)}, tether ${res(all.tether, 'termOk').every(Boolean)}`,
      ],
    ];
  } finally {
    await rt.dispose();
    await rtSame.dispose();
  }
}

// `node bench/floods.js` runs this section alone (TETHER_BENCH_QUICK=1: 2 MiB per job, one run).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
