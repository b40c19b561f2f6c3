import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createLocalProvider,
  createRuntime,
  type Runtime,
  type SubprocessProvider,
  TetherError,
} from '../../src/index.js';

let base: string;
let ws: string;
let rt: Runtime | null;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'tether-sbx-place-'));
  ws = join(base, 'ws');
  mkdirSync(ws);
  rt = null;
});

afterEach(async () => {
  await rt?.dispose();
  rmSync(base, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<TetherError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TetherError);
  return error as TetherError;
}

// A provider that counts its spawns, over a real local one (X4).
function countingProvider(): SubprocessProvider & { spawns: number; disposed: boolean } {
  const local = createLocalProvider();
  const counting = {
    name: 'counting',
    spawns: 0,
    disposed: false,
    spawn: (spec: Parameters<SubprocessProvider['spawn']>[0]) => {
      counting.spawns++;
      return local.spawn(spec);
    },
    spawnTerminal: (spec: Parameters<SubprocessProvider['spawnTerminal']>[0]) => {
      counting.spawns++;
      return local.spawnTerminal(spec);
    },
    async dispose() {
      counting.disposed = true;
      await local.dispose();
    },
  };
  return counting;
}

describe('sandbox options and placement (A3, X4)', () => {
  it('A3: invalid sandbox options fail at createRuntime with INVALID_ARGUMENT naming the field', async () => {
    const bad = [
      [{ mode: 'strict' }, /sandbox\.mode must be/],
      [{ mode: 'workspace-write', network: 'lan' }, /sandbox\.network must be/],
      [{ mode: 'read-only', writableRoots: [ws] }, /writableRoots is only meaningful/],
      [
        { mode: 'workspace-write', writableRoots: [join(base, 'missing')] },
        /writableRoots\[0\].*existing directory/,
      ],
      [{ mode: 'workspace-write', denyRead: [''] }, /denyRead must be an array/],
    ] as const;
    for (const [sandbox, message] of bad) {
      const error = await rejection(createRuntime({ cwd: ws, sandbox: sandbox as never }));
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.message).toMatch(message);
    }
    const error = await rejection(createRuntime({ isolation: 'net' as never }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/'isolation' must be one of "none", "pid"/);
  });

  it('A3: without bubblewrap a sandbox fails at createRuntime naming the package; nothing runs unsandboxed', async () => {
    const path = process.env.PATH;
    const empty = join(base, 'empty-bin');
    mkdirSync(empty);
    process.env.PATH = empty;
    try {
      const error = await rejection(createRuntime({ cwd: ws, sandbox: { mode: 'read-only' } }));
      expect(error.code).toBe('SANDBOX_UNAVAILABLE');
      expect(error.message).toMatch(/bubblewrap.*apt-get install -y bubblewrap/);
      const pid = await rejection(createRuntime({ cwd: ws, isolation: 'pid' }));
      expect(pid.code).toBe('SANDBOX_UNAVAILABLE');
    } finally {
      process.env.PATH = path;
    }
  });

  it('A3: namespaces refused: createRuntime fails naming the kernel settings; an agent’s first spawn fails, never unsandboxed', async () => {
    // A bwrap that refuses like a kernel without user namespaces does; the real nsenter/setpriv.
    const bin = join(base, 'refusing-bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'bwrap'),
      '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    for (const tool of ['nsenter', 'setpriv']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const error = await rejection(createRuntime({ cwd: ws, sandbox: { mode: 'workspace-write' } }));
      expect(error.code).toBe('SANDBOX_UNAVAILABLE');
      expect(error.message).toMatch(
        /No permissions to create new namespace.*kernel\.unprivileged_userns_clone/s,
      );
      rt = await createRuntime({ cwd: ws, spillDir: false });
      const agent = rt.agents.create({
        sessionId: 'refused',
        onTurn: () => {},
        sandbox: { mode: 'read-only' },
      });
      const spawn = await rejection(rt.shell.run({ owner: agent.owner, command: 'touch refused.txt' }));
      expect(spawn.code).toBe('SANDBOX_UNAVAILABLE');
      expect(existsSync(join(ws, 'refused.txt'))).toBe(false);
      await agent.dispose();
    } finally {
      process.env.PATH = path;
    }
  });

  it('A3: stats name the mode and mechanism; off is the default and says none', async () => {
    rt = await createRuntime({ cwd: ws, spillDir: false });
    expect(rt.stats().sandbox).toMatchObject({
      mode: 'off',
      mechanism: 'none',
      isolation: 'none',
      enclaves: 0,
    });
    await rt.dispose();
    rt = await createRuntime({ cwd: ws, spillDir: false, sandbox: { mode: 'read-only', network: 'host' } });
    expect(rt.stats().sandbox).toMatchObject({ mode: 'read-only', mechanism: 'bubblewrap', network: 'host' });
  });

  it('A3: an agent’s sandbox overrides an unsandboxed runtime; the runtime’s other owners stay unsandboxed', async () => {
    rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 } });
    const agent = rt.agents.create({ sessionId: 'sealed', onTurn: () => {}, sandbox: { mode: 'read-only' } });
    const sealed = await rt.shell.run({ owner: agent.owner, command: 'touch a.txt' });
    expect(sealed.output).toContain('Read-only file system');
    const free = await rt.shell.run({ owner: rt.owners.host().token, command: 'touch b.txt && echo ok' });
    expect(free).toMatchObject({ output: 'ok\n' });
    expect(free.sandbox).toBeUndefined();
    await agent.dispose();
    expect(rt.stats().sandbox.enclaves).toBe(0); // D1: the agent's enclave ended with it
    const invalid = (() => {
      try {
        rt.agents.create({ sessionId: 'x', onTurn: () => {}, sandbox: { mode: 'sealed' as never } });
      } catch (e) {
        return e;
      }
    })();
    expect(invalid).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('A3: a cwd under the host /tmp that the sandbox does not share is refused with CWD_NOT_FOUND', async () => {
    rt = await createRuntime({ cwd: ws, spillDir: false, sandbox: { mode: 'workspace-write' } });
    const elsewhere = mkdtempSync(join(tmpdir(), 'tether-sbx-elsewhere-'));
    try {
      const error = await rejection(
        rt.shell.run({ owner: rt.owners.host().token, command: 'pwd', cwd: elsewhere }),
      );
      expect(error.code).toBe('CWD_NOT_FOUND');
      expect(error.message).toMatch(/private inside the sandbox/);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('X4: an owner placed on its own provider runs there; others use the runtime’s; the runtime disposes it', async () => {
    rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 } });
    const remote = countingProvider();
    const placed = rt.owners.host({ provider: remote });
    const agent = rt.agents.create({ sessionId: 'placed', onTurn: () => {}, provider: remote });
    await rt.shell.run({ owner: placed.token, command: 'true' });
    const job = await rt.shell.background(agent.owner, { command: 'echo job' });
    await rt.jobs.wait(agent.owner, job.id, 30_000);
    const t = await rt.terminals.open(placed.token);
    await rt.terminals.close(placed.token, t.id);
    expect(remote.spawns).toBe(3);
    await rt.shell.run({ owner: rt.owners.host().token, command: 'true' });
    await rt.shell.run({ command: 'true' });
    expect(remote.spawns).toBe(3);
    await agent.dispose();
    expect(remote.disposed).toBe(false); // shared by other owners: the runtime owns it
    await rt.dispose();
    expect(remote.disposed).toBe(true);
  });

  it('X4, A3: a sandbox over an owner’s own provider spawns through that provider', async () => {
    rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 } });
    writeFileSync(join(ws, 'f'), 'x');
    const remote = countingProvider();
    const lease = rt.owners.host({ provider: remote, sandbox: { mode: 'read-only' } });
    const r = await rt.shell.run({ owner: lease.token, command: 'cat f; rm f' });
    expect(r.output).toMatch(/^x.*Read-only file system/s);
    expect(remote.spawns).toBe(2); // the enclave, then the command
  });
});
