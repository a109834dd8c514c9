/* The sandboxed child and what it is cloned from, without N-API: compiled into the addon and into the
 * shim (native/src/shim/), which clones the child of a supervised spawn from its own small address space.
 * The plan holds every string and buffer the child needs before the clone, so the child never allocates. */
#ifndef WL_SANDBOX_CHILD_H
#define WL_SANDBOX_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "wl_sys.h"

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
  /* A mount namespace the child's is copied from instead of its parent's (createMountTemplate; the caller's,
   * not owned); -1: the parent's. Supervised spawns only (launch.c). */
  int mnt_template_fd;
} wl_plan;

static inline void wl_close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

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

/* The clone3 arguments of the sandboxed child, whoever clones it: one set of namespaces (a new user
 * namespace unless p->userns_fd), a pidfd into *pidfd, SIGCHLD to its parent. */
struct clone_args;
void wl_sandbox_clone_args(const wl_plan *p, struct clone_args *args, int *pidfd);

/* ---- a supervised spawn: the addon's intermediate process hands the plan to the shim ----
 * The intermediate execs the shim with these descriptors in place (absent ones closed), 0-2 /dev/null: */
enum {
  WL_SLOT_PLAN = 3, /* a sealed memfd holding the plan (wl_wire_encode) */
  WL_SLOT_REPORT,   /* where the shim writes its wl_launch_report */
  WL_SLOT_NULL,
  WL_SLOT_SYNC_R,
  WL_SLOT_OBS_W,
  WL_SLOT_ACK_R,
  WL_SLOT_OUT_W,
  WL_SLOT_ERR_W,
  WL_SLOT_OUT_R,
  WL_SLOT_ERR_R,
  WL_SLOT_STDOUT,
  WL_SLOT_STDERR,
  WL_SLOT_USERNS,
  WL_SLOT_MNT_TEMPLATE,
  WL_SLOT_END
};

/* What the shim (or the intermediate, if it fails before the exec) reports to the agent: the child's pid,
 * or the errno of the step that failed. */
typedef struct {
  int32_t pid;
  int32_t err;
  char stage[56];
} wl_launch_report;

/* The descriptor each slot carries for p (-1 where the plan has none; the plan and report slots are the
 * caller's). Async-signal-safe: the intermediate calls it. */
void wl_plan_slot_fds(const wl_plan *p, int fds[WL_SLOT_END]);
/* Writes what the child needs of p (strings, ids, which slots are present) into a new sealed memfd;
 * returns it (O_CLOEXEC) or -1 with errno. Called by the agent before the intermediate is cloned. */
int wl_wire_encode(const wl_plan *p);
/* In the shim: reads the plan from fd into *p, whose fds are the slots present (else -1; the agent's
 * ends are -1). The strings point into *buf (malloc'd, free it after). 0 or an errno. */
int wl_wire_decode(int fd, wl_plan *p, char **buf);

#endif
