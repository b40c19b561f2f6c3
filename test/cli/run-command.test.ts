import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { aliveRunning } from '../support/proc-oracle.js';

// The built CLI, as a user runs it (npm test builds before vitest).
const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const tether = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

describe('tether run', () => {
  it('C1: prints the output, the facts on stderr, and exits with the command’s code', () => {
    const r = tether('run', '--', 'echo hello; echo oops >&2; exit 3');
    expect(r.stdout).toBe('hello\noops\n');
    expect(r.stderr).toMatch(/\[tether\] exit 3 · \d+ ms/);
    expect(r.status).toBe(3);
  });

  it('C1, S4: a timeout kills the tree — a child and a setsid escapee — and exits 124', () => {
    // A unique argv identifies the tree's processes in /proc after the CLI (their parent) exited.
    const nap = ['sleep', String(30_000 + Math.floor(Math.random() * 10_000))];
    const r = tether(
      'run',
      '--timeout',
      '2000',
      '--',
      `${nap.join(' ')} & echo child=$!; setsid ${nap.join(' ')} & echo escaped=$!; ${nap.join(' ')}`,
    );
    expect(r.stderr).toContain('timed out');
    expect(r.status).toBe(124);
    const pids = [...r.stdout.matchAll(/^(?:child|escaped)=(\d+)$/gm)].map((m) => Number(m[1]));
    expect(pids).toHaveLength(2);
    // Checked once, no polling: the CLI exits only after the tree kill proved the tree gone.
    expect(aliveRunning(pids, nap)).toEqual([]);
    expect(listTaggedProcesses(treeIdPrefix(r.pid!))).toEqual([]);
  });

  it('C1: --json prints the whole result', () => {
    const r = tether('run', '--json', '--', 'printf hi');
    expect(JSON.parse(r.stdout)).toMatchObject({
      exitCode: 0,
      output: 'hi',
      timedOut: false,
      truncated: false,
    });
  });

  it.each([
    [['bogus'], "unknown command 'bogus'"],
    [['run'], 'run needs a command'],
    [['run', '--timeout', 'soon', '--', 'true'], '--timeout takes a positive number'],
    [['run', '--nope', '--', 'true'], "Unknown option '--nope'"],
  ])('bad usage %j exits 2 and says what to do', (args, message) => {
    const r = tether(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('tether --help');
  });

  it('--help on every command exits 0', () => {
    expect(tether('--help')).toMatchObject({ status: 0 });
    expect(tether('run', '--help').stdout).toContain('Usage: tether run');
  });

  it('a missing cwd is a clear error with exit 1', () => {
    const r = tether('run', '--cwd', '/no/such/dir', '--', 'true');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("cwd '/no/such/dir' is not an existing directory");
  });
});
