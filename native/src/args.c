/* Argument conversion. TypeScript validates first (native/validate.ts); these checks are the last line
 * and throw TypeError with Node-style codes rather than trusting JS. */
#include "wl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool bad(napi_env env, const char *name, const char *want) {
  char msg[256];
  snprintf(msg, sizeof msg, "The \"%s\" argument must be %s", name, want);
  wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", msg);
  return false;
}

bool wl_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return false;
  if (argc < want) {
    wl_throw_arg(env, "ERR_MISSING_ARGS", "missing arguments");
    return false;
  }
  return true;
}

static bool number(napi_env env, napi_value v, const char *name, double *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return bad(env, name, "of type number");
  if (napi_get_value_double(env, v, out) != napi_ok || !isfinite(*out) || *out != floor(*out))
    return bad(env, name, "an integer");
  return true;
}

bool wl_int32(napi_env env, napi_value v, const char *name, int32_t *out) {
  double d;
  if (!number(env, v, name, &d)) return false;
  if (d < INT32_MIN || d > INT32_MAX) return bad(env, name, "a 32-bit signed integer");
  *out = (int32_t)d;
  return true;
}

bool wl_uint32(napi_env env, napi_value v, const char *name, uint32_t *out) {
  double d;
  if (!number(env, v, name, &d)) return false;
  if (d < 0 || d > UINT32_MAX) return bad(env, name, "a 32-bit unsigned integer");
  *out = (uint32_t)d;
  return true;
}

bool wl_uint64(napi_env env, napi_value v, const char *name, uint64_t *out) {
  double d;
  if (!number(env, v, name, &d)) return false;
  if (d < 0 || d > 9007199254740991.0) return bad(env, name, "a non-negative safe integer");
  *out = (uint64_t)d;
  return true;
}

bool wl_bool(napi_env env, napi_value v, const char *name, bool *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_boolean) return bad(env, name, "of type boolean");
  return napi_get_value_bool(env, v, out) == napi_ok;
}

bool wl_string(napi_env env, napi_value v, const char *name, char **out) {
  napi_valuetype t;
  size_t len;
  *out = NULL;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return bad(env, name, "of type string");
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return false;
  char *s = malloc(len + 1);
  if (s == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return false;
  }
  if (napi_get_value_string_utf8(env, v, s, len + 1, &len) != napi_ok) {
    free(s);
    return false;
  }
  if (strlen(s) != len) {
    free(s);
    return bad(env, name, "a string without NUL bytes");
  }
  *out = s;
  return true;
}

bool wl_string_or_null(napi_env env, napi_value v, const char *name, char **out) {
  napi_valuetype t;
  *out = NULL;
  if (napi_typeof(env, v, &t) != napi_ok) return false;
  if (t == napi_null || t == napi_undefined) return true;
  return wl_string(env, v, name, out);
}

void wl_strv_free(char **v) {
  if (v == NULL) return;
  for (char **p = v; *p != NULL; p++) free(*p);
  free(v);
}

bool wl_string_array(napi_env env, napi_value v, const char *name, char ***out, size_t *count) {
  bool is_array;
  uint32_t n;
  *out = NULL;
  if (napi_is_array(env, v, &is_array) != napi_ok || !is_array) return bad(env, name, "an array of strings");
  if (napi_get_array_length(env, v, &n) != napi_ok) return false;
  char **vec = calloc((size_t)n + 1, sizeof *vec);
  if (vec == NULL) {
    napi_throw_error(env, "ENOMEM", "out of memory");
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value el;
    if (napi_get_element(env, v, i, &el) != napi_ok || !wl_string(env, el, name, &vec[i])) {
      wl_strv_free(vec);
      return false;
    }
  }
  *out = vec;
  if (count != NULL) *count = n;
  return true;
}

bool wl_prop(napi_env env, napi_value obj, const char *key, napi_value *out, bool *present) {
  napi_valuetype t;
  if (napi_typeof(env, obj, &t) != napi_ok || t != napi_object) return bad(env, "options", "an object");
  if (napi_get_named_property(env, obj, key, out) != napi_ok) return false;
  if (napi_typeof(env, *out, &t) != napi_ok) return false;
  *present = t != napi_undefined;
  return true;
}

napi_value wl_undefined(napi_env env) {
  napi_value v;
  napi_get_undefined(env, &v);
  return v;
}

napi_value wl_int(napi_env env, int64_t v) {
  napi_value r;
  napi_create_int64(env, v, &r);
  return r;
}

napi_value wl_str(napi_env env, const char *s) {
  napi_value r;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &r);
  return r;
}

bool wl_export_fns(napi_env env, napi_value exports, const wl_fn *fns, size_t n) {
  for (size_t i = 0; i < n; i++) {
    napi_value f;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &f) != napi_ok) return false;
    if (napi_set_named_property(env, exports, fns[i].name, f) != napi_ok) return false;
  }
  return true;
}
