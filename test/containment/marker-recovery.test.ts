import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { readIdentity, signalIdentity } from '../../src/subprocess/identity.js';
import type { ProcessIdentity } from '../../src/subprocess/types.js';
import { cli } from '../cli/cli-helpers.js';
import { waitFor } from '../support/spawn-tree.js';
import { startCrashChild } from './crash-child.js';
import { alive } from './escapees.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// Three `env -i` processes (no marker) that outlive a SIGKILLed host in marker mode: one left in
// the job's group, orphaned; one in a session of its own but still the job's child; one in a
// session of its own, orphaned (nothing points at it: it can only be reported).
const ENVLESS = [
  `(env -i sh -c 'echo "group-orphan $$" >> "$0"; exec sleep 300' "$P" &)`,
  `setsid env -i sh -c 'echo "setsid-child $$" >> "$0"; exec sleep 300' "$P" &`,
  `(setsid env -i sh -c 'echo "setsid-orphan $$" >> "$0"; exec sleep 300' "$P" &)`,
  'while [ "$(wc -l < "$P")" -lt 3 ]; do sleep 0.05; done',
  'sleep 300',
].join('\n');

async function crashWithEnvless() {
  const dir = mkdtempSync(join(tmpdir(), 'tether-marker-crash-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const stateDir = join(dir, 'state');
  const spillDir = join(dir, 'spill');
  const pidsFile = join(dir, 'pids');
  const dying = await startCrashChild({
    stateDir,
    spillDir,
    containment: 'marker',
    jobs: [{ command: ENVLESS, env: { P: pidsFile } }],
  });
  const lines = await waitFor(() => {
    try {
      const found = readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean);
      return found.length >= 3 ? found : null;
    } catch {
      return null;
    }
  }, 'three envless processes');
  const envless = Object.fromEntries(
    lines.map((l) => {
      const [kind, pid] = l.split(' ');
      return [kind, readIdentity(Number(pid)) ?? { pid: Number(pid), startTime: -1 }];
    }),
  ) as Record<'group-orphan' | 'setsid-child' | 'setsid-orphan', ProcessIdentity>;
  // Whatever the reaper reports and leaves, the test does not leave it running.
  cleanups.push(() => {
    for (const id of Object.values(envless)) signalIdentity(id, 'SIGKILL');
  });
  dying.process.kill('SIGKILL');
  await dying.exited;
  expect(alive(Object.values(envless))).toHaveLength(3);
  return { stateDir, spillDir, envless, pid: dying.report.pid };
}

describe('marker-mode crash recovery', () => {
  it("K3 (marker): recovery kills the dead runtime's unmarked processes in its trees' groups and below them, and reports a setsid env -i orphan in escaped — never 'verified dead' while one lives", async () => {
    const { stateDir, spillDir, envless, pid } = await crashWithEnvless();
    const rt = await createRuntime({
      stateDir,
      spillDir,
      containment: 'marker',
      limits: { cleanupGraceMs: 200 },
    });
    cleanups.push(() => rt.dispose());
    expect(rt.recovered).toHaveLength(1);
    const [recovered] = rt.recovered;
    expect(recovered).toMatchObject({ pid, containment: 'marker', proof: 'proc' });
    expect(alive([envless['group-orphan'], envless['setsid-child']])).toEqual([]);
    const survivors = alive(Object.values(envless));
    // The orphan no rule can attribute is either killed or named; never called dead.
    for (const survivor of survivors) expect(recovered!.escaped).toContain(survivor);
    expect(survivors.length === 0 || recovered!.escaped.length > 0).toBe(true);
  });

  it("K3 (marker): `tether reap` says NOT VERIFIED DEAD and exits 1 while the dead runtime's setsid env -i orphan lives", async () => {
    const { stateDir, envless } = await crashWithEnvless();
    const run = promisify(execFile)(process.execPath, [
      cli,
      'reap',
      '--state-dir',
      stateDir,
      '--grace',
      '200',
    ]);
    const result = await run.then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );
    expect(alive([envless['group-orphan'], envless['setsid-child']])).toEqual([]);
    const survivors = alive(Object.values(envless));
    if (survivors.length > 0) {
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('NOT VERIFIED DEAD');
      for (const survivor of survivors) expect(result.stdout).toContain(String(survivor));
    }
    expect(result.stdout).not.toMatch(survivors.length > 0 ? /verified dead \(proof/ : /NOT VERIFIED/);
  });
});
