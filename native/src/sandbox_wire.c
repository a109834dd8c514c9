/* The plan of a supervised spawn on its way from the agent to the shim: what the sandboxed child needs
 * (its strings, ids and which descriptor slots are present), written by the agent into a sealed memfd and
 * read back by the shim before it clones the child. The maps and cgroup files are not in it: the agent
 * writes those itself once the child exists. Layout, host byte order:
 *   u32 magic, u32 uid, u32 gid, u32 flags (bit 0: a new network namespace), u32 cap_last_cap,
 *   u32 present (bit i: slot i holds a descriptor),
 *   rootfs\0 cwd\0 hostname\0, then argv, envp, exec_paths, probe_paths: each a u32 count and that many
 *   NUL-terminated strings. */
#include "sandbox_child.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define WIRE_MAGIC 0x31504c57u /* "WLP1" */
#define WIRE_MAX (16u << 20)   /* a plan larger than this is not one the agent wrote */
#define WIRE_NEW_NETWORK 1u

typedef struct {
  char *buf;
  size_t len, cap;
  bool failed;
} wire_out;

static void put(wire_out *w, const void *data, size_t n) {
  if (w->failed) return;
  if (w->len + n > w->cap) {
    size_t cap = w->cap == 0 ? 4096 : w->cap;
    while (cap < w->len + n) cap *= 2;
    char *grown = cap > WIRE_MAX ? NULL : realloc(w->buf, cap);
    if (grown == NULL) {
      w->failed = true;
      return;
    }
    w->buf = grown;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, data, n);
  w->len += n;
}

static void put_u32(wire_out *w, uint32_t v) { put(w, &v, sizeof v); }
static void put_str(wire_out *w, const char *s) { put(w, s, strlen(s) + 1); }

static void put_strv(wire_out *w, char *const *v) {
  uint32_t n = 0;
  while (v[n] != NULL) n++;
  put_u32(w, n);
  for (uint32_t i = 0; i < n; i++) put_str(w, v[i]);
}

/* Which field of the plan each descriptor slot carries: the one table the intermediate (placing them),
 * the encoder (naming which are present) and the decoder (pointing the shim's plan at them) read. */
static const struct {
  int slot;
  size_t field;
} SLOT_FIELDS[] = {
    {WL_SLOT_NULL, offsetof(wl_plan, null_fd)},     {WL_SLOT_SYNC_R, offsetof(wl_plan, sync_r)},
    {WL_SLOT_OBS_W, offsetof(wl_plan, obs_w)},      {WL_SLOT_ACK_R, offsetof(wl_plan, ack_r)},
    {WL_SLOT_OUT_W, offsetof(wl_plan, out_w)},      {WL_SLOT_ERR_W, offsetof(wl_plan, err_w)},
    {WL_SLOT_OUT_R, offsetof(wl_plan, out_r)},      {WL_SLOT_ERR_R, offsetof(wl_plan, err_r)},
    {WL_SLOT_STDOUT, offsetof(wl_plan, stdout_fd)}, {WL_SLOT_STDERR, offsetof(wl_plan, stderr_fd)},
    {WL_SLOT_USERNS, offsetof(wl_plan, userns_fd)}, {WL_SLOT_MNT_TEMPLATE, offsetof(wl_plan, mnt_template_fd)},
};
#define SLOT_FIELD(p, i) ((int *)((char *)(p) + SLOT_FIELDS[i].field))

void wl_plan_slot_fds(const wl_plan *p, int fds[WL_SLOT_END]) {
  for (int i = 0; i < WL_SLOT_END; i++) fds[i] = -1;
  for (size_t i = 0; i < sizeof SLOT_FIELDS / sizeof SLOT_FIELDS[0]; i++) fds[SLOT_FIELDS[i].slot] = *SLOT_FIELD(p, i);
}

static uint32_t present_slots(const wl_plan *p) {
  int fds[WL_SLOT_END];
  wl_plan_slot_fds(p, fds);
  uint32_t present = 1u << WL_SLOT_PLAN | 1u << WL_SLOT_REPORT;
  for (int slot = WL_SLOT_NULL; slot < WL_SLOT_END; slot++)
    if (fds[slot] >= 0) present |= 1u << slot;
  return present;
}

int wl_wire_encode(const wl_plan *p) {
  wire_out w = {0};
  put_u32(&w, WIRE_MAGIC);
  put_u32(&w, p->uid);
  put_u32(&w, p->gid);
  put_u32(&w, p->new_network ? WIRE_NEW_NETWORK : 0);
  put_u32(&w, (uint32_t)p->cap_last_cap);
  put_u32(&w, present_slots(p));
  put_str(&w, p->rootfs);
  put_str(&w, p->cwd);
  put_str(&w, p->hostname);
  put_strv(&w, p->argv);
  put_strv(&w, p->envp);
  put_strv(&w, p->exec_paths);
  put_strv(&w, p->probe_paths);
  if (w.failed) {
    free(w.buf);
    errno = ENOMEM;
    return -1;
  }
  int fd = memfd_create("worldline-plan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  int err = fd < 0 ? errno : 0;
  for (size_t done = 0; err == 0 && done < w.len;) {
    ssize_t n = WL_RETRY(write(fd, w.buf + done, w.len - done));
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += (size_t)n;
  }
  /* Sealed: nothing can change what the shim reads once it is handed over. */
  if (err == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) err = errno;
  free(w.buf);
  if (err != 0) {
    if (fd >= 0) close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

typedef struct {
  const char *buf;
  size_t len, at;
} wire_in;

static bool get_u32(wire_in *r, uint32_t *v) {
  if (r->len - r->at < sizeof *v) return false;
  memcpy(v, r->buf + r->at, sizeof *v);
  r->at += sizeof *v;
  return true;
}

static bool get_str(wire_in *r, char **s) {
  const char *end = memchr(r->buf + r->at, '\0', r->len - r->at);
  if (end == NULL) return false;
  *s = (char *)(r->buf + r->at);
  r->at = (size_t)(end - r->buf) + 1;
  return true;
}

static bool get_strv(wire_in *r, char ***v) {
  uint32_t n;
  if (!get_u32(r, &n) || n > r->len - r->at) return false; /* each string takes at least its NUL */
  *v = calloc((size_t)n + 1, sizeof **v);
  if (*v == NULL) return false;
  for (uint32_t i = 0; i < n; i++)
    if (!get_str(r, &(*v)[i])) return false;
  return true;
}

int wl_wire_decode(int fd, wl_plan *p, char **out) {
  memset(p, 0, sizeof *p);
  struct stat st;
  if (fstat(fd, &st) < 0) return errno;
  if (st.st_size <= 0 || (uint64_t)st.st_size > WIRE_MAX) return EINVAL;
  char *buf = malloc((size_t)st.st_size);
  if (buf == NULL) return ENOMEM;
  *out = buf;
  for (size_t done = 0; done < (size_t)st.st_size;) {
    ssize_t n = WL_RETRY(pread(fd, buf + done, (size_t)st.st_size - done, (off_t)done));
    if (n <= 0) return n < 0 ? errno : EIO;
    done += (size_t)n;
  }
  wire_in r = {buf, (size_t)st.st_size, 0};
  uint32_t magic, flags, cap, present;
  if (!get_u32(&r, &magic) || magic != WIRE_MAGIC || !get_u32(&r, &p->uid) || !get_u32(&r, &p->gid) ||
      !get_u32(&r, &flags) || !get_u32(&r, &cap) || !get_u32(&r, &present) || !get_str(&r, &p->rootfs) ||
      !get_str(&r, &p->cwd) || !get_str(&r, &p->hostname) || !get_strv(&r, &p->argv) || !get_strv(&r, &p->envp) ||
      !get_strv(&r, &p->exec_paths) || !get_strv(&r, &p->probe_paths) || r.at != r.len || p->argv[0] == NULL ||
      cap == 0 || cap > 63)
    return EINVAL;
  p->new_network = (flags & WIRE_NEW_NETWORK) != 0;
  p->cap_last_cap = (int)cap;
  for (size_t i = 0; i < sizeof SLOT_FIELDS / sizeof SLOT_FIELDS[0]; i++)
    *SLOT_FIELD(p, i) = (present & (1u << SLOT_FIELDS[i].slot)) != 0 ? SLOT_FIELDS[i].slot : -1;
  p->sync_w = p->obs_r = p->ack_w = -1; /* the agent's ends */
  if (p->null_fd < 0 || p->sync_r < 0 || p->obs_w < 0 || p->ack_r < 0) return EINVAL;
  return 0;
}
