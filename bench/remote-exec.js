// PR2 (X5), each against a raw `podman exec` baseline on the same container in the same run:
// `rt.shell.run('true')` through the podman exec provider (one standing helper) vs a raw
// `podman exec C true` per call, and a 64 MiB job read to the end through the helper vs
// `podman exec C cat FILE` read from its stdout pipe. 5 interleaved runs, min/median/max, the
// 1-min load average after each run. `node bench/remote-exec.js` (after `npm run build`; needs
// podman and runc; builds the host-files image of test/support/ once). TETHER_BENCH_QUICK=1 for
// a short run. The container is removed at the end.
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { createContainerProvider, createRuntime } from '../dist/src/index.js';
import { removeContainer, startContainer } from '../test/support/container-image.js';
import { readJobToEnd, timed } from './drive.js';

const quick = process.env.TETHER_BENCH_QUICK === '1';
const RUNS = 5;
const CALLS = quick ? 10 : 50;
const MIB = 64;
const BYTES = MIB * 2 ** 20;
const FILE = '/tmp/flood';

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const spread = (xs, digits) =>
  `${sorted(xs)[0].toFixed(digits)} / ${median(xs).toFixed(digits)} / ${sorted(xs).at(-1).toFixed(digits)}`;

// One `podman exec`, its stdout read to the end: the raw cost of a command in the container.
function rawExec(container, argv) {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', ['exec', container, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] });
    let bytes = 0;
    child.stdout.on('data', (chunk) => {
      bytes += chunk.length;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(bytes) : reject(new Error(`podman exec: exit ${code}`)),
    );
  });
}

const container = await startContainer();
let rt = null;
try {
  const provider = createContainerProvider({ engine: 'podman', container });
  rt = await createRuntime({
    provider,
    cwd: '/tmp',
    spillDir: false,
    limits: { jobRetentionChars: 16 * 2 ** 20 },
  });
  const lease = rt.owners.host();
  // The helper uploaded and the file written outside the timing.
  await rt.shell.run({ command: `head -c ${BYTES} /dev/zero | tr '\\0' a > ${FILE}` });
  await rawExec(container, ['true']);
  const load = [];
  const calls = { raw: [], tether: [] };
  const flood = { raw: [], tether: [] };
  for (let run = 0; run < RUNS; run++) {
    const raw = await timed(async () => {
      for (let i = 0; i < CALLS; i++) await rawExec(container, ['true']);
    });
    const tether = await timed(async () => {
      for (let i = 0; i < CALLS; i++) await rt.shell.run({ command: 'true' });
    });
    calls.raw.push(raw.ms / CALLS);
    calls.tether.push(tether.ms / CALLS);
    const rawFlood = await timed(() => rawExec(container, ['cat', FILE]));
    const jobFlood = await timed(() => readJobToEnd(rt, lease, `cat ${FILE}`));
    if (rawFlood.result !== BYTES || jobFlood.result !== BYTES) {
      throw new Error(`flood sizes: raw ${rawFlood.result}, job ${jobFlood.result}, want ${BYTES}`);
    }
    flood.raw.push(BYTES / 1e6 / (rawFlood.ms / 1000));
    flood.tether.push(BYTES / 1e6 / (jobFlood.ms / 1000));
    load.push(loadavg()[0]);
    console.error(
      `run ${run + 1}: load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  }
  lease.retire();
  const ratios = (a, b) => a.map((x, i) => x / b[i]);
  console.log(
    '| benchmark | raw min / median / max | tether min / median / max | ratio (per run) min / median / max | goal |',
  );
  console.log('| --- | --- | --- | --- | --- |');
  console.log(
    `| PR2 podman shell.run("true") vs podman exec C true, ms | ${spread(calls.raw, 1)} | ${spread(calls.tether, 1)} | ${spread(ratios(calls.tether, calls.raw), 2)}× | ≤ 0.3× raw |`,
  );
  console.log(
    `| PR2 podman job ${MIB} MiB read to the end vs podman exec C cat, MB/s | ${spread(flood.raw, 0)} | ${spread(flood.tether, 0)} | ${spread(ratios(flood.tether, flood.raw), 2)}× | ≥ 0.8× raw |`,
  );
  console.log(
    `\n${RUNS} interleaved runs, ${CALLS} calls each; 1-min load average after each run: ${load.map((l) => l.toFixed(2)).join(', ')}`,
  );
} finally {
  await rt?.dispose();
  removeContainer(container);
}
