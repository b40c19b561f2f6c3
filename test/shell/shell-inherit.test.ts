import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, type ShellResult, TetherError } from '../../src/index.js';

// A separate Node process owns the fds the command inherits, so the test can read them as pipes.
const fixture = fileURLToPath(new URL('./fixtures/run-inherit.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tether-inherit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runInherited(command: string) {
  const resultPath = join(dir, `result-${Math.random().toString(36).slice(2)}.json`);
  const spillDir = mkdtempSync(join(dir, 'spill-'));
  const child = spawn(process.execPath, [fixture, command, resultPath, spillDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  return new Promise<{
    stdout: string;
    stderr: string;
    status: number | null;
    spillDir: string;
    result: ShellResult;
  }>((resolve) => {
    child.once('close', (status) => {
      const result = JSON.parse(readFileSync(resultPath, 'utf8')) as ShellResult;
      resolve({ stdout, stderr, status, spillDir, result });
    });
  });
}

describe("rt.shell.run({ stdio: 'inherit' })", () => {
  it("C1: stdout and stderr go straight to this process's fd 1 and 2, every byte; the result has no output", async () => {
    const r = await runInherited('seq 1 100000; echo "to stderr" >&2; exit 3');
    expect(r.status).toBe(0);
    // Far beyond the 30,000-character capture cap, and not a byte missing or added.
    expect(r.stdout.split('\n').length - 1).toBe(100_000);
    expect(r.stdout.endsWith('99999\n100000\n')).toBe(true);
    expect(r.stderr).toBe('to stderr\n');
    expect(r.result).toMatchObject({ exitCode: 3, output: '', truncated: false, drainTimedOut: false });
    expect(r.result.spillPath).toBeUndefined();
    expect(readdirSync(r.spillDir)).toEqual([]); // nothing captured, nothing spilled
  });
});

describe('stdio option checks', () => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await createRuntime({ spillDir: false });
  });
  afterAll(async () => {
    await rt.dispose();
  });

  it('C1: an unknown stdio value throws INVALID_ARGUMENT naming stdio', async () => {
    const err = await rt.shell.run({ command: 'true', stdio: 'tty' as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherError);
    expect((err as TetherError).code).toBe('INVALID_ARGUMENT');
    expect((err as TetherError).message).toContain("stdio must be 'pipe'");
  });

  it("C3: background refuses stdio 'inherit' (a job's output is read with jobs.read) and starts nothing", async () => {
    const lease = rt.owners.host();
    const err = await rt.shell
      .background(lease.token, { command: 'true', stdio: 'inherit' })
      .catch((e: unknown) => e);
    expect((err as TetherError).code).toBe('INVALID_ARGUMENT');
    expect((err as TetherError).message).toContain('jobs.read');
    expect(await rt.jobs.list(lease.token)).toEqual([]);
    lease.retire();
  });

  it("C1: stdio 'pipe' (the default) still captures", async () => {
    const r = await rt.shell.run({ command: 'echo out; echo err >&2', stdio: 'pipe' });
    expect(r.output).toBe('out\nerr\n');
  });
});
