import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type InboxItem, type Runtime, TetherError } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';
import { wakeSignal } from '../support/signal.js';
import { until } from '../support/waits.js';
import { QUIESCENT } from './agent-harness.js';

let rt: Runtime;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
});
afterEach(async () => {
  await rt.dispose();
});

const code = (err: unknown) => (err instanceof TetherError ? err.code : String(err));

describe('rt.agents (composition root)', () => {
  it('W3: a background job started by an agent wakes it when it completes', async () => {
    const seen: InboxItem[] = [];
    const [woken, woke] = wakeSignal();
    const agent = rt.agents.create({
      sessionId: 's1',
      onTurn: async (turn) => {
        const items = turn.inbox.claim();
        seen.push(...items);
        if (turn.reason === 'user') await rt.shell.background(agent.owner, { command: 'echo built; exit 2' });
        if (items.some((i) => i.kind === 'notice')) woke();
      },
    });
    agent.say('build it');
    await woken;
    const notice = seen.find((i) => i.kind === 'notice');
    expect(notice?.kind === 'notice' && notice.jobs[0]).toMatchObject({ state: 'failed', exitCode: 2 });
    await agent.dispose();
  });

  it('W1, W3: a terminal whose shell exits on its own wakes its idle agent with a notice carrying the exit', async () => {
    const notices: InboxItem[] = [];
    const [woken, woke] = wakeSignal();
    const agent = rt.agents.create({
      sessionId: 'term',
      onTurn: (turn) => {
        const items = turn.inbox.claim().filter((i) => i.kind === 'notice');
        notices.push(...items);
        if (turn.reason === 'notice') woke();
      },
    });
    const t = await rt.terminals.open(agent.owner);
    await rt.terminals.send(agent.owner, t.id, 'exit 4\r', { timeoutMs: 10_000 });
    await woken;
    expect(notices).toEqual([
      expect.objectContaining({
        kind: 'notice',
        jobs: [],
        terminals: [expect.objectContaining({ id: t.id, exitCode: 4, reason: 'exit' })],
      }),
    ]);
    expect(agent.status()).toMatchObject({ turns: 1, wakes: 1 });
    await agent.dispose();
  });

  it('R, W1: createRuntime validates its options by name; limits.quietWindowMs reaches the routers', async () => {
    for (const [options, message] of [
      [{ limits: { quietWindowMs: -1 } }, /limits\.quietWindowMs must be an integer >= 0/],
      [{ limits: { turnGraceMs: 1.5 } }, /limits\.turnGraceMs must be an integer >= 0/],
      [{ provider: { name: 'x', spawn: () => {} } }, /provider must be a SubprocessProvider/],
    ] as const) {
      const err = await createRuntime(options as never).catch((e: unknown) => e);
      expect(code(err)).toBe('INVALID_ARGUMENT');
      expect(String((err as Error).message)).toMatch(message);
    }
    // A window no test outlasts: nothing is delivered until a reload detaches the router, which
    // flushes what it holds at once (S5) — so the two completions share one notice whatever the load.
    const wide = await createRuntime({ limits: { cleanupGraceMs: 200, quietWindowMs: 600_000 } });
    try {
      const notices: number[] = [];
      const agent = wide.agents.create({
        sessionId: 'window',
        wake: 'quiet',
        onTurn: () => {},
        onNotice: (notice) => void notices.push(notice.jobs.length),
      });
      const first = await wide.shell.background(agent.owner, { command: 'true' });
      const second = await wide.shell.background(agent.owner, { command: 'sleep 0.1' });
      await wide.jobs.wait(agent.owner, first.id, 10_000);
      await wide.jobs.wait(agent.owner, second.id, 10_000);
      // Both completions reached the router and wait in its window (a proof, not a sleep).
      for (let i = 0; wide.stats().agents.queued < 2; i++) {
        if (i > 6_000) throw new Error(`the router never held both: ${JSON.stringify(wide.stats().agents)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(notices).toEqual([]); // the configured window holds them (the default 50 ms would not)
      await wide.reload();
      for (let i = 0; notices.length === 0 && i < 6_000; i++) await new Promise((r) => setTimeout(r, 10));
      expect(notices).toEqual([2]); // one notice for both
      expect(wide.stats().agents.queued).toBe(0);
    } finally {
      await wide.dispose();
    }
  });

  it('D1: agent.dispose retires the owner and drains its terminals and jobs to verified-dead trees', async () => {
    const agent = rt.agents.create({ sessionId: 's2', onTurn: () => {} });
    const t = await rt.terminals.open(agent.owner);
    await rt.terminals.execute(agent.owner, t.id, 'sleep 1000 & setsid sleep 1000 &');
    await rt.shell.background(agent.owner, { command: 'sleep 1000' });
    await agent.dispose();
    expect(agent.phase).toBe('retired');
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    expect(await rt.terminals.list(agent.owner).catch(code)).toBe('OWNER_RETIRED');
    expect(await rt.jobs.list(agent.owner).catch(code)).toBe('OWNER_RETIRED');
    expect(rt.terminals.stats().open).toBe(0);
  });

  it('D2, D3: rt.dispose ends every agent, job, terminal and worker; rt.stats() shows it', async () => {
    for (const sessionId of ['a', 'b']) {
      const agent = rt.agents.create({ sessionId, onTurn: () => {} });
      await rt.terminals.open(agent.owner);
      await rt.shell.background(agent.owner, { command: 'sleep 1000' });
    }
    expect((await rt.shell.run({ command: 'echo spilled' })).output).toBe('spilled\n');
    // `background` returns once the registry owns the job (its spawn may come later) and `open`
    // once the shell is forked (it carries the tree marker once it has exec'd): under load the
    // processes show a moment after these calls returned.
    const live = await until(
      'two shells and two sleeps are counted',
      () => rt.stats(),
      (s) => (s.processes ?? 0) >= 4,
    );
    expect(live.workers).toBeGreaterThanOrEqual(1); // the PTY worker (and the spill pool's)
    expect(live.agents).toMatchObject({ agents: 2, listeners: 2 });
    await rt.dispose();
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    // D3 in one snapshot: no process, worker, timer or waiter left anywhere.
    const stats = rt.stats();
    expect(stats).toMatchObject({ processes: 0, workers: 0, timers: 0, waiters: 0 });
    expect(stats.agents).toEqual(QUIESCENT);
    expect(stats.jobs).toMatchObject({ running: 0, starting: 0, waiters: 0, timers: 0, listeners: 0 });
    expect(stats.terminals).toEqual(TERMINALS_QUIESCENT);
  });

  it('O3: agent.tools run with the agent as the trusted owner and fail closed after dispose', async () => {
    const agent = rt.agents.create({ sessionId: 'tools', onTurn: () => {} });
    const ran = await agent.tools.call('bash', { command: 'echo from-tool', run_in_background: true });
    expect(ran.ok).toBe(true);
    const [job] = await rt.jobs.list(agent.owner);
    expect(job?.label).toBe('echo from-tool');
    const named = await agent.tools.call('job_list', { owner: 'someone-else' });
    expect(named).toMatchObject({ ok: false, code: 'INVALID_ARGUMENT' });
    await agent.dispose();
    expect(await agent.tools.call('job_list', {})).toMatchObject({ ok: false, code: 'OWNER_RETIRED' });
  });
});
