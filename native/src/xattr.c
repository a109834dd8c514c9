/* lgetxattr / llistxattr (never following a trailing symlink): read overlayfs markers such as
 * trusted.overlay.opaque in an upper directory. A missing attribute is null, not an error. */
#include "wl.h"

#include <string.h>
#include <sys/xattr.h>

static napi_value js_lgetxattr(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  WL_AUTOFREE char *path = NULL;
  WL_AUTOFREE char *name = NULL;
  if (!wl_args(env, info, 2, argv) || !wl_string(env, argv[0], "path", &path) ||
      !wl_string(env, argv[1], "name", &name))
    return NULL;
  for (int attempt = 0; attempt < 8; attempt++) {
    ssize_t size = WL_RETRY(lgetxattr(path, name, NULL, 0));
    if (size < 0) {
      if (errno == ENODATA) {
        napi_value null;
        napi_get_null(env, &null);
        return null;
      }
      return wl_throw_errno(env, errno, "lgetxattr", path);
    }
    WL_AUTOFREE char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (buf == NULL) return wl_throw_errno(env, ENOMEM, "malloc", NULL);
    ssize_t got = WL_RETRY(lgetxattr(path, name, buf, (size_t)size));
    if (got < 0) {
      if (errno == ERANGE) continue; /* grew between the two calls */
      if (errno == ENODATA) {
        napi_value null;
        napi_get_null(env, &null);
        return null;
      }
      return wl_throw_errno(env, errno, "lgetxattr", path);
    }
    napi_value out;
    if (napi_create_buffer_copy(env, (size_t)got, buf, NULL, &out) != napi_ok) return NULL;
    return out;
  }
  return wl_throw_errno(env, ERANGE, "lgetxattr", path);
}

static napi_value js_llistxattr(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "path", &path)) return NULL;
  for (int attempt = 0; attempt < 8; attempt++) {
    ssize_t size = WL_RETRY(llistxattr(path, NULL, 0));
    if (size < 0) return wl_throw_errno(env, errno, "llistxattr", path);
    WL_AUTOFREE char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (buf == NULL) return wl_throw_errno(env, ENOMEM, "malloc", NULL);
    ssize_t got = WL_RETRY(llistxattr(path, buf, (size_t)size));
    if (got < 0) {
      if (errno == ERANGE) continue;
      return wl_throw_errno(env, errno, "llistxattr", path);
    }
    napi_value arr;
    if (napi_create_array(env, &arr) != napi_ok) return NULL;
    uint32_t i = 0;
    for (ssize_t off = 0; off < got;) {
      size_t len = strnlen(buf + off, (size_t)(got - off));
      napi_value name;
      if (len > 0 && napi_create_string_utf8(env, buf + off, len, &name) == napi_ok) napi_set_element(env, arr, i++, name);
      off += (ssize_t)len + 1;
    }
    return arr;
  }
  return wl_throw_errno(env, ERANGE, "llistxattr", path);
}

bool wl_register_xattr(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"lgetxattr", js_lgetxattr}, {"llistxattr", js_llistxattr}};
  return wl_export_fns(env, exports, fns, 2);
}
