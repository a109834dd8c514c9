/* The observation helper: runs in the sandbox child right before execve, with the workload's final
 * credentials, and reports what it sees in one frame on the observation pipe:
 *
 *   WLOBS1\n
 *   <name> <length>\n<bytes>\n        one section each: status, uid_map, gid_map, setgroups, ns.user,
 *   ...                               ns.mnt, ns.pid, ns.net, ns.ipc, ns.uts, ns.cgroup, uname.sysname,
 *                                     uname.machine, paths, environ
 *   END\n
 *
 * The paths section has one line per probed path, "<state> <path>": state "present" (lstat succeeded, as
 * the workload: its credentials, its mounts), "absent" (ENOENT) or "E<errno>" (anything else: a path the
 * workload cannot tell about is not reported absent).
 *
 * The environ section is the very envp array the child then hands to execve, each entry followed by a
 * NUL (as /proc/<pid>/environ shows it): the environment is observed at the exec, not read back after
 * it, so a workload that execs again at once cannot make the reading wrong. It is written straight to
 * the pipe after the fixed sections, so its size is bounded by the section header (6 digits), not by
 * the frame buffer.
 *
 * An error record is a single line "WLERR1 <stage> <errno>\n". Async-signal-safe; stack buffers only. */
#include "sandbox_child.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#define FRAME_MAX 32768

typedef struct {
  char buf[FRAME_MAX];
  size_t len;
  bool overflow;
} frame;

static void put(frame *f, const char *s, size_t n) {
  if (f->len + n > sizeof f->buf) {
    f->overflow = true;
    return;
  }
  memcpy(f->buf + f->len, s, n);
  f->len += n;
}

static void put_str(frame *f, const char *s) { put(f, s, strlen(s)); }

static void put_uint(frame *f, unsigned long v) {
  char tmp[24];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  put(f, tmp + i, sizeof tmp - i);
}

static void section(frame *f, const char *name, const char *data, size_t n) {
  put_str(f, name);
  put_str(f, " ");
  put_uint(f, n);
  put_str(f, "\n");
  put(f, data, n);
  put_str(f, "\n");
}

static int file_section(frame *f, const char *name, const char *path) {
  char data[8192];
  int fd = WL_RETRY(open(path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return errno;
  size_t len = 0;
  for (;;) {
    ssize_t n = WL_RETRY(read(fd, data + len, sizeof data - len));
    if (n < 0) {
      int err = errno;
      close(fd);
      return err;
    }
    if (n == 0) break;
    len += (size_t)n;
    if (len == sizeof data) {
      close(fd);
      return EFBIG;
    }
  }
  close(fd);
  section(f, name, data, len);
  return 0;
}

static int link_section(frame *f, const char *name, const char *path) {
  char target[256];
  ssize_t n = readlink(path, target, sizeof target);
  if (n < 0) return errno;
  section(f, name, target, (size_t)n);
  return 0;
}

static int write_all(int fd, const char *s, size_t len) {
  while (len > 0) {
    ssize_t n = WL_RETRY(write(fd, s, len));
    if (n < 0) return errno;
    s += n;
    len -= (size_t)n;
  }
  return 0;
}

#define SECTION_MAX 999999

/* The paths section: see the file comment. Raw newfstatat (async-signal-safe), symlinks not followed. */
static void paths_section(frame *f, char *const *probe_paths) {
  frame b;
  b.len = 0;
  b.overflow = false;
  for (char *const *path = probe_paths; path != NULL && *path != NULL; path++) {
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, *path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      put_str(&b, "present");
    } else if (errno == ENOENT) {
      put_str(&b, "absent");
    } else {
      put_str(&b, "E");
      put_uint(&b, (unsigned long)errno);
    }
    put_str(&b, " ");
    put_str(&b, *path);
    put_str(&b, "\n");
  }
  if (b.overflow || b.len > 4096) {
    f->overflow = true;
    return;
  }
  section(f, "paths", b.buf, b.len);
}

int wl_observe_write_frame(int fd, char *const *envp, char *const *probe_paths) {
  static const char *files[][2] = {{"status", "/proc/self/status"},
                                   {"uid_map", "/proc/self/uid_map"},
                                   {"gid_map", "/proc/self/gid_map"},
                                   {"setgroups", "/proc/self/setgroups"}};
  static const char *links[][2] = {{"ns.user", "/proc/self/ns/user"}, {"ns.mnt", "/proc/self/ns/mnt"},
                                   {"ns.pid", "/proc/self/ns/pid"},   {"ns.net", "/proc/self/ns/net"},
                                   {"ns.ipc", "/proc/self/ns/ipc"},   {"ns.uts", "/proc/self/ns/uts"},
                                   {"ns.cgroup", "/proc/self/ns/cgroup"}};
  frame f;
  f.len = 0;
  f.overflow = false;
  put_str(&f, "WLOBS1\n");
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    int err = file_section(&f, files[i][0], files[i][1]);
    if (err != 0) return err;
  }
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
    int err = link_section(&f, links[i][0], links[i][1]);
    if (err != 0) return err;
  }
  /* The kernel's own name for the machine the workload runs on, as the workload's uname(2) sees it
   * (the persona included): what the isolation observation's target is measured from. */
  struct utsname u;
  if (uname(&u) != 0) return errno;
  section(&f, "uname.sysname", u.sysname, strlen(u.sysname));
  section(&f, "uname.machine", u.machine, strlen(u.machine));
  paths_section(&f, probe_paths);
  size_t env_len = 0;
  for (char *const *e = envp; *e != NULL; e++) {
    env_len += strlen(*e) + 1;
    if (env_len > SECTION_MAX) return E2BIG;
  }
  put_str(&f, "environ ");
  put_uint(&f, env_len);
  put_str(&f, "\n");
  if (f.overflow) return EFBIG;
  int err = write_all(fd, f.buf, f.len);
  if (err != 0) return err;
  for (char *const *e = envp; *e != NULL; e++) {
    err = write_all(fd, *e, strlen(*e) + 1); /* with its NUL */
    if (err != 0) return err;
  }
  return write_all(fd, "\nEND\n", 5);
}

void wl_observe_write_error(int fd, const char *stage, int err) {
  frame f;
  f.len = 0;
  f.overflow = false;
  put_str(&f, "WLERR1 ");
  put_str(&f, stage);
  put_str(&f, " ");
  put_uint(&f, (unsigned long)err);
  put_str(&f, "\n");
  if (fd >= 0) write_all(fd, f.buf, f.len);
}
