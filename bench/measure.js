import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { readProcText } from '../dist/src/subprocess/proc.js';

/**
 * Runs `run` once and measures it the way every flood benchmark here does: its wall time `ms`,
 * MB/s of `bytes`, peak RSS growth (sampled every 20 ms), the main event loop's p99 and max
 * delay, and the CPU time this process spent (every thread, user + system; `systemMs` the
 * kernel's part): on a loaded machine wall time swings with the scheduler, CPU time per byte
 * much less. `majorGcs` counts this thread's mark-compacts during the run (V8's full
 * collections, whose concurrent marking also takes CPU from the flood). `stealMs` is the CPU
 * time the hypervisor gave to others while a vCPU of this guest wanted it (both cores, from
 * /proc/stat): a run that lost some of it was slowed by the host, not by what it measures.
 */
export async function measureFlood(run, bytes) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let majorGcs = 0;
  const count = (entries) => {
    for (const entry of entries) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorGcs++;
  };
  const gcs = new PerformanceObserver((list) => count(list.getEntries()));
  gcs.observe({ entryTypes: ['gc'] });
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  delay.enable();
  const cpu0 = process.cpuUsage();
  const steal0 = stealMs();
  const t0 = performance.now();
  try {
    const result = await run();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    // GC entries are delivered asynchronously: let the last ones of this run arrive.
    await new Promise((resolve) => setImmediate(resolve));
    count(gcs.takeRecords());
    return {
      majorGcs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      systemMs: cpu.system / 1000,
      stealMs: stealMs() - steal0,
      result,
      ms: seconds * 1000,
      mbps: bytes / 1e6 / seconds,
      rssGrowthMiB: (peak - rss0) / 2 ** 20,
      p99ms: delay.percentile(99) / 1e6,
      maxms: delay.max / 1e6,
    };
  } finally {
    delay.disable();
    gcs.disconnect();
    clearInterval(sampler);
  }
}

/** The machine's steal time so far, in ms (0 where /proc/stat has none). */
function stealMs() {
  // cpu  user nice system idle iowait irq softirq steal …, in USER_HZ (100 per second).
  const fields = readProcText('/proc/stat')?.split('\n', 1)[0].trim().split(/\s+/) ?? [];
  return Number(fields[8] ?? 0) * 10;
}

/**
 * Runs every variant `runs` times, interleaved (raw, tether, raw, tether, …) so that drift on
 * the machine hits all of them alike; returns each variant's list of {@link measureFlood}s.
 * `settle`, when given, runs (untimed) before every run, so that each starts from the same state
 * of the machine rather than inside the previous run's aftermath. `warmup` rounds run first and
 * are not counted: a variant's first run also pays for its JIT, its first worker thread and
 * the first file its process writes, which belong to no flood after it.
 */
export async function interleaved(runs, bytes, variants, { settle = async () => {}, warmup = 0 } = {}) {
  const all = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let i = -warmup; i < runs; i++) {
    for (const [name, run] of Object.entries(variants)) {
      await settle();
      const measured = await measureFlood(run, bytes);
      if (i >= 0) all[name].push(measured);
    }
  }
  return all;
}

/**
 * Waits until the disk has taken every dirty page (`sync`) and then a moment more: a flood to a
 * file leaves writeback (and, on a filesystem mounted with `discard`, the trim of the removed
 * file) running into the next run, which slows whichever side happens to come next.
 */
export async function settleDisk(pauseMs = 200) {
  await new Promise((resolve, reject) => {
    execFile('sync', (err) => (err ? reject(err) : resolve()));
  });
  await new Promise((resolve) => setTimeout(resolve, pauseMs));
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `min–max (median m)` of `xs`, each with `digits` decimals. */
export function spread(xs, digits = 0) {
  const f = (x) => x.toFixed(digits);
  return `${f(Math.min(...xs))}–${f(Math.max(...xs))} (median ${f(median(xs))})`;
}

// max − min of `xs`.
const extent = (xs) => Math.max(...xs) - Math.min(...xs);

/** How wide `xs` is against its median, in per cent: (max − min) / median. */
export const rangePercent = (xs) => `${((extent(xs) / median(xs)) * 100).toFixed(0)} %`;

/** max − min of `xs`, with `digits` decimals. */
export const range = (xs, digits = 0) => extent(xs).toFixed(digits);

/** The ratio of medians, and the spread of the per-run ratios (run i of `a` over run i of `b`). */
export function ratioSpread(a, b) {
  const perRun = a.map((x, i) => x / b[i]);
  return `${(median(a) / median(b)).toFixed(2)}× (per run ${spread(perRun, 2)})`;
}

/** The 1-minute load average; warns on stderr when other work shares the machine (> 0.5). */
export function checkLoad(when) {
  const [one] = loadavg();
  if (one > 0.5)
    console.error(
      `warning: load average ${one.toFixed(2)} ${when}: other work shares this machine; ` +
        'its figures are not comparable (run benchmarks alone)',
    );
  return one;
}
