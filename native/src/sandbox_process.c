/* Process helpers shared by the sandboxed spawn (sandbox_spawn.c) and entering a running sandbox
 * (sandbox_enter.c): the clone with every signal blocked, joining cgroups by writing a pid line, and
 * killing and reaping through a pidfd. The pid line and cgroup writes are async-signal-safe (a clone of
 * a multi-threaded process calls them). */
#include "sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

void wl_reap(int pidfd) {
  siginfo_t si;
  while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR) {
  }
}

void wl_kill_and_reap(int pidfd) {
  syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  wl_reap(pidfd);
}

void wl_pid_line(char buf[24], long v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10), v /= 10;
  while (v > 0);
  for (int i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = '\n';
  buf[n + 1] = '\0';
}

int wl_write_cgroup_procs(char *const *procs, const char *line, const char **failed) {
  for (char *const *f = procs; *f != NULL; f++) {
    *failed = *f;
    int fd = WL_RETRY(open(*f, O_WRONLY | O_CLOEXEC));
    if (fd < 0) return errno;
    ssize_t n = WL_RETRY(write(fd, line, strlen(line)));
    int err = errno;
    close(fd);
    if (n < 0) return err;
  }
  return 0;
}

void wl_pidfd_clone_args(struct clone_args *args, int *pidfd) {
  memset(args, 0, sizeof *args);
  args->flags = CLONE_PIDFD;
  args->pidfd = (uint64_t)(uintptr_t)pidfd;
  args->exit_signal = SIGCHLD;
}

pid_t wl_clone_blocked(struct clone_args *args, void (*child)(const void *), const void *arg, int *clone_err) {
  sigset_t old;
  wl_block_all_signals(&old); /* no Node signal handler may run in the child before it resets them */
  pid_t pid = (pid_t)syscall(SYS_clone3, args, sizeof *args);
  if (pid == 0) {
    child(arg);
    _exit(126); /* child functions do not return */
  }
  *clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return pid;
}
