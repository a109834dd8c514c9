/* createMountTemplate: a mount namespace holding only what a sandboxed child needs before its pivot_root,
 * a read-only tmpfs as its root with an empty /root (where a World's root filesystem is put) and a proc
 * at /proc (the kernel lets a user namespace mount proc only where a fully visible one already is). A
 * child cloned with CLONE_NEWNS copies its parent's whole mount table and then detaches all of it after
 * the pivot; cloned from a copy of this template it copies three mounts instead of every mount on the
 * node (each running World's tree among them). The shim's launch uses it (native/src/shim/launch.c).
 *
 * A child is cloned into a new mount namespace (a copy of the agent's, made private), builds the
 * template, pivots into it and detaches the rest, then blocks on a pipe; we open /proc/<pid>/ns/mnt
 * O_CLOEXEC, then SIGKILL and reap it. The namespace lives on through the fd. The child runs only raw
 * syscalls (it is a copy of a multi-threaded process; nothing is allocated after the clone). */
#include "wl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* The template's builder: each failure writes the step's errno on `done` and exits. */
_Noreturn static void build_template(int rd, int done, const char *base) {
  int err = 0;
  const char *step = "";
#define STEP(name, expr)                                                                                   \
  if (err == 0 && WL_RETRY(expr) < 0) err = errno, step = name
  STEP("make_rprivate", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
  STEP("mount_tmpfs", mount("worldline-template", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755"));
  STEP("chdir", chdir(base));
  STEP("mkdir_root", mkdir("root", 0755));
  STEP("mkdir_proc", mkdir("proc", 0555));
  STEP("mount_proc", mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
  STEP("remount_ro", mount(NULL, ".", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
  STEP("pivot_root", syscall(SYS_pivot_root, ".", "."));
  STEP("umount_oldroot", umount2(".", MNT_DETACH));
  STEP("chdir_root", chdir("/"));
#undef STEP
  char report[64];
  memset(report, 0, sizeof report);
  memcpy(report, &err, sizeof err);
  for (size_t i = 0; step[i] != '\0' && i < sizeof report - sizeof err - 1; i++) report[sizeof err + i] = step[i];
  if (write(done, report, sizeof report) != (ssize_t)sizeof report || err != 0) _exit(1);
  char c;
  while (read(rd, &c, 1) < 0 && errno == EINTR) {
  }
  _exit(0);
}

static napi_value js_create_mount_template(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *base = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "base", &base)) return NULL;
  if (base[0] != '/') return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "base must be an absolute path");

  int hold[2], done[2];
  if (pipe2(hold, O_CLOEXEC) != 0) return wl_throw_errno(env, errno, "pipe2", NULL);
  if (pipe2(done, O_CLOEXEC) != 0) {
    int err = errno;
    close(hold[0]);
    close(hold[1]);
    return wl_throw_errno(env, err, "pipe2", NULL);
  }
  sigset_t old;
  wl_block_all_signals(&old);
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid == 0) {
    close(hold[1]);
    close(done[0]);
    build_template(hold[0], done[1], base);
  }
  int clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(hold[0]);
  close(done[1]);
  if (pid < 0) {
    close(hold[1]);
    close(done[0]);
    return wl_throw_errno(env, clone_err, "clone", NULL);
  }
  char report[64];
  ssize_t n = WL_RETRY(read(done[0], report, sizeof report));
  close(done[0]);
  int err = EPIPE;
  if (n == (ssize_t)sizeof report) memcpy(&err, report, sizeof err);
  report[sizeof report - 1] = '\0';
  if (err != 0) {
    close(hold[1]);
    kill_and_reap(pid);
    return wl_throw_errno(env, err, n == (ssize_t)sizeof report ? report + sizeof err : "template", base);
  }
  char nspath[64];
  snprintf(nspath, sizeof nspath, "/proc/%d/ns/mnt", pid);
  int nsfd = WL_RETRY(open(nspath, O_RDONLY | O_CLOEXEC));
  int open_err = errno;
  close(hold[1]);
  kill_and_reap(pid);
  if (nsfd < 0) return wl_throw_errno(env, open_err, "open", nspath);
  return wl_int(env, nsfd);
}

bool wl_register_mount_template(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"createMountTemplate", js_create_mount_template}};
  return wl_export_fns(env, exports, fns, 1);
}
