/*
 * The seccomp filter of a sandboxed process (A6), installed by confine() between clone and
 * exec, after no_new_privs. Hand-written classic BPF, not libseccomp: the machines this runs
 * on have libseccomp2 without its headers, and the child that installs it was made by
 * clone(CLONE_VM | CLONE_VFORK) and shares the spawner's memory, so it may not allocate,
 * write globals or use stdio: the program is built in a stack array and loaded with one
 * system call. A refused call returns EPERM (clone3: ENOSYS); nothing is ever killed, so a
 * program that probes for a feature sees it missing and goes on.
 *
 * Why each call is refused (x86-64; the numbers are the <sys/syscall.h> ones):
 *
 *   any arch but x86-64     the i386 entry (int 0x80) has its own numbers and a socketcall()
 *                           multiplexer the rules below do not look at: every call EPERM.
 *   x32 numbers             nr | 0x40000000 reaches the same kernel code under other numbers.
 *   ioctl TIOCSTI           pushes bytes into the input of the terminal the process shares
 *                           with whoever reads it next: typed commands run outside the
 *                           sandbox (CVE-2016-7545 and every sandbox since). Only the low 32
 *                           bits of the command are compared: the kernel's cmd is an unsigned
 *                           int, so upper bits are no way around the rule.
 *   ioctl TIOCLINUX         the virtual console's selection paste (TIOCL_PASTESEL) is the same
 *                           injection on a VT.
 *   ptrace                  reads and writes the memory and registers of any process of the
 *   process_vm_readv/writev same uid that is outside this process's sandbox but visible to it,
 *   pidfd_getfd             or steals its file descriptors (the same ptrace check guards it).
 *   keyctl, add_key,        the kernel keyrings are not namespaced: the session and user
 *   request_key             keyrings of the uid are shared with the host (Kerberos, ecryptfs,
 *                           NFS and SSH agent keys live there).
 *   bpf                     eBPF programs and maps: a large attack surface, never needed.
 *   perf_event_open         side channels on other processes and the kernel; a long CVE list.
 *   userfaultfd             stalls the kernel at a page fault of the attacker's choosing,
 *                           the usual way to win a kernel race. (/dev/userfaultfd is a path:
 *                           not this filter's to refuse.)
 *   mount, umount2,         the mount table. In a user namespace an unprivileged process can
 *   pivot_root, move_mount, mount over the read-only binds that hold the sandbox (A6: /proc/sys,
 *   open_tree(_attr),       /sys, .git) once it has a mount namespace of its own.
 *   fsopen, fsconfig,
 *   fsmount, fspick,
 *   mount_setattr
 *   unshare, setns          a new user namespace gives back every capability inside it (then
 *                           mount, above). All flags: unshare(CLONE_FILES) is refused too.
 *   clone with a CLONE_NEW* the same through clone(): CLONE_NEWUSER, NEWNS, NEWPID, NEWNET,
 *   flag                    NEWIPC, NEWUTS, NEWCGROUP in the low 32 bits of args[0] (the
 *                           kernel reads no more). CLONE_NEWTIME is not in the mask: in
 *                           clone() its bit (0x80) is part of the exit signal (CSIGNAL), and a
 *                           time namespace is made only by unshare and clone3.
 *   clone3                  ENOSYS, not EPERM: its flags are in a struct behind a pointer,
 *                           which seccomp cannot read, so it is refused whole; glibc (2.34+:
 *                           pthread_create, posix_spawn, fork is clone), Rust's std and
 *                           systemd fall back to clone() on ENOSYS, and clone() is checked.
 *   kexec_load,             replace the running kernel; need CAP_SYS_BOOT of the initial
 *   kexec_file_load, reboot namespace, refused anyway (a bug in the capability check is then
 *                           no way in).
 *   init_module,            load kernel code.
 *   finit_module,
 *   delete_module
 *   io_uring_setup/enter/   io_uring performs connect, openat, socket and more in kernel
 *   register                threads that never pass through this filter.
 *   name_to_handle_at,      open any inode of a mounted filesystem by its handle, past the
 *   open_by_handle_at       binds and chroots that hide it (the "shocker" escape).
 *   acct, swapon, swapoff,  host-wide state; all need capabilities of the initial namespace.
 *   chroot                  with mount: the classic way out of another chroot.
 *
 * With deny_unix_sockets (network 'none'):
 *   socket(AF_UNIX, ...)    no unconnected AF_UNIX socket can exist, so nothing can connect()
 *                           to a host socket path (the Docker socket, the session bus, an SSH
 *                           agent, X11) or bind() one to listen on.
 *   socketpair(AF_UNIX,     the pair is connected to itself, but a datagram socket can still
 *   type) unless type is    connect() or sendto() a path. SOCK_STREAM and SOCK_SEQPACKET pairs
 *   SOCK_STREAM or          stay allowed (pipes between a program's processes; the kernel
 *   SOCK_SEQPACKET          refuses connect and a sendmsg name on a connected stream socket,
 *                           and listen on it). SOCK_RAW is refused with SOCK_DGRAM: AF_UNIX
 *                           makes a datagram pair of it.
 *   Abstract AF_UNIX names and AF_INET/AF_INET6 need nothing here: they belong to the network
 *   namespace, which is the sandbox's own in that mode.
 *
 * Not covered, and why:
 *   - an AF_UNIX socket inherited or received (SCM_RIGHTS) from outside: the runtime passes
 *     none; a program's own stream socketpair can bind() a path (the kernel allows it on a
 *     connected socket) but never listen on it, so a connect there is refused.
 *   - open() of device nodes (/dev/userfaultfd, /dev/tty*, /dev/kvm): paths, the mount
 *     namespace's business.
 *   - personality(): allowed (flags such as READ_IMPLIES_EXEC change only this process).
 *   - kcmp, process_madvise, fanotify_init, quotactl, iopl/ioperm, and the like: they need a
 *     capability the process does not have (caps dropped, confine.h) or leak no data.
 *   - architectures other than x86-64 and aarch64: tether_seccomp_install fails with ENOSYS;
 *     aarch64 has no compat-numbers check (it would need AUDIT_ARCH_ARM too) and is not tested.
 */
/* Needs _GNU_SOURCE or _DEFAULT_SOURCE (syscall(), CLONE_NEW*) before the first include. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/* Numbers of calls newer than some headers (the same on every architecture since 5.1). */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#define __NR_move_mount 429
#define __NR_fsopen 430
#define __NR_fsconfig 431
#define __NR_fsmount 432
#define __NR_fspick 433
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWCGROUP /* <sched.h> without _GNU_SOURCE */
#define CLONE_NEWNS 0x00020000
#define CLONE_NEWCGROUP 0x02000000
#define CLONE_NEWUTS 0x04000000
#define CLONE_NEWIPC 0x08000000
#define CLONE_NEWUSER 0x10000000
#define CLONE_NEWPID 0x20000000
#define CLONE_NEWNET 0x40000000
#endif
#ifndef SECCOMP_SET_MODE_FILTER
#define SECCOMP_SET_MODE_FILTER 1
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* no filter: TETHER_SC_ARG_LO below assumes the low word of an argument comes first */
#elif defined(__x86_64__)
#define TETHER_SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TETHER_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

/* The low 32 bits of argument n (little-endian: the first word of the u64). */
#define TETHER_SC_ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define TETHER_SC_LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define TETHER_SC_RET(value) BPF_STMT(BPF_RET | BPF_K, (value))
#define TETHER_SC_EPERM (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define TETHER_SC_COUNT(array) (sizeof(array) / sizeof(array)[0])

/*
 * Appends at out[n] a test of nr (in the accumulator) against sorted[lo..hi): EPERM when it is
 * one of them, else allow. A leaf of up to 6 numbers is `jeq` each, `ret allow`, `ret EPERM`;
 * above that, `jge` the middle one splits the range (depth 3 for 38 numbers): at most 4
 * instructions a number. Returns the new length. Recursion depth is log2 of the count.
 */
static int tether_seccomp_tree(struct sock_filter *out, int n, const int *sorted, int lo, int hi) {
  if (hi - lo <= 6) {
    int m = hi - lo;
    for (int i = 0; i < m; i++)
      out[n++] =
        (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)sorted[lo + i], m - i, 0);
    out[n++] = (struct sock_filter)TETHER_SC_RET(SECCOMP_RET_ALLOW);
    out[n++] = (struct sock_filter)TETHER_SC_RET(TETHER_SC_EPERM);
    return n;
  }
  int mid = lo + (hi - lo) / 2, split = n++;
  n = tether_seccomp_tree(out, n, sorted, lo, mid);
  unsigned at = (unsigned)sorted[mid];
  out[split] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, at, n - split - 1, 0);
  return tether_seccomp_tree(out, n, sorted, mid, hi);
}

/* Filled by tether_seccomp_build; the instructions of the longest program, with room. */
#define TETHER_SECCOMP_MAX 256

/*
 * Writes the program into out (TETHER_SECCOMP_MAX entries) and returns its length. Separate
 * from the install so that the program can also be handed to something else (bwrap --seccomp
 * takes it as bytes on a file descriptor).
 */
static int tether_seccomp_build(struct sock_filter *out, int deny_unix_sockets) {
#ifdef TETHER_SECCOMP_ARCH
  const struct sock_filter head[] = {
    TETHER_SC_LD(offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TETHER_SECCOMP_ARCH, 1, 0),
    TETHER_SC_RET(TETHER_SC_EPERM),
    TETHER_SC_LD(offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000 /* __X32_SYSCALL_BIT */, 0, 1),
    TETHER_SC_RET(TETHER_SC_EPERM),
#endif
    /* The calls whose arguments are read come first (ioctl and clone are frequent): each
       block ends in a return, since reading an argument replaces nr in the accumulator. */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5),
    TETHER_SC_LD(TETHER_SC_ARG_LO(1)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0),
    TETHER_SC_RET(SECCOMP_RET_ALLOW),
    TETHER_SC_RET(TETHER_SC_EPERM),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
    TETHER_SC_LD(TETHER_SC_ARG_LO(0)),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
             CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
               CLONE_NEWUTS | CLONE_NEWCGROUP,
             1, 0),
    TETHER_SC_RET(SECCOMP_RET_ALLOW),
    TETHER_SC_RET(TETHER_SC_EPERM),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    TETHER_SC_RET(SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
  const struct sock_filter unix_sockets[] = {
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4),
    TETHER_SC_LD(TETHER_SC_ARG_LO(0)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
    TETHER_SC_RET(SECCOMP_RET_ALLOW),
    TETHER_SC_RET(TETHER_SC_EPERM),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 9),
    TETHER_SC_LD(TETHER_SC_ARG_LO(0)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
    TETHER_SC_RET(SECCOMP_RET_ALLOW),
    TETHER_SC_LD(TETHER_SC_ARG_LO(1)),
    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf /* SOCK_TYPE_MASK: the rest are SOCK_ flags */),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 1, 0),
    TETHER_SC_RET(TETHER_SC_EPERM),
    TETHER_SC_RET(SECCOMP_RET_ALLOW),
  };
  /* Refused whatever their arguments: a search tree over the sorted numbers, not a list, since
     the kernel runs the filter once for every system call number when it is installed (to
     cache the calls it always allows) and a list of 38 made that 2-4 times slower. */
  int deny[] = {
    __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_pidfd_getfd,
    __NR_keyctl, __NR_add_key, __NR_request_key,
    __NR_bpf, __NR_perf_event_open, __NR_userfaultfd,
    __NR_mount, __NR_umount2, __NR_pivot_root, __NR_move_mount, __NR_open_tree,
    __NR_open_tree_attr, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
    __NR_mount_setattr,
    __NR_unshare, __NR_setns,
    __NR_kexec_load, __NR_kexec_file_load, __NR_reboot,
    __NR_init_module, __NR_finit_module, __NR_delete_module,
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
    __NR_name_to_handle_at, __NR_open_by_handle_at,
    __NR_acct, __NR_swapon, __NR_swapoff, __NR_chroot,
  };
  const int count = TETHER_SC_COUNT(deny);
  _Static_assert(TETHER_SC_COUNT(head) + TETHER_SC_COUNT(unix_sockets) + 4 * TETHER_SC_COUNT(deny)
                   <= TETHER_SECCOMP_MAX,
                 "TETHER_SECCOMP_MAX too small");
  for (int i = 1; i < count; i++)
    for (int j = i; j > 0 && deny[j - 1] > deny[j]; j--) {
      int t = deny[j];
      deny[j] = deny[j - 1];
      deny[j - 1] = t;
    }
  int n = 0;
  for (size_t i = 0; i < TETHER_SC_COUNT(head); i++) out[n++] = head[i];
  if (deny_unix_sockets)
    for (size_t i = 0; i < TETHER_SC_COUNT(unix_sockets); i++) out[n++] = unix_sockets[i];
  n = tether_seccomp_tree(out, n, deny, 0, count);
  return n;
#else
  (void)out;
  (void)deny_unix_sockets;
  return 0;
#endif
}

/*
 * Installs the filter in this thread (before exec: the whole process). no_new_privs must be
 * set already (confine.h does it). 0, or -1 with errno (ENOSYS: an architecture without a
 * filter here).
 */
static int tether_seccomp_install(int deny_unix_sockets) {
  struct sock_filter filter[TETHER_SECCOMP_MAX];
  int n = tether_seccomp_build(filter, deny_unix_sockets);
  if (n == 0) {
    errno = ENOSYS;
    return -1;
  }
  struct sock_fprog prog = {(unsigned short)n, filter};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) return 0;
  if (errno != ENOSYS) return -1;
  /* Linux before 3.17 has no seccomp(2). */
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
