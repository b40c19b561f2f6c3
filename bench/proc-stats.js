// What the remote-scale benchmark reads about processes: memory (smaps_rollup), CPU time and
// children from /proc, this process's RSS after full collections, a pool that runs tasks a few
// at a time, and a phase where each of n callers calls every periodMs.
import { readdirSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// `node bench/remote-scale.js` without --expose-gc: turn it on here (V8 reads the flag when the
// next context is created) rather than measure RSS with garbage in it.
const gc =
  globalThis.gc ??
  (() => {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc');
  })();

/** This process's RSS after full collections, once it stops falling (at most 5 rounds). */
export async function collectedRss() {
  let rss = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    gc();
    await sleep(100);
    const now = process.memoryUsage.rss();
    if (now >= rss * 0.995) return now;
    rss = now;
  }
  return rss;
}

/** The main isolate's heap in use + external memory, bytes (read after {@link collectedRss}). */
export function heapNow() {
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

// /proc/PID/stat's fields after the command name: state, ppid, …, utime (index 11), stime (12).
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Every process whose parent is `ppid`, with its argv. */
export function childrenOf(ppid) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(statFields(name)[1]) !== ppid) continue;
      found.push({ pid: Number(name), argv: readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0') });
    } catch {} // gone
  }
  return found;
}

/** How many of `pids` live, and their Rss and Pss summed, bytes (Pss splits shared pages). */
export function memoryOf(pids) {
  let count = 0;
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
      rss += Number(/^Rss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+)/m.exec(text)?.[1] ?? 0) * 1024;
      count++;
    } catch {} // gone, or a zombie without maps
  }
  return { count, rss, pss };
}

/** CPU time (user + system) `pids` have used so far, ms (USER_HZ 100); the gone count 0. */
export function cpuMsOf(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = statFields(pid);
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {}
  }
  return ticks * 10;
}

/** Which of `pids` still run (a zombie counts as gone). */
export function living(pids) {
  return pids.filter((pid) => {
    try {
      return statFields(pid)[0] !== 'Z';
    } catch {
      return false;
    }
  });
}

/** Open fds of `pid` (this process by default). */
export function fdCount(pid = 'self') {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/**
 * Runs `task(i)` for i in 0..count−1, at most `width` at a time; resolves with the failures by
 * error code (a task's rejection is counted, never thrown).
 */
export async function pool(count, width, task) {
  const failures = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await task(i).catch((err) => {
        const code = err?.code ?? err?.message ?? String(err);
        failures[code] = (failures[code] ?? 0) + 1;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, worker));
  return failures;
}

/**
 * Over `seconds`: the main loop's delay (p99, max), this process's CPU, and the CPU of `pids`
 * (other processes: the helpers). Each of `callers` (0 for an idle window) calls `call(i)`
 * every `periodMs`, caller i first at i × periodMs / callers; the latency of each and the
 * failures by code. The window ends when the last call in flight settled.
 */
export async function window(seconds, { callers = 0, periodMs = 5_000, call, pids = [] } = {}) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await sleep(20); // monitorEventLoopDelay records nothing of its first interval
  const cpu0 = process.cpuUsage();
  const helperCpu0 = cpuMsOf(pids);
  const latencies = [];
  const failures = {};
  const pending = new Set();
  const timers = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const tick = (i) => {
    if (performance.now() >= end) return;
    timers[i] = setTimeout(() => tick(i), periodMs);
    const started = performance.now();
    const done = call(i).then(
      () => latencies.push(performance.now() - started),
      (err) => {
        const code = err?.code ?? err?.message ?? String(err);
        failures[code] = (failures[code] ?? 0) + 1;
      },
    );
    pending.add(done);
    void done.then(() => pending.delete(done));
  };
  for (let i = 0; i < callers; i++) timers[i] = setTimeout(() => tick(i), (i * periodMs) / callers);
  await sleep(seconds * 1000);
  for (const timer of timers) clearTimeout(timer);
  await Promise.all(pending);
  const wallMs = performance.now() - t0;
  delay.disable();
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  return {
    wallMs,
    p99ms: delay.percentile(99) / 1e6,
    maxms: delay.max / 1e6,
    cpuMs: (cpu.user + cpu.system) / 1000,
    helperCpuMs: cpuMsOf(pids) - helperCpu0,
    calls: latencies.length,
    failed: Object.values(failures).reduce((n, x) => n + x, 0),
    failures,
    latencyP50: latencies[Math.floor(latencies.length / 2)] ?? Number.NaN,
    latencyP99: latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN,
  };
}
