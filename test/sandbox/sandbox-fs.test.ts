import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime } from '../../src/index.js';

// Real bubblewrap, real processes: every verdict is read back from the host filesystem.
let base: string;
let ws: string;
let outside: string;
let rt: Runtime;
let lease: OwnerLease;

beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'tether-sbx-fs-'));
  ws = join(base, 'ws');
  outside = join(base, 'outside');
  mkdirSync(ws);
  mkdirSync(outside);
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
  expect(rt.stats().sandbox.enclaves).toBe(0);
  rmSync(base, { recursive: true, force: true });
});

const run = (command: string) => rt.shell.run({ owner: lease.token, command });

describe('sandbox: the filesystem (A3)', () => {
  it('A3: a command writes inside the workspace (itself under /tmp) and cannot write outside it', async () => {
    const inside = await run('echo in > inside.txt && echo wrote');
    expect(inside).toMatchObject({
      exitCode: 0,
      sandbox: { mode: 'workspace-write', mechanism: 'bubblewrap' },
    });
    expect(readFileSync(join(ws, 'inside.txt'), 'utf8')).toBe('in\n');

    const out = await run(`echo x > ${outside}/x.txt`);
    expect(out.exitCode).not.toBe(0);
    expect(out.output).toMatch(/Read-only file system|No such file or directory/);
    expect(existsSync(join(outside, 'x.txt'))).toBe(false);

    const etc = await run('touch /etc/tether-sandbox-probe');
    expect(etc.output).toContain('Read-only file system');
    expect(existsSync('/etc/tether-sandbox-probe')).toBe(false);
  });

  it('A3: /tmp inside is private: what a command writes there never reaches the host /tmp', async () => {
    const name = `tether-private-${process.pid}-${Date.now()}`;
    const r = await run(`echo secret > /tmp/${name} && cat /tmp/${name}`);
    expect(r).toMatchObject({ exitCode: 0, output: 'secret\n' });
    expect(existsSync(join('/tmp', name))).toBe(false);
  });

  it('A3: a background job of a sandboxed owner writes inside and cannot write outside', async () => {
    const job = await rt.shell.background(lease.token, {
      command: `echo job > job.txt; echo x > ${outside}/job.txt; echo "rc=$?"`,
    });
    expect(await rt.jobs.wait(lease.token, job.id, 30_000)).toBe(true);
    const page = await rt.jobs.read(lease.token, job.id, 0);
    expect(page.text).toMatch(/rc=[1-9]/);
    expect(readFileSync(join(ws, 'job.txt'), 'utf8')).toBe('job\n');
    expect(existsSync(join(outside, 'job.txt'))).toBe(false);
  });

  it('A3: a sandboxed terminal writes inside and cannot write outside', async () => {
    const t = await rt.terminals.open(lease.token);
    const inside = await rt.terminals.execute(lease.token, t.id, 'echo term > term.txt');
    expect(inside.exitCode).toBe(0);
    const out = await rt.terminals.execute(lease.token, t.id, `echo x > ${outside}/term.txt`);
    expect(out.exitCode).not.toBe(0);
    expect(readFileSync(join(ws, 'term.txt'), 'utf8')).toBe('term\n');
    expect(existsSync(join(outside, 'term.txt'))).toBe(false);
    await rt.terminals.close(lease.token, t.id);
  });

  it('A3: denyRead paths are unreadable inside and still readable by the host', async () => {
    const secretDir = join(outside, 'creds');
    mkdirSync(secretDir);
    writeFileSync(join(secretDir, 'key'), 'dir-secret');
    writeFileSync(join(outside, 'token'), 'file-secret');
    const lease2 = rt.owners.host({
      sandbox: { mode: 'workspace-write', denyRead: [secretDir, join(outside, 'token')] },
    });
    const r = await rt.shell.run({
      owner: lease2.token,
      command: `cat ${secretDir}/key; ls ${secretDir}; cat ${outside}/token; echo done`,
    });
    expect(r.output).not.toContain('dir-secret');
    expect(r.output).not.toContain('file-secret');
    expect(r.output.match(/Permission denied/g)?.length).toBe(3);
    expect(readFileSync(join(outside, 'token'), 'utf8')).toBe('file-secret');
    // The default list covers ~/.ssh and friends.
    expect(r.sandbox?.denyRead).toEqual(expect.arrayContaining([expect.stringMatching(/\/\.ssh$/)]));
  });

  it('A3, A6: .git stays read-only as a whole inside a writable root: hooks, config, HEAD, commondir', async () => {
    mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(ws, '.git', 'config'), '[core]\n');
    writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const lease2 = rt.owners.host(); // a new enclave sees the .git made above
    const r = await rt.shell.run({
      owner: lease2.token,
      command: [
        'echo "#!/bin/sh" > .git/hooks/pre-commit; echo "hook=$?"',
        'printf "[core]\\n\\tfsmonitor = /tmp/evil\\n" >> .git/config; echo "config=$?"',
        'echo "ref: refs/heads/x" > .git/HEAD; echo "head=$?"',
        'echo /tmp/evil > .git/commondir; echo "commondir=$?"',
      ].join('; '),
    });
    expect(r.output).toMatch(/hook=[1-9]/);
    expect(r.output).toMatch(/config=[1-9]/);
    expect(r.output).toMatch(/head=[1-9]/);
    expect(r.output).toMatch(/commondir=[1-9]/);
    expect(existsSync(join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(ws, '.git', 'commondir'))).toBe(false);
    expect(readFileSync(join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('A3: a .git without hooks gets an empty read-only hooks directory: nothing can be planted', async () => {
    mkdirSync(join(ws, '.git'));
    const lease2 = rt.owners.host();
    const r = await rt.shell.run({
      owner: lease2.token,
      command: 'mkdir -p .git/hooks; echo "#!/bin/sh" > .git/hooks/post-checkout; echo "hook=$?"',
    });
    expect(r.output).toMatch(/hook=[1-9]/);
    expect(existsSync(join(ws, '.git', 'hooks', 'post-checkout'))).toBe(false);
  });

  it('A3: read-only mode: the workspace is readable, not writable; /tmp still is', async () => {
    writeFileSync(join(ws, 'readme'), 'hello');
    const ro = rt.owners.host({ sandbox: { mode: 'read-only' } });
    const r = await rt.shell.run({
      owner: ro.token,
      command: 'cat readme; echo; touch new.txt; echo "ws=$?"; touch /tmp/t && echo tmp-ok',
    });
    expect(r.output).toContain('hello');
    expect(r.output).toMatch(/ws=[1-9]/);
    expect(r.output).toContain('tmp-ok');
    expect(existsSync(join(ws, 'new.txt'))).toBe(false);
    expect(r.sandbox).toMatchObject({ mode: 'read-only', writableRoots: [] });
  });

  it('A4: an approved escalated request runs on the owner’s unsandboxed provider', async () => {
    const justifications: string[] = [];
    const approving = await createRuntime({
      cwd: ws,
      spillDir: false,
      sandbox: { mode: 'workspace-write' },
      limits: { cleanupGraceMs: 300, drainMs: 200 },
      policy: {
        default: 'allow',
        approve: async (request) => {
          justifications.push(request.escalate?.justification ?? '');
          return 'allow' as const;
        },
      },
    });
    try {
      const r = await approving.shell.run({
        owner: approving.owners.host().token,
        command: `echo esc > ${outside}/escalated.txt`,
        escalate: { justification: 'test: write outside the workspace' },
      });
      expect(justifications).toEqual(['test: write outside the workspace']);
      expect(r.exitCode).toBe(0);
      expect(r.sandbox).toBeUndefined();
      expect(readFileSync(join(outside, 'escalated.txt'), 'utf8')).toBe('esc\n');
    } finally {
      await approving.dispose();
    }
  });

  it('A3: a sandboxed root has no capabilities: it cannot remount the read-only root writable', async () => {
    const r = await run('grep CapEff /proc/self/status; mount -o remount,rw / 2>&1; echo "mount=$?"');
    expect(r.output).toContain('CapEff:\t0000000000000000');
    expect(r.output).toMatch(/mount=[1-9]/);
    expect((await run('touch /usr/tether-after-remount 2>&1')).output).toContain('Read-only file system');
  });

  it('A3: env scrubbing (S3) still applies inside the sandbox', async () => {
    process.env.TETHER_TEST_API_KEY = 'do-not-leak';
    try {
      const r = await run('env');
      expect(r.exitCode).toBe(0);
      expect(r.output).not.toContain('do-not-leak');
      expect(r.output).toContain('PATH=');
    } finally {
      delete process.env.TETHER_TEST_API_KEY;
    }
  });
});
