/* cloneMount: open_tree(OPEN_TREE_CLONE[|AT_RECURSIVE]) + mount_setattr(attrs[, userns], [AT_RECURSIVE])
 * + move_mount. Behind both bindMount (attributes apply to every mount of the cloned tree, unlike a
 * MS_BIND|MS_RDONLY remount) and mountIdmapped (MOUNT_ATTR_IDMAP with a user namespace fd). */
#include "wl.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/mount.h>

static napi_value js_clone_mount(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  WL_AUTOFREE char *source = NULL;
  WL_AUTOFREE char *target = NULL;
  bool recursive;
  uint32_t attr_set;
  int32_t userns_fd;
  if (!wl_args(env, info, 5, argv) || !wl_string(env, argv[0], "source", &source) ||
      !wl_string(env, argv[1], "target", &target) || !wl_bool(env, argv[2], "recursive", &recursive) ||
      !wl_uint32(env, argv[3], "attrSet", &attr_set) || !wl_int32(env, argv[4], "usernsFd", &userns_fd))
    return NULL;
  unsigned rec = recursive ? AT_RECURSIVE : 0;
  WL_AUTOCLOSE int tree = WL_RETRY(open_tree(AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec));
  if (tree < 0) return wl_throw_errno(env, errno, "open_tree", source);
  if (attr_set != 0) {
    struct mount_attr attr = {.attr_set = attr_set};
    if (attr_set & MOUNT_ATTR_IDMAP) attr.userns_fd = (uint64_t)userns_fd;
    if (WL_RETRY(mount_setattr(tree, "", AT_EMPTY_PATH | rec, &attr, sizeof attr)) != 0)
      return wl_throw_errno(env, errno, "mount_setattr", source);
  }
  if (WL_RETRY(move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)) != 0)
    return wl_throw_errno(env, errno, "move_mount", target);
  return wl_undefined(env);
}

/* openDetachedTree: open_tree(OPEN_TREE_CLONE) of one mount, not attached anywhere and without the mounts
 * below it; the fd (close-on-exec) reaches what those mounts cover, as /proc/self/fd/<fd>/<path>. */
static napi_value js_open_detached_tree(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *source = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "source", &source)) return NULL;
  int tree = WL_RETRY(open_tree(AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (tree < 0) return wl_throw_errno(env, errno, "open_tree", source);
  napi_value out;
  if (napi_create_int32(env, tree, &out) != napi_ok) {
    close(tree);
    return NULL;
  }
  return out;
}

bool wl_register_mount_tree(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"cloneMount", js_clone_mount}, {"openDetachedTree", js_open_detached_tree}};
  return wl_export_fns(env, exports, fns, 2);
}
