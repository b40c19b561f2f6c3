import { readlinkSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createRuntime, type Runtime } from '../../src/index.js';
import { hostPidsRunning } from '../support/proc-oracle.js';

// K5 (`nod[e]`: the pattern matches node, not the shell whose own command line holds it).
// SAFETY: `pkill -f node` and `kill -9 -1` run by root outside a PID namespace would kill
// every process of this machine. The command that runs them first proves, in the same shell,
// that it is inside the enclave (its PID namespace differs from this process's, pid 1 is the
// enclave's holder, this test process is not visible, only a handful of processes exist) and
// runs them only then; the test also checks
// the namespace from outside (ps) before it sends that command.
const KILL_ALL = process.env.TETHER_K5_DRY_RUN ? 'echo dry-run' : 'pkill -f "nod[e]"; kill -9 -1';

let rt: Runtime;
let agents: Agent[];

beforeEach(async () => {
  rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 300, drainMs: 200 } });
  agents = [];
});

afterEach(async () => {
  await Promise.all(agents.map((a) => a.dispose()));
  await rt.dispose();
});

function isolatedAgent(sessionId: string): Agent {
  const agent = rt.agents.create({ sessionId, onTurn: () => {}, isolation: 'pid' });
  agents.push(agent);
  return agent;
}

const needle = (tag: number) => `${tag}${process.pid % 1000}.${Date.now() % 100000}`;

async function waitRunning(text: string): Promise<void> {
  while (hostPidsRunning(text).length === 0) await new Promise((r) => setTimeout(r, 10));
}

describe("isolation: 'pid' (K5)", () => {
  it('K5: an agent’s ps, pkill -f node and kill -9 -1 see and reach only its own processes', async () => {
    const a = isolatedAgent('k5-a');
    const b = isolatedAgent('k5-b');
    const host = rt.owners.host(); // not isolated: the host PID namespace
    const [na, nb, nc] = [needle(31), needle(32), needle(33)];
    const jobA = await rt.shell.background(a.owner, { command: `sleep ${na}` });
    const jobB = await rt.shell.background(b.owner, { command: `sleep ${nb}` });
    const jobC = await rt.shell.background(host.token, { command: `sleep ${nc}` });
    await Promise.all([waitRunning(`sleep ${na}`), waitRunning(`sleep ${nb}`), waitRunning(`sleep ${nc}`)]);

    // From outside first: A's namespace holds only A's processes.
    const ps = await a.tools.call('bash', { command: 'ps -e -o pid=,args=' });
    expect(ps.ok).toBe(true);
    const text = ps.ok ? ps.text : '';
    expect(text).toMatch(/^\s*1 \/bin\/bash -c trap : CHLD/m);
    expect(text).toContain(`sleep ${na}`);
    expect(text).not.toContain(`sleep ${nb}`);
    expect(text).not.toContain(`sleep ${nc}`);
    expect(text).not.toMatch(/\bnode\b/);
    expect(text.trim().split('\n').length).toBeLessThan(12);

    // The proof, in the shell that would run the kill: its PID namespace is not this process's
    // (compared by inode), pid 1 is the enclave's holder, this process is not visible, few exist.
    const hostPidNs = readlinkSync('/proc/self/ns/pid');
    const guarded = [
      'n=$(ls /proc | grep -c "^[0-9]")',
      `if [ "$(readlink /proc/self/ns/pid)" != '${hostPidNs}' ] && grep -q "trap : CHLD" /proc/1/cmdline && [ ! -e /proc/${process.pid} ] && [ "$n" -lt 20 ]; then`,
      `  echo "inside: $n processes"; ${KILL_ALL}; echo killed-all`,
      'else echo GUARD-FAILED; fi',
      'ps -e -o pid=,args=',
    ].join('\n');
    const killer = await a.tools.call('bash', { command: guarded });
    const out = killer.ok ? killer.text : '';
    expect(out).not.toContain('GUARD-FAILED');
    expect(out).toContain('killed-all');
    if (process.env.TETHER_K5_DRY_RUN) console.log(out);

    // A's own job died; B's job, the host owner's job, the runtime and this process did not.
    if (process.env.TETHER_K5_DRY_RUN) await rt.jobs.kill(a.owner, jobA.id);
    expect(await rt.jobs.wait(a.owner, jobA.id, 30_000)).toBe(true);
    if (!process.env.TETHER_K5_DRY_RUN) {
      expect((await rt.jobs.list(a.owner))[0]).toMatchObject({ state: 'failed', signal: 'SIGKILL' });
      expect(hostPidsRunning(`sleep ${na}`)).toEqual([]);
    }
    expect((await rt.jobs.list(b.owner))[0]).toMatchObject({ id: jobB.id, state: 'running' });
    expect((await rt.jobs.list(host.token))[0]).toMatchObject({ id: jobC.id, state: 'running' });
    expect(hostPidsRunning(`sleep ${nb}`)).toHaveLength(1);
    expect(hostPidsRunning(`sleep ${nc}`)).toHaveLength(1);
    expect(await rt.shell.run({ command: 'echo runtime-alive' })).toMatchObject({
      output: 'runtime-alive\n',
    });

    // The enclave outlived the kill (its pid 1 cannot be killed from inside): A still runs commands.
    const again = await a.tools.call('bash', { command: 'ps -e -o pid=,args=' });
    expect(again.ok && again.text).toMatch(/^\s*1 \/bin\/bash -c trap : CHLD/m);
    await rt.jobs.kill(b.owner, jobB.id);
    await rt.jobs.kill(host.token, jobC.id);
  });

  it('K5: commands, jobs and terminal shells of one owner share one namespace; another owner has its own', async () => {
    const a = isolatedAgent('k5-share');
    const b = isolatedAgent('k5-other');
    const n = needle(34);
    await rt.shell.background(a.owner, { command: `sleep ${n}` });
    await waitRunning(`sleep ${n}`);
    const t = await rt.terminals.open(a.owner);
    const inTerminal = await rt.terminals.execute(a.owner, t.id, 'ps -e -o args=');
    expect(inTerminal.output).toContain(`sleep ${n}`);
    expect(inTerminal.output).toMatch(/^\/bin\/bash -c trap : CHLD/m);
    const sent = await rt.terminals.send(a.owner, t.id, 'read x\r', { timeoutMs: 30_000 });
    expect(sent.waitReason).toBe('stdin_read'); // T6 holds: the runtime reads the host /proc
    await rt.terminals.send(a.owner, t.id, 'ok\r');
    const other = await b.tools.call('bash', { command: 'ps -e -o args=' });
    expect(other.ok && other.text).not.toContain(`sleep ${n}`);
    expect(rt.stats().sandbox.enclaves).toBe(2);
  });

  it("K5: createRuntime({ isolation: 'pid' }) isolates every owner; the owner’s end ends its namespace", async () => {
    await rt.dispose();
    rt = await createRuntime({ isolation: 'pid', spillDir: false, limits: { cleanupGraceMs: 300 } });
    expect(rt.stats().sandbox).toMatchObject({ mode: 'off', mechanism: 'bubblewrap', isolation: 'pid' });
    const lease = rt.owners.host();
    const r = await rt.shell.run({ owner: lease.token, command: 'ps -e -o pid=,args=' });
    expect(r.output).toMatch(/^\s*1 \/bin\/bash -c trap : CHLD/m);
    expect(r.output).not.toMatch(/\bnode\b/);
    // Not sandboxed: the filesystem is the host's.
    expect((await rt.shell.run({ owner: lease.token, command: 'test -w /tmp && echo rw' })).output).toBe(
      'rw\n',
    );
    expect(rt.stats().sandbox.enclaves).toBe(1);
    lease.retire();
    while (rt.stats().sandbox.enclaves > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(rt.stats().processes).toBe(0);
  });
});
