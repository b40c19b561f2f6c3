import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TetherError } from '../../../src/errors.js';
import { isSameLiveProcess } from '../../../src/subprocess/identity.js';
import { hasProcfs, readProcStat } from '../../../src/subprocess/proc.js';
import { crashPtyHostForTest, type PtyExit } from '../../../src/subprocess/pty/pty-host.js';
import { tagged, waitFor } from '../../support/spawn-tree.js';
import {
  disposeHosts,
  foregroundRunning,
  openBash,
  openRecorded,
  ptyEnv,
  testHost,
  writePattern,
} from './pty-host-fixture.js';

afterEach(disposeHosts);

const linux = hasProcfs();
const KiB = 1024;
const MiB = 1024 * KiB;
const sleeps = (treeId: string) => tagged(treeId).filter((pid) => readProcStat(pid)?.comm === 'sleep');
const isClosed = (err: unknown) => err instanceof TetherError && err.code === 'TERMINAL_CLOSED';

describe.runIf(linux)('pty host: output', () => {
  let patternDir: string;
  let pattern: { path: string; text: string };
  beforeAll(() => {
    patternDir = mkdtempSync(join(tmpdir(), 'tether-pty-pattern-'));
    pattern = writePattern(patternDir, MiB);
  });
  afterAll(() => rmSync(patternDir, { recursive: true, force: true }));

  it('delivers every byte before exit, 208 runs of 64 KiB and 1 MiB (node-pty#72/#85/#726)', async () => {
    const host = testHost();
    const sizes = [...Array<number>(160).fill(64 * KiB), ...Array<number>(48).fill(MiB)];
    const failures: string[] = [];
    for (let at = 0; at < sizes.length; at += 8) {
      await Promise.all(
        sizes.slice(at, at + 8).map(async (bytes, i) => {
          const { session, output } = await openRecorded(host, ['head', '-c', String(bytes), pattern.path], {
            cwd: patternDir,
          });
          const exit = await session.exited;
          const expected = pattern.text.slice(0, bytes);
          if (exit.exitCode !== 0 || output() !== expected) {
            failures.push(`run ${at + i}: exit ${JSON.stringify(exit)}, ${output().length}/${bytes} chars`);
          }
        }),
      );
    }
    expect(failures).toEqual([]);
  }, 300_000);

  it('keeps output that arrives before a listener subscribes, pausing the PTY meanwhile', async () => {
    const host = testHost({ maxUnackedChars: 4 * KiB, batchBytes: KiB });
    const session = await host.open({
      argv: ['head', '-c', String(256 * KiB), pattern.path],
      cwd: patternDir,
      env: ptyEnv,
      cols: 80,
      rows: 24,
      cleanupGraceMs: 1000,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    let out = '';
    session.onData((text) => {
      out += text;
    });
    expect((await session.exited).exitCode).toBe(0);
    expect(out).toBe(pattern.text.slice(0, 256 * KiB));
  });
});

describe.runIf(linux)('pty host: settled (T5)', () => {
  it('T5: settled() hands over every byte written before it, however long the worker would batch them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-pty-settled-'));
    try {
      const { path, text } = writePattern(dir, 200 * KiB);
      // A 60 s flush delay: without settled() the tail would sit in the worker's batch.
      const host = testHost({ flushMs: 60_000 });
      const { session, output } = await openRecorded(host, ['sh', '-c', `cat ${path}; exec sleep 30`], {
        cwd: dir,
      });
      // sleep runs: cat is done, all of its bytes were written to the terminal.
      await waitFor(
        () => readProcStat(session.identity.pid)?.comm === 'sleep' || null,
        'sleep in the foreground',
      );
      await session.settled();
      expect(output()).toBe(text);
      await session.kill();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.runIf(linux)('pty host: a session', () => {
  it('S3/S4: runs on its own tty with the tree marker in its env; write and resize reach it', async () => {
    const host = testHost();
    const { session, output } = await openRecorded(host, [
      'sh',
      '-c',
      'tty; echo "marker=$TETHER_TREE"; read line; echo "got=$line"; stty size',
    ]);
    expect(session.ttyPath).toMatch(/^\/dev\/pts\/\d+$/);
    expect(session.identity).toEqual({ pid: expect.any(Number), startTime: expect.any(Number) });
    await waitFor(() => output().includes(`marker=${session.treeId}`), 'the marker');
    expect(output()).toContain(`${session.ttyPath}\r\n`);
    session.resize(100, 30);
    await session.write('hello\r');
    expect(await session.exited).toEqual({ exitCode: 0, signal: null, reason: 'exit' });
    expect(output()).toContain('got=hello\r\n30 100\r\n');
    await expect(session.write('late')).rejects.toSatisfy(isClosed);
  });

  it('S1: a missing executable is SPAWN_FAILED, a missing cwd CWD_NOT_FOUND, a bad size INVALID_ARGUMENT', async () => {
    const host = testHost();
    const spec = { env: ptyEnv, cols: 80, rows: 24, cleanupGraceMs: 100 };
    await expect(host.open({ ...spec, argv: ['no-such-program-x'], cwd: '/' })).rejects.toMatchObject({
      code: 'SPAWN_FAILED',
    });
    await expect(host.open({ ...spec, argv: ['true'], cwd: '/no/such/dir' })).rejects.toMatchObject({
      code: 'CWD_NOT_FOUND',
    });
    await expect(host.open({ ...spec, argv: ['true'], cwd: '/', cols: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await host.dispose();
    await host.dispose();
    await expect(host.open({ ...spec, argv: ['true'], cwd: '/' })).rejects.toMatchObject({
      code: 'RUNTIME_DISPOSED',
    });
  });

  it('T8: SIGINT to the foreground interrupts `sleep 1000` while bash survives', async () => {
    const host = testHost();
    const { session, output } = await openBash(host);
    await session.write('sleep 1000\r');
    const sleepPid = await waitFor(() => foregroundRunning(session, 'sleep'), 'sleep in the foreground');
    expect(session.signal('SIGINT', 'foreground')).toBe(true);
    await waitFor(() => readProcStat(sleepPid) === null, 'sleep to be gone');
    expect(isSameLiveProcess(session.identity)).toBe(true);
    await session.write('echo still-$((40+2))\r');
    await waitFor(() => output().includes('still-42'), 'bash to answer');
    expect(await session.kill()).toMatchObject({ status: 'quiescent' });
  });

  it('T8: identity is re-read: no signal is delivered after the session exited', async () => {
    const host = testHost();
    const { session } = await openRecorded(host, ['sh', '-c', 'exit 7']);
    expect(await session.exited).toEqual({ exitCode: 7, signal: null, reason: 'exit' });
    expect(session.signal('SIGTERM', 'session')).toBe(false);
    expect(session.signal('SIGINT', 'foreground')).toBe(false);
  });
});

describe.runIf(linux)('pty host: teardown', () => {
  it('T4: kill() leaves nothing alive after `sleep 1000 &`, `nohup sleep 1000 &` and `setsid sleep 1000`', async () => {
    const host = testHost();
    const { session } = await openBash(host);
    await session.write('sleep 1000 &\r');
    await session.write('nohup sleep 1000 >/dev/null 2>&1 &\r');
    await session.write('setsid sleep 1000\r');
    await waitFor(() => sleeps(session.treeId).length >= 3, 'three sleeps');
    const verdict = await session.kill();
    expect(verdict).toMatchObject({ status: 'quiescent' });
    expect(tagged(session.treeId)).toEqual([]);
    expect((await session.exited).reason).toBe('exit');
  });

  it('T4: a child that ignores SIGHUP does not hang kill()', async () => {
    const host = testHost();
    const { session } = await openRecorded(host, ['bash', '-c', 'trap "" HUP; sleep 1000; echo never'], {
      cleanupGraceMs: 200,
    });
    await waitFor(() => sleeps(session.treeId).length === 1, 'sleep to start');
    expect(await session.kill()).toMatchObject({ status: 'quiescent' });
    expect(tagged(session.treeId)).toEqual([]);
  });

  it('D3: dispose() ends children that ignore SIGHUP and SIGTERM, then the worker', async () => {
    const host = testHost();
    const stubborn = await openRecorded(host, ['bash', '-c', 'trap "" HUP TERM; sleep 1000 & wait']);
    const shell = await openBash(host);
    await shell.session.write('sleep 1000 &\r');
    await waitFor(
      () => sleeps(stubborn.session.treeId).length + sleeps(shell.session.treeId).length === 2,
      'sleeps',
    );
    await host.dispose();
    expect(host.alive).toBe(false);
    for (const { session } of [stubborn, shell]) {
      expect(await session.exited).toMatchObject({ reason: 'exit', signal: 'SIGKILL' });
      expect(tagged(session.treeId)).toEqual([]);
    }
  });

  it.each(['throw', 'exit'] as const)(
    'a worker crash (%s) mid-output ends every session with host_crashed, kills the trees, fails pending writes; the next open starts a new worker',
    async (how) => {
      const host = testHost();
      const flood = await openRecorded(host, ['yes', 'flood']);
      // Non-canonical and deaf: the tty takes ~64 KiB of input, then writes wait. The setsid
      // sleep escapes the PTY's group: only the main thread's tree sweep can find it.
      const deaf = await openRecorded(host, [
        'bash',
        '-c',
        'stty -icanon -echo; setsid sleep 1000 & sleep 1000',
      ]);
      await waitFor(
        () => flood.output().length > 64 * KiB && sleeps(deaf.session.treeId).length === 2,
        'output',
      );
      const pending = deaf.session.write('x'.repeat(MiB));
      crashPtyHostForTest(host, how);
      await expect(pending).rejects.toSatisfy(isClosed);
      for (const { session } of [flood, deaf]) {
        expect(await session.exited).toEqual<PtyExit>({
          exitCode: null,
          signal: null,
          reason: 'host_crashed',
        });
        expect(tagged(session.treeId)).toEqual([]);
      }
      expect(host.alive).toBe(false);
      const next = await openRecorded(host, ['echo', 'again']);
      expect(host.alive).toBe(true);
      expect(await next.session.exited).toMatchObject({ exitCode: 0, reason: 'exit' });
      expect(next.output()).toBe('again\r\n');
    },
  );
});
