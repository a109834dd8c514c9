/* fanotify in file-id mode, for watching every write on one filesystem (node-agent/store/prime-watcher.ts):
 *   fanotifyOpen() -> fd: fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET,
 *     O_RDONLY | O_LARGEFILE). DFID_NAME_TARGET = DIR_FID | NAME | FID | TARGET_FID: every event carries the
 *     object's own file handle (FID) and, where the kernel knows it, its directory's handle and the entry name
 *     (DFID_NAME); directory-entry events (create, delete, move) carry the child's handle too. The queue is
 *     the kernel's bounded default (no FAN_UNLIMITED_QUEUE): when it fills, one FAN_Q_OVERFLOW event says
 *     events were lost.
 *   fanotifyMarkFilesystem(fd, path): FAN_MARK_ADD | FAN_MARK_FILESYSTEM with WL_FAN_WATCH_MASK, every change
 *     of content, metadata or names on path's filesystem.
 *   fanotifyRead(fd, enough) -> { events, complete }: non-blocking reads until EAGAIN, or until `enough` events
 *     were read (the group's queue holds at most that many, so everything queued when the call began has been
 *     read), or until WL_FAN_READ_CAP bytes (so a writer faster than us cannot keep one call going forever;
 *     what is left stays queued for the next call). complete is false only in the last case: events queued
 *     before the call may be among those left. enough 0: not known, only EAGAIN completes. Each record is
 *     decoded to { mask, pid, records: [{ type, fsid, handleType, handle, name }] }.
 *   openByHandle(mountFd, handleType, handle, flags) -> fd: open_by_handle_at (CAP_DAC_READ_SEARCH), O_CLOEXEC
 *     added.
 *   handleInfo(mountFd, handleType, handle) -> { link, nlink }: what the watcher asks of every handle in one
 *     call, so an event costs one crossing instead of four: open_by_handle_at(O_PATH), fstat (st_nlink),
 *     readlink of /proc/self/fd/N (the path the object has now, as the kernel prints it: "... (deleted)"
 *     when unlinked), close. link null (nlink 0): the object no longer exists (ESTALE, ENOENT). Other
 *     errors throw; a link of PATH_MAX bytes or more throws ENAMETOOLONG. Deciding what a link means is
 *     left to native/fanotify.ts. */
#include "wl.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>

/* Kernel values (include/uapi/linux/fanotify.h, 5.17+) in case older headers lack them. */
#ifndef FAN_REPORT_TARGET_FID
#define FAN_REPORT_TARGET_FID 0x00001000
#endif
#ifndef FAN_REPORT_DFID_NAME_TARGET
#define FAN_REPORT_DFID_NAME_TARGET (FAN_REPORT_DIR_FID | FAN_REPORT_NAME | FAN_REPORT_FID | FAN_REPORT_TARGET_FID)
#endif

#define WL_FAN_WATCH_MASK                                                                                     \
  (FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE | FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO |       \
   FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR)

/* One read(2) at a time; must exceed the largest event (metadata + three fid records with names, < 2 KiB). */
#define WL_FAN_BUF 65536
/* At most this much is read per fanotifyRead call (about 4x a full default queue of 16384 events). */
#define WL_FAN_READ_CAP (8u << 20)

static napi_value js_fanotify_open(napi_env env, napi_callback_info info) {
  int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET, O_RDONLY | O_LARGEFILE);
  if (fd < 0) return wl_throw_errno(env, errno, "fanotify_init", NULL);
  return wl_int(env, fd);
}

static napi_value js_fanotify_mark_filesystem(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t fd;
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 2, argv) || !wl_int32(env, argv[0], "fd", &fd) || !wl_string(env, argv[1], "path", &path)) return NULL;
  if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, WL_FAN_WATCH_MASK, AT_FDCWD, path) != 0)
    return wl_throw_errno(env, errno, "fanotify_mark", path);
  return wl_undefined(env);
}

static bool set(napi_env env, napi_value obj, const char *key, napi_value v) {
  return v != NULL && napi_set_named_property(env, obj, key, v) == napi_ok;
}

/* The property names of the decoded events, made once per read call: napi_set_named_property makes its key
 * string anew on every call, which was most of the decoding's cost (a few properties per record, a few
 * records per event). */
struct keys {
  napi_value type, fsid, handle_type, handle, name, mask, pid, records;
};

static bool make_keys(napi_env env, struct keys *k) {
  return napi_create_string_utf8(env, "type", NAPI_AUTO_LENGTH, &k->type) == napi_ok &&
         napi_create_string_utf8(env, "fsid", NAPI_AUTO_LENGTH, &k->fsid) == napi_ok &&
         napi_create_string_utf8(env, "handleType", NAPI_AUTO_LENGTH, &k->handle_type) == napi_ok &&
         napi_create_string_utf8(env, "handle", NAPI_AUTO_LENGTH, &k->handle) == napi_ok &&
         napi_create_string_utf8(env, "name", NAPI_AUTO_LENGTH, &k->name) == napi_ok &&
         napi_create_string_utf8(env, "mask", NAPI_AUTO_LENGTH, &k->mask) == napi_ok &&
         napi_create_string_utf8(env, "pid", NAPI_AUTO_LENGTH, &k->pid) == napi_ok &&
         napi_create_string_utf8(env, "records", NAPI_AUTO_LENGTH, &k->records) == napi_ok;
}

static bool setk(napi_env env, napi_value obj, napi_value key, napi_value v) {
  return v != NULL && napi_set_property(env, obj, key, v) == napi_ok;
}

/* One info record -> { type, fsid, handleType, handle, name } (fid types) or { type } (others). */
static napi_value decode_info(napi_env env, const struct keys *k, const struct fanotify_event_info_header *hdr) {
  napi_value o;
  if (napi_create_object(env, &o) != napi_ok || !setk(env, o, k->type, wl_int(env, hdr->info_type))) return NULL;
  switch (hdr->info_type) {
    case FAN_EVENT_INFO_TYPE_FID:
    case FAN_EVENT_INFO_TYPE_DFID:
    case FAN_EVENT_INFO_TYPE_DFID_NAME:
    case FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
    case FAN_EVENT_INFO_TYPE_NEW_DFID_NAME: break;
    default: return o;
  }
  const struct fanotify_event_info_fid *fid = (const void *)hdr;
  size_t fixed = sizeof *fid + sizeof(struct file_handle);
  if (hdr->len < fixed) return NULL;
  const struct file_handle *fh = (const void *)fid->handle;
  if (fh->handle_bytes > hdr->len - fixed) return NULL;
  char fsid[24];
  snprintf(fsid, sizeof fsid, "%08x:%08x", (unsigned)fid->fsid.val[0], (unsigned)fid->fsid.val[1]);
  napi_value handle;
  void *data;
  if (napi_create_buffer_copy(env, fh->handle_bytes, fh->f_handle, &data, &handle) != napi_ok) return NULL;
  napi_value name;
  napi_get_null(env, &name);
  bool named = hdr->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME || hdr->info_type == FAN_EVENT_INFO_TYPE_OLD_DFID_NAME ||
               hdr->info_type == FAN_EVENT_INFO_TYPE_NEW_DFID_NAME;
  if (named) {
    const char *s = (const char *)fh->f_handle + fh->handle_bytes;
    size_t room = hdr->len - fixed - fh->handle_bytes;
    size_t len = strnlen(s, room);
    if (len == room) return NULL; /* not NUL-terminated inside the record */
    if (napi_create_string_utf8(env, s, len, &name) != napi_ok) return NULL;
  }
  if (!setk(env, o, k->fsid, wl_str(env, fsid)) || !setk(env, o, k->handle_type, wl_int(env, fh->handle_type)) ||
      !setk(env, o, k->handle, handle) || !setk(env, o, k->name, name))
    return NULL;
  return o;
}

/* One event -> { mask, pid, records }; NULL (EPROTO thrown by the caller) when it is malformed. */
static napi_value decode_event(napi_env env, const struct keys *k, const struct fanotify_event_metadata *m) {
  napi_value o, records;
  if (napi_create_object(env, &o) != napi_ok || napi_create_array(env, &records) != napi_ok) return NULL;
  if (!setk(env, o, k->mask, wl_int(env, (int64_t)m->mask)) || !setk(env, o, k->pid, wl_int(env, m->pid))) return NULL;
  const char *p = (const char *)m + m->metadata_len;
  const char *end = (const char *)m + m->event_len;
  uint32_t n = 0;
  while (p < end) {
    if ((size_t)(end - p) < sizeof(struct fanotify_event_info_header)) return NULL;
    const struct fanotify_event_info_header *hdr = (const void *)p;
    if (hdr->len < sizeof *hdr || hdr->len > (size_t)(end - p)) return NULL;
    napi_value r = decode_info(env, k, hdr);
    if (r == NULL || napi_set_element(env, records, n++, r) != napi_ok) return NULL;
    p += hdr->len;
  }
  return setk(env, o, k->records, records) ? o : NULL;
}

static napi_value js_fanotify_read(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t fd;
  uint32_t enough;
  if (!wl_args(env, info, 2, argv) || !wl_int32(env, argv[0], "fd", &fd) || !wl_uint32(env, argv[1], "enough", &enough)) return NULL;
  WL_AUTOFREE char *buf = aligned_alloc(8, WL_FAN_BUF);
  if (buf == NULL) return wl_throw_errno(env, ENOMEM, "fanotifyRead", NULL);
  napi_value result, events;
  struct keys keys;
  if (!make_keys(env, &keys) || napi_create_object(env, &result) != napi_ok || napi_create_array(env, &events) != napi_ok) return NULL;
  uint32_t count = 0;
  size_t total = 0;
  bool complete = false;
  for (;;) {
    if (enough > 0 && count >= enough) {
      complete = true;
      break;
    }
    if (total >= WL_FAN_READ_CAP) break;
    ssize_t len = WL_RETRY(read(fd, buf, WL_FAN_BUF));
    if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      complete = true;
      break;
    }
    if (len < 0) return wl_throw_errno(env, errno, "read(fanotify)", NULL);
    if (len == 0) {
      complete = true;
      break;
    }
    total += (size_t)len;
    const struct fanotify_event_metadata *m = (const void *)buf;
    for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
      if (m->vers != FANOTIFY_METADATA_VERSION) return wl_throw_errno(env, EPROTO, "read(fanotify) metadata version", NULL);
      if (m->fd >= 0) close(m->fd); /* not in fid mode; never leak one */
      napi_value e = decode_event(env, &keys, m);
      if (e == NULL) {
        bool pending = false;
        napi_is_exception_pending(env, &pending);
        return pending ? NULL : wl_throw_errno(env, EPROTO, "read(fanotify) malformed info record", NULL);
      }
      if (napi_set_element(env, events, count++, e) != napi_ok) return NULL;
    }
    if (len != 0) return wl_throw_errno(env, EPROTO, "read(fanotify) truncated event", NULL);
  }
  napi_value done;
  if (napi_get_boolean(env, complete, &done) != napi_ok || !set(env, result, "events", events) || !set(env, result, "complete", done)) return NULL;
  return result;
}

/* The handle argument (a Buffer of 1..MAX_HANDLE_SZ bytes) as a struct file_handle of `handle_type`, to
 * free(); NULL with a JS exception pending when it is not one. */
static struct file_handle *handle_arg(napi_env env, napi_value v, int32_t handle_type, const char *caller) {
  void *data;
  size_t len;
  bool is_buffer;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) {
    wl_throw_arg(env, "ERR_INVALID_ARG_TYPE", "The \"handle\" argument must be a Buffer");
    return NULL;
  }
  if (napi_get_buffer_info(env, v, &data, &len) != napi_ok) return NULL;
  if (len == 0 || len > MAX_HANDLE_SZ) {
    wl_throw_arg(env, "ERR_INVALID_ARG_VALUE", "The \"handle\" argument must hold 1..128 bytes");
    return NULL;
  }
  struct file_handle *fh = malloc(sizeof *fh + len);
  if (fh == NULL) {
    wl_throw_errno(env, ENOMEM, caller, NULL);
    return NULL;
  }
  fh->handle_bytes = (unsigned int)len;
  fh->handle_type = handle_type;
  memcpy(fh->f_handle, data, len);
  return fh;
}

static napi_value js_open_by_handle(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t mount_fd, handle_type, flags;
  if (!wl_args(env, info, 4, argv) || !wl_int32(env, argv[0], "mountFd", &mount_fd) ||
      !wl_int32(env, argv[1], "handleType", &handle_type) || !wl_int32(env, argv[3], "flags", &flags))
    return NULL;
  WL_AUTOFREE struct file_handle *fh = handle_arg(env, argv[2], handle_type, "openByHandle");
  if (fh == NULL) return NULL;
  int fd = WL_RETRY(open_by_handle_at(mount_fd, fh, flags | O_CLOEXEC));
  if (fd < 0) return wl_throw_errno(env, errno, "open_by_handle_at", NULL);
  return wl_int(env, fd);
}

static napi_value js_handle_info(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t mount_fd, handle_type;
  if (!wl_args(env, info, 3, argv) || !wl_int32(env, argv[0], "mountFd", &mount_fd) || !wl_int32(env, argv[1], "handleType", &handle_type)) return NULL;
  WL_AUTOFREE struct file_handle *fh = handle_arg(env, argv[2], handle_type, "handleInfo");
  if (fh == NULL) return NULL;
  napi_value result, link, nlink;
  if (napi_create_object(env, &result) != napi_ok) return NULL;
  WL_AUTOCLOSE int fd = WL_RETRY(open_by_handle_at(mount_fd, fh, O_PATH | O_CLOEXEC));
  if (fd < 0) {
    if (errno != ESTALE && errno != ENOENT) return wl_throw_errno(env, errno, "open_by_handle_at", NULL);
    if (napi_get_null(env, &link) != napi_ok || !set(env, result, "link", link) || !set(env, result, "nlink", wl_int(env, 0))) return NULL;
    return result;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) return wl_throw_errno(env, errno, "fstat", NULL);
  char proc[32];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  char target[PATH_MAX];
  ssize_t n = readlink(proc, target, sizeof target);
  if (n < 0) return wl_throw_errno(env, errno, "readlink", proc);
  if ((size_t)n >= sizeof target) return wl_throw_errno(env, ENAMETOOLONG, "readlink", proc);
  /* V8 decodes invalid UTF-8 with U+FFFD, as a utf8 Buffer decode does. */
  if (napi_create_string_utf8(env, target, (size_t)n, &link) != napi_ok) return NULL;
  if (napi_create_double(env, (double)st.st_nlink, &nlink) != napi_ok || !set(env, result, "link", link) || !set(env, result, "nlink", nlink)) return NULL;
  return result;
}

bool wl_register_fanotify(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"fanotifyOpen", js_fanotify_open},
                              {"fanotifyMarkFilesystem", js_fanotify_mark_filesystem},
                              {"fanotifyRead", js_fanotify_read},
                              {"openByHandle", js_open_by_handle},
                              {"handleInfo", js_handle_info}};
  return wl_export_fns(env, exports, fns, sizeof fns / sizeof fns[0]);
}
