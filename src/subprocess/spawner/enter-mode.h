/*
 * `tether-spawner --enter JOIN CWD PROGRAM [ARGS...]` (A3, A6, K5): runs PROGRAM inside an
 * owner's enclave, confined as the spawner's own children are (confine.h), for the processes
 * the spawner cannot start itself: terminals, whose PTY the PTY host's node-pty makes (it forks
 * and execs this), and every spawn when the spawner process is gone. JOIN is the spawner's
 * `pid:starttime:letters:drop:uid:gid:filter`. It replaces `nsenter` + `setpriv`, which cannot
 * change to an unprivileged uid and load a seccomp filter in one step. Like nsenter it forks
 * once (a new PID namespace applies to children only) and waits, ending as its child did.
 */
static int enter_main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: tether-spawner --enter JOIN CWD PROGRAM [ARGS...]\n");
    return 2;
  }
  read_last_cap();
  struct launch l = {"iii", "enter", argv[3], NULL, argv + 4, NULL, {-1, -1, -1}, {0, -1, -1, 0}, 0, NULL};
  int pid_ns = -1;
  if (open_enclave(argv[2], &l, &pid_ns) < 0) {
    fprintf(stderr, "tether: the sandbox's enclave could not be entered: %s\n", strerror(errno));
    return 125;
  }
  if (pid_ns >= 0 && setns(pid_ns, CLONE_NEWPID) < 0) {
    fprintf(stderr, "tether: the sandbox's PID namespace could not be entered: %s\n", strerror(errno));
    return 125;
  }
  pid_t pid = fork();
  if (pid < 0) return 125;
  if (pid == 0) {
    static const int kinds[3] = {CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET};
    const char *stage = "setns";
    for (int i = 2; i >= 0; i--)
      if (l.ns[i] >= 0 && setns(l.ns[i], kinds[i]) < 0) goto failed;
    stage = "chdir";
    if (chdir(l.cwd) < 0) goto failed;
    close_enclave(&l, pid_ns);
    if (confine(&l.confined, &stage) < 0) goto failed;
    execvp(l.argv[0], l.argv);
    fprintf(stderr, "tether: %s: %s\n", l.argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  failed:
    fprintf(stderr, "tether: entering the sandbox failed at %s: %s\n", stage, strerror(errno));
    _exit(125);
  }
  close_enclave(&l, pid_ns);
  /* The child is the terminal's shell; this process only waits for it, as nsenter does (its
   * signals stay at their defaults, so a kill of the leader behaves as it did with nsenter). */
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 125;
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

/*
 * `tether-spawner --confine FILTER PROGRAM [ARGS...]` (A6): PROGRAM confined in place — new
 * privileges given up and the seccomp filter FILTER (1 or 2) loaded; bubblewrap's `--cap-drop
 * ALL` already took every capability — for the enclave's own pid 1, which bubblewrap starts. Otherwise a process inside, of the same uid and
 * as capability-less as it, could write the holder's memory (/proc/1/mem is not a ptrace call)
 * and run there without the filter.
 */
static int confine_main(int argc, char **argv) {
  int filter = argc >= 4 ? atoi(argv[2]) : 0;
  if (argc < 4 || filter < 1 || filter > 2) {
    fprintf(stderr, "usage: tether-spawner --confine 1|2 PROGRAM [ARGS...]\n");
    return 2;
  }
  read_last_cap();
  struct confinement c = {0, -1, -1, filter};
  const char *stage = "seccomp";
  if (confine(&c, &stage) < 0) {
    fprintf(stderr, "tether: confining the sandbox's pid 1 failed at %s: %s\n", stage, strerror(errno));
    return 125;
  }
  execvp(argv[3], argv + 3);
  fprintf(stderr, "tether: %s: %s\n", argv[3], strerror(errno));
  return 127;
}
