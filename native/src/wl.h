/* Shared declarations of the worldline addon: argument helpers, errno-faithful errors, cleanup helpers
 * and the per-function registration entry points. */
#ifndef WL_H
#define WL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define NAPI_VERSION 8
#include <node_api.h>

/* ---- cleanup attributes (free / close on every path) ---- */
static inline void wl_freep(void *p) { free(*(void **)p); }
static inline void wl_closep(int *fd) {
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
  }
}
#define WL_AUTOFREE __attribute__((cleanup(wl_freep)))
#define WL_AUTOCLOSE __attribute__((cleanup(wl_closep)))

#include "wl_sys.h" /* WL_RETRY */

/* ---- errors (errors.c) ---- */
/* Throws an Error like Node's fs errors: message "CODE: strerror, syscall 'path'", code "ENOENT",
 * errno -2 (negative, as Node/libuv report it), syscall, and path when given. Returns NULL. */
napi_value wl_throw_errno(napi_env env, int err, const char *syscall, const char *path);
/* Same, with extra detail appended to the message (e.g. the filesystem's own fsconfig log line). */
napi_value wl_throw_errno_detail(napi_env env, int err, const char *syscall, const char *path, const char *detail);
/* The same Error, returned rather than thrown (a promise's rejection); NULL when it could not be made. */
napi_value wl_errno_error(napi_env env, int err, const char *syscall, const char *path);
/* Throws a TypeError with code ERR_INVALID_ARG_TYPE / ERR_INVALID_ARG_VALUE. Returns NULL. */
napi_value wl_throw_arg(napi_env env, const char *code, const char *msg);

/* ---- arguments (args.c); each throws and returns false on a bad value ---- */
bool wl_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv);
bool wl_int32(napi_env env, napi_value v, const char *name, int32_t *out);
bool wl_uint32(napi_env env, napi_value v, const char *name, uint32_t *out);
bool wl_uint64(napi_env env, napi_value v, const char *name, uint64_t *out);
bool wl_bool(napi_env env, napi_value v, const char *name, bool *out);
/* malloc'd NUL-terminated copy; rejects embedded NUL. */
bool wl_string(napi_env env, napi_value v, const char *name, char **out);
/* As wl_string, but null/undefined give *out = NULL. */
bool wl_string_or_null(napi_env env, napi_value v, const char *name, char **out);
/* malloc'd NULL-terminated array of malloc'd strings; free with wl_strv_free. */
bool wl_string_array(napi_env env, napi_value v, const char *name, char ***out, size_t *count);
void wl_strv_free(char **v);
static inline void wl_strvp(char ***v) { wl_strv_free(*v); }
/* Property lookup: *present false when missing or undefined. */
bool wl_prop(napi_env env, napi_value obj, const char *key, napi_value *out, bool *present);

napi_value wl_undefined(napi_env env);
napi_value wl_int(napi_env env, int64_t v);
napi_value wl_str(napi_env env, const char *s);

/* ---- registration: each source file exports its functions onto `exports` ---- */
typedef struct {
  const char *name;
  napi_callback cb;
} wl_fn;
bool wl_export_fns(napi_env env, napi_value exports, const wl_fn *fns, size_t n);

bool wl_register_constants(napi_env env, napi_value exports);
bool wl_register_openat2(napi_env env, napi_value exports);
bool wl_register_statx(napi_env env, napi_value exports);
bool wl_register_rename(napi_env env, napi_value exports);
bool wl_register_fsync(napi_env env, napi_value exports);
bool wl_register_loop(napi_env env, napi_value exports);
bool wl_register_xattr(napi_env env, napi_value exports);
bool wl_register_mount(napi_env env, napi_value exports);
bool wl_register_mount_tree(napi_env env, napi_value exports);
bool wl_register_overlay(napi_env env, napi_value exports);
bool wl_register_fsmount(napi_env env, napi_value exports);

/* New mount API helpers (fscontext.c). Each throws a JS error and returns false on failure. */
bool wl_fs_set(napi_env env, int fsfd, const char *option, const char *target);
bool wl_fs_attach(napi_env env, int fsfd, const char *target, uint32_t attr_flags);
/* Copies the filesystem's last logged message (the read(2) side of an fs context) into buf. */
void wl_fs_log(int fsfd, char *buf, size_t size);
bool wl_register_userns(napi_env env, napi_value exports);
bool wl_register_mount_template(napi_env env, napi_value exports);
bool wl_register_sandbox(napi_env env, napi_value exports);
bool wl_register_netns(napi_env env, napi_value exports);
bool wl_register_enter(napi_env env, napi_value exports);
bool wl_register_fanotify(napi_env env, napi_value exports);

/* Walk fallback for RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS (beneath_fallback.c); returns fd or -1/errno. */
int wl_open_beneath_walk(int rootfd, const char *path, int flags, mode_t mode);

/* Id maps (idmap.c): builds the "inside outside count\n" text of a JS IdMap[] for /proc/<pid>/{uid,gid}_map.
 * Refuses (throws) empty maps, more than 340 rows, overflowing ranges and any outside range containing host
 * id 0: no function of this addon maps host root into a namespace. */
bool wl_idmap_text(napi_env env, napi_value arr, const char *name, char **out);
/* Opens /proc/<pid>/<file> O_WRONLY|O_CLOEXEC and writes text in one write(2). Returns 0 or an errno. */
int wl_write_proc(int pid, const char *file, const char *text);
/* Blocks every signal in the calling thread; restores with pthread_sigmask(SIG_SETMASK, old, NULL). */
#include <signal.h>
void wl_block_all_signals(sigset_t *old);

#endif
