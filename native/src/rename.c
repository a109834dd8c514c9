/* renameat2(2): RENAME_EXCHANGE swaps two entries atomically, RENAME_NOREPLACE refuses to overwrite. */
#include "wl.h"

#include <fcntl.h>
#include <stdio.h>

static napi_value js_renameat2(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int32_t olddirfd, newdirfd;
  uint32_t flags;
  WL_AUTOFREE char *oldpath = NULL;
  WL_AUTOFREE char *newpath = NULL;
  if (!wl_args(env, info, 5, argv) || !wl_int32(env, argv[0], "olddirfd", &olddirfd) ||
      !wl_string(env, argv[1], "oldpath", &oldpath) || !wl_int32(env, argv[2], "newdirfd", &newdirfd) ||
      !wl_string(env, argv[3], "newpath", &newpath) || !wl_uint32(env, argv[4], "flags", &flags))
    return NULL;
  if (WL_RETRY(renameat2(olddirfd, oldpath, newdirfd, newpath, flags)) != 0) {
    int err = errno;
    napi_value error;
    wl_throw_errno(env, err, "renameat2", oldpath);
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) {
      napi_set_named_property(env, error, "dest", wl_str(env, newpath));
      napi_throw(env, error);
    }
    return NULL;
  }
  return wl_undefined(env);
}

bool wl_register_rename(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"renameat2", js_renameat2}};
  return wl_export_fns(env, exports, fns, 1);
}
