import { describe, expect, it } from 'vitest';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { until } from '../support/waits.js';
import { crash } from './persist-child.js';
import { persistFixtures } from './persist-fixtures.js';

const { scratch, child, runtime } = persistFixtures();

describe('adopting terminals and agent sessions (K6)', () => {
  it("K6, T6: an adopted terminal's screen shows what it showed, and its `cat` still gets a stdin_read proof", async () => {
    const stateDir = scratch();
    const old = await child({
      stateDir,
      name: 'term',
      lingerMs: 20_000,
      jobs: [],
      terminal: 'echo MARK-$((6*7)); cat',
    });
    const termId = old.ready.terminal!;
    await crash(old);
    const { rt, facts } = await runtime(stateDir, 'term');
    const [listed] = await rt.resumable();
    expect(listed).toMatchObject({ kind: 'terminal', id: termId, owner: 'host', state: 'running' });
    const owner = rt.owners.host().token;
    const info = await rt.terminals.adopt(owner, termId);
    expect(info).toMatchObject({ id: termId, cols: 80, rows: 24, state: 'idle' });
    const screen = await rt.terminals.screen(owner, termId);
    expect(screen.text).toMatch(/^MARK-42$/m);
    const sent = await rt.terminals.send(owner, termId, 'after-restart\r', { timeoutMs: 5000 });
    expect(sent.waitReason).toBe('stdin_read');
    await until(
      'cat echoes the line',
      async () => (await rt.terminals.screen(owner, termId)).text,
      (text) => (text.match(/after-restart/g) ?? []).length >= 2, // the tty's echo, then cat's
    );
    expect(facts.some((f) => f.type === 'terminal.adopted' && f.actor === `terminal:${termId}`)).toBe(true);
    await rt.terminals.close(owner, termId);
    await rt.dispose();
    expect(listTaggedProcesses('persist.term.')).toEqual([]);
  });

  it("K6: agents.create({ adopt: true }) adopts the trees of the previous runtime's agent of that session, and only those", async () => {
    const stateDir = scratch();
    const old = await child({
      stateDir,
      name: 'agents',
      lingerMs: 20_000,
      jobs: ['echo from-s1; sleep 1000'],
      session: 's1',
    });
    await crash(old);
    const { rt } = await runtime(stateDir, 'agents');
    const [listed] = await rt.resumable();
    expect(listed).toMatchObject({ kind: 'job', owner: 'session:s1' });
    const other = rt.agents.create({ sessionId: 's2', onTurn() {}, adopt: true });
    expect(await other.adopted).toEqual({ jobs: [], terminals: [] });
    const agent = rt.agents.create({ sessionId: 's1', onTurn() {}, adopt: true });
    const adopted = await agent.adopted!;
    expect(adopted.jobs.map((j) => j.id)).toEqual([old.ready.jobs[0]]);
    expect((await rt.jobs.read(agent.owner, old.ready.jobs[0]!, 0)).text).toBe('from-s1\n');
    expect(await rt.resumable()).toEqual([]);
    await agent.dispose(); // D1: its jobs are killed with it
    expect(listTaggedProcesses('persist.agents.')).toEqual([]);
  });
});
