import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { signalIdentity } from '../../src/subprocess/identity.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { spawnerOf } from '../support/spawner-of.js';
import { startCrashChild } from './crash-child.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const list = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

describe('crash leftovers', () => {
  it.each([
    ['host', false],
    ['host and its spawner', true],
  ] as const)(
    'K3: after a SIGKILL of the %s, recovery leaves no spawner FIFO directory: it is below the state dir, never in $TMPDIR',
    async (_, spawnerToo) => {
      const dir = mkdtempSync(join(tmpdir(), 'tether-leftovers-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const stateDir = join(dir, 'state');
      const spillDir = join(dir, 'spill');
      const tmp = join(dir, 'tmp');
      mkdirSync(tmp);
      const dying = await startCrashChild({
        stateDir,
        spillDir,
        containment: 'marker',
        jobs: [{ command: 'sleep 300' }],
        env: { TMPDIR: tmp },
      });
      cleanups.push(() => dying.exited);
      // The spawner is the host's child; a crash that takes the whole group takes it too.
      const spawner = spawnerOf(dying.report.pid);
      dying.process.kill('SIGKILL');
      if (spawnerToo) {
        expect(spawner).not.toBeNull();
        signalIdentity(spawner!, 'SIGKILL');
      }
      await dying.exited;
      const leftInTmp = () => list(tmp).filter((n) => n.startsWith('tether-spawn-'));
      expect(leftInTmp()).toEqual([]);
      // A spawner killed with its host removed nothing: the leftover is where recovery looks.
      if (spawnerToo) expect(list(join(stateDir, 'spawn'))).toHaveLength(1);

      const rt = await createRuntime({
        stateDir,
        spillDir,
        containment: 'marker',
        limits: { cleanupGraceMs: 200 },
      });
      expect(rt.recovered).toEqual([expect.objectContaining({ pid: dying.report.pid, escaped: [] })]);
      await rt.dispose();
      expect(list(join(stateDir, 'spawn'))).toEqual([]);
      expect(leftInTmp()).toEqual([]);
      expect(listTaggedProcesses(`${dying.report.pid}.`)).toEqual([]);
    },
  );
});
