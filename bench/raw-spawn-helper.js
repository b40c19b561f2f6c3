// bench/owners.js's raw baseline starts its jobs here: a small, long-lived Node process forked
// (with an IPC channel) before the terminals open. Why not `child_process.spawn` on the main
// thread: on Linux it forks the whole Node process (libuv uses posix_spawn only on macOS), and a
// process holding 1,000 PTYs, 2,000 fds and a worker thread took 7–11 s of blocked loop a run at
// 200 spawns/s (BENCHMARKS.md, 2026-12-04). Why not a worker thread: its fork copies the same
// big process's page tables, holding the memory map's lock the main thread's page faults wait
// for. A spawn helper is what an engineer running a thousand agents would build without Tether
// (and what Tether itself does with its C spawner): each fork copies only this small process.
// `{ id, command }` runs `bash -c command` with stdin ignored, reads stdout to its end as text
// (setEncoding('utf8'), as a job's text) and answers `{ id, text }` or `{ id, error }`. It exits
// when its parent disconnects.
import { spawn } from 'node:child_process';

process.on('message', ({ id, command }) => {
  let answered = false;
  const answer = (message) => {
    if (answered) return;
    answered = true;
    process.send({ id, ...message });
  };
  const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    text += chunk;
  });
  child.stderr.resume();
  child.on('error', (err) => answer({ error: err.message }));
  child.on('close', () => answer({ text }));
});
process.on('disconnect', () => process.exit(0));
