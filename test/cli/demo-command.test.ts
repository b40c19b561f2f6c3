import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tether-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tether demo', () => {
  it('W1, W3, T6, J7, D2: shows every guarantee once and ends verified quiescent; --inspect writes JSONL', () => {
    const log = join(dir, 'inspect.jsonl');
    const r = spawnSync(process.execPath, [cli, 'demo', '--inspect', log], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/kill job_\S+: requested/);
    expect(r.stdout).toMatch(/is killed \(cancel requested: true\)/);
    expect(r.stdout).toContain('waitReason stdin_read');
    expect(r.stdout).toContain('you said: y');
    expect(r.stdout).toMatch(/woken by a completion notice .* failed \(exit 1\)/);
    expect(r.stdout).toContain('succeeded (exit 0)');
    expect(r.stdout).toContain('→ session_exit; turn ends');
    expect(r.stdout).toMatch(
      /bob .*woken by a completion notice \(turn \d\): .*terminal term_\S+ ended on its own \(exit 0\)/,
    );
    expect(r.stdout).toContain(
      '0 processes alive, 0 worker threads, 0 timers, 0 waiters, 0 turns → verified quiescent',
    );
    const events = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { actor: string; type: string });
    const actors = new Set(events.map((e) => e.actor));
    for (const id of ['tether.jobs', 'tether.agents', 'agent:alice:1', 'router:bob:2'])
      expect(actors).toContain(id);
    expect(readFileSync(log, 'utf8')).not.toMatch(/AgentOwnerToken/); // O1: tokens never in events
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
