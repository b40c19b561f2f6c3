import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serveMcpOverStdio } from '../../src/adapters/mcp/mcp-stdio.js';
import { listPids, readProcStat } from '../../src/subprocess/proc.js';
import { alive, type SeenProcess } from '../support/proc-oracle.js';

const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const client = fileURLToPath(new URL('./mcp-dying-client.mjs', import.meta.url));
const repo = fileURLToPath(new URL('../..', import.meta.url));

// Every live descendant of `root` (by parent pid, read from /proc), with its start time.
function descendants(root: number): SeenProcess[] {
  const stats = listPids()
    .map((pid) => readProcStat(pid))
    .filter((s) => s !== null && s.state !== 'Z');
  const found: SeenProcess[] = [];
  const parents = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) {
      if (s === null || parents.has(s.pid) || !parents.has(s.ppid)) continue;
      parents.add(s.pid);
      found.push({ pid: s.pid, startTime: s.startTime });
      grew = true;
    }
  }
  return found;
}

// Starts the dying client, waits for it to announce the server's pid.
async function startClient(): Promise<{ kill(): void; server: SeenProcess; exited: Promise<void> }> {
  const child = spawn(process.execPath, [client, cli], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let out = '';
  const pid = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const m = /server=(\d+)\n/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('close', () => reject(new Error(`the client ended first: ${out}`)));
  });
  const stat = readProcStat(pid);
  if (stat === null) throw new Error('the server was gone when first seen');
  return { kill: () => child.kill('SIGKILL'), server: { pid, startTime: stat.startTime }, exited };
}

describe('tether mcp when its client dies', () => {
  it('M, D1 (issue 33.1): a SIGKILLed client with a piped stderr leaves no process of the server behind', async () => {
    for (let run = 0; run < 3; run++) {
      const c = await startClient();
      const tree = descendants(c.server.pid);
      // The runtime's helpers, the background sleep and the terminal's shell and cat.
      const comms = tree.map((p) => readProcStat(p.pid)?.comm);
      expect(comms).toContain('sleep');
      expect(comms).toContain('cat');
      c.kill();
      await c.exited;
      // The server notices the dead client (stdin ends, its stderr breaks) and drains.
      for (let i = 0; i < 500 && alive([c.server]).length > 0; i++) await sleep(20);
      expect(alive([c.server])).toEqual([]);
      expect(alive(tree)).toEqual([]);
    }
  });

  it('M, D1 (issue 33.1): a log that throws on every line neither rejects the server nor skips the drain', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    output.resume();
    const lines: string[] = [];
    const served = serveMcpOverStdio({
      input,
      output,
      log: (line) => {
        lines.push(line);
        throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
      },
    });
    setTimeout(() => input.end(), 100);
    await expect(served).resolves.toEqual({ clean: true });
    expect(lines.at(-1)).toBe('tether mcp: stopped; nothing it started is still running');
  });
});
