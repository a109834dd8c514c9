/* openat2(2), and openBeneath: openat2 with RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS, falling back to a
 * per-component O_NOFOLLOW walk (beneath_fallback.c) when the kernel lacks openat2 (ENOSYS). Every fd is
 * opened O_CLOEXEC. */
#include "wl.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool force_fallback = false;

static int sys_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  struct open_how how = {.flags = flags | O_CLOEXEC, .mode = mode, .resolve = resolve};
  return WL_RETRY((int)syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

static napi_value js_openat2(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int32_t dirfd;
  uint64_t flags, mode, resolve;
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 5, argv) || !wl_int32(env, argv[0], "dirfd", &dirfd) ||
      !wl_string(env, argv[1], "path", &path) || !wl_uint64(env, argv[2], "flags", &flags) ||
      !wl_uint64(env, argv[3], "mode", &mode) || !wl_uint64(env, argv[4], "resolve", &resolve))
    return NULL;
  int fd = sys_openat2(dirfd, path, flags, mode, resolve);
  if (fd < 0) return wl_throw_errno(env, errno, "openat2", path);
  return wl_int(env, fd);
}

static napi_value js_open_beneath(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t rootfd;
  uint32_t flags, mode;
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 4, argv) || !wl_int32(env, argv[0], "rootDirFd", &rootfd) ||
      !wl_string(env, argv[1], "relPath", &path) || !wl_uint32(env, argv[2], "flags", &flags) ||
      !wl_uint32(env, argv[3], "mode", &mode))
    return NULL;
  int fd = -1;
  if (!force_fallback) {
    fd = sys_openat2(rootfd, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0) return wl_int(env, fd);
    if (errno != ENOSYS) return wl_throw_errno(env, errno, "openat2", path);
  }
  fd = wl_open_beneath_walk(rootfd, path, (int)flags, (mode_t)mode);
  if (fd < 0) return wl_throw_errno(env, errno, "openat", path);
  return wl_int(env, fd);
}

/* close(2) for an fd this addon opened: Node's fs.closeSync warns, in a worker thread, about an fd it did
 * not open itself. Not retried on EINTR: on Linux the fd is released even then. */
static napi_value js_close_fd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "fd", &fd)) return NULL;
  if (close(fd) != 0 && errno != EINTR) return wl_throw_errno(env, errno, "close", NULL);
  return wl_undefined(env);
}

static napi_value js_force_fallback(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  bool on;
  if (!wl_args(env, info, 1, argv) || !wl_bool(env, argv[0], "on", &on)) return NULL;
  force_fallback = on;
  return wl_undefined(env);
}

bool wl_register_openat2(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {
      {"openat2", js_openat2}, {"openBeneath", js_open_beneath}, {"closeFd", js_close_fd}, {"forceBeneathFallback", js_force_fallback}};
  return wl_export_fns(env, exports, fns, sizeof fns / sizeof fns[0]);
}
