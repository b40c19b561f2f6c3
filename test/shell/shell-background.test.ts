import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime, TetherError } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses, readProcStat } from '../../src/subprocess/proc.js';

let rt: Runtime;
let lease: OwnerLease;

beforeEach(async () => {
  rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 300, drainMs: 200 } });
  lease = rt.owners.host();
});

afterEach(async () => {
  await rt.dispose();
});

// Reads a job's output to its end (J5: the cursor moves forward, nothing twice).
async function readAll(jobId: string): Promise<string> {
  let text = '';
  let cursor = 0;
  for (;;) {
    const page = await rt.jobs.read(lease.token, jobId, cursor);
    text += page.text;
    cursor = page.cursor;
    if (page.done) return text;
    await rt.jobs.wait(lease.token, jobId, 1_000);
  }
}

describe('rt.shell.background', () => {
  it('C3: returns the job id once the registry owns it; output and exit are the job’s facts', async () => {
    const info = await rt.shell.background(lease.token, {
      command: 'echo one; sleep 0.2; echo two >&2; exit 4',
    });
    expect(info).toMatchObject({
      kind: 'shell',
      label: 'echo one; sleep 0.2; echo two >&2; exit 4',
      state: 'running',
    });
    expect(await rt.jobs.wait(lease.token, info.id, 30_000)).toBe(true);
    const [done] = await rt.jobs.list(lease.token);
    expect(done).toMatchObject({ id: info.id, state: 'failed', exitCode: 4, isTerminal: true });
    expect(await readAll(info.id)).toBe('one\ntwo\n');
  });

  it('J5: a background command’s text is decoded exactly: characters split across reads, 4-byte sequences, invalid bytes as U+FFFD', async () => {
    // 'é' (C3 A9) and '😀' (F0 9F 98 80) are split between two writes 50 ms apart; FF is invalid.
    const info = await rt.shell.background(lease.token, {
      command:
        "printf 'caf\\303'; sleep 0.05; printf '\\251 \\360\\237'; sleep 0.05; printf '\\230\\200 \\377 end'",
    });
    expect(await readAll(info.id)).toBe('café 😀 \uFFFD end');
  });

  it('J5: ASCII floods kept as bytes read back exactly, also right after a split or lone character', async () => {
    // 40 000 ASCII bytes per write (kept as bytes until read), between them 'é' split across
    // writes and a lone lead byte (C3) whose U+FFFD must stay where it was, not after the flood.
    const info = await rt.shell.background(lease.token, {
      command:
        "a=$(head -c 40000 /dev/zero | tr '\\0' a); printf '%s\\303' \"$a\"; sleep 0.05; printf '\\251%s' \"$a\"; " +
        "sleep 0.05; printf '\\303'; sleep 0.05; printf '%s' \"$a\"; sleep 0.05; printf '%s!' \"$a\"",
    });
    const a = 'a'.repeat(40_000);
    expect(await readAll(info.id)).toBe(`${a}é${a}\uFFFD${a}${a}!`);
  });

  it('C3: an aborted signal starts nothing', async () => {
    const err = await rt.shell
      .background(lease.token, { command: 'touch /tmp/tether-c3-never', signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect((err as TetherError).code).toBe('ABORTED');
    expect(await rt.jobs.list(lease.token)).toEqual([]);
  });

  it('C3: a spawn failure registers nothing and keeps the capacity', async () => {
    const err = await rt.shell
      .background(lease.token, { command: 'true', cwd: '/no/such' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherError);
    expect((err as TetherError).code).toBe('CWD_NOT_FOUND');
    expect(await rt.jobs.list(lease.token)).toEqual([]);
  });

  it('J4: the 9th running background command fails with JOB_LIMIT and spawns nothing', async () => {
    for (let i = 0; i < 8; i++) await rt.shell.background(lease.token, { command: 'sleep 1000' });
    // A child that is still exec'ing shows no marker (or, mid-exec, none readable): count once
    // all eight are `sleep` itself and show theirs.
    const sleeping = () =>
      listTaggedProcesses(treeIdPrefix()).filter((pid) => readProcStat(pid)?.comm === 'sleep').length;
    for (let i = 0; i < 200 && sleeping() < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const before = listTaggedProcesses(treeIdPrefix()).length;
    // Should it fail: which jobs ran and what became of them says why.
    expect(before, JSON.stringify(await rt.jobs.list(lease.token))).toBe(8);
    const err = await rt.shell.background(lease.token, { command: 'sleep 1000' }).catch((e: unknown) => e);
    expect((err as TetherError).code).toBe('JOB_LIMIT');
    expect(listTaggedProcesses(treeIdPrefix()).length).toBe(before);
  });

  it('J7: kill interrupts the foreground group first, then ends the tree', async () => {
    const info = await rt.shell.background(lease.token, {
      command: 'trap "echo interrupted; exit 130" INT; echo ready; while :; do sleep 0.05; done',
    });
    while (!(await rt.jobs.read(lease.token, info.id, 0, 100)).text.includes('ready')) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await rt.jobs.kill(lease.token, info.id)).toBe('requested');
    expect(await rt.jobs.wait(lease.token, info.id, 30_000)).toBe(true);
    const [killed] = await rt.jobs.list(lease.token);
    expect(killed).toMatchObject({ state: 'killed', cancelRequested: true });
    expect((await rt.jobs.read(lease.token, info.id, 6)).text).toContain('interrupted');
    expect(await rt.jobs.kill(lease.token, info.id)).toBe('already_stopped');
  });

  // C3's timeout, J7 and J8 with /proc checks of the tree: shell-background-tree.test.ts.
  it('S4: what a finished background command leaves behind is swept', async () => {
    const info = await rt.shell.background(lease.token, {
      command: 'setsid sleep 1000 >/dev/null 2>&1 & echo bye',
    });
    expect(await rt.jobs.wait(lease.token, info.id, 30_000)).toBe(true);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });

  it('D2: rt.dispose ends running background jobs and later calls fail with RUNTIME_DISPOSED', async () => {
    await rt.shell.background(lease.token, { command: 'sleep 1000' });
    await rt.shell.background(lease.token, { command: 'trap "" TERM INT; sleep 1000' });
    await rt.dispose();
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    const err = await rt.shell.run({ command: 'true' }).catch((e: unknown) => e);
    expect((err as TetherError).code).toBe('RUNTIME_DISPOSED');
  });

  it('O2: a retired host lease fails closed', async () => {
    lease.retire();
    const err = await rt.shell.background(lease.token, { command: 'true' }).catch((e: unknown) => e);
    expect((err as TetherError).code).toBe('OWNER_RETIRED');
  });

  it('O2, D1: retiring a host lease reclaims what it started — terminals and jobs, to verified-dead trees', async () => {
    const other = rt.owners.host();
    const kept = await rt.shell.background(other.token, { command: 'sleep 1000' });
    await rt.shell.background(lease.token, { command: 'sleep 1000 & setsid sleep 1000 & wait' });
    const t = await rt.terminals.open(lease.token);
    await rt.terminals.execute(lease.token, t.id, 'sleep 1000 & setsid sleep 1000 &');
    lease.retire(); // no drainOwner call: the runtime reclaims in the background
    expect(lease.retired).toBe(true);
    for (let i = 0; i < 1_000 && rt.terminals.stats().open + rt.jobs.stats().running > 1; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(rt.terminals.stats().open).toBe(0);
    expect(rt.jobs.stats().running).toBe(1); // only the other owner's job
    await rt.jobs.drainOwner(lease.token); // awaits the same reclaim; nothing left
    const [alive] = await rt.jobs.list(other.token);
    expect(alive).toMatchObject({ id: kept.id, state: 'running' });
    await rt.jobs.drainOwner(other.token);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });
});
