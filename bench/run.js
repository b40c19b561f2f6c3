// `npm run bench`: every benchmark side by side with its raw baseline, printed as ratios.
// Set TETHER_BENCH_QUICK=1 for a short smoke run. Each section module exports `rows(quick)`.
import { rows as agentRows } from './agents.js';
import { rows as containmentRows } from './containment.js';
import { rows as jobRows } from './jobs.js';
import { rows as mirrorRows } from './mirror.js';
import { rows as ptyRows } from './pty.js';
import { rows as sandboxRows } from './sandbox.js';
import { rows as shellRows } from './shell.js';
import { rows as terminalRows } from './terminals.js';

const quick = process.env.TETHER_BENCH_QUICK === '1';
const sections = [
  shellRows,
  jobRows,
  ptyRows,
  terminalRows,
  agentRows,
  containmentRows,
  sandboxRows,
  mirrorRows,
];

console.log('| benchmark | raw | tether | ratio | goal | note |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const section of sections) {
  for (const row of await section(quick)) console.log(`| ${row.join(' | ')} |`);
}
