/* The child of spawnSandbox, from clone3 to execve. It runs in a copy of a multi-threaded process, so it
 * uses only async-signal-safe calls and raw syscalls (glibc's setuid family would try to signal threads
 * that do not exist here); it never allocates. Each failure writes an error record (stage + errno) to the
 * observation pipe and exits 126; a missing go-ahead exits 125; a failed execve exits 127. */
#include "sandbox.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define WL_SECUREBITS                                                                                      \
  (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |           \
   SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

static int obs_fd = -1;

_Noreturn static void fail(const char *stage, int err) {
  wl_observe_write_error(obs_fd, stage, err);
  _exit(126);
}

#define STEP(stage, expr)                                                                                  \
  do {                                                                                                     \
    if (WL_RETRY(expr) < 0) fail(stage, errno);                                                            \
  } while (0)

/* Every handler back to SIG_DFL (also SIG_IGN, which execve would keep, e.g. Node's SIGPIPE) and an empty
 * mask. The raw syscall also resets the signals glibc reserves for itself; an all-zero kernel sigaction is
 * SIG_DFL with no flags and an empty mask. */
static void reset_signals(void) {
  struct {
    unsigned long handler, flags, restorer, mask;
  } dfl = {0, 0, 0, 0};
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
  unsigned long none = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
}

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

/* A fresh, empty session keyring. The inherited one is the node-agent's (a systemd service gets a private
 * one, runc a per-container one): every key in it would be readable by the workload as a "possessor",
 * whatever its uid. A kernel without keys (ENOSYS) has nothing to inherit. */
static void new_session_keyring(void) {
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS) fail("keyctl_join_session", errno);
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

static void drop_privileges(const wl_plan *p) {
  for (int cap = 0; cap <= p->cap_last_cap; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) fail("capbset_drop", errno);
  STEP("cap_ambient_clear", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
  STEP("securebits", prctl(PR_SET_SECUREBITS, WL_SECUREBITS, 0, 0, 0));
  STEP("setgroups", syscall(SYS_setgroups, 0, NULL));
  STEP("setresgid", syscall(SYS_setresgid, p->gid, p->gid, p->gid));
  /* SECBIT_NO_SETUID_FIXUP keeps the capabilities across this call, so capset below can still run; it
   * then clears all three sets explicitly. */
  STEP("setresuid", syscall(SYS_setresuid, p->uid, p->uid, p->uid));
  new_session_keyring(); /* after setresuid, so the keyring belongs to the workload's uid */
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  STEP("capset", syscall(SYS_capset, &hdr, data));
  STEP("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  /* Last: any credential change clears the parent-death signal. */
  STEP("pdeathsig", prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
}

/* stdin = /dev/null, stdout/stderr = the chosen fds. Sources that sit on 0..2 are first moved out of
 * the way so that no dup2 clobbers another source. */
static void setup_stdio(const wl_plan *p) {
  int src[3] = {p->null_fd, p->stdout_fd >= 0 ? p->stdout_fd : p->out_w, p->stderr_fd >= 0 ? p->stderr_fd : p->err_w};
  for (int i = 0; i < 3; i++)
    if (src[i] < 3) {
      int moved = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
      if (moved < 0) fail("stdio", errno);
      src[i] = moved;
    }
  for (int i = 0; i < 3; i++) STEP("stdio", dup2(src[i], i));
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

_Noreturn static void exec_workload(const wl_plan *p) {
  int err = ENOENT;
  bool saw_eacces = false;
  for (char **path = p->exec_paths; *path != NULL; path++) {
    execve(*path, p->argv, p->envp);
    err = errno;
    if (err == EACCES) saw_eacces = true;
    if (err != ENOENT && err != EACCES && err != ENOTDIR) break;
  }
  wl_observe_write_error(obs_fd, "execve", saw_eacces && err == ENOENT ? EACCES : err);
  _exit(127);
}

_Noreturn void wl_sandbox_child(const wl_plan *p) {
  obs_fd = p->obs_w;
  reset_signals();
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

  int err = wl_observe_write_frame(obs_fd, p->envp);
  if (err != 0) fail("observe", err);
  char go = 0;
  ssize_t n = WL_RETRY(read(p->ack_r, &go, 1));
  if (n != 1 || go != 'G') _exit(125);
  exec_workload(p);
}
