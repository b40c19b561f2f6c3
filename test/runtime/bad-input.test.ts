import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, TetherError } from '../../src/index.js';
import { probeCgroup } from '../../src/subprocess/containment/cgroup-fs.js';
import { waitFor } from '../support/spawn-tree.js';
import { spawnerOf } from '../support/spawner-of.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const probe = probeCgroup();

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-bad-input-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function runtime(): Promise<Runtime> {
  const dir = scratch();
  const rt = await createRuntime({ stateDir: join(dir, 'state'), spillDir: join(dir, 'spill') });
  cleanups.push(() => rt.dispose());
  return rt;
}

// This process's runtime cgroups and the tree cgroups below them, now.
function ownCgroups(): string[] {
  if (!probe.ok) return [];
  return readdirSync(probe.self)
    .filter((n) => n.startsWith(`tether-${process.pid}-`))
    .flatMap((n) => [
      n,
      ...readdirSync(join(probe.self, n), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `${n}/${e.name}`),
    ]);
}

async function rejection(work: () => Promise<unknown>): Promise<unknown> {
  return work().then(
    () => new Error('it was accepted'),
    (err: unknown) => err,
  );
}

const SRC = fileURLToPath(new URL('../../dist/src/index.js', import.meta.url));

// Runs `body` against a fresh runtime module in a child (a hang there cannot hang vitest).
function inChild(body: string, timeoutMs = 15_000) {
  const script = `(async () => { const { createRuntime } = await import(${JSON.stringify(SRC)}); ${body} })().then(
    (v) => { console.log(JSON.stringify({ ok: v ?? null })); process.exit(0); },
    (e) => { console.log(JSON.stringify({ code: e.code ?? null, name: e.name, message: e.message })); process.exit(0); })`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: timeoutMs });
  return {
    timedOut: run.error !== undefined || run.signal !== null,
    out: run.stdout.trim(),
    stderr: run.stderr,
  };
}

describe('createRuntime refuses bad input with a TetherError and leaves nothing behind', () => {
  it('R, K3: a state dir that cannot be written (a file in the way) or holds a NUL byte throws a stable code and leaves no cgroup', async () => {
    const dir = scratch();
    const file = join(dir, 'file');
    writeFileSync(file, 'x');
    const before = ownCgroups();
    const cases = [
      [join(file, 'state'), 'STATE_DIR_UNUSABLE'],
      [join(dir, 'a\0b'), 'INVALID_ARGUMENT'],
    ] as const;
    for (const [stateDir, code] of cases) {
      const err = await rejection(() => createRuntime({ stateDir, spillDir: join(dir, 'spill') }));
      expect(err).toBeInstanceOf(TetherError);
      expect(err).toMatchObject({ code });
      expect(ownCgroups()).toEqual(before);
    }
  });

  it.skipIf(process.getuid?.() !== 0)(
    'R, K3: a state dir on a full disk is STATE_DIR_UNUSABLE and leaves no cgroup (a full 64 KiB tmpfs)',
    async () => {
      const full = join(scratch(), 'full');
      mkdirSync(full);
      const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', full]);
      if (mounted.status !== 0) return; // no CAP_SYS_ADMIN here: nothing to fill
      cleanups.push(() => spawnSync('umount', [full]));
      spawnSync('sh', ['-c', `head -c 1000000 /dev/zero > ${full}/fill`]);
      const before = ownCgroups();
      const err = await rejection(() =>
        createRuntime({ stateDir: join(full, 'state'), spillDir: join(full, 'spill') }),
      );
      expect(err).toBeInstanceOf(TetherError);
      expect(err).toMatchObject({ code: 'STATE_DIR_UNUSABLE', message: expect.stringContaining('ENOSPC') });
      expect(ownCgroups()).toEqual(before);
    },
  );

  it('R, K3: stateDir and spillDir below /proc are refused at once (Node 20 mkdirSync spins there), and nothing hangs', () => {
    const state = inChild(`await createRuntime({ stateDir: '/proc/tether-x/state' });`);
    expect(state.timedOut).toBe(false);
    expect(JSON.parse(state.out)).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('procfs'),
    });
    const spill = inChild(`const rt = await createRuntime({ spillDir: '/proc/tether-x' });
      try { return await rt.shell.run({ command: 'head -c 100000 /dev/zero' }); } finally { await rt.dispose(); }`);
    expect(spill.timedOut).toBe(false);
    expect(JSON.parse(spill.out)).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it.each([
    [{ cwd: '/no/such/dir' }, 'CWD_NOT_FOUND'],
    [{ limits: 5 }, 'INVALID_ARGUMENT'],
    [{ env: 'x' }, 'INVALID_ARGUMENT'],
    [{ shell: '/no/such/shell' }, 'INVALID_ARGUMENT'],
    [{ limits: { maxJobs: 3 } }, 'INVALID_ARGUMENT'],
    [{ stateDirectory: '/tmp/x' }, 'INVALID_ARGUMENT'],
    [{ spill: { durable: 'yes' } }, 'INVALID_ARGUMENT'],
  ])(
    'R: createRuntime(%j) is refused (%s) by the one options schema, never silently accepted',
    async (options, code) => {
      const before = ownCgroups();
      const err = await rejection(() => createRuntime(options as never));
      expect(err).toBeInstanceOf(TetherError);
      expect(err).toMatchObject({ code });
      expect(ownCgroups()).toEqual(before);
    },
  );
});

describe('shell and owners refuse bad input with a TetherError', () => {
  it.each([
    [{ command: 'true', timeoutMs: 2 ** 31 }, /timeoutMs/],
    [{ command: '' }, /command/],
    [{ command: '  \n\t ' }, /command/],
    [{ command: 'true', env: { 'A=B': 'x' } }, /env/],
    [{ command: 'true', env: { '': 'x' } }, /env/],
  ])('C1, R: shell.run(%j) and shell.background refuse it with INVALID_ARGUMENT', async (req, why) => {
    const rt = await runtime();
    const run = await rejection(() => rt.shell.run(req));
    expect(run).toBeInstanceOf(TetherError);
    expect(run).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(why) });
    const owner = rt.owners.host().token;
    const bg = await rejection(() => rt.shell.background(owner, req));
    expect(bg).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rt.jobs.list(owner)).toEqual([]);
  });

  it('C1: a timeoutMs just below 2^31 is a deadline, not a 1 ms timer', async () => {
    const rt = await runtime();
    const result = await rt.shell.run({ command: 'sleep 0.2; echo done', timeoutMs: 2 ** 31 - 1 });
    expect(result).toMatchObject({ exitCode: 0, timedOut: false, output: 'done\n' });
  });

  it('O2, D2: rt.owners.host() after dispose throws RUNTIME_DISPOSED', async () => {
    const rt = await runtime();
    await rt.dispose();
    expect(() => rt.owners.host()).toThrow(expect.objectContaining({ code: 'RUNTIME_DISPOSED' }));
  });

  it.skipIf(!probe.ok)(
    'K1, R: a spawn that fails (E2BIG), through the spawner or child_process after the spawner died, is SPAWN_FAILED and removes its empty tree cgroup at once',
    async () => {
      const rt = await runtime();
      const before = ownCgroups();
      const big = { command: `: ${'x'.repeat(200_000)}` };
      expect(await rejection(() => rt.shell.run(big))).toMatchObject({ code: 'SPAWN_FAILED' });
      expect(ownCgroups()).toEqual(before);
      await rt.shell.run({ command: 'true' });
      const spawner = spawnerOf(process.pid);
      expect(spawner).not.toBeNull();
      process.kill(spawner!.pid, 'SIGKILL');
      await waitFor(() => (spawnerOf(process.pid) === null ? true : null), 'the spawner to die');
      const fallback = await rejection(() => rt.shell.run(big));
      expect(fallback).toBeInstanceOf(TetherError);
      expect(fallback).toMatchObject({ code: 'SPAWN_FAILED' });
      const owner = rt.owners.host().token;
      expect(await rejection(() => rt.shell.background(owner, big))).toMatchObject({ code: 'SPAWN_FAILED' });
      expect(ownCgroups()).toEqual(before);
      expect(await rt.shell.run({ command: 'echo still' })).toMatchObject({ exitCode: 0, output: 'still\n' });
    },
  );

  it('C1: 11 concurrent shell.run calls print no MaxListenersExceededWarning', async () => {
    const rt = await runtime();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    cleanups.push(() => process.off('warning', onWarning));
    const results = await Promise.all(
      Array.from({ length: 11 }, () => rt.shell.run({ command: 'sleep 0.1' })),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(results.every((r) => r.exitCode === 0)).toBe(true);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });
});
