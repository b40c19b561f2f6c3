import { readlinkSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createLocalProvider, type LocalProvider } from '../../src/subprocess/local-provider.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import type { StdioDisposition, SubprocessSpawnSpec } from '../../src/subprocess/types.js';
import { alive } from '../support/proc-oracle.js';

// S1's positive side: what the spec says is exactly what the process gets.

let provider: LocalProvider;
afterEach(async () => {
  await provider?.dispose();
});

const base = {
  cwd: '/',
  stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
  cleanupGraceMs: 200,
} as const satisfies Omit<SubprocessSpawnSpec, 'argv'>;

async function text(stream: Readable | null): Promise<string> {
  let out = '';
  for await (const chunk of stream!) out += String(chunk);
  return out;
}

describe('S1: the spawn spec reaches the process unchanged', () => {
  it('S1: argv reaches the program with no shell interpretation (quotes, $, *, newlines, empty)', async () => {
    provider = createLocalProvider();
    const args = [
      `a "double" 'single'`,
      '$HOME',
      '$(echo no)',
      '*',
      '`id`',
      'line1\nline2',
      '',
      ' spaced ',
      ';|&>',
    ];
    const child = await provider.spawn({
      ...base,
      argv: [process.execPath, '-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args],
    });
    const [out, exit] = await Promise.all([text(child.stdout), child.exited]);
    expect(JSON.parse(out)).toEqual(args);
    expect(exit).toEqual({ exitCode: 0, signal: null });
  });

  it('S1: cwd is where the process runs', async () => {
    provider = createLocalProvider();
    const child = await provider.spawn({ ...base, cwd: '/usr', argv: ['pwd'] });
    expect(await text(child.stdout)).toBe('/usr\n');
  });

  const dispositions: StdioDisposition[] = ['pipe', 'ignore', 'inherit'];
  it.each(dispositions)(
    'S1: stdin, stdout and stderr %s are connected as asked (read from /proc/<pid>/fd)',
    async (how) => {
      provider = createLocalProvider();
      const child = await provider.spawn({
        ...base,
        argv: ['sleep', '300'],
        stdio: { stdin: how, stdout: how, stderr: how },
      });
      try {
        for (const fd of [0, 1, 2]) {
          const link = readlinkSync(`/proc/${child.identity.pid}/fd/${fd}`);
          if (how === 'ignore') expect(link, `fd ${fd}`).toBe('/dev/null');
          if (how === 'inherit') expect(link, `fd ${fd}`).toBe(readlinkSync(`/proc/self/fd/${fd}`));
          if (how === 'pipe') expect(link, `fd ${fd}`).toMatch(/^(pipe|socket):\[\d+\]$/);
        }
        const streams = [child.stdin, child.stdout, child.stderr];
        expect(streams.map((s) => s !== null)).toEqual([how === 'pipe', how === 'pipe', how === 'pipe']);
      } finally {
        expect(await child.kill()).toMatchObject({ status: 'quiescent' });
      }
    },
  );

  it('S1: a piped stdin reaches the program; its end is EOF', async () => {
    provider = createLocalProvider();
    const child = await provider.spawn({ ...base, argv: ['cat'], stdio: { ...base.stdio, stdin: 'pipe' } });
    child.stdin!.end('über\n$X *\n');
    expect(await text(child.stdout)).toBe('über\n$X *\n');
    expect(await child.exited).toEqual({ exitCode: 0, signal: null });
  });

  it('S1, S4: an abort while the spawn is in flight kills what it started', async () => {
    provider = createLocalProvider();
    const abort = new AbortController();
    const spawning = provider.spawn({
      ...base,
      argv: ['sh', '-c', 'echo pid=$$; exec sleep 300'],
      signal: abort.signal,
    });
    abort.abort(); // the child was forked; the spawn has not returned yet
    const outcome = await spawning.then(
      async (child) => ({ exit: await child.exited, pid: child.identity }),
      (e: unknown) => (e instanceof TetherError ? e.code : String(e)),
    );
    if (typeof outcome !== 'string') {
      // Either way nothing of it may live on: the handle's leader was killed by the abort.
      expect(outcome.exit.signal).not.toBeNull();
      expect(alive([{ pid: outcome.pid.pid, startTime: outcome.pid.startTime! }])).toEqual([]);
    } else expect(outcome).toBe('ABORTED');
    for (let i = 0; i < 500 && listTaggedProcesses(treeIdPrefix()).length > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });

  it('S1, T4: an abort while a terminal is opening fails ABORTED and leaves no process', async () => {
    provider = createLocalProvider();
    const abort = new AbortController();
    const opening = provider.spawnTerminal({
      argv: ['/bin/sh'],
      cwd: '/',
      cols: 80,
      rows: 24,
      cleanupGraceMs: 200,
      signal: abort.signal,
    });
    abort.abort(); // after the call's own check, while the PTY is being opened
    const code = await opening.then(
      () => 'opened',
      (e: unknown) => (e instanceof TetherError ? e.code : String(e)),
    );
    expect(code).toBe('ABORTED');
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });
});
