/*
 * tether-spawner: starts the local process trees of one Tether runtime (S1, K1, P1).
 *
 * Why a helper process and why C: Node's child_process.spawn forks the whole Node process on
 * Linux (libuv only uses posix_spawn on macOS; nodejs/node#14917, libuv#3520), so every spawn
 * copies the page tables of a process with several V8 heaps — measured here at 8–20 ms of
 * blocked main loop per spawn, growing with the heap — and every page Node writes afterwards
 * takes a copy-on-write fault. This process is small, so its fork costs a fraction of a
 * millisecond, and the main loop never blocks on it. It starts children the way glibc's
 * posix_spawn does — clone(CLONE_VM | CLONE_VFORK) on a stack of its own, so not even this
 * process's page tables are copied (measured here: 2.3 ms per /bin/true against 3.4–3.9 ms
 * for fork) — but with what posix_spawn cannot do: the child starts in its tree's cgroup
 * (K1: nothing of the program runs outside), cloned into it by clone3 on x86-64, else writing
 * itself into it before it execs. C because no maintained npm package spawns without forking
 * Node, and a cgroup entry needs code between clone and exec.
 *
 * Protocol on fd 3 (a socketpair with Node): requests are frames `u32le length, payload`;
 * payload `S\0id\0modes\0cwd\0cgroup\0join\0argc\0argv...\0envc\0env...\0` starts a child,
 * `O\0id\0` says Node opened that child's pipes. Replies are lines:
 *   `S <id> <pid> <starttime>`        started (exec succeeded)
 *   `F <id> <errno> <stage>`          nothing runs: stage is fifo, clone, cgroup, chdir or exec
 *   `X <pid> <code> <signal>`         the child was reaped (code -1 when a signal ended it)
 * modes: three characters for stdin, stdout, stderr: i ignore, h inherit, p pipe. A pipe is a
 * FIFO `<dir>/<id>.<fd>` that this process holds open (read and write) until Node says it
 * opened its end, so neither early output nor an early exit loses a byte.
 * join: empty, or `<pid>:<starttime>:<namespaces>:<drop>:<uid>:<gid>:<filter>` — the child joins
 * the namespaces of that process (letters m mnt, p pid, i ipc, n net; A3/K5: an owner's
 * enclave) after it opened its stdio and entered its cgroup, takes its cwd there, and is
 * confined (confine.h, A6): with drop=1 it gives up every capability, with uid/gid >= 0 the
 * host's root for that unprivileged uid, then new privileges, and with filter 1 or 2 it runs
 * under the seccomp filter (seccomp-filter.h; 2 also refuses AF_UNIX sockets).
 * Other modes of this binary: `--enter` and `--confine` (enter-mode.h), `--idmap` (idmap-mode.h).
 *
 * Usage: `tether-spawner <fifo-dir> [nice] [cpu-procs]`. With nice N > 0 every child runs N
 * levels nicer than this process, and its session's autogroup (the kernel's scheduling group of
 * a session, new at its setsid) gets nice N. With cpu-procs (the `cgroup.procs` of the runtime's
 * CPU group, cpu-group.ts) every child joins that group too, and so leaves its autogroup: all
 * trees together then weigh one process, and 64 floods cannot starve the runtime's event loop,
 * which carries their output, exits and kills (issue 30.6). Both are best effort: an
 * unprivileged runtime may get EAGAIN from the autogroup write (the kernel allows ten a second
 * without CAP_SYS_ADMIN), and the process nice still holds.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>
#include <sys/mman.h>

#include "confine.h"

/* What the child needs, and where it says why it could not exec (it shares our memory). */
struct launch {
  const char *modes, *id, *cwd, *cgroup_procs; /* cgroup_procs: NULL when born inside (clone3) */
  char **argv, **envp;
  int ns[3]; /* mnt, ipc, net of the enclave to join, or -1 */
  struct confinement confined;
  int err;
  const char *stage;
};

static long long start_time(pid_t pid);
static void close_enclave(struct launch *l, int pid_ns);
static int own_pid_ns = -1;
static int nice_level = 0; /* argv[2]: how much nicer than this process children run */
static const char *cpu_procs = NULL; /* argv[3]: the runtime's CPU group, or NULL */

#define CHILD_STACK (256 * 1024)

#define CONTROL 3
#define MAX_HELD 4096

static const char *fifo_dir;
static int wake[2];
/* Pipes held open until Node opened its end: [id, fd] pairs, and the FIFO paths to unlink. */
static struct {
  char id[32];
  int fd;
  char path[512];
} held[MAX_HELD];
static int held_count;

static void say(const char *line) {
  size_t len = strlen(line);
  while (len > 0) {
    ssize_t n = write(CONTROL, line, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(0); /* Node is gone */
    }
    line += n;
    len -= (size_t)n;
  }
}

static void on_signal(int sig) {
  int saved = errno;
  char c = (char)sig;
  (void)!write(wake[1], &c, 1);
  errno = saved;
}

/* In the child: say why nothing runs (in the shared struct), then end. */
static int child_fail(struct launch *l, const char *stage) {
  l->err = errno;
  l->stage = stage;
  _exit(127);
}

/*
 * The child's side, from clone to exec, on its own stack while this process waits (vfork
 * semantics): only system calls, nothing that touches memory the parent uses.
 */
static int child(void *arg) {
  struct launch *l = arg;
  sigset_t none;
  sigemptyset(&none);
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (setsid() < 0) return child_fail(l, "setsid");
  if (nice_level > 0) {
    /* Best effort: a scheduling hint, never a reason not to run (see the usage above). */
    errno = 0;
    int now = getpriority(PRIO_PROCESS, 0);
    if (errno == 0) (void)setpriority(PRIO_PROCESS, 0, now + nice_level > 19 ? 19 : now + nice_level);
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      char level[4];
      int n = snprintf(level, sizeof level, "%d", nice_level);
      (void)!write(fd, level, (size_t)n);
      close(fd);
    }
  }
  if (cpu_procs != NULL) {
    int fd = open(cpu_procs, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!write(fd, "0", 1); /* a scheduling hint like the nice: never a reason not to run */
      close(fd);
    }
  }
  if (l->cgroup_procs != NULL) {
    /* K1: in the tree's cgroup before anything of the program runs ("0" is the writer). */
    int fd = open(l->cgroup_procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) return child_fail(l, "cgroup");
    close(fd);
  }
  int fds[3];
  for (int i = 0; i < 3; i++) {
    char path[512];
    int fd;
    switch (l->modes[i]) {
      case 'h':
        fd = fcntl(i, F_DUPFD_CLOEXEC, 10);
        break;
      case 'p':
        snprintf(path, sizeof path, "%s/%s.%d", fifo_dir, l->id, i);
        fd = open(path, (i == 0 ? O_RDONLY : O_WRONLY) | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        break;
      default:
        fd = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
    }
    if (fd < 0) return child_fail(l, "stdio");
    if (fd < 10) {
      int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
      close(fd);
      fd = high;
    }
    fds[i] = fd;
  }
  /* The enclave: its ipc, net and mount namespaces (the pid one was set by the parent). */
  static const int kinds[3] = {CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET};
  for (int i = 2; i >= 0; i--)
    if (l->ns[i] >= 0 && setns(l->ns[i], kinds[i]) < 0) return child_fail(l, "setns");
  if (chdir(l->cwd) < 0) return child_fail(l, "chdir");
  for (int i = 0; i < 3; i++)
    if (dup2(fds[i], i) < 0) return child_fail(l, "stdio");
  const char *stage = NULL;
  if (confine(&l->confined, &stage) < 0) return child_fail(l, stage);
  const char *file = l->argv[0];
  if (strchr(file, '/') != NULL) {
    execve(file, l->argv, l->envp);
    return child_fail(l, "exec");
  }
  /* PATH lookup in the child's own env, as Node does. */
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (char **e = l->envp; *e != NULL; e++)
    if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  int last = ENOENT;
  char candidate[4096];
  while (*path != '\0') {
    const char *end = strchr(path, ':');
    size_t len = end == NULL ? strlen(path) : (size_t)(end - path);
    if (len == 0) {
      snprintf(candidate, sizeof candidate, "%s", file);
    } else {
      snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, path, file);
    }
    execve(candidate, l->argv, l->envp);
    if (errno != ENOENT && errno != ENOTDIR) last = errno;
    if (end == NULL) break;
    path = end + 1;
  }
  errno = last;
  return child_fail(l, "exec");
}

/*
 * clone3 with CLONE_INTO_CGROUP (Linux 5.7+): the child is born in its tree's cgroup, so it
 * never writes cgroup.procs. That write cost 10-12 ms per spawn here when spawns were spaced
 * out, in runs at load 0.2-1.2 (P1 with a raw spawn and an execa call between two runs: 15-17
 * ms against 5 ms back to back, all of it in the spawn), not at idle (where clone3 still gained
 * 5-15%); 0.7-1 ms on an earlier machine. By the kernel's source, not
 * traced: the write is a migration, which takes cgroup_threadgroup_rwsem for writing, and that
 * per-CPU rwsem's writer waits for an RCU grace period unless another writer came within one;
 * a fork into a cgroup takes only the read side.
 *
 * glibc has no public clone3 wrapper, and with CLONE_VM the child starts on its new stack
 * inside the system call, where C cannot continue: a few instructions of assembly call
 * `fn(arg)` there (as glibc's own clone3.S does). x86-64 only; elsewhere, and when the kernel
 * refuses (ENOSYS before 5.3, E2BIG/EINVAL before 5.7), the caller falls back to clone() and
 * the write.
 */
struct clone3_args {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
      set_tid_size, cgroup;
};
#define TETHER_CLONE_INTO_CGROUP 0x200000000ULL

static pid_t clone_into_cgroup(int (*fn)(void *), void *arg, char *stack, size_t size, int cgroup_fd) {
#if defined(__x86_64__) && defined(SYS_clone3)
  struct clone3_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_VM | CLONE_VFORK | TETHER_CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.stack = (uint64_t)(uintptr_t)stack;
  args.stack_size = size;
  args.cgroup = (uint64_t)cgroup_fd;
  long ret;
  /* The child: rax 0 on the new stack (16-byte aligned at its top); call fn(arg), then exit. */
  __asm__ volatile(
      "syscall\n\t"
      "testq %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "movq %[arg], %%rdi\n\t"
      "callq *%[fn]\n\t"
      "movl %%eax, %%edi\n\t"
      "movl $60, %%eax\n\t" /* SYS_exit */
      "syscall\n\t"
      "hlt\n"
      "1:\n\t"
      : "=a"(ret)
      : "a"((long)SYS_clone3), "D"(&args), "S"(sizeof args), [fn] "r"(fn), [arg] "r"(arg)
      : "rcx", "r11", "rdx", "r8", "r9", "r10", "memory", "cc");
  if (ret < 0) {
    errno = (int)-ret;
    return -1;
  }
  return (pid_t)ret;
#else
  (void)fn, (void)arg, (void)stack, (void)size, (void)cgroup_fd;
  errno = ENOSYS;
  return -1;
#endif
}


static long long start_time(pid_t pid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (p == NULL) return -1;
  /* Field 22 (starttime); p + 2 is field 3. */
  int field = 3;
  for (p += 2; *p != '\0' && field < 22; p++)
    if (*p == ' ') field++;
  return atoll(p);
}

static void fail(const char *id, int err, const char *stage) {
  char line[128];
  snprintf(line, sizeof line, "F %s %d %s\n", id, err, stage);
  say(line);
}

static void drop_held(const char *id) {
  for (int i = 0; i < held_count;) {
    if (strcmp(held[i].id, id) == 0) {
      close(held[i].fd);
      unlink(held[i].path);
      held[i] = held[--held_count];
    } else {
      i++;
    }
  }
}

/* The namespaces of the enclave named by `pid:starttime:letters:drop:uid:gid:filter`, checked to
 * be that process's, and what an entering process gives up (confine.h). */
static int open_enclave(const char *join, struct launch *l, int *pid_ns) {
  char letters[8] = "";
  int pid = 0, drop = 0, uid = -1, gid = -1, filter = 0;
  long long start = -1;
  if (sscanf(join, "%d:%lld:%7[a-z]:%d:%d:%d:%d", &pid, &start, letters, &drop, &uid, &gid, &filter) != 7 ||
      pid <= 0 || (uid < 0) != (gid < 0) || filter < 0 || filter > 2) {
    errno = EINVAL;
    return -1;
  }
  static const char *names[] = {"mnt", "ipc", "net"};
  static const char letter[] = {'m', 'i', 'n'};
  char path[64];
  for (int i = 0; i < 3; i++) {
    if (strchr(letters, letter[i]) == NULL) continue;
    snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, names[i]);
    if ((l->ns[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) goto failed;
  }
  if (strchr(letters, 'p') != NULL) {
    snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    if ((*pid_ns = open(path, O_RDONLY | O_CLOEXEC)) < 0) goto failed;
  }
  /* Opened first, checked after: the fds are that process's namespaces, not a reused pid's. */
  if (start_time(pid) != start) {
    errno = ESRCH;
    goto failed;
  }
  l->confined = (struct confinement){drop, uid, gid, filter};
  return 0;
failed:;
  int err = errno;
  close_enclave(l, *pid_ns);
  *pid_ns = -1;
  errno = err;
  return -1;
}

static void close_enclave(struct launch *l, int pid_ns) {
  for (int i = 0; i < 3; i++)
    if (l->ns[i] >= 0) close(l->ns[i]), l->ns[i] = -1;
  if (pid_ns >= 0) close(pid_ns);
}

static void start(char **field, int count) {
  /* field: id, modes, cwd, cgroup, join, argc, argv..., envc, env... */
  if (count < 7) return;
  const char *id = field[0], *modes = field[1], *cwd = field[2], *cgroup = field[3], *join = field[4];
  int argc = atoi(field[5]);
  if (argc < 1 || 6 + argc >= count || strlen(modes) != 3 || strlen(id) >= 32) {
    fail(id, EINVAL, "request");
    return;
  }
  int envc = atoi(field[6 + argc]);
  if (7 + argc + envc > count) {
    fail(id, EINVAL, "request");
    return;
  }
  char **argv = calloc((size_t)argc + 1, sizeof(char *));
  char **envp = calloc((size_t)envc + 1, sizeof(char *));
  for (int i = 0; i < argc; i++) argv[i] = field[6 + i];
  for (int i = 0; i < envc; i++) envp[i] = field[7 + argc + i];
  struct launch l = {modes, id, cwd, NULL, argv, envp, {-1, -1, -1}, {0, -1, -1, 0}, 0, NULL};
  int pid_ns = -1;
  if (join[0] != '\0' && open_enclave(join, &l, &pid_ns) < 0) {
    int err = errno;
    free(argv);
    free(envp);
    fail(id, err, "enclave");
    return;
  }
  for (int i = 0; i < 3; i++) {
    if (modes[i] != 'p') continue;
    if (held_count >= MAX_HELD) {
      errno = EMFILE;
      goto fifo_failed;
    }
    char *path = held[held_count].path;
    snprintf(path, sizeof held[0].path, "%s/%s.%d", fifo_dir, id, i);
    unlink(path);
    if (mkfifo(path, 0600) < 0) goto fifo_failed;
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) goto fifo_failed;
    /* Output FIFOs of 1 MiB: a flood then wakes its reader per MiB, not per 64 KiB (P2 jobs:
     * 0.85-0.97x -> 1.09-1.16x raw here). Only as root: an unprivileged user's pipes count
     * against fs.pipe-user-pages-soft (64 MiB), past which every new pipe of that user gets
     * one page; a failure keeps the default size. */
    if (i != 0 && geteuid() == 0) fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    snprintf(held[held_count].id, sizeof held[0].id, "%s", id);
    held[held_count++].fd = fd;
  }
  static char *stack = NULL;
  if (stack == NULL) {
    stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
      stack = NULL;
      goto fifo_failed;
    }
  }
  /* No handler of ours may run in the child while it shares our memory. */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  /* A child is born into the pid namespace set for our children: the enclave's, then ours again. */
  if (pid_ns >= 0 && setns(pid_ns, CLONE_NEWPID) < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close_enclave(&l, pid_ns);
    free(argv);
    free(envp);
    drop_held(id);
    fail(id, err, "setns");
    return;
  }
  /* Born inside the cgroup (l.cgroup_procs stays NULL: nothing to write), else the child writes
   * itself into cgroup.procs between clone and exec. */
  int cgroup_fd = cgroup[0] != '\0' ? open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  pid_t pid = cgroup_fd >= 0 ? clone_into_cgroup(child, &l, stack, CHILD_STACK, cgroup_fd) : -1;
  if (cgroup_fd >= 0) close(cgroup_fd);
  char procs[600];
  if (pid < 0) {
    snprintf(procs, sizeof procs, "%s/cgroup.procs", cgroup);
    l.cgroup_procs = cgroup[0] != '\0' ? procs : NULL;
    pid = clone(child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &l);
  }
  int clone_errno = errno;
  /* A child that changed its uid made our shared memory non-dumpable until it exec'd: undo. */
  if (l.confined.uid >= 0) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (pid_ns >= 0 && setns(own_pid_ns, CLONE_NEWPID) < 0) _exit(1); /* cannot serve the host any more */
  sigprocmask(SIG_SETMASK, &old, NULL);
  close_enclave(&l, pid_ns);
  free(argv);
  free(envp);
  if (pid < 0) {
    drop_held(id);
    fail(id, clone_errno, "clone");
    return;
  }
  if (l.stage != NULL) {
    /* The child exits 127 without running anything; its X line follows when it is reaped. */
    char line[160];
    snprintf(line, sizeof line, "F %s %d %s %d\n", id, l.err, l.stage, pid);
    drop_held(id);
    say(line);
    return;
  }
  char line[128];
  snprintf(line, sizeof line, "S %s %d %lld\n", id, pid, start_time(pid));
  say(line);
  return;
fifo_failed:;
  int err = errno;
  close_enclave(&l, pid_ns);
  free(argv);
  free(envp);
  drop_held(id);
  fail(id, err, "fifo");
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    char line[96];
    if (WIFSIGNALED(status))
      snprintf(line, sizeof line, "X %d -1 %d\n", pid, WTERMSIG(status));
    else
      snprintf(line, sizeof line, "X %d %d 0\n", pid, WEXITSTATUS(status));
    say(line);
  }
}

static void handle(char *payload, uint32_t len) {
  char *field[65536];
  int count = 0;
  for (uint32_t i = 0, startAt = 0; i < len && count < 65536; i++) {
    if (payload[i] == '\0') {
      field[count++] = payload + startAt;
      startAt = i + 1;
    }
  }
  if (count < 2) return;
  if (strcmp(field[0], "S") == 0) start(field + 1, count - 1);
  else if (strcmp(field[0], "O") == 0) drop_held(field[1]);
}

#include "enter-mode.h"
#include "idmap-mode.h"

/*
 * Marks every fd above stdio close-on-exec, so what this binary execs holds only the 0, 1 and 2
 * it was given (S1, S4, A6): Node, node-pty and bubblewrap pass it whatever inheritable fds the
 * runtime's own process got from its parent (a supervisor's pipe, a socket, a directory), and
 * neither an agent's command nor anything inside a sandbox may hold those (a directory fd
 * reaches around the enclave's mounts, a socket past its network). Its own
 * fds keep working here; close_range (Linux 5.11) does it in one call, else /proc/self/fd. In
 * every mode, first thing.
 */
static void no_inherited_fds(void) {
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
  if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0) return;
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != dirfd(dir)) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  }
  closedir(dir);
}

int main(int argc, char **argv) {
  no_inherited_fds(); /* the spawner's control socket included: it stays open here */
  if (argc >= 2 && strcmp(argv[1], "--enter") == 0) return enter_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--idmap") == 0) return idmap_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "--confine") == 0) return confine_main(argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: tether-spawner <fifo-dir> [nice] [cpu-procs] (started by tether-runtime)\n");
    return 2;
  }
  fifo_dir = argv[1];
  if (argc >= 3) {
    nice_level = atoi(argv[2]);
    if (nice_level < 0 || nice_level > 19) {
      fprintf(stderr, "tether-spawner: nice must be 0 to 19, got %s\n", argv[2]);
      return 2;
    }
  }
  if (argc >= 4 && argv[3][0] != '\0') cpu_procs = argv[3];
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the runtime's process died: so does its spawner */
  if (getppid() != parent) return 0;
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) return 1;
  own_pid_ns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  read_last_cap();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* A terminal's ^C (or `timeout -s TERM`) reaches the runtime's whole process group, this
   * process included: the runtime decides what a stop signal means, and this process ends with
   * it (PDEATHSIG, its control socket's end). Children reset every signal before they exec. */
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  size_t cap = 1 << 16, have = 0;
  char *buf = malloc(cap);
  say("READY\n");
  for (;;) {
    struct pollfd fds[2] = {{CONTROL, POLLIN, 0}, {wake[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      char drain[64];
      while (read(wake[0], drain, sizeof drain) > 0) {
      }
    }
    reap();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (have == cap) buf = realloc(buf, cap *= 2);
      ssize_t n = read(CONTROL, buf + have, cap - have);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
      if (n > 0) have += (size_t)n;
      while (have >= 4) {
        uint32_t len;
        memcpy(&len, buf, 4);
        if (have < 4 + (size_t)len) {
          if (cap < 4 + (size_t)len) {
            while (cap < 4 + (size_t)len) cap *= 2;
            buf = realloc(buf, cap);
          }
          break;
        }
        handle(buf + 4, len);
        memmove(buf, buf + 4 + len, have - 4 - len);
        have -= 4 + len;
      }
    }
  }
  for (int i = 0; i < held_count; i++) unlink(held[i].path);
  rmdir(fifo_dir);
  return 0;
}
