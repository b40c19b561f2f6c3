import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JobInfo } from '../../src/jobs/job-types.js';
import type { AgentOwnerToken } from '../../src/owners/owner-token.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { failsWith, type JobHarness, jobHarness } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

// Model-based test of the job service (J2–J8) over random operation sequences by 3 owners.
// Runs are real processes, so the count is modest for CI: NUM_RUNS runs of up to
// MAX_COMMANDS commands each (raise locally with TETHER_PROPERTY_RUNS=200).
const NUM_RUNS = Number(process.env.TETHER_PROPERTY_RUNS ?? 50);
const MAX_COMMANDS = 18;
const OWNERS = 3;
const LIMIT = 2;

/** What the model knows of one job; timing of a natural exit is unknown, so `terminal` is "known terminal". */
interface ModelJob {
  readonly id: string;
  readonly owner: number;
  /**
   * `hold` runs until killed; `quick` prints and exits with `exitCode`; `loud` prints a
   * full-unicode text longer than its retention (J5: reads lose its oldest part) and exits.
   */
  readonly kind: 'hold' | 'quick' | 'loud';
  readonly exitCode: number;
  /** Everything the job can print; what is read must be a prefix of it. */
  readonly text: string;
  cursor: number;
  received: string;
  terminal: boolean;
  killRequested: boolean;
  /** A drain reached it while the model did not know it terminal: it may have been killed. */
  drained: boolean;
  /** A read of it reported a hole (J5). */
  lossy: boolean;
}
interface Model {
  readonly jobs: ModelJob[];
  tags: number;
}
interface Real {
  readonly h: JobHarness;
  readonly owners: AgentOwnerToken[];
  /** Completions per job of the listener subscribed from the start (must end at exactly 1). */
  readonly first: Map<string, number>;
  /** Completions per job of listeners subscribed mid-run (at most 1 each). */
  readonly late: Map<string, number>[];
}
type Cmd = fc.AsyncCommand<Model, Real>;

const ownJobs = (m: Model, owner: number) => m.jobs.filter((j) => j.owner === owner);
// A hold job nobody stopped is running, whatever the timing.
const holdsForever = (job: ModelJob): boolean => job.kind === 'hold' && !job.killRequested && !job.drained;
const pick = <T>(items: readonly T[], n: number): T | undefined =>
  items.length ? items[n % items.length] : undefined;

// A listed job must agree with what the model knows; learns terminality from it.
function checkInfo(job: ModelJob, info: JobInfo): void {
  if (job.terminal) expect(info.isTerminal, job.id).toBe(true);
  if (holdsForever(job)) expect(info).toMatchObject({ state: 'running', cancelRequested: false });
  if (job.killRequested && !info.isTerminal) expect(info.cancelRequested).toBe(true);
  if (info.isTerminal) {
    job.terminal = true;
    const natural = job.exitCode === 0 ? 'succeeded' : 'failed';
    const allowed =
      job.killRequested || (job.drained && job.kind === 'hold')
        ? ['killed']
        : job.drained
          ? ['killed', natural]
          : [natural];
    expect(allowed, job.id).toContain(info.state);
    if (info.state !== 'killed') expect(info.exitCode).toBe(job.exitCode);
  }
}

/** J5: what a loud job retains (characters); its text is always longer. */
const LOUD_RETENTION = 16;

const start = (owner: number, kind: 'hold' | 'quick' | 'loud', exitCode: number, loud: string): Cmd => ({
  check: () => true,
  async run(m, r) {
    const tag = `t${++m.tags}`;
    const text = kind === 'hold' ? `hold-${tag}\n` : kind === 'quick' ? `quick-${tag}\n` : `${tag}:${loud}`;
    const b64 = Buffer.from(text).toString('base64');
    const script =
      kind === 'hold'
        ? `printf '${text}'; exec sleep 300`
        : kind === 'quick'
          ? `printf '${text}'; exit ${exitCode}`
          : `printf '%s' '${b64}' | base64 -d; exit ${exitCode}`;
    const mine = ownJobs(m, owner);
    const max = mine.filter((j) => !j.terminal).length;
    const min = mine.filter((j) => !j.terminal && holdsForever(j)).length;
    try {
      const options = kind === 'loud' ? { outputCap: LOUD_RETENTION } : {};
      const info = await r.h.jobs.start(r.owners[owner]!, processJob(script, options).spec);
      expect(min).toBeLessThan(LIMIT);
      m.jobs.push({
        id: info.id,
        owner,
        kind,
        exitCode,
        text,
        cursor: 0,
        received: '',
        terminal: false,
        killRequested: false,
        drained: false,
        lossy: false,
      });
    } catch (err) {
      expect((err as { code?: string }).code, String(err)).toBe('JOB_LIMIT');
      coverage.limitRefusals++;
      expect(max).toBeGreaterThanOrEqual(LIMIT);
    }
  },
  toString: () =>
    `start(${owner}, ${kind}, ${exitCode}${kind === 'loud' ? `, ${JSON.stringify(loud)}` : ''})`,
});

// Reads any job, as its owner (a read that only some owners could make would mostly be skipped).
const read = (n: number, maxChars: number): Cmd => ({
  check: (m) => m.jobs.length > 0,
  async run(m, r) {
    const job = pick(m.jobs, n)!;
    const page = await r.h.jobs.read(r.owners[job.owner]!, job.id, job.cursor, maxChars);
    // J5: a hole only where more was written than retained, said by `dropped` and `lossy`; what
    // follows the hole is the text itself, contiguous, from exactly where the hole ends.
    if (job.kind !== 'loud') expect(page.dropped).toBe(0);
    expect(page.lossy).toBe(page.dropped > 0);
    expect(page.cursor).toBe(job.cursor + page.dropped + page.text.length);
    expect(page.text, `${job.id} at ${job.cursor}+${page.dropped}`).toBe(
      job.text.slice(job.cursor + page.dropped, page.cursor),
    );
    if (page.dropped > 0) {
      job.lossy = true;
      coverage.lossyReads++;
    }
    job.received += page.text;
    job.cursor = page.cursor;
    if (page.done) {
      job.terminal = true;
      // Read to its end: everything, or (loud) exactly its last LOUD_RETENTION characters at least.
      if (!job.killRequested && !job.drained && job.kind !== 'loud') expect(job.received).toBe(job.text);
      if (!job.killRequested && !job.drained) expect(job.cursor).toBe(job.text.length);
    }
  },
  toString: () => `read(#${n}, ${maxChars})`,
});

const wait = (owner: number, n: number, timeoutMs: number): Cmd => ({
  check: (m) => ownJobs(m, owner).length > 0,
  async run(m, r) {
    const job = pick(ownJobs(m, owner), n)!;
    const terminal = await r.h.jobs.wait(r.owners[owner]!, job.id, timeoutMs);
    if (job.terminal) expect(terminal).toBe(true);
    if (holdsForever(job)) expect(terminal).toBe(false);
    if (terminal) job.terminal = true;
    expect(r.h.jobs.stats()).toMatchObject({ waiters: 0, timers: 0 });
  },
  toString: () => `wait(${owner}, #${n}, ${timeoutMs})`,
});

const kill = (owner: number, n: number): Cmd => ({
  check: (m) => ownJobs(m, owner).length > 0,
  async run(m, r) {
    const job = pick(ownJobs(m, owner), n)!;
    const result = await r.h.jobs.kill(r.owners[owner]!, job.id);
    if (job.terminal) expect(result).toBe('already_stopped');
    if (holdsForever(job)) expect(result).toBe('requested');
    if (result === 'requested') job.killRequested = true;
    else job.terminal = true;
  },
  toString: () => `kill(${owner}, #${n})`,
});

const list = (owner: number): Cmd => ({
  check: () => true,
  async run(m, r) {
    const infos = await r.h.jobs.list(r.owners[owner]!);
    const mine = ownJobs(m, owner);
    expect(infos.map((i) => i.id)).toEqual(mine.map((j) => j.id));
    for (const [i, job] of mine.entries()) checkInfo(job, infos[i]!);
  },
  toString: () => `list(${owner})`,
});

// J8: after drainOwner every job of the owner is terminal (and its tree gone).
async function drainAndCheck(m: Model, r: Real, owner: number): Promise<void> {
  for (const job of ownJobs(m, owner)) if (!job.terminal) job.drained = true;
  await r.h.jobs.drainOwner(r.owners[owner]!);
  const infos = await r.h.jobs.list(r.owners[owner]!);
  for (const [i, job] of ownJobs(m, owner).entries()) {
    expect(infos[i]!.isTerminal).toBe(true);
    checkInfo(job, infos[i]!);
  }
}

const drain = (owner: number): Cmd => ({
  check: () => true,
  run: (m, r) => drainAndCheck(m, r, owner),
  toString: () => `drain(${owner})`,
});

const crossOwner = (owner: number, n: number): Cmd => ({
  check: (m) => m.jobs.some((j) => j.owner !== owner),
  async run(m, r) {
    const job = pick(
      m.jobs.filter((j) => j.owner !== owner),
      n,
    )!;
    await failsWith(r.h.jobs.read(r.owners[owner]!, job.id, 0), 'JOB_NOT_FOUND');
    await failsWith(r.h.jobs.kill(r.owners[owner]!, job.id), 'JOB_NOT_FOUND');
  },
  toString: () => `crossOwner(${owner}, #${n})`,
});

const subscribeLate = (owner: number): Cmd => ({
  check: () => true,
  async run(_m, r) {
    const counts = new Map<string, number>();
    r.late.push(counts);
    r.h.jobs.onCompletion(r.owners[owner]!, (info) => {
      counts.set(info.id, (counts.get(info.id) ?? 0) + 1);
    });
  },
  toString: () => `subscribeLate(${owner})`,
});

/** Hard states the runs reached (asserted after all runs: a property that never reaches them proves nothing). */
const coverage = { lossyReads: 0, limitRefusals: 0 };

const owner = fc.nat(OWNERS - 1);
// Starts and reads weigh three times the rest: runs must reach full owners and lossy reads.
const commands = [
  fc
    .tuple(
      // Owner 0 starts most (2 in 3), so runs reach a full owner (J4) and not only spread jobs.
      fc.oneof(fc.constant(0), owner),
      fc.constantFrom('hold', 'quick', 'loud' as const),
      fc.constantFrom(0, 1, 3),
      // Full unicode (fast-check 4's default is ASCII): surrogate pairs and combining marks get cut.
      fc.string({ unit: 'grapheme', minLength: LOUD_RETENTION, maxLength: 60 }),
    )
    .map(([o, k, c, text]) => start(o, k, c, text)),
  fc.tuple(fc.nat(), fc.integer({ min: 1, max: 8 })).map(([n, c]) => read(n, c)),
  fc.tuple(owner, fc.nat(), fc.constantFrom(0, 5, 50)).map(([o, n, t]) => wait(o, n, t)),
  fc.tuple(owner, fc.nat()).map(([o, n]) => kill(o, n)),
  owner.map(list),
  owner.map(drain),
  fc.tuple(owner, fc.nat()).map(([o, n]) => crossOwner(o, n)),
  owner.map(subscribeLate),
];
commands.push(commands[0]!, commands[0]!, commands[1]!, commands[1]!);

describe('jobs (model-based)', () => {
  it('J2–J8: random start/read/wait/kill/list/drain by 3 owners match the model and end quiescent', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: MAX_COMMANDS, size: 'max' }), async (cmds) => {
        const h = jobHarness({ maxRunningPerOwner: LIMIT });
        const owners = Array.from({ length: OWNERS }, () => h.owners.agent().token);
        const real: Real = { h, owners, first: new Map(), late: [] };
        for (const token of owners) {
          h.jobs.onCompletion(token, (info) => {
            real.first.set(info.id, (real.first.get(info.id) ?? 0) + 1);
          });
        }
        const model: Model = { jobs: [], tags: 0 };
        try {
          await fc.asyncModelRun(() => ({ model, real }), cmds);
        } finally {
          // Quiescence after every run: each job terminal, no tagged process, nothing pending.
          for (let i = 0; i < OWNERS; i++) await drainAndCheck(model, real, i);
          expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
          await h.close();
        }
        for (const job of model.jobs) expect(real.first.get(job.id), job.id).toBe(1);
        for (const counts of real.late) for (const n of counts.values()) expect(n).toBe(1);
      }),
      {
        numRuns: NUM_RUNS,
        // Two runs that surely reach the hard states whatever the load: a loud job waited for to
        // its end, then read from 0 (lossy), and one owner starting past its cap (JOB_LIMIT).
        examples: [
          [[start(0, 'loud', 0, 'abcdefghijklmnopqrstuvwxyz0123456789'), wait(0, 0, 60_000), read(0, 8)]],
          [Array.from({ length: LIMIT + 1 }, () => start(0, 'hold', 0, ''))],
        ],
      },
    );
    expect(coverage.lossyReads).toBeGreaterThan(0);
    expect(coverage.limitRefusals).toBeGreaterThan(0);
  });
});
