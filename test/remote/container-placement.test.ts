import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import type { Fact } from '../../src/observe/fact-types.js';
import type { ContainerPlacement } from '../../src/remote/container-placement.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { hostImage, removeContainer, startContainer, TEST_LABEL } from '../support/container-image.js';
import { agentsExample, containerExists, startCrashChild, stopProcess } from '../support/placed-runtime.js';
import { until } from '../support/waits.js';

// X6: owners placed in containers of their own, on real podman, in an image built from this
// host's own files (test/support/container-image.js). FIELD-NOTES: runc, ulimits, --init.
const MAIN = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

let image: string;
beforeAll(async () => {
  image = await hostImage();
}, 600_000);

function placementOf(img: string, ...runArgs: string[]): ContainerPlacement {
  return {
    engine: 'podman',
    image: img,
    engineArgs: ['--runtime', 'runc'],
    runArgs: [
      '--init',
      '--network',
      'none',
      '--pull',
      'never',
      '--ulimit',
      'nofile=20000:20000',
      '--ulimit',
      'nproc=32768:32768',
      // A crashed test run's containers are removed by test/support's removeStaleContainers.
      '--label',
      TEST_LABEL,
      '--label',
      `tether-test-pid=${process.pid}`,
      ...runArgs,
    ],
    exec: { heartbeat: { intervalMs: 500, countMax: 4 }, reconnect: { attempts: 3, delayMs: 200 } },
  };
}

interface Listed {
  readonly Id: string;
  readonly Names: string[];
  readonly State: string;
  readonly Labels: Record<string, string>;
}
// The containers whose runtime label names process `pid`.
function containersOf(pid: number): Listed[] {
  const out = execFileSync(
    'podman',
    ['ps', '-a', '--filter', `label=tether.pid=${pid}`, '--format', 'json'],
    { encoding: 'utf8' },
  );
  return JSON.parse(out) as Listed[];
}

describe('container placement (X6)', () => {
  let rt: Runtime | null = null;
  let stateDir: string;
  const cleanups: (() => unknown)[] = [];
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'tether-x6-state-'));
  });
  afterEach(async () => {
    await rt?.dispose();
    rt = null;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  const runtime = async () => {
    rt = await createRuntime({ cwd: '/tmp', stateDir, limits: { cleanupGraceMs: 500 } });
    return rt;
  };

  it('X6: a placed owner runs in its own container, removed when the owner retires after its trees are verified dead', async () => {
    const r = await runtime();
    const facts: Fact[] = [];
    let atVerdict: boolean | null = null;
    let name = '';
    r.observe((fact) => {
      facts.push(fact);
      // Synchronously, while the verdict is being reported: the container must still be there.
      if (fact.type === 'kill.verdict' && atVerdict === null && name !== '')
        atVerdict = containerExists(name);
    });
    const lease = r.owners.host({ placement: placementOf(image) });
    const where = await r.shell.run(
      { command: `uname -n; tr '\\0' ' ' < /proc/1/cmdline; echo; id -u` },
      lease.token,
    );
    const [c] = containersOf(process.pid);
    expect(c).toBeDefined();
    name = c!.Names[0]!;
    expect(where.exitCode).toBe(0);
    const [hostname, init] = where.output.split('\n');
    expect(c!.Id.startsWith(hostname!)).toBe(true); // the container's hostname: its short id
    expect(init).toContain('sleep infinity'); // its pid 1 (an init running `sleep infinity`)
    expect(c!.Labels).toMatchObject({ 'tether.pid': String(process.pid), 'tether.owner': 'o1' });
    expect(c!.Labels['tether.runtime']).toMatch(new RegExp(`^${process.pid}-\\d+-\\d+$`));
    expect(c!.Labels['tether.start']).toMatch(/^\d+$/);
    // An ownerless command still runs on the host.
    expect((await r.shell.run({ command: 'uname -n' })).output.trim()).not.toBe(hostname);

    const job = await r.shell.background(lease.token, { command: 'sleep 300' });
    await until(
      'the job runs',
      () => r.stats().jobs.running,
      (n) => n === 1,
    );
    lease.retire();
    await until(
      'the container is removed',
      () => containerExists(name),
      (there) => !there,
    );
    const verdict = facts.find((f) => f.type === 'kill.verdict' && f.actor === `job:${job.id}`);
    expect(verdict).toMatchObject({ status: 'quiescent' });
    expect(atVerdict).toBe(true); // the trees were dead before the container went
    expect(facts.find((f) => f.type === 'job.ended')).toMatchObject({ state: 'killed' });
  });

  it('X6: two owners get two containers; an agent too; dispose removes all of them', async () => {
    const r = await runtime();
    const one = r.owners.host({ placement: placementOf(image) });
    const two = r.owners.host({ placement: placementOf(image) });
    const names = async (owner: typeof one) =>
      (await r.shell.run({ command: 'uname -n' }, owner.token)).output.trim();
    const [a, b] = await Promise.all([names(one), names(two)]);
    expect(a).not.toBe(b);
    const outputs: string[] = [];
    const agent = r.agents.create({
      sessionId: 'boxed',
      placement: placementOf(image),
      sandbox: { mode: 'off' },
      onTurn: async (turn) => {
        turn.inbox.claim();
        outputs.push((await turn.agent.tools.call('bash', { command: 'uname -n' })).text);
      },
    });
    agent.say('where are you?');
    await agent.idle();
    const listed = containersOf(process.pid);
    expect(listed.map((c) => c.Labels['tether.owner']).sort()).toEqual(['o1', 'o2', 'o3']);
    expect(outputs[0]).not.toContain(a);
    expect(outputs[0]).not.toContain(b);
    expect(listed.some((c) => outputs[0]!.includes(c.Id.slice(0, 12)))).toBe(true);
    await r.dispose();
    expect(containersOf(process.pid)).toEqual([]);
    const stats = r.stats();
    expect([stats.workers, stats.processes, stats.waiters, stats.timers]).toEqual([0, 0, 0, 0]);
  });

  it('X6: an image that cannot start is PROVIDER_UNAVAILABLE with podman’s own error; nothing of the owner starts anywhere', async () => {
    const r = await runtime();
    const lease = r.owners.host({ placement: placementOf('localhost/tether-no-such-image:0') });
    const failed = await r.shell
      .run({ command: 'touch /tmp/x6-must-not-exist' }, lease.token)
      .catch((e) => e);
    expect(failed).toBeInstanceOf(TetherError);
    expect(failed).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect((failed as Error).message).toContain('image not known'); // podman's words
    expect((failed as Error).message).toContain('localhost/tether-no-such-image:0');
    const job = await r.shell.background(lease.token, { command: 'sleep 30' }).catch((e) => e);
    expect(job).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    const term = await r.terminals.open(lease.token, {}).catch((e) => e);
    expect(term).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    expect(await r.jobs.list(lease.token)).toEqual([]);
    expect(r.stats().processes).toBe(0);
    expect(containersOf(process.pid)).toEqual([]);
    expect(() => readFileSync('/tmp/x6-must-not-exist')).toThrow();
  });

  it('X6: misuse fails at host() and starts nothing: provider with placement, a sandbox left on, a bad engine', async () => {
    const sandboxed = await createRuntime({ cwd: '/tmp', stateDir, sandbox: { mode: 'read-only' } });
    cleanups.push(() => sandboxed.dispose());
    expect(() => sandboxed.owners.host({ placement: placementOf(image) })).toThrow(
      /sandbox: \{ mode: 'off' \}/,
    );
    const r = await runtime();
    const local = { name: 'x', spawn: async () => ({}), spawnTerminal: async () => ({}) } as never;
    expect(() => r.owners.host({ placement: placementOf(image), provider: local })).toThrow(
      /provider or placement, not both/,
    );
    expect(() => r.owners.host({ placement: { engine: 'lxc', image } as never })).toThrow(
      /placement: engine must be 'podman', 'docker' or 'kubernetes'/,
    );
    expect(() =>
      r.owners.host({ placement: { ...placementOf(image), exec: { connectTimeoutMs: -1 } } }),
    ).toThrow(/connectTimeoutMs/);
    expect(containersOf(process.pid)).toEqual([]);
  });

  it('X6: a crashed runtime’s containers are removed by the next runtime’s recovery; a live runtime’s and unlabelled ones are untouched', async () => {
    const live = await runtime();
    const liveLease = live.owners.host({ placement: placementOf(image) });
    await live.shell.run({ command: 'true' }, liveLease.token);
    const [liveContainer] = containersOf(process.pid);
    const unlabelled = await startContainer();
    cleanups.push(() => removeContainer(unlabelled));

    const child = await startCrashChild(stateDir, placementOf(image));
    const [crashed] = containersOf(child.pid);
    expect(crashed?.State).toBe('running');
    child.process.kill('SIGKILL');
    await child.exited;
    expect(containerExists(crashed!.Names[0]!)).toBe(true); // nothing removed it

    const next = await createRuntime({ cwd: '/tmp', stateDir, limits: { cleanupGraceMs: 300 } });
    cleanups.push(() => next.dispose());
    expect(next.recovered).toEqual([
      expect.objectContaining({
        pid: child.pid,
        containers: [
          { engine: 'podman', id: crashed!.Id, name: crashed!.Names[0], owner: 'o1', error: null },
        ],
      }),
    ]);
    expect(containerExists(crashed!.Names[0]!)).toBe(false);
    expect(containerExists(liveContainer!.Names[0]!)).toBe(true);
    expect(containerExists(unlabelled)).toBe(true);
    expect((await live.shell.run({ command: 'echo still here' }, liveLease.token)).output).toBe(
      'still here\n',
    );
  });

  it('X6: tether reap removes a crashed runtime’s containers and says so', async () => {
    const child = await startCrashChild(stateDir, placementOf(image));
    const [crashed] = containersOf(child.pid);
    child.process.kill('SIGKILL');
    await child.exited;
    const text = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir, '--grace', '300'], {
      reject: false,
    });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain(`runtime ${crashed!.Labels['tether.runtime']} (pid ${child.pid}`);
    expect(text.stdout).toContain('1 container removed');
    expect(containerExists(crashed!.Names[0]!)).toBe(false);

    const again = await startCrashChild(stateDir, placementOf(image));
    const [second] = containersOf(again.pid);
    again.process.kill('SIGKILL');
    await again.exited;
    const json = await execa(process.execPath, [MAIN, 'reap', '--state-dir', stateDir, '--json'], {
      reject: false,
    });
    expect(json.exitCode, json.stderr).toBe(0);
    const { reaped } = JSON.parse(json.stdout) as { reaped: { pid: number; containers: unknown[] }[] };
    expect(reaped).toEqual([
      expect.objectContaining({
        pid: again.pid,
        containers: [{ engine: 'podman', id: second!.Id, name: second!.Names[0], owner: 'o1', error: null }],
      }),
    ]);
    expect(containerExists(second!.Names[0]!)).toBe(false);
  });

  it('X6: an agent placed in its own container runs the agent example of docs/agents.md unchanged', async () => {
    // The one change: where the agent runs. The runtime's cwd (the app) is mounted at the same path.
    const nonce = `x6-readme-${process.pid}-${Date.now()}`;
    const example = agentsExample((app) =>
      placementOf(image, '-v', `${app}:${app}:ro`, '--label', `${nonce}=1`),
    );
    cleanups.push(() => example.remove());
    const events = spawn('podman', ['events', '--format', 'json', '--filter', `label=${nonce}=1`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    cleanups.push(() => stopProcess(events));
    const seen: string[] = [];
    createInterface({ input: events.stdout! }).on('line', (line) => seen.push(JSON.parse(line).Status));
    await new Promise((resolve) => setTimeout(resolve, 500)); // podman events is listening
    const r = await example.run();
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(example.matches(r.stdout), r.stdout).toBe(true);
    await until(
      'podman reports the removal',
      () => seen.includes('remove'),
      (yes) => yes,
      10_000,
    );
    expect(seen).toEqual(expect.arrayContaining(['start', 'exec', 'died', 'remove']));
  });
});
