/* uid_map / gid_map text for a new user namespace, and writing it (idmap.c). */
#include "wl.h"

#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define WL_MAX_MAP_ROWS 340

static bool refuse(napi_env env, const char *name, const char *why) {
  char msg[256];
  snprintf(msg, sizeof msg, "The \"%s\" argument is invalid: %s", name, why);
  napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE", msg);
  return false;
}

bool wl_idmap_text(napi_env env, napi_value arr, const char *name, char **out) {
  bool is_array;
  uint32_t n;
  *out = NULL;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array) return refuse(env, name, "must be an array");
  if (napi_get_array_length(env, arr, &n) != napi_ok) return false;
  if (n == 0 || n > WL_MAX_MAP_ROWS) return refuse(env, name, "must have 1..340 rows");
  size_t cap = (size_t)n * 40 + 1;
  char *text = malloc(cap);
  if (text == NULL) return wl_throw_errno(env, ENOMEM, "malloc", NULL), false;
  size_t len = 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value row, v;
    bool present;
    uint32_t field[3];
    static const char *keys[3] = {"inside", "outside", "count"};
    if (napi_get_element(env, arr, i, &row) != napi_ok) goto fail;
    for (int k = 0; k < 3; k++) {
      if (!wl_prop(env, row, keys[k], &v, &present)) goto fail;
      if (!present) {
        refuse(env, name, "every row needs inside, outside and count");
        goto fail;
      }
      if (!wl_uint32(env, v, keys[k], &field[k])) goto fail;
    }
    if (field[2] == 0 || (uint64_t)field[0] + field[2] > UINT32_MAX || (uint64_t)field[1] + field[2] > UINT32_MAX) {
      refuse(env, name, "a row's range is empty or overflows 32 bits");
      goto fail;
    }
    if (field[1] == 0) {
      refuse(env, name, "an outside range contains host id 0 (host root is never mapped)");
      goto fail;
    }
    len += (size_t)snprintf(text + len, cap - len, "%u %u %u\n", field[0], field[1], field[2]);
  }
  *out = text;
  return true;
fail:
  free(text);
  return false;
}

int wl_write_proc(int pid, const char *file, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
  WL_AUTOCLOSE int fd = WL_RETRY(open(path, O_WRONLY | O_CLOEXEC));
  if (fd < 0) return errno;
  size_t len = strlen(text);
  ssize_t n = WL_RETRY(write(fd, text, len));
  if (n < 0) return errno;
  if ((size_t)n != len) return EIO;
  return 0;
}

void wl_block_all_signals(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
}
