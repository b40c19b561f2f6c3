import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type SubprocessHandle } from '../../src/index.js';
import { probeCgroup } from '../../src/subprocess/containment/cgroup-fs.js';
import { createContainment } from '../../src/subprocess/containment/containment.js';
import type { Containment } from '../../src/subprocess/containment/containment-types.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { startSpawner } from '../../src/subprocess/spawner/spawner.js';
import { alive, ESCAPEES, type Escapees, escapeeIdentities, pidFile } from './escapees.js';

const cgroupHere = probeCgroup().ok;
const stateDir = () => `${process.env.TMPDIR ?? '/tmp'}/tether-state-test-${process.pid}`;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// How the leader is started: child_process (its entry is BASH_ENV or the sh wrapper), or the
// spawner process (it writes the child into the cgroup between clone and exec).
type Via = 'child_process' | 'spawner';

function providerWith(
  request: 'cgroup' | 'marker',
  via: Via = 'child_process',
): {
  containment: Containment;
  spawnEscapees: () => Promise<{ child: SubprocessHandle; ids: Escapees }>;
} {
  const containment = createContainment({
    request,
    runtimeId: `test-${request}-${Date.now()}`,
    stateDir: stateDir(),
  });
  const spawner = via === 'spawner' ? startSpawner() : null;
  if (via === 'spawner' && spawner === null)
    throw new Error('build/tether-spawner is missing: run npm install');
  const provider = createLocalProvider({ containment, spawner });
  cleanups.push(
    () => spawner?.dispose(),
    () => containment.dispose(),
    () => provider.dispose(),
  );
  const file = pidFile();
  cleanups.push(file.cleanup);
  return {
    containment,
    spawnEscapees: async () => {
      const child = await provider.spawn({
        argv: ['/bin/bash', '-c', ESCAPEES],
        cwd: '/',
        stdio: { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
        cleanupGraceMs: 300,
        env: { P: file.path },
      });
      const ids = await escapeeIdentities(file.path);
      return { child, ids };
    },
  };
}

describe.runIf(cgroupHere)('containment: cgroup (as root)', () => {
  it('K1: the default is cgroup where a writable cgroup v2 exists, and stats() says so', async () => {
    const rt = await createRuntime({ stateDir: stateDir() });
    cleanups.push(() => rt.dispose());
    expect(rt.stats().containment).toBe('cgroup');
    const result = await rt.shell.run({
      command: 'cat /proc/self/cgroup; echo "[$BASH_ENV][$TETHER_CGROUP_PROCS]"',
    });
    // The command ran inside its tree's cgroup below the runtime's, and saw no entry variables.
    expect(result.output).toMatch(/^0::\/.*tether-[\w-]+\/t\d+$/m);
    expect(result.output).toContain('[][]');
    const pty = await rt.terminals.open(rt.owners.host().token, {});
    expect(pty.id).toBeTruthy();
  });

  it('K1: a PTY shell enters its cgroup before it runs (the sh entry wrapper)', async () => {
    const rt = await createRuntime({ stateDir: stateDir(), containment: 'cgroup' });
    cleanups.push(() => rt.dispose());
    const owner = rt.owners.host().token;
    const term = await rt.terminals.open(owner, {});
    // execute returns once the command ended (markers), whatever the load; send may settle first.
    const ran = await rt.terminals.execute(owner, term.id, 'grep ^0:: /proc/$$/cgroup');
    expect(ran.output).toMatch(/0::\/.*tether-[\w-]+\/t\d+/);
  });

  it.each(['child_process', 'spawner'] as const)(
    'K2 (%s): nothing of a killed tree survives — setsid env -i, double fork with closed fds, nohup, stopped, TERM-ignoring leader; proof cgroup',
    async (via) => {
      const { containment, spawnEscapees } = providerWith('cgroup', via);
      const { child, ids } = await spawnEscapees();
      expect(alive(ids)).toHaveLength(5);
      const verdict = await child.kill();
      expect(verdict).toMatchObject({ status: 'quiescent', proof: 'cgroup' });
      expect(verdict.killed).toBeGreaterThanOrEqual(5);
      expect(alive(ids)).toEqual([]);
      expect(containment.trees).toBe(0);
      // The tree's cgroup is gone; the runtime's goes with dispose.
      await containment.dispose();
      expect(existsSync(containment.cgroup!)).toBe(false);
    },
  );

  it('K2: through the runtime, every escapee is gone after kill, drain and dispose', async () => {
    const rt = await createRuntime({ stateDir: stateDir(), limits: { cleanupGraceMs: 300 } });
    const cgroup = (rt.stats().containment === 'cgroup') as boolean;
    expect(cgroup).toBe(true);
    const files = [pidFile(), pidFile(), pidFile()];
    cleanups.push(...files.map((f) => f.cleanup));
    const lease = rt.owners.host();
    const jobs = await Promise.all(
      files.map((f) => rt.shell.background(lease.token, { command: ESCAPEES, env: { P: f.path } })),
    );
    const ids = (await Promise.all(files.map((f) => escapeeIdentities(f.path)))).flatMap((e) =>
      Object.values(e),
    );
    expect(alive(ids)).toHaveLength(15);
    await rt.jobs.kill(lease.token, jobs[0]!.id); // killed
    await rt.jobs.drainOwner(lease.token); // drained
    expect(alive(ids)).toEqual([]);
    const term = await rt.terminals.open(rt.owners.host().token, {});
    expect(term.id).toBeTruthy();
    await rt.dispose(); // disposed
    expect(alive(ids)).toEqual([]);
    expect(rt.stats().processes).toBe(0);
  });

  it("K1: containment: 'cgroup' and 'marker' are forced; anything else is INVALID_ARGUMENT", async () => {
    const rt = await createRuntime({ stateDir: stateDir(), containment: 'marker' });
    cleanups.push(() => rt.dispose());
    expect(rt.stats().containment).toBe('marker');
    await expect(createRuntime({ containment: 'kernel' as 'cgroup' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe('containment: marker', () => {
  it.each(['child_process', 'spawner'] as const)(
    'K2 (marker, %s): a setsid env -i orphan is reported escaped, never quiescent',
    async (via) => {
      const { spawnEscapees } = providerWith('marker', via);
      const { child, ids } = await spawnEscapees();
      const verdict = await child.kill();
      expect(verdict.status).toBe('escaped');
      const { envless } = ids; // the `setsid env -i` orphan: the marker cannot reach it
      expect(verdict.status === 'escaped' && verdict.escaped).toContain(envless.pid);
      // Everything else of the tree the marker did find and kill.
      expect(alive(ids)).toEqual([envless.pid]);
      process.kill(envless.pid, 'SIGKILL');
    },
  );

  it.runIf(process.getuid?.() === 0)(
    "K1: containment: 'cgroup' fails with CONTAINMENT_UNAVAILABLE for a user without a writable cgroup; the default falls back to marker",
    async () => {
      // A real unprivileged process (nobody), not a mock: its cgroup is root's.
      const script = `const { createRuntime } = await import(${JSON.stringify(new URL('../../dist/src/index.js', import.meta.url).href)});
        const fallback = await createRuntime(); console.log(fallback.stats().containment); await fallback.dispose();
        await createRuntime({ containment: 'cgroup' }).then(() => console.log('created'), (e) => console.log(e.code, e.message));`;
      const { stdout } = await promisify(execFile)('setpriv', [
        '--reuid=nobody',
        '--regid=nogroup',
        '--clear-groups',
        process.execPath,
        '--input-type=module',
        '-e',
        script,
      ]);
      const [mode, failure] = stdout.trim().split('\n');
      expect(mode).toBe('marker');
      expect(failure).toMatch(
        /^CONTAINMENT_UNAVAILABLE containment: 'cgroup' is not available here: .*not writable by uid 65534.*Delegate=yes/,
      );
    },
  );
});
