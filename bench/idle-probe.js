// bench/owners.js's floor for the loop's delay: a small Node process that does nothing but
// measure its own event loop (`monitorEventLoopDelay`, 1 ms, as proc-stats.js's window) while a
// side runs its jobs beside it. What it sees is what the machine's load alone costs a loop that
// has no work of its own: the CPU the children take, the scheduler, the VM. `start` begins a
// window; `stop` answers `{ p99ms, maxms }` of it. It exits when its parent disconnects.
import { monitorEventLoopDelay } from 'node:perf_hooks';

let delay = null;
process.on('message', (message) => {
  if (message === 'start') {
    delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
  } else if (message === 'stop' && delay !== null) {
    delay.disable();
    process.send({ p99ms: delay.percentile(99) / 1e6, maxms: delay.max / 1e6 });
    delay = null;
  }
});
process.on('disconnect', () => process.exit(0));
