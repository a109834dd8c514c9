/* Flag constants, taken from the system headers so TypeScript never hard-codes kernel ABI numbers. */
#include "wl.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define C(name) {#name, (int64_t)(name)}

static const struct {
  const char *name;
  int64_t value;
} constants[] = {
    C(O_RDONLY), C(O_WRONLY), C(O_RDWR), C(O_CREAT), C(O_EXCL), C(O_TRUNC), C(O_APPEND), C(O_NONBLOCK),
    C(O_PATH), C(O_DIRECTORY), C(O_NOFOLLOW), C(O_CLOEXEC), C(O_NOCTTY), C(O_TMPFILE),
    C(RESOLVE_NO_XDEV), C(RESOLVE_NO_MAGICLINKS), C(RESOLVE_NO_SYMLINKS), C(RESOLVE_BENEATH),
    C(RESOLVE_IN_ROOT), C(RESOLVE_CACHED),
    C(AT_FDCWD), C(AT_SYMLINK_NOFOLLOW), C(AT_EMPTY_PATH), C(AT_NO_AUTOMOUNT), C(AT_RECURSIVE),
    C(AT_STATX_SYNC_AS_STAT), C(AT_STATX_FORCE_SYNC), C(AT_STATX_DONT_SYNC),
    C(RENAME_NOREPLACE), C(RENAME_EXCHANGE), C(RENAME_WHITEOUT),
    C(MNT_FORCE), C(MNT_DETACH), C(MNT_EXPIRE), C(UMOUNT_NOFOLLOW),
    C(MS_RDONLY), C(MS_NOSUID), C(MS_NODEV), C(MS_NOEXEC), C(MS_REMOUNT), C(MS_BIND), C(MS_MOVE), C(MS_REC),
    C(MS_PRIVATE), C(MS_SLAVE), C(MS_SHARED), C(MS_UNBINDABLE), C(MS_NOSYMFOLLOW), C(MS_NOATIME),
    C(MS_RELATIME), C(MS_STRICTATIME), C(MS_SILENT),
    C(MOUNT_ATTR_RDONLY), C(MOUNT_ATTR_NOSUID), C(MOUNT_ATTR_NODEV), C(MOUNT_ATTR_NOEXEC),
    C(MOUNT_ATTR_NOATIME), C(MOUNT_ATTR_NODIRATIME), C(MOUNT_ATTR_IDMAP), C(MOUNT_ATTR_NOSYMFOLLOW),
};

bool wl_register_constants(napi_env env, napi_value exports) {
  napi_value obj;
  if (napi_create_object(env, &obj) != napi_ok) return false;
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
    if (napi_set_named_property(env, obj, constants[i].name, wl_int(env, constants[i].value)) != napi_ok) return false;
  if (napi_object_freeze(env, obj) != napi_ok) return false;
  return napi_set_named_property(env, exports, "constants", obj) == napi_ok;
}
