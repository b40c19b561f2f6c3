import { afterEach, describe, expect, it } from 'vitest';
import { createActor, fromCallback, fromPromise, SimulatedClock } from 'xstate';
import { completionRouterMachine, type RouterMachineEvent } from '../../machines/completion-router.js';
import { subscribeCompletions } from '../../src/agents/agent-delivery.js';
import type { AgentRecord } from '../../src/agents/agent-record.js';
import type { Notice } from '../../src/agents/agent-types.js';
import type { JobInfo } from '../../src/jobs/job-types.js';
import { jobHarness, settle } from '../support/job-harness.js';
import { manualJob } from '../support/manual-job.js';
import { waitFor } from '../support/spawn-tree.js';
import { type AgentHarness, agentHarness, heldDriver, noticeJobIds } from './agent-harness.js';

let h: AgentHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tick = (n: number): Promise<void> =>
  n === 0 ? Promise.resolve() : Promise.resolve().then(() => tick(n - 1));

describe('agents: completion routing (W1)', () => {
  it('W1: two completions within the quiet window reach the agent as one notice', async () => {
    const clock = new SimulatedClock();
    h = agentHarness({ clock, quietWindowMs: 50 });
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'coalesce', onTurn: d.onTurn });
    const a = await h.background(agent, 'exit 0');
    const b = await h.background(agent, 'exit 5');
    await settle(h.jobs, agent.owner, a.id);
    await settle(h.jobs, agent.owner, b.id);
    // Both completions were claimed by the router; one window (one timer) is open.
    await waitFor(() => h!.agents.stats().queued === 2, 'both completions queued in the window');
    expect(h.agents.stats()).toMatchObject({ timers: 1, deliveries: 0 });
    expect(agent.phase).toBe('idle');
    clock.increment(50);
    const t1 = await d.turn(1);
    expect(t1.turn.reason).toBe('notice');
    expect(t1.batches[0]).toHaveLength(1);
    expect(noticeJobIds(t1.batches[0]!).sort()).toEqual([a.id, b.id].sort());
    expect(h.agents.stats()).toMatchObject({ queued: 0, timers: 0 });
    t1.end();
  });

  it('W1: a completion after the window closed opens the next window and the next notice', async () => {
    const clock = new SimulatedClock();
    h = agentHarness({ clock, quietWindowMs: 50 });
    const notices: Notice[] = [];
    const d = heldDriver({ autoClaim: true, autoEnd: true });
    const agent = h.agents.create({
      sessionId: 'two-windows',
      wake: 'quiet',
      onTurn: d.onTurn,
      onNotice: (n) => void notices.push(n),
    });
    for (const command of ['exit 0', 'exit 1']) {
      const job = await h.background(agent, command);
      await settle(h.jobs, agent.owner, job.id);
      await waitFor(() => h!.agents.stats().queued === 1, `${command} queued`);
      clock.increment(50);
      await waitFor(
        () => notices.length > 0 && notices.at(-1)!.jobs[0]!.id === job.id,
        `${command} delivered`,
      );
    }
    expect(notices.map((n) => n.jobs.length)).toEqual([1, 1]);
    expect(agent.status().pendingStep).toBe(2);
  });

  it('W1: a failing delivery surfaces on the error path, is not retried, and the job stays queryable', async () => {
    h = agentHarness({ quietWindowMs: 1 });
    const d = heldDriver({ autoClaim: true });
    const attempts: string[][] = [];
    const agent = h.agents.create({
      sessionId: 'fails',
      onTurn: d.onTurn,
      onNotice: (notice) => {
        attempts.push(notice.jobs.map((j) => j.id));
        if (attempts.length === 1) throw new Error('transcript is read-only');
      },
    });
    const lost = await h.background(agent, 'exit 7');
    await waitFor(() => h!.errors.length === 1, 'the delivery failure');
    expect(h.errors[0]).toMatchObject({ agent: 'agent:fails:1', stage: 'delivery', jobIds: [lost.id] });
    expect((h.errors[0]!.error as Error).message).toBe('transcript is read-only');
    // Not faked as delivered: no turn, nothing in the inbox; the facts are still there.
    expect(agent.status()).toMatchObject({ phase: 'idle', turns: 0, pendingStep: 0, pendingTurn: 0 });
    expect(await h.jobs.list(agent.owner)).toMatchObject([
      { id: lost.id, state: 'failed', exitCode: 7, isTerminal: true },
    ]);
    // The next completion is delivered normally; the failed one is never attempted again.
    const next = await h.background(agent, 'exit 0');
    const t1 = await d.turn(1);
    expect(noticeJobIds(t1.batches[0]!)).toEqual([next.id]);
    t1.end();
    expect(attempts).toEqual([[lost.id], [next.id]]);
  });
});

describe('completion router over the job service', () => {
  it('W1: a completion racing the router’s subscription is delivered exactly once, at every microtask offset', async () => {
    const jh = jobHarness();
    try {
      for (let offset = 0; offset < 12; offset++) {
        const lease = jh.owners.agent();
        const job = manualJob();
        const info = await jh.jobs.start(lease.token, job.spec);
        const clock = new SimulatedClock();
        const delivered: JobInfo[][] = [];
        const counts = { listeners: 0 };
        const record = { lease } as unknown as AgentRecord;
        const router = createActor(
          completionRouterMachine.provide({
            actors: {
              completions: fromCallback<RouterMachineEvent, { readonly publication: string }>(
                ({ sendBack }) =>
                  subscribeCompletions({ jobs: jh.jobs }, record, counts, (completion) =>
                    sendBack({ type: 'COMPLETED', completion }),
                  ),
              ),
              deliver: fromPromise(async ({ input }) => {
                delivered.push([...input.notice.jobs]);
              }),
            },
          }),
          { input: { id: 'router:race:1', publication: 'agent:race:1', windowMs: 10 }, clock },
        );
        job.finish();
        await tick(offset);
        router.start();
        await settle(jh.jobs, lease.token, info.id);
        await tick(20);
        clock.increment(10);
        await tick(20);
        expect(
          delivered.map((batch) => batch.map((j) => j.id)),
          `offset ${offset}`,
        ).toEqual([[info.id]]);
        expect(router.getSnapshot().context.claimed).toEqual([`job:${info.id}`]);
        router.send({ type: 'CLOSE' });
        expect(counts.listeners).toBe(0);
      }
    } finally {
      await jh.close();
    }
  });
});
