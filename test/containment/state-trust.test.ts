import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, TetherError } from '../../src/index.js';
import { probeCgroup } from '../../src/subprocess/containment/cgroup-fs.js';
import { processScope } from '../../src/subprocess/containment/ledger.js';
import { readIdentity } from '../../src/subprocess/identity.js';
import { tether } from '../cli/cli-helpers.js';
import { waitFor } from '../support/spawn-tree.js';
import { alive } from './escapees.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const probe = probeCgroup();
const root = process.getuid?.() === 0;
const NOBODY = 65534;

// A process in a cgroup that is not Tether's, and a directory that is not a spill directory.
async function victims(dir: string) {
  const precious = join(dir, 'precious');
  mkdirSync(precious);
  writeFileSync(join(precious, 'keep'), 'x');
  const sleeper: ChildProcess = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
  cleanups.push(() => sleeper.kill('SIGKILL'));
  const id = await waitFor(() => readIdentity(sleeper.pid!), 'the victim to start');
  let cgroup: string | null = null;
  if (probe.ok) {
    cgroup = join(probe.self, `victim-${process.pid}-${Date.now()}`);
    mkdirSync(cgroup);
    writeFileSync(join(cgroup, 'cgroup.procs'), String(sleeper.pid));
    cleanups.push(() => {
      sleeper.kill('SIGKILL');
      return waitFor(() => {
        try {
          rmdirSync(cgroup!);
          return true;
        } catch {
          return null;
        }
      }, 'the victim cgroup to empty');
    });
  }
  return { precious, sleeper: id, cgroup };
}

// A record of a dead runtime, as a planted file: its pid names no process.
function plant(stateDir: string, fields: Record<string, unknown>): string {
  const pid = spawnSync('true').pid!;
  const runtimeId = `${pid}-1-1`;
  mkdirSync(join(stateDir, 'runtimes'), { recursive: true });
  const file = join(stateDir, 'runtimes', `${runtimeId}.json`);
  const record = {
    version: 1,
    runtimeId,
    pid,
    startTime: 1,
    ...processScope(),
    containment: 'cgroup',
    cgroup: null,
    markerPrefix: `${pid}.AAAAAAAA.`,
    spillDir: null,
    startedAt: Date.now(),
    ...fields,
  };
  writeFileSync(file, JSON.stringify(record));
  return file;
}

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-trust-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const reap = (stateDir: string) => tether('reap', '--state-dir', stateDir, '--grace', '100');

describe.skipIf(!root)('state directory trust (run as root)', () => {
  it("K3: `tether reap` refuses another user's 0777 state directory and its planted record: the victim process, its cgroup and the named directory survive", async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    const { precious, sleeper, cgroup } = await victims(dir);
    const record = plant(stateDir, { cgroup, spillDir: precious });
    for (const path of [stateDir, join(stateDir, 'runtimes'), record]) {
      chownSync(path, NOBODY, NOBODY);
      chmodSync(path, 0o777);
    }
    const loose = reap(stateDir);
    expect(loose.status).toBe(1);
    expect(loose.stderr).toContain(`refusing the state directory ${stateDir}`);
    expect(loose.stderr).toMatch(/belongs to uid 65534|writable by others/);
    expect(alive([sleeper])).toEqual([sleeper.pid]);
    expect(existsSync(join(precious, 'keep'))).toBe(true);
    if (cgroup !== null) expect(existsSync(cgroup)).toBe(true);
    expect(existsSync(record)).toBe(true);
    // The same rules on start: createRuntime refuses, and leaves no cgroup of its own behind.
    const before = ownCgroups();
    const err = await createRuntime({ stateDir, spillDir: join(dir, 'spill') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherError);
    expect(err).toMatchObject({ code: 'STATE_UNTRUSTED' });
    expect(ownCgroups()).toEqual(before);
    expect(alive([sleeper])).toEqual([sleeper.pid]);
  });

  it('K3: a state directory whose enter-cgroup.bash (sourced by every shell.run) others can write is refused', async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    writeFileSync(join(stateDir, 'enter-cgroup.bash'), 'echo planted\n', { mode: 0o666 });
    chmodSync(join(stateDir, 'enter-cgroup.bash'), 0o666);
    await expect(createRuntime({ stateDir, spillDir: join(dir, 'spill') })).rejects.toMatchObject({
      code: 'STATE_UNTRUSTED',
      message: expect.stringContaining('enter-cgroup.bash is writable by others'),
    });
    expect(reap(stateDir).status).toBe(1);
  });

  it("K3: a private state directory's record is still not believed when it names a cgroup that is not a Tether runtime's, a spill directory without the runtime's id or another runtime's marker", async () => {
    const dir = scratch();
    const { precious, sleeper, cgroup } = await victims(dir);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ containment: 'marker', spillDir: precious }, /names the spill directory/],
      [{ containment: 'marker', markerPrefix: 'not-a-prefix.' }, /names the marker/],
      ...(cgroup === null ? [] : ([[{ cgroup }, /names the cgroup/]] as [Record<string, unknown>, RegExp][])),
    ];
    for (const [fields, why] of cases) {
      const stateDir = join(dir, `state-${Math.random().toString(36).slice(2)}`);
      mkdirSync(stateDir, { mode: 0o700 });
      const record = plant(stateDir, fields);
      const refused = reap(stateDir);
      expect(refused.stderr).toMatch(why);
      expect(refused.status).toBe(1);
      expect(existsSync(record)).toBe(true);
      expect(alive([sleeper])).toEqual([sleeper.pid]);
      expect(existsSync(join(precious, 'keep'))).toBe(true);
      if (cgroup !== null) expect(existsSync(cgroup)).toBe(true);
      await expect(createRuntime({ stateDir, spillDir: join(dir, 'spill') })).rejects.toMatchObject({
        code: 'STATE_UNTRUSTED',
      });
    }
  });
});

// This process's runtime cgroups (`tether-<pid>-…`) now.
function ownCgroups(): string[] {
  if (!probe.ok) return [];
  return readdirSync(probe.self).filter((n) => n.startsWith(`tether-${process.pid}-`));
}
