import { chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { reapCommand } from '../../src/cli/reap-command.js';
import { createRuntime, TetherError } from '../../src/index.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { until } from '../support/waits.js';
import { crash } from './persist-child.js';
import { persistFixtures } from './persist-fixtures.js';

const { scratch, child, runtime } = persistFixtures();

const codeOf = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
const alive = (pid: number) => existsSync(`/proc/${pid}`);

describe('persisted runtime lifecycle (K6)', () => {
  it('K6: a second live runtime of the same name is PERSIST_IN_USE; the first keeps working', async () => {
    const stateDir = scratch();
    const { rt } = await runtime(stateDir, 'solo');
    const err = await createRuntime({ stateDir, persist: { name: 'solo' } }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('PERSIST_IN_USE');
    expect(String((err as Error).message)).toMatch(/in use by a live runtime \(pid \d+\)/);
    const owner = rt.owners.host().token;
    const job = await rt.shell.background(owner, { command: 'echo still-mine' });
    await rt.jobs.wait(owner, job.id, 10_000);
    expect((await rt.jobs.read(owner, job.id, 0)).text).toBe('still-mine\n');
    // Another name is another helper.
    const other = await createRuntime({ stateDir, persist: { name: 'solo-2' } });
    await other.dispose();
  });

  it('K6: the name is free again once its runtime died (SIGKILL)', async () => {
    const stateDir = scratch();
    const old = await child({ stateDir, name: 'again', lingerMs: 20_000, jobs: [] });
    await crash(old);
    const { rt } = await runtime(stateDir, 'again');
    expect(await rt.resumable()).toEqual([]);
  });

  it('K6: bad persist options are INVALID_ARGUMENT saying what is wrong', async () => {
    const stateDir = scratch();
    const cases: [unknown, RegExp][] = [
      [{}, /persist.*name/],
      [{ name: '../up' }, /persist\.name must be 1-64 letters/],
      [{ name: '' }, /persist\.name/],
      [{ name: 'ok', lingerMs: 0 }, /lingerMs must be an integer >= 1/],
      [{ name: 'ok', lingerMs: 1.5 }, /lingerMs must be an integer/],
      [{ name: 'ok', other: 1 }, /unknown option 'persist\.other'/],
      ['ok', /'persist' must be an object/],
    ];
    for (const [persist, message] of cases) {
      const err = await createRuntime({ stateDir, persist: persist as never }).catch((e: unknown) => e);
      expect(codeOf(err), JSON.stringify(persist)).toBe('INVALID_ARGUMENT');
      expect((err as Error).message, JSON.stringify(persist)).toMatch(message);
    }
    const provider = { name: 'x', spawn() {}, spawnTerminal() {} } as never;
    const err = await createRuntime({ stateDir, persist: { name: 'ok' }, provider }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('INVALID_ARGUMENT');
    expect((err as Error).message).toMatch(/cannot be combined with provider/);
    expect(existsSync(join(stateDir, 'persist'))).toBe(false);
  });

  it("K6: another user's helper directory is refused (STATE_UNTRUSTED), its socket never connected", async () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0); // needs chown
    const stateDir = scratch();
    const dir = join(stateDir, 'persist', 'theirs');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chownSync(dir, 65534, 65534);
    const err = await createRuntime({ stateDir, persist: { name: 'theirs' } }).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('STATE_UNTRUSTED');
    expect((err as Error).message).toMatch(/belongs to uid 65534/);
    expect(existsSync(join(dir, 'helper-3.sock'))).toBe(false);
  });

  it('K6: a tree nobody adopts is killed lingerMs after its runtime died, with a kernel verdict; nothing is left', async () => {
    const stateDir = scratch();
    const old = await child({
      stateDir,
      name: 'linger',
      lingerMs: 1500,
      jobs: ['sleep 1000', 'echo kept; sleep 1000'],
    });
    await crash(old);
    const { rt, facts } = await runtime(stateDir, 'linger', 1500);
    const listed = await rt.resumable();
    expect(listed.map((t) => t.id).sort()).toEqual([...old.ready.jobs].sort());
    const owner = rt.owners.host().token;
    const kept = await rt.jobs.adopt(owner, old.ready.jobs[1]!);
    const dropped = listed.find((t) => t.id === old.ready.jobs[0])!;
    expect(alive(dropped.pid)).toBe(true);
    const verdict = await until(
      'the kill verdict of the unadopted job',
      () => facts.find((f) => f.type === 'kill.verdict' && f.actor === `job:${dropped.id}`),
      (f) => f !== undefined,
    );
    expect(verdict).toMatchObject({ status: 'quiescent' });
    expect(['cgroup', 'proc']).toContain((verdict as { proof: string }).proof);
    expect(alive(dropped.pid)).toBe(false);
    expect(await rt.resumable()).toEqual([]);
    // The adopted one lives on with its owner.
    expect((await rt.jobs.list(owner)).find((j) => j.id === kept.id)?.state).toBe('running');
    expect((await rt.jobs.read(owner, kept.id, 0)).text).toBe('kept\n');
    const daemon = Number(readFileSync(join(stateDir, 'persist', 'linger', 'helper.pid'), 'utf8'));
    await rt.dispose();
    expect(alive(daemon)).toBe(false);
    expect(existsSync(join(stateDir, 'persist', 'linger'))).toBe(false);
    expect(listTaggedProcesses('persist.linger.')).toEqual([]);
  });

  it("K6: tether reap --name ends a persisted runtime's helper and every tree under it", async () => {
    const stateDir = scratch();
    const old = await child({
      stateDir,
      name: 'reapme',
      lingerMs: 60_000,
      jobs: ['sleep 1000', 'sleep 1000'],
    });
    await crash(old);
    expect(listTaggedProcesses('persist.reapme.').length).toBeGreaterThan(0);
    const out: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    try {
      expect(await reapCommand(['--state-dir', stateDir, '--name', 'reapme', '--grace', '300'])).toBe(0);
      expect(await reapCommand(['--state-dir', stateDir, '--name', 'reapme'])).toBe(0);
    } finally {
      write.mockRestore();
    }
    expect(out[0]).toMatch(/persisted runtime 'reapme': 2 tree\(s\) killed, verified dead; helper ended/);
    expect(out[1]).toMatch(/no helper of persisted runtime 'reapme' runs/);
    expect(listTaggedProcesses('persist.reapme.')).toEqual([]);
    expect(existsSync(join(stateDir, 'persist', 'reapme'))).toBe(false);
  });

  it('K6: with no runtime coming back, the helper kills everything after lingerMs and removes itself', async () => {
    const stateDir = scratch();
    const old = await child({ stateDir, name: 'alone', lingerMs: 800, jobs: ['sleep 1000'] });
    const dir = join(stateDir, 'persist', 'alone');
    const daemon = Number(readFileSync(join(dir, 'helper.pid'), 'utf8'));
    await crash(old);
    expect(listTaggedProcesses('persist.alone.').length).toBeGreaterThan(0);
    await until(
      'the helper gone',
      () => alive(daemon) || existsSync(dir),
      (left) => !left,
    );
    expect(listTaggedProcesses('persist.alone.')).toEqual([]);
  });
});
