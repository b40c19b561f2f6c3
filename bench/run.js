// `npm run bench`: every benchmark side by side with its raw baseline, printed as ratios with
// their spread. Run it alone on the machine: it prints the load average before and after, and
// warns when it is above 0.5 (other work slows the raw baseline more than Tether, issue 15).
// Set TETHER_BENCH_QUICK=1 for a short smoke run. Each section module exports `rows(quick)`.
import { cpus, loadavg } from 'node:os';
import { rows as agentRows } from './agents.js';
import { rows as containmentRows } from './containment.js';
import { rows as floodRows } from './floods.js';
import { rows as jobRows } from './jobs.js';
import { checkLoad } from './measure.js';
import { rows as mirrorRows } from './mirror.js';
import { rows as ptyRows } from './pty.js';
import { rows as sandboxRows } from './sandbox.js';
import { rows as shellRows } from './shell.js';
import { rows as stallRows } from './stalls.js';
import { rows as terminalRows } from './terminals.js';

const quick = process.env.TETHER_BENCH_QUICK === '1';
const sections = [
  shellRows,
  jobRows,
  ptyRows,
  stallRows,
  terminalRows,
  floodRows,
  agentRows,
  containmentRows,
  sandboxRows,
  mirrorRows,
];

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
checkLoad('at the start');
console.log(
  `Node ${process.version}, ${cpus().length} cores; load average (1/5/15 min) at the start: ${load()}`,
);
console.log('');
console.log('| benchmark | raw | tether | ratio | goal | note |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const section of sections) {
  for (const row of await section(quick)) console.log(`| ${row.join(' | ')} |`);
}
console.log('');
console.log(`load average at the end: ${load()}`);
checkLoad('at the end');
