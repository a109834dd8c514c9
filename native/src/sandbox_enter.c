/* enterSandbox: starts one more process inside a sandbox that is already running (`kubectl worldline exec`),
 * with the same namespaces, cgroups, identity and lack of privilege as its workload.
 *
 * The addon clones an intermediate process (signals blocked, nothing of Node runs in it). The intermediate
 * makes itself non-dumpable and its own session, joins the sandbox's cgroups from the host side, then joins
 * all its namespaces at once through the pidfd of the sandbox's pid 1 (setns with user, mount, pid, ipc,
 * uts, net and cgroup): its root and working directory become the sandbox's root. A pid namespace applies
 * to children only, so it clones the process that runs the command, which is a member of the sandbox's pid
 * namespace; the intermediate holds no fd after that, waits for it and ends the same way (exit status, or
 * the same signal). The command's process leaves its parent's session, takes the terminal when there is
 * one, drops to the workload's uid/gid with no groups, no capabilities in any set, no_new_privs and
 * parent-death SIGKILL, checks that its parent is still the intermediate (outside its pid namespace, so
 * getppid() is 0), changes to the working directory and executes the command.
 *
 * Neither process can be reached by the sandbox's own processes while it holds any privilege: both are
 * non-dumpable (ptrace and /proc/<pid>/{mem,exe,fd} refused without CAP_SYS_PTRACE over the init user
 * namespace, which owns their memory) and run as host root until the drop, a uid the workload is not.
 *
 * Errors: a failing step writes an error record (stage + errno, sandbox_observe.c) on the `errors` pipe,
 * which is close-on-exec: EOF with nothing read means the command is executing. */
#include "sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#define ENTER_NAMESPACES                                                                                   \
  (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP)

typedef struct {
  int target; /* the caller's pidfd of the sandbox's pid 1 (not owned) */
  char **argv, **envp, **exec_paths, **cgroup_procs;
  char *cwd;
  uint32_t uid, gid;
  bool tty;
  int cap_last_cap;
  /* fds (O_CLOEXEC); -1 when absent. The child ends are closed in the parent after the clone. */
  int err_r, err_w;
  int in_r, in_w, out_r, out_w, eout_r, eout_w;
  int pty_master, pty_slave;
} enter_plan;

static void enter_plan_free(enter_plan *p) {
  wl_strv_free(p->argv);
  wl_strv_free(p->envp);
  wl_strv_free(p->exec_paths);
  wl_strv_free(p->cgroup_procs);
  free(p->cwd);
  int *fds[] = {&p->err_r, &p->err_w, &p->in_r, &p->in_w, &p->out_r, &p->out_w, &p->eout_r, &p->eout_w, &p->pty_master, &p->pty_slave};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) wl_close_fd(fds[i]);
}

/* The command's process: in the sandbox's namespaces, still privileged there until the drop. */
_Noreturn static void enter_command(const enter_plan *p) {
  int fail_fd = p->err_w;
  if (setsid() < 0) wl_child_fail(fail_fd, "setsid", errno);
  int src[3] = {p->in_r, p->out_w, p->eout_w};
  if (p->tty) {
    if (ioctl(p->pty_slave, TIOCSCTTY, 0) < 0) wl_child_fail(fail_fd, "tiocsctty", errno);
    src[0] = src[1] = src[2] = p->pty_slave;
  }
  wl_drop_privileges(fail_fd, p->uid, p->gid, p->cap_last_cap);
  if (syscall(SYS_getppid) != 0) _exit(125); /* the intermediate is gone (we were re-parented inside) */
  if (WL_RETRY(chdir(p->cwd)) < 0) wl_child_fail(fail_fd, "chdir_cwd", errno);
  wl_child_stdio(fail_fd, src);
  if (fail_fd > 3) syscall(SYS_close_range, 3U, (unsigned)fail_fd - 1, 0U);
  syscall(SYS_close_range, (unsigned)fail_fd + 1, ~0U, 0U);
  wl_child_exec(fail_fd, p->exec_paths, p->argv, p->envp);
}

/* The intermediate (a raw clone of the agent, all signals blocked): see the file comment. */
static void enter_intermediate(const void *plan) {
  const enter_plan *p = plan;
  int fail_fd = p->err_w;
  wl_reset_signals();
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) wl_child_fail(fail_fd, "dumpable", errno);
  if (setsid() < 0) wl_child_fail(fail_fd, "setsid", errno);
  char line[24];
  wl_pid_line(line, (long)syscall(SYS_getpid));
  const char *failed;
  int err = wl_write_cgroup_procs(p->cgroup_procs, line, &failed);
  if (err != 0) wl_child_fail(fail_fd, "cgroup", err);
  if (syscall(SYS_setns, p->target, ENTER_NAMESPACES) < 0) wl_child_fail(fail_fd, "setns", errno);
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.exit_signal = SIGCHLD;
  pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) wl_child_fail(fail_fd, "clone3", errno);
  if (pid == 0) enter_command(p);
  syscall(SYS_close_range, 0U, ~0U, 0U);
  int status = 0;
  for (;;) {
    pid_t r = (pid_t)syscall(SYS_wait4, pid, &status, 0, NULL);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) _exit(126);
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  syscall(SYS_kill, syscall(SYS_getpid), sig);
  _exit(128 + sig);
}

static bool plan_build(napi_env env, napi_value o, enter_plan *p) {
  napi_value v;
  bool present;
  size_t argc = 0;
  int32_t target;
  if (!wl_prop(env, o, "target", &v, &present) || !wl_int32(env, v, "target", &target)) return false;
  if (target < 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "target must be a pidfd"), false;
  p->target = target;
  if (!wl_prop(env, o, "argv", &v, &present) || !wl_string_array(env, v, "argv", &p->argv, &argc)) return false;
  if (argc == 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "argv must not be empty"), false;
  if (!wl_prop(env, o, "env", &v, &present) || !wl_string_array(env, v, "env", &p->envp, NULL)) return false;
  if (!wl_prop(env, o, "cgroupProcs", &v, &present) || !wl_string_array(env, v, "cgroupProcs", &p->cgroup_procs, NULL)) return false;
  if (!wl_prop(env, o, "cwd", &v, &present) || !wl_string(env, v, "cwd", &p->cwd)) return false;
  if (p->cwd[0] != '/') return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "cwd must be absolute"), false;
  if (!wl_prop(env, o, "uid", &v, &present) || !wl_uint32(env, v, "uid", &p->uid)) return false;
  if (!wl_prop(env, o, "gid", &v, &present) || !wl_uint32(env, v, "gid", &p->gid)) return false;
  if (!wl_prop(env, o, "tty", &v, &present) || !wl_bool(env, v, "tty", &p->tty)) return false;
  return wl_plan_exec(env, p->argv, p->envp, &p->cap_last_cap, &p->exec_paths);
}

/* The pipes, or a fresh pseudo-terminal pair (the peer opened from the master, never by a path). */
static int open_fds(enter_plan *p, const char **call) {
  int err;
  *call = "pipe2";
  if ((err = wl_make_pipe(&p->err_r, &p->err_w))) return err;
  if (!p->tty) {
    if ((err = wl_make_pipe(&p->in_r, &p->in_w)) || (err = wl_make_pipe(&p->out_r, &p->out_w)) || (err = wl_make_pipe(&p->eout_r, &p->eout_w))) return err;
    return 0;
  }
  *call = "open /dev/ptmx";
  p->pty_master = WL_RETRY(open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (p->pty_master < 0) return errno;
  int unlock = 0;
  *call = "ioctl TIOCSPTLCK";
  if (ioctl(p->pty_master, TIOCSPTLCK, &unlock) < 0) return errno;
  *call = "ioctl TIOCGPTPEER";
  p->pty_slave = ioctl(p->pty_master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  return p->pty_slave < 0 ? errno : 0;
}

static napi_value js_enter_sandbox(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  napi_valuetype cb_type;
  if (!wl_args(env, info, 2, argv)) return NULL;
  if (napi_typeof(env, argv[1], &cb_type) != napi_ok || cb_type != napi_function)
    return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "The \"onExit\" argument must be a function");
  enter_plan p __attribute__((cleanup(enter_plan_free)));
  memset(&p, 0, sizeof p);
  p.err_r = p.err_w = p.in_r = p.in_w = p.out_r = p.out_w = p.eout_r = p.eout_w = p.pty_master = p.pty_slave = -1;
  if (!plan_build(env, argv[0], &p)) return NULL;
  const char *call;
  int err = open_fds(&p, &call);
  if (err != 0) return wl_throw_errno(env, err, call, NULL);

  int pidfd = -1;
  struct clone_args args;
  wl_pidfd_clone_args(&args, &pidfd);
  int clone_err = 0;
  pid_t pid = wl_clone_blocked(&args, enter_intermediate, &p, &clone_err);
  if (pid < 0) return wl_throw_errno(env, clone_err, "clone3", NULL);
  wl_close_fd(&p.err_w);
  wl_close_fd(&p.in_r);
  wl_close_fd(&p.out_w);
  wl_close_fd(&p.eout_w);
  wl_close_fd(&p.pty_slave);

  int wait_fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
  if (wait_fd < 0 || !wl_start_waiter(env, argv[1], wait_fd)) {
    err = errno;
    wl_kill_and_reap(pidfd);
    close(pidfd);
    return wait_fd < 0 ? wl_throw_errno(env, err, "fcntl", NULL) : NULL;
  }
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "pid", wl_int(env, pid));
  napi_set_named_property(env, o, "pidfd", wl_int(env, pidfd));
  napi_set_named_property(env, o, "errors", wl_int(env, p.err_r));
  if (p.tty) {
    napi_set_named_property(env, o, "pty", wl_int(env, p.pty_master));
  } else {
    napi_set_named_property(env, o, "stdin", wl_int(env, p.in_w));
    napi_set_named_property(env, o, "stdout", wl_int(env, p.out_r));
    napi_set_named_property(env, o, "stderr", wl_int(env, p.eout_r));
  }
  /* ownership moves to JS */
  p.err_r = p.pty_master = p.in_w = p.out_r = p.eout_r = -1;
  return o;
}

/* setWindowSize(fd, rows, cols): TIOCSWINSZ on a pseudo-terminal master (the command gets SIGWINCH). */
static napi_value js_set_window_size(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t fd;
  uint32_t rows, cols;
  if (!wl_args(env, info, 3, argv) || !wl_int32(env, argv[0], "fd", &fd) || !wl_uint32(env, argv[1], "rows", &rows) ||
      !wl_uint32(env, argv[2], "cols", &cols))
    return NULL;
  if (rows > 0xffff || cols > 0xffff) return wl_throw_arg(env, "ERR_OUT_OF_RANGE", "rows and cols must fit 16 bits");
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (ioctl(fd, TIOCSWINSZ, &ws) < 0) return wl_throw_errno(env, errno, "ioctl", "TIOCSWINSZ");
  return wl_undefined(env);
}

/* pidfdKill(pidfd): SIGKILL through a pidfd (never a recycled pid); a process already gone is not an error. */
static napi_value js_pidfd_kill(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "pidfd", &fd)) return NULL;
  if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) return wl_throw_errno(env, errno, "pidfd_send_signal", NULL);
  return wl_undefined(env);
}

bool wl_register_enter(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"enterSandbox", js_enter_sandbox}, {"setWindowSize", js_set_window_size}, {"pidfdKill", js_pidfd_kill}};
  return wl_export_fns(env, exports, fns, 3);
}
