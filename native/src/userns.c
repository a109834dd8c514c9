/* createUserNamespace: a user namespace fd with the given maps, for idmapped mounts. A child is cloned
 * straight into a new user namespace (CLONE_NEWUSER) and blocks on a pipe; we (host root) write its maps,
 * open /proc/<pid>/ns/user O_CLOEXEC, then SIGKILL and reap it. The namespace lives on through the fd.
 * The child runs only read(2) and _exit(2) (async-signal-safe; no malloc after the clone). */
#include "wl.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sched.h>

static void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

static napi_value js_create_userns(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  WL_AUTOFREE char *uid_map = NULL;
  WL_AUTOFREE char *gid_map = NULL;
  if (!wl_args(env, info, 2, argv) || !wl_idmap_text(env, argv[0], "uidMap", &uid_map) ||
      !wl_idmap_text(env, argv[1], "gidMap", &gid_map))
    return NULL;

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return wl_throw_errno(env, errno, "pipe2", NULL);
  WL_AUTOCLOSE int rd = pipefd[0];
  WL_AUTOCLOSE int wr = pipefd[1];

  sigset_t old;
  wl_block_all_signals(&old);
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid == 0) {
    char c;
    close(wr);
    while (read(rd, &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  int clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) return wl_throw_errno(env, clone_err, "clone", NULL);

  int err = wl_write_proc(pid, "uid_map", uid_map);
  const char *what = "uid_map";
  if (err == 0) {
    err = wl_write_proc(pid, "gid_map", gid_map);
    what = "gid_map";
  }
  if (err != 0) {
    kill_and_reap(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
    return wl_throw_errno(env, err, "write", path);
  }
  char nspath[64];
  snprintf(nspath, sizeof nspath, "/proc/%d/ns/user", pid);
  int nsfd = WL_RETRY(open(nspath, O_RDONLY | O_CLOEXEC));
  int open_err = errno;
  kill_and_reap(pid);
  if (nsfd < 0) return wl_throw_errno(env, open_err, "open", nspath);
  return wl_int(env, nsfd);
}

bool wl_register_userns(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"createUserNamespace", js_create_userns}};
  return wl_export_fns(env, exports, fns, 1);
}
