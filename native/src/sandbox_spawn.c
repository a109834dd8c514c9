/* spawnSandbox, parent side: build the plan, create the pipes, clone3 into new user/mount/pid/ipc/uts
 * (+net) namespaces with a pidfd, write the child's uid_map/gid_map and cgroup.procs files, then release
 * it. The child runs nothing of the workload before that (it waits on the sync pipe), and execs only after
 * the caller has read its observation frame and written 'G' to the ack pipe.
 *
 * With a third argument (a supervisor: the shim's path and argv, and the cgroup.procs files it moves
 * itself into), the agent clones neither the child nor a copy of itself. An intermediate process, cloned
 * with the agent's memory shared as posix_spawn does, leaves the agent's session and cgroups, puts the
 * plan (a sealed memfd, sandbox_wire.c) and the child's descriptors in their slots and execs the shim
 * (native/src/shim/). The shim clones the child exactly as above from its own small address space
 * (launch.c), so the child never holds a copy of the agent's memory, and reports the child's pid; the
 * frame and the 'G' handshake with the agent are unchanged. The workload's parent is then the shim, not
 * the agent: the agent may die and the world runs on.
 *
 * With opts.userns (an fd of a user namespace made by createUserNamespace), the child is cloned into that
 * namespace instead of a new one, so several sandboxes share one set of mapped identities (the private
 * evaluator's principals) while each keeps its own mount, PID, IPC, UTS, cgroup and network namespaces,
 * owned by it. Only a supervised spawn can: joining a user namespace takes a single-threaded caller, and
 * gives up the caller's privileges outside it, so the shim does it through a joiner (launch.c). The
 * namespace's maps are not written again. */
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

_Noreturn static void report_failure(int fd, const char *stage, int err) {
  wl_launch_report r;
  memset(&r, 0, sizeof r);
  r.pid = -1;
  r.err = err;
  strncpy(r.stage, stage, sizeof r.stage - 1);
  ssize_t n __attribute__((unused)) = write(fd, &r, sizeof r);
  _exit(126);
}

/* The intermediate process (sharing the agent's memory until its execve, all signals blocked: see
 * clone_supervisor): only raw syscalls and async-signal-safe calls from here. It execs the shim with
 * every descriptor the shim and the child need in its slot (sandbox_child.h), 0-2 /dev/null, nothing
 * else; the shim clones the child and reports (launch.c). */
_Noreturn static void supervisor_process(const wl_plan *p, shim_plan *s, int report_w, int plan_fd) {
  if (setsid() < 0) report_failure(report_w, "setsid", errno);
  char line[24];
  wl_pid_line(line, (long)syscall(SYS_getpid));
  const char *failed;
  int err = wl_write_cgroup_procs(s->cgroup_procs, line, &failed);
  if (err != 0) report_failure(report_w, "supervisor cgroup", err);
  int src[WL_SLOT_END];
  wl_plan_slot_fds(p, src);
  src[WL_SLOT_PLAN] = plan_fd;
  src[WL_SLOT_REPORT] = report_w;
  /* Out of the way first (the agent's numbers may be any of the slots), then into place. */
  for (int i = WL_SLOT_PLAN; i < WL_SLOT_END; i++)
    if (src[i] >= 0 && (src[i] = fcntl(src[i], F_DUPFD, 64)) < 0) report_failure(report_w, "fcntl", errno);
  for (int i = 0; i < WL_SLOT_END; i++) {
    int from = i < WL_SLOT_PLAN ? src[WL_SLOT_NULL] : src[i];
    if (from < 0) close(i);
    else if (dup2(from, i) < 0) report_failure(src[WL_SLOT_REPORT], "dup2", errno);
  }
  syscall(SYS_close_range, (unsigned)WL_SLOT_END, ~0U, 0U);
  execve(s->path, s->argv, s->envp);
  report_failure(WL_SLOT_REPORT, "execve", errno);
}

typedef struct {
  const wl_plan *p;
  shim_plan *s;
  int report_r, report_w;
  int plan_fd;
} supervisor_start;

static int supervisor_entry(void *arg) {
  const supervisor_start *st = arg;
  close(st->report_r);
  supervisor_process(st->p, st->s, st->report_w, st->plan_fd);
}

/* The intermediate's own stack while it shares the agent's memory, with a guard page below it. It only
 * moves descriptors and execs; pages are only backed where touched. */
#define SUPERVISOR_STACK_BYTES (256 * 1024)

/* Clones the intermediate the way posix_spawn does: CLONE_VM, so nothing of the agent's address space
 * (~150 MB) is copied for it, and CLONE_VFORK, so the calling thread waits until it has execve'd the shim
 * (or exited) and no longer uses that memory. It runs only raw syscalls and async-signal-safe calls
 * (supervisor_process), on its own stack, with every signal blocked; its file descriptor table is its
 * own (no CLONE_FILES). Returns the intermediate's pid (its pidfd in *pidfd) or -1 with
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

  int plan_fd = wl_wire_encode(&p);
  if (plan_fd < 0) {
    err = errno;
    close(report[0]);
    close(report[1]);
    return wl_throw_errno(env, err, "memfd_create", NULL);
  }

  int shim_pidfd = -1;
  supervisor_start start = {&p, &s, report[0], report[1], plan_fd};
  int clone_err = 0;
  pid_t shim_pid = clone_supervisor(&start, &shim_pidfd, &clone_err);
  close(report[1]);
  close(plan_fd);
  if (shim_pid < 0) {
    close(report[0]);
    return wl_throw_errno(env, clone_err, "clone3", NULL);
  }
  /* Only the agent's ends of the handshake stay here: the output pipes belong to the shim. */
  close_child_ends(&p);
  wl_close_fd(&p.out_r);
  wl_close_fd(&p.err_r);

  wl_launch_report r;
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
  if (p.mnt_template_fd >= 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "a mount template takes a supervised spawn");
  const char *failed_call;
  int err = wl_plan_open_fds(&p, &failed_call);
  if (err != 0) return wl_throw_errno(env, err, failed_call, NULL);

  int pidfd = -1;
  struct clone_args args;
  wl_sandbox_clone_args(&p, &args, &pidfd);

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
