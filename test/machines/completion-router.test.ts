import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createActor,
  type EventFromLogic,
  fromCallback,
  fromPromise,
  initialTransition,
  SimulatedClock,
  type SnapshotFrom,
  transition,
} from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import {
  type Completion,
  completionKey,
  completionRouterMachine,
  type RouterMachineEvent,
  type RouterMachineInput,
} from '../../machines/completion-router.js';
import { subscribeCompletions } from '../../src/agents/agent-delivery.js';
import type { AgentRecord } from '../../src/agents/agent-record.js';
import type { JobInfo } from '../../src/jobs/job-types.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { type JobHarness, jobHarness } from '../support/job-harness.js';
import { manualJob } from '../support/manual-job.js';
import { explore, type ModelStep, replayOrFail, untaken } from '../support/model-check.js';

type RouterSnapshot = SnapshotFrom<typeof completionRouterMachine>;
type RouterEvent = EventFromLogic<typeof completionRouterMachine>;
type Step = ModelStep<typeof completionRouterMachine>;

const input: RouterMachineInput = { id: 'router:graph:1', publication: 'agent:graph:1', windowMs: 50 };
const info = (id: string) =>
  ({ id, kind: 'manual', label: id, state: 'succeeded', isTerminal: true }) as JobInfo;
const completed = (id: string): RouterEvent => ({
  type: 'COMPLETED',
  completion: { kind: 'job', job: info(id) },
});
const jobIdOf = (event: RouterEvent): string | undefined =>
  event.type === 'COMPLETED' && event.completion.kind === 'job' ? event.completion.job.id : undefined;
const windowClosed = {
  type: completionRouterMachine.getStateNodeById('router.routing.delivery.collecting').after[0]!.eventType,
} as unknown as RouterEvent;
const attached = (s: RouterSnapshot) => s.matches({ routing: { source: 'attached' } });
const inDelivery = (s: RouterSnapshot, state: 'quiet' | 'collecting' | 'delivering') =>
  s.matches({ routing: { delivery: state } });
const delivered = actorDone<RouterEvent>('deliver');
const deliveryFailed = actorFailed<RouterEvent>('deliver', new Error('sender down'));
const sourceFailed = actorFailed<RouterEvent>('completions', new Error('gone'));

// What can happen in each state; `source` adds the subscription failing (not producible for real later on).
const eventsOf =
  (source: boolean) =>
  (s: RouterSnapshot): RouterEvent[] => {
    const base = [
      completed('a'),
      completed('b'),
      { type: 'CLOSE' } as const,
      ...(attached(s) ? [{ type: 'DETACH' } as const] : []),
      ...(source && attached(s) ? [sourceFailed] : []),
    ];
    if (inDelivery(s, 'collecting')) return [...base, windowClosed];
    if (inDelivery(s, 'delivering')) return [...base, delivered, deliveryFailed];
    return base;
  };
const ids = (completions: readonly Completion[]) => completions.map(completionKey);
const serialize = (s: RouterSnapshot) =>
  JSON.stringify([
    s.value,
    s.context.claimed,
    ids(s.context.pending),
    ids(s.context.batch),
    s.context.delivered > 0,
    s.context.failed > 0,
  ]);
const pathsOf = (source: boolean) =>
  getShortestPaths(completionRouterMachine, {
    input,
    events: eventsOf(source),
    serializeState: serialize,
    filterEvents: (s) => s.status === 'active',
  });

// A path's events replayed from the real initial snapshot (a path's steps are representatives);
// an event that cannot be replayed fails the test (issue 12: never a silently shorter path).
function replay(path: StatePath<RouterSnapshot, RouterEvent>, source: boolean): Step[] {
  const [initial] = initialTransition(completionRouterMachine, input);
  return replayOrFail(
    completionRouterMachine,
    initial,
    path.steps.slice(1).map((s) => s.event),
    eventsOf(source),
  );
}

// What a step handed to `deliver`: a new batch is delivering entered, or re-entered in one step
// once the last one settled (detached).
function handOff({ prev, next }: Pick<Step, 'prev' | 'next'>, handed: string[]): void {
  const settled = (x: RouterSnapshot) => x.context.delivered + x.context.failed;
  if (inDelivery(next, 'delivering') && (!inDelivery(prev, 'delivering') || settled(next) > settled(prev)))
    handed.push(...ids(next.context.batch));
}

// Invariants of every reachable snapshot and step (SPEC W1, D1).
function check({ event, prev, next }: Step, handed: string[]): void {
  const at = `${JSON.stringify(prev.value)} --${event.type}--> ${JSON.stringify(next.value)}`;
  const { claimed: wasClaimed } = prev.context;
  const { claimed, pending, batch } = next.context;
  expect(new Set(claimed).size, at).toBe(claimed.length); // claimed at most once
  for (const id of [...ids(pending), ...ids(batch)]) expect(claimed, at).toContain(id);
  expect(
    ids(pending).filter((id) => ids(batch).includes(id)),
    at,
  ).toEqual([]);
  if (inDelivery(next, 'quiet')) expect(pending, at).toEqual([]);
  if (inDelivery(next, 'collecting')) expect(pending.length, at).toBeGreaterThan(0);
  if (inDelivery(next, 'collecting')) expect(attached(next), at).toBe(true); // S5: detached flushes at once
  if (inDelivery(next, 'delivering')) expect(batch.length, at).toBeGreaterThan(0);
  handOff({ prev, next }, handed);
  expect(new Set(handed).size, at).toBe(handed.length); // each completion handed to deliver at most once
  if (event.type === 'COMPLETED' && (wasClaimed.includes(completionKey(event.completion)) || !attached(prev)))
    expect(next.context, at).toEqual(prev.context); // a repeat, or heard after DETACH: ignored
  if (next.status === 'done' && event.type !== 'CLOSE' && event !== sourceFailed) {
    // S5: a detached router ends only when everything it claimed was handed to deliver.
    expect(next.context.pending, at).toEqual([]);
    expect([...handed].sort(), at).toEqual([...next.context.claimed].sort());
  }
  if (event === deliveryFailed) {
    expect(next.context.delivered, at).toBe(prev.context.delivered); // never faked as delivered
    expect(next.context.failed, at).toBe(prev.context.failed + 1);
  }
  if (next.status === 'done') {
    expect(next.value, at).toBe('closed');
    // (Child error events cannot arrive: leaving `listening` stopped the children.)
    for (const e of eventsOf(false)(next))
      expect(transition(completionRouterMachine, next, e)[0], e.type).toBe(next);
  }
}

describe('machines/completion-router', () => {
  it('W1, D1: every step out of every reachable state keeps the invariants, and every edge is taken', () => {
    const x = explore(completionRouterMachine, { input, events: eventsOf(true), serialize });
    expect(x.states.size).toBeGreaterThan(20);
    for (const step of x.steps) {
      const handed: string[] = [];
      for (const before of x.states.get(serialize(step.prev))!.path) handOff(before, handed);
      check(step, handed);
    }
    expect(untaken(completionRouterMachine, x.taken)).toEqual([]);
  });

  it('W1: every reachable state keeps the claim ledger, the window and at-most-once delivery', () => {
    const paths = pathsOf(true);
    expect(paths.length).toBeGreaterThan(20);
    const values = new Set<string>();
    for (const path of paths) {
      const handed: string[] = [];
      for (const step of replay(path, true)) {
        check(step, handed);
        values.add(JSON.stringify(step.next.value));
      }
    }
    expect(values).toEqual(
      new Set([
        '{"routing":{"source":"attached","delivery":"quiet"}}',
        '{"routing":{"source":"attached","delivery":"collecting"}}',
        '{"routing":{"source":"attached","delivery":"delivering"}}',
        '{"routing":{"source":"detached","delivery":"delivering"}}',
        '"closed"',
      ]),
    );
  });

  it('W1: a failed delivery runs the error path (emit + report) and no retry', () => {
    let [s] = initialTransition(completionRouterMachine, input);
    [s] = transition(completionRouterMachine, s, completed('a'));
    [s] = transition(completionRouterMachine, s, windowClosed);
    const [after, actions] = transition(completionRouterMachine, s, deliveryFailed);
    expect(after.value).toEqual({ routing: { source: 'attached', delivery: 'quiet' } });
    expect(actions.map((a) => a.type)).toEqual(
      expect.arrayContaining(['xstate.emit', 'reportDeliveryFailure']),
    );
    expect(transition(completionRouterMachine, after, completed('a'))[0].context).toEqual(after.context);
  });
});

// Longest replayed runs: every shorter one is a prefix of one of them.
function maximal(runs: Step[][]): Step[][] {
  const keys = runs.map((run) => run.map((s) => JSON.stringify(jobIdOf(s.event) ?? s.event.type)).join('>'));
  return runs.filter(
    (run, i) =>
      run.length > 0 &&
      !keys.some((k, j) => j !== i && (k.startsWith(`${keys[i]}>`) || (k === keys[i] && j < i))),
  );
}

describe('machines/completion-router driven for real along the shortest paths', () => {
  let jh: JobHarness;
  afterAll(async () => {
    await jh?.close();
  });
  const runs = maximal(pathsOf(false).map((p) => replay(p, false)));
  const name = (run: Step[]) =>
    run
      .map((s) =>
        jobIdOf(s.event) !== undefined
          ? `COMPLETED(${jobIdOf(s.event)})`
          : s.event.type.replace(/^xstate\.|\.router\..*$/g, ''),
      )
      .join(' → ');

  it('W1: the runs driven for real take every edge of the machine', () => {
    const taken = runs.flatMap((run) => run.flatMap((s) => s.edges));
    expect(
      untaken(completionRouterMachine, taken, {
        'router.routing.source.attached --xstate.error.actor.completions--> router.closed':
          'the job service subscription does not fail once attached',
      }),
    ).toEqual([]);
  });

  it.each(runs.map((run, i) => [`#${i + 1}: ${name(run)}`, run] as const))(
    'W1: the real router over the job service follows %s',
    async (_name, run) => {
      jh ??= jobHarness();
      const lease = jh.owners.agent();
      const jobs = { a: manualJob(), b: manualJob() };
      const real: Record<string, string> = {};
      for (const [name, job] of Object.entries(jobs))
        real[name] = (await jh.jobs.start(lease.token, job.spec)).id;
      const clock = new SimulatedClock();
      let delivery: { resolve(): void; reject(e: unknown): void } | undefined;
      const counts = { listeners: 0 };
      const router = createActor(
        completionRouterMachine.provide({
          actors: {
            completions: fromCallback<RouterMachineEvent, { readonly publication: string }>(({ sendBack }) =>
              subscribeCompletions(
                { jobs: jh.jobs },
                { lease } as unknown as AgentRecord,
                counts,
                (completion) => sendBack({ type: 'COMPLETED', completion }),
              ),
            ),
            deliver: fromPromise(
              () => new Promise<void>((resolve, reject) => (delivery = { resolve, reject })),
            ),
          },
        }),
        { input, clock },
      ).start();
      const realKey = (key: string) => `job:${real[key.replace(/^job:/, '')]}`;
      const finished = new Set<string>();
      for (const { event, prev, next } of run) {
        const jobId = jobIdOf(event) as 'a' | 'b' | undefined;
        if (jobId !== undefined && !finished.has(jobId) && attached(prev)) {
          finished.add(jobId);
          jobs[jobId].finish(); // a real completion through the service's subscription
        } else if (jobId !== undefined) {
          // a repeat (the ledger refuses it), or one sent after DETACH (nobody listens)
          router.send({ type: 'COMPLETED', completion: { kind: 'job', job: info(real[jobId]!) } });
        } else if (event === windowClosed) clock.increment(input.windowMs);
        else if (event === delivered) delivery!.resolve();
        else if (event === deliveryFailed) delivery!.reject(new Error('sender down'));
        else router.send(event);
        const want = JSON.stringify([
          next.value,
          next.context.claimed.map(realKey),
          ids(next.context.pending).map(realKey),
          ids(next.context.batch).map(realKey),
          next.context.delivered,
          next.context.failed,
        ]);
        const shown = () => {
          const s = router.getSnapshot();
          return JSON.stringify([
            s.value,
            s.context.claimed,
            ids(s.context.pending),
            ids(s.context.batch),
            s.context.delivered,
            s.context.failed,
          ]);
        };
        for (let i = 0; shown() !== want; i++) {
          if (i > 6_000) throw new Error(`${event.type}: ${shown()} ≠ ${want}`);
          await sleep(5);
        }
        // D1, S5: the job-service listener lives exactly as long as the source is attached
        expect(counts.listeners, event.type).toBe(attached(router.getSnapshot()) ? 1 : 0);
      }
      if (router.getSnapshot().status === 'active') router.send({ type: 'CLOSE' });
      expect(counts.listeners).toBe(0);
      for (const job of Object.values(jobs)) job.finish();
      await jh.jobs.drainOwner(lease.token);
    },
  );
});
