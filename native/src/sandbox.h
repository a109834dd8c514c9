/* The sandboxed spawn: the plan prepared in the parent (every string and buffer the child needs exists
 * before the clone, so the child never allocates), the child's setup sequence, its observation frame and
 * the exit waiter. */
#ifndef WL_SANDBOX_H
#define WL_SANDBOX_H

#include "wl.h"
#include "sandbox_child.h"

/* Reads the options object into the plan (throws on a bad value). The plan owns what it holds. */
bool wl_plan_build(napi_env env, napi_value opts, wl_plan *p);
/* Creates the pipes and /dev/null fd (all O_CLOEXEC). Returns 0 or an errno, *syscall naming the call. */
int wl_plan_open_fds(wl_plan *p, const char **syscall);
/* Frees every string and closes every fd the plan still holds. */
void wl_plan_free(wl_plan *p);

/* Plan helpers (sandbox_plan.c). wl_plan_exec reads /proc/sys/kernel/cap_last_cap and the candidate
 * exec paths of argv[0] under envp's PATH (throws and returns false on failure). wl_make_pipe: an
 * O_CLOEXEC pipe, 0 or an errno. */
bool wl_plan_exec(napi_env env, char *const *argv, char *const *envp, int *cap_last_cap, char ***exec_paths);
int wl_make_pipe(int *r, int *w);

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
