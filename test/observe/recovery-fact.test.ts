import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Fact } from '../../src/index.js';
import { startCrashChild } from '../containment/crash-child.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('recovery in the fact stream', () => {
  it('V1, K3: what a runtime reaped of a SIGKILLed predecessor is a recovery.reaped fact in its log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-recovery-fact-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const stateDir = join(dir, 'state');
    const spillDir = join(dir, 'spill');
    const dying = await startCrashChild({
      stateDir,
      spillDir,
      containment: 'marker',
      jobs: [{ command: 'sleep 300' }],
    });
    cleanups.push(() => dying.exited);
    dying.process.kill('SIGKILL');
    await dying.exited;
    const log = join(dir, 'next.jsonl');
    const rt = await createRuntime({
      stateDir,
      spillDir,
      containment: 'marker',
      log,
      limits: { cleanupGraceMs: 300 },
    });
    await rt.dispose();
    const facts = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Fact);
    expect(facts.map((f) => f.type).slice(0, 2)).toEqual(['runtime.started', 'recovery.reaped']);
    expect(facts[1]).toMatchObject({
      runtimes: [
        { pid: dying.report.pid, escaped: [], spillFiles: 1, proof: 'proc', killed: expect.any(Number) },
      ],
    });
  });
});
