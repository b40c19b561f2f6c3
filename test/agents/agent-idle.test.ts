import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type InboxItem, type Runtime, TetherError, type Turn } from '../../src/index.js';
import { QUIESCENT } from './agent-harness.js';

let rt: Runtime;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
});
afterEach(async () => {
  await rt.dispose();
});

const code = (err: unknown) => (err instanceof TetherError ? err.code : String(err));

// The TETHER_AGENT process warnings (the default error path) emitted while `run` runs.
async function agentWarnings(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (w: Error & { code?: string }) => {
    if (w.code === 'TETHER_AGENT') seen.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    await run();
    // process warnings are emitted on a later tick
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

// A promise and the function that resolves it (Node 20 has no Promise.withResolvers).
function gate(): [Promise<void>, () => void] {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return [opened, open];
}

describe('agent.idle() and unclaimed input (real runtime)', () => {
  it('R, W2: idle() resolves once the turn say() started has ended — it ran a real command through agent.tools', async () => {
    const seen: string[] = [];
    const agent = rt.agents.create({
      sessionId: 'idle-1',
      onTurn: async (turn) => {
        for (const item of turn.inbox.claim()) if (item.kind === 'user') seen.push(`user: ${item.text}`);
        const r = await turn.agent.tools.call('bash', { command: 'echo from-the-turn' });
        seen.push(r.ok ? r.text.trim() : `${r.code}: ${r.text}`);
      },
    });
    agent.say('run it');
    expect(agent.phase).toBe('running');
    await agent.idle();
    expect(agent.phase).toBe('idle');
    expect(seen).toEqual(['user: run it', expect.stringContaining('from-the-turn')]);
    await agent.idle(); // already idle: at once
    expect(await agent.dispose()).toEqual({ unclaimed: [] });
  });

  it('W2: idle() also waits for the turn that user input given during a turn starts when that turn ends', async () => {
    const [firstStarted, startedFirst] = gate();
    const [release, releaseFirst] = gate();
    const turns: string[][] = [];
    const agent = rt.agents.create({
      sessionId: 'idle-2',
      onTurn: async (turn: Turn) => {
        turns.push(turn.inbox.claim().map((i) => (i.kind === 'user' ? i.text : i.kind)));
        if (turn.number === 1) {
          startedFirst();
          await release;
        }
      },
    });
    agent.say('first');
    await firstStarted;
    const idle = agent.idle();
    agent.say('second'); // lands in the next step; the first turn does not claim it
    releaseFirst();
    await idle;
    expect(turns).toEqual([['first'], ['second']]);
    expect(agent.status()).toMatchObject({ phase: 'idle', turns: 2, pendingTurn: 0, pendingStep: 0 });
    await agent.dispose();
  });

  it('D1: input given to an agent disposed before its turn ran is reported — dispose() resolves with it and a warning says INPUT_UNCLAIMED', async () => {
    let ran = 0;
    const agent = rt.agents.create({
      sessionId: 'too-early',
      onTurn: () => {
        ran++;
      },
    });
    let disposal: { unclaimed: readonly InboxItem[] } | undefined;
    const warnings = await agentWarnings(async () => {
      agent.say('run the tests'); // the turn is due, but dispose comes first
      disposal = await agent.dispose();
    });
    expect(ran).toBe(0);
    expect(disposal).toEqual({ unclaimed: [{ kind: 'user', seq: 1, text: 'run the tests' }] });
    expect(warnings).toEqual([expect.stringMatching(/^agent:too-early:1: 1 user input\(s\) \(#1\)/)]);
    expect(warnings[0]).toContain('await agent.idle() before agent.dispose()');
    expect(await agent.dispose()).toBe(disposal); // idempotent: the same result
    expect(() => agent.say('again')).toThrow(TetherError);
  });

  it('D1: input that arrived during a turn and was never claimed is returned by dispose(); claimed input is not', async () => {
    const [started, start] = gate();
    const agent = rt.agents.create({
      sessionId: 'mid-turn',
      onTurn: async (turn) => {
        turn.inbox.claim();
        start();
        await new Promise((resolve) => turn.signal.addEventListener('abort', resolve, { once: true }));
      },
    });
    agent.say('claimed');
    await started;
    agent.say('never claimed');
    const idle = agent.idle().catch((err: unknown) => err);
    expect(rt.agents.stats().waiters).toBe(1); // the idle() waiter is counted (D3)
    const warnings = await agentWarnings(async () => {
      const { unclaimed } = await agent.dispose();
      expect(unclaimed).toEqual([{ kind: 'user', seq: 2, text: 'never claimed' }]);
    });
    expect(warnings).toHaveLength(1);
    // idle() does not hang: the agent was disposed before its turns finished
    const err = await idle;
    expect(code(err)).toBe('OWNER_RETIRED');
    expect(String(err)).toContain('dispose()');
    expect(code(await agent.idle().catch((e: unknown) => e))).toBe('OWNER_RETIRED');
    expect(rt.agents.stats()).toEqual(QUIESCENT);
  });

  it('D3: an idle() waiter ends with its signal (ABORTED) and leaves no waiter behind', async () => {
    const [started, start] = gate();
    const [release, releaseTurn] = gate();
    const agent = rt.agents.create({
      sessionId: 'aborted',
      onTurn: async (turn) => {
        turn.inbox.claim();
        start();
        await release;
      },
    });
    agent.say('go');
    await started;
    const ac = new AbortController();
    const waiting = agent.idle({ signal: ac.signal }).catch((err: unknown) => err);
    expect(rt.agents.stats().waiters).toBe(1);
    ac.abort();
    expect(code(await waiting)).toBe('ABORTED');
    expect(rt.agents.stats().waiters).toBe(0);
    expect(code(await agent.idle({ signal: ac.signal }).catch((e: unknown) => e))).toBe('ABORTED');
    releaseTurn();
    await agent.idle();
    expect(await agent.dispose()).toEqual({ unclaimed: [] });
  });
});
