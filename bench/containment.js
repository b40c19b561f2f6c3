// K1/K2: kill latency of 8 TERM-ignoring trees, cgroup vs marker, and P1 under each mode.
// Goal: every tree verified dead within grace + 100 ms. `node bench/containment.js` alone.
import { spawn } from 'node:child_process';
import { createRuntime } from '../dist/src/index.js';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const GRACE_MS = 500;
const TREES = 8;
// Ignores TERM, leaves a setsid child and a nohup child that ignore it too; prints ready.
const STUBBORN = `trap '' TERM; (setsid sh -c "trap '' TERM; sleep 300" &); nohup sh -c "trap '' TERM; sleep 300" >/dev/null 2>&1 & echo ready; sleep 300`;

function rawTrue() {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', reject);
    child.on('close', resolve);
  });
}

async function ready(rt, owner, id) {
  for (;;) {
    const page = await rt.jobs.read(owner, id, 0);
    if (page.text.includes('ready')) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Median ms from "drain this owner" to every one of 8 stubborn trees verified dead. */
async function killLatency(containment, rounds) {
  const rt = await createRuntime({ containment, limits: { cleanupGraceMs: GRACE_MS } });
  const times = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const lease = rt.owners.host();
      const jobs = [];
      for (let i = 0; i < TREES; i++)
        jobs.push(await rt.shell.background(lease.token, { command: STUBBORN }));
      await Promise.all(jobs.map((job) => ready(rt, lease.token, job.id)));
      const t0 = performance.now();
      await rt.jobs.drainOwner(lease.token);
      times.push(performance.now() - t0);
      lease.retire();
    }
    return { ms: median(times), processes: rt.stats().processes };
  } finally {
    await rt.dispose();
  }
}

/** P1 in one mode: median of `true` through the runtime and raw, interleaved. */
async function latency(containment, iterations) {
  const rt = await createRuntime({ containment });
  const raw = [];
  const tether = [];
  try {
    for (let i = 0; i < 20; i++) {
      await rawTrue();
      await rt.shell.run({ command: 'true' });
    }
    for (let i = 0; i < iterations; i++) {
      let t0 = performance.now();
      await rawTrue();
      raw.push(performance.now() - t0);
      t0 = performance.now();
      await rt.shell.run({ command: 'true' });
      tether.push(performance.now() - t0);
    }
    return { raw: median(raw), tether: median(tether) };
  } finally {
    await rt.dispose();
  }
}

const fmt = (x, digits = 2) => x.toFixed(digits);

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const probe = await createRuntime();
  const cgroup = probe.stats().containment === 'cgroup';
  await probe.dispose();
  const modes = cgroup ? ['marker', 'cgroup'] : ['marker'];
  const out = [];
  for (const mode of modes) {
    const kill = await killLatency(mode, quick ? 1 : 5);
    out.push([
      `K2 kill ${TREES} TERM-ignoring trees (setsid + nohup children), ${mode}, ms`,
      `${GRACE_MS} (grace)`,
      fmt(kill.ms, 0),
      `grace + ${fmt(kill.ms - GRACE_MS, 0)} ms`,
      `≤ grace + 100 ms`,
      `median of ${quick ? 1 : 5}; processes left: ${kill.processes}`,
    ]);
  }
  for (const mode of modes) {
    const p1 = await latency(mode, quick ? 50 : 200);
    out.push([
      `P1 shell.run("true") median ms, ${mode}`,
      fmt(p1.raw),
      fmt(p1.tether),
      `${fmt(p1.tether / p1.raw)}× raw`,
      '≤ 1.15× raw',
      mode === 'cgroup'
        ? 'children from the spawner (vfork clone3 into the tree cgroup on x86-64), mkdir + rmdir of the tree cgroup'
        : 'children from the spawner, env marker sweep',
    ]);
  }
  if (!cgroup) out.push(['K2 cgroup mode', '', 'n/a', '', '', 'no writable cgroup v2 here']);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log('| benchmark | raw | tether | ratio | goal | note |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
