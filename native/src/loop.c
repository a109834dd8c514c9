/* Loop devices and sparse copies for run disks, in-process instead of spawning losetup and cp:
 *   loopAttach(image, devDir, sysDir) -> "/dev/loopN": a free device from LOOP_CTL_GET_FREE, its node
 *     (and loop-control's) made from sysfs's major:minor when a container's copy of /dev lacks it, bound to the image with one
 *     LOOP_CONFIGURE (no window where the device is bound but not yet configured); a device another
 *     attacher won in between (EBUSY) is retried with the next free one.
 *   loopDetach(device): LOOP_CLR_FD. While a lazily unmounted filesystem still holds the device, the
 *     kernel marks it to clear itself when the last user goes and returns success.
 *   copySparse(src, dst) -> bytes of data copied: dst created (O_EXCL, 0600) with src's size, and only
 *     src's data extents (SEEK_DATA / SEEK_HOLE) copied, so holes stay holes. */
#include "wl.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define WL_LOOP_ATTEMPTS 8

/* Makes the device node `path` (S_IFBLK or S_IFCHR in `type`) from `sysdev` ("major:minor\n"); EEXIST
 * (another attacher made it first) is fine. */
static int make_node(const char *path, const char *sysdev, mode_t type) {
  WL_AUTOCLOSE int fd = WL_RETRY(open(sysdev, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return -1;
  char buf[32];
  ssize_t n = WL_RETRY(read(fd, buf, sizeof buf - 1));
  if (n <= 0) {
    errno = n == 0 ? EINVAL : errno;
    return -1;
  }
  buf[n] = '\0';
  unsigned int major, minor;
  if (sscanf(buf, "%u:%u", &major, &minor) != 2) {
    errno = EINVAL;
    return -1;
  }
  if (mknod(path, type | 0660, makedev(major, minor)) != 0 && errno != EEXIST) return -1;
  return 0;
}

static napi_value js_loop_attach(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  WL_AUTOFREE char *image = NULL;
  WL_AUTOFREE char *dev = NULL;
  WL_AUTOFREE char *sys = NULL;
  if (!wl_args(env, info, 3, argv) || !wl_string(env, argv[0], "image", &image) || !wl_string(env, argv[1], "devDir", &dev) ||
      !wl_string(env, argv[2], "sysDir", &sys))
    return NULL;
  WL_AUTOCLOSE int img = WL_RETRY(open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY));
  if (img < 0) return wl_throw_errno(env, errno, "open", image);
  struct stat st;
  if (fstat(img, &st) != 0) return wl_throw_errno(env, errno, "fstat", image);
  if (!S_ISREG(st.st_mode)) return wl_throw_errno(env, EINVAL, "loopAttach (not a regular file)", image);
  char ctl_path[4096], ctl_sys[4096];
  if (snprintf(ctl_path, sizeof ctl_path, "%s/loop-control", dev) >= (int)sizeof ctl_path ||
      snprintf(ctl_sys, sizeof ctl_sys, "%s/class/misc/loop-control/dev", sys) >= (int)sizeof ctl_sys)
    return wl_throw_errno(env, ENAMETOOLONG, "open", dev);
  WL_AUTOCLOSE int ctl = WL_RETRY(open(ctl_path, O_RDWR | O_CLOEXEC));
  if (ctl < 0 && errno == ENOENT) {
    if (make_node(ctl_path, ctl_sys, S_IFCHR) != 0) return wl_throw_errno(env, errno, "mknod (from sysfs major:minor)", ctl_path);
    ctl = WL_RETRY(open(ctl_path, O_RDWR | O_CLOEXEC));
  }
  if (ctl < 0) return wl_throw_errno(env, errno, "open", ctl_path);
  int last = EBUSY;
  for (int attempt = 0; attempt < WL_LOOP_ATTEMPTS; attempt++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) return wl_throw_errno(env, errno, "ioctl(LOOP_CTL_GET_FREE)", ctl_path);
    char path[4096], sysdev[4096];
    if (snprintf(path, sizeof path, "%s/loop%d", dev, n) >= (int)sizeof path ||
        snprintf(sysdev, sizeof sysdev, "%s/block/loop%d/dev", sys, n) >= (int)sizeof sysdev)
      return wl_throw_errno(env, ENAMETOOLONG, "loopAttach", dev);
    WL_AUTOCLOSE int fd = WL_RETRY(open(path, O_RDWR | O_CLOEXEC));
    if (fd < 0 && errno == ENOENT) {
      if (make_node(path, sysdev, S_IFBLK) != 0) return wl_throw_errno(env, errno, "mknod (from sysfs major:minor)", path);
      fd = WL_RETRY(open(path, O_RDWR | O_CLOEXEC));
    }
    if (fd < 0) return wl_throw_errno(env, errno, "open", path);
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (uint32_t)img;
    strncpy((char *)cfg.info.lo_file_name, image, LO_NAME_SIZE - 1);
    if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) return wl_str(env, path);
    last = errno;
    if (last != EBUSY) return wl_throw_errno(env, last, "ioctl(LOOP_CONFIGURE)", path);
  }
  return wl_throw_errno(env, last, "ioctl(LOOP_CONFIGURE) after 8 attempts", image);
}

static napi_value js_loop_detach(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *device = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "device", &device)) return NULL;
  WL_AUTOCLOSE int fd = WL_RETRY(open(device, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd < 0) return wl_throw_errno(env, errno, "open", device);
  struct stat st;
  if (fstat(fd, &st) != 0) return wl_throw_errno(env, errno, "fstat", device);
  if (!S_ISBLK(st.st_mode)) return wl_throw_errno(env, ENOTBLK, "loopDetach", device);
  if (ioctl(fd, LOOP_CLR_FD) != 0) return wl_throw_errno(env, errno, "ioctl(LOOP_CLR_FD)", device);
  return wl_undefined(env);
}

/* Copies [off, off + len) from in to out at the same offset; copy_file_range, read/write where it cannot. */
static int copy_range(int in, int out, off_t off, off_t len) {
  while (len > 0) {
    loff_t a = off, b = off;
    ssize_t n = copy_file_range(in, &a, out, &b, (size_t)len, 0);
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
      char buf[65536];
      size_t want = len < (off_t)sizeof buf ? (size_t)len : sizeof buf;
      n = WL_RETRY(pread(in, buf, want, off));
      if (n > 0 && WL_RETRY(pwrite(out, buf, (size_t)n, off)) != n) return -1;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) {
      errno = EIO; /* the source shrank under us */
      return -1;
    }
    off += n;
    len -= n;
  }
  return 0;
}

static napi_value js_copy_sparse(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  WL_AUTOFREE char *src = NULL;
  WL_AUTOFREE char *dst = NULL;
  if (!wl_args(env, info, 2, argv) || !wl_string(env, argv[0], "src", &src) || !wl_string(env, argv[1], "dst", &dst)) return NULL;
  WL_AUTOCLOSE int in = WL_RETRY(open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY));
  if (in < 0) return wl_throw_errno(env, errno, "open", src);
  struct stat st;
  if (fstat(in, &st) != 0) return wl_throw_errno(env, errno, "fstat", src);
  if (!S_ISREG(st.st_mode)) return wl_throw_errno(env, EINVAL, "copySparse (not a regular file)", src);
  WL_AUTOCLOSE int out = WL_RETRY(open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600));
  if (out < 0) return wl_throw_errno(env, errno, "open", dst);
  if (WL_RETRY(ftruncate(out, st.st_size)) != 0) return wl_throw_errno(env, errno, "ftruncate", dst);
  int64_t copied = 0;
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t data = lseek(in, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break; /* only a hole remains */
    if (data < 0) return wl_throw_errno(env, errno, "lseek(SEEK_DATA)", src);
    off_t hole = lseek(in, data, SEEK_HOLE);
    if (hole < 0) return wl_throw_errno(env, errno, "lseek(SEEK_HOLE)", src);
    if (copy_range(in, out, data, hole - data) != 0) return wl_throw_errno(env, errno, "copy_file_range", dst);
    copied += hole - data;
    pos = hole;
  }
  return wl_int(env, copied);
}

bool wl_register_loop(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"loopAttach", js_loop_attach}, {"loopDetach", js_loop_detach}, {"copySparse", js_copy_sparse}};
  return wl_export_fns(env, exports, fns, 3);
}
