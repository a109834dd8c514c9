/* Errno-faithful JS errors, shaped like Node's fs errors (code, errno, syscall, path). The errno value is
 * captured by the caller right after the failing syscall and passed in; nothing here reads errno. */
#include "wl.h"

#include <stdio.h>
#include <string.h>

static napi_value make_error(napi_env env, int err, const char *syscall, const char *path, const char *detail) {
  const char *code = strerrorname_np(err);
  char codebuf[24];
  if (code == NULL) {
    snprintf(codebuf, sizeof codebuf, "E%d", err);
    code = codebuf;
  }
  char msg[1024];
  int n = snprintf(msg, sizeof msg, "%s: %s, %s", code, strerror(err), syscall);
  if (path != NULL && n > 0 && (size_t)n < sizeof msg) n += snprintf(msg + n, sizeof msg - n, " '%s'", path);
  if (detail != NULL && detail[0] != '\0' && n > 0 && (size_t)n < sizeof msg) snprintf(msg + n, sizeof msg - n, " (%s)", detail);

  napi_value jmsg, jcode, error;
  if (napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &jmsg) != napi_ok) return NULL;
  if (napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &jcode) != napi_ok) return NULL;
  if (napi_create_error(env, jcode, jmsg, &error) != napi_ok) return NULL;
  napi_set_named_property(env, error, "errno", wl_int(env, -(int64_t)err));
  napi_set_named_property(env, error, "syscall", wl_str(env, syscall));
  if (path != NULL) napi_set_named_property(env, error, "path", wl_str(env, path));
  return error;
}

napi_value wl_errno_error(napi_env env, int err, const char *syscall, const char *path) { return make_error(env, err, syscall, path, NULL); }

napi_value wl_throw_errno_detail(napi_env env, int err, const char *syscall, const char *path, const char *detail) {
  napi_value error = make_error(env, err, syscall, path, detail);
  if (error != NULL) napi_throw(env, error);
  return NULL;
}

napi_value wl_throw_errno(napi_env env, int err, const char *syscall, const char *path) {
  return wl_throw_errno_detail(env, err, syscall, path, NULL);
}

napi_value wl_throw_arg(napi_env env, const char *code, const char *msg) {
  napi_throw_type_error(env, code, msg);
  return NULL;
}
