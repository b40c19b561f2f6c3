import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Fact, type Runtime } from '../../src/index.js';
import { createFactStream, REPLAY_FACTS } from '../../src/observe/fact-stream.js';
import { wakeSignal } from '../support/signal.js';

let rt: Runtime | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await rt?.dispose();
  rt = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const tmp = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'tether-observe-'));
  dirs.push(dir);
  return dir;
};

// Collects facts until `until` matches one; resolves with everything seen up to it.
function collect(runtime: Runtime, until: (f: Fact) => boolean, options = {}) {
  const seen: Fact[] = [];
  const [done, finish] = wakeSignal();
  const stop = runtime.observe((fact) => {
    seen.push(fact);
    if (until(fact)) finish();
  }, options);
  return {
    seen,
    done: done.then(() => {
      stop();
      return seen;
    }),
  };
}

describe('rt.observe (the fact stream)', () => {
  it('V1: a late observer with replay gets the newest REPLAY_FACTS facts, oldest first, also after close', () => {
    const stream = createFactStream();
    const seqs = (): number[] => {
      const seen: number[] = [];
      stream.observe((fact) => seen.push(fact.seq), { replay: true })();
      return seen;
    };
    for (let i = 0; i < 5; i++) stream.emit({ type: 'runtime.disposing' });
    expect(seqs()).toEqual([1, 2, 3, 4, 5]);
    const total = REPLAY_FACTS * 2 + 7; // past the bound twice, and not at a multiple of it
    for (let i = 5; i < total; i++) stream.emit({ type: 'runtime.disposing' });
    const newest = Array.from({ length: REPLAY_FACTS }, (_, i) => total - REPLAY_FACTS + 1 + i);
    expect(seqs()).toEqual(newest);
    stream.close();
    expect(seqs()).toEqual(newest);
  });

  it('V1: a job is told as started then ended with its state, exit code and duration, in seq order', async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    const lease = rt.owners.host();
    const ended = collect(rt, (f) => f.type === 'job.ended');
    const job = await rt.shell.background(lease.token, { command: 'echo hi; exit 3' });
    const facts = await ended.done;
    const mine = facts.filter((f) => 'actor' in f && f.actor === `job:${job.id}`);
    // The final output tail is told when the registry frees the job's slot, just before its end.
    expect(mine.map((f) => f.type)).toEqual(['job.started', 'kill.verdict', 'job.output', 'job.ended']);
    expect(mine[0]).toMatchObject({
      v: 1,
      kind: 'shell',
      label: 'echo hi; exit 3',
      owner: expect.stringMatching(/^o\d+$/),
    });
    expect(mine[3]).toMatchObject({
      state: 'failed',
      exitCode: 3,
      signal: null,
      durationMs: expect.any(Number),
    });
    expect(mine[1]).toMatchObject({ status: 'quiescent', escaped: [] });
    expect(mine[2]).toMatchObject({ tail: 'hi\n' });
    for (const [i, fact] of facts.entries()) {
      expect(fact.runtime).toMatch(/^rt_/);
      expect(typeof fact.ts).toBe('number');
      if (i > 0) expect(fact.seq).toBeGreaterThan(facts[i - 1]!.seq);
    }
  });

  it('V1: terminals open, exit and close; agents are created, change phase, get notices and retire', async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    const runtime = rt;
    const all = collect(runtime, (f) => f.type === 'agent.retired');
    const [noticed, notice] = wakeSignal();
    const agent = runtime.agents.create({
      sessionId: 'watched',
      onTurn: async (turn) => {
        const items = turn.inbox.claim();
        if (turn.reason === 'user') await runtime.shell.background(agent.owner, { command: 'true' });
        if (items.some((i) => i.kind === 'notice')) notice();
      },
    });
    agent.say('go');
    await noticed;
    const t = await runtime.terminals.open(agent.owner);
    await runtime.terminals.send(agent.owner, t.id, 'exit 4\r', { timeoutMs: 10_000 });
    await agent.dispose();
    const facts = await all.done;
    const types = (actor: string) =>
      facts.filter((f) => 'actor' in f && f.actor === actor).map((f) => f.type);
    expect(types(`terminal:${t.id}`)).toEqual(
      expect.arrayContaining(['terminal.opened', 'terminal.exited', 'kill.verdict', 'terminal.closed']),
    );
    expect(facts.find((f) => f.type === 'terminal.exited')).toMatchObject({ exitCode: 4 });
    const agentFacts = types('agent:watched');
    expect(agentFacts[0]).toBe('agent.created');
    expect(agentFacts).toEqual(expect.arrayContaining(['agent.phase', 'notice.delivered', 'agent.retired']));
    const phases = facts.flatMap((f) => (f.type === 'agent.phase' ? [f.phase] : []));
    expect(phases).toEqual(expect.arrayContaining(['idle', 'running']));
    const delivered = facts.find((f) => f.type === 'notice.delivered');
    expect(delivered).toMatchObject({ actor: 'agent:watched', jobs: [expect.stringMatching(/^job:job_/)] });
  });

  it('V1: inspection events carry stable actor ids (job:, terminal:, agent:, router:), never x:N', async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    const lease = rt.owners.host();
    const all = collect(rt, (f) => f.type === 'job.ended', { inspection: true });
    const job = await rt.shell.background(lease.token, { command: 'true' });
    const facts = await all.done;
    const actors = new Set(facts.flatMap((f) => (f.type === 'inspect' ? [f.actor] : [])));
    expect(actors).toContain(`job:${job.id}`);
    expect(actors).toContain(`job:${job.id}/producer`);
    expect(actors).toContain('tether.jobs');
    const owner = [...actors].find((id) => /^tether\.jobs\/shard:\d+\/owner:o\d+$/.test(id)); // its job's parent
    expect(owner).toBeDefined();
    const shard = owner!.slice(0, owner!.indexOf('/owner:')); // the shard that holds it
    expect([...actors].filter((id) => id.startsWith('tether.jobs/')).sort()).toEqual([shard, owner].sort());
    for (const id of actors) expect(id).not.toMatch(/^x:\d+$/);
  });

  it('V1: the JSONL log holds every fact, with the runtime lifecycle, and no owner token', async () => {
    const path = join(tmp(), 'run.jsonl');
    const runtime = await createRuntime({ log: { path, inspection: true }, limits: { cleanupGraceMs: 200 } });
    const lease = runtime.owners.host();
    const job = await runtime.shell.background(lease.token, { command: 'echo logged' });
    await runtime.jobs.wait(lease.token, job.id, 10_000);
    await runtime.dispose();
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Fact);
    const types = lines.map((f) => f.type);
    expect(types[0]).toBe('runtime.started');
    expect(types).toEqual(
      expect.arrayContaining(['job.started', 'job.ended', 'inspect', 'runtime.disposing']),
    );
    expect(types.at(-1)).toBe('runtime.disposed');
    expect(readFileSync(path, 'utf8')).not.toMatch(/AgentOwnerToken/);
  });

  it('V1: createRuntime({ log }) with an unwritable path fails with INVALID_ARGUMENT', async () => {
    await expect(createRuntime({ log: join(tmp(), 'missing', 'dir', 'run.jsonl') })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/log: cannot write/),
    });
  });

  it('V1: a log on a disk that does not keep up drops facts past the bound and then says what it dropped', async () => {
    const fifo = join(tmp(), 'slow.jsonl');
    execFileSync('mkfifo', [fifo]);
    // A reader that holds the pipe open but reads nothing until told: the disk that stalls.
    const reader = openSync(fifo, 'r+');
    const runtime = await createRuntime({
      log: { path: fifo, maxPendingBytes: 64 * 1024 },
      limits: { cleanupGraceMs: 200 },
    });
    rt = runtime;
    const dropped = collect(runtime, (f) => f.type === 'log.dropped');
    const lease = runtime.owners.host();
    const big = 'x'.repeat(1900);
    // Job output tails (2,000 chars a fact) flood the log well past its 64 KiB bound (and the pipe's 64 KiB).
    for (let round = 0; round < 24; round++) {
      const jobs = await Promise.all(
        Array.from({ length: 8 }, () =>
          runtime.shell.background(lease.token, { command: `printf '${big}'` }),
        ),
      );
      await Promise.all(jobs.map((j) => runtime.jobs.wait(lease.token, j.id, 10_000)));
    }
    // Start reading: the pipe drains, and the log reports the drop.
    const drain = createReadStream('', { fd: reader });
    drain.resume();
    const facts = await dropped.done;
    const note = facts.find((f) => f.type === 'log.dropped');
    expect(note).toMatchObject({ dropped: expect.any(Number) });
    expect(note && note.type === 'log.dropped' && note.lastSeq >= note.firstSeq).toBe(true);
    await runtime.dispose();
    rt = undefined;
    drain.destroy();
  });
});
