/* fsMount: a fresh superblock of any filesystem type (tmpfs, proc, ...) through fsopen/fsconfig/fsmount/
 * move_mount. Options are "key" (flag) or "key=value" (string) exactly as the filesystem parses them. */
#include "wl.h"

#include <fcntl.h>
#include <sys/mount.h>

static napi_value js_fs_mount(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  WL_AUTOFREE char *fstype = NULL;
  WL_AUTOFREE char *source = NULL;
  WL_AUTOFREE char *target = NULL;
  char **options __attribute__((cleanup(wl_strvp))) = NULL;
  uint32_t attr;
  if (!wl_args(env, info, 5, argv) || !wl_string(env, argv[0], "fstype", &fstype) ||
      !wl_string(env, argv[1], "source", &source) || !wl_string(env, argv[2], "target", &target) ||
      !wl_string_array(env, argv[3], "options", &options, NULL) || !wl_uint32(env, argv[4], "attrFlags", &attr))
    return NULL;
  WL_AUTOCLOSE int fsfd = WL_RETRY(fsopen(fstype, FSOPEN_CLOEXEC));
  if (fsfd < 0) return wl_throw_errno(env, errno, "fsopen", fstype);
  if (WL_RETRY(fsconfig(fsfd, FSCONFIG_SET_STRING, "source", source, 0)) != 0)
    return wl_throw_errno_detail(env, errno, "fsconfig", target, "source");
  for (char **o = options; *o != NULL; o++)
    if (!wl_fs_set(env, fsfd, *o, target)) return NULL;
  if (!wl_fs_attach(env, fsfd, target, attr)) return NULL;
  return wl_undefined(env);
}

bool wl_register_fsmount(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"fsMount", js_fs_mount}};
  return wl_export_fns(env, exports, fns, 1);
}
