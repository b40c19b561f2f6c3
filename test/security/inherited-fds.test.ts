import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

// A6, S1: the runtime's own process may hold fds it inherited without close-on-exec (a
// supervisor's pipe, a socket, a directory: what its parent passed it). None of them may reach
// what runs inside a sandbox — a directory fd reaches around the enclave's mounts — nor a job.
// The runtime runs in a child Node process given such an fd (20, a pipe: the parent's stdio[20];
// Node itself marks an inherited 3 to 15, and what follows them without a gap, close-on-exec, as
// libuv's uv_disable_stdio_inheritance does); its commands list the fds a background `sleep` of
// theirs holds, and the report says whether fd 20 was inheritable there.

const DIST = new URL('../../dist/src/index.js', import.meta.url).href;

// CommonJS eval (an async IIFE): --input-type would be inherited by the PTY worker thread.
const SCRIPT = `(async () => {
  const { readFileSync } = require('node:fs');
  const { createRuntime } = await import(${JSON.stringify(DIST)});
  const ws = process.env.INHERITED_FDS_WS;
  // 02000000 is O_CLOEXEC in /proc/self/fdinfo's octal flags.
  const flags = /flags:\\s*(\\d+)/.exec(readFileSync('/proc/self/fdinfo/20', 'utf8'))[1];
  const report = { hostFdInheritable: (parseInt(flags, 8) & 0o2000000) === 0 };
  // The fds of a background subshell: the shell's own at its fork, and it execs nothing (the
  // shell's own list would show the pipe of the listing or the directory it reads; a \`sleep\`
  // shows, for a moment, the locale file it opens at its start).
  const FDS = '( while :; do :; done ) & p=$!; ls /proc/$p/fd | tr "\\\\n" " "; echo; kill $p';
  const fdsOf = (text) => text.split('\\n').find((l) => /^0 1 2( |$)/.test(l)).trim();
  const plain = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 } });
  report.job = fdsOf((await plain.shell.run({ command: FDS })).output);
  await plain.dispose();
  const rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 },
    sandbox: { mode: 'workspace-write' } });
  const lease = rt.owners.host();
  report.sandboxedRun = fdsOf((await rt.shell.run({ owner: lease.token, command: FDS })).output);
  const term = await rt.terminals.open(lease.token);
  report.sandboxedTerminal = fdsOf((await rt.terminals.execute(lease.token, term.id, FDS, { timeoutMs: 20000 })).output);
  await rt.dispose();
  console.log(JSON.stringify(report));
})().catch((err) => { console.error(err); process.exit(1); })`;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('inherited fds (A6, S1)', () => {
  it('A6, S1: an fd the runtime’s process inherited reaches no job, no sandboxed command and no sandboxed terminal', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'tether-inherited-fds-'));
    dirs.push(ws);
    const child = spawn(process.execPath, ['-e', SCRIPT], {
      env: { ...process.env, INHERITED_FDS_WS: ws },
      stdio: ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(17).fill('ignore'), 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
    });
    child.stderr!.on('data', (d) => {
      err += d;
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(err).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out.trim().split('\n').pop()!);
    expect(report.hostFdInheritable).toBe(true); // what makes the rest mean something
    expect(report.job).toBe('0 1 2');
    expect(report.sandboxedRun).toBe('0 1 2');
    expect(report.sandboxedTerminal).toBe('0 1 2 255'); // 255: an interactive bash's own tty
  }, 120_000);
});
