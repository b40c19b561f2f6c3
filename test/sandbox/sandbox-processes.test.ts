import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime } from '../../src/index.js';
import { hostPidsRunning, ownSpawners, ppidOf } from '../support/proc-oracle.js';

let ws: string;
let rt: Runtime;
let lease: OwnerLease;

beforeEach(async () => {
  ws = mkdtempSync(join(tmpdir(), 'tether-sbx-proc-'));
  rt = await createRuntime({
    cwd: ws,
    spillDir: false,
    sandbox: { mode: 'workspace-write' },
    limits: { cleanupGraceMs: 300, drainMs: 200 },
  });
  lease = rt.owners.host();
});

afterEach(async () => {
  await rt.dispose();
  rmSync(ws, { recursive: true, force: true });
});

// The host's view of a process: its program, namespaces and what it may still do.
const hostView = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    exe: readlinkSync(`/proc/${pid}/exe`),
    ns: ['mnt', 'pid', 'ipc', 'net'].map((ns) => readlinkSync(`/proc/${pid}/ns/${ns}`)),
    capBnd: /^CapBnd:\s*(\w+)$/m.exec(status)?.[1],
    noNewPrivs: /^NoNewPrivs:\s*(\d)$/m.exec(status)?.[1],
  };
};

describe('sandbox: processes (A3 with S4, T6, D3)', () => {
  it('A3 (cost): a sandboxed job’s leader is the program itself, started by the spawner inside the enclave — no nsenter, no setpriv', async () => {
    const job = await rt.shell.background(lease.token, { command: 'exec sleep 60' });
    const [spawner] = ownSpawners();
    expect(spawner).toBeGreaterThan(0);
    // The job's processes as the host sees them: the leader `exec`s sleep, so one is sleep.
    const leader = await (async () => {
      for (let i = 0; i < 500; i++) {
        const pids = hostPidsRunning('sleep 60');
        const found = pids.find((pid) => ppidOf(pid) === spawner);
        if (found !== undefined) return found;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error('the sandboxed sleep never appeared as a child of the spawner');
    })();
    const view = hostView(leader);
    expect(view.exe).toMatch(/\/sleep$/);
    // In other namespaces than this process (mount, pid, ipc, net), with no capability left.
    const own = hostView(process.pid);
    view.ns.forEach((ns, i) => {
      expect(ns).not.toBe(own.ns[i]);
    });
    expect(view.capBnd).toBe('0000000000000000');
    expect(view.noNewPrivs).toBe('1');
    await rt.jobs.kill(lease.token, job.id);
  });

  it('A3, S4: a sandboxed job’s setsid escapee dies when the job is killed', async () => {
    const needle = `${3000 + (process.pid % 1000)}.${Date.now() % 100000}`;
    const job = await rt.shell.background(lease.token, {
      command: `setsid sleep ${needle} & echo started; wait`,
    });
    // The escapee runs (seen from the host) before the kill.
    let page = await rt.jobs.read(lease.token, job.id, 0);
    while (!page.text.includes('started')) {
      await rt.jobs.wait(lease.token, job.id, 200);
      page = await rt.jobs.read(lease.token, job.id, page.cursor);
    }
    while (hostPidsRunning(`sleep ${needle}`).length === 0) await new Promise((r) => setImmediate(r));
    expect(await rt.jobs.kill(lease.token, job.id)).toBe('requested');
    expect(await rt.jobs.wait(lease.token, job.id, 30_000)).toBe(true);
    expect(hostPidsRunning(`sleep ${needle}`)).toEqual([]);
  });

  it('A3, T6: `read x` in a sandboxed terminal is proven stdin_read from the host /proc', async () => {
    const t = await rt.terminals.open(lease.token);
    const sent = await rt.terminals.send(lease.token, t.id, 'read x\r', { timeoutMs: 30_000 });
    expect(sent.waitReason).toBe('stdin_read');
    await rt.terminals.send(lease.token, t.id, 'hello\r', { timeoutMs: 30_000 });
    const after = await rt.terminals.execute(lease.token, t.id, 'touch /usr/x; echo "x=$x"');
    expect(after.output).toContain('Read-only file system');
    expect(after.output).toContain('x=hello');
    await rt.terminals.close(lease.token, t.id);
  });

  it('A3: an ownerless rt.shell.run runs in the runtime’s sandbox (one enclave of its own)', async () => {
    const r = await rt.shell.run({
      command: 'touch /usr/tether-ownerless; echo "rc=$?"; touch here && echo here',
    });
    expect(r.output).toContain('Read-only file system');
    expect(r.output).toContain('here');
    expect(r.sandbox?.mode).toBe('workspace-write');
    expect(rt.stats().sandbox.enclaves).toBe(1);
  });

  it('A3, D3: an owner’s enclave starts with its first process and ends with the owner; dispose leaves nothing', async () => {
    expect(rt.stats().sandbox).toMatchObject({
      mode: 'workspace-write',
      mechanism: 'bubblewrap',
      enclaves: 0,
    });
    const other = rt.owners.host();
    await rt.shell.run({ owner: lease.token, command: 'true' });
    await rt.shell.run({ owner: other.token, command: 'true' });
    expect(rt.stats().sandbox.enclaves).toBe(2);
    other.retire();
    await rt.jobs.drainOwner(other.token);
    // The reclaim of a retired owner runs in the background; its enclave is the last step.
    while (rt.stats().sandbox.enclaves > 1) await new Promise((r) => setTimeout(r, 20));
    expect(rt.stats().sandbox.enclaves).toBe(1);
    await rt.dispose();
    expect(rt.stats()).toMatchObject({ processes: 0, workers: 0, sandbox: { enclaves: 0 } });
  });
});
