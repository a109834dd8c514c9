/* Module entry: every source file registers its own functions. */
#include "wl.h"

static napi_value init(napi_env env, napi_value exports) {
  bool ok = wl_register_constants(env, exports) && wl_register_openat2(env, exports) &&
            wl_register_statx(env, exports) && wl_register_rename(env, exports) &&
            wl_register_fsync(env, exports) && wl_register_loop(env, exports) && wl_register_xattr(env, exports) &&
            wl_register_mount(env, exports) && wl_register_mount_tree(env, exports) &&
            wl_register_overlay(env, exports) && wl_register_fsmount(env, exports) &&
            wl_register_userns(env, exports) && wl_register_mount_template(env, exports) && wl_register_sandbox(env, exports) &&
            wl_register_netns(env, exports) && wl_register_enter(env, exports) &&
            wl_register_fanotify(env, exports);
  return ok ? exports : NULL;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
