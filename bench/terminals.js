// P4: time from a program blocking on stdin to `send` returning `stdin_read`, and false proofs
// against busy programs. There is no raw baseline for a proof; the comparison is `settleMs`.
import { createRuntime } from '../dist/src/index.js';

const fmt = (x, digits = 1) => x.toFixed(digits);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

/** Table rows for bench/run.js: [benchmark, raw, tether, ratio, goal, note]. */
export async function rows(quick) {
  const rt = await createRuntime();
  const owner = rt.owners.host().token;
  try {
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, t.id, 'true');
    const samples = [];
    const reasons = {};
    for (let i = 0; i < (quick ? 20 : 100); i++) {
      const t0 = performance.now();
      // `read` blocks on the terminal as soon as bash runs it; the answer ends it again.
      const r = await rt.terminals.send(owner, t.id, 'read -r answer\n', { settleMs: 500 });
      samples.push(performance.now() - t0);
      reasons[r.waitReason] = (reasons[r.waitReason] ?? 0) + 1;
      await rt.terminals.send(owner, t.id, 'x\n', { settleMs: 500 });
    }
    let falseProofs = 0;
    const busyRuns = quick ? 40 : 200;
    const busy = ['while :; do :; done\n', 'sleep 5\n', "python3 -c 'sum(range(10**9))'\n"];
    for (let i = 0; i < busyRuns; i++) {
      const r = await rt.terminals.send(owner, t.id, busy[i % busy.length], { settleMs: 60 });
      if (r.waitReason === 'stdin_read') falseProofs++;
      await rt.terminals.signal(owner, t.id, 'SIGINT');
      await rt.terminals.execute(owner, t.id, 'true');
    }
    return [
      [
        'P4 blocked on stdin → send returns, median ms (p90)',
        '500 (settleMs)',
        `${fmt(quantile(samples, 0.5))} (${fmt(quantile(samples, 0.9))})`,
        `${fmt(500 / quantile(samples, 0.5), 0)}× sooner than settle`,
        '≤ 30 ms median',
        `reasons: ${JSON.stringify(reasons)}`,
      ],
      [
        'P4 false stdin_read proofs on busy programs',
        '',
        `${falseProofs} / ${busyRuns}`,
        '',
        '0',
        'busy loop, sleep, computation',
      ],
    ];
  } finally {
    await rt.dispose();
  }
}
