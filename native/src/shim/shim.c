/* worldline-shim: the per-world supervisor that outlives the node-agent. The addon's intermediate process
 * (sandbox_spawn.c) execs this program with the sandbox plan and the child's descriptors in their slots
 * (sandbox_child.h), every signal blocked, and
 *   argv    worldline-shim <output-log> <output-limit-bytes> <wall-time-ms> <exit-file>
 * It first clones the sandboxed workload from its own small address space and reports its pid to the agent
 * (launch.c), which keeps: fd 0-2 /dev/null, fd 3 a pidfd of the workload (its child: waitid works on it),
 * fd 4 and 5 the read ends of its stdout and stderr pipes (or closed).
 * It copies the workload's output into the log up to the limit (so a dead agent never SIGPIPEs the
 * workload), kills it at the wall time or when the output limit is passed, reaps it, and writes its real
 * end durably (temp file, fsync, rename, fsync of the directory) as one JSON line:
 *   {"code":7,"signal":0,"reason":"Completed","outputBytes":12}
 * then exits 0. Exit 2 means bad arguments and 126 a launch that failed (both reported to the agent, and
 * no workload runs); the agent then finds no exit file. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define PIDFD 3
#define OUT_FD 4
#define ERR_FD 5
/* After the workload ended, its pipes are drained for at most this long (its tree died with it). */
#define DRAIN_MS 2000

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool parse_u64(const char *s, uint64_t *out) {
  if (s == NULL || *s == '\0') return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

static bool fd_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* a full disk loses output, never the supervision */
    buf += n;
    len -= (size_t)n;
  }
}

static void kill_workload(void) { syscall(SYS_pidfd_send_signal, PIDFD, SIGKILL, NULL, 0); }

/* Writes the exit record as <exit>.tmp, fsyncs it, renames it over <exit> and fsyncs the directory. */
static int write_exit(const char *path, int code, int sig, const char *reason, uint64_t bytes) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return ENAMETOOLONG;
  char line[256];
  int len = snprintf(line, sizeof line, "{\"code\":%d,\"signal\":%d,\"reason\":\"%s\",\"outputBytes\":%llu}\n", code, sig, reason, (unsigned long long)bytes);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  write_all(fd, line, (size_t)len);
  if (fsync(fd) < 0) {
    int e = errno;
    close(fd);
    return e;
  }
  close(fd);
  if (rename(tmp, path) < 0) return errno;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash != NULL && slash != dir) {
    *slash = '\0';
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  uint64_t limit = 0, wall_ms = 0;
  if (argc != 5 || !parse_u64(argv[2], &limit) || !parse_u64(argv[3], &wall_ms) || !fd_open(3)) {
    fprintf(stderr, "usage: worldline-shim <output-log> <output-limit-bytes> <wall-time-ms> <exit-file> (fd 3: the sandbox plan)\n");
    if (fd_open(4)) shim_report_failure("shim arguments", EINVAL);
    return 2;
  }
  shim_launch();
  /* The mask and ignored signals come from the agent through exec: start clean, but a hangup or an
   * interrupt aimed at the agent's terminal or group is not for us. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);

  int log = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  struct pollfd fds[3] = {{.fd = PIDFD, .events = POLLIN}, {.fd = fd_open(OUT_FD) ? OUT_FD : -1, .events = POLLIN}, {.fd = fd_open(ERR_FD) ? ERR_FD : -1, .events = POLLIN}};
  const char *reason = NULL; /* set when we killed it */
  uint64_t bytes = 0;
  int64_t deadline = now_ms() + (int64_t)wall_ms;
  int64_t drain_until = -1;
  bool exited = false;
  int code = -1, sig = 0;
  static char buf[65536];

  for (;;) {
    if (exited && fds[1].fd < 0 && fds[2].fd < 0) break;
    int64_t now = now_ms();
    if (exited && now >= drain_until) break;
    if (!exited && now >= deadline && reason == NULL) {
      reason = "WallTimeExceeded";
      kill_workload();
    }
    int64_t until = exited ? drain_until : (reason == NULL ? deadline : now + 1000);
    int timeout = (int)(until - now > 1000 ? 1000 : (until - now < 0 ? 0 : until - now));
    int n = poll(fds, 3, timeout);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (int i = 1; i < 3; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        continue;
      }
      uint64_t room = bytes < limit ? limit - bytes : 0;
      if (log >= 0 && room > 0) write_all(log, buf, (size_t)r < room ? (size_t)r : (size_t)room);
      bytes += (uint64_t)r;
      if (bytes > limit && reason == NULL) {
        reason = "OutputLimitExceeded";
        kill_workload();
      }
    }
    if (fds[0].fd >= 0 && fds[0].revents != 0) {
      siginfo_t si;
      memset(&si, 0, sizeof si);
      int rc;
      do rc = waitid((idtype_t)P_PIDFD, (id_t)PIDFD, &si, WEXITED); while (rc < 0 && errno == EINTR);
      if (rc == 0) {
        if (si.si_code == CLD_EXITED) code = si.si_status;
        else sig = si.si_status;
      }
      exited = true;
      fds[0].fd = -1;
      drain_until = now_ms() + DRAIN_MS;
    }
  }
  if (log >= 0) {
    fsync(log);
    close(log);
  }
  if (reason == NULL) reason = sig != 0 ? "Signaled" : "Completed";
  int err = write_exit(argv[4], code, sig, reason, bytes);
  if (err != 0) {
    fprintf(stderr, "worldline-shim: writing %s: %s\n", argv[4], strerror(err));
    return 1;
  }
  return 0;
}
