/* The sandboxed spawn: the plan prepared in the parent (every string and buffer the child needs exists
 * before the clone, so the child never allocates), the child's setup sequence, its observation frame and
 * the exit waiter. */
#ifndef WL_SANDBOX_H
#define WL_SANDBOX_H

#include "wl.h"

typedef struct {
  /* strings (malloc'd in the parent) */
  char *rootfs;
  char *cwd;
  char *hostname;
  char **argv;       /* NULL-terminated */
  char **envp;       /* NULL-terminated */
  char **exec_paths; /* candidate paths for argv[0], PATH-resolved in the parent; NULL-terminated */
  char *uid_map;
  char *gid_map;
  char **cgroup_procs; /* NULL-terminated */
  char **probe_paths;  /* NULL-terminated; reported present/absent in the observation frame */
  uint32_t uid;
  uint32_t gid;
  bool new_network;
  int cap_last_cap;
  /* fds; -1 when absent. The *_child ends are closed in the parent after the clone. */
  int stdout_fd; /* caller-provided, not owned */
  int stderr_fd; /* caller-provided, not owned */
  int sync_r, sync_w;
  int obs_r, obs_w;
  int ack_r, ack_w;
  int out_r, out_w;
  int err_r, err_w;
  int null_fd;
  /* An existing user namespace the child is cloned into (caller-provided, not owned); -1: a new one,
   * whose maps the parent writes. */
  int userns_fd;
} wl_plan;

/* Reads the options object into the plan (throws on a bad value). The plan owns what it holds. */
bool wl_plan_build(napi_env env, napi_value opts, wl_plan *p);
/* Creates the pipes and /dev/null fd (all O_CLOEXEC). Returns 0 or an errno, *syscall naming the call. */
int wl_plan_open_fds(wl_plan *p, const char **syscall);
/* Frees every string and closes every fd the plan still holds. */
void wl_plan_free(wl_plan *p);

/* Child side (sandbox_child.c): never returns. */
_Noreturn void wl_sandbox_child(const wl_plan *p);

/* Observation helper (sandbox_observe.c), async-signal-safe. */
void wl_observe_write_error(int fd, const char *stage, int err);
/* Writes the observation frame, envp (what execve will get) included, and for each of probe_paths
 * (NULL: none) whether it exists as the workload sees it; returns 0 or an errno. */
int wl_observe_write_frame(int fd, char *const *envp, char *const *probe_paths);

/* Shared child steps (sandbox_creds.c): each failure writes an error record on fail_fd and exits. */
_Noreturn void wl_child_fail(int fail_fd, const char *stage, int err);
void wl_reset_signals(void);
/* No groups, the given ids, no capabilities in any set, locked securebits, no_new_privs, a fresh session
 * keyring, parent-death SIGKILL (last: any credential change clears it). */
void wl_drop_privileges(int fail_fd, uint32_t uid, uint32_t gid, int cap_last_cap);
/* dup2 of source[0..2] onto 0..2 (sources on 0..2 moved out of the way first). */
void wl_child_stdio(int fail_fd, const int source[3]);
/* execve over the candidate paths; an error record "execve" and exit 127 when none runs. */
_Noreturn void wl_child_exec(int fail_fd, char *const *exec_paths, char *const *argv, char *const *envp);

/* Plan helpers (sandbox_plan.c). wl_plan_exec reads /proc/sys/kernel/cap_last_cap and the candidate
 * exec paths of argv[0] under envp's PATH (throws and returns false on failure). wl_make_pipe: an
 * O_CLOEXEC pipe, 0 or an errno. */
bool wl_plan_exec(napi_env env, char *const *argv, char *const *envp, int *cap_last_cap, char ***exec_paths);
int wl_make_pipe(int *r, int *w);
static inline void wl_close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Process helpers (sandbox_process.c). */
struct clone_args;
/* Arguments of a plain clone3 (no new namespace) that returns a pidfd into *pidfd and sends SIGCHLD. */
void wl_pidfd_clone_args(struct clone_args *args, int *pidfd);
/* clone3 with every signal blocked in the caller; the child runs child(arg), which never returns. */
pid_t wl_clone_blocked(struct clone_args *args, void (*child)(const void *), const void *arg, int *clone_err);
/* Writes `line` (a pid and a newline, wl_pid_line) into each cgroup.procs file; 0 or an errno, *failed
 * naming the file. Async-signal-safe. */
int wl_write_cgroup_procs(char *const *procs, const char *line, const char **failed);
void wl_pid_line(char buf[24], long pid);
void wl_reap(int pidfd);
void wl_kill_and_reap(int pidfd);

/* Exit waiter (sandbox_wait.c): a dedicated thread waits on pidfd (owned, closed by the thread) and calls
 * on_exit on the JS thread. Returns false (JS error thrown) if it could not start. */
bool wl_start_waiter(napi_env env, napi_value on_exit, int pidfd);

#endif
