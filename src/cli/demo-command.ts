import { createWriteStream } from 'node:fs';
import type { InspectionEvent } from 'xstate';
import type { Agent, Notice, Turn } from '../agents/agent-types.js';
import type { JobInfo } from '../jobs/job-types.js';
import { createRuntime, type Runtime } from '../runtime.js';
import { parseCommandArgs } from './cli-args.js';
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
  tl.say('runtime', 'created (jobs, terminals in a PTY worker, agents with wake budgets)');
  try {
    await runScenario(rt, tl);
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
      `${waiters} waiters, ${agents.turns} turns → ${quiet ? 'verified quiescent' : 'NOT QUIESCENT'}`,
  );
  if (inspectLog)
    tl.say('runtime', `inspection events written to ${values.inspect} (one JSON object per line)`);
  return quiet ? 0 : 1;
}

async function runScenario(rt: Runtime, tl: Timeline): Promise<void> {
  let running = 0;
  const track = (job: JobInfo) => {
    running++;
    tl.progress(() => `${running} background job(s) running`);
    return job;
  };
  // Alice's two jobs end a moment apart: the demo waits until a notice told her of both,
  // and until Bob heard that his terminal's shell exited.
  let alicesJobsSeen = 0;
  let bothNoticed!: () => void;
  const noticed = new Promise<void>((resolve) => {
    bothNoticed = resolve;
  });
  let bobNoticed!: () => void;
  const terminalNoticed = new Promise<void>((resolve) => {
    bobNoticed = resolve;
  });

  const alice: Agent = rt.agents.create({
    sessionId: 'alice',
    onTurn: async (turn: Turn) => {
      for (const item of turn.inbox.claim()) {
        if (item.kind === 'user') {
          tl.say('alice', `turn ${turn.number}: user says "${item.text}"`);
          const build = track(
            await rt.shell.background(alice.owner, { command: 'sleep 1.5; echo build ok' }),
          );
          tl.say('alice', `started job ${build.id}: ${build.label}`);
          const tests = track(
            await rt.shell.background(alice.owner, { command: 'sleep 1; echo "2 tests failed"; exit 1' }),
          );
          tl.say('alice', `started job ${tests.id}: ${tests.label}`);
          tl.say('alice', 'turn ends; alice is idle until something wakes her');
        } else {
          running -= item.jobs.length;
          tl.say('alice', `woken by a completion notice (turn ${turn.number}): ${noticeFacts(item)}`);
          alicesJobsSeen += item.jobs.length;
          if (alicesJobsSeen >= 2) bothNoticed();
        }
      }
    },
  });

  const bob: Agent = rt.agents.create({
    sessionId: 'bob',
    onTurn: async (turn: Turn) => {
      for (const item of turn.inbox.claim()) {
        if (item.kind === 'notice') {
          tl.say('bob', `woken by a completion notice (turn ${turn.number}): ${noticeFacts(item)}`);
          if (item.terminals.length > 0) bobNoticed();
          continue;
        }
        tl.say('bob', `turn ${turn.number}: user says "${item.text}"`);
        const server = track(await rt.shell.background(bob.owner, { command: 'while :; do sleep 1; done' }));
        tl.say('bob', `started job ${server.id}: a server that never ends`);
        tl.say('bob', `kill ${server.id}: ${await rt.jobs.kill(bob.owner, server.id)}`);
        await rt.jobs.wait(bob.owner, server.id, 10_000);
        running--;
        const [stopped] = await rt.jobs.list(bob.owner);
        tl.say(
          'bob',
          `job ${server.id} is ${stopped?.state} (cancel requested: ${stopped?.cancelRequested})`,
        );
        const term = await rt.terminals.open(bob.owner);
        tl.say('bob', `opened terminal ${term.id} (interactive bash, pid ${term.pid})`);
        const question = 'read -p "Deploy to staging? [y/N] " answer; echo "you said: $answer"\n';
        const t0 = performance.now();
        const asked = await rt.terminals.send(bob.owner, term.id, question);
        tl.say(
          'bob',
          `sent a command that asks a question → waitReason ${asked.waitReason} after ${Math.round(performance.now() - t0)} ms`,
        );
        const answered = await rt.terminals.send(bob.owner, term.id, 'y\n');
        const said = /you said: \w+/.exec(answered.output)?.[0] ?? answered.output.trim();
        tl.say(
          'bob',
          `answered "y" → "${said}", then ${answered.waitReason} (the shell waits at its prompt)`,
        );
        const r = await rt.terminals.execute(bob.owner, term.id, 'cd /tmp && echo "cwd is $(pwd)"; false');
        tl.say('bob', `execute → output "${r.output.trim()}", exit ${r.exitCode}`);
        const bye = await rt.terminals.send(bob.owner, term.id, 'exit 0\n');
        tl.say('bob', `typed "exit 0" → ${bye.waitReason}; turn ends, bob is idle`);
      }
    },
  });

  alice.say('run the build and the tests in the background');
  bob.say('start a server, stop it, then ask me before deploying');
  await Promise.all([noticed, terminalNoticed]);
  tl.stopProgress();
  tl.say('runtime', 'disposing: agents retire, terminals then jobs are drained, workers stop');
}

// What a notice reports, one fact per job or terminal.
function noticeFacts(notice: Notice): string {
  const jobs = notice.jobs.map((j) => {
    const how = j.exitCode !== null ? `exit ${j.exitCode}` : (j.signal ?? 'no exit code');
    return `"${j.label}" ${j.state} (${how})`;
  });
  const terminals = notice.terminals.map((t) => `terminal ${t.id} ended on its own (exit ${t.exitCode})`);
  return [...jobs, ...terminals].join('; ');
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
