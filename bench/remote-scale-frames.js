// Issue 31, "the helper protocol's frames per second on one link": through one helper link (a
// runtime on the exec provider over `/usr/bin/env`),
// - a bash loop printing `lines` short lines as fast as it can (one write each), read three
//   ways: a raw pipe (child_process, this process reading its stdout), the provider's handle
//   (each 'data' chunk is one data frame the helper sent), and a runtime job read to the end
//   (`jobs.read`, bench/drive.js): lines/s, MB/s, frames (chunks) and bytes per frame;
// - `calls` × `rt.shell.run('echo x')`, `width` in flight at a time, against the same through a
//   raw python3 line server (bench/raw-line-server.js): calls/s, and the CPU the helper (relay
//   and daemon) or the raw server spent per call.
// Interleaved runs (bench/measure.js), each with this process's CPU and the loop's delay.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime } from '../dist/src/index.js';
import { readJobToEnd } from './drive.js';
import { localExecProvider } from './local-host.js';
import { interleaved } from './measure.js';
import { childrenOf, cpuMsOf, pool } from './proc-stats.js';
import { startRawServer } from './raw-line-server.js';

// Resolves with { bytes, chunks } once `readable` ended.
function count(readable) {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let chunks = 0;
    readable.on('data', (chunk) => {
      bytes += chunk.length;
      chunks++;
    });
    readable.once('end', () => resolve({ bytes, chunks }));
    readable.once('error', reject);
  });
}

/** Both parts, `runs` interleaved runs each; resolves with each variant's measurements. */
export async function frames({ runs, lines, calls, width }) {
  const command = `for ((i=0;i<${lines};i++)); do echo "line $i"; done`;
  const bytes = Array.from({ length: lines }, (_, i) => `line ${i}\n`.length).reduce((a, b) => a + b, 0);
  const dir = mkdtempSync(join(tmpdir(), 'tether-scale-frames-'));
  const provider = localExecProvider(dir, 'frames');
  const rt = await createRuntime({
    provider,
    cwd: '/tmp',
    spillDir: false,
    limits: { jobRetentionChars: 2 * bytes, finishedJobRetentionChars: 2 * bytes },
  });
  const lease = rt.owners.host();
  const server = await startRawServer();
  const checked = (got) => {
    if (got.bytes !== bytes) throw new Error(`read ${got.bytes} bytes, want ${bytes}`);
    return got;
  };
  try {
    await rt.shell.run({ command: 'true' }); // the link opened outside the timing
    const flood = await interleaved(
      runs,
      bytes,
      {
        raw: async () => {
          const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'inherit'] });
          return checked(await count(child.stdout));
        },
        handle: async () => {
          const handle = await provider.spawn({
            argv: ['/bin/bash', '-c', command],
            cwd: '/tmp',
            cleanupGraceMs: 500,
            stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' },
          });
          const got = await count(handle.stdout);
          await handle.exited;
          return checked(got);
        },
        job: async () => ({
          bytes: checked({ bytes: await readJobToEnd(rt, lease, command) }).bytes,
          chunks: NaN,
        }),
      },
      { warmup: 1 },
    );
    // The helper's side of the calls too: the relay and daemon, or the raw server.
    const helperPids = [
      ...childrenOf(process.pid)
        .filter((p) => p.argv.some((w) => w.includes('tether-helper')))
        .map((p) => p.pid),
      Number(readFileSync(join(dir, 'helper.pid'), 'utf8')),
    ];
    const run = (call, pids) => async () => {
      const cpu0 = cpuMsOf(pids);
      const failures = await pool(calls, width, async () => {
        const r = await call();
        if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
      });
      if (Object.keys(failures).length > 0) throw new Error(`calls failed: ${JSON.stringify(failures)}`);
      return { helperCpuMs: cpuMsOf(pids) - cpu0 };
    };
    const burst = await interleaved(runs, 0, {
      raw: run(() => server.call('echo x'), [server.pid]),
      tether: run(() => rt.shell.run({ command: 'echo x' }), helperPids),
    });
    return { bytes, flood, burst };
  } finally {
    lease.retire();
    await server.close();
    await rt.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}
