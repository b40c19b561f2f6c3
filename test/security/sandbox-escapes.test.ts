import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, type RuntimeOptions, SANDBOX_UID } from '../../src/index.js';
import { spawnerBinary } from '../../src/subprocess/spawner/spawner.js';

// A6, an attacker inside the sandbox (issue 29, points 1, 3 and 6): each shape runs through the
// four ways a command reaches a shell — shell.run, a background job, terminals.execute and the
// agent's bash tool (persistent: its hidden terminal) — and every verdict is read back on the
// host. Nothing here can harm the host if the sandbox fails: a kernel setting is written with
// the value it already has, and a cgroup.kill names only this test's own job.

type Run = (command: string) => Promise<string>;

async function entries(rt: Runtime): Promise<Record<string, Run>> {
  const lease = rt.owners.host();
  const term = await rt.terminals.open(lease.token);
  const agent = rt.agents.create({ sessionId: `escapes-${Math.random()}`, onTurn: () => {} });
  return {
    'shell.run': async (command) =>
      (await rt.shell.run({ owner: lease.token, command, timeoutMs: 20_000 })).output,
    'a background job': async (command) => {
      const { id } = await rt.shell.background(lease.token, { command });
      expect(await rt.jobs.wait(lease.token, id, 20_000)).toBe(true);
      let text = '';
      for (let cursor = 0; ; ) {
        const page = await rt.jobs.read(lease.token, id, cursor);
        text += page.text;
        cursor = page.cursor;
        if (page.done) return text;
      }
    },
    'terminals.execute': async (command) =>
      (await rt.terminals.execute(lease.token, term.id, command, { timeoutMs: 20_000 })).output,
    'the bash tool': async (command) => (await agent.tools.call('bash', { command })).text,
  };
}

// Every entry of a runtime made with `options` (cwd: a fresh workspace owned by this test's uid).
function suite(name: string, options: Omit<RuntimeOptions, 'cwd'>, body: (ctx: Ctx) => void): void {
  const ctx = {} as Ctx;
  describe(name, () => {
    beforeEach(async () => {
      ctx.base = mkdtempSync(join(tmpdir(), 'tether-escapes-'));
      ctx.ws = join(ctx.base, 'ws');
      mkdirSync(ctx.ws);
      execFileSync('git', ['init', '-q', ctx.ws]);
      ctx.rt = await createRuntime({
        ...options,
        cwd: ctx.ws,
        spillDir: false,
        tools: { persistentBash: true },
        limits: { cleanupGraceMs: 300, drainMs: 200 },
      });
      ctx.via = await entries(ctx.rt);
    }, 60_000);
    afterEach(async () => {
      await ctx.rt?.dispose();
      rmSync(ctx.base, { recursive: true, force: true });
    });
    body(ctx);
  });
}

interface Ctx {
  base: string;
  ws: string;
  rt: Runtime;
  via: Record<string, Run>;
}

const SETTING = '/proc/sys/kernel/printk_ratelimit_burst';
const ENTRIES = ['shell.run', 'a background job', 'terminals.execute', 'the bash tool'];

// Shapes that hold in every confined mode (sandboxed or isolation alone).
function kernelAndCgroups(ctx: Ctx): void {
  it('A6: a kernel setting cannot be written, nor core_pattern opened, through every entry', async () => {
    for (const entry of ENTRIES) {
      const before = readFileSync(SETTING, 'utf8');
      const out = await ctx.via[entry]!(
        `v=$(cat ${SETTING}); echo "$v" > ${SETTING} && echo WROTE; ` +
          '{ exec 3>>/proc/sys/kernel/core_pattern; } 2>/dev/null && echo OPENED; echo /sys: $(ls /sys/kernel | wc -l)',
      );
      expect(out).not.toMatch(/WROTE|OPENED/);
      expect(out).toMatch(/Read-only file system/);
      expect(out).toMatch(/\/sys: [1-9]/); // /sys is there to read, only not to write
      expect(readFileSync(SETTING, 'utf8')).toBe(before);
    }
  });

  it("A6: another owner's cgroup.kill and the root cgroup cannot be written, through every entry", async () => {
    for (const entry of ENTRIES) {
      const other = ctx.rt.owners.host();
      const { id } = await ctx.rt.shell.background(other.token, {
        command: 'cat /proc/self/cgroup; sleep 60',
      });
      const cgroup = await treeCgroup(ctx.rt, other.token, id);
      const out = await ctx.via[entry]!(
        `echo 1 > ${cgroup}/cgroup.kill && echo KILLED; echo $$ > ${cgroupRoot()}/cgroup.procs && echo MOVED; echo done`,
      );
      expect(out).not.toMatch(/KILLED|MOVED/);
      expect(out).toContain('done');
      expect((await ctx.rt.jobs.list(other.token)).find((j) => j.id === id)?.state).toBe('running');
      await ctx.rt.jobs.kill(other.token, id);
    }
  });

  it('A6: unmounting /proc shows nothing of the host, through every entry', async () => {
    for (const entry of ENTRIES) {
      const out = await ctx.via[entry]!(
        'umount -l /proc 2>/dev/null && echo UNMOUNTED; echo pids: $(ls -d /proc/[0-9]* | wc -l); cat /proc/1/cmdline | tr "\\0" " "',
      );
      expect(out).not.toContain('UNMOUNTED');
      const pids = Number(/pids: (\d+)/.exec(out)?.[1]);
      expect(pids).toBeGreaterThan(0);
      expect(pids).toBeLessThan(30); // the owner's own few processes, never the host's
      expect(out).toMatch(/while :; do sleep 86400/); // pid 1 is the enclave's holder
    }
  });

  it('A6: a process that tries to leave its cgroup and its session does not outlive its shell.run', async () => {
    const lease = ctx.rt.owners.host();
    const mark = `${Math.floor(Math.random() * 1e6)}.137`;
    const r = await ctx.rt.shell.run({
      owner: lease.token,
      command: `(echo $BASHPID > ${cgroupRoot()}/cgroup.procs; exec env -i setsid sleep ${mark}) & sleep 0.2; echo started`,
      timeoutMs: 10_000,
    });
    expect(r.output).toMatch(/Read-only file system|Permission denied/);
    expect(hostProcessesWith(`sleep ${mark}`)).toEqual([]);
  });
}

suite('A6: an attacker inside workspace-write', { sandbox: { mode: 'workspace-write' } }, (ctx) => {
  kernelAndCgroups(ctx);

  it("A6: runs as the unprivileged uid, and its files belong to the workspace's owner (every entry)", async () => {
    for (const entry of ENTRIES) {
      const file = `made-${entry.replace(/\W/g, '')}`;
      const out = await ctx.via[entry]!(`id -u; echo x > ${file}; stat -c "inside=%u" ${file}`);
      expect(out).toContain(String(SANDBOX_UID));
      expect(out).toContain(`inside=${SANDBOX_UID}`);
      expect(statSync(join(ctx.ws, file)).uid).toBe(statSync(ctx.ws).uid);
      expect(ctx.rt.stats().sandbox.uid).toBe(SANDBOX_UID);
    }
  });

  it('A6: .git cannot be redirected, replaced or renamed, through every entry', async () => {
    for (const entry of ENTRIES) {
      const git = join(ctx.ws, '.git');
      const before = snapshot(git);
      const out = await ctx.via[entry]!(
        [
          'echo /tmp/evil > .git/commondir && echo W1',
          'mkdir -p .git/objects/info 2>/dev/null; echo /tmp/evil > .git/objects/info/alternates && echo W2',
          'printf "* filter=evil\\n" > .git/info/attributes && echo W3',
          'printf "[core]\\n\\tfsmonitor = touch /tmp/pwned\\n" >> .git/config && echo W4',
          'mv .git .git-old && echo W5',
          'echo done',
        ].join('; '),
      );
      expect(out).not.toMatch(/W[1-5]/);
      expect(out).toMatch(/Read-only file system|Device or resource busy/);
      expect(snapshot(git)).toEqual(before);
    }
  });

  it('A6: a worktree .git file, the directory it names and its commondir stay read-only', async () => {
    const main = join(ctx.ws, 'main-repo');
    execFileSync('git', ['init', '-q', main]);
    execFileSync('git', [
      '-C',
      main,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'x',
    ]);
    const tree = join(ctx.base, 'tree');
    execFileSync('git', ['-C', main, 'worktree', 'add', '-q', tree]);
    const rt = await createRuntime({
      cwd: tree,
      spillDir: false,
      sandbox: { mode: 'workspace-write', writableRoots: [tree, ctx.ws] },
    });
    try {
      const lease = rt.owners.host();
      const gitdir = join(main, '.git', 'worktrees', 'tree');
      const r = await rt.shell.run({
        owner: lease.token,
        command: [
          `echo "gitdir: /tmp/evil" > .git && echo W1`,
          `echo /tmp/evil > ${gitdir}/commondir && echo W2`,
          `echo x > ${main}/.git/hooks/pre-commit && echo W3`,
          'echo done',
        ].join('; '),
      });
      expect(r.output).not.toMatch(/W[1-3]/);
      expect(r.output).toContain('done');
      expect(readFileSync(join(tree, '.git'), 'utf8')).toContain(gitdir);
      expect(readFileSync(join(gitdir, 'commondir'), 'utf8').trim()).toBe('../..');
    } finally {
      await rt.dispose();
    }
  });

  it("A6: with network 'none', a host service's unix socket in the workspace cannot be reached, through every entry", async () => {
    const path = join(ctx.ws, 'host.sock');
    let accepted = 0;
    const server = createServer((socket) => {
      accepted++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const connect =
        `python3 -c 'import errno, socket\ntry:\n  s = socket.socket(socket.AF_UNIX)\n  s.connect("${path}")\n` +
        `  print("connected")\nexcept OSError as e:\n  print("refused", errno.errorcode[e.errno])'`;
      for (const entry of ENTRIES) {
        expect(await ctx.via[entry]!(connect), entry).toContain('refused EPERM');
      }
      expect(accepted).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('A6: TIOCSTI cannot type a command into its own terminal, through every entry', async () => {
    const witness = join(ctx.ws, 'typed');
    writeFileSync(witness, 'x');
    // Types `rm <witness>` (and a newline) into the terminal on fd 0, one character at a time.
    const inject =
      `python3 -c 'import errno, fcntl, termios, sys\ntry:\n  [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) ` +
      `for c in b"rm ${witness}\\n"]\n  print("typed")\nexcept OSError as e:\n  print("refused", errno.errorcode[e.errno])'`;
    for (const entry of ENTRIES) {
      const out = await ctx.via[entry]!(inject);
      expect(out, entry).toContain('refused EPERM');
      await ctx.via[entry]!('echo next'); // a shell that had been typed into would run it now
      expect(readFileSync(witness, 'utf8'), entry).toBe('x');
    }
  });

  it("A6: the runtime's own spawner binary and compiled code stay read-only inside a writable root", async () => {
    const spawner = spawnerBinary();
    expect(spawner).not.toBeNull();
    const pkg = dirname(dirname(spawner as string));
    const rt = await createRuntime({
      cwd: ctx.ws,
      spillDir: false,
      sandbox: { mode: 'workspace-write', writableRoots: [ctx.ws, pkg] },
    });
    const probe = `.tether-a6-probe-${process.pid}`;
    try {
      const lease = rt.owners.host();
      const r = await rt.shell.run({
        owner: lease.token,
        command: `touch ${pkg}/build/${probe} && echo W1; touch ${pkg}/dist/${probe} && echo W2; echo done`,
      });
      expect(r.output).not.toMatch(/W[12]/);
      expect(r.output).toContain('done');
    } finally {
      await rt.dispose();
      rmSync(join(pkg, 'build', probe), { force: true });
      rmSync(join(pkg, 'dist', probe), { force: true });
    }
  });
});

suite('A6: an attacker inside isolation: pid', { isolation: 'pid' }, (ctx) => {
  kernelAndCgroups(ctx);

  it('A6: isolation drops every capability and sets no_new_privs (every entry)', async () => {
    for (const entry of ENTRIES) {
      const out = await ctx.via[entry]!('grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status');
      expect(out).toMatch(/CapEff:\s+0{16}/);
      expect(out).toMatch(/CapBnd:\s+0{16}/);
      expect(out).toMatch(/NoNewPrivs:\s+1/);
      expect(out).toMatch(/Seccomp:\s+2/);
    }
  });

  it("A6: the enclave's pid 1 is confined too: no_new_privs and the seccomp filter", async () => {
    const out = await ctx.via['shell.run']!('grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/1/status');
    expect(out).toMatch(/CapEff:\s+0{16}/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
    expect(out).toMatch(/Seccomp:\s+2/);
  });
});

// The cgroup v2 mount the runtime's trees live under (hybrid: /sys/fs/cgroup/unified).
function cgroupRoot(): string {
  const line = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => / - cgroup2 /.test(l));
  return line?.split(' ')[4] ?? '/sys/fs/cgroup';
}

// The host cgroup directory of a job's tree: the job prints its own (/proc/self/cgroup).
async function treeCgroup(rt: Runtime, owner: Parameters<Runtime['jobs']['list']>[0], id: string) {
  let text = '';
  for (let i = 0; i < 200; i++) {
    text += (await rt.jobs.read(owner, id, text.length)).text;
    const rel = /^0::(.*)$/m.exec(text)?.[1];
    if (rel !== undefined) return join(cgroupRoot(), rel);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`job ${id} did not print its cgroup: ${text}`);
}

function hostProcessesWith(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

// Every file below `dir` with its content: what the host's git would read.
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, name.name);
      if (name.isDirectory()) walk(p);
      else out[p] = readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}
