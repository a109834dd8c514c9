/* Shared steps of the fsopen/fsconfig/fsmount/move_mount sequence. A failed fsconfig is reported with the
 * filesystem's own log line (read from the context fd) so "EINVAL" comes with the kernel's reason. */
#include "wl.h"

#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

void wl_fs_log(int fsfd, char *buf, size_t size) {
  buf[0] = '\0';
  char line[512];
  for (int i = 0; i < 16; i++) { /* keep the last message; the queue holds at most a few */
    ssize_t n = read(fsfd, line, sizeof line - 1);
    if (n <= 0) break;
    line[n] = '\0';
    snprintf(buf, size, "%s", line);
  }
}

bool wl_fs_set(napi_env env, int fsfd, const char *option, const char *target) {
  char key[256];
  const char *eq = strchr(option, '=');
  size_t klen = eq ? (size_t)(eq - option) : strlen(option);
  if (klen == 0 || klen >= sizeof key) {
    wl_throw_errno_detail(env, EINVAL, "fsconfig", target, option);
    return false;
  }
  memcpy(key, option, klen);
  key[klen] = '\0';
  int rc = eq ? fsconfig(fsfd, FSCONFIG_SET_STRING, key, eq + 1, 0) : fsconfig(fsfd, FSCONFIG_SET_FLAG, key, NULL, 0);
  if (rc != 0) {
    int err = errno;
    char log[512];
    wl_fs_log(fsfd, log, sizeof log);
    char detail[768];
    snprintf(detail, sizeof detail, "%s%s%s", key, log[0] ? ": " : "", log);
    wl_throw_errno_detail(env, err, "fsconfig", target, detail);
    return false;
  }
  return true;
}

bool wl_fs_attach(napi_env env, int fsfd, const char *target, uint32_t attr_flags) {
  if (WL_RETRY(fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) != 0) {
    int err = errno;
    char log[512];
    wl_fs_log(fsfd, log, sizeof log);
    wl_throw_errno_detail(env, err, "fsconfig", target, log);
    return false;
  }
  WL_AUTOCLOSE int mnt = WL_RETRY(fsmount(fsfd, FSMOUNT_CLOEXEC, attr_flags));
  if (mnt < 0) {
    wl_throw_errno(env, errno, "fsmount", target);
    return false;
  }
  if (WL_RETRY(move_mount(mnt, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)) != 0) {
    wl_throw_errno(env, errno, "move_mount", target);
    return false;
  }
  return true;
}
