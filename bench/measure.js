import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Runs `run` once and measures it the way every flood benchmark here does: MB/s of `bytes`,
 * peak RSS growth (sampled every 20 ms) and the main event loop's p99 delay.
 */
export async function measureFlood(run, bytes) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  delay.enable();
  const t0 = performance.now();
  try {
    const result = await run();
    const seconds = (performance.now() - t0) / 1000;
    return {
      result,
      mbps: bytes / 1e6 / seconds,
      rssGrowthMiB: (peak - rss0) / 2 ** 20,
      p99ms: delay.percentile(99) / 1e6,
    };
  } finally {
    delay.disable();
    clearInterval(sampler);
  }
}
