// A3, A6 cost: sandboxed rt.shell.run('true') (unprivileged uid, no capabilities, seccomp) against the unsandboxed one and against raw per-call
// bubblewrap with the same namespaces, interleaved in one run so drift hits all alike.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime } from '../dist/src/index.js';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x, digits = 2) => x.toFixed(digits);

// What a per-call sandbox costs without a runtime: one bwrap with new PID and network namespaces.
function rawBwrap(cwd) {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  args.push('--bind', cwd, cwd, '--unshare-pid', '--unshare-net', '--die-with-parent', '--cap-drop', 'ALL');
  return new Promise((resolve, reject) => {
    const child = spawn('bwrap', [...args, '--', '/bin/bash', '-c', 'true'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.resume();
    child.stderr.resume();
    child.on('error', reject);
    child.on('close', resolve);
  });
}

/** Medians of `true`: unsandboxed, sandboxed (one enclave per owner, entered per call), raw bwrap. */
export async function benchSandbox(iterations = 100) {
  const ws = await mkdtemp(join(tmpdir(), 'tether-bench-sbx-'));
  const rt = await createRuntime({ cwd: ws, spillDir: false });
  try {
    const plain = rt.owners.host();
    const sealed = rt.owners.host({ sandbox: { mode: 'workspace-write' } });
    const runs = {
      unsandboxed: () => rt.shell.run({ owner: plain.token, command: 'true' }),
      sandboxed: () => rt.shell.run({ owner: sealed.token, command: 'true' }),
      bwrap: () => rawBwrap(ws),
    };
    const times = { unsandboxed: [], sandboxed: [], bwrap: [] };
    for (let i = 0; i < 10; i++) for (const run of Object.values(runs)) await run(); // warm-up, enclave start
    for (let i = 0; i < iterations; i++) {
      for (const [name, run] of Object.entries(runs)) {
        const t0 = performance.now();
        await run();
        times[name].push(performance.now() - t0);
      }
    }
    return Object.fromEntries(Object.entries(times).map(([name, xs]) => [name, median(xs)]));
  } finally {
    await rt.dispose();
    await rm(ws, { recursive: true, force: true });
  }
}

/**
 * Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. Five runs of 100
 * (one of 15 when quick), each interleaving the three shapes call by call; the row gives the
 * median run's medians and the spread of the per-run ratio.
 */
export async function rows(quick) {
  const runs = [];
  for (let i = 0; i < (quick ? 1 : 5); i++) runs.push(await benchSandbox(quick ? 15 : 100));
  const ratios = runs.map((m) => m.sandboxed / m.unsandboxed);
  const mid = runs[ratios.indexOf(median(ratios))];
  const spread = `${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}× over ${runs.length} runs`;
  return [
    [
      'A3, A6 sandboxed shell.run("true") median ms',
      fmt(mid.unsandboxed),
      fmt(mid.sandboxed),
      `${fmt(median(ratios))}× unsandboxed`,
      '≤ 1.0× unsandboxed',
      `${spread}; raw per-call bwrap ${fmt(mid.bwrap)} ms: sandboxed is ${fmt(mid.sandboxed / mid.bwrap)}× it`,
    ],
  ];
}
