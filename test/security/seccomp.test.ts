import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime } from '../../src/index.js';

// A6: the seccomp filter (src/subprocess/spawner/seccomp-filter.h), seen from inside. Real
// bubblewrap, real processes: a Python probe makes each system call through ctypes and prints
// `<name> <errno name>` (OK when it succeeded). Every probe is harmless without the filter:
// its arguments are invalid in a way the kernel reports with another errno (EBADF, EFAULT,
// EINVAL, ESRCH), so EPERM here is the filter's, not a missing capability's. x86-64 numbers.
const PROBE = `
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if r >= 0 and nr in (41,):
        os.close(r)
    return 0 if r >= 0 else ctypes.get_errno()
def pair(kind):
    fds = (ctypes.c_int * 2)()
    ctypes.set_errno(0)
    if libc.socketpair(1, kind, 0, fds) != 0:
        return ctypes.get_errno()
    os.close(fds[0]); os.close(fds[1])
    return 0
def tty(cmd):
    ch = ctypes.c_char(b' ')
    return sc(16, 0, cmd, ctypes.addressof(ch))
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    return 0 if os.waitpid(pid, 0)[1] == 0 else errno.ECHILD
SIGHAND = 0x800
NEW = dict(NEWUSER=0x10000000, NEWNS=0x20000, NEWPID=0x20000000, NEWNET=0x40000000,
           NEWIPC=0x8000000, NEWUTS=0x4000000, NEWCGROUP=0x2000000)
P = {
  'ioctl_TIOCSTI': lambda: sc(16, -1, 0x5412, 0),
  'ioctl_TIOCSTI_hi': lambda: sc(16, -1, 0x5412 | (1 << 32), 0),
  'ioctl_TIOCLINUX': lambda: sc(16, -1, 0x541C, 0),
  'ioctl_FIONREAD': lambda: sc(16, -1, 0x541B, 0),
  'tty_TIOCSTI': lambda: tty(0x5412),
  'tty_TIOCSTI_hi': lambda: tty(0x5412 | (0xffffffff << 32)),
  'ptrace': lambda: sc(101, 2, 0x3fffffff, 0, 0),
  'process_vm_readv': lambda: sc(310, 0x3fffffff, 0, 0, 0, 0, 1),
  'process_vm_writev': lambda: sc(311, 0x3fffffff, 0, 0, 0, 0, 1),
  'pidfd_getfd': lambda: sc(438, -1, 0, 0),
  'keyctl': lambda: sc(250, 9999, 0, 0, 0, 0),
  'add_key': lambda: sc(248, 0, 0, 0, 0, 0),
  'request_key': lambda: sc(249, 0, 0, 0, 0),
  'bpf': lambda: sc(321, 9999, 0, 0),
  'perf_event_open': lambda: sc(298, 0, 0, -1, -1, 0),
  'userfaultfd': lambda: sc(323, 3),
  'mount': lambda: sc(165, 0, 0, 0, 0, 0),
  'umount2': lambda: sc(166, 0, 0x80000000),
  'pivot_root': lambda: sc(155, 0, 0),
  'move_mount': lambda: sc(429, -1, 0, -1, 0, 0xffffffff),
  'open_tree': lambda: sc(428, -1, 0, 0xffffffff),
  'open_tree_attr': lambda: sc(467, -1, 0, 0xffffffff, 0, 0),
  'fsopen': lambda: sc(430, 0, 0xffff),
  'fsconfig': lambda: sc(431, -1, 0xffff, 0, 0, 0),
  'fsmount': lambda: sc(432, -1, 0xffff, 0),
  'fspick': lambda: sc(433, -1, 0, 0xffff),
  'mount_setattr': lambda: sc(442, -1, 0, 0xffff, 0, 0),
  'unshare_0': lambda: sc(272, 0),
  'unshare_NEWUSER': lambda: sc(272, 0x10000000),
  'setns': lambda: sc(308, -1, 0),
  'clone3': lambda: sc(435, 0, 0),
  'kexec_load': lambda: sc(246, 0, 0, 0, 0xffffffff),
  'kexec_file_load': lambda: sc(320, -1, -1, 0, 0, 0xffffffff),
  'reboot': lambda: sc(169, 0, 0, 0, 0),
  'init_module': lambda: sc(175, 0, 0, 0),
  'finit_module': lambda: sc(313, -1, 0, 0xffff),
  'delete_module': lambda: sc(176, 0, 0),
  'io_uring_setup': lambda: sc(425, 0, 0),
  'io_uring_enter': lambda: sc(426, -1, 0, 0, 0, 0, 0),
  'io_uring_register': lambda: sc(427, -1, 0, 0, 0),
  'name_to_handle_at': lambda: sc(303, -1, 0, 0, 0, 0xffff),
  'open_by_handle_at': lambda: sc(304, -1, 0, 0),
  'acct': lambda: sc(163, 1),
  'swapon': lambda: sc(167, 0, 0),
  'swapoff': lambda: sc(168, 0),
  'chroot': lambda: sc(161, 0),
  'x32_getpid': lambda: sc(0x40000000 | 39),
  'socket_unix': lambda: sc(41, 1, 1, 0),
  'socket_unix_hi': lambda: sc(41, 1 | (1 << 32), 1, 0),
  'socket_inet': lambda: sc(41, 2, 1, 0),
  'socketpair_stream': lambda: pair(1),
  'socketpair_dgram': lambda: pair(2),
  'socketpair_raw': lambda: pair(3),
  'socketpair_seqpacket': lambda: pair(5),
  'socketpair_dgram_cloexec': lambda: pair(2 | 0x80000),
  'fork': fork,
  'personality_query': lambda: 0 if libc.personality(0xffffffff) != -1 else ctypes.get_errno(),
}
for k, v in NEW.items():
    P['clone_' + k] = (lambda flags: lambda: sc(56, flags | SIGHAND, 0, 0, 0, 0))(v)
# unshare(CLONE_NEWUSER) changes this process when it succeeds: last.
for name in sorted(sys.argv[1:], key=lambda n: n == 'unshare_NEWUSER'):
    e = P[name]()
    print(name, 'OK' if e == 0 else errno.errorcode.get(e, str(e)))
`;

// The calls refused whatever the network mode, by class (seccomp-filter.h's table).
const ALWAYS: Record<string, string[]> = {
  'ioctl TIOCSTI / TIOCLINUX (also with upper bits set in the command)': [
    'ioctl_TIOCSTI',
    'ioctl_TIOCSTI_hi',
    'ioctl_TIOCLINUX',
  ],
  'ptrace, process_vm_readv, process_vm_writev, pidfd_getfd': [
    'ptrace',
    'process_vm_readv',
    'process_vm_writev',
    'pidfd_getfd',
  ],
  'keyctl, add_key, request_key': ['keyctl', 'add_key', 'request_key'],
  bpf: ['bpf'],
  perf_event_open: ['perf_event_open'],
  userfaultfd: ['userfaultfd'],
  'the mount calls (mount, umount2, pivot_root, the new mount API)': [
    'mount',
    'umount2',
    'pivot_root',
    'move_mount',
    'open_tree',
    'open_tree_attr',
    'fsopen',
    'fsconfig',
    'fsmount',
    'fspick',
    'mount_setattr',
  ],
  'unshare, setns, and clone with any CLONE_NEW* flag': [
    'unshare_0',
    'setns',
    ...Object.keys({ NEWUSER: 0, NEWNS: 0, NEWPID: 0, NEWNET: 0, NEWIPC: 0, NEWUTS: 0, NEWCGROUP: 0 }).map(
      (f) => `clone_${f}`,
    ),
    'unshare_NEWUSER',
  ],
  'kexec_load, kexec_file_load, reboot': ['kexec_load', 'kexec_file_load', 'reboot'],
  'init_module, finit_module, delete_module': ['init_module', 'finit_module', 'delete_module'],
  'io_uring_setup, io_uring_enter, io_uring_register': [
    'io_uring_setup',
    'io_uring_enter',
    'io_uring_register',
  ],
  'name_to_handle_at, open_by_handle_at': ['name_to_handle_at', 'open_by_handle_at'],
  'acct, swapon, swapoff, chroot': ['acct', 'swapon', 'swapoff', 'chroot'],
  'x32 system call numbers': ['x32_getpid'],
};
// The system's Python, not a version manager's shim (whose home the sandbox may not show).
const PY = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

// What the filter leaves alone, in every mode.
const STILL_ALLOWED = ['ioctl_FIONREAD', 'fork', 'personality_query', 'socket_inet', 'socketpair_stream'];

let base: string;
let ws: string;
let probe: string;
let rt: Runtime;
let lease: OwnerLease;

// A runtime per test: the leak check after each test (test/support/setup.ts) wants no process
// left, the enclave's included.
beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'tether-seccomp-'));
  ws = join(base, 'ws');
  mkdirSync(ws);
  probe = join(ws, 'probe.py'); // the sandbox's /tmp is its own: only the workspace is shared
  writeFileSync(probe, PROBE);
  rt = await createRuntime({
    cwd: ws,
    spillDir: false,
    sandbox: { mode: 'workspace-write' }, // network 'none'
    limits: { cleanupGraceMs: 300, drainMs: 200 },
  });
  lease = rt.owners.host();
});

afterEach(async () => {
  await rt?.dispose();
  rmSync(base, { recursive: true, force: true });
});

/** The probe's verdicts for `names`, run as `owner` on `runtime`. */
async function probeCalls(
  names: string[],
  runtime = rt,
  owner = lease.token,
): Promise<Record<string, string>> {
  const r = await runtime.shell.run({ owner, command: `${PY} ${probe} ${names.join(' ')}` });
  expect(r.exitCode, r.output).toBe(0);
  return parse(r.output);
}

function parse(output: string): Record<string, string> {
  const verdicts: Record<string, string> = {};
  for (const line of output.trim().split('\n')) {
    const [name, verdict] = line.trim().split(' ');
    if (name !== undefined && verdict !== undefined) verdicts[name] = verdict;
  }
  return verdicts;
}

const all = (names: string[], verdict: string) => Object.fromEntries(names.map((n) => [n, verdict]));

describe('A6 seccomp', () => {
  for (const [calls, names] of Object.entries(ALWAYS)) {
    it(`A6: ${calls} fails with EPERM inside the sandbox`, async () => {
      const r = await run(names);
      expect(r.sandbox).toMatchObject({ mode: 'workspace-write', network: 'none' });
      expect(parse(r.output)).toEqual(all(names, 'EPERM'));
    });
  }

  it('A6: clone3 fails with ENOSYS (its flags are behind a pointer), and fork and threads still work', async () => {
    expect(await probeCalls(['clone3', 'fork'])).toEqual({ clone3: 'ENOSYS', fork: 'OK' });
    // glibc's pthread_create and posix_spawn try clone3 first and fall back to clone on ENOSYS.
    const r = await rt.shell.run({
      owner: lease.token,
      command: [
        `node -e 'require("child_process").execSync("true"); new (require("worker_threads").Worker)("0", { eval: true }).on("exit", (c) => console.log("node", c))'`,
        `${PY} -c 'import threading, subprocess; t = threading.Thread(target=print, args=("thread",)); t.start(); t.join(); subprocess.run(["true"], check=True)'`,
        'git --version >/dev/null && echo git',
      ].join(' && '),
    });
    expect(r).toMatchObject({ exitCode: 0, output: 'node 0\nthread\ngit\n' });
  });

  it('A6: the filter leaves ordinary calls alone (ioctl FIONREAD, fork, AF_INET, stream socketpairs)', async () => {
    expect(await probeCalls([...STILL_ALLOWED, 'socketpair_seqpacket'])).toEqual({
      ...all(STILL_ALLOWED, 'OK'),
      ioctl_FIONREAD: 'EBADF', // the kernel's answer for fd -1: the call got through
      socketpair_seqpacket: 'OK',
    });
  });

  it("A6: with network 'none', socket(AF_UNIX) and datagram AF_UNIX socketpairs fail with EPERM", async () => {
    const names = [
      'socket_unix',
      'socket_unix_hi',
      'socketpair_dgram',
      'socketpair_raw',
      'socketpair_dgram_cloexec',
    ];
    // socketpair(AF_UNIX, SOCK_RAW) is a datagram pair (af_unix turns SOCK_RAW into SOCK_DGRAM).
    expect(await probeCalls(names)).toEqual(all(names, 'EPERM'));
  });

  it('A6: an AF_UNIX socket of the host in the workspace cannot be reached from inside (the server sees nothing)', async () => {
    const path = join(ws, 'host.sock');
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.on('error', () => {}); // the client may be gone before the reply
      socket.end('hello from the host\n');
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const python = `
import errno, socket
def attempt(what, f):
    try:
        f(); print(what, 'connected')
    except OSError as e:
        print(what, errno.errorcode[e.errno])
attempt('socket', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect('host.sock'))
attempt('dgram-pair', lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].connect('host.sock'))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
attempt('stream-pair', lambda: a.connect('host.sock'))
attempt('stream-pair-sendto', lambda: a.sendto(b'x', 'host.sock'))
attempt('bind', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind('inner.sock'))
`;
      writeFileSync(join(ws, 'unix.py'), python);
      const node = `const c = require("net").connect("host.sock"); c.on("connect", () => { console.log("node connected"); c.destroy(); }); c.on("error", (e) => console.log("node", e.code));`;
      const r = await rt.shell.run({
        owner: lease.token,
        command: `${PY} unix.py; node -e '${node}'`,
      });
      expect(parse(r.output)).toEqual({
        socket: 'EPERM',
        'dgram-pair': 'EPERM',
        'stream-pair': 'EISCONN', // the kernel's: a socketpair end is connected already
        'stream-pair-sendto': 'EISCONN',
        bind: 'EPERM',
        node: 'EPERM',
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('A6: TIOCSTI on a sandboxed terminal fails with EPERM: nothing is typed into it', async () => {
    const t = await rt.terminals.open(lease.token);
    try {
      // fd 0 is the terminal's PTY, this shell's controlling terminal: without the filter (and
      // with dev.tty.legacy_tiocsti=1) the kernel would accept the injected space.
      const r = await rt.terminals.execute(lease.token, t.id, `${PY} ${probe} tty_TIOCSTI tty_TIOCSTI_hi`);
      expect(parse(r.output)).toEqual({ tty_TIOCSTI: 'EPERM', tty_TIOCSTI_hi: 'EPERM' });
      expect(await rt.terminals.execute(lease.token, t.id, 'echo "[$(echo after)]"')).toMatchObject({
        exitCode: 0,
        output: '[after]\n',
      });
    } finally {
      await rt.terminals.close(lease.token, t.id);
    }
  });

  it("A6: with isolation 'pid' and no sandbox, the always-denied calls fail with EPERM too (AF_UNIX stays)", async () => {
    const pid = await createRuntime({
      cwd: base,
      spillDir: false,
      isolation: 'pid',
      limits: { cleanupGraceMs: 300, drainMs: 200 },
    });
    try {
      const names = Object.values(ALWAYS).flat();
      const owner = pid.owners.host().token;
      expect(await probeCalls([...names, 'clone3', 'socket_unix', 'socketpair_dgram'], pid, owner)).toEqual({
        ...all(names, 'EPERM'),
        clone3: 'ENOSYS',
        // The host's network: AF_UNIX sockets are not this mode's to refuse.
        socket_unix: 'OK',
        socketpair_dgram: 'OK',
      });
    } finally {
      await pid.dispose();
    }
  });
});

/** One probe run, with the sandbox description of its result. */
async function run(names: string[]) {
  const r = await rt.shell.run({ owner: lease.token, command: `${PY} ${probe} ${names.join(' ')}` });
  expect(r.exitCode, r.output).toBe(0);
  return r;
}
