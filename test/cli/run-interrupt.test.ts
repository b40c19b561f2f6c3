import { spawn } from 'node:child_process';
import * as pty from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { alive, announced, type SeenProcess } from '../support/proc-oracle.js';
import { cli } from './cli-helpers.js';

// A tree that outlives a plain shell's ^C: a background child and a foreground sleep.
const COMMAND = 'sleep 100 & echo "bg=$!"; echo "sh=$$"; echo ready; sleep 100';
const RUNS = 10;

interface Ended {
  readonly code: number | null;
  readonly output: string;
  readonly tree: SeenProcess[];
}

const started = new Set<() => void>();
afterEach(() => {
  for (const end of started) end(); // only when a test failed before its tether ended
  started.clear();
});

// `tether run` in a process group of its own (as a shell's job is), stopped once it said ready
// by `signal` sent to the whole group: what a terminal does on ^C, and `timeout` on expiry.
async function stopGroup(signal: NodeJS.Signals): Promise<Ended> {
  const child = spawn(process.execPath, [cli, 'run', '--', COMMAND], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const end = () => child.kill('SIGTERM');
  started.add(end);
  let output = '';
  const onData = (s: string) => {
    output += s;
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', onData);
  const code = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  let tree: SeenProcess[] = [];
  await new Promise<void>((resolve) => {
    const check = () => {
      if (!output.includes('ready\n')) return;
      child.stdout.off('data', check);
      tree = announced(output, ['bg', 'sh']);
      process.kill(-child.pid!, signal);
      resolve();
    };
    child.stdout.on('data', check);
  });
  const ended = { code: await code, output, tree };
  started.delete(end);
  return ended;
}

// `tether run` on a real pseudo-terminal, interrupted with ^C typed once it said ready.
function interruptOnTerminal(): Promise<Ended> {
  const term = pty.spawn(process.execPath, [cli, 'run', '--', COMMAND], {
    cols: 120,
    rows: 40,
    cwd: process.cwd(),
    env: { ...process.env, TERM: 'xterm-256color' },
  });
  const end = () => term.kill('SIGTERM');
  started.add(end);
  let output = '';
  let tree: SeenProcess[] = [];
  let typed = false;
  term.onData((data) => {
    output += data.replaceAll('\r\n', '\n');
    if (typed || !output.includes('ready\n')) return;
    typed = true;
    tree = announced(output, ['bg', 'sh']);
    term.write('\x03');
  });
  return new Promise((resolve) => {
    term.onExit(({ exitCode }) => {
      started.delete(end);
      resolve({ code: exitCode, output, tree });
    });
  });
}

describe('tether run: Ctrl-C and termination signals', () => {
  it(`C1 (issue 33.2): SIGINT to the whole process group exits 130, says so and kills the tree (${RUNS} runs)`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const { code, output, tree } = await stopGroup('SIGINT');
      expect(output).not.toContain('killed by null');
      expect(output).toMatch(/\[tether\] stopped by SIGINT, tree killed · \d+ ms\n/);
      expect(code).toBe(130);
      expect(alive(tree)).toEqual([]);
    }
  });

  it('C1 (issue 33.2): SIGTERM to the whole process group exits 143 (5 runs)', async () => {
    for (let run = 0; run < 5; run++) {
      const { code, output, tree } = await stopGroup('SIGTERM');
      expect(output).toMatch(/\[tether\] stopped by SIGTERM, tree killed · \d+ ms\n/);
      expect(code).toBe(143);
      expect(alive(tree)).toEqual([]);
    }
  });

  it(`C1 (issue 33.2): ^C typed on a real terminal exits 130 (${RUNS} runs)`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const { code, output, tree } = await interruptOnTerminal();
      expect(output).not.toContain('killed by null');
      expect(output).toMatch(/\[tether\] stopped by SIGINT, tree killed · \d+ ms\n/);
      expect(code).toBe(130);
      expect(alive(tree)).toEqual([]);
    }
  });

  it('C1 (issue 33.2): under timeout --preserve-status -s TERM it exits 143 (3 runs)', async () => {
    for (let run = 0; run < 3; run++) {
      // timeout signals its whole process group, tether's helpers too, once 4 s have passed.
      const args = ['--preserve-status', '-s', 'TERM', '4', process.execPath, cli, 'run', '--', COMMAND];
      const child = spawn('timeout', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      let tree: SeenProcess[] = [];
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        output += s;
        if (tree.length === 0 && output.includes('ready\n')) tree = announced(output, ['bg', 'sh']);
      });
      child.stderr.setEncoding('utf8').on('data', (s: string) => {
        output += s;
      });
      const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      expect(output).toContain('ready\n'); // the command ran before timeout's signal
      expect(output).toMatch(/\[tether\] stopped by SIGTERM, tree killed · \d+ ms\n/);
      expect(code).toBe(143);
      expect(alive(tree)).toEqual([]);
    }
  });
});
