/* fsyncPath (open O_RDONLY — O_DIRECTORY for directories — fsync, close), fsyncFd, and syncPaths.
 *
 * syncPaths(paths): a promise that every path (files' bytes, directories' entries) is durable, made on
 * one thread-pool thread in one pass: each path opened (O_NOFOLLOW: a symbolic link is refused, ELOOP),
 * writeback started on every regular file at once (sync_file_range SYNC_FILE_RANGE_WRITE, which only
 * queues the I/O and promises nothing), then each fsync'd, by up to eight threads at once. By the first
 * fsync every file's blocks are allocated and under write, so the journal commit it waits for carries
 * them all, and the device cache flushes the fsyncs ask for are merged while they wait together. The
 * durability comes from the fsyncs alone.
 * One JS call, where open + fsync + close through Node's fs costs three thread-pool hops per path.
 * The first failure rejects it (code, errno, syscall, path); every fd is closed either way. */
#include "wl.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

static napi_value js_fsync_path(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  WL_AUTOFREE char *path = NULL;
  if (!wl_args(env, info, 1, argv) || !wl_string(env, argv[0], "path", &path)) return NULL;
  struct stat st;
  if (lstat(path, &st) != 0) return wl_throw_errno(env, errno, "lstat", path);
  int dir_flag = S_ISDIR(st.st_mode) ? O_DIRECTORY : 0;
  WL_AUTOCLOSE int fd = WL_RETRY(open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | dir_flag));
  if (fd < 0) return wl_throw_errno(env, errno, "open", path);
  if (WL_RETRY(fsync(fd)) != 0) return wl_throw_errno(env, errno, "fsync", path);
  return wl_undefined(env);
}

static napi_value js_fsync_fd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!wl_args(env, info, 1, argv) || !wl_int32(env, argv[0], "fd", &fd)) return NULL;
  if (WL_RETRY(fsync(fd)) != 0) return wl_throw_errno(env, errno, "fsync", NULL);
  return wl_undefined(env);
}

typedef struct {
  char **paths;
  size_t count;
  napi_deferred deferred;
  napi_async_work work;
  /* the first failure */
  int err;
  const char *syscall;
  size_t failed;
} sync_job;

static void sync_fail(sync_job *job, int err, const char *syscall, size_t i) {
  if (job->err != 0) return;
  job->err = err;
  job->syscall = syscall;
  job->failed = i;
}

/* At most this many paths are open at once: a long list is synced a chunk at a time. */
#define SYNC_CHUNK 256

/* The fsyncs of one chunk, shared by up to SYNC_THREADS threads (this one and short-lived pthreads, every
 * signal blocked) taking the next fd in turn: while one waits for the device's cache flush, the others'
 * requests join the next one (the block layer merges flushes queued together), where one fsync after
 * another would pay a flush each. */
#define SYNC_THREADS 8

typedef struct {
  sync_job *job;
  const int *fds;
  size_t from, count;
  size_t next; /* taken with __atomic_fetch_add */
  pthread_mutex_t lock; /* guards job's first failure */
} fsync_share;

static void *fsync_worker(void *arg) {
  fsync_share *sh = arg;
  for (;;) {
    size_t k = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
    if (k >= sh->count) return NULL;
    if (WL_RETRY(fsync(sh->fds[k])) != 0) {
      int err = errno;
      pthread_mutex_lock(&sh->lock);
      sync_fail(sh->job, err, "fsync", sh->from + k);
      pthread_mutex_unlock(&sh->lock);
    }
  }
}

static void fsync_all(sync_job *job, const int *fds, size_t from, size_t count) {
  fsync_share sh = {.job = job, .fds = fds, .from = from, .count = count, .next = 0};
  pthread_mutex_init(&sh.lock, NULL);
  pthread_t tids[SYNC_THREADS - 1];
  size_t started = 0;
  size_t want = count < SYNC_THREADS ? count : SYNC_THREADS;
  if (want > 1) {
    sigset_t old;
    wl_block_all_signals(&old); /* the pthreads inherit the mask */
    for (; started < want - 1; started++) {
      if (pthread_create(&tids[started], NULL, fsync_worker, &sh) != 0) break; /* fewer threads: the rest is done here */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  fsync_worker(&sh);
  for (size_t t = 0; t < started; t++) pthread_join(tids[t], NULL);
  pthread_mutex_destroy(&sh.lock);
}

/* One chunk, paths [from, from + n): opened, writeback started on the regular files, each fsync'd. */
static void sync_chunk(sync_job *job, size_t from, size_t n) {
  int fds[SYNC_CHUNK];
  size_t opened = 0;
  for (; opened < n; opened++) {
    size_t i = from + opened;
    /* O_NONBLOCK: a FIFO given by mistake is opened and fsync'd, never waited on. */
    int fd = WL_RETRY(open(job->paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK));
    if (fd < 0) {
      sync_fail(job, errno, "open", i);
      break;
    }
    fds[opened] = fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
      sync_fail(job, errno, "fstat", i);
      opened++;
      break;
    }
    /* Only a head start: its failure (a filesystem without it) is not reported; the fsync that follows
     * answers for the bytes, and reports a write error itself. */
    if (S_ISREG(st.st_mode)) (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  }
  if (job->err == 0) fsync_all(job, fds, from, opened);
  for (size_t k = 0; k < opened; k++) close(fds[k]);
}

/* On a thread-pool thread: no JS, no napi calls. */
static void sync_execute(napi_env env, void *data) {
  (void)env;
  sync_job *job = data;
  for (size_t from = 0; from < job->count && job->err == 0; from += SYNC_CHUNK) {
    size_t left = job->count - from;
    sync_chunk(job, from, left < SYNC_CHUNK ? left : SYNC_CHUNK);
  }
}

static void sync_complete(napi_env env, napi_status status, void *data) {
  sync_job *job = data;
  if (status != napi_ok) sync_fail(job, ECANCELED, "syncPaths", 0);
  if (job->err == 0) {
    napi_resolve_deferred(env, job->deferred, wl_undefined(env));
  } else {
    napi_value error = wl_errno_error(env, job->err, job->syscall, job->failed < job->count ? job->paths[job->failed] : NULL);
    if (error == NULL) napi_get_and_clear_last_exception(env, &error);
    napi_reject_deferred(env, job->deferred, error);
  }
  napi_delete_async_work(env, job->work);
  wl_strv_free(job->paths);
  free(job);
}

static napi_value js_sync_paths(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!wl_args(env, info, 1, argv)) return NULL;
  sync_job *job = calloc(1, sizeof *job);
  if (job == NULL) return wl_throw_errno(env, ENOMEM, "calloc", NULL);
  if (!wl_string_array(env, argv[0], "paths", &job->paths, &job->count)) {
    free(job);
    return NULL;
  }
  napi_value promise, name;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok || napi_create_string_utf8(env, "worldline:syncPaths", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, sync_execute, sync_complete, job, &job->work) != napi_ok) {
    wl_strv_free(job->paths);
    free(job);
    return NULL;
  }
  if (napi_queue_async_work(env, job->work) != napi_ok) {
    napi_delete_async_work(env, job->work);
    wl_strv_free(job->paths);
    free(job);
    return NULL;
  }
  return promise;
}

bool wl_register_fsync(napi_env env, napi_value exports) {
  static const wl_fn fns[] = {{"fsyncPath", js_fsync_path}, {"fsyncFd", js_fsync_fd}, {"syncPaths", js_sync_paths}};
  return wl_export_fns(env, exports, fns, 3);
}
