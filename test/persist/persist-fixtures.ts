import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { createRuntime, type Fact, type Runtime, type RuntimeOptions } from '../../src/index.js';
import { type PersistChild, startPersistChild } from './persist-child.js';

export interface PersistFixtures {
  /** A fresh state directory, removed after the test. */
  scratch(): string;
  /** A persisted runtime in a child process (the one the test SIGKILLs), killed after the test. */
  child(opts: Parameters<typeof startPersistChild>[0]): Promise<PersistChild>;
  /** A persisted runtime in this process, its facts collected from the start, disposed after the test. */
  runtime(stateDir: string, name: string, lingerMs?: number): Promise<{ rt: Runtime; facts: Fact[] }>;
}

/**
 * The scratch state of the K6 tests, ended after each test in the reverse order it was made.
 * Call once at the top of a test file; `limits` are the in-process runtime's (cleanupGraceMs 300
 * unless set).
 */
export function persistFixtures(limits: RuntimeOptions['limits'] = {}): PersistFixtures {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    scratch() {
      const dir = mkdtempSync(join(tmpdir(), 'tether-persist-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return dir;
    },
    async child(opts) {
      const started = await startPersistChild(opts);
      cleanups.push(() => {
        started.process.kill('SIGKILL');
        return started.exited;
      });
      return started;
    },
    async runtime(stateDir, name, lingerMs = 20_000) {
      const rt = await createRuntime({
        stateDir,
        persist: { name, lingerMs },
        limits: { cleanupGraceMs: 300, ...limits },
      });
      const facts: Fact[] = [];
      rt.observe((fact) => facts.push(fact), { replay: true });
      cleanups.push(() => rt.dispose());
      return { rt, facts };
    },
  };
}
