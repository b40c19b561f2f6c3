import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';
import { probeCgroup } from '../../src/subprocess/containment/cgroup-fs.js';
import { readIdentity } from '../../src/subprocess/identity.js';
import type { ProcessIdentity } from '../../src/subprocess/types.js';
import { waitFor } from '../support/spawn-tree.js';
import { type CrashChild, startCrashChild } from './crash-child.js';
import { alive, ESCAPEES, escapeeIdentities } from './escapees.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// setsid and nohup escapees that keep their env (the marker can find them; `env -i` it cannot).
const MARKER_ESCAPEES = [
  'echo "leader $$" >> "$P"',
  `(setsid sh -c 'echo "setsid $$" >> "$P"; exec sleep 300' &)`,
  `nohup sh -c 'echo "nohup $$" >> "$P"; exec sleep 300' >/dev/null 2>&1 &`,
  `( (sh -c 'echo "double $$" >> "$P"; exec sleep 300' <&- >&- 2>&- &) & )`,
  `sh -c 'echo "stopped $$" >> "$P"; kill -STOP $$; exec sleep 300' &`,
  'while [ "$(wc -l < "$P")" -lt 5 ]; do sleep 0.05; done',
  'sleep 300',
].join('\n');

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-crash-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function pidsIn(path: string, count: number): Promise<ProcessIdentity[]> {
  return waitFor(() => {
    try {
      const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
      if (lines.length < count) return null;
      return lines.map((l) => {
        const pid = Number(l.split(' ').at(-1));
        return readIdentity(pid) ?? { pid, startTime: -1 };
      });
    } catch {
      return null;
    }
  }, `${count} pids in ${path}`);
}

const modes = probeCgroup().ok ? (['cgroup', 'marker'] as const) : (['marker'] as const);

describe.each(modes)('crash recovery (%s)', (containment) => {
  it(`K3 (${containment}): a SIGKILLed runtime's jobs, terminal program, escapees and spills are reaped by the next runtime and reported; a live runtime's jobs are untouched`, async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    const spillDir = join(dir, 'spill');
    const escapeeFile = join(dir, 'escapees');
    const terminalFile = join(dir, 'terminal');
    const liveFile = join(dir, 'live');
    const children: CrashChild[] = [];
    cleanups.push(async () => {
      for (const c of children) c.process.stdin?.end();
      await Promise.all(children.map((c) => c.exited));
    });
    const dying = await startCrashChild({
      stateDir,
      spillDir,
      containment,
      jobs: [
        { command: containment === 'cgroup' ? ESCAPEES : MARKER_ESCAPEES, env: { P: escapeeFile } },
        { command: 'sleep 300' },
      ],
      terminal: `trap '' HUP; echo "terminal $$" >> ${terminalFile}; sleep 300`,
    });
    children.push(dying);
    const live = await startCrashChild({
      stateDir,
      spillDir,
      containment,
      jobs: [{ command: 'echo "live $$" >> "$P"; exec sleep 300', env: { P: liveFile } }],
    });
    children.push(live);
    const escapees =
      containment === 'cgroup'
        ? Object.values(await escapeeIdentities(escapeeFile))
        : await pidsIn(escapeeFile, 5);
    const [terminalShell] = await pidsIn(terminalFile, 1);
    const [liveJob] = await pidsIn(liveFile, 1);
    const doomed = [...escapees, terminalShell!];
    expect(alive(doomed)).toHaveLength(doomed.length);
    expect(dying.report.spillPath).not.toBeNull();
    expect(existsSync(dying.report.spillPath!)).toBe(true);

    dying.process.kill('SIGKILL');
    await dying.exited;
    expect(alive(doomed)).toHaveLength(doomed.length); // nothing died with it

    const rt = await createRuntime({ stateDir, spillDir, containment, limits: { cleanupGraceMs: 300 } });
    cleanups.push(() => rt.dispose());
    expect(rt.recovered).toEqual([
      expect.objectContaining({ pid: dying.report.pid, containment, escaped: [], spillFiles: 1 }),
    ]);
    // Five escapees, the terminal's shell and its sleep, the other job, the shells between.
    expect(rt.recovered[0]!.killed).toBeGreaterThanOrEqual(doomed.length + 2);
    expect(alive(doomed)).toEqual([]);
    expect(existsSync(dying.report.spillPath!)).toBe(false);
    if (containment === 'cgroup') expect(existsSync(rt.recovered[0]!.cgroup!)).toBe(false);
    // The live runtime's job was never touched, and a second reaper finds nothing to do.
    expect(alive([liveJob!])).toEqual([liveJob!.pid]);
    const again = await createRuntime({ stateDir, spillDir, containment });
    cleanups.push(() => again.dispose());
    expect(again.recovered).toEqual([]);
    expect(alive([liveJob!])).toEqual([liveJob!.pid]);
  });
});

describe('tether reap', () => {
  it("K3: `tether reap` kills a dead runtime's trees, says so readably and exits 0; then there is nothing to reap", async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    const pidsFile = join(dir, 'pids');
    const dying = await startCrashChild({
      stateDir,
      spillDir: join(dir, 'spill'),
      containment: modes[0],
      jobs: [{ command: MARKER_ESCAPEES, env: { P: pidsFile } }],
    });
    cleanups.push(() => dying.exited);
    const pids = await pidsIn(pidsFile, 5);
    dying.process.kill('SIGKILL');
    await dying.exited;
    const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, [
        cli,
        'reap',
        '--state-dir',
        stateDir,
        '--grace',
        '300',
        ...args,
      ]);
    const first = await run();
    expect(first.stdout).toMatch(
      new RegExp(
        `^tether reap: 1 dead runtime in ${stateDir}\\n  runtime \\S+ \\(pid ${dying.report.pid}, ${modes[0]}\\): \\d+ processes killed, 1 spill file removed.*; verified dead \\(proof (cgroup|proc)\\)\\n$`,
      ),
    );
    expect(alive(pids)).toEqual([]);
    const second = await run('--json');
    expect(JSON.parse(second.stdout)).toEqual({ stateDir, reaped: [] });
    const usage = await run('--bogus').catch((e: { code: number; stderr: string }) => e);
    expect(usage).toMatchObject({ code: 2 });
  });
});
