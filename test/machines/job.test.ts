import { afterAll, describe, expect, it } from 'vitest';
import { type EventFromLogic, type SnapshotFrom, transition } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { type JobMachineInput, jobMachine } from '../../machines/job.js';
import { actorDone, actorFailed } from '../support/actor-events.js';
import { type JobHarness, jobHarness, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

type JobSnapshot = SnapshotFrom<typeof jobMachine>;
type JobEvent = EventFromLogic<typeof jobMachine>;

const input: JobMachineInput = { jobId: 'job_1', ownerKey: 'o1', kind: 'test', label: 'graph', startedAt: 0 };
const FINAL = ['succeeded', 'failed', 'killed'] as const;

// The producer's settlement arrives as the invoked actor's done/error event.
const exited = (exitCode: number | null, signal: string | null = null) =>
  actorDone<JobEvent>('producer', { exitCode, signal });
const events: JobEvent[] = [
  { type: 'CANCEL' },
  exited(0),
  exited(3),
  exited(null, 'SIGKILL'),
  actorFailed<JobEvent>('producer', new Error('boom')),
];
const traversal = {
  input,
  events,
  // A final snapshot takes no more events (an error event would only mark it errored).
  filterEvents: (snapshot: JobSnapshot) => snapshot.status === 'active',
  serializeState: (s: JobSnapshot) => JSON.stringify([s.value, s.status, s.context]),
};

// What a traversal event means for a real producer.
function stepOf(
  event: JobEvent,
):
  | { kind: 'cancel' }
  | { kind: 'reject' }
  | { kind: 'exit'; exitCode: number | null; signal: string | null } {
  const type: string = event.type;
  if (type === 'CANCEL') return { kind: 'cancel' };
  if (type.startsWith('xstate.error')) return { kind: 'reject' };
  const { output } = event as unknown as { output: { exitCode: number | null; signal: string | null } };
  return { kind: 'exit', ...output };
}

const isFinalValue = (s: JobSnapshot): boolean => FINAL.some((name) => s.matches(name));

// Invariants every reachable snapshot of the job machine must satisfy.
function checkInvariants(s: JobSnapshot, path: readonly JobEvent[]): void {
  // Terminal ⇒ the machine reports a final status, and vice versa.
  expect(s.status === 'done', JSON.stringify(s.value)).toBe(isFinalValue(s));
  // cancelRequested only while running; killed only after a CANCEL.
  if (s.matches({ running: 'cancelRequested' })) expect(s.matches('running')).toBe(true);
  if (s.matches('killed')) expect(path.some((e) => e.type === 'CANCEL')).toBe(true);
  // Succeeded means exit 0, no signal, no producer error; facts recorded only at the end.
  if (s.matches('succeeded')) expect(s.context).toMatchObject({ exitCode: 0, signal: null, error: null });
  if (s.matches('failed')) {
    const clean = s.context.exitCode === 0 && s.context.signal === null && s.context.error === null;
    expect(clean).toBe(false);
  }
  if (s.matches('running')) expect(s.context).toMatchObject({ exitCode: null, signal: null, error: null });
  // A final snapshot ignores everything that could still arrive.
  if (s.status === 'done') {
    for (const event of events.filter((e) => e.type === 'CANCEL'))
      expect(transition(jobMachine, s, event)[0].value).toEqual(s.value);
  }
}

describe('machines/job', () => {
  it('J2: every state on every simple path satisfies the lifecycle invariants', () => {
    const paths = getSimplePaths(jobMachine, traversal);
    expect(paths.length).toBeGreaterThanOrEqual(8);
    for (const path of paths) {
      const seen: JobEvent[] = [];
      for (const step of path.steps) {
        seen.push(step.event);
        checkInvariants(step.state, seen);
      }
    }
    const reached = new Set(paths.map((p) => JSON.stringify(p.state.value)));
    expect(reached).toEqual(
      new Set([
        '{"running":"active"}',
        '{"running":"cancelRequested"}',
        '"succeeded"',
        '"failed"',
        '"killed"',
      ]),
    );
  });

  it('J2: the three outcomes are final states; cancelRequested is a sub-state of running', () => {
    for (const name of FINAL) expect(jobMachine.states[name]!.type).toBe('final');
    expect(Object.keys(jobMachine.states.running!.states)).toEqual(['active', 'cancelRequested']);
  });

  it('J7: entering cancelRequested runs requestCancel exactly once; a second CANCEL runs nothing', () => {
    const paths = getShortestPaths(jobMachine, {
      ...traversal,
      toState: (s) => s.matches({ running: 'cancelRequested' }),
    });
    const [path] = paths;
    const before = path!.steps.at(-2)!.state;
    const [asked, actions] = transition(jobMachine, before, { type: 'CANCEL' });
    expect(actions.map((a) => a.type)).toContain('requestCancel');
    const [again, more] = transition(jobMachine, asked, { type: 'CANCEL' });
    expect(again.value).toEqual(asked.value);
    expect(more.map((a) => a.type)).not.toContain('requestCancel');
  });
});

describe('machines/job driven for real along each shortest path', () => {
  let h: JobHarness;
  afterAll(async () => {
    await h?.close();
  });

  const paths = getShortestPaths(jobMachine, traversal);
  const describePath = (events: readonly JobEvent[]) =>
    events
      .slice(1)
      .map((e) => {
        const step = stepOf(e);
        return step.kind === 'exit' ? `exit(${step.exitCode ?? step.signal})` : step.kind;
      })
      .join(' → ') || '(start)';

  it.each(paths.map((p) => [describePath(p.steps.map((s) => s.event)), p] as const))(
    'J2/J7: the real service follows %s',
    async (_name, path) => {
      h ??= jobHarness();
      const owner = h.owners.host().token;
      // A real process that ignores INT/TERM and exits as told on stdin (99 = a rejecting producer).
      const job = processJob(
        `trap '' INT TERM; read c; case "$c" in sig) kill -KILL $$;; *) exit "$c";; esac`,
        {
          stdin: true,
          rejectOnExit: 99,
        },
      );
      const info = await h.jobs.start(owner, job.spec);
      let cancelled = false;
      for (const { event } of path.steps.slice(1)) {
        const step = stepOf(event);
        if (step.kind === 'cancel') {
          expect(await h.jobs.kill(owner, info.id)).toBe('requested');
          cancelled = true;
          continue;
        }
        const written = await job.write(step.kind === 'reject' ? '99' : String(step.exitCode ?? 'sig'));
        // After a kill request the tree kill may win the race with our input: still killed.
        if (!cancelled) expect(written).toBe(true);
      }
      const model = path.state;
      const real = isFinalValue(model)
        ? await settle(h.jobs, owner, info.id)
        : (await h.jobs.list(owner)).find((j) => j.id === info.id)!;
      const modelState = isFinalValue(model) ? (FINAL.find((n) => model.matches(n)) as string) : 'running';
      expect(real.state).toBe(modelState);
      expect(real.isTerminal).toBe(model.status === 'done');
      expect(real.cancelRequested).toBe(
        model.matches({ running: 'cancelRequested' }) || model.matches('killed'),
      );
      // Without a kill, the real exit facts are the model's (a kill races the exit on purpose).
      if (!model.matches('killed') && model.status === 'done') {
        expect({ exitCode: real.exitCode, signal: real.signal, failed: real.error !== null }).toEqual({
          exitCode: model.context.exitCode,
          signal: model.context.signal,
          failed: model.context.error !== null,
        });
      }
      if (!real.isTerminal) {
        await h.jobs.kill(owner, info.id);
        await settle(h.jobs, owner, info.id);
      }
    },
  );
});
