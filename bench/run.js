// `npm run bench`: every benchmark side by side with its raw baseline, printed as ratios.
// Set TETHER_BENCH_QUICK=1 for a short smoke run (64 MiB flood, 50 iterations).
import { runShellBenchmarks } from './shell.js';

const quick = process.env.TETHER_BENCH_QUICK === '1';
const fmt = (x, digits = 2) => x.toFixed(digits);

const { latency, flood } = await runShellBenchmarks(
  quick ? { floodBytes: 64 * 2 ** 20, iterations: 50 } : {},
);
const gib = quick ? '64 MiB' : '1 GiB';
const rows = [
  [
    'P1 shell.run("true") median ms',
    fmt(latency.raw),
    fmt(latency.tether),
    `${fmt(latency.tether / latency.raw)}× raw`,
    '≤ 1.15× raw',
    `execa ${fmt(latency.execa)} ms`,
  ],
  [
    `P2 shell.run ${gib} MB/s`,
    fmt(flood.raw.mbps, 0),
    fmt(flood.tether.mbps, 0),
    `${fmt(flood.tether.mbps / flood.raw.mbps)}× raw`,
    '≥ 0.9× raw',
    '',
  ],
  ['P2 RSS growth MiB', fmt(flood.raw.rssGrowthMiB, 1), fmt(flood.tether.rssGrowthMiB, 1), '', '≤ 64', ''],
  ['P2 event-loop p99 ms', fmt(flood.raw.p99ms), fmt(flood.tether.p99ms), '', '≤ 10', ''],
];
console.log('| benchmark | raw | tether | ratio | goal | note |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
