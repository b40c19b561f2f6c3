# Tether's remote helper (X2): uploaded by the SSH provider, never installed by hand.
# Needs python3 >= 3.8 and Linux /proc on the remote host. One daemon per helper directory
# keeps every tree it started (own session, TETHER_TREE marker), numbers their output so a
# client that reconnects resumes from its cursor, kills trees to a verdict, and answers
# stdin_read probes from /proc. `connect` hands one SSH exec channel's stdin and stdout to the
# daemon (SCM_RIGHTS over its socket, so no process relays the bytes) and starts the daemon when
# none runs.
import array, codecs, collections, ctypes, fcntl, json, os, platform, pty, re, select, selectors, signal, socket, struct, sys, termios, time, traceback

VERSION = 3
WINDOW = 4 << 20  # bytes sent beyond the client's ack before the daemon waits
CAP = 8 << 20  # bytes buffered per stream before the daemon stops reading the job
# Job output pipes and the channel's pipe to sshd are grown to this (as root, see grow_pipe), and
# a read takes up to this: a flood then costs a read and a writev per MiB, not per 64 KiB (X1
# throughput; the helper's CPU per 256 MiB fell by about 40% here).
PIPE = 1 << 20
# Signals Python ignores for itself (SIGPIPE, SIGXFSZ) and the daemon ignores (SIGHUP): a leader
# starts with their default action, as from a login shell.
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGHUP, signal.SIGXFSZ)
SYSCALLS = {
    'x86_64': {0: 'read', 19: 'read', 7: 'poll', 271: 'poll', 23: 'select', 270: 'select', 232: 'epoll', 281: 'epoll', 441: 'epoll'},
    'aarch64': {63: 'read', 65: 'read', 73: 'poll', 72: 'select', 22: 'epoll', 441: 'epoll'},
}.get(platform.machine())


try:
    # The C library, once: clone3 on every spawn, prctl and mallopt at start.
    LIBC = ctypes.CDLL(None, use_errno=True)
    LIBC.syscall.restype = ctypes.c_long
except Exception:
    LIBC = None


def clone_into(cgroup_fd):
    """fork() whose child starts inside the cgroup open at `cgroup_fd` (clone3 with
    CLONE_INTO_CGROUP, Linux 5.7+): no cgroup.procs write in the child, whose migration waits for
    an RCU grace period (0.7-1 ms a spawn here, remote P1). None where the kernel, its seccomp
    filter or the architecture refuse it: the caller forks and writes cgroup.procs instead. Only
    for this single-threaded daemon (the child skips CPython's fork hooks and execs at once)."""
    if LIBC is None or platform.machine() not in ('x86_64', 'aarch64'):
        return None
    try:
        # struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size,
        # tls, set_tid, set_tid_size, cgroup.
        args = ctypes.create_string_buffer(struct.pack('=11Q', 0x200000000, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, cgroup_fd), 88)
        pid = LIBC.syscall(435, args, 88)  # clone3, the same number on both
    except Exception:
        return None
    return pid if pid >= 0 else None


def close_fds(keep):
    # What is open, from /proc: closerange(3, 65536) is one syscall per number where the kernel
    # lacks close_range (seconds under a syscall-trapping sandbox).
    for name in os.listdir('/proc/self/fd'):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def login_env():
    # The login env minus what describes the SSH session (stale after a reconnect): with
    # SSH_CLIENT set and SHLVL < 2, Debian's bash sources ~/.bashrc even for `bash -c`.
    return {k: v for k, v in os.environ.items() if not k.startswith('SSH_') and k != 'SHLVL'}


def frame(kind, body):
    return struct.pack('>IB', len(body) + 1, kind) + body


def jframe(obj):
    return frame(0x4A, json.dumps(obj, separators=(',', ':')).encode())


def stat_of(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(')') + 2:].split()
    return {'state': rest[0], 'ppid': int(rest[1]), 'pgrp': int(rest[2]), 'sid': int(rest[3]),
            'tty': int(rest[4]), 'tpgid': int(rest[5]), 'start': int(rest[19])}


def alive(pid, start=None):
    st = stat_of(pid)
    return st is not None and st['state'] not in 'ZX' and (start is None or st['start'] == start)


def grow_pipe(fd):
    # Only as root: an unprivileged user's pipes count against fs.pipe-user-pages-soft (64 MiB),
    # past which every new pipe of that user gets one page. A refusal keeps the default 64 KiB.
    if os.geteuid() != 0:
        return
    try:
        fcntl.fcntl(fd, 1031, PIPE)  # F_SETPIPE_SZ
    except OSError:
        pass


def pids():
    return [int(d) for d in os.listdir('/proc') if d.isdigit()]


# The latest /proc scan (proc_rows) and its number.
SCAN = {'n': 0, 'rows': []}


def proc_rows(after):
    """(number, rows): a /proc scan newer than scan number `after`, the latest if it is, and
    its rows: every live process but the daemon as (pid, stat, its TETHER_TREE markers). Kills
    polling together share one (500 kills each scanning all of /proc every step was quadratic,
    marker mode); each still sees a scan taken after its previous look. A scan that found no
    member of a tree proves it empty as well as a scan of its own would (none can join it)."""
    if SCAN['n'] > after:
        return SCAN['n'], SCAN['rows']
    rows, me = [], os.getpid()
    for pid in pids():
        st = stat_of(pid)
        if st is None or st['state'] in 'ZX' or pid == me:
            continue
        try:
            with open('/proc/%d/environ' % pid, 'rb') as f:
                marks = [i for i in f.read().split(b'\0') if i.startswith(b'TETHER_TREE=')]
        except OSError:
            marks = []
        rows.append((pid, st, marks))
    SCAN['n'], SCAN['rows'] = SCAN['n'] + 1, rows
    return SCAN['n'], rows


def tree_members(tree, marker, leader, roots, rows):
    """Live processes of a tree: its env marker, the leader's session (identity-checked), and
    every descendant of those and of `roots` (the orphans of the tree the helper adopted as
    subreaper): a child that left the session and dropped the env is still found by its parent."""
    found, children = set(), {}
    session = leader is not None and alive(leader[0], leader[1])
    for pid, st, marks in rows:
        children.setdefault(st['ppid'], []).append(pid)
        if session and st['sid'] == leader[0] or marker in marks:
            found.add(pid)
    if leader is not None and alive(leader[0], leader[1]):
        found.add(leader[0])
    todo = list(found) + [p for p in roots if alive(p)]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(c for c in children.get(pid, ()) if c not in found)
    return sorted(found)


def unoctal(field):
    # mountinfo escapes space, tab, newline and backslash as octal.
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def cgroup_base(name):
    """Makes cgroup v2 directory `name` below the helper's own cgroup (K1 on the remote host):
    returns (path, None), or (None, why not) when the host has no writable v2 hierarchy."""
    try:
        with open('/proc/self/mountinfo') as f:
            mount = next((m for m in (l.split() for l in f) if '-' in m and m[m.index('-') + 1:m.index('-') + 2] == ['cgroup2']), None)
        with open('/proc/self/cgroup') as f:
            own = next((l.strip()[3:] for l in f if l.startswith('0::')), None)
    except OSError:
        return None, 'no /proc/self/mountinfo'
    if mount is None:
        return None, 'no cgroup v2 hierarchy is mounted'
    if own is None:
        return None, 'the helper is in no cgroup v2 group'
    root, point = unoctal(mount[3]), unoctal(mount[4])
    if root != '/' and own.startswith(root):
        own = own[len(root):]
    base = point.rstrip('/') + own.rstrip('/') + '/' + name
    try:
        os.mkdir(base)
    except OSError as e:
        return None, 'cannot make a cgroup in %s (%s): run the helper as root or in a delegated cgroup' % (os.path.dirname(base), e.strerror)
    if not os.path.exists(os.path.join(base, 'cgroup.kill')):
        os.rmdir(base)
        return None, 'cgroup v2 has no cgroup.kill here (Linux 5.14 or later is needed)'
    return base, None


def migration_home(cg):
    """The daemon's own cgroup.procs when it can step into a tree's cgroup below `cg` and back
    (Daemon.spawn_leader), tried once with a probe cgroup; else None (no cgroup, or no right to
    move itself: then leaders are forked)."""
    if cg is None:
        return None
    home = os.path.join(os.path.dirname(cg), 'cgroup.procs')
    probe = os.path.join(cg, 'probe')
    try:
        os.mkdir(probe)
    except OSError:
        return None
    try:
        with open(os.path.join(probe, 'cgroup.procs'), 'w') as f:
            f.write('0')
    except OSError:
        os.rmdir(probe)
        return None
    try:
        with open(home, 'w') as f:
            f.write('0')
    except OSError:
        try:
            with open(os.path.join(cg, 'cgroup.procs'), 'w') as f:  # below its own: no tree's
                f.write('0')
        except OSError:
            pass  # left in the probe, which then stays: no tree is ever made there
        return None
    finally:
        try:
            os.rmdir(probe)
        except OSError:
            pass
    return home


def cgroup_dirs(cg):
    """`cg` and every cgroup below it, deepest first."""
    return [top for top, _, _ in os.walk(cg, topdown=False)]


def cgroup_pids(cg):
    pids = []
    for d in cgroup_dirs(cg):
        try:
            with open(os.path.join(d, 'cgroup.procs')) as f:
                pids += [int(l) for l in f if l.strip()]
        except OSError:
            pass
    return pids


def populated(cg):
    try:
        with open(os.path.join(cg, 'cgroup.events')) as f:
            return 'populated 1' in f.read().split('\n')
    except OSError:
        return False  # removed: empty


def kill_cgroup(cg):
    """SIGKILL to everything in `cg` and below, forks in flight included (Linux 5.14+)."""
    try:
        with open(os.path.join(cg, 'cgroup.kill'), 'w') as f:
            f.write('1')
    except OSError:
        pass


def remove_cgroup(cg):
    """Removes `cg` and what is below it; False while a process is left in it."""
    for d in cgroup_dirs(cg):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    return True


def kill_tree(tree, leader, grace_ms, reap, hangup=False, cg=None, strays=None):
    """The steps of a tree's kill (kill_steps), to start now: its /proc scans (marker mode) are
    all taken after this call."""
    return kill_steps(tree, leader, grace_ms, reap, hangup, cg, strays, SCAN['n'])


def kill_steps(tree, leader, grace_ms, reap, hangup, cg, strays, scanned):
    """A generator: yields the seconds to wait before its next step, returns the verdict (S4).

    With a cgroup (`cg`), its members are the tree: the leader entered it before its exec (spawn
    fails otherwise), a fork lands in it whatever it does to its session or env, `cgroup.kill`
    takes forks in flight too, and the kernel's `populated 0` is the proof; nothing of the tree
    can be outside it, so /proc is not scanned (as K1 locally). Without one, the env marker and
    the leader's session are looked up in /proc, with the descendants of what they find and of
    the tree's orphans the helper adopted (`strays`: the daemon's record, see Daemon.adopt); an
    adopted orphan it could not attribute to one tree makes the verdict `escaped` (unproven)."""
    marker = ('TETHER_TREE=' + tree).encode()
    killed = set()
    seen = scanned  # the scan its last look used; after a wait it needs a newer one than that
    cg = cg if cg is not None and os.path.isdir(cg) else None

    def members():
        if cg is not None:
            return [p for p in cgroup_pids(cg) if alive(p)]
        nonlocal seen
        seen, rows = proc_rows(scanned)
        return tree_members(tree, marker, leader, strays.mine(tree) if strays else (), rows)

    def send(sig):
        for pid in members():
            try:
                os.kill(pid, sig)
                killed.add(pid)
                if sig == signal.SIGTERM:
                    if hangup:
                        os.kill(pid, signal.SIGHUP)
                    os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if sig == signal.SIGKILL and cg is not None:
            kill_cgroup(cg)

    def wait_gone(ms):
        nonlocal scanned
        # Polls after 5 ms, then waits twice as long each time, up to 50 ms: a dispose kills
        # hundreds of trees at once, each stepping every round of the daemon's loop, which must
        # stay free to answer (a loop that stalls past the heartbeat loses the link, X3).
        end, pause = time.monotonic() + ms / 1000, 0.005
        while True:
            reap()
            # Under a cgroup the kernel's `populated 0` is the proof (one small read a step);
            # its members are listed only once the deadline passed: what is left.
            if cg is not None and not populated(cg):
                return []
            over = time.monotonic() >= end
            if cg is None or over:
                left = members()
                if not left or over:
                    return left
            yield min(pause, max(0.0, end - time.monotonic()))
            scanned, pause = seen, min(pause * 2, 0.05)

    proof = 'cgroup' if cg is not None else 'proc'
    send(signal.SIGTERM)
    if (yield from wait_gone(grace_ms)):
        send(signal.SIGKILL)
        left = yield from wait_gone(2000)
        if left:
            stuck = [p for p in left if (stat_of(p) or {}).get('state') == 'D']
            return {'status': 'escaped', 'proof': proof, 'killed': len(killed),
                    'escaped': [p for p in left if p not in stuck], 'stuck': stuck}
    if cg is not None:
        remove_cgroup(cg)
    elif strays is not None:
        # Orphans of no known tree that could be this one's: nothing proves them someone else's.
        unknown = strays.unattributed(leader[1] if leader else None)
        if unknown:
            return {'status': 'escaped', 'proof': proof, 'killed': len(killed), 'escaped': unknown, 'stuck': []}
    return {'status': 'quiescent', 'proof': proof, 'killed': len(killed)}


def tree_dir(tree):
    """A tree id as a cgroup directory name."""
    return 't-' + re.sub(r'[^A-Za-z0-9._-]', '_', tree)


def read_mem(pid, addr, size):
    with open('/proc/%d/mem' % pid, 'rb', buffering=0) as f:
        f.seek(addr)
        return f.read(size)


def fd_is(pid, fd, tty):
    try:
        return os.readlink('/proc/%d/fd/%d' % (pid, fd)) == tty
    except OSError:
        return False


def thread_waits(pid, tid, tty):
    """'proven' via name, 'running', 'elsewhere' or 'idle' for one thread."""
    try:
        with open('/proc/%d/task/%d/stat' % (pid, tid)) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        with open('/proc/%d/task/%d/syscall' % (pid, tid)) as f:
            fields = f.read().split()
    except OSError:
        return 'unreadable', None
    if state == 'R' or fields[0] == 'running':
        return 'running', None
    if state != 'S' or fields[0] in ('-1',) or not fd_is(pid, 0, tty):
        return 'idle', None
    via = SYSCALLS.get(int(fields[0]))
    args = [int(a, 16) for a in fields[1:7]]
    try:
        if via == 'read':
            ok = fd_is(pid, args[0], tty)
        elif via == 'select':
            n = min(args[0], 1024)
            bits = int.from_bytes(read_mem(pid, args[1], (n + 7) // 8), 'little') if args[1] else 0
            ok = any(bits >> fd & 1 and fd_is(pid, fd, tty) for fd in range(n))
        elif via == 'poll':
            raw = read_mem(pid, args[0], 8 * min(args[1], 4096))
            ok = any(struct.unpack_from('=ihh', raw, i * 8)[1] & 1 and fd_is(pid, struct.unpack_from('=i', raw, i * 8)[0], tty)
                     for i in range(len(raw) // 8))
        elif via == 'epoll':
            with open('/proc/%d/fdinfo/%d' % (pid, args[0])) as f:
                tfds = [int(l.split()[1]) for l in f if l.startswith('tfd:')]
            ok = any(fd_is(pid, fd, tty) for fd in tfds)
        else:
            return 'idle', None
    except (OSError, ValueError):
        return 'unreadable', None
    if not ok:
        return 'elsewhere', None
    with open('/proc/%d/task/%d/status' % (pid, tid)) as f:
        wake = sum(int(l.split()[1]) for l in f if l.split(':')[0] in ('voluntary_ctxt_switches', 'nonvoluntary_ctxt_switches'))
    return 'proven', {'pid': pid, 'tid': tid, 'via': via, 'wakeups': wake}


def probe(job):
    if SYSCALLS is None:
        return {'unknown': 'unsupported-platform: no known syscall table for ' + platform.machine()}
    root = stat_of(job.pid)
    if root is None or root['state'] in 'ZX' or root['start'] != job.start:
        return {'waiting': False, 'reason': 'root-gone'}
    if root['tpgid'] <= 0:
        return {'waiting': False, 'reason': 'no-foreground'}
    seen = set()
    for pid in pids():
        st = stat_of(pid)
        if st is None or st['pgrp'] != root['tpgid'] or st['sid'] != root['sid']:
            continue
        if st['state'] in 'Tt':
            seen.add('idle')
            continue
        try:
            tids = [int(t) for t in os.listdir('/proc/%d/task' % pid)]
        except OSError:
            seen.add('unreadable')
            continue
        for tid in tids:
            kind, proof = thread_waits(pid, tid, job.tty)
            if kind == 'proven':
                after = stat_of(job.pid)
                if after is None or after['tpgid'] != root['tpgid']:
                    return {'unknown': 'foreground-changed'}
                return {'waiting': True, 'proof': proof}
            seen.add(kind)
    for reason, name in (('running', 'busy'), ('elsewhere', 'not-this-tty'), ('unreadable', 'unreadable')):
        if reason in seen:
            return {'waiting': False, 'reason': name}
    return {'waiting': False, 'reason': 'not-waiting'}


def utf16_units(data, decoder):
    """How many UTF-16 code units (a JavaScript string's length) `data` decodes to, continuing
    the stream `decoder` decoded so far (a character split across chunks counts once)."""
    if data.isascii() and not decoder.getstate()[0]:
        return len(data)
    return len(decoder.decode(data).encode('utf-16-le')) // 2


class Stream:
    """One output stream of a job: what it read from offset `base` on, kept until acknowledged.

    Chunks stay the bytes objects os.read returned (no joined buffer: growing a bytearray whose
    front was deleted copies all of it), and go out as memoryviews of them. With `keep` (K6, a
    persisted runtime's tree) the last `keep` bytes stay after the ack too, for a successor
    runtime that adopts the tree; `base_chars` is what the dropped bytes were as text.
    """

    def __init__(self, sid, fd, keep=0):
        self.sid, self.fd, self.eof = sid, fd, fd is None
        self.chunks, self.unsent = collections.deque(), collections.deque()
        self.base = self.acked = self.sent = self.total = 0
        self.watched, self.told = False, False
        self.keep, self.base_chars = keep, 0
        self.counter = codecs.getincrementaldecoder('utf-8')('replace') if keep else None

    def take(self, data):
        self.chunks.append(data)
        self.unsent.append(memoryview(data))
        self.total += len(data)

    def kept(self):
        # Bytes the client has not acknowledged: what the CAP bounds. A stream's `keep` for a
        # successor (K6) is on top of it.
        return self.total - max(self.base, self.acked)

    def ack(self, offset):
        self.acked = max(self.acked, min(offset, self.sent))
        while self.chunks and self.base + len(self.chunks[0]) <= self.acked and (
                self.total - self.base - len(self.chunks[0]) >= self.keep):
            chunk = self.chunks.popleft()
            self.base += len(chunk)
            if self.counter is not None:
                self.base_chars += utf16_units(chunk, self.counter)

    def resume(self, cursor):
        """A client re-attached having received `cursor` bytes: send again from there."""
        self.sent = self.acked = max(self.base, min(cursor, self.total))
        self.ack(self.acked)
        self.unsent = collections.deque(memoryview(c) for c in self.chunks)
        if self.unsent:
            self.unsent[0] = self.unsent[0][self.acked - self.base:]
        self.told = False


class Strays:
    """The helper is every tree's subreaper: whatever a tree leaves behind when a process of it
    dies (a setsid'd, env-less escapee included) becomes the helper's own child. This is the
    record of those children: pid -> [start time, tree or None]. A tree whose leader was reaped
    while no such orphan was of it (or unattributed) is proven empty with no /proc scan: every
    live process of it would descend from one."""

    def __init__(self):
        self.known = {}

    def children(self):
        found = set()
        try:
            for tid in os.listdir('/proc/self/task'):
                with open('/proc/self/task/%s/children' % tid) as f:
                    found.update(int(p) for p in f.read().split())
        except OSError:
            return None
        return found

    def adopt(self, jobs):
        """Brings the record up to date with the helper's children (one small read when nothing
        changed); a new orphan goes to the tree its env names, or to the one tree it can be of:
        of the trees still held (their leader or an orphan of theirs), one started before it."""
        kids = self.children()
        if kids is None:
            return False
        leaders = {j.pid for j in jobs.values()}
        before = self.known
        held = {t for _, t in before.values() if t is not None} | set(jobs)
        starts = {j.tree: j.start for j in jobs.values()}
        self.known = {}
        for pid in kids - leaders:
            st = stat_of(pid)
            if st is None or st['state'] in 'ZX':
                continue
            was = before.get(pid)
            if was is not None and was[0] == st['start']:
                self.known[pid] = was
                continue
            tree = None
            try:
                with open('/proc/%d/environ' % pid, 'rb') as f:
                    for item in f.read().split(b'\0'):
                        if item.startswith(b'TETHER_TREE='):
                            tree = item[12:].decode(errors='replace')
            except OSError:
                pass
            if tree is None:
                could = [t for t in held if starts.get(t, 0) <= st['start']]
                tree = could[0] if len(could) == 1 else None
            self.known[pid] = [st['start'], tree]
        return True

    def mine(self, tree):
        return [p for p, (_, t) in self.known.items() if t == tree]

    def unattributed(self, since=None):
        return sorted(p for p, (start, t) in self.known.items()
                      if t is None and (since is None or start >= since) and alive(p, start))

    def empty_of(self, tree):
        return not any(t is None or t == tree for _, t in self.known.values())


class Client:
    """One SSH channel: its stdin (rfd) and stdout (wfd) as the connect process handed them over,
    and the socket to that process, which lives as long as the channel does."""

    def __init__(self, conn):
        self.conn, self.rfd, self.wfd = conn, None, None
        self.linger = 300.0  # its hello's lingerMs: how long its trees wait for it after it left
        self.inbuf, self.outq, self.queued, self.writing = bytearray(), collections.deque(), 0, False


class Job:
    def __init__(self, n, tree, pid, start, streams, stdin, master, tty, cg):
        self.n, self.tree, self.pid, self.start = n, tree, pid, start
        self.streams, self.stdin, self.master, self.tty, self.cg = streams, stdin, master, tty, cg
        self.exit, self.client, self.inbuf, self.in_eof = None, None, bytearray(), False
        # K6: what the client said about the tree at spawn (opaque: kind, id, label, owner), and
        # since when no client holds it (killed once that is longer than its client's linger).
        self.meta, self.detached_since, self.linger, self.ending = None, None, 300.0, False


class Daemon:
    def __init__(self, sock_path):
        self.sel = selectors.DefaultSelector()
        self.jobs = {}  # tree id -> Job
        # Released trees whose cgroup was removed empty (bounded): a later kill of one has the
        # kernel's proof already, no /proc scan (shell.run verifies after the release).
        self.emptied = collections.OrderedDict()
        # One cgroup for this daemon, one per tree below it. Each daemon's is listed in
        # helper.cgroups, so the next one finds the trees of a daemon that died (X3).
        self.cgroups_file = os.path.join(os.path.dirname(sock_path), 'helper.cgroups')
        self.cg, self.cg_why = cgroup_base('tether-helper-%d' % os.getpid())
        if self.cg is not None:
            with open(self.cgroups_file, 'a') as f:
                f.write(self.cg + '\n')
        # Where the daemon returns after starting a leader from inside its tree's cgroup (its
        # own cgroup's cgroup.procs), or None where it cannot go there and back (spawn_leader).
        self.home_procs = migration_home(self.cg)
        self.cwd_fd = os.open('.', os.O_RDONLY | os.O_DIRECTORY)  # spawn_leader returns to it
        self.posix_spawn = hasattr(os, 'POSIX_SPAWN_DUP2')
        self.clients = set()  # Client
        self.instance = '%d.%d' % (os.getpid(), time.time_ns())
        self.said_bye = False
        self.had_client = False
        # K6: the client that claimed this helper for one runtime ((client, claim)), and whether
        # the directory is a persisted runtime's (removed with the daemon).
        self.exclusive = None
        self.persist = False
        self.tasks = []  # [wake time, generator, on_done]: kills in progress
        self.alone_since = time.monotonic()
        self.reaped_at = 0.0
        self.strays = None  # marker mode: the subreaper's record of orphans (Strays)
        self.round, self.adopted = 0, -1  # step_tasks's rounds; the last one that adopted
        self.scan_floor = 0  # the /proc scan before this loop round's (Daemon.signal)
        try:
            if LIBC.prctl(36, 1, 0, 0, 0) == 0 and self.cg is None:  # PR_SET_CHILD_SUBREAPER
                strays = Strays()
                if strays.children() is not None:
                    self.strays = strays
        except Exception:
            pass
        try:
            # glibc: reads of up to PIPE come from the heap and freed ones stay there (up to
            # 16 MiB), instead of an mmap, fresh pages and a munmap per read. Elsewhere a no-op.
            LIBC.mallopt(-3, 2 * PIPE)  # M_MMAP_THRESHOLD
            LIBC.mallopt(-1, 16 << 20)  # M_TRIM_THRESHOLD
        except Exception:
            pass
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.sel.register(self.wake_r, selectors.EVENT_READ, ('wake', None))
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(sock_path)
        self.listener.listen(16)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, ('listen', None))

    def run(self):
        while True:
            self.scan_floor = SCAN['n']  # signals of this round share a scan taken in it
            busy = self.clients or any(j.exit is None for j in self.jobs.values())
            idle = time.monotonic() - self.alone_since
            # Nothing left to keep: no client, no tree, no kill in progress (the first client gets 5 s to come).
            if not self.clients and not self.jobs and not self.tasks and (self.had_client or idle > 5):
                if self.strays is not None and self.strays.adopt(self.jobs):
                    for pid in list(self.strays.known):  # orphans of its trees outlive none of them
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
                return
            now = time.monotonic()
            # A tree no client came back for within its linger dies (a dropped link that was not
            # re-established, a runtime that crashed and whose successor did not adopt it).
            deadlines = []
            for job in list(self.jobs.values()):
                if job.client is not None or job.detached_since is None or job.ending:
                    continue
                due = job.detached_since + job.linger
                if now >= due:
                    job.ending = True
                    self.start_task(self.kill(job), lambda v, j=job: self.lingered(j, v))
                else:
                    deadlines.append(due)
            wait = min([t[0] for t in self.tasks] + deadlines + [now + (1.0 if busy else 5.0)]) - now
            for key, mask in self.sel.select(max(0, wait)):
                try:
                    self.dispatch(key, mask)
                except Exception:  # a bug in one event must not take every tree down with it
                    traceback.print_exc()
            # SIGCHLD wakes the loop and reaps; this also covers a host that blocks it. Not on
            # every round: a flood makes thousands, and wait4 costs ~0.1 ms on some kernels.
            if time.monotonic() - self.reaped_at >= 0.1:
                self.reap()
            self.step_tasks()
            self.pump()

    def dispatch(self, key, mask):
        kind, obj = key.data
        if kind == 'listen':
            conn, _ = self.listener.accept()
            conn.setblocking(False)
            client = Client(conn)
            self.clients.add(client)
            self.had_client = True
            self.sel.register(conn, selectors.EVENT_READ, ('conn', client))
        elif kind == 'conn':
            self.on_conn(obj)
        elif kind == 'cin':
            self.on_client(obj)
        elif kind == 'cout':
            self.flush_client(obj)
        elif kind == 'out':
            self.on_output(*obj)
        elif kind == 'stdin':
            self.flush_input(obj)
        else:
            try:
                os.read(self.wake_r, 4096)
            except OSError:
                pass
            self.reap()

    def kill(self, job, grace_ms=500):
        return kill_tree(job.tree, (job.pid, job.start), grace_ms, self.reaped, job.master is not None, job.cg,
                         self.strays)

    def reaped(self):
        """Reaps, then updates the orphan record (a kill's every step; once a round, as the
        /proc scan the kills share: reap() itself adopts a reaped leader's orphans)."""
        self.reap()
        if self.strays is not None and self.adopted != self.round:
            self.adopted = self.round
            self.strays.adopt(self.jobs)

    def release(self, job):
        """Forgets a job: its fds, its buffered output, its cgroup once empty."""
        if self.jobs.get(job.tree) is not job:
            return
        for s in job.streams.values():
            self.unwatch(s)
        for fd in (job.master, job.stdin):
            if fd is not None:
                os.close(fd)
        job.master = job.stdin = None
        if job.cg is not None and not populated(job.cg) and remove_cgroup(job.cg) or (
                self.strays is not None and job.exit is not None and self.strays.adopt(self.jobs)
                and self.strays.empty_of(job.tree)):
            self.emptied[job.tree] = True  # else a later kill sweeps what is left, then removes it
            if len(self.emptied) > 1024:
                self.emptied.popitem(last=False)
        del self.jobs[job.tree]

    def cgroup_bases(self):
        """The cgroups of every daemon of this helper directory that may still have trees."""
        try:
            with open(self.cgroups_file) as f:
                return [l.strip() for l in f if l.strip()]
        except OSError:
            return []

    def orphan_cgroup(self, tree):
        """The cgroup of a tree this daemon does not know: one a daemon that died started."""
        for base in self.cgroup_bases():
            cg = os.path.join(base, tree_dir(tree))
            if os.path.isdir(cg):
                return cg
        return None

    def close(self):
        """Removes this daemon's cgroup, and those of dead daemons once they are empty."""
        keep = []
        for base in self.cgroup_bases():
            daemon = re.search(r'tether-helper-(\d+)$', base)
            if base == self.cg:
                if populated(base):  # every tree was killed or released; whatever is left goes
                    kill_cgroup(base)
                end = time.monotonic() + 2
                while populated(base) and time.monotonic() < end:
                    time.sleep(0.01)
            elif daemon and alive(int(daemon.group(1))) and os.path.isdir(base):
                keep.append(base)  # another daemon's, still running
                continue
            if not remove_cgroup(base):
                keep.append(base)
        with open(self.cgroups_file, 'w') as f:
            f.write(''.join(b + '\n' for b in keep))

    def start_task(self, gen, done):
        self.tasks.append([time.monotonic(), gen, done])

    def step_tasks(self):
        self.round += 1
        now = time.monotonic()
        for task in [t for t in self.tasks if t[0] <= now]:
            try:
                task[0] = time.monotonic() + task[1].send(None)
            except StopIteration as stop:
                self.tasks.remove(task)
                task[2](stop.value)

    def reap(self):
        self.reaped_at = time.monotonic()
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for job in self.jobs.values():
                if job.pid == pid and job.exit is None:
                    if self.strays is not None:  # the leader's orphans are the helper's now
                        self.strays.adopt(self.jobs)
                    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                    job.exit = {'code': os.WEXITSTATUS(status) if sig is None else None,
                                'signal': signal.Signals(sig).name if sig else None}
                    if job.master is not None:
                        self.drain_master(job)
                    self.announce_exit(job)

    def drain_master(self, job):
        s = job.streams[3]
        while not s.eof:
            try:
                data = os.read(job.master, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b''
            self.take(job, s, data)

    def announce_exit(self, job):
        if job.exit is not None and job.client is not None:
            ends = {str(s.sid): s.total for s in job.streams.values()}
            # `gone`: the leader was reaped and its cgroup is empty, so nothing of the tree is
            # left anywhere (a fork of it would be in there): the kernel's proof, sent unasked.
            gone = job.cg is not None and not populated(job.cg)
            proof = 'cgroup'
            if self.strays is not None and job.cg is None:
                # Marker mode: the leader was reaped and no orphan of the tree (or of no known
                # tree) is the helper's child, so nothing of it is left (Strays): no kill scan.
                self.strays.adopt(self.jobs)
                gone, proof = self.strays.empty_of(job.tree), 'proc'
            self.send(job.client, jframe(dict(ev='exit', n=job.n, ends=ends, gone=gone, proof=proof, **job.exit)))

    def take(self, job, s, data):
        if data:
            s.take(data)
            return
        s.eof = True
        self.unwatch(s)

    def watch(self, job, s, want):
        if s.fd is None or want == s.watched:
            return
        if want:
            self.sel.register(s.fd, selectors.EVENT_READ, ('out', (job, s)))
        else:
            self.sel.unregister(s.fd)
        s.watched = want

    def unwatch(self, s):
        if s.fd is not None:
            if s.watched:
                self.sel.unregister(s.fd)
                s.watched = False
            if s.sid != 3:
                os.close(s.fd)
            s.fd = None

    def on_output(self, job, s):
        if s.fd is None:  # ended earlier in this round (drained at exit)
            return
        try:
            data = os.read(s.fd, PIPE)  # a pipe's worth (see PIPE and the mallopt in __init__)
        except BlockingIOError:
            return
        except OSError:  # EIO: the pty's last slave holder closed it
            data = b''
        self.take(job, s, data)

    def pump(self):
        for job in self.jobs.values():
            for s in job.streams.values():
                self.watch(job, s, s.kept() < CAP)
                c = job.client
                if c is None or c.wfd is None:
                    continue
                queued = False
                while s.unsent and s.sent - s.acked < WINDOW and c.queued < (1 << 20):
                    piece = s.unsent.popleft()
                    c.outq.append(struct.pack('>IBIBQ', len(piece) + 14, 0x44, job.n, s.sid, s.sent))
                    c.outq.append(piece)  # a view of the kept chunk: the bytes are not copied here
                    c.queued += 18 + len(piece)
                    s.sent += len(piece)
                    queued = True
                if queued:
                    self.flush_client(c)
                if s.eof and not s.unsent and not s.told:
                    s.told = True
                    self.send(c, jframe({'ev': 'eof', 'n': job.n, 'stream': s.sid}))

    def send(self, c, data):
        if c not in self.clients:
            return
        c.outq.append(data)
        c.queued += len(data)
        self.flush_client(c)

    def flush_client(self, c):
        if c not in self.clients or c.wfd is None:
            return
        try:
            while c.outq:
                n = os.writev(c.wfd, [c.outq[i] for i in range(min(len(c.outq), 64))])
                c.queued -= n
                while n:
                    head = c.outq[0]
                    if len(head) > n:
                        c.outq[0] = memoryview(head)[n:]
                        break
                    n -= len(head)
                    c.outq.popleft()
        except BlockingIOError:
            pass
        except OSError:
            return self.drop(c)
        waiting = bool(c.outq)
        if waiting != c.writing:  # one epoll_ctl when the write interest changes, not per write
            c.writing = waiting
            if waiting:
                self.sel.register(c.wfd, selectors.EVENT_WRITE, ('cout', c))
            else:
                self.sel.unregister(c.wfd)

    def drop(self, c):
        if c not in self.clients:
            return
        self.clients.discard(c)
        self.sel.unregister(c.conn)
        if c.rfd is not None:
            self.sel.unregister(c.rfd)
            os.close(c.rfd)
        if c.wfd is not None:
            if c.writing:
                self.sel.unregister(c.wfd)
            os.close(c.wfd)
        c.rfd = c.wfd = None  # events of this round that are still to come find it gone
        c.conn.close()  # the connect process ends, and sshd closes the channel
        for job in self.jobs.values():
            if job.client is c:
                job.client, job.detached_since = None, time.monotonic()
        if self.exclusive is not None and self.exclusive[0] is c:
            self.exclusive = None
        if not self.clients:
            self.alone_since = time.monotonic()

    def on_conn(self, c):
        """The connect process sends the channel's two fds once, then only ends (EOF)."""
        if c not in self.clients:
            return
        try:
            _, anc, _, _ = c.conn.recvmsg(16, socket.CMSG_LEN(2 * array.array('i').itemsize))
        except BlockingIOError:
            return
        except OSError:
            anc = []
        fds = array.array('i')
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        if c.rfd is not None or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            return self.drop(c)
        c.rfd, c.wfd = fds
        for fd in fds:  # SCM_RIGHTS fds come inheritable: no leader may hold the channel
            os.set_inheritable(fd, False)
        os.set_blocking(c.rfd, False)
        os.set_blocking(c.wfd, False)
        grow_pipe(c.wfd)
        self.sel.register(c.rfd, selectors.EVENT_READ, ('cin', c))

    def on_client(self, c):
        if c.rfd is None:
            return
        try:
            data = os.read(c.rfd, 262144)
        except BlockingIOError:
            return
        except OSError:
            data = b''
        if not data:
            return self.drop(c)
        inbuf = c.inbuf
        inbuf += data
        while len(inbuf) >= 5:
            size, kind = struct.unpack_from('>IB', inbuf)
            if len(inbuf) < 4 + size:
                break
            body = bytes(inbuf[5:4 + size])
            del inbuf[:4 + size]
            if kind == 0x49:  # input bytes for a job
                (n,) = struct.unpack_from('>I', body)
                job = self.by_n(c, n)
                if job is not None and job.exit is None:
                    job.inbuf += body[4:]
                    self.flush_input(job)
            else:
                msg = json.loads(body)
                try:
                    reply = self.handle(c, msg)
                except Exception as e:  # a bug in the helper must not kill every tree
                    reply = {'ok': False, 'code': 'SPAWN_FAILED', 'message': 'helper error: %r' % e}
                if reply is not None and 'id' in msg:
                    reply['id'] = msg['id']
                    self.send(c, jframe(reply))
            if c not in self.clients:
                return

    def by_n(self, conn, n):
        for job in self.jobs.values():
            if job.n == n and job.client is conn:
                return job
        return None

    def flush_input(self, job):
        fd = job.master if job.master is not None else job.stdin
        if fd is None:
            return
        try:
            while job.inbuf:
                del job.inbuf[:os.write(fd, job.inbuf[:65536])]
        except BlockingIOError:
            pass
        except OSError:
            job.inbuf.clear()
        watched = job.master is None and job.inbuf
        try:
            if watched:
                self.sel.register(fd, selectors.EVENT_WRITE, ('stdin', job))
            elif job.master is None:
                self.sel.unregister(fd)
        except (KeyError, ValueError):
            pass
        if job.master is None and job.in_eof and not job.inbuf:
            os.close(fd)
            job.stdin = None

    def handle(self, conn, msg):
        op = msg['op']
        if op == 'hello':
            claim = msg.get('exclusive')
            if claim is not None:
                holder = self.holder()
                if holder is not None and holder[0] is not conn and holder[1].get('id') != claim.get('id'):
                    return {'ok': False, 'code': 'PERSIST_IN_USE',
                            'message': "the persisted runtime '%s' is in use by a live runtime (pid %s); one name serves one runtime at a time: dispose that one, or pass another persist.name" % (claim.get('name'), holder[1].get('pid'))}
                self.exclusive = (conn, claim)
                self.persist = True
            self.said_bye = False
            conn.linger = msg.get('lingerMs', 300000) / 1000
            return {'ok': True, 'version': VERSION, 'instance': self.instance, 'proofs': SYSCALLS is not None,
                    'env': login_env(), 'containment': 'cgroup' if self.cg else 'marker', 'containmentWhy': self.cg_why}
        if op == 'spawn':
            return self.spawn(conn, msg)
        if op == 'list':
            return {'ok': True, 'trees': [self.listing(j) for j in self.jobs.values() if j.meta is not None and not j.ending]}
        if op == 'end':
            return self.end_all(conn, msg)
        if op == 'attach':
            job = self.jobs.get(msg['tree'])
            if job is None or job.ending:
                return {'ok': False, 'code': 'PROVIDER_LOST', 'message': 'the helper does not know tree ' + msg['tree']}
            job.client, job.n, job.detached_since, job.linger = conn, msg['n'], None, conn.linger
            for sid, cursor in msg['cursors'].items():
                job.streams[int(sid)].resume(cursor)
            self.announce_exit(job)
            return {'ok': True}
        if op == 'ack':
            job = self.by_n(conn, msg['n'])
            if job is not None:
                job.streams[msg['stream']].ack(msg['offset'])
            return None
        job = self.jobs.get(msg.get('tree'))
        if op == 'kill':
            if job is None and msg.get('tree') in self.emptied and self.strays is None:
                return {'ok': True, 'verdict': {'status': 'quiescent', 'proof': 'cgroup', 'killed': 0}}
            if job is not None:
                gen = self.kill(job, msg['graceMs'])
            else:  # a tree of a daemon that died: its marker, and its cgroup if it had one
                if self.strays is not None and msg.get('tree') in self.emptied:
                    return {'ok': True, 'verdict': {'status': 'quiescent', 'proof': 'proc', 'killed': 0}}
                gen = kill_tree(msg['tree'], None, msg['graceMs'], self.reaped, False, self.orphan_cgroup(msg['tree']),
                                self.strays)
            self.start_task(gen, lambda verdict: self.send(conn, jframe({'ok': True, 'verdict': verdict, 'id': msg['id']})))
            return None
        if op == 'release':
            if job is not None and job.exit is not None:
                self.release(job)
            return {'ok': True}
        if op == 'bye':
            # The provider is gone for good: nobody will read or re-attach this client's jobs.
            self.said_bye = True
            # Also the trees it gave up on while its link was down (a kill that found no link).
            orphans = set(msg.get('orphans') or [])
            for job in [j for j in self.jobs.values() if j.client is conn or (j.client is None and j.tree in orphans)]:
                if job.exit is not None:
                    self.release(job)
                else:
                    self.start_task(self.kill(job), lambda v, j=job: self.release(j))
            return {'ok': True}
        if job is None:
            return {'ok': False, 'code': 'TERMINAL_CLOSED', 'message': 'no such tree on the helper'}
        if op == 'detach':  # K6: an adopt that did not take; the tree waits again for its linger
            if job.client is conn:
                job.client, job.detached_since = None, time.monotonic()
            return {'ok': True}
        if op == 'eof':
            job.in_eof = True
            self.flush_input(job)
            return None
        if op == 'resize':
            if job.master is not None and job.exit is None:
                fcntl.ioctl(job.master, termios.TIOCSWINSZ, struct.pack('HHHH', msg['rows'], msg['cols'], 0, 0))
            return None
        if op == 'signal':
            return {'ok': True, 'delivered': self.signal(job, msg)}
        if op == 'probe':
            answer = probe(job)
            # T5: what the terminal's processes wrote before they waited is in the pty now; read
            # it and say where it ends, so the client counts the proof only once it has all of it
            # (a reply can pass output still in the pty, or replayed after a re-attach).
            end = None
            if job.master is not None and 3 in job.streams:
                if job.streams[3].fd is not None:
                    self.drain_master(job)
                end = job.streams[3].total
            return {'ok': True, 'answer': answer, 'end': end}
        return {'ok': False, 'code': 'INVALID_ARGUMENT', 'message': 'unknown op ' + op}

    def holder(self):
        """The live client that claimed this helper, after reading what it sent last: a runtime
        that died has closed its end, and its drop is seen here rather than a round later."""
        if self.exclusive is None:
            return None
        c = self.exclusive[0]
        if c in self.clients and c.rfd is not None and select.select([c.rfd], [], [], 0)[0]:
            self.on_client(c)
        return self.exclusive if self.exclusive is not None and self.exclusive[0] in self.clients else None

    def lingered(self, job, verdict):
        """A tree nobody came back for was killed: the runtime that claimed the helper hears its
        verdict (K6: a successor that did not adopt it)."""
        self.release(job)
        if job.meta is not None and self.exclusive is not None:
            self.send(self.exclusive[0], jframe({'ev': 'lingered', 'tree': job.tree, 'meta': job.meta, 'verdict': verdict}))

    def listing(self, job):
        """K6: one tree as a successor runtime sees it."""
        return {'tree': job.tree, 'meta': job.meta, 'pid': job.pid, 'start': job.start, 'tty': job.tty,
                'exit': job.exit, 'attached': job.client is not None,
                'streams': {str(s.sid): {'base': s.base, 'baseChars': s.base_chars, 'total': s.total}
                            for s in job.streams.values()}}

    def end_all(self, conn, msg):
        """`tether reap --name`: every tree killed to a verdict, then the reply with them all."""
        jobs = list(self.jobs.values())
        verdicts = []
        if not jobs:
            return {'ok': True, 'verdicts': []}

        def done(verdict, job):
            self.release(job)
            verdicts.append(dict(verdict, tree=job.tree))
            if len(verdicts) == len(jobs):
                self.send(conn, jframe({'ok': True, 'verdicts': verdicts, 'id': msg['id']}))
        for job in jobs:
            job.ending = True
            self.start_task(self.kill(job, msg.get('graceMs', 500)), lambda v, j=job: done(v, j))
        return None

    def signal(self, job, msg):
        sig = getattr(signal, msg['signal'])
        if job.exit is not None or not alive(job.pid, job.start):
            return False
        root = stat_of(job.pid)
        if root is None:
            return False
        group = {'foreground': root['tpgid'], 'group': job.pid}.get(msg['target'])
        hit = False
        # The candidates: under a cgroup its members (nothing of the session leaves it), else the
        # session's processes in a /proc scan that every signal of this loop round shares. A scan
        # per signal stalled the loop (50-60 ms each with 1,300 processes: the SIGINTs of 300
        # cancels at dispose held it 18 s, past the heartbeat, and the runtime dropped the link
        # with the trees alive). Each candidate's identity is read again just before its signal.
        if job.cg is not None:
            candidates = cgroup_pids(job.cg)
        else:
            candidates = [pid for pid, st, _ in proc_rows(self.scan_floor)[1] if st['sid'] == job.pid]
        for pid in candidates:
            st = stat_of(pid)
            if st is None or st['state'] in 'ZX' or st['sid'] != job.pid:
                continue
            if group is not None and st['pgrp'] != group:
                continue
            try:
                os.kill(pid, sig)  # identity: a member of this live session, read just now
                hit = True
            except OSError:
                pass
        return hit

    def spawn_leader(self, found, argv, env, cwd, fds, cg):
        """Starts a leader that needs no terminal: (pid, None), or (None, why not).

        posix_spawn (glibc: a vfork-like clone, the child execs at once) instead of a fork of
        this Python process: a fork copies its page tables, and until the child execs every
        object the daemon touches is a copy-on-write fault, while a forked child runs Python to
        set itself up. Measured here: 2.9-3.5 ms of the daemon's CPU per spawn through clone3,
        0.4 ms this way (a scratch loop of 200 spawns of /bin/true); one link's one-shot calls
        went from 47-50 to 208-225 a second (bench/remote-scale.js, frames). Its child cannot enter a cgroup
        by itself, so the daemon steps into the tree's cgroup for the spawn and back: the leader
        is born inside it, and nothing of it ever ran outside (the kill's proof relies on that).
        The daemon is single-threaded, so nothing else happens while it is in there. Everything
        the daemon holds open is close-on-exec (Python's default; the few inheritable ones are
        made so where they arrive), so the leader holds only its 0, 1 and 2."""
        if not self.posix_spawn or (cg is not None and self.home_procs is None):
            return self.fork_leader(found, argv, env, cwd, fds, None, cg)
        actions = [(os.POSIX_SPAWN_DUP2, fd, i) for i, fd in enumerate(fds)]
        entered = False
        try:
            if cg is not None:
                with open(os.path.join(cg, 'cgroup.procs'), 'w') as f:
                    f.write('0')
                entered = True
            os.chdir(cwd)  # posix_spawn has no chdir of its own in Python
            pid = os.posix_spawn(found, argv, env, file_actions=actions, setsid=True,
                                 setsigdef=RESET_SIGNALS, setsigmask=())
        except OSError as e:
            return None, repr(e)
        except (NotImplementedError, TypeError):  # no POSIX_SPAWN_SETSID (an old musl, Python)
            pid = None
        finally:
            os.fchdir(self.cwd_fd)
            if entered:
                self.go_home()
        if pid is None:
            self.posix_spawn = False
            return self.fork_leader(found, argv, env, cwd, fds, None, cg)
        return pid, None

    def go_home(self):
        """Back to the daemon's own cgroup after a spawn from inside a tree's. Where that write
        fails (it worked at start), to the daemon's base cgroup instead, which no tree's kill
        touches, and leaders are forked from then on."""
        try:
            with open(self.home_procs, 'w') as f:
                f.write('0')
        except OSError:
            traceback.print_exc()
            with open(os.path.join(self.cg, 'cgroup.procs'), 'w') as f:
                f.write('0')
            self.home_procs = None

    def fork_leader(self, found, argv, env, cwd, fds, tty, cg):
        """Starts a leader from a fork of the daemon: for a terminal (TIOCSCTTY needs the child
        to run code of its own) and where the daemon cannot step into a tree's cgroup. With a
        cgroup, the child is cloned into it (clone3) or writes itself in before its exec.
        Returns (pid, None), or (pid or None, why it failed)."""
        cg_fd = os.open(cg, os.O_RDONLY | os.O_DIRECTORY) if cg is not None else None
        errr, errw = os.pipe()
        pid = clone_into(cg_fd) if cg_fd is not None else None
        inside = pid is not None
        if pid is None:
            pid = os.fork()
        if pid == 0:
            try:
                os.close(errr)
                if cg is not None and not inside:  # in before exec: nothing of the program runs outside
                    with open(os.path.join(cg, 'cgroup.procs'), 'w') as f:
                        f.write('0')
                os.setsid()
                for i, fd in enumerate(fds):
                    os.dup2(fd, i)
                if tty is not None:
                    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
                close_fds(keep=(errw,))
                fcntl.fcntl(errw, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
                for sig in RESET_SIGNALS:
                    signal.signal(sig, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                os.chdir(cwd)
                os.execve(found, argv, env)
            except BaseException as e:
                os.write(errw, repr(e).encode())
            os._exit(127)
        os.close(errw)
        if cg_fd is not None:
            os.close(cg_fd)
        failure = os.read(errr, 4096)
        os.close(errr)
        return pid, failure.decode(errors='replace') or None

    def spawn(self, conn, msg):
        tree, argv, cwd, env = msg['tree'], msg['argv'], msg['cwd'], msg['env']
        keep = int(msg.get('keep') or 0)
        if not os.path.isdir(cwd):
            return {'ok': False, 'code': 'CWD_NOT_FOUND', 'message': "cwd '%s' is not an existing directory on the remote host; pass a directory that exists there" % cwd}
        prog = argv[0]
        if '/' in prog:
            found = os.path.join(cwd, prog) if os.access(os.path.join(cwd, prog), os.X_OK) else None
        else:
            found = next((os.path.join(d, prog) for d in env.get('PATH', '').split(':') if d and os.access(os.path.join(d, prog), os.X_OK) and not os.path.isdir(os.path.join(d, prog))), None)
        if found is None:
            return {'ok': False, 'code': 'SPAWN_FAILED', 'message': "'%s' was not found on the remote host (looked up in PATH from cwd '%s'); pass an installed executable" % (prog, cwd)}
        env = dict(env, TETHER_TREE=tree)
        streams, stdin, master, tty = {}, None, None, None
        if msg.get('pty'):
            master, slave = pty.openpty()
            tty = os.ttyname(slave)
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', msg['pty']['rows'], msg['pty']['cols'], 0, 0))
            fds = (slave, slave, slave)
            streams[3] = Stream(3, master, keep)
        else:
            null = os.open(os.devnull, os.O_RDWR)
            fds, close = [null, null, null], []
            if msg['stdin']:
                r, w = os.pipe()
                fds[0], stdin = r, w
                close.append(r)
            for i, sid in ((1, 1), (2, 2)):
                if i == 2 and msg.get('merge') and msg['stdio'][1]:
                    fds[2] = fds[1]  # K6: one stream in the kernel's order, as a successor replays it
                    streams[2] = Stream(2, None)
                elif msg['stdio'][i]:
                    r, w = os.pipe()
                    fds[i] = w
                    close.append(w)
                    streams[sid] = Stream(sid, r, keep)
                    grow_pipe(r)
                else:
                    streams[sid] = Stream(sid, None)
        cg = None
        if self.cg is not None:
            cg = os.path.join(self.cg, tree_dir(tree))
            os.mkdir(cg)
        if msg.get('pty'):
            pid, failure = self.fork_leader(found, argv, env, cwd, fds, tty, cg)
        else:
            pid, failure = self.spawn_leader(found, argv, env, cwd, fds, cg)
        for fd in set(fds) if msg.get('pty') else set(close + [fds[0], fds[1], fds[2], null]):
            try:
                os.close(fd)
            except OSError:
                pass
        if failure:
            if pid is not None:
                os.waitpid(pid, 0)
            if cg is not None:
                remove_cgroup(cg)
            return {'ok': False, 'code': 'SPAWN_FAILED', 'message': "'%s' could not be started on the remote host: %s" % (prog, failure)}
        start = None
        while start is None:
            st = stat_of(pid)
            start = st['start'] if st else -1
        if stdin is not None:
            os.set_blocking(stdin, False)
        job = Job(msg['n'], tree, pid, start, streams, stdin, master, tty, cg)
        job.client, job.meta, job.linger = conn, msg.get('meta'), conn.linger
        for s in streams.values():
            if s.fd is not None:
                os.set_blocking(s.fd, False)
                self.watch(job, s, True)
        self.jobs[tree] = job
        return {'ok': True, 'pid': pid, 'start': start, 'tty': tty}


def refuse_untrusted(directory, path):
    """Exits unless `directory` is this user's and nobody else can write it, and the socket in it,
    if any, is this user's: another user's helper is never connected (K6)."""
    st = os.lstat(directory)
    why = None
    if not (st.st_mode & 0o170000 == 0o040000):
        why = 'it is not a directory'
    elif st.st_uid != os.geteuid():
        why = 'it belongs to uid %d, not to uid %d' % (st.st_uid, os.geteuid())
    elif st.st_mode & 0o022:
        why = 'others can write it (mode %o)' % (st.st_mode & 0o7777)
    else:
        try:
            sock = os.lstat(path)
            if sock.st_uid != os.geteuid():
                why = 'its socket %s belongs to uid %d' % (path, sock.st_uid)
        except FileNotFoundError:
            pass
    if why is not None:
        sys.stderr.write('tether helper: refusing the helper directory %s: %s\n' % (directory, why))
        sys.exit(6)


def connect(directory):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, 'helper-%d.sock' % VERSION)
    refuse_untrusted(directory, path)
    for attempt in range(2000):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            break
        except OSError:
            sock.close()
        if attempt % 20 == 0:
            os.makedirs(directory, mode=0o700, exist_ok=True)  # a persisted daemon removes it at its end
            start_daemon(directory, path)
        time.sleep(0.005)
    else:
        sys.stderr.write('tether helper: the daemon did not come up at %s\n' % path)
        sys.exit(3)
    sys.stdout.buffer.write(b'TETHER-HELPER %d\n' % VERSION)
    sys.stdout.flush()
    # The daemon reads and writes the channel itself; this process only lives as long as it does
    # (sshd keeps the channel open while its command runs).
    sock.sendmsg([b'F'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1]).tobytes())])
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    while sock.recv(4096):
        pass


def remove_persist_dir(directory):
    """K6: a persisted runtime's helper directory goes with its daemon (its trees are gone):
    what the helper made in it, then the directory, if nothing else is in it."""
    for name in os.listdir(directory):
        if name.startswith(('helper', 'tether-helper-')):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
    try:
        os.rmdir(directory)
    except OSError:
        pass


def start_daemon(directory, path):
    # The daemon holds this lock for its whole life: whoever gets it knows no daemon runs.
    lock = os.open(os.path.join(directory, 'helper.lock'), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return  # a daemon runs or is starting: its socket will answer
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            log = os.open(os.path.join(directory, 'helper.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(log, 2)
            keep = os.dup2(lock, 3) if lock != 3 else 3
            os.set_inheritable(keep, False)  # no leader may hold the daemon's lock
            close_fds(keep=(3,))
            with open(os.path.join(directory, 'helper.pid'), 'w') as f:
                f.write(str(os.getpid()))
            daemon = None
            try:
                daemon = Daemon(path)
                daemon.run()
                daemon.close()
            finally:
                try:
                    os.unlink(path)
                except OSError:
                    pass
                if daemon is not None and daemon.persist:
                    remove_persist_dir(directory)
                os.close(keep)
            os._exit(0)
        os._exit(0)
    os.wait()
    os.close(lock)


if __name__ == '__main__':
    if sys.version_info < (3, 8):
        sys.stderr.write('tether helper: python3 >= 3.8 is needed, this is %s\n' % sys.version.split()[0])
        sys.exit(4)
    if not os.path.isdir('/proc/self'):
        sys.stderr.write('tether helper: Linux /proc is needed on the remote host\n')
        sys.exit(4)
    connect(sys.argv[2]) if sys.argv[1] == 'connect' else sys.exit(2)
