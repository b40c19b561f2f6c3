import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses, readProcStat } from '../../src/subprocess/proc.js';
import { aliveRunning } from '../support/proc-oracle.js';
import { cli, endLeftovers, startTether, tether } from './cli-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tether-run-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(endLeftovers);

// The shell prints a background child's pid and its own, then waits on a second child.
const TREE = 'sleep 100 & echo "bg=$!"; echo "sh=$$"; sleep 100';

// True when the pid is gone or a zombie (dead, not yet reaped by its new parent).
function dead(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat === null || stat.state === 'Z' || stat.state === 'X';
}

function treePids(stdout: string): number[] {
  return [...stdout.matchAll(/(?:bg|sh)=(\d+)/g)].map((m) => Number(m[1]));
}

describe('tether run: a transparent runner', () => {
  it('C1: every byte reaches a pipe (seq 1 100000 | wc -l is 100000), nothing of tether on stdout', () => {
    const r = tether('run', '--', 'seq 1 100000');
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.length - 1).toBe(100_000);
    expect(lines.at(-2)).toBe('100000');
    expect(r.stdout).not.toContain('tether');
    expect(r.stderr).toMatch(/^\[tether\] exit 0 · \d+ ms\n$/);
  });

  it('C1: every byte reaches a file when stdout is redirected', async () => {
    const file = join(dir, 'seq.txt');
    const fd = openSync(file, 'w');
    const live = startTether(['run', '--', 'seq 1 100000'], ['ignore', fd, 'pipe']);
    closeSync(fd);
    expect(await live.exited).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n').length - 1).toBe(100_000);
    expect(text.endsWith('99999\n100000\n')).toBe(true);
  });

  it('C1: stdout to stdout, stderr to stderr, tether’s facts on stderr only, the exit code passed through', () => {
    const r = tether('run', '--', 'echo out; echo err >&2; exit 3');
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toMatch(/^err\n\[tether\] exit 3 · \d+ ms\n$/);
    expect(r.status).toBe(3);
  });

  it('--quiet leaves stderr to the command alone', () => {
    const r = tether('run', '--quiet', '--', 'echo out; echo err >&2; exit 4');
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toBe('err\n');
    expect(r.status).toBe(4);
  });

  it('C1: output is streamed live, before the command ends', async () => {
    const flag = join(dir, 'go');
    // The command cannot end before the test saw 'first' and created the flag file.
    const live = startTether([
      'run',
      '--timeout',
      '45000',
      '--',
      `echo first; while [ ! -e '${flag}' ]; do sleep 0.05; done; echo second`,
    ]);
    expect(await live.printed('first\n')).toBe(true); // a buffering runner only prints at the timeout
    writeFileSync(flag, '');
    expect(await live.exited).toBe(0);
    expect(live.stdout()).toBe('first\nsecond\n');
  });

  it('C1, S4: a timeout exits 124 and the whole tree is gone from /proc', async () => {
    const live = startTether(['run', '--timeout', '1000', '--', TREE]);
    const status = await live.exited;
    expect(status).toBe(124);
    expect(live.stderr()).toContain('timed out, tree killed');
    const pids = treePids(live.stdout());
    expect(pids).toHaveLength(2);
    expect(pids.filter((pid) => !dead(pid))).toEqual([]);
    expect(listTaggedProcesses(treeIdPrefix(live.child.pid))).toEqual([]);
  });

  it('C1, S4: a timeout kills a child and a setsid escapee too, and exits 124', () => {
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

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('C1, S4: %s (Ctrl-C, a kill) kills the whole tree and exits %i', async (signal, code) => {
    // The timeout only bounds a runner that fails this test (one that buffers would never print).
    const live = startTether(['run', '--timeout', '45000', '--', TREE]);
    expect(await live.printed('sh=')).toBe(true); // both children run: the shell printed after forking
    const pids = treePids(live.stdout());
    expect(pids.filter(dead)).toEqual([]);
    live.child.kill(signal);
    expect(await live.exited).toBe(code);
    expect(live.stderr()).toContain(`stopped by ${signal}, tree killed`);
    expect(pids.filter((pid) => !dead(pid))).toEqual([]);
    expect(listTaggedProcesses(treeIdPrefix(live.child.pid))).toEqual([]);
  });

  it('S3: the user’s TERM and colour choice reach the command; pagers stay off (stdin is closed)', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-tether-test' };
    delete env.NO_COLOR;
    const r = spawnSync(
      process.execPath,
      [cli, 'run', '--quiet', '--', 'echo "[$TERM][$PAGER]"; printenv NO_COLOR || echo no NO_COLOR; cat'],
      {
        encoding: 'utf8',
        env,
        input: 'not for the command\n',
      },
    );
    expect(r.stdout).toBe('[xterm-tether-test][cat]\nno NO_COLOR\n');
  });

  it('options end at the first word that is not one: tether run ls -la needs no --', () => {
    const r = tether('run', '--quiet', 'ls', '-la', '/');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^total \d+/);
  });

  it('C1: --json captures the output and prints the whole result on stdout', () => {
    const r = tether('run', '--json', '--', 'printf hi; exit 5');
    expect(r.status).toBe(5);
    expect(JSON.parse(r.stdout)).toMatchObject({
      exitCode: 5,
      output: 'hi',
      timedOut: false,
      truncated: false,
    });
  });

  it('a missing cwd is a clear error with exit 1', () => {
    const r = tether('run', '--cwd', '/no/such/dir', '--', 'true');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("cwd '/no/such/dir' is not an existing directory");
    expect(existsSync('/no/such/dir')).toBe(false);
  });
});

describe('tether CLI usage', () => {
  it.each([
    [
      ['bogus'],
      "tether: unknown command 'bogus'; the commands are run, mcp, reap, demo, serve and view",
      'tether --help',
    ],
    [['--nope'], "tether: unknown option '--nope'", 'tether --help'],
    [['run'], 'tether run: needs a command', 'tether run --help'],
    [
      ['run', '--timeout', 'soon', '--', 'true'],
      'tether run: --timeout takes a positive number',
      'tether run --help',
    ],
    [
      ['run', '--timeout'],
      "tether run: option '--timeout' needs a value, e.g. --timeout 5000",
      'tether run --help',
    ],
    [['run', '--timeout', '--quiet', 'true'], "option '--timeout' needs a value", 'tether run --help'],
    [['run', '--nope', '--', 'true'], "tether run: unknown option '--nope'", 'tether run --help'],
    [['run', '--quiet=yes', 'true'], "tether run: option '--quiet' takes no value", 'tether run --help'],
    [['mcp', '--nope'], "tether mcp: unknown option '--nope'", 'tether mcp --help'],
    [['mcp', 'extra'], "tether mcp: unexpected argument 'extra'", 'tether mcp --help'],
    [['demo', '--inspect'], "tether demo: option '--inspect' needs a value", 'tether demo --help'],
  ])('%j exits 2 and says in our words: %s', (args, message, help) => {
    const r = tether(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain(`Run '${help}' for usage.`);
    // Not node:util parseArgs' own text.
    expect(r.stderr).not.toMatch(/To specify a positional argument|ERR_PARSE_ARGS|Unknown option/);
  });

  it('--version on every command prints the package version', () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const args of [['--version'], ['run', '--version'], ['mcp', '--version'], ['demo', '--version']]) {
      const r = tether(...args);
      expect({ args, status: r.status, stdout: r.stdout }).toEqual({
        args,
        status: 0,
        stdout: `tether ${version}\n`,
      });
    }
  });

  it('--help on every command exits 0 and names --version', () => {
    for (const [args, title] of [
      [['--help'], 'Usage:'],
      [['run', '--help'], 'Usage: tether run'],
      [['mcp', '--help'], 'Usage: tether mcp'],
      [['demo', '--help'], 'Usage: tether demo'],
    ] as const) {
      const r = tether(...args);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(title);
      expect(r.stdout).toContain('--version');
    }
  });
});
