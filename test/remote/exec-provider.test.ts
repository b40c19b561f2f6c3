import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createContainerProvider } from '../../src/remote/container-provider.js';
import type { ExecProvider } from '../../src/remote/exec-provider.js';
import { createKubernetesProvider } from '../../src/remote/kubernetes-provider.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import type { SubprocessHandle } from '../../src/subprocess/types.js';
import { removeContainer, removeStaleContainers, startContainer } from '../support/container-image.js';
import { kubectlCalls, writeKubectlStandIn } from '../support/kubectl-stand-in.js';
import { lines, until } from '../support/waits.js';

const codeOf = (err: unknown) => (err instanceof TetherError ? err.code : String(err));

// The exec clients this test process runs (`podman exec -i C python3 -c <bootstrap>`).
function execClients(): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (ppid === process.pid && argv.includes('exec') && argv.includes('python3')) found.push(Number(name));
    } catch {}
  }
  return found;
}

describe('the exec provider over podman exec (X5)', () => {
  let container: string;
  let provider: ExecProvider | null = null;
  let rt: Runtime | null = null;
  const handles: SubprocessHandle[] = [];
  beforeAll(async () => {
    removeStaleContainers();
    container = await startContainer();
  }, 300_000);
  afterAll(() => removeContainer(container));
  afterEach(async () => {
    for (const h of handles.splice(0)) await h.kill().catch(() => {});
    await rt?.dispose();
    await provider?.dispose();
    expect(provider?.workers ?? 0).toBe(0);
    rt = null;
    provider = null;
    // dispose kills the exec client (SIGKILL); it is gone once the kernel has delivered it.
    await until('no exec client left', execClients, (pids) => pids.length === 0);
  });
  const open = (more = {}) => {
    provider = createContainerProvider({
      engine: 'podman',
      container,
      heartbeat: { intervalMs: 300, countMax: 3 },
      reconnect: { attempts: 5, delayMs: 200 },
      lingerMs: 20_000,
      ...more,
    });
    return provider;
  };

  it('X5: a runtime on the podman provider: shell.run, a background job and a terminal proving `cat` waits for input', async () => {
    rt = await createRuntime({ provider: open(), cwd: '/tmp', limits: { cleanupGraceMs: 500 } });
    const r = await rt.shell.run({
      command: `printf '[%s]' "it's" "$(cat /etc/hostname 2>/dev/null || echo x)"`,
    });
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/^\[it's\]\[/);
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, {
      command: 'seq 1 3000; echo done',
      timeoutMs: 600_000,
    });
    expect(await rt.jobs.wait(lease.token, job.id, 600_000)).toBe(true);
    let text = '';
    for (let cursor = 0, i = 0; !text.includes('done') && i < 100; i++) {
      const page = await rt.jobs.read(lease.token, job.id, cursor);
      text += page.text;
      cursor = page.cursor;
    }
    expect(text.trim().split('\n')).toEqual([
      ...Array.from({ length: 3000 }, (_, i) => String(i + 1)),
      'done',
    ]);
    const t = await rt.terminals.open(lease.token, { cwd: '/tmp' });
    expect(await rt.terminals.execute(lease.token, t.id, 'cd / && echo "in $PWD"')).toMatchObject({
      output: 'in /\n',
      exitCode: 0,
    });
    const sent = await rt.terminals.send(lease.token, t.id, 'cat\n', { settleMs: 600_000 });
    expect(sent.waitReason).toBe('stdin_read');
    await rt.terminals.close(lease.token, t.id);
    await rt.jobs.drainOwner(lease.token);
    lease.retire();
  });

  it('X5, X3: a killed `podman exec` is a dropped link: the call in flight fails PROVIDER_LOST, the job re-attaches and every byte arrives exactly once', async () => {
    const p = open();
    const stop = `/tmp/stop-${process.pid}-${Date.now()}`;
    const script = `trap '' TERM; i=0; while [ ! -e ${stop} ]; do i=$((i+1)); echo $i; sleep 0.005; done; echo END`;
    const job = await p.spawn({
      argv: ['bash', '-c', script],
      cwd: '/tmp',
      cleanupGraceMs: 60_000,
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    });
    handles.push(job);
    const out = lines(job.stdout!);
    await out.until('20');
    const inFlight = job.kill().catch((e: unknown) => e);
    await pause(50); // the helper holds the kill for its 60 s grace either way
    const [client] = execClients();
    expect(client).toBeDefined();
    process.kill(client!, 'SIGKILL');
    expect(codeOf(await inFlight)).toBe('PROVIDER_LOST');
    const seen = Number(out.text.trim().split('\n').pop());
    await out.until(String(seen + 50)); // re-attached over a new `podman exec`
    expect(execClients()).not.toContain(client);
    const ended = await p.spawn({
      argv: ['touch', stop],
      cwd: '/tmp',
      cleanupGraceMs: 500,
      stdio: { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
    });
    await ended.exited;
    await out.until('END');
    const numbers = out.text.trim().split('\n').slice(0, -1).map(Number);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1)); // nothing lost, nothing doubled
    expect(await job.exited).toMatchObject({ exitCode: 0 });
  });

  it('X5, X3: a stalled `podman exec` (SIGSTOP) is noticed by the heartbeat within its bound; a new link re-attaches the terminal', async () => {
    const p = open();
    const t = await p.spawnTerminal({
      argv: ['bash', '--norc', '--noprofile'],
      cwd: '/tmp',
      cleanupGraceMs: 500,
      cols: 80,
      rows: 24,
    });
    let seen = '';
    t.onData((d) => {
      seen += d;
    });
    const [client] = execClients();
    process.kill(client!, 'SIGSTOP');
    try {
      // 300 ms × 3 without an answer: the stopped client is dropped (killed) and replaced.
      await until('a new exec client', execClients, (pids) => pids.length === 1 && pids[0] !== client);
    } finally {
      try {
        process.kill(client!, 'SIGCONT');
      } catch {}
    }
    await t.write('echo after-$((6*7))\n');
    await until(
      'the terminal answers over the new link',
      () => seen,
      (s) => s.includes('after-42'),
    );
    await t.kill();
  });

  it('X5: a container that does not exist is PROVIDER_UNAVAILABLE with the engine’s own error', async () => {
    const p = open({ container: 'tether-no-such-container' });
    const err = await p
      .spawn({
        argv: ['true'],
        cwd: '/tmp',
        cleanupGraceMs: 500,
        stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
      })
      .catch((e: unknown) => e);
    expect(codeOf(err)).toBe('PROVIDER_UNAVAILABLE');
    expect((err as Error).message).toMatch(/podman:tether-no-such-container/);
    expect((err as Error).message).toMatch(/no container with name or ID/i);
  });

  it('X5 (no cluster here: a `kubectl` stand-in that execs `podman exec`): createKubernetesProvider runs `kubectl --context C exec -i -n NS POD -c C -- python3 …` and a runtime works through it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubectl-'));
    try {
      // Runs the words after `--` in the "pod" (here a container of that name); records its argv.
      const kubectl = writeKubectlStandIn(dir, 'pod');
      provider = createKubernetesProvider({
        namespace: 'agents',
        pod: container,
        container: 'work',
        context: 'kind-test',
        kubectl,
        heartbeat: { intervalMs: 300, countMax: 3 },
      });
      expect(provider.label).toBe(`kubectl:agents/${container}/work`);
      rt = await createRuntime({ provider, cwd: '/tmp', limits: { cleanupGraceMs: 500 } });
      const r = await rt.shell.run({ command: 'echo "$((6*7)) from $(uname -s)"' });
      expect(r).toMatchObject({ exitCode: 0, output: '42 from Linux\n' });
      const [argv = []] = kubectlCalls(dir);
      expect(argv.slice(0, 11)).toEqual([
        '--context',
        'kind-test',
        'exec',
        '-i',
        '-n',
        'agents',
        container,
        '-c',
        'work',
        '--',
        'python3',
      ]);
      expect(argv[11]).toBe('-c');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
