/* fsyncPath (open O_RDONLY — O_DIRECTORY for directories — fsync, close) and fsyncFd. */
#include "wl.h"

#include <fcntl.h>
#include <sys/stat.h>

static napi_value js_fsync_path(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "path", &path)) return NULL;
  struct stat st;
  if (lstat(path, &st) != 0) return wl_throw_errno(env, errno, "lstat", path);
  int dir_flag = S_ISDIR(st.st_mode) ? O_DIRECTORY : 0;
  WL_AUTOCLOSE int fd = WL_RETRY(open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | dir_flag));
  if (fd < 0) return wl_throw_errno(env, errno, "open", path);
  if (WL_RETRY(fsync(fd)) != 0) return wl_throw_errno(env, errno, "fsync", path);
  return wl_undefined(env);
}

static napi_value js_fsync_fd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "fd", &fd)) return NULL;
  if (WL_RETRY(fsync(fd)) != 0) return wl_throw_errno(env, errno, "fsync", NULL);
  return wl_undefined(env);
}

bool wl_register_fsync(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"fsyncPath", js_fsync_path}, {"fsyncFd", js_fsync_fd}};
  return wl_export_fns(env, exports, fns, 2);
}
