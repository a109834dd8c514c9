/* Exit delivery: one dedicated, detached thread per sandbox blocks in waitid(P_PIDFD, WEXITED) and hands
 * the result to JS through a thread-safe function. Not the libuv threadpool: a world may run for hours.
 * watchPidfd does the same for a process that is not our child (a world's supervisor re-attached after
 * an agent restart): the thread polls the pidfd until the process has exited and reports no status. */
#include <poll.h>
#include <sys/syscall.h>
#include "sandbox.h"

#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

typedef struct {
  int pidfd;
  bool child; /* false: only poll for the exit (it is someone else's child) */
  napi_threadsafe_function tsfn;
} waiter;

typedef struct {
  int code;   /* -1 when killed by a signal */
  int signal; /* 0 when exited */
  int err;    /* waitid errno, 0 on success */
  bool unknown; /* watched, not waited: no status */
} exit_result;

static void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
  exit_result *r = data;
  if (env != NULL && js_cb != NULL) {
    napi_value obj, undefined, code, signal;
    napi_get_undefined(env, &undefined);
    napi_create_object(env, &obj);
    if (r->err == 0 && r->signal == 0 && !r->unknown)
      napi_create_int32(env, r->code, &code);
    else
      napi_get_null(env, &code);
    if (r->signal != 0) {
      char name[32] = "SIG";
      const char *abbrev = sigabbrev_np(r->signal);
      strncat(name, abbrev != NULL ? abbrev : "UNKNOWN", sizeof name - 4);
      napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &signal);
    } else {
      napi_get_null(env, &signal);
    }
    napi_set_named_property(env, obj, "code", code);
    napi_set_named_property(env, obj, "signal", signal);
    if (r->err != 0) {
      const char *ename = strerrorname_np(r->err);
      napi_set_named_property(env, obj, "waitError", wl_str(env, ename != NULL ? ename : "EUNKNOWN"));
    }
    napi_call_function(env, undefined, js_cb, 1, &obj, NULL);
  }
  free(r);
}

static void *wait_thread(void *arg) {
  waiter *w = arg;
  exit_result *r = calloc(1, sizeof *r);
  siginfo_t si;
  memset(&si, 0, sizeof si);
  int rc, err;
  if (w->child) {
    rc = WL_RETRY(waitid((idtype_t)P_PIDFD, (id_t)w->pidfd, &si, WEXITED));
    err = rc < 0 ? errno : 0;
  } else {
    struct pollfd pfd = {.fd = w->pidfd, .events = POLLIN};
    rc = WL_RETRY(poll(&pfd, 1, -1));
    err = rc < 0 ? errno : ENOTSUP; /* no status to report: code and signal stay null */
  }
  close(w->pidfd);
  if (r != NULL) {
    r->err = err;
    if (err == ENOTSUP) {
      r->err = 0;
      r->code = -1;
      r->signal = 0;
      r->unknown = true;
    } else if (err == 0) {
      if (si.si_code == CLD_EXITED)
        r->code = si.si_status;
      else {
        r->code = -1;
        r->signal = si.si_status;
      }
    }
    if (napi_call_threadsafe_function(w->tsfn, r, napi_tsfn_blocking) != napi_ok) free(r);
  }
  napi_release_threadsafe_function(w->tsfn, napi_tsfn_release);
  free(w);
  return NULL;
}

static bool start_thread(napi_env env, napi_value on_exit, int pidfd, bool child) {
  waiter *w = calloc(1, sizeof *w);
  if (w == NULL) {
    close(pidfd);
    wl_throw_errno(env, ENOMEM, "malloc", NULL);
    return false;
  }
  w->pidfd = pidfd;
  w->child = child;
  napi_value name = wl_str(env, "worldline.sandboxExit");
  if (napi_create_threadsafe_function(env, on_exit, NULL, name, 0, 1, NULL, NULL, NULL, call_js, &w->tsfn) != napi_ok) {
    close(pidfd);
    free(w);
    return false;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  sigset_t all;
  sigfillset(&all);
  pthread_attr_setsigmask_np(&attr, &all); /* process signals stay with Node's threads */
  pthread_t tid;
  int err = pthread_create(&tid, &attr, wait_thread, w);
  pthread_attr_destroy(&attr);
  if (err != 0) {
    napi_release_threadsafe_function(w->tsfn, napi_tsfn_abort);
    close(pidfd);
    free(w);
    wl_throw_errno(env, err, "pthread_create", NULL);
    return false;
  }
  return true;
}

bool wl_start_waiter(napi_env env, napi_value on_exit, int pidfd) { return start_thread(env, on_exit, pidfd, true); }

/* pidfdOpen(pid): an O_CLOEXEC pidfd of any live process (the caller closes it). */
static napi_value js_pidfd_open(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t pid;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "pid", &pid)) return NULL;
  if (pid <= 0) return wl_throw_arg(env, "ERR_OUT_OF_RANGE", "The \"pid\" argument must be positive");
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return wl_throw_errno(env, errno, "pidfd_open", NULL);
  return wl_int(env, fd);
}

static napi_value boolean(napi_env env, bool b) {
  napi_value v;
  return napi_get_boolean(env, b, &v) == napi_ok ? v : NULL;
}

/*
 * pidfdSendSignal(pidfd, signo): the signal to exactly the process behind the pidfd, never to whatever
 * process holds its pid number later. true when sent; false when that process has ended (ESRCH).
 */
static napi_value js_pidfd_send_signal(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t pidfd, signo;
  if (!wl_args(env, info, 2, argv) || !wl_int32(env, argv[0], "pidfd", &pidfd) || !wl_int32(env, argv[1], "signo", &signo)) return NULL;
  if (pidfd < 0) return wl_throw_arg(env, "ERR_OUT_OF_RANGE", "The \"pidfd\" argument must be >= 0");
  if (signo != SIGTERM && signo != SIGKILL) return wl_throw_arg(env, "ERR_OUT_OF_RANGE", "The \"signo\" argument must be SIGTERM or SIGKILL");
  if (syscall(SYS_pidfd_send_signal, pidfd, signo, NULL, 0) == 0) return boolean(env, true);
  if (errno == ESRCH) return boolean(env, false);
  return wl_throw_errno(env, errno, "pidfd_send_signal", NULL);
}

/* watchPidfd(pidfd, onExit): onExit({code: null, signal: null}) once the process is gone; pidfd stays the caller's. */
static napi_value js_watch_pidfd(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t pidfd;
  napi_valuetype t;
  if (!wl_args(env, info, 2, argv) || !wl_int32(env, argv[0], "pidfd", &pidfd)) return NULL;
  if (napi_typeof(env, argv[1], &t) != napi_ok || t != napi_function)
    return wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "The \"onExit\" argument must be a function");
  int fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return wl_throw_errno(env, errno, "fcntl", NULL);
  if (!start_thread(env, argv[1], fd, false)) return NULL;
  return wl_undefined(env);
}

bool wl_register_wait(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"pidfdOpen", js_pidfd_open}, {"pidfdSendSignal", js_pidfd_send_signal}, {"watchPidfd", js_watch_pidfd}};
  return wl_export_fns(env, exports, fns, 3);
}
