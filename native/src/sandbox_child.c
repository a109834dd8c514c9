/* The child of spawnSandbox, from clone3 to execve. A supervised spawn clones it from the shim (a small
 * single-threaded process); an unsupervised one from the agent, so it may run in a copy of a
 * multi-threaded process and uses only async-signal-safe calls and raw syscalls (glibc's setuid family
 * would try to signal threads that do not exist here); it never allocates. Each failure writes an error record (stage + errno) to the
 * observation pipe and exits 126; a missing go-ahead exits 125; a failed execve exits 127. */
#include "sandbox_child.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>

void wl_sandbox_clone_args(const wl_plan *p, struct clone_args *args, int *pidfd) {
  memset(args, 0, sizeof *args);
  args->flags = (p->userns_fd >= 0 ? 0 : CLONE_NEWUSER) | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_PIDFD | (p->new_network ? CLONE_NEWNET : 0);
  args->pidfd = (uint64_t)(uintptr_t)pidfd;
  args->exit_signal = SIGCHLD;
}

static int obs_fd = -1;

_Noreturn static void fail(const char *stage, int err) { wl_child_fail(obs_fd, stage, err); }

#define STEP(stage, expr)                                                                                  \
  do {                                                                                                     \
    if (WL_RETRY(expr) < 0) fail(stage, errno);                                                            \
  } while (0)

static void wait_for_parent(int fd) {
  char c = 0;
  ssize_t n = WL_RETRY(read(fd, &c, 1));
  if (n != 1 || c != 'S') _exit(125); /* the parent gave up (it kills us too) */
  close(fd);
}

static int write_all(int fd, const char *s, size_t len) {
  while (len > 0) {
    ssize_t n = WL_RETRY(write(fd, s, len));
    if (n < 0) return -1;
    s += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Limits this user namespace (and so every descendant) to zero further user namespaces. Only a holder of
 * CAP_SYS_RESOURCE in this namespace may raise it again, and the workload holds no capability. */
static void forbid_nested_userns(void) {
  int fd = WL_RETRY(open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC));
  if (fd < 0) fail("max_user_namespaces", errno);
  if (write_all(fd, "0\n", 2) < 0) fail("max_user_namespaces", errno);
  close(fd);
}

static void loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) fail("loopback", errno);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) fail("loopback", errno);
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) fail("loopback", errno);
  close(s);
}

static void drop_privileges(const wl_plan *p) { wl_drop_privileges(obs_fd, p->uid, p->gid, p->cap_last_cap); }

/* stdin = /dev/null, stdout/stderr = the chosen fds. */
static void setup_stdio(const wl_plan *p) {
  const int src[3] = {p->null_fd, p->stdout_fd >= 0 ? p->stdout_fd : p->out_w, p->stderr_fd >= 0 ? p->stderr_fd : p->err_w};
  wl_child_stdio(obs_fd, src);
}

/* Closes every fd >= 3 except the observation write end and the ack read end (both O_CLOEXEC, so they
 * vanish at execve). */
static void close_other_fds(int keep_a, int keep_b) {
  int lo = keep_a < keep_b ? keep_a : keep_b;
  int hi = keep_a < keep_b ? keep_b : keep_a;
  if (lo > 3) STEP("close_range", syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0U));
  if (hi > lo + 1) STEP("close_range", syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U));
  STEP("close_range", syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U));
}

_Noreturn void wl_sandbox_child(const wl_plan *p) {
  obs_fd = p->obs_w;
  wl_reset_signals();
  close(p->sync_w);
  close(p->obs_r);
  close(p->ack_w);
  wait_for_parent(p->sync_r); /* maps written, cgroup.procs joined */

  /* Its own session and process group, so no controlling terminal of the node-agent's: with one, the
   * workload could read what is typed there or push its own input into it (TIOCSTI, allowed to a process
   * whose controlling terminal it is), to be run by the operator's shell after the agent exits. */
  STEP("setsid", setsid());

  /* The cgroup namespace is rooted here, after the parent moved us into the world's cgroups. */
  STEP("unshare_cgroupns", unshare(CLONE_NEWCGROUP));
  STEP("make_rprivate", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
  STEP("bind_rootfs", mount(p->rootfs, p->rootfs, NULL, MS_BIND | MS_REC, NULL));
  STEP("chdir_rootfs", chdir(p->rootfs));
  /* proc is mounted while the host's /proc is still in this mount namespace: the kernel lets a user
   * namespace mount proc only where a fully visible proc already is. */
  STEP("mount_proc", mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
  STEP("pivot_root", syscall(SYS_pivot_root, ".", "."));
  STEP("umount_oldroot", umount2(".", MNT_DETACH));
  STEP("chdir_root", chdir("/"));
  STEP("sethostname", sethostname(p->hostname, strlen(p->hostname)));
  forbid_nested_userns();
  if (p->new_network) loopback_up();
  drop_privileges(p);
  STEP("chdir_cwd", chdir(p->cwd));
  setup_stdio(p);
  close_other_fds(p->obs_w, p->ack_r);

  int err = wl_observe_write_frame(obs_fd, p->envp, p->probe_paths);
  if (err != 0) fail("observe", err);
  char go = 0;
  ssize_t n = WL_RETRY(read(p->ack_r, &go, 1));
  if (n != 1 || go != 'G') _exit(125);
  wl_child_exec(obs_fd, p->exec_paths, p->argv, p->envp);
}
