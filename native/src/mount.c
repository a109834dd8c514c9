/* Thin mount(2) and umount2(2). */
#include "wl.h"

#include <sys/mount.h>

static napi_value js_mount(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  WL_AUTOFREE char *source = NULL;
  WL_AUTOFREE char *target = NULL;
  WL_AUTOFREE char *fstype = NULL;
  WL_AUTOFREE char *data = NULL;
  uint64_t flags;
  if (!wl_args(env, info, 5, argv) || !wl_string_or_null(env, argv[0], "source", &source) ||
      !wl_string(env, argv[1], "target", &target) || !wl_string_or_null(env, argv[2], "fstype", &fstype) ||
      !wl_uint64(env, argv[3], "flags", &flags) || !wl_string_or_null(env, argv[4], "data", &data))
    return NULL;
  if (WL_RETRY(mount(source, target, fstype, (unsigned long)flags, data)) != 0)
    return wl_throw_errno(env, errno, "mount", target);
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

bool wl_register_mount(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"mount", js_mount}, {"umount2", js_umount2}};
  return wl_export_fns(env, exports, fns, 2);
}
