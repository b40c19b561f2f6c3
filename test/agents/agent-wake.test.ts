import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/spawn-tree.js';
import { type AgentHarness, agentHarness, heldDriver, noticeJobIds } from './agent-harness.js';

let h: AgentHarness;
afterEach(async () => {
  await h?.close();
});

const kinds = (items: readonly { kind: string }[]) => items.map((i) => i.kind);

describe('agents: wake budget (W2–W5)', () => {
  it('W2: a notice while running lands in the current turn; no wake is spent', async () => {
    h = agentHarness();
    const d = heldDriver();
    const agent = h.agents.create({ sessionId: 'w2', onTurn: d.onTurn });
    agent.say('build it');
    const t1 = await d.turn(1);
    expect(t1.turn.reason).toBe('user');
    expect(kinds(t1.claim())).toEqual(['user']);
    const job = await h.background(agent, 'exit 0');
    await waitFor(() => t1.turn.inbox.pending > 0, 'the notice in the running turn');
    expect(agent.status()).toMatchObject({
      phase: 'running',
      turns: 1,
      wakes: 0,
      pendingStep: 1,
      pendingTurn: 0,
    });
    const items = t1.claim();
    expect(noticeJobIds(items)).toEqual([job.id]);
    expect(items[0]).toMatchObject({
      kind: 'notice',
      jobs: [{ id: job.id, state: 'succeeded', exitCode: 0 }],
    });
    t1.end();
    await waitFor(() => agent.phase === 'idle', 'idle after the turn');
    expect(agent.status()).toMatchObject({ turns: 1, wakes: 0 });
  });

  it('W3: an idle agent with the wakeup policy is woken by a notice', async () => {
    h = agentHarness();
    const d = heldDriver();
    const agent = h.agents.create({ sessionId: 'w3', onTurn: d.onTurn });
    expect(agent.phase).toBe('idle');
    const job = await h.background(agent, 'exit 2');
    const t1 = await d.turn(1);
    expect(t1.turn.reason).toBe('notice');
    expect(agent.status()).toMatchObject({ phase: 'running', wakes: 1 });
    expect(t1.claim()).toMatchObject([
      { kind: 'notice', jobs: [{ id: job.id, state: 'failed', exitCode: 2 }] },
    ]);
    t1.end();
  });

  it.each([3, 1])(
    'W3: with maxWakes %i, the next consecutive notice is a next-step injection that does not wake',
    async (maxWakes) => {
      h = agentHarness();
      const d = heldDriver({ autoClaim: true });
      const agent = h.agents.create({ sessionId: 'w3-budget', maxWakes, onTurn: d.onTurn });
      for (let n = 1; n <= maxWakes; n++) {
        await h.background(agent, 'exit 0');
        const t = await d.turn(n);
        expect(t.turn.reason).toBe('notice');
        t.end();
        await waitFor(() => agent.phase === 'idle', `idle after wake ${n}`);
        expect(agent.status().wakes).toBe(n);
      }
      const injected = await h.background(agent, 'exit 0');
      await waitFor(() => agent.status().pendingStep === 1, 'the injected notice');
      expect(agent.status()).toMatchObject({
        phase: 'idle',
        turns: maxWakes,
        wakes: maxWakes,
        pendingTurn: 0,
      });
      // The injection is delivered with the next turn, which only user input starts now.
      agent.say('what happened?');
      const next = await d.turn(maxWakes + 1);
      expect(next.turn.reason).toBe('user');
      expect(kinds(next.batches[0]!)).toEqual(['notice', 'user']);
      expect(noticeJobIds(next.batches[0]!)).toEqual([injected.id]);
      next.end();
    },
  );

  it('W4: with the quiet policy an idle agent only queues notices; while running they reach the next step', async () => {
    h = agentHarness();
    const d = heldDriver();
    const agent = h.agents.create({ sessionId: 'w4', wake: 'quiet', onTurn: d.onTurn });
    const first = await h.background(agent, 'exit 0');
    await waitFor(() => agent.status().pendingStep === 1, 'the queued notice');
    expect(agent.status()).toMatchObject({ phase: 'idle', turns: 0, wakes: 0 });
    agent.say('go on');
    const t1 = await d.turn(1);
    expect(t1.turn.reason).toBe('user');
    const items = t1.claim();
    expect(kinds(items)).toEqual(['notice', 'user']);
    expect(noticeJobIds(items)).toEqual([first.id]);
    const second = await h.background(agent, 'exit 0');
    await waitFor(() => t1.turn.inbox.pending === 1, 'the notice in the running turn');
    expect(noticeJobIds(t1.claim())).toEqual([second.id]);
    t1.end();
    await waitFor(() => agent.phase === 'idle', 'idle');
    expect(agent.status()).toMatchObject({ turns: 1, wakes: 0 });
  });

  it('W5: claimed user input resets the wake budget; claimed notices do not', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'w5', maxWakes: 2, onTurn: d.onTurn });
    for (let n = 1; n <= 2; n++) {
      await h.background(agent, 'exit 0');
      (await d.turn(n)).end();
      await waitFor(() => agent.phase === 'idle', `idle after wake ${n}`);
    }
    // Two notices were claimed: the budget is spent, the third notice does not wake.
    expect(agent.status().wakes).toBe(2);
    await h.background(agent, 'exit 0');
    await waitFor(() => agent.status().pendingStep === 1, 'the injected notice');
    expect(agent.phase).toBe('idle');
    agent.say('carry on');
    const t3 = await d.turn(3);
    expect(kinds(t3.batches[0]!)).toEqual(['notice', 'user']);
    expect(agent.status().wakes).toBe(0);
    t3.end();
    await waitFor(() => agent.phase === 'idle', 'idle after the user turn');
    await h.background(agent, 'exit 0');
    const t4 = await d.turn(4);
    expect(t4.turn.reason).toBe('notice');
    expect(agent.status().wakes).toBe(1);
    t4.end();
  });

  it('W5: user input that is never claimed does not reset the budget', async () => {
    h = agentHarness();
    const d = heldDriver();
    const agent = h.agents.create({ sessionId: 'w5-unclaimed', maxWakes: 1, onTurn: d.onTurn });
    await h.background(agent, 'exit 0');
    const t1 = await d.turn(1);
    t1.claim();
    t1.end();
    await waitFor(() => agent.phase === 'idle', 'idle after the wake');
    agent.say('hello?');
    const t2 = await d.turn(2);
    expect(t2.turn.reason).toBe('user');
    t2.end(); // the driver never claimed the user input
    await waitFor(() => agent.phase === 'idle', 'idle after the unclaimed turn');
    expect(agent.status()).toMatchObject({ wakes: 1, pendingTurn: 1 });
    await h.background(agent, 'exit 0');
    await waitFor(() => agent.status().pendingStep === 1, 'the injected notice');
    expect(agent.status()).toMatchObject({ phase: 'idle', turns: 2, wakes: 1 });
  });

  it('W2: user input the turn did not claim starts the next turn when it ends', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'followup', onTurn: d.onTurn });
    agent.say('first');
    const t1 = await d.turn(1);
    agent.say('second');
    expect(t1.turn.inbox.pending).toBe(1);
    t1.end();
    const t2 = await d.turn(2);
    expect(t2.turn.reason).toBe('user');
    expect(t2.batches[0]).toMatchObject([{ kind: 'user', text: 'second' }]);
    t2.end();
  });

  it('W3: notices that arrived during a turn and were not claimed wake a follow-up turn, spending a wake', async () => {
    h = agentHarness();
    const d = heldDriver();
    const agent = h.agents.create({ sessionId: 'late-notice', onTurn: d.onTurn });
    agent.say('start');
    const t1 = await d.turn(1);
    t1.claim();
    const job = await h.background(agent, 'exit 0');
    await waitFor(() => t1.turn.inbox.pending === 1, 'the notice');
    t1.end();
    const t2 = await d.turn(2);
    expect(t2.turn.reason).toBe('notice');
    expect(agent.status().wakes).toBe(1);
    expect(noticeJobIds(t2.claim())).toEqual([job.id]);
    t2.end();
  });

  it('a turn that throws is published on the error path and the agent returns to idle', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'crash', onTurn: d.onTurn });
    agent.say('explode');
    (await d.turn(1)).fail(new Error('driver broke'));
    await waitFor(() => agent.phase === 'idle' && h.errors.length === 1, 'idle with the error reported');
    expect(h.errors[0]).toMatchObject({ agent: 'agent:crash:1', sessionId: 'crash', stage: 'turn' });
    expect((h.errors[0]!.error as Error).message).toBe('driver broke');
    agent.say('again');
    const t2 = await d.turn(2);
    expect(t2.batches[0]).toMatchObject([{ kind: 'user', text: 'again' }]);
    t2.end();
  });

  it('a claim from a turn that is over is refused; the current turn keeps its input', async () => {
    h = agentHarness();
    const d = heldDriver({ autoClaim: true });
    const agent = h.agents.create({ sessionId: 'stale', onTurn: d.onTurn });
    agent.say('one');
    const t1 = await d.turn(1);
    t1.end();
    await waitFor(() => agent.phase === 'idle', 'idle');
    expect(() => t1.turn.inbox.claim()).toThrow(/turn 1 is over/);
    agent.say('two');
    const t2 = await d.turn(2);
    expect(t2.batches[0]).toMatchObject([{ kind: 'user', text: 'two' }]);
    t2.end();
  });
});
