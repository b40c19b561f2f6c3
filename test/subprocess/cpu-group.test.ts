import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type RuntimeOptions } from '../../src/index.js';
import { ownCgroupDir } from '../../src/subprocess/containment/cgroup-fs.js';
import { enterCpuGroup, openCpuGroup } from '../../src/subprocess/containment/cpu-group.js';
import { createMarkerContainment } from '../../src/subprocess/containment/marker-containment.js';
import { signalIdentity } from '../../src/subprocess/identity.js';
import { spawnerBinary } from '../../src/subprocess/spawner/spawner.js';
import { startCrashChild } from '../containment/crash-child.js';
import { waitFor } from '../support/spawn-tree.js';
import { spawnerOf } from '../support/spawner-of.js';

// Issue 30.6 / S1: all of a runtime's trees share one CPU group (cgroup v1 `cpu`, beside the
// runtime's process) weighing one process `nice` levels below it, so 64 session autogroups no
// longer outweigh the event loop 64 to 1. Read back from /proc by the trees themselves.

const cpu = ownCgroupDir('cpu');
const canGroup = cpu.ok && process.getuid?.() === 0 && spawnerBinary() !== null;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const open = async (options: RuntimeOptions = {}) => {
  const rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 300 }, ...options });
  cleanups.push(() => rt.dispose());
  return rt;
};

// The CPU groups of runtimes beside this process (`tether-<pid>-<start>-<n>`).
const groups = () => (cpu.ok ? readdirSync(cpu.self).filter((n) => /^tether-\d+-\d+-\d+$/.test(n)) : []);
const ofThisProcess = () => groups().filter((n) => n.startsWith(`tether-${process.pid}-`));
// The `cpu` line of a /proc/<pid>/cgroup a tree printed: its group's name, or '/'.
const CPU_LINE = 'grep -E "^[0-9]+:([^:]*,)?cpu(,[^:]*)?:" /proc/$$/cgroup';
// The same, read with builtins only (no fork first): the first thing a shell does.
const FIRST_READ = 'while read -r l; do echo "$l"; done </proc/$$/cgroup';
const groupIn = (output: string) =>
  /^\d+:(?:[^:\n]*,)?cpu(?:,[^:\n]*)?:(\S*)/m.exec(output)?.[1]?.split('/').pop() || '/';

describe.runIf(canGroup)('trees share one CPU group (issue 30.6, S1)', () => {
  it('issue 30.6: a job, a shell.run and a terminal shell run in the runtime’s CPU group (shares 110 at nice 10); dispose removes it', async () => {
    const before = new Set(ofThisProcess());
    const rt = await open();
    const [mine] = ofThisProcess().filter((n) => !before.has(n));
    expect(mine).toBeDefined();
    expect(readFileSync(join(cpu.ok ? cpu.self : '', mine!, 'cpu.shares'), 'utf8').trim()).toBe('110');

    const r = await rt.shell.run({ command: CPU_LINE, timeoutMs: 10_000 });
    expect(groupIn(r.output)).toBe(mine);
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, { command: CPU_LINE });
    expect(await rt.jobs.wait(lease.token, job.id, 10_000)).toBe(true);
    expect(groupIn((await rt.jobs.read(lease.token, job.id, 0)).text)).toBe(mine);
    const term = await rt.terminals.open(lease.token, {});
    const sent = await rt.terminals.send(lease.token, term.id, `${CPU_LINE}\r`, { timeoutMs: 2000 });
    expect(groupIn(sent.output.slice(sent.output.indexOf('\n')))).toBe(mine);

    await rt.dispose();
    expect(ofThisProcess()).not.toContain(mine);
  });

  it('issue 30.6: after the spawner died, a child_process spawn is moved into the group too', async () => {
    const rt = await open();
    const [mine] = ofThisProcess();
    const spawner = spawnerOf(process.pid);
    expect(spawner).not.toBeNull();
    signalIdentity(spawner!, 'SIGKILL');
    await waitFor(() => (spawnerOf(process.pid) === null ? true : null), 'the spawner to die');
    // Builtins only, so the group is read before anything else could have moved the shell in.
    const r = await rt.shell.run({ command: `${FIRST_READ}; echo ppid=$PPID`, timeoutMs: 10_000 });
    expect(r.output).toContain(`ppid=${process.pid}`); // started by child_process, not the spawner
    expect(groupIn(r.output)).toBe(mine);
  });

  it('issue 30.6: a terminal shell is in the group from its first instruction (its startup reads its own group)', async () => {
    const rt = await open();
    const [mine] = ofThisProcess();
    const dir = mkdtempSync(join(tmpdir(), 'tether-cpu-group-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // The "shell" notes its group before anything else, then becomes an interactive shell: a
    // leader moved in only after it started reads the runtime's own group here.
    const shell = join(dir, 'shell.sh');
    writeFileSync(shell, `#!/bin/sh\n${FIRST_READ} >'${dir}/first'\nexec /bin/sh\n`, { mode: 0o755 });
    const lease = rt.owners.host();
    await rt.terminals.open(lease.token, { shell });
    const first = await waitFor(() => {
      try {
        return readFileSync(join(dir, 'first'), 'utf8') || null;
      } catch {
        return null;
      }
    }, 'the shell to note its group');
    expect(groupIn(first)).toBe(mine);
  });

  it('issue 30.6: a tree the spawner does not start enters the group itself, before its program runs (nobody moves it in)', () => {
    const group = openCpuGroup(`${process.pid}-0-entry`, 10);
    expect(group).not.toBeNull();
    cleanups.push(() => group!.close());
    const weighed = enterCpuGroup(createMarkerContainment(), group);
    // Started by a plain spawnSync: only the tree's own argv can have put it in the group.
    for (const pty of [false, true]) {
      const tree = weighed.openTree(['/bin/sh', '-c', FIRST_READ], { PATH: '/usr/bin:/bin' }, { pty });
      const [file, ...args] = tree.argv;
      const out = spawnSync(file, args, { env: tree.env, encoding: 'utf8' });
      expect(groupIn(out.stdout)).toBe(`tether-${process.pid}-0-entry`);
      expect(tree.program).toBe('/bin/sh'); // still checked before the spawn
    }
    // The spawner's children enter at clone: their argv is the program's own.
    expect(weighed.openTree(['/bin/true'], {}, { entersAtClone: true }).argv).toEqual(['/bin/true']);
  });

  it('issue 30.6: nice 0 makes no group; the trees stay in the runtime’s own', async () => {
    // This process's groups only: other test files' runtimes make and remove theirs meanwhile.
    const before = ofThisProcess().length;
    const rt = await open({ nice: 0 });
    expect(ofThisProcess()).toHaveLength(before);
    const r = await rt.shell.run({ command: CPU_LINE, timeoutMs: 10_000 });
    expect(groupIn(r.output)).toBe(groupIn(readFileSync('/proc/self/cgroup', 'utf8')));
  });

  it('issue 30.6 / K3: a SIGKILLed runtime leaves its CPU group; the next runtime of its state dir removes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-cpu-group-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const stateDir = join(dir, 'state');
    const spillDir = join(dir, 'spill');
    const dying = await startCrashChild({
      stateDir,
      spillDir,
      containment: 'cgroup',
      jobs: [{ command: 'sleep 300' }],
    });
    cleanups.push(() => dying.exited);
    const left = () => groups().filter((n) => n.startsWith(`tether-${dying.report.pid}-`));
    expect(left()).toHaveLength(1);
    dying.process.kill('SIGKILL');
    await dying.exited;
    expect(left()).toHaveLength(1); // its `sleep 300` is still in it
    const rt = await createRuntime({ stateDir, spillDir, limits: { cleanupGraceMs: 200 } });
    cleanups.push(() => rt.dispose());
    expect(rt.recovered).toEqual([expect.objectContaining({ pid: dying.report.pid, escaped: [] })]);
    expect(left()).toEqual([]);
  });
});
