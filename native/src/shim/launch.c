/* The shim's first step: clone the sandboxed child from the shim's own small address space. The agent's
 * intermediate process (native/src/sandbox_spawn.c) execs the shim with the plan and the child's
 * descriptors in their slots (sandbox_child.h). Cloned from the agent, the child held a copy of the agent's
 * whole address space (its heap, its keys) until its execve, and copying it cost the launch time that grew
 * with the agent's memory. Here the child copies only the shim.
 *
 * The clone is the one the addon makes (wl_sandbox_clone_args, wl_sandbox_child): same namespaces, same
 * handshake with the agent, which still writes the child's maps and cgroup files and gives the go-ahead.
 * With a mount template or into an existing user namespace the child is cloned by a joiner: the shim, a
 * child subreaper, forks a process that enters what the child is to be cloned from (joiner_enter), clones
 * the child and exits; the child is then the shim's, which opens a pidfd of it and stays in the agent's
 * namespaces. With a template the child's mount namespace is a copy of a private copy of it holding the
 * World's root filesystem (three mounts and the World's tree), not of every mount on the node. */
#include "launch.h"

#include "../sandbox_child.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static bool report(int fd, pid_t pid, const char *stage, int err) {
  wl_launch_report r;
  memset(&r, 0, sizeof r);
  r.pid = pid;
  r.err = err;
  if (stage != NULL) strncpy(r.stage, stage, sizeof r.stage - 1);
  return WL_RETRY(write(fd, &r, sizeof r)) == (ssize_t)sizeof r;
}

void shim_report_failure(const char *stage, int err) { report(WL_SLOT_REPORT, -1, stage, err); }

_Noreturn void shim_launch_fail(const char *stage, int err) {
  shim_report_failure(stage, err);
  _exit(126);
}

_Noreturn static void joiner_fail(int link, const char *stage, int err) {
  report(link, -1, stage, err);
  _exit(126);
}

/* Where a private copy of the mount template holds the World's root filesystem (mount_template.c). */
#define TEMPLATE_ROOTFS "/root"

/* The joiner's own steps before it clones the child (it is a fork of the shim: p is its copy). With a mount
 * template: the World's root filesystem cloned as a detached tree while still in the agent's namespace,
 * then a private copy of the template entered and the tree moved onto its /root, which becomes the
 * child's rootfs. With a user namespace: that namespace joined, last (it gives up our privileges outside
 * it). A failure is reported on `link` and exits. */
static void joiner_enter(wl_plan *p, int link) {
  if (p->mnt_template_fd >= 0) {
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, p->rootfs, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) joiner_fail(link, "open_tree", errno);
    if (syscall(SYS_setns, p->mnt_template_fd, CLONE_NEWNS) < 0) joiner_fail(link, "setns_mnt", errno);
    if (unshare(CLONE_NEWNS) < 0) joiner_fail(link, "unshare_mnt", errno);
    if (syscall(SYS_move_mount, tree, "", AT_FDCWD, TEMPLATE_ROOTFS, MOVE_MOUNT_F_EMPTY_PATH) < 0) joiner_fail(link, "move_mount", errno);
    close(tree);
    p->rootfs = (char *)TEMPLATE_ROOTFS;
  }
  if (p->userns_fd >= 0 && syscall(SYS_setns, p->userns_fd, CLONE_NEWUSER) < 0) joiner_fail(link, "setns_user", errno);
}

/* The child cloned by a joiner (see the file comment), reparented to us once the joiner has been reaped.
 * Returns its pid; a failure is reported and exits. */
static pid_t clone_by_joiner(wl_plan *p, struct clone_args *child_args) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) shim_launch_fail("subreaper", errno);
  int link[2];
  if (pipe2(link, O_CLOEXEC) < 0) shim_launch_fail("pipe2", errno);
  pid_t joiner = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
  if (joiner < 0) shim_launch_fail("clone", errno);
  if (joiner == 0) {
    close(link[0]);
    joiner_enter(p, link[1]);
    pid_t pid = (pid_t)syscall(SYS_clone3, child_args, sizeof *child_args);
    if (pid == 0) wl_sandbox_child(p);
    if (pid < 0) joiner_fail(link[1], "clone3", errno);
    if (!report(link[1], pid, NULL, 0)) kill(pid, SIGKILL);
    _exit(0);
  }
  close(link[1]);
  wl_launch_report r;
  memset(&r, 0, sizeof r);
  ssize_t n = WL_RETRY(read(link[0], &r, sizeof r));
  close(link[0]);
  int status = 0;
  while (waitpid(joiner, &status, __WALL) < 0 && errno == EINTR) {
  }
  /* Now reaped, the joiner's child (if any) is ours. */
  if (n != (ssize_t)sizeof r) shim_launch_fail("joiner", EPIPE);
  if (r.err != 0 || r.pid <= 0) {
    r.stage[sizeof r.stage - 1] = '\0';
    shim_launch_fail(r.err != 0 ? r.stage : "joiner", r.err != 0 ? r.err : EPIPE);
  }
  return r.pid;
}

static void free_plan(wl_plan *p, char *buf) {
  free(p->argv);
  free(p->envp);
  free(p->exec_paths);
  free(p->probe_paths);
  free(buf);
}

void shim_launch(void) {
  wl_plan p;
  char *buf = NULL;
  int err = wl_wire_decode(WL_SLOT_PLAN, &p, &buf);
  if (err != 0) shim_launch_fail("plan", err);
  /* The slots came through exec, so none is close-on-exec. The child relies on it for the two ends it
   * keeps until its own execve (the observation's write end and the go-ahead's read end). */
  for (int fd = WL_SLOT_PLAN; fd < WL_SLOT_END; fd++)
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF) shim_launch_fail("fcntl", errno);

  int pidfd = -1;
  struct clone_args args;
  wl_sandbox_clone_args(&p, &args, &pidfd);
  pid_t pid;
  if (p.userns_fd >= 0 || p.mnt_template_fd >= 0) {
    pid = clone_by_joiner(&p, &args);
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
      err = errno;
      kill(pid, SIGKILL);
      shim_launch_fail("pidfd_open", err);
    }
  } else {
    pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) wl_sandbox_child(&p);
    if (pid < 0) shim_launch_fail("clone3", errno);
  }
  free_plan(&p, buf);

  /* From here on: fd 3 the child's pidfd, 4 and 5 its output pipes (shim.c), nothing else. */
  int keep[3] = {pidfd, (p.out_r >= 0 ? WL_SLOT_OUT_R : -1), (p.err_r >= 0 ? WL_SLOT_ERR_R : -1)};
  for (int i = 0; i < 3; i++)
    if (keep[i] >= 0 && (keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 64)) < 0) {
      err = errno;
      syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
      shim_launch_fail("fcntl", err);
    }
  if (!report(WL_SLOT_REPORT, pid, NULL, 0)) { /* the agent gave up on this launch */
    syscall(SYS_pidfd_send_signal, keep[0], SIGKILL, NULL, 0);
    _exit(126);
  }
  syscall(SYS_close_range, 3U, 63U, 0U);
  for (int i = 0; i < 3; i++)
    if (keep[i] >= 0) {
      dup3(keep[i], 3 + i, O_CLOEXEC);
      close(keep[i]);
    }
}
