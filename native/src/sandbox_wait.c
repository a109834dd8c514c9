/* Exit delivery: one dedicated, detached thread per sandbox blocks in waitid(P_PIDFD, WEXITED) and hands
 * the result to JS through a thread-safe function. Not the libuv threadpool: a world may run for hours. */
#include "sandbox.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

typedef struct {
  int pidfd;
  napi_threadsafe_function tsfn;
} waiter;

typedef struct {
  int code;   /* -1 when killed by a signal */
  int signal; /* 0 when exited */
  int err;    /* waitid errno, 0 on success */
} exit_result;

static void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
  exit_result *r = data;
  if (env != NULL && js_cb != NULL) {
    napi_value obj, undefined, code, signal;
    napi_get_undefined(env, &undefined);
    napi_create_object(env, &obj);
    if (r->err == 0 && r->signal == 0)
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
  int rc = WL_RETRY(waitid((idtype_t)P_PIDFD, (id_t)w->pidfd, &si, WEXITED));
  int err = rc < 0 ? errno : 0;
  close(w->pidfd);
  if (r != NULL) {
    r->err = err;
    if (err == 0) {
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

bool wl_start_waiter(napi_env env, napi_value on_exit, int pidfd) {
  waiter *w = calloc(1, sizeof *w);
  if (w == NULL) {
    close(pidfd);
    wl_throw_errno(env, ENOMEM, "malloc", NULL);
    return false;
  }
  w->pidfd = pidfd;
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
