/* What the addon and the shim (native/src/shim/) share without N-API: the EINTR retry. */
#ifndef WL_SYS_H
#define WL_SYS_H

#include <errno.h>

/* Retry a syscall expression while it fails with EINTR. */
#define WL_RETRY(expr)                                                                                     \
  ({                                                                                                       \
    __typeof__(expr) wl_r_;                                                                                \
    do {                                                                                                   \
      wl_r_ = (expr);                                                                                      \
    } while (wl_r_ == -1 && errno == EINTR);                                                               \
    wl_r_;                                                                                                 \
  })

#endif
