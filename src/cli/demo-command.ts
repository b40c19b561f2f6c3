import { resolve } from 'node:path';
import { createMirror } from '../mirror/mirror-server.js';
import { createRuntime } from '../runtime.js';
import { parseCommandArgs } from './cli-args.js';
import { runScenario } from './demo-scenario.js';
import { mirrorAddress } from './mirror-cli.js';
import { Timeline } from './timeline.js';
import { DEMO_USAGE, SERVE_USAGE } from './usage.js';
import { versionLine } from './version.js';

/**
 * `tether demo`: two agents with scripted drivers show every guarantee once — background
 * jobs that succeed, fail and get killed; a terminal prompt answered on a proven
 * `stdin_read`; completions (jobs, a terminal's exit) waking idle agents; teardown to
 * verified quiescence.
 */
export async function demoCommand(args: readonly string[], serveByDefault = false): Promise<number> {
  const { values } = parseCommandArgs(
    serveByDefault ? 'serve' : 'demo',
    args,
    {
      log: { type: 'string', example: 'run.jsonl' },
      inspect: { type: 'string', example: 'events.jsonl' },
      serve: { type: 'boolean' },
      port: { type: 'string', example: '7077' },
      host: { type: 'string', example: '127.0.0.1' },
    },
    'none',
  );
  if (values.help || values.version) {
    process.stdout.write(values.help ? (serveByDefault ? SERVE_USAGE : DEMO_USAGE) : versionLine());
    return 0;
  }
  const serve = serveByDefault || values.serve === true;
  const mirrorAt = mirrorAddress(values, serveByDefault ? 'serve' : 'demo');
  const tl = new Timeline(process.stdout);
  // V1: --inspect is the fact log with the inspection events under stable actor ids. Issue
  // 33.8: the path is said in full, once before and once after the run.
  const given = values.inspect ?? values.log;
  const logPath = given === undefined ? undefined : resolve(given);
  const rt = await createRuntime({
    limits: { cleanupGraceMs: 500 },
    ...(logPath ? { log: { path: logPath, inspection: values.inspect !== undefined, samples: true } } : {}),
  });
  const mirror = serve ? await createMirror(rt, mirrorAt) : null;
  if (mirror) tl.say('mirror', `open ${mirror.url} (read-only; the code in it works once)`);
  tl.say(
    'runtime',
    'created: shell commands, background jobs, terminals (real PTYs, run in a worker thread), agents alice and bob',
  );
  if (logPath) tl.say('runtime', `writing the facts to ${logPath}`);
  // Issue 33.6: served, the agents keep working until the first SIGINT/SIGTERM; later ones are
  // ignored while the teardown runs (it must finish: it is what kills what the agents started).
  const live = serve ? stopOnSignal() : null;
  try {
    await runScenario(rt, tl, live?.signal);
    if (live?.signal.aborted) tl.say('demo', 'stopped (Ctrl-C)');
    tl.say(
      'runtime',
      'disposing: the agents retire, their terminals and jobs are drained, the PTY worker stops',
    );
  } finally {
    tl.stopProgress();
    await rt.dispose();
    live?.release();
  }
  const { processes, workers, timers, waiters, agents } = rt.stats();
  const quiet = processes === 0 && workers === 0 && timers === 0 && waiters === 0 && agents.turns === 0;
  tl.say(
    'runtime',
    `disposed: ${processes} processes alive, ${workers} worker threads, ${timers} timers, ` +
      `${waiters} waiters, ${agents.turns} turns → ${quiet ? 'verified quiescent (nothing the runtime started is left running or pending)' : 'NOT QUIESCENT'}`,
  );
  if (logPath)
    tl.say('runtime', `facts written to ${logPath} (JSONL, docs/FACTS.md); replay: tether view ${logPath}`);
  await mirror?.close();
  return quiet ? 0 : 1;
}

// An AbortSignal aborted by the first SIGINT or SIGTERM; the handlers stay until `release()`.
function stopOnSignal(): { readonly signal: AbortSignal; release(): void } {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: stop.signal,
    release() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
