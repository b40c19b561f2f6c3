/*
 * What a process entering an owner's enclave gives up before it execs (A3, A6, K5), in this
 * order: every capability (bounding, inheritable and ambient sets; the permitted and
 * effective ones go with the uid change, or stay with root when there is none), the host's
 * root identity (supplementary groups, then gid, then uid: an unprivileged uid, so no
 * root-owned host file is writable to it by ownership), new privileges (no_new_privs: a
 * setuid program cannot give them back), and then the system calls of the seccomp filter
 * (seccomp-filter.h). Used by the spawner's child between clone and exec, where it shares
 * the spawner's memory (CLONE_VM): raw system calls only, so glibc's set*id, which signals
 * every thread of the process it believes it is in, is never called.
 */
#include "seccomp-filter.h"

struct confinement {
  int drop_caps;
  int uid, gid; /* -1: keep */
  int filter;   /* 0 none, 1 the always-denied calls, 2 also AF_UNIX sockets (network 'none') */
};

static int last_cap = 40;

/* The highest capability this kernel knows (read before any child is started). */
static void read_last_cap(void) {
  FILE *caps = fopen("/proc/sys/kernel/cap_last_cap", "re");
  if (caps == NULL) return;
  if (fscanf(caps, "%d", &last_cap) != 1) last_cap = 40;
  fclose(caps);
}

/* 0, or -1 with errno and the stage that failed. */
static int confine(const struct confinement *c, const char **stage) {
  if (c->drop_caps) {
    *stage = "caps";
    for (int cap = 0; cap <= last_cap; cap++)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) return -1;
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &header, data) < 0) return -1;
    data[0].inheritable = data[1].inheritable = 0;
    if (syscall(SYS_capset, &header, data) < 0) return -1;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) return -1;
  }
  if (c->uid >= 0) {
    *stage = "uid";
    if (syscall(SYS_setgroups, 0, NULL) < 0) return -1;
    if (syscall(SYS_setresgid, c->gid, c->gid, c->gid) < 0) return -1;
    if (syscall(SYS_setresuid, c->uid, c->uid, c->uid) < 0) return -1;
  }
  if (c->drop_caps || c->uid >= 0 || c->filter > 0) {
    *stage = "caps";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
  }
  if (c->filter > 0) {
    *stage = "seccomp";
    if (tether_seccomp_install(c->filter == 2) < 0) return -1;
  }
  return 0;
}
