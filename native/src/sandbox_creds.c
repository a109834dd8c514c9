/* The steps a sandboxed child takes on its way to execve, shared by the spawn (sandbox_child.c) and by
 * entering a running sandbox (sandbox_enter.c): signal reset, the drop to the workload's identity with
 * no capabilities, stdio, and the exec over the candidate paths. Each runs in a copy of a multi-threaded
 * process, so only async-signal-safe calls and raw syscalls; a failure writes an error record (stage +
 * errno) on fail_fd and exits 126 (127 for execve). */
#include "sandbox_child.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/securebits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define WL_SECUREBITS                                                                                      \
  (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |           \
   SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

_Noreturn void wl_child_fail(int fail_fd, const char *stage, int err) {
  wl_observe_write_error(fail_fd, stage, err);
  _exit(126);
}

#define STEP(stage, expr)                                                                                  \
  do {                                                                                                     \
    if (WL_RETRY(expr) < 0) wl_child_fail(fail_fd, stage, errno);                                          \
  } while (0)

/* Every handler back to SIG_DFL (also SIG_IGN, which execve would keep, e.g. Node's SIGPIPE) and an empty
 * mask. The raw syscall also resets the signals glibc reserves for itself; an all-zero kernel sigaction is
 * SIG_DFL with no flags and an empty mask. */
void wl_reset_signals(void) {
  struct {
    unsigned long handler, flags, restorer, mask;
  } dfl = {0, 0, 0, 0};
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
  unsigned long none = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
}

void wl_drop_privileges(int fail_fd, uint32_t uid, uint32_t gid, int cap_last_cap) {
  for (int cap = 0; cap <= cap_last_cap; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) wl_child_fail(fail_fd, "capbset_drop", errno);
  STEP("cap_ambient_clear", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
  STEP("securebits", prctl(PR_SET_SECUREBITS, WL_SECUREBITS, 0, 0, 0));
  STEP("setgroups", syscall(SYS_setgroups, 0, NULL));
  STEP("setresgid", syscall(SYS_setresgid, gid, gid, gid));
  /* SECBIT_NO_SETUID_FIXUP keeps the capabilities across this call, so capset below can still run; it
   * then clears all three sets explicitly. */
  STEP("setresuid", syscall(SYS_setresuid, uid, uid, uid));
  /* A fresh, empty session keyring, after setresuid so it belongs to the workload's uid. The inherited one
   * is the node-agent's (a systemd service gets a private one, runc a per-container one): every key in it
   * would be readable by the workload as a "possessor". A kernel without keys (ENOSYS) has none to inherit. */
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS) wl_child_fail(fail_fd, "keyctl_join_session", errno);
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  STEP("capset", syscall(SYS_capset, &hdr, data));
  STEP("no_new_privs", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  /* Last: any credential change clears the parent-death signal. */
  STEP("pdeathsig", prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
}

void wl_child_stdio(int fail_fd, const int source[3]) {
  int src[3] = {source[0], source[1], source[2]};
  for (int i = 0; i < 3; i++)
    if (src[i] < 3) {
      int moved = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
      if (moved < 0) wl_child_fail(fail_fd, "stdio", errno);
      src[i] = moved;
    }
  for (int i = 0; i < 3; i++) STEP("stdio", dup2(src[i], i));
}

_Noreturn void wl_child_exec(int fail_fd, char *const *exec_paths, char *const *argv, char *const *envp) {
  int err = ENOENT;
  bool saw_eacces = false;
  for (char *const *path = exec_paths; *path != NULL; path++) {
    execve(*path, argv, envp);
    err = errno;
    if (err == EACCES) saw_eacces = true;
    if (err != ENOENT && err != EACCES && err != ENOTDIR) break;
  }
  wl_observe_write_error(fail_fd, "execve", saw_eacces && err == ENOENT ? EACCES : err);
  _exit(127);
}
