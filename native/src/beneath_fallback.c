/* The openat2-less walk behind openBeneath: each component is opened relative to the previous directory fd
 * with O_NOFOLLOW, so no symlink (magic or not) is ever followed. It is stricter than RESOLVE_BENEATH:
 * absolute paths and every ".." component are refused with EXDEV (the kernel refuses only escaping ones);
 * a symlink anywhere gives ELOOP, as RESOLVE_NO_SYMLINKS does. */
#include "wl.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

static bool is_symlink_fd(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
}

int wl_open_beneath_walk(int rootfd, const char *path, int flags, mode_t mode) {
  if (path[0] == '/') {
    errno = EXDEV;
    return -1;
  }
  WL_AUTOFREE char *copy = strdup(path);
  if (copy == NULL) return -1;

  /* Split into components, dropping empty and "." ones. */
  size_t n = 0;
  char *comps[4096];
  for (char *save = NULL, *tok = strtok_r(copy, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save)) {
    if (strcmp(tok, ".") == 0) continue;
    if (strcmp(tok, "..") == 0) {
      errno = EXDEV;
      return -1;
    }
    if (n == sizeof comps / sizeof comps[0]) {
      errno = ENAMETOOLONG;
      return -1;
    }
    comps[n++] = tok;
  }
  if (n == 0) return WL_RETRY(openat(rootfd, ".", flags | O_CLOEXEC, mode));

  int dirfd = rootfd;
  for (size_t i = 0; i + 1 < n; i++) {
    int next = WL_RETRY(openat(dirfd, comps[i], O_PATH | O_NOFOLLOW | O_CLOEXEC));
    int saved = errno;
    if (dirfd != rootfd) close(dirfd);
    if (next < 0) {
      errno = saved;
      return -1;
    }
    struct stat st;
    if (fstat(next, &st) != 0) {
      saved = errno;
      close(next);
      errno = saved;
      return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
      saved = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
      close(next);
      errno = saved;
      return -1;
    }
    dirfd = next;
  }

  int fd = WL_RETRY(openat(dirfd, comps[n - 1], flags | O_NOFOLLOW | O_CLOEXEC, mode));
  int saved = errno;
  if (dirfd != rootfd) close(dirfd);
  if (fd < 0) {
    errno = saved;
    return -1;
  }
  /* O_PATH|O_NOFOLLOW opens a trailing symlink itself; openat2 does the same only if the caller asked for
   * O_NOFOLLOW, otherwise RESOLVE_NO_SYMLINKS makes it ELOOP. */
  if ((flags & O_PATH) && !(flags & O_NOFOLLOW) && is_symlink_fd(fd)) {
    close(fd);
    errno = ELOOP;
    return -1;
  }
  return fd;
}
