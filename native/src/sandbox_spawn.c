/* spawnSandbox, parent side: build the plan, create the pipes, clone3 into new user/mount/pid/ipc/uts
 * (+net) namespaces with a pidfd, write the child's uid_map/gid_map and cgroup.procs files, then release
 * it. The child runs nothing of the workload before that (it waits on the sync pipe), and execs only after
 * the caller has read its observation frame and written 'G' to the ack pipe.
 *
 * With a third argument (a supervisor: the shim's path and argv, and the cgroup.procs files it moves
 * itself into), the clone3 of the child is done by an intermediate process instead of the agent (cloned
 * with the agent's memory shared, as posix_spawn does, so only the child copies the agent): it
 * leaves the agent's session and cgroups, clones the child exactly as above (same plan, same fds, so the
 * frame and the 'G' handshake with the agent are unchanged), reports the child's pid and execs the shim
 * (native/src/shim/shim.c) holding only the child's pidfd and output pipes. The workload's parent is then
 * the shim, not the agent: the agent may die and the world runs on.
 *
 * With opts.userns (an fd of a user namespace made by createUserNamespace), the child is cloned into that
 * namespace instead of a new one, so several sandboxes share one set of mapped identities (the private
 * evaluator's principals) while each keeps its own mount, PID, IPC, UTS, cgroup and network namespaces,
 * owned by it. Only a supervised spawn can: joining a user namespace takes a single-threaded caller, and
 * gives up the caller's privileges outside it. So the intermediate process, made a child subreaper, forks
 * a joiner that setns()es into the namespace, clones the child and exits at once; the child is then
 * reparented to the intermediate, which opens a pidfd of it and becomes the shim as above, still outside
 * the namespace with the agent's privileges. The namespace's maps are not written again. */
#include "sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The clone3 arguments of the sandboxed child, the same whether it is cloned by the addon or by a
 * supervisor: one set of namespaces, a pidfd into *pidfd, SIGCHLD to its parent. */
static void sandbox_clone_args(const wl_plan *p, struct clone_args *args, int *pidfd) {
  memset(args, 0, sizeof *args);
  args->flags = (p->userns_fd >= 0 ? 0 : CLONE_NEWUSER) | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_PIDFD | (p->new_network ? CLONE_NEWNET : 0);
  args->pidfd = (uint64_t)(uintptr_t)pidfd;
  args->exit_signal = SIGCHLD;
}

/* Writes the maps and joins the cgroups; returns 0 or an errno with *what naming the file. */
static int configure_child(const wl_plan *p, pid_t pid, char *what, size_t what_size) {
  int err;
  if (p->userns_fd < 0) {
    snprintf(what, what_size, "/proc/%d/uid_map", pid);
    if ((err = wl_write_proc(pid, "uid_map", p->uid_map)) != 0) return err;
    snprintf(what, what_size, "/proc/%d/gid_map", pid);
    if ((err = wl_write_proc(pid, "gid_map", p->gid_map)) != 0) return err;
  }
  char line[24];
  wl_pid_line(line, pid);
  const char *failed = "";
  err = wl_write_cgroup_procs(p->cgroup_procs, line, &failed);
  if (err != 0) snprintf(what, what_size, "%s", failed);
  return err;
}

/* After the clone: the ends of the pipes (and /dev/null) that only the child uses. */
static void close_child_ends(wl_plan *p) {
  int *fds[] = {&p->sync_r, &p->obs_w, &p->ack_r, &p->out_w, &p->err_w, &p->null_fd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) wl_close_fd(fds[i]);
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

/* What the intermediate process reports to the agent: the child's pid, or the errno of the step that failed. */
typedef struct {
  int32_t pid;
  int32_t err;
  char stage[56];
} shim_report;

typedef struct {
  char *path;
  char **argv;
  char **cgroup_procs;
  char *envp[1];
} shim_plan;

static void shim_plan_free(shim_plan *s) {
  free(s->path);
  wl_strv_free(s->argv);
  wl_strv_free(s->cgroup_procs);
}

static bool shim_plan_build(napi_env env, napi_value o, shim_plan *s) {
  napi_value v;
  bool present;
  memset(s, 0, sizeof *s);
  if (!wl_prop(env, o, "path", &v, &present)) return false;
  if (!present) return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "supervisor.path is required"), false;
  if (!wl_string(env, v, "supervisor.path", &s->path)) return false;
  if (!wl_prop(env, o, "argv", &v, &present)) return false;
  if (!present) return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "supervisor.argv is required"), false;
  if (!wl_string_array(env, v, "supervisor.argv", &s->argv, NULL)) return false;
  if (!wl_prop(env, o, "cgroupProcs", &v, &present)) return false;
  if (!present) return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "supervisor.cgroupProcs is required"), false;
  return wl_string_array(env, v, "supervisor.cgroupProcs", &s->cgroup_procs, NULL);
}

static void report_failure(int fd, const char *stage, int err) {
  shim_report r;
  memset(&r, 0, sizeof r);
  r.pid = -1;
  r.err = err;
  strncpy(r.stage, stage, sizeof r.stage - 1);
  ssize_t n __attribute__((unused)) = write(fd, &r, sizeof r);
  _exit(126);
}

/* In the intermediate process: the child cloned inside p->userns_fd by a joiner (see the file comment),
 * reparented to us once the joiner has been reaped. Returns its pid; a failure is reported and exits. */
static pid_t clone_into_userns(const wl_plan *p, int report_w, struct clone_args *child_args) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) report_failure(report_w, "subreaper", errno);
  int link[2];
  if (pipe2(link, O_CLOEXEC) < 0) report_failure(report_w, "pipe2", errno);
  pid_t joiner = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
  if (joiner < 0) report_failure(report_w, "clone", errno);
  if (joiner == 0) {
    close(link[0]);
    if (syscall(SYS_setns, p->userns_fd, CLONE_NEWUSER) < 0) report_failure(link[1], "setns_user", errno);
    pid_t pid = (pid_t)syscall(SYS_clone3, child_args, sizeof *child_args);
    if (pid == 0) wl_sandbox_child(p);
    if (pid < 0) report_failure(link[1], "clone3", errno);
    shim_report r;
    memset(&r, 0, sizeof r);
    r.pid = pid;
    if (WL_RETRY(write(link[1], &r, sizeof r)) != (ssize_t)sizeof r) kill(pid, SIGKILL);
    _exit(0);
  }
  close(link[1]);
  shim_report r;
  memset(&r, 0, sizeof r);
  ssize_t n = WL_RETRY(read(link[0], &r, sizeof r));
  close(link[0]);
  int status = 0;
  while (waitpid(joiner, &status, __WALL) < 0 && errno == EINTR) {
  }
  /* Now reaped, the joiner's child (if any) is ours. */
  if (n != (ssize_t)sizeof r) report_failure(report_w, "joiner", EPIPE);
  if (r.err != 0 || r.pid <= 0) {
    r.stage[sizeof r.stage - 1] = '\0';
    report_failure(report_w, r.err != 0 ? r.stage : "joiner", r.err != 0 ? r.err : EPIPE);
  }
  return r.pid;
}

/* The intermediate process (sharing the agent's memory until its execve, all signals blocked: see
 * clone_supervisor): only raw syscalls and async-signal-safe calls from here. */
_Noreturn static void supervisor_process(wl_plan *p, shim_plan *s, int report_w, struct clone_args *child_args) {
  if (setsid() < 0) report_failure(report_w, "setsid", errno);
  char line[24];
  wl_pid_line(line, (long)syscall(SYS_getpid));
  const char *failed;
  int err = wl_write_cgroup_procs(s->cgroup_procs, line, &failed);
  if (err != 0) report_failure(report_w, "supervisor cgroup", err);
  int pidfd;
  pid_t pid;
  if (p->userns_fd >= 0) {
    pid = clone_into_userns(p, report_w, child_args);
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
      int err = errno;
      kill(pid, SIGKILL);
      report_failure(report_w, "pidfd_open", err);
    }
  } else {
    pid = (pid_t)syscall(SYS_clone3, child_args, sizeof *child_args);
    if (pid == 0) wl_sandbox_child(p);
    if (pid < 0) report_failure(report_w, "clone3", errno);
    pidfd = *(int *)(uintptr_t)child_args->pidfd;
  }
  shim_report r;
  memset(&r, 0, sizeof r);
  r.pid = pid;
  if (WL_RETRY(write(report_w, &r, sizeof r)) != (ssize_t)sizeof r) {
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    _exit(126);
  }
  /* fds for the shim: 0-2 /dev/null, 3 the child's pidfd, 4 and 5 its output pipes; nothing else. */
  int src[4] = {p->null_fd, pidfd, p->out_r, p->err_r};
  for (int i = 0; i < 4; i++)
    if (src[i] >= 0) src[i] = fcntl(src[i], F_DUPFD, 64);
  for (int i = 0; i < 3; i++) dup2(src[0], i);
  for (int i = 1; i < 4; i++) {
    if (src[i] >= 0) dup2(src[i], 2 + i);
    else close(2 + i);
  }
  syscall(SYS_close_range, 6U, ~0U, 0U);
  execve(s->path, s->argv, s->envp);
  syscall(SYS_pidfd_send_signal, 3, SIGKILL, NULL, 0);
  _exit(127);
}

typedef struct {
  wl_plan *p;
  shim_plan *s;
  int report_r, report_w;
  struct clone_args *child;
} supervisor_start;

static int supervisor_entry(void *arg) {
  const supervisor_start *st = arg;
  close(st->report_r);
  supervisor_process(st->p, st->s, st->report_w, st->child);
}

/* The intermediate's own stack while it shares the agent's memory, with a guard page below it. The
 * sandbox child cloned from it runs on a copy of it up to its execve (the observation frame alone is
 * 32 KiB), so it is generous; pages are only backed where touched. */
#define SUPERVISOR_STACK_BYTES (1024 * 1024)

/* Clones the intermediate the way posix_spawn does: CLONE_VM, so nothing of the agent's address space
 * (~150 MB) is copied for it, and CLONE_VFORK, so the calling thread waits until it has execve'd the shim
 * (or exited) and no longer uses that memory. It runs only raw syscalls and async-signal-safe calls
 * (supervisor_process), on its own stack, with every signal blocked; its file descriptor table is its
 * own (no CLONE_FILES). The sandbox child it clones is a copy, as before: it is cloned without CLONE_VM,
 * while the agent's other threads go on. Returns the intermediate's pid (its pidfd in *pidfd) or -1 with
 * *clone_err set. */
static pid_t clone_supervisor(supervisor_start *st, int *pidfd, int *clone_err) {
  size_t guard = (size_t)sysconf(_SC_PAGESIZE);
  size_t len = guard + SUPERVISOR_STACK_BYTES;
  char *stack = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) {
    *clone_err = errno;
    return -1;
  }
  if (mprotect(stack, guard, PROT_NONE) != 0) {
    *clone_err = errno;
    munmap(stack, len);
    return -1;
  }
  sigset_t old;
  wl_block_all_signals(&old); /* no Node signal handler may run in the intermediate */
  pid_t pid = clone(supervisor_entry, stack + len, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, st, pidfd);
  *clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  munmap(stack, len); /* the intermediate is the shim now, or gone: this memory is no longer its */
  return pid;
}

/* spawnSandbox(opts, onExit, supervisor): see the file comment. onExit reports the shim's end. */
static napi_value spawn_supervised(napi_env env, napi_value *argv) {
  wl_plan p __attribute__((cleanup(wl_plan_free)));
  if (!wl_plan_build(env, argv[0], &p)) return NULL;
  shim_plan s __attribute__((cleanup(shim_plan_free)));
  if (!shim_plan_build(env, argv[2], &s)) return NULL;
  const char *failed_call;
  int err = wl_plan_open_fds(&p, &failed_call);
  if (err != 0) return wl_throw_errno(env, err, failed_call, NULL);
  int report[2];
  if (pipe2(report, O_CLOEXEC) < 0) return wl_throw_errno(env, errno, "pipe2", NULL);

  int child_pidfd = -1;
  struct clone_args child;
  sandbox_clone_args(&p, &child, &child_pidfd);

  int shim_pidfd = -1;
  supervisor_start start = {&p, &s, report[0], report[1], &child};
  int clone_err = 0;
  pid_t shim_pid = clone_supervisor(&start, &shim_pidfd, &clone_err);
  close(report[1]);
  if (shim_pid < 0) {
    close(report[0]);
    return wl_throw_errno(env, clone_err, "clone3", NULL);
  }
  /* Only the agent's ends of the handshake stay here: the output pipes belong to the shim. */
  close_child_ends(&p);
  wl_close_fd(&p.out_r);
  wl_close_fd(&p.err_r);

  shim_report r;
  memset(&r, 0, sizeof r);
  ssize_t n = WL_RETRY(read(report[0], &r, sizeof r));
  close(report[0]);
  if (n != (ssize_t)sizeof r || r.err != 0 || r.pid <= 0) {
    wl_reap(shim_pidfd);
    close(shim_pidfd);
    r.stage[sizeof r.stage - 1] = '\0';
    return wl_throw_errno(env, n == (ssize_t)sizeof r && r.err != 0 ? r.err : EPIPE, n == (ssize_t)sizeof r && r.err != 0 ? r.stage : "supervisor", NULL);
  }
  pid_t pid = r.pid;
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  char what[4096];
  err = pidfd < 0 ? errno : 0;
  snprintf(what, sizeof what, "pidfd_open");
  if (err == 0) err = configure_child(&p, pid, what, sizeof what);
  if (err == 0 && WL_RETRY(write(p.sync_w, "S", 1)) != 1) {
    err = errno;
    snprintf(what, sizeof what, "sync pipe");
  }
  wl_close_fd(&p.sync_w);
  if (err == 0 && fcntl(pidfd, F_SETFD, FD_CLOEXEC) < 0) err = errno;
  if (err != 0) {
    if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    else kill(pid, SIGKILL);
    wl_reap(shim_pidfd);
    close(shim_pidfd);
    if (pidfd >= 0) close(pidfd);
    return wl_throw_errno(env, err, "write", what);
  }
  int wait_fd = fcntl(shim_pidfd, F_DUPFD_CLOEXEC, 3);
  if (wait_fd < 0 || !wl_start_waiter(env, argv[1], wait_fd)) {
    err = errno;
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    wl_reap(shim_pidfd);
    close(shim_pidfd);
    close(pidfd);
    return wait_fd < 0 ? wl_throw_errno(env, err, "fcntl", NULL) : NULL;
  }
  napi_value o = handle_object(env, &p, pid, pidfd);
  napi_set_named_property(env, o, "supervisorPid", wl_int(env, shim_pid));
  close(shim_pidfd);
  return o;
}

static void sandbox_child(const void *plan) { wl_sandbox_child(plan); }

static napi_value js_spawn_sandbox(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  napi_valuetype cb_type;
  size_t argc = 3;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 2) return wl_throw_arg(env, "ERR_MISSING_ARGS", "missing arguments");
  if (napi_typeof(env, argv[1], &cb_type) != napi_ok || cb_type != napi_function)
    return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "The \"onExit\" argument must be a function");
  napi_valuetype sup_type = napi_undefined;
  if (argc >= 3 && napi_typeof(env, argv[2], &sup_type) != napi_ok) return NULL;
  if (sup_type == napi_object) return spawn_supervised(env, argv);

  wl_plan p __attribute__((cleanup(wl_plan_free)));
  if (!wl_plan_build(env, argv[0], &p)) return NULL;
  if (p.userns_fd >= 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "joining a user namespace takes a supervised spawn");
  const char *failed_call;
  int err = wl_plan_open_fds(&p, &failed_call);
  if (err != 0) return wl_throw_errno(env, err, failed_call, NULL);

  int pidfd = -1;
  struct clone_args args;
  sandbox_clone_args(&p, &args, &pidfd);

  int clone_err = 0;
  pid_t pid = wl_clone_blocked(&args, sandbox_child, &p, &clone_err);
  if (pid < 0) return wl_throw_errno(env, clone_err, "clone3", NULL);

  close_child_ends(&p);

  char what[4096];
  err = configure_child(&p, pid, what, sizeof what);
  if (err == 0 && WL_RETRY(write(p.sync_w, "S", 1)) != 1) {
    err = errno;
    snprintf(what, sizeof what, "sync pipe");
  }
  wl_close_fd(&p.sync_w);
  if (err != 0) {
    wl_kill_and_reap(pidfd);
    close(pidfd);
    return wl_throw_errno(env, err, "write", what);
  }

  int wait_fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
  if (wait_fd < 0) {
    err = errno;
    wl_kill_and_reap(pidfd);
    close(pidfd);
    return wl_throw_errno(env, err, "fcntl", NULL);
  }
  if (!wl_start_waiter(env, argv[1], wait_fd)) {
    wl_kill_and_reap(pidfd);
    close(pidfd);
    return NULL;
  }
  return handle_object(env, &p, pid, pidfd);
}

bool wl_register_wait(napi_env env, napi_value exports); /* sandbox_wait.c: pidfdOpen, watchPidfd */

bool wl_register_sandbox(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"spawnSandbox", js_spawn_sandbox}};
  return wl_export_fns(env, exports, fns, 1) && wl_register_wait(env, exports);
}
