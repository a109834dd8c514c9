/* mountOverlay: fsopen("overlay") with one "lowerdir+" per layer (Linux 6.8+, so paths are never split on
 * ':' or ','), then upperdir/workdir (none: a read-only overlay of the lowers) and extra options, fsmount,
 * move_mount. On kernels that reject
 * "lowerdir+" (EINVAL) it falls back to a single "lowerdir=a:b" string, refusing paths it cannot express. */
#include "wl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

static bool set_legacy_lowerdir(napi_env env, int fsfd, char **lowers, const char *target) {
  size_t total = 0;
  for (char **l = lowers; *l != NULL; l++) {
    if (strpbrk(*l, ":,\\") != NULL)
      return wl_throw_errno_detail(env, EINVAL, "fsconfig", *l,
                                   "kernel lacks lowerdir+; a lower path with ':', ',' or '\\' cannot be expressed"),
             false;
    total += strlen(*l) + 1;
  }
  WL_AUTOFREE char *joined = malloc(total + 1);
  if (joined == NULL) return wl_throw_errno(env, ENOMEM, "malloc", NULL), false;
  joined[0] = '\0';
  for (char **l = lowers; *l != NULL; l++) {
    if (l != lowers) strcat(joined, ":");
    strcat(joined, *l);
  }
  if (fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir", joined, 0) != 0) {
    int err = errno;
    char log[512];
    wl_fs_log(fsfd, log, sizeof log);
    return wl_throw_errno_detail(env, err, "fsconfig", target, log), false;
  }
  return true;
}

static napi_value js_mount_overlay(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  WL_AUTOFREE char *target = NULL;
  WL_AUTOFREE char *upper = NULL;
  WL_AUTOFREE char *work = NULL;
  char **lowers __attribute__((cleanup(wl_strvp))) = NULL;
  char **extra __attribute__((cleanup(wl_strvp))) = NULL;
  size_t nlower;
  uint32_t attr;
  if (!wl_args(env, info, 6, argv) || !wl_string(env, argv[0], "target", &target) ||
      !wl_string_array(env, argv[1], "lower", &lowers, &nlower) || !wl_string(env, argv[2], "upper", &upper) ||
      !wl_string(env, argv[3], "work", &work) || !wl_string_array(env, argv[4], "extra", &extra, NULL) ||
      !wl_uint32(env, argv[5], "attrFlags", &attr))
    return NULL;
  if (nlower == 0) return wl_throw_errno_detail(env, EINVAL, "fsconfig", target, "at least one lower layer");

  WL_AUTOCLOSE int fsfd = WL_RETRY(fsopen("overlay", FSOPEN_CLOEXEC));
  if (fsfd < 0) return wl_throw_errno(env, errno, "fsopen", "overlay");
  if (fsconfig(fsfd, FSCONFIG_SET_STRING, "source", "overlay", 0) != 0)
    return wl_throw_errno_detail(env, errno, "fsconfig", target, "source");

  if (fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", lowers[0], 0) == 0) {
    for (size_t i = 1; i < nlower; i++) {
      if (fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", lowers[i], 0) != 0) {
        int err = errno;
        char log[512];
        wl_fs_log(fsfd, log, sizeof log);
        return wl_throw_errno_detail(env, err, "fsconfig", lowers[i], log);
      }
    }
  } else if (errno == EINVAL) {
    char log[512];
    wl_fs_log(fsfd, log, sizeof log); /* drain "Unknown parameter" */
    if (!set_legacy_lowerdir(env, fsfd, lowers, target)) return NULL;
  } else {
    int err = errno;
    char log[512];
    wl_fs_log(fsfd, log, sizeof log);
    return wl_throw_errno_detail(env, err, "fsconfig", lowers[0], log);
  }

  /* An empty upper (and work) makes a read-only overlay of the lowers alone (the kernel wants two or more). */
  if (upper[0] != '\0') {
    size_t ulen = strlen(upper) + sizeof "upperdir=", wlen = strlen(work) + sizeof "workdir=";
    WL_AUTOFREE char *upper_opt = malloc(ulen);
    WL_AUTOFREE char *work_opt = malloc(wlen);
    if (upper_opt == NULL || work_opt == NULL) return wl_throw_errno(env, ENOMEM, "malloc", NULL);
    snprintf(upper_opt, ulen, "upperdir=%s", upper);
    snprintf(work_opt, wlen, "workdir=%s", work);
    if (!wl_fs_set(env, fsfd, upper_opt, target) || !wl_fs_set(env, fsfd, work_opt, target)) return NULL;
  }
  for (char **o = extra; *o != NULL; o++)
    if (!wl_fs_set(env, fsfd, *o, target)) return NULL;
  if (!wl_fs_attach(env, fsfd, target, attr)) return NULL;
  return wl_undefined(env);
}

bool wl_register_overlay(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"mountOverlay", js_mount_overlay}};
  return wl_export_fns(env, exports, fns, 1);
}
