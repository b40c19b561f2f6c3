/*
 * `tether-spawner --idmap STAGE SANDBOX_UID SANDBOX_GID [SRC DISK_UID DISK_GID]... -- PROGRAM
 * [ARGS...]` (A6): starts PROGRAM (bubblewrap) with the writable roots of a sandbox prepared
 * as idmapped mounts at STAGE/0, STAGE/1, …, for it to bind into the enclave.
 *
 * A sandboxed process runs as an unprivileged host uid (SANDBOX_UID), so no root-owned file
 * of the host is writable to it by ownership. Its writable roots belong to someone else (the
 * workspace's owner, DISK_UID, often root). An idmapped mount (Linux 5.12+, mount_setattr
 * MOUNT_ATTR_IDMAP) of a root shows the owner's files as SANDBOX_UID's, and a file that
 * SANDBOX_UID creates through it is stored on disk as DISK_UID's: a host `stat` after a
 * sandboxed write names the workspace's owner, so nothing the agent makes is foreign to the
 * user. Files of any other owner appear as the overflow uid (65534) and stay read-only.
 *
 * bubblewrap has no idmapped binds (0.8), and a bind of an idmapped mount keeps its idmap, so
 * this process makes a mount namespace of its own (private: nothing propagates to the host),
 * mounts a tmpfs on STAGE (an empty directory, which stays empty on the host), attaches there
 * a clone of each SRC marked idmapped with a user namespace whose map is `DISK_UID SANDBOX_UID
 * 1` (an on-disk id is an id inside that namespace, shown as the id outside), and execs
 * PROGRAM, same pid. Nothing is left mounted anywhere when it ends, even if it is SIGKILLed:
 * the mounts live only in namespaces that die with their last process.
 * C because Node has none of these system calls.
 */
#include <sys/mount.h>

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

struct tether_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  int err = errno;
  close(fd);
  errno = err;
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace mapping disk ids to sandbox ids, held by a child until we opened it. */
static int idmap_userns(const char *disk_uid, const char *sandbox_uid, const char *disk_gid,
                        const char *sandbox_gid) {
  int up[2], down[2]; /* up: the child unshared; down: the parent is done with it */
  if (pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    char c = unshare(CLONE_NEWUSER) < 0 ? 'n' : 'y';
    (void)!write(up[1], &c, 1);
    (void)!read(down[0], &c, 1);
    _exit(0);
  }
  close(up[1]);
  close(down[0]);
  char path[64], map[96], c = 'n';
  int fd = -1;
  if (read(up[0], &c, 1) != 1 || c != 'y') {
    errno = EPERM;
    goto done;
  }
  snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
  snprintf(map, sizeof map, "%s %s 1\n", disk_uid, sandbox_uid);
  if (write_text(path, map) < 0) goto done;
  snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
  snprintf(map, sizeof map, "%s %s 1\n", disk_gid, sandbox_gid);
  if (write_text(path, map) < 0) goto done;
  snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
done:;
  int err = errno;
  close(down[1]);
  close(up[0]);
  waitpid(pid, NULL, 0);
  errno = err;
  return fd;
}

/* One idmapped clone of src attached at dst; 0, or -1 with a message on stderr. */
static int idmap_attach(const char *src, const char *dst, const char *disk_uid, const char *sandbox_uid,
                        const char *disk_gid, const char *sandbox_gid) {
  int userns = idmap_userns(disk_uid, sandbox_uid, disk_gid, sandbox_gid);
  if (userns < 0) {
    fprintf(stderr, "tether-spawner: idmap user namespace: %s\n", strerror(errno));
    return -1;
  }
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | O_CLOEXEC);
  if (tree < 0) {
    fprintf(stderr, "tether-spawner: open_tree %s: %s\n", src, strerror(errno));
    return -1;
  }
  struct tether_mount_attr attr = {MOUNT_ATTR_IDMAP, 0, 0, (uint64_t)userns};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
    fprintf(stderr,
            "tether-spawner: the writable root %s cannot be idmapped (%s): its filesystem has no idmapped "
            "mounts (Linux 5.12+: ext4, xfs, btrfs; tmpfs from 6.3)\n",
            src, strerror(errno));
    return -1;
  }
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
    fprintf(stderr, "tether-spawner: attach at %s: %s\n", dst, strerror(errno));
    return -1;
  }
  close(tree);
  close(userns);
  return 0;
}

static int idmap_main(int argc, char **argv) {
  int sep = 0;
  for (int i = 5; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) {
      sep = i;
      break;
    }
  if (argc < 6 || sep == 0 || sep + 1 >= argc || (sep - 5) % 3 != 0) {
    fprintf(stderr,
            "usage: tether-spawner --idmap STAGE SANDBOX_UID SANDBOX_GID [SRC DISK_UID DISK_GID]... -- PROGRAM "
            "[ARGS...]\n");
    return 2;
  }
  const char *stage = argv[2];
  if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
      mount("tether-stage", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0) {
    fprintf(stderr, "tether-spawner: a private mount namespace for the writable roots: %s\n", strerror(errno));
    return 1;
  }
  for (int i = 5, n = 0; i < sep; i += 3, n++) {
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/%d", stage, n);
    if (mkdir(dst, 0700) < 0) return 1;
    if (idmap_attach(argv[i], dst, argv[i + 1], argv[3], argv[i + 2], argv[4]) < 0) return 3;
  }
  execvp(argv[sep + 1], argv + sep + 1);
  fprintf(stderr, "tether-spawner: %s: %s\n", argv[sep + 1], strerror(errno));
  return 127;
}
