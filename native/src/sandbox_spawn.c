/* spawnSandbox, parent side: build the plan, create the pipes, clone3 into new user/mount/pid/ipc/uts
 * (+net) namespaces with a pidfd, write the child's uid_map/gid_map and cgroup.procs files, then release
 * it. The child runs nothing of the workload before that (it waits on the sync pipe), and execs only after
 * the caller has read its observation frame and written 'G' to the ack pipe. */
#include "sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static void kill_and_reap(int pidfd) {
  syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
  siginfo_t si;
  while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR) {
  }
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Writes the maps and joins the cgroups; returns 0 or an errno with *what naming the file. */
static int configure_child(const wl_plan *p, pid_t pid, char *what, size_t what_size) {
  int err;
  snprintf(what, what_size, "/proc/%d/uid_map", pid);
  if ((err = wl_write_proc(pid, "uid_map", p->uid_map)) != 0) return err;
  snprintf(what, what_size, "/proc/%d/gid_map", pid);
  if ((err = wl_write_proc(pid, "gid_map", p->gid_map)) != 0) return err;
  char line[24];
  snprintf(line, sizeof line, "%d\n", pid);
  for (char **procs = p->cgroup_procs; *procs != NULL; procs++) {
    snprintf(what, what_size, "%s", *procs);
    WL_AUTOCLOSE int fd = WL_RETRY(open(*procs, O_WRONLY | O_CLOEXEC));
    if (fd < 0) return errno;
    ssize_t n = WL_RETRY(write(fd, line, strlen(line)));
    if (n < 0) return errno;
  }
  return 0;
}

static napi_value handle_object(napi_env env, wl_plan *p, pid_t pid, int pidfd) {
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "pid", wl_int(env, pid));
  napi_set_named_property(env, o, "pidfd", wl_int(env, pidfd));
  if (p->out_r >= 0) napi_set_named_property(env, o, "stdout", wl_int(env, p->out_r));
  if (p->err_r >= 0) napi_set_named_property(env, o, "stderr", wl_int(env, p->err_r));
  napi_set_named_property(env, o, "observation", wl_int(env, p->obs_r));
  napi_set_named_property(env, o, "ack", wl_int(env, p->ack_w));
  /* ownership moves to JS */
  p->out_r = p->err_r = p->obs_r = p->ack_w = -1;
  return o;
}

static napi_value js_spawn_sandbox(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  napi_valuetype cb_type;
  if (!wl_args(env, info, 2, argv)) return NULL;
  if (napi_typeof(env, argv[1], &cb_type) != napi_ok || cb_type != napi_function)
    return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "The \"onExit\" argument must be a function");

  wl_plan p __attribute__((cleanup(wl_plan_free)));
  if (!wl_plan_build(env, argv[0], &p)) return NULL;
  const char *failed_call;
  int err = wl_plan_open_fds(&p, &failed_call);
  if (err != 0) return wl_throw_errno(env, err, failed_call, NULL);

  int pidfd = -1;
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD |
               (p.new_network ? CLONE_NEWNET : 0);
  args.pidfd = (uint64_t)(uintptr_t)&pidfd;
  args.exit_signal = SIGCHLD;

  sigset_t old;
  wl_block_all_signals(&old); /* no Node signal handler may run in the child before it resets them */
  pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) wl_sandbox_child(&p);
  int clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) return wl_throw_errno(env, clone_err, "clone3", NULL);

  close_fd(&p.sync_r);
  close_fd(&p.obs_w);
  close_fd(&p.ack_r);
  close_fd(&p.out_w);
  close_fd(&p.err_w);
  close_fd(&p.null_fd);

  char what[4096];
  err = configure_child(&p, pid, what, sizeof what);
  if (err == 0 && WL_RETRY(write(p.sync_w, "S", 1)) != 1) {
    err = errno;
    snprintf(what, sizeof what, "sync pipe");
  }
  close_fd(&p.sync_w);
  if (err != 0) {
    kill_and_reap(pidfd);
    close(pidfd);
    return wl_throw_errno(env, err, "write", what);
  }

  int wait_fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
  if (wait_fd < 0) {
    err = errno;
    kill_and_reap(pidfd);
    close(pidfd);
    return wl_throw_errno(env, err, "fcntl", NULL);
  }
  if (!wl_start_waiter(env, argv[1], wait_fd)) {
    kill_and_reap(pidfd);
    close(pidfd);
    return NULL;
  }
  return handle_object(env, &p, pid, pidfd);
}

bool wl_register_sandbox(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"spawnSandbox", js_spawn_sandbox}};
  return wl_export_fns(env, exports, fns, 1);
}
