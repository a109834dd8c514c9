/* Builds the sandbox plan from the JS options object, entirely before the clone. */
#include "sandbox.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static int cap_last_cap(void) {
  static int cached = -1;
  if (cached >= 0) return cached;
  WL_AUTOCLOSE int fd = WL_RETRY(open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return -1;
  char buf[16] = {0};
  ssize_t n = WL_RETRY(read(fd, buf, sizeof buf - 1));
  if (n <= 0) return -1;
  int v = atoi(buf);
  if (v <= 0 || v > 63) return -1;
  cached = v;
  return v;
}

static bool get_string(napi_env env, napi_value o, const char *key, char **out) {
  napi_value v;
  bool present;
  if (!wl_prop(env, o, key, &v, &present)) return false;
  return wl_string(env, v, key, out);
}

static bool get_strings(napi_env env, napi_value o, const char *key, char ***out, size_t *n) {
  napi_value v;
  bool present;
  if (!wl_prop(env, o, key, &v, &present)) return false;
  return wl_string_array(env, v, key, out, n);
}

static bool get_optional_fd(napi_env env, napi_value o, const char *key, int *out) {
  napi_value v;
  bool present;
  int32_t fd;
  *out = -1;
  if (!wl_prop(env, o, key, &v, &present)) return false;
  if (!present) return true;
  if (!wl_int32(env, v, key, &fd)) return false;
  if (fd < 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "fds must be >= 0"), false;
  *out = fd;
  return true;
}

/* Candidate exec paths for argv[0]: itself if it has a '/', else each PATH entry (from the world's env,
 * defaulting like execvp) joined with it. */
static bool exec_paths(char *const *argv, char *const *envp, char ***out) {
  const char *name = argv[0];
  if (strchr(name, '/') != NULL) {
    *out = calloc(2, sizeof(char *));
    if (*out == NULL || ((*out)[0] = strdup(name)) == NULL) return false;
    return true;
  }
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (char *const *e = envp; *e != NULL; e++)
    if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  size_t parts = 1;
  for (const char *c = path; *c; c++) parts += *c == ':';
  char **paths = calloc(parts + 1, sizeof(char *));
  *out = paths;
  if (paths == NULL) return false;
  size_t i = 0;
  for (const char *start = path;; i++) {
    const char *end = strchrnul(start, ':');
    size_t dlen = (size_t)(end - start);
    size_t len = dlen + 1 + strlen(name) + 1;
    char *full = malloc(len);
    if (full == NULL) return false;
    if (dlen == 0)
      snprintf(full, len, "%s", name);
    else
      snprintf(full, len, "%.*s/%s", (int)dlen, start, name);
    paths[i] = full;
    if (*end == '\0') break;
    start = end + 1;
  }
  return true;
}

bool wl_plan_build(napi_env env, napi_value o, wl_plan *p) {
  memset(p, 0, sizeof *p);
  p->stdout_fd = p->stderr_fd = -1;
  p->sync_r = p->sync_w = p->obs_r = p->obs_w = p->ack_r = p->ack_w = -1;
  p->out_r = p->out_w = p->err_r = p->err_w = p->null_fd = -1;
  p->userns_fd = p->mnt_template_fd = -1;

  napi_value v;
  bool present;
  size_t argc;
  if (!get_string(env, o, "rootfs", &p->rootfs) || !get_string(env, o, "cwd", &p->cwd) ||
      !get_string(env, o, "hostname", &p->hostname) || !get_strings(env, o, "argv", &p->argv, &argc) ||
      !get_strings(env, o, "env", &p->envp, NULL) || !get_strings(env, o, "cgroupProcs", &p->cgroup_procs, NULL))
    return false;
  if (argc == 0) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "argv must not be empty"), false;
  if (p->rootfs[0] != '/' || p->cwd[0] != '/')
    return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "rootfs and cwd must be absolute"), false;
  if (!wl_prop(env, o, "uid", &v, &present) || !wl_uint32(env, v, "uid", &p->uid)) return false;
  if (!wl_prop(env, o, "gid", &v, &present) || !wl_uint32(env, v, "gid", &p->gid)) return false;
  if (!wl_prop(env, o, "newNetwork", &v, &present) || !wl_bool(env, v, "newNetwork", &p->new_network)) return false;
  if (!wl_prop(env, o, "uidMap", &v, &present) || !wl_idmap_text(env, v, "uidMap", &p->uid_map)) return false;
  if (!wl_prop(env, o, "gidMap", &v, &present) || !wl_idmap_text(env, v, "gidMap", &p->gid_map)) return false;
  if (!get_optional_fd(env, o, "stdoutFd", &p->stdout_fd) || !get_optional_fd(env, o, "stderrFd", &p->stderr_fd) ||
      !get_optional_fd(env, o, "userns", &p->userns_fd) || !get_optional_fd(env, o, "mountTemplate", &p->mnt_template_fd))
    return false;
  if (!wl_prop(env, o, "probePaths", &v, &present)) return false;
  if (present) {
    if (!wl_string_array(env, v, "probePaths", &p->probe_paths, NULL)) return false;
  } else if ((p->probe_paths = calloc(1, sizeof(char *))) == NULL) {
    return wl_throw_errno(env, ENOMEM, "malloc", NULL), false;
  }
  return wl_plan_exec(env, p->argv, p->envp, &p->cap_last_cap, &p->exec_paths);
}

bool wl_plan_exec(napi_env env, char *const *argv, char *const *envp, int *cap, char ***paths) {
  *cap = cap_last_cap();
  if (*cap < 0) return wl_throw_errno(env, EIO, "read", "/proc/sys/kernel/cap_last_cap"), false;
  if (!exec_paths(argv, envp, paths)) return wl_throw_errno(env, ENOMEM, "malloc", NULL), false;
  return true;
}

int wl_make_pipe(int *r, int *w) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  *r = fds[0];
  *w = fds[1];
  return 0;
}

int wl_plan_open_fds(wl_plan *p, const char **syscall) {
  int err;
  *syscall = "pipe2";
  if ((err = wl_make_pipe(&p->sync_r, &p->sync_w)) || (err = wl_make_pipe(&p->obs_r, &p->obs_w)) ||
      (err = wl_make_pipe(&p->ack_r, &p->ack_w)))
    return err;
  if (p->stdout_fd < 0 && (err = wl_make_pipe(&p->out_r, &p->out_w))) return err;
  if (p->stderr_fd < 0 && (err = wl_make_pipe(&p->err_r, &p->err_w))) return err;
  *syscall = "open";
  p->null_fd = WL_RETRY(open("/dev/null", O_RDONLY | O_CLOEXEC));
  return p->null_fd < 0 ? errno : 0;
}

void wl_plan_free(wl_plan *p) {
  free(p->rootfs);
  free(p->cwd);
  free(p->hostname);
  wl_strv_free(p->argv);
  wl_strv_free(p->envp);
  wl_strv_free(p->exec_paths);
  free(p->uid_map);
  free(p->gid_map);
  wl_strv_free(p->cgroup_procs);
  wl_strv_free(p->probe_paths);
  int *fds[] = {&p->sync_r, &p->sync_w, &p->obs_r, &p->obs_w, &p->ack_r,
                &p->ack_w,  &p->out_r,  &p->out_w, &p->err_r, &p->err_w, &p->null_fd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) wl_close_fd(fds[i]);
  p->rootfs = p->cwd = p->hostname = p->uid_map = p->gid_map = NULL;
  p->argv = p->envp = p->exec_paths = p->cgroup_procs = p->probe_paths = NULL;
}
