import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  probeStdinRead,
  type StdinProof,
  stdinProofSupported,
} from '../../../src/subprocess/input-probe/stdin-probe.js';
import { inputSyscallTable } from '../../../src/subprocess/input-probe/syscall-table.js';
import { listPids, readProcStat } from '../../../src/subprocess/proc.js';
import {
  closeTerminals,
  openTerminal,
  probeMany,
  provenBy,
  scratchDir,
  type TestTerminal,
  waitUntil,
} from './stdin-probe-fixture.js';

afterEach(closeTerminals);

const node = JSON.stringify(process.execPath);

// The command names of the members of t's foreground group now.
function groupComms(t: TestTerminal): string[] {
  const tpgid = readProcStat(t.root.pid)?.tpgid ?? -1;
  return listPids()
    .map((pid) => readProcStat(pid))
    .filter((s) => s !== null && s.pgrp === tpgid && s.state !== 'Z')
    .map((s) => s!.comm);
}

// Runs `line`, waits until the foreground group holds every one of `comms`, then probes.
async function probesWhileRunning(t: TestTerminal, line: string, comms: string[], count = 100) {
  t.run(line);
  await waitUntil(
    () => comms.every((c) => groupComms(t).includes(c)),
    `${comms.join(', ')} in the foreground`,
  );
  return probeMany(t, count);
}

const proofs = (verdicts: StdinProof[]) => verdicts.filter((v) => v.proven);
const reasons = (verdicts: StdinProof[]) => new Set(verdicts.map((v) => (v.proven ? 'PROVEN' : v.reason)));

describe.runIf(stdinProofSupported())('probeStdinRead (T6) proves a wait for input on this terminal', () => {
  it('T6: bash idle at its prompt is proven, waiting in pselect6', async () => {
    const t = await openTerminal();
    const p = await provenBy(t, (p) => p.pid === t.root.pid, 'bash at its prompt');
    expect(p).toMatchObject({ proven: true, pid: t.root.pid, tid: t.root.pid, via: 'select' });
  });

  it('T6: `read x` in bash is proven, read(0)', async () => {
    const t = await openTerminal();
    t.run('read x');
    const p = await provenBy(t, (p) => p.pid === t.root.pid && p.via === 'read', 'read x');
    expect(p.via).toBe('read');
  });

  it('T6: `cat` is proven, read(0) in the cat process', async () => {
    const t = await openTerminal();
    t.run('cat');
    const p = await provenBy(t, (_, comm) => comm === 'cat', 'cat');
    expect(p.via).toBe('read');
    expect(p.pid).toBe(t.foreground()?.pid);
  });

  it("T6: `python3 -c 'input()'` is proven", async () => {
    const t = await openTerminal();
    t.run(`python3 -c 'input()'`);
    const p = await provenBy(t, (_, comm) => comm.startsWith('python'), 'python3 input()');
    expect(p.via).toBe('read');
  });

  it('T6: a Node program reading stdin is proven through its epoll set', async () => {
    const t = await openTerminal();
    t.run(`${node} -e "process.stdin.on('data',()=>{})"`);
    const p = await provenBy(t, (_, comm) => comm === 'node', 'node reading stdin');
    expect(p.via).toBe('epoll');
  });

  it('T6: `less` on a file waits for a key on this terminal (it reads /dev/tty): proven', async () => {
    const t = await openTerminal();
    const file = join(scratchDir(), 'long.txt');
    writeFileSync(file, Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n'));
    t.run(`less ${file}`);
    const p = await provenBy(t, (_, comm) => comm === 'less', 'less');
    expect(p.via).toBe('read');
  });

  it('T5: wakeups grows across a new wait, so a wait from before the input can be told apart', async () => {
    const t = await openTerminal();
    const before = await provenBy(t, (p) => p.via === 'select', 'bash at its prompt');
    t.run('read x');
    const after = await provenBy(t, (p) => p.via === 'read', 'read x');
    expect(after.tid).toBe(before.tid);
    expect(after.wakeups).toBeGreaterThan(before.wakeups);
  });
});

describe.runIf(stdinProofSupported())('probeStdinRead (T6) proves nothing that is not such a wait', () => {
  it('T6: `sleep 30` is never proven (200 probes)', async () => {
    const t = await openTerminal();
    const v = await probesWhileRunning(t, 'sleep 30', ['sleep'], 200);
    expect(proofs(v)).toEqual([]);
    // Asleep in nanosleep: not waiting on the terminal. Under load a probe may also catch it
    // still starting up (running: `busy`); it is never anything else.
    expect(reasons(v).has('not-waiting')).toBe(true);
    expect([...reasons(v)].filter((r) => r !== 'not-waiting' && r !== 'busy')).toEqual([]);
  });

  it('T6: a busy loop in the shell is never proven (200 probes)', async () => {
    const t = await openTerminal();
    t.run('while :; do :; done');
    await waitUntil(() => {
      const p = t.probe();
      return !p.proven && p.reason === 'busy';
    }, 'the loop to run');
    const v = await probeMany(t, 200);
    expect(proofs(v)).toEqual([]);
    expect(reasons(v)).toEqual(new Set(['busy']));
  });

  it('T6: a silent long computation (python, multi-threaded node) is never proven', async () => {
    const t = await openTerminal();
    expect(proofs(await probesWhileRunning(t, `python3 -c 'while True: pass'`, ['python3']))).toEqual([]);
    t.term.write('\x03');
    await provenBy(t, (p) => p.pid === t.root.pid, 'the prompt after ^C');
    expect(proofs(await probesWhileRunning(t, `${node} -e 'for(;;){}'`, ['node']))).toEqual([]);
  });

  it('T6: a script waiting on its child (a silent build) is never proven', async () => {
    const t = await openTerminal();
    const v = await probesWhileRunning(t, `bash -c 'sleep 30; true'`, ['bash', 'sleep']);
    expect(proofs(v)).toEqual([]);
  });

  it('T6: a program reading a pipe is not proven', async () => {
    const t = await openTerminal();
    const v = await probesWhileRunning(t, 'sleep 30 | cat', ['sleep', 'cat']);
    expect(proofs(v)).toEqual([]);
  });

  it('T6: a program reading a fifo on its stdin is not proven', async () => {
    const t = await openTerminal();
    t.run('mkfifo f && exec 3<>f');
    const v = await probesWhileRunning(t, 'cat < f', ['cat']);
    expect(proofs(v)).toEqual([]);
    expect(reasons(v)).toContain('not-this-tty');
  });

  it('T6: `cat < /dev/pts/<B>` in terminal A proves nothing for A', async () => {
    const a = await openTerminal();
    const b = await openTerminal();
    const v = await probesWhileRunning(a, `cat < ${b.ttyPath}`, ['cat']);
    expect(proofs(v)).toEqual([]);
    expect(reasons(v)).toContain('not-this-tty');
    // B's own shell still waits on B: the reader in A does not disturb B's proof.
    const pb = await provenBy(b, (p) => p.pid === b.root.pid, "B's prompt");
    expect(pb.via).toBe('select');
  });

  it("T6: a reader of terminal B whose fd 0 is A proves nothing for A (the fd waited on must be A's)", async () => {
    const a = await openTerminal();
    const b = await openTerminal();
    const script = `import os; os.read(os.open('${b.ttyPath}', os.O_RDONLY), 1)`;
    const v = await probesWhileRunning(a, `python3 -c "${script}"`, ['python3']);
    expect(proofs(v)).toEqual([]);
  });

  it('T6: a reader stopped with SIGSTOP is never proven (the shell takes the terminal back)', async () => {
    const t = await openTerminal();
    t.run('cat');
    const reader = await provenBy(t, (_, comm) => comm === 'cat', 'cat');
    process.kill(reader.pid, 'SIGSTOP');
    await waitUntil(() => readProcStat(reader.pid)?.state === 'T', 'cat to stop');
    const v = await probeMany(t, 100);
    expect(v.filter((p) => p.proven && p.pid === reader.pid)).toEqual([]);
  });

  it('T6: a reader of this terminal whose own fd 0 is not it proves nothing (fd 0 rule)', async () => {
    const t = await openTerminal();
    const v = await probesWhileRunning(t, 'cat /dev/tty < /dev/null', ['cat']);
    expect(proofs(v)).toEqual([]);
  });
});

describe.runIf(stdinProofSupported())('probeStdinRead (T6) checks the root and the terminal', () => {
  it('T6: a root identity with another start time is root-changed', async () => {
    const t = await openTerminal();
    const root = { pid: t.root.pid, startTime: (t.root.startTime ?? 0) + 1 };
    expect(probeStdinRead({ root, ttyPath: t.ttyPath })).toEqual({ proven: false, reason: 'root-changed' });
  });

  it("T6: another terminal's path is not-this-tty", async () => {
    const a = await openTerminal();
    const b = await openTerminal();
    expect(probeStdinRead({ root: a.root, ttyPath: b.ttyPath })).toEqual({
      proven: false,
      reason: 'not-this-tty',
    });
  });

  it('T6: a missing tty is unreadable, and a root that exited is root-gone', async () => {
    const t = await openTerminal();
    const missing = { root: t.root, ttyPath: join(scratchDir(), 'no-such-tty') };
    expect(probeStdinRead(missing)).toEqual({ proven: false, reason: 'unreadable' });
    t.term.kill('SIGKILL');
    await waitUntil(() => {
      const s = readProcStat(t.root.pid);
      return s === null || s.state === 'Z';
    }, 'the root to die');
    expect(t.probe()).toEqual({ proven: false, reason: 'root-gone' });
  });

  it('T6: only the 64-bit x64 and arm64 syscall tables are known', () => {
    expect(inputSyscallTable('x64')?.get(270)).toBe('select');
    expect(inputSyscallTable('arm64')?.get(63)).toBe('read');
    expect(inputSyscallTable('ia32')).toBeNull();
  });
});
