import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Mirror } from '../../src/index.js';
import { login, readFeed } from '../mirror/mirror-client.js';
import { endLeftovers, type LiveTether, startTether } from './cli-helpers.js';

const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'tether-demo-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(endLeftovers);

// Whether `live` printed `text` within `ms` (false if it ended first or took longer).
async function printedWithin(live: LiveTether, text: string, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([live.printed(text), sleep(ms, false, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}

describe('tether demo', () => {
  it('W1, W3, T6, J7, D2, V1: shows every guarantee once and ends verified quiescent; --inspect writes the JSONL fact log', () => {
    const log = join(dir, 'inspect.jsonl');
    const r = spawnSync(process.execPath, [cli, 'demo', '--inspect', log], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/kill job_\S+ → requested/);
    expect(r.stdout).toMatch(/is killed \(cancel requested: true\)/);
    expect(r.stdout).toContain('→ waitReason stdin_read');
    expect(r.stdout).toContain('you said: y');
    expect(r.stdout).toMatch(
      /alice +woken by a notice \(turn \d, wake 1 of 3\): .* failed \(exit 1, the deliberate failure\)/,
    );
    expect(r.stdout).toContain('succeeded (exit 0)');
    expect(r.stdout).toContain('waitReason session_exit (the shell ended); turn ends');
    expect(r.stdout).toMatch(
      /bob +woken by a notice \(turn \d, wake \d of 3\): .*terminal term_\S+ ended on its own \(exit 0\)/,
    );
    expect(r.stdout).toContain(
      '0 processes alive, 0 worker threads, 0 timers, 0 waiters, 0 turns → verified quiescent (nothing the runtime started',
    );
    const events = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { actor: string; type: string });
    const actors = new Set(events.map((e) => e.actor));
    for (const id of ['tether.jobs', 'tether.agents', 'agent:alice', 'router:bob'])
      expect(actors).toContain(id);
    // V1: stable ids only, never XState's per-process session ids; every line has a timestamp.
    for (const id of actors) if (id !== undefined) expect(id).not.toMatch(/^x:\d+/);
    expect(events.every((e) => typeof (e as { ts?: unknown }).ts === 'number')).toBe(true);
    expect(readFileSync(log, 'utf8')).not.toMatch(/AgentOwnerToken/); // O1: tokens never in events
  });

  it('reads for a newcomer: labels are what runs, deliberate failures say so, each idea glossed once', () => {
    const r = spawnSync(process.execPath, [cli, 'demo'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    const out = r.stdout;
    // Each job is named by what it runs, at its start and in its notice.
    for (const command of [
      'sleep 1.5; echo build ok',
      'sleep 1; echo 2 tests failed; exit 1',
      'while :; do sleep 1; done',
    ]) {
      expect(out).toMatch(
        new RegExp(`started job job_\\S+ "${command.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`),
      );
      expect(out).toContain(`job "${command}"`);
    }
    expect(out).toContain('(stands in for the tests; fails on purpose)');
    expect(out).toContain('(false fails on purpose: execute returns the exit code)');
    // One gloss per idea, right after its first appearance.
    const lines = out.split('\n');
    const glossAt = (text: string) => lines.flatMap((line, i) => (line.includes(text) ? [i] : []));
    const stdinGloss = glossAt('stdin_read = proven from /proc');
    expect(stdinGloss).toHaveLength(1);
    expect(lines[stdinGloss[0]! - 1]).toContain('→ waitReason stdin_read');
    const wakeGloss = glossAt('wake budget = an idle agent is woken by at most 3 notices in a row');
    expect(wakeGloss).toHaveLength(1);
    expect(lines[wakeGloss[0]! - 1]).toMatch(/woken by a notice \(turn \d, wake 1 of 3\)/);
    expect(
      glossAt('verified quiescent (nothing the runtime started is left running or pending)'),
    ).toHaveLength(1);
  });

  it('V2 (issue 33.6): demo --serve keeps the agents working until Ctrl-C, then stops to verified quiescence', async () => {
    const live = startTether(['demo', '--serve']);
    expect(await printedWithin(live, 'the agents keep working, a request every few seconds', 30_000)).toBe(
      true,
    );
    const url = /open (http:\/\/\S+) \(read-only/.exec(live.stdout())?.[1];
    expect(url).toBeDefined();
    // A person who opens the page after the script sees new work start and end.
    // Only what the mirror helpers read of a Mirror: its address.
    const mirror = { url: url!, origin: new URL(url!).origin } as unknown as Mirror;
    const cookie = await login(mirror);
    const since = Date.now();
    const seen = await readFeed(
      mirror,
      cookie,
      (f) => f.type === 'job.ended' && typeof f.ts === 'number' && f.ts > since,
    );
    expect(seen.some((f) => f.type === 'job.started' && (f.ts as number) > since)).toBe(true);
    expect(
      await printedWithin(live, 'the user says "the same again: a server, then ask me (round 2)"', 30_000),
    ).toBe(true);
    expect(live.child.exitCode).toBeNull(); // still live, long after the script's ~3 s
    live.child.kill('SIGINT');
    expect(await live.exited).toBe(0);
    expect(live.stdout()).toContain('demo     stopped (Ctrl-C)');
    expect(live.stdout()).toMatch(/0 processes alive, .* → verified quiescent/);
    expect(live.stderr()).toBe('');
  });

  it('V1 (issue 33.8): --inspect with a relative path prints the absolute path it writes, before and after', () => {
    const r = spawnSync(process.execPath, [cli, 'demo', '--inspect', 'relative.jsonl'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    const path = join(dir, 'relative.jsonl');
    expect(existsSync(path)).toBe(true);
    const lines = r.stdout.split('\n');
    const announcedAt = lines.findIndex((l) => l.includes(`writing the facts to ${path}`));
    expect(announcedAt).toBeGreaterThanOrEqual(0);
    expect(announcedAt).toBeLessThan(3); // said at the start, before the agents act
    expect(r.stdout).toContain(
      `facts written to ${path} (JSONL, docs/FACTS.md); replay: tether view ${path}`,
    );
  });

  it('(issue 33.8): demo --help says where the log goes and which environment the commands get', () => {
    const help = spawnSync(process.execPath, [cli, 'demo', '--help'], { encoding: 'utf8' }).stdout;
    expect(help).toContain('its absolute path is printed before and after the run');
    expect(help).toContain(
      'Tether sets no\nEDITOR, VISUAL or COLOR: an EDITOR=vi or COLOR=0 a child sees came from your environment',
    );
    expect(help).toContain('until Ctrl-C');
  });

  it('--help and bad flags', () => {
    const help = spawnSync(process.execPath, [cli, 'demo', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: tether demo');
    const bad = spawnSync(process.execPath, [cli, 'demo', '--nope'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe("tether demo: unknown option '--nope'\nRun 'tether demo --help' for usage.\n");
  });
});
