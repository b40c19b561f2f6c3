// Terminal floods through `execute` (issue 15): the main loop's delay while a command prints
// one huge line, 76-column lines, `\r` progress bars or ANSI colour, measured with
// `monitorEventLoopDelay` (1 ms resolution). Raw = node-pty on the main thread, printing the
// same bytes with nobody parsing them. Goal: no stall over 50 ms, p99 ≤ 5 ms, any line shape.
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../dist/src/index.js';
import { rawPtyChars } from './drive.js';
import { checkLoad, interleaved, median, spread } from './measure.js';

const fmt = (x, digits = 1) => x.toFixed(digits);

// Each shape prints about `bytes` bytes; python3 writes them in 1 MiB pieces.
const SHAPES = {
  'one line (base64, no newline)': (bytes) =>
    `head -c ${Math.floor((bytes * 3) / 4)} /dev/urandom | base64 -w 0`,
  '76-column lines': (bytes) => `head -c ${Math.floor((bytes * 3) / 4)} /dev/urandom | base64 -w 76`,
  '\\r progress bar': (bytes) =>
    `python3 -c "import sys
line = ''.join('\\r[%-60s] %3d%%' % ('#' * (i % 61), i % 101) for i in range(4096))
n = ${bytes} // len(line)
for _ in range(n): sys.stdout.write(line)
sys.stdout.write('\\n')"`,
  'ANSI colour flood': (bytes) =>
    `python3 -c "import sys
line = ''.join('\\x1b[%dm%s\\x1b[0m ' % (31 + i % 7, 'word%d' % i) for i in range(8192)) + '\\n'
n = ${bytes} // len(line)
for _ in range(n): sys.stdout.write(line)"`,
};

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const load = checkLoad('before the terminal stall benchmarks');
  const bytes = quick ? 16 * 2 ** 20 : Number(process.env.TETHER_BENCH_STALL_BYTES ?? 192 * 2 ** 20);
  const runs = quick ? 1 : 3;
  const rt = await createRuntime({ spillDir: false });
  const owner = rt.owners.host().token;
  try {
    const terminal = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, terminal.id, 'true');
    const out = [];
    for (const [shape, command] of Object.entries(SHAPES)) {
      const cmd = command(bytes);
      const all = await interleaved(runs, bytes, {
        raw: () => rawPtyChars(cmd),
        tether: async () => {
          const r = await rt.terminals.execute(owner, terminal.id, cmd, { timeoutMs: 600_000 });
          return { exitCode: r.exitCode, chars: r.output.length };
        },
      });
      const ms = (list, key) => list.map((m) => m[key]);
      out.push([
        `T7 execute, ${bytes / 2 ** 20} MiB as ${shape}: loop p99 / max ms (${runs} interleaved runs)`,
        `${fmt(median(ms(all.raw, 'p99ms')))} / ${fmt(Math.max(...ms(all.raw, 'maxms')))}`,
        `${fmt(median(ms(all.tether, 'p99ms')))} / ${fmt(Math.max(...ms(all.tether, 'maxms')))}`,
        `MB/s raw ${spread(ms(all.raw, 'mbps'))}, tether ${spread(ms(all.tether, 'mbps'))}`,
        'p99 ≤ 5, max ≤ 50',
        `exit ${all.tether[0].result.exitCode}, output ${all.tether[0].result.chars} chars (capped); load ${fmt(load, 2)}`,
      ]);
    }
    return out;
  } finally {
    await rt.dispose();
  }
}

// `node bench/stalls.js` runs this section alone (TETHER_BENCH_QUICK=1: 16 MiB, one run).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const row of await rows(process.env.TETHER_BENCH_QUICK === '1')) console.log(`| ${row.join(' | ')} |`);
}
