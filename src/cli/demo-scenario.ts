import { setTimeout as sleep } from 'node:timers/promises';
import type { Agent, Notice, Turn } from '../agents/agent-types.js';
import type { Runtime } from '../runtime.js';
import type { Timeline } from './timeline.js';

// What each job runs: short stand-ins for real work, shown as they are (labels match what runs).
const BUILD = 'sleep 1.5; echo build ok';
const TESTS = 'sleep 1; echo 2 tests failed; exit 1'; // fails on purpose
const SERVER = 'while :; do sleep 1; done';
const QUESTION = 'read -p "Deploy to staging? [y/N] " answer; echo "you said: $answer"';
const EXECUTE = 'cd /tmp && pwd; false'; // the trailing `false` fails on purpose

// One-line glosses, each printed the first time its idea appears.
const GLOSSES = {
  stdin_read:
    'stdin_read = proven from /proc that the program is blocked reading the terminal, not guessed from silence',
  wakes:
    'wake budget = an idle agent is woken by at most 3 notices in a row; later ones wait, without waking, until the user speaks again',
} as const;

// Live mode (--serve): the pause between two requests of the user, and how long Bob lets his
// server run and his terminal's question wait before he acts: a human pace, to be watched.
const LIVE_PAUSE_MS = 3_000;
const LIVE_BOB_PACE_MS = 2_000;

/**
 * The demo's script: two agents with scripted drivers. Alice starts two background jobs (one
 * fails on purpose) and is woken by their completion notices; Bob starts and kills a job,
 * answers a terminal's question once `stdin_read` proves it waits, runs `execute`, and
 * exits the shell, which wakes him with a notice. Resolves once every notice arrived; with
 * `live`, the user then keeps asking (Alice and Bob in turn, a pause of a few seconds between
 * requests) until `live` is aborted, so that a person watching the mirror sees work happen.
 *
 * @example
 * ```ts
 * await runScenario(rt, new Timeline(process.stdout));
 * await rt.dispose();
 * ```
 */
export async function runScenario(rt: Runtime, tl: Timeline, live?: AbortSignal): Promise<void> {
  const glossed = new Set<keyof typeof GLOSSES>();
  // The gloss goes on its own indented line under the event that first shows the idea.
  const gloss = (who: string, key: keyof typeof GLOSSES) => {
    if (glossed.has(key)) return;
    glossed.add(key);
    tl.say(who, `  ${GLOSSES[key]}`);
  };
  let running = 0;
  const started = (n: number) => {
    running += n;
    tl.progress(() => `${running} background job(s) running`);
  };
  const ended = (n: number) => {
    running -= n;
    if (running === 0) tl.stopProgress();
  };
  const woken = (agent: Agent, turn: Turn, notice: Notice) => {
    const { wakes, maxWakes } = agent.status();
    const how =
      turn.reason === 'notice'
        ? `woken by a notice (turn ${turn.number}, wake ${wakes} of ${maxWakes})`
        : `notice (turn ${turn.number})`;
    tl.say(agent.sessionId, `${how}: ${noticeFacts(notice)}`);
    if (turn.reason === 'notice') gloss(agent.sessionId, 'wakes');
  };
  // A round ends once a notice told Alice of both her jobs, or Bob of his terminal's exit.
  let alicesJobsSeen = 0;
  let aliceDone = signal();
  let bobDone = signal();
  // Bob acts at once in the script, at LIVE_BOB_PACE_MS in live rounds; false: stop now.
  let bobPaceMs = 0;
  const bobWaits = async () => bobPaceMs === 0 || live === undefined || (await pause(bobPaceMs, live));

  const alice: Agent = rt.agents.create({
    sessionId: 'alice',
    onTurn: async (turn: Turn) => {
      for (const item of turn.inbox.claim()) {
        if (item.kind === 'notice') {
          ended(item.jobs.length);
          woken(alice, turn, item);
          alicesJobsSeen += item.jobs.length;
          if (alicesJobsSeen >= 2) {
            alicesJobsSeen -= 2;
            aliceDone.resolve();
          }
          continue;
        }
        tl.say('alice', `turn ${turn.number}: the user says "${item.text}"`);
        const build = await rt.shell.background(alice.owner, { command: BUILD });
        started(1);
        tl.say('alice', `started job ${build.id} "${build.label}" (stands in for the build)`);
        const tests = await rt.shell.background(alice.owner, { command: TESTS });
        started(1);
        tl.say(
          'alice',
          `started job ${tests.id} "${tests.label}" (stands in for the tests; fails on purpose)`,
        );
        tl.say('alice', 'turn ends; alice is idle until a notice wakes her');
      }
    },
  });

  const bob: Agent = rt.agents.create({
    sessionId: 'bob',
    onTurn: async (turn: Turn) => {
      for (const item of turn.inbox.claim()) {
        if (item.kind === 'notice') {
          woken(bob, turn, item);
          if (item.terminals.length > 0) bobDone.resolve();
          continue;
        }
        tl.say('bob', `turn ${turn.number}: the user says "${item.text}"`);
        const server = await rt.shell.background(bob.owner, { command: SERVER });
        started(1);
        tl.say('bob', `started job ${server.id} "${server.label}" (stands in for a server: it never ends)`);
        if (!(await bobWaits())) return;
        const kill = await rt.jobs.kill(bob.owner, server.id);
        tl.say('bob', `kill ${server.id} → ${kill} (SIGINT to its foreground group, then its whole tree)`);
        await rt.jobs.wait(bob.owner, server.id, 10_000);
        ended(1);
        const [stopped] = await rt.jobs.list(bob.owner);
        tl.say(
          'bob',
          `job ${server.id} is ${stopped?.state} (cancel requested: ${stopped?.cancelRequested})`,
        );

        const term = await rt.terminals.open(bob.owner);
        tl.say('bob', `opened terminal ${term.id} (interactive bash on a real PTY, pid ${term.pid})`);
        const t0 = performance.now();
        const asked = await rt.terminals.send(bob.owner, term.id, `${QUESTION}\n`);
        const ms = Math.round(performance.now() - t0);
        tl.say('bob', `typed: ${QUESTION}`);
        tl.say('bob', `  → waitReason ${asked.waitReason} after ${ms} ms`);
        if (asked.waitReason === 'stdin_read') gloss('bob', 'stdin_read');
        if (!(await bobWaits())) return;
        const answered = await rt.terminals.send(bob.owner, term.id, 'y\n');
        const said = /you said: \w+/.exec(answered.output)?.[0] ?? answered.output.trim();
        tl.say(
          'bob',
          `typed: y → it printed "${said}"; waitReason ${answered.waitReason} (now bash waits at its prompt)`,
        );
        const r = await rt.terminals.execute(bob.owner, term.id, EXECUTE);
        tl.say(
          'bob',
          `execute "${EXECUTE}" → output "${r.output.trim()}", exit ${r.exitCode} (false fails on purpose: execute returns the exit code)`,
        );
        const bye = await rt.terminals.send(bob.owner, term.id, 'exit 0\n');
        tl.say(
          'bob',
          `typed: exit 0 → waitReason ${bye.waitReason} (the shell ended); turn ends, bob is idle`,
        );
      }
    },
  });

  alice.say('run the build and the tests in the background');
  bob.say('start a server, stop it, then ask me before deploying');
  const firstRound = Promise.all([aliceDone.promise, bobDone.promise]).then(() => {});
  if (live === undefined) await firstRound;
  else if (!(await until(firstRound, live))) return;
  tl.stopProgress();
  if (live === undefined) return;
  tl.say('demo', 'the agents keep working, a request every few seconds, until Ctrl-C');
  for (let round = 1; !live.aborted; round++) {
    if (!(await pause(LIVE_PAUSE_MS, live))) break;
    if (round % 2 === 1) {
      aliceDone = signal();
      alice.say(`build and test again (round ${round})`);
      if (!(await until(aliceDone.promise, live))) break;
    } else {
      bobDone = signal();
      bobPaceMs = LIVE_BOB_PACE_MS;
      bob.say(`the same again: a server, then ask me (round ${round})`);
      if (!(await until(bobDone.promise, live))) break;
    }
    tl.stopProgress();
  }
}

// True after `ms`, false as soon as `signal` aborts (the timer is cleared then).
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return sleep(ms, true, { signal }).catch(() => false);
}

// True once `done` settles, false as soon as `signal` aborts first.
async function until(done: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  let onAbort = () => {};
  const aborted = new Promise<boolean>((resolve) => {
    onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([done.then(() => true), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

// What a notice reports, one fact per job or terminal; the deliberate failure says so.
function noticeFacts(notice: Notice): string {
  const jobs = notice.jobs.map((j) => {
    const how = j.exitCode !== null ? `exit ${j.exitCode}` : (j.signal ?? 'no exit code');
    return `job "${j.label}" ${j.state} (${how}${j.label === TESTS ? ', the deliberate failure' : ''})`;
  });
  const terminals = notice.terminals.map((t) => `terminal ${t.id} ended on its own (exit ${t.exitCode})`);
  return [...jobs, ...terminals].join('; ');
}

// A promise and its resolve (Node 20 has no Promise.withResolvers).
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
