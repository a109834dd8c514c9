/* statx(2) with STATX_BASIC_STATS|STATX_MNT_ID, returned as a plain object (see native/types.ts Statx). */
#include "wl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000 /* linux/stat.h, since 5.8 */
#endif

static const char *type_name(uint16_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "file";
    case S_IFDIR: return "dir";
    case S_IFLNK: return "symlink";
    case S_IFCHR: return "chr";
    case S_IFBLK: return "blk";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "sock";
    default: return "unknown";
  }
}

static napi_value u64_number_or_bigint(napi_env env, uint64_t v) {
  napi_value r;
  if (v <= 9007199254740991ULL)
    napi_create_double(env, (double)v, &r);
  else
    napi_create_bigint_uint64(env, v, &r);
  return r;
}

static napi_value bigint_u64(napi_env env, uint64_t v) {
  napi_value r;
  napi_create_bigint_uint64(env, v, &r);
  return r;
}

static napi_value bigint_i64(napi_env env, int64_t v) {
  napi_value r;
  napi_create_bigint_int64(env, v, &r);
  return r;
}

static napi_value js_statx(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t dirfd, flags;
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 3, argv) || !wl_int32(env, argv[0], "dirfd", &dirfd) ||
      !wl_string(env, argv[1], "path", &path) || !wl_int32(env, argv[2], "flags", &flags))
    return NULL;
  struct statx sx;
  if (WL_RETRY(statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_MNT_ID, &sx)) != 0)
    return wl_throw_errno(env, errno, "statx", path);

  napi_value o;
  if (napi_create_object(env, &o) != napi_ok) return NULL;
  napi_set_named_property(env, o, "type", wl_str(env, type_name(sx.stx_mode)));
  napi_set_named_property(env, o, "mode", wl_int(env, sx.stx_mode));
  napi_set_named_property(env, o, "uid", wl_int(env, sx.stx_uid));
  napi_set_named_property(env, o, "gid", wl_int(env, sx.stx_gid));
  napi_set_named_property(env, o, "size", u64_number_or_bigint(env, sx.stx_size));
  napi_set_named_property(env, o, "nlink", wl_int(env, sx.stx_nlink));
  napi_set_named_property(env, o, "ino", bigint_u64(env, sx.stx_ino));
  napi_set_named_property(env, o, "devMajor", wl_int(env, sx.stx_dev_major));
  napi_set_named_property(env, o, "devMinor", wl_int(env, sx.stx_dev_minor));
  napi_set_named_property(env, o, "rdevMajor", wl_int(env, sx.stx_rdev_major));
  napi_set_named_property(env, o, "rdevMinor", wl_int(env, sx.stx_rdev_minor));
  napi_set_named_property(env, o, "mntId", u64_number_or_bigint(env, (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0));
  /* Whether the path is the root of a mount; null when the kernel does not say (no bit in the mask). */
  napi_value mount_root;
  if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
    napi_get_boolean(env, (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0, &mount_root);
  else
    napi_get_null(env, &mount_root);
  napi_set_named_property(env, o, "mountRoot", mount_root);
  napi_set_named_property(env, o, "mtimeNs",
                          bigint_i64(env, (int64_t)sx.stx_mtime.tv_sec * 1000000000LL + sx.stx_mtime.tv_nsec));
  return o;
}

bool wl_register_statx(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"statx", js_statx}};
  return wl_export_fns(env, exports, fns, 1);
}
