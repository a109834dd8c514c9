/* Listening sockets inside another process's network namespace, without moving the caller.
 *
 * listenInNetns(pid, pidfd, host, port, backlog): the namespace is named either by pid (/proc/<pid>/ns/net,
 * opened here O_CLOEXEC) or, when pidfd >= 0, by a pidfd (setns(pidfd, CLONE_NEWNET), Linux >= 5.8, which
 * cannot be confused by pid reuse). A short-lived dedicated pthread, with every signal blocked, enters that
 * namespace, creates a TCP socket (SOCK_CLOEXEC | SOCK_NONBLOCK), sets SO_REUSEADDR, binds host:port and
 * listens, then exits. A network namespace is a per-thread attribute, so the thread that called us (Node's
 * main thread) never changes namespace; the socket stays in the namespace it was created in for its whole
 * life. The caller owns the returned fd.
 *
 * socketNetnsId(fd): "net:[inode]" of the network namespace a socket belongs to (ioctl SIOCGSKNS), in the
 * same format as readlink(/proc/<pid>/ns/net), so callers can prove where a listener lives. */
#include "wl.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#ifndef SIOCGSKNS
#define SIOCGSKNS 0x894C
#endif

typedef struct {
  int nsfd;
  struct sockaddr_storage addr;
  socklen_t addrlen;
  int backlog;
  /* results */
  int fd;
  int err;
  const char *syscall;
} listen_job;

static void *listen_thread(void *arg) {
  listen_job *job = arg;
  sigset_t old;
  wl_block_all_signals(&old);
  job->fd = -1;
  if (setns(job->nsfd, CLONE_NEWNET) != 0) {
    job->err = errno;
    job->syscall = "setns";
    return NULL;
  }
  int fd = socket(job->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
  if (fd < 0) {
    job->err = errno;
    job->syscall = "socket";
    return NULL;
  }
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    job->err = errno;
    job->syscall = "setsockopt";
  } else if (job->addr.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) {
    job->err = errno;
    job->syscall = "setsockopt";
  } else if (bind(fd, (struct sockaddr *)&job->addr, job->addrlen) != 0) {
    job->err = errno;
    job->syscall = "bind";
  } else if (listen(fd, job->backlog) != 0) {
    job->err = errno;
    job->syscall = "listen";
  }
  if (job->err != 0) {
    close(fd);
    return NULL;
  }
  job->fd = fd;
  return NULL;
}

static bool parse_addr(const char *host, uint32_t port, listen_job *job) {
  memset(&job->addr, 0, sizeof job->addr);
  struct sockaddr_in *in4 = (struct sockaddr_in *)&job->addr;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&job->addr;
  if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    job->addrlen = sizeof *in4;
    return true;
  }
  if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)port);
    job->addrlen = sizeof *in6;
    return true;
  }
  return false;
}

static napi_value js_listen_in_netns(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int32_t pid, pidfd, backlog;
  uint32_t port;
  WL_AUTOFREE char *host = NULL;
  if (!wl_args(env, info, 5, argv) || !wl_int32(env, argv[0], "pid", &pid) || !wl_int32(env, argv[1], "pidfd", &pidfd) ||
      !wl_string(env, argv[2], "host", &host) || !wl_uint32(env, argv[3], "port", &port) ||
      !wl_int32(env, argv[4], "backlog", &backlog))
    return NULL;
  if (port > 65535) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "The \"port\" argument must be 0..65535");
  if (backlog < 1) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "The \"backlog\" argument must be >= 1");
  if (pidfd < 0 && pid < 1) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "The \"pid\" argument must be >= 1");

  listen_job job;
  memset(&job, 0, sizeof job);
  job.fd = -1;
  job.backlog = backlog;
  if (!parse_addr(host, port, &job)) return wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "The \"host\" argument must be an IP address literal");

  char nspath[64] = "";
  WL_AUTOCLOSE int opened = -1;
  if (pidfd >= 0) {
    job.nsfd = pidfd;
  } else {
    snprintf(nspath, sizeof nspath, "/proc/%d/ns/net", pid);
    opened = WL_RETRY(open(nspath, O_RDONLY | O_CLOEXEC));
    if (opened < 0) return wl_throw_errno(env, errno, "open", nspath);
    job.nsfd = opened;
  }

  pthread_t tid;
  int rc = pthread_create(&tid, NULL, listen_thread, &job);
  if (rc != 0) return wl_throw_errno(env, rc, "pthread_create", NULL);
  rc = pthread_join(tid, NULL);
  if (rc != 0) {
    /* Cannot happen for a joinable thread we just created; never leave a half-known fd behind. */
    return wl_throw_errno(env, rc, "pthread_join", NULL);
  }
  if (job.err != 0) return wl_throw_errno(env, job.err, job.syscall, nspath[0] != '\0' ? nspath : NULL);
  return wl_int(env, job.fd);
}

static napi_value js_socket_netns_id(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "fd", &fd)) return NULL;
  WL_AUTOCLOSE int nsfd = ioctl(fd, SIOCGSKNS);
  if (nsfd < 0) return wl_throw_errno(env, errno, "ioctl", "SIOCGSKNS");
  /* The kernel returns this fd O_CLOEXEC; it is closed before we return either way. */
  struct stat st;
  if (fstat(nsfd, &st) != 0) return wl_throw_errno(env, errno, "fstat", NULL);
  char id[64];
  snprintf(id, sizeof id, "net:[%llu]", (unsigned long long)st.st_ino);
  return wl_str(env, id);
}

/* peerCredentials(fd): the pid, uid and gid of a connected unix socket's peer as of its connect
 * (getsockopt SO_PEERCRED), translated by the kernel into the caller's namespaces. */
static napi_value js_peer_credentials(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "fd", &fd)) return NULL;
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return wl_throw_errno(env, errno, "getsockopt", "SO_PEERCRED");
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "pid", wl_int(env, cred.pid));
  napi_value uid, gid;
  napi_create_uint32(env, cred.uid, &uid);
  napi_create_uint32(env, cred.gid, &gid);
  napi_set_named_property(env, o, "uid", uid);
  napi_set_named_property(env, o, "gid", gid);
  return o;
}

bool wl_register_netns(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"listenInNetns", js_listen_in_netns}, {"socketNetnsId", js_socket_netns_id}, {"peerCredentials", js_peer_credentials}};
  return wl_export_fns(env, exports, fns, 3);
}
