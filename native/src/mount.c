/* Thin mount(2) and umount2(2), and mount(2) made from another cgroup namespace.
 *
 * mountInCgroupNs(nsPath, source, target, fstype, flags, data): a short-lived pthread, every signal
 * blocked, enters the cgroup namespace at nsPath (setns CLONE_NEWCGROUP, a per-thread attribute: the
 * calling thread never changes namespace) and makes the one mount(2) call there. The kernel applies some
 * cgroup2 superblock options (favordynmods, nsdelegate) only when asked from the initial cgroup namespace;
 * a node-agent in a pod has its own, and reaches the node's through /proc/1/ns/cgroup (hostPID). */
#include "wl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>

/* The five arguments of mount(2) from argv[0..4]; false (a JS exception pending) when one is not valid. */
typedef struct {
  char *source, *target, *fstype, *data;
  uint64_t flags;
} mount_args;

static void free_mount_args(mount_args *a) {
  free(a->source);
  free(a->target);
  free(a->fstype);
  free(a->data);
}

static bool read_mount_args(napi_env env, napi_value *argv, mount_args *a) {
  return wl_string_or_null(env, argv[0], "source", &a->source) && wl_string(env, argv[1], "target", &a->target) &&
         wl_string_or_null(env, argv[2], "fstype", &a->fstype) && wl_uint64(env, argv[3], "flags", &a->flags) &&
         wl_string_or_null(env, argv[4], "data", &a->data);
}

static napi_value js_mount(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  mount_args a __attribute__((cleanup(free_mount_args))) = {0};
  if (!wl_args(env, info, 5, argv) || !read_mount_args(env, argv, &a)) return NULL;
  if (WL_RETRY(mount(a.source, a.target, a.fstype, (unsigned long)a.flags, a.data)) != 0)
    return wl_throw_errno(env, errno, "mount", a.target);
  return wl_undefined(env);
}

static napi_value js_umount2(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  WL_AUTOFREE char *target = NULL;
  int32_t flags;
  if (!wl_args(env, info, 2, argv) || !wl_string(env, argv[0], "target", &target) ||
      !wl_int32(env, argv[1], "flags", &flags))
    return NULL;
  if (WL_RETRY(umount2(target, flags)) != 0) return wl_throw_errno(env, errno, "umount2", target);
  return wl_undefined(env);
}

typedef struct {
  int nsfd;
  const char *source, *target, *fstype, *data;
  unsigned long flags;
  /* results */
  int err;
  const char *syscall;
} cgroupns_mount_job;

static void *cgroupns_mount_thread(void *arg) {
  cgroupns_mount_job *job = arg;
  sigset_t old;
  wl_block_all_signals(&old);
  if (setns(job->nsfd, CLONE_NEWCGROUP) != 0) {
    job->err = errno;
    job->syscall = "setns";
  } else if (WL_RETRY(mount(job->source, job->target, job->fstype, job->flags, job->data)) != 0) {
    job->err = errno;
    job->syscall = "mount";
  }
  return NULL;
}

static napi_value js_mount_in_cgroupns(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  WL_AUTOFREE char *nspath = NULL;
  mount_args a __attribute__((cleanup(free_mount_args))) = {0};
  if (!wl_args(env, info, 6, argv) || !wl_string(env, argv[0], "nsPath", &nspath) || !read_mount_args(env, argv + 1, &a))
    return NULL;
  WL_AUTOCLOSE int nsfd = WL_RETRY(open(nspath, O_RDONLY | O_CLOEXEC));
  if (nsfd < 0) return wl_throw_errno(env, errno, "open", nspath);
  cgroupns_mount_job job = {.nsfd = nsfd, .source = a.source, .target = a.target, .fstype = a.fstype, .data = a.data, .flags = (unsigned long)a.flags};
  pthread_t tid;
  int rc = pthread_create(&tid, NULL, cgroupns_mount_thread, &job);
  if (rc != 0) return wl_throw_errno(env, rc, "pthread_create", NULL);
  rc = pthread_join(tid, NULL);
  if (rc != 0) return wl_throw_errno(env, rc, "pthread_join", NULL);
  if (job.err != 0) return wl_throw_errno(env, job.err, job.syscall, strcmp(job.syscall, "setns") == 0 ? nspath : a.target);
  return wl_undefined(env);
}

bool wl_register_mount(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"mount", js_mount}, {"umount2", js_umount2}, {"mountInCgroupNs", js_mount_in_cgroupns}};
  return wl_export_fns(env, exports, fns, 3);
}
