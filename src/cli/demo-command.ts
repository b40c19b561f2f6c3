import { createWriteStream } from 'node:fs';
import type { InspectionEvent } from 'xstate';
import { createRuntime } from '../runtime.js';
import { parseCommandArgs } from './cli-args.js';
import { runScenario } from './demo-scenario.js';
import { Timeline } from './timeline.js';
import { DEMO_USAGE } from './usage.js';
import { versionLine } from './version.js';

/**
 * `tether demo`: two agents with scripted drivers show every guarantee once — background
 * jobs that succeed, fail and get killed; a terminal prompt answered on a proven
 * `stdin_read`; completions (jobs, a terminal's exit) waking idle agents; teardown to
 * verified quiescence.
 */
export async function demoCommand(args: readonly string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'demo',
    args,
    { inspect: { type: 'string', example: 'events.jsonl' } },
    'none',
  );
  if (values.help || values.version) {
    process.stdout.write(values.help ? DEMO_USAGE : versionLine());
    return 0;
  }
  const tl = new Timeline(process.stdout);
  const inspectLog = values.inspect === undefined ? null : createWriteStream(values.inspect);
  const rt = await createRuntime({
    limits: { cleanupGraceMs: 500 },
    ...(inspectLog
      ? { inspect: (event: InspectionEvent) => inspectLog.write(`${inspectionLine(event)}\n`) }
      : {}),
  });
  tl.say(
    'runtime',
    'created: shell commands, background jobs, terminals (real PTYs, run in a worker thread), agents alice and bob',
  );
  try {
    await runScenario(rt, tl);
    tl.say(
      'runtime',
      'disposing: the agents retire, their terminals and jobs are drained, the PTY worker stops',
    );
  } finally {
    tl.stopProgress();
    await rt.dispose();
    if (inspectLog) await new Promise((resolve) => inspectLog.end(resolve));
  }
  const { processes, workers, timers, waiters, agents } = rt.stats();
  const quiet = processes === 0 && workers === 0 && timers === 0 && waiters === 0 && agents.turns === 0;
  tl.say(
    'runtime',
    `disposed: ${processes} processes alive, ${workers} worker threads, ${timers} timers, ` +
      `${waiters} waiters, ${agents.turns} turns → ${quiet ? 'verified quiescent (nothing the runtime started is left running or pending)' : 'NOT QUIESCENT'}`,
  );
  if (inspectLog)
    tl.say('runtime', `inspection events written to ${values.inspect} (one JSON object per line)`);
  return quiet ? 0 : 1;
}

// Inspection events hold live actor references: keep what a viewer needs, nothing else (O1).
function inspectionLine(event: InspectionEvent): string {
  const line: Record<string, unknown> = { type: event.type, actor: actorName(event.actorRef) };
  if ('event' in event) line.event = event.event;
  if ('snapshot' in event) {
    const snapshot = event.snapshot as { value?: unknown; status?: unknown };
    line.value = snapshot.value;
    line.status = snapshot.status;
  }
  const source = 'sourceRef' in event ? event.sourceRef : undefined;
  if (source) line.source = actorName(source);
  return JSON.stringify(line, (_key, value) => (typeof value === 'function' ? undefined : value));
}

// The readable system id where the actor has one (`tether.jobs`, `agent:alice:1`), else its session id.
function actorName(ref: { readonly sessionId: string }): string {
  const systemId = (ref as { readonly systemId?: unknown }).systemId;
  return typeof systemId === 'string' ? systemId : ref.sessionId;
}
