// P5: 64 agents × 8 background jobs (512 `sleep 1000` process trees through the shell
// producer). The 64 agents are created first (a row of its own); then the time to start the
// 512 jobs, then the agent service's dispose (D2) to verified quiescence — stats all zero and
// no tagged process left in /proc — with the main loop's p99 delay measured in each phase. The
// raw baseline spawns and group-kills the same 512 detached `sleep`s with child_process alone
// (no owners, no registry, no verification).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAgentService } from '../dist/src/agents/agent-service.js';
import { createJobService } from '../dist/src/jobs/job-service.js';
import { createOwnerRegistry } from '../dist/src/owners/owner-registry.js';
import { shellJobSpec } from '../dist/src/shell/shell-job.js';
import { createContainment } from '../dist/src/subprocess/containment/containment.js';
import { createLocalProvider } from '../dist/src/subprocess/local-provider.js';
import { treeIdPrefix } from '../dist/src/subprocess/marker.js';
import { listTaggedProcesses } from '../dist/src/subprocess/proc.js';
import { startSpawner } from '../dist/src/subprocess/spawner/spawner.js';

const JOBS_PER_AGENT = 8;
const GRACE_MS = 2_000; // the runtime's default cleanupGraceMs (sleep dies on TERM: none is used)
const fmt = (x, digits = 2) => x.toFixed(digits);

// The runtime's composition (owners, jobs, shell producer, its containment: a cgroup of its own
// where the host offers one, K1) with the agent service beside it. TETHER_BENCH_CONTAINMENT=marker
// measures the env-marker boundary instead.
function compose() {
  const stateDir = mkdtempSync(join(tmpdir(), 'tether-bench-state-'));
  const containment = createContainment({
    request: process.env.TETHER_BENCH_CONTAINMENT ?? 'auto',
    runtimeId: `bench-${process.pid}`,
    stateDir,
  });
  const owners = createOwnerRegistry();
  const jobs = createJobService({ owners });
  const agents = createAgentService({ owners, jobs });
  const lifetime = new AbortController();
  const spawner = startSpawner(); // as createRuntime does: children start from the spawner (P1)
  const local = createLocalProvider({ spawner, containment });
  const shell = {
    provider: () => local,
    lifetime: lifetime.signal,
    spillPool: null,
    defaults: {
      shell: '/bin/bash',
      cwd: process.cwd(),
      outputCapChars: 30_000,
      cleanupGraceMs: GRACE_MS,
      drainMs: 500,
    },
  };
  return {
    containment: containment.mode,
    agents,
    jobs,
    background: (agent, command) => jobs.start(agent.owner, shellJobSpec(shell, agent.owner, { command })),
    async dispose() {
      await agents.dispose();
      lifetime.abort();
      await jobs.dispose();
      await spawner?.dispose();
      await containment.dispose();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

// Times `run` and reads the main loop's p99/max delay over it (1 ms sampling).
async function phase(run) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await sleep(20); // arm the sampler before a synchronous spawn burst blocks the loop
  const t0 = performance.now();
  const result = await run();
  const seconds = (performance.now() - t0) / 1000;
  await sleep(5); // let the sampler record the last block before reading it
  delay.disable();
  return { result, seconds, p99ms: delay.percentile(99) / 1e6, maxms: delay.max / 1e6 };
}

// Raw: spawn `count` detached sleeps, then SIGTERM each group and wait for every exit.
async function raw(count) {
  const start = await phase(() =>
    Promise.all(
      Array.from({ length: count }, () => {
        const child = spawn('/bin/bash', ['-c', 'sleep 1000'], { detached: true, stdio: 'ignore' });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        return new Promise((resolve, reject) => {
          child.once('spawn', () => resolve({ child, exited }));
          child.once('error', reject);
        });
      }),
    ),
  );
  const dispose = await phase(async () => {
    for (const { child } of start.result) process.kill(-child.pid, 'SIGTERM');
    await Promise.all(start.result.map((c) => c.exited));
  });
  return { start, dispose };
}

// Tether: create the agents, start every job as its agent, then D2 until verified quiescent.
async function tether(agentCount) {
  const rt = compose();
  // The owners exist before the burst (64 owners × 8 jobs); creating them is its own row.
  const create = await phase(async () =>
    Array.from({ length: agentCount }, (_, i) =>
      rt.agents.create({ sessionId: `bench-${i}`, onTurn: () => {} }),
    ),
  );
  const agents = create.result;
  const start = await phase(async () => {
    const jobs = agents.flatMap((agent) =>
      Array.from({ length: JOBS_PER_AGENT }, () => rt.background(agent, 'sleep 1000')),
    );
    await Promise.all(jobs);
  });
  // Counted after the phase: the /proc scan is the benchmark's check, not the runtime's work.
  start.result = listTaggedProcesses(treeIdPrefix()).length;
  const dispose = await phase(async () => {
    await rt.dispose();
    // D3 verified: nothing tagged alive (the drains already proved each tree gone), all counts zero.
    let left = listTaggedProcesses(treeIdPrefix()).length;
    while (left > 0) {
      await sleep(5);
      left = listTaggedProcesses(treeIdPrefix()).length;
    }
    return Object.values(rt.agents.stats()).every((n) => n === 0) && rt.jobs.stats().running === 0;
  });
  return { containment: rt.containment, create, start, dispose };
}

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const agentCount = quick ? 8 : 64;
  const count = agentCount * JOBS_PER_AGENT;
  const r = await raw(count);
  const t = await tether(agentCount);
  const size = `${agentCount}×${JOBS_PER_AGENT}`;
  const ratio = (a, b) => `${fmt(a / b)}× raw`;
  return [
    [
      `P5 start ${size} sleep jobs (${count} trees), s`,
      fmt(r.start.seconds),
      fmt(t.start.seconds),
      ratio(t.start.seconds, r.start.seconds),
      '≤ 5 s',
      `${t.start.result} tagged processes live; containment ${t.containment}`,
    ],
    [
      `P5 create ${agentCount} agents (their owners) before the burst, ms`,
      '—',
      fmt(t.create.seconds * 1000, 1),
      '—',
      '—',
      `loop max ${fmt(t.create.maxms, 0)} ms: one synchronous create() each`,
    ],
    [
      `P5 dispose ${size} to verified quiescence, s`,
      fmt(r.dispose.seconds),
      fmt(t.dispose.seconds),
      ratio(t.dispose.seconds, r.dispose.seconds),
      `≤ 1 s + grace (${GRACE_MS / 1000} s)`,
      t.dispose.result ? 'stats all zero, no tagged process' : 'NOT QUIESCENT',
    ],
    [
      'P5 event-loop p99 ms while starting',
      fmt(r.start.p99ms),
      fmt(t.start.p99ms),
      ratio(t.start.p99ms, r.start.p99ms),
      '—',
      `max ${fmt(r.start.maxms, 0)} / ${fmt(t.start.maxms, 0)} ms: child_process.spawn is synchronous`,
    ],
    [
      'P5 event-loop p99 ms while disposing',
      fmt(r.dispose.p99ms),
      fmt(t.dispose.p99ms),
      ratio(t.dispose.p99ms, r.dispose.p99ms),
      '—',
      `max ${fmt(r.dispose.maxms, 0)} / ${fmt(t.dispose.maxms, 0)} ms`,
    ],
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
