/*
 * The bottom layer every part of libsluice may use: whether sluice is
 * recording, the per-thread reentrancy guard (sluice's own calls are never
 * the application's), and the conversion of internal returns (value or
 * -errno) into the C library's (-1 and errno). On success errno is restored
 * to its value at entry: a wrapper must never leak an errno from its own
 * bookkeeping.
 */
#ifndef SLUICE_SYS_GUARD_H
#define SLUICE_SYS_GUARD_H

#include <errno.h>
#include <sys/types.h>

enum sluice_state {
    SLUICE_STATE_LOADING = 0,  /* constructor not run yet: everything passes through */
    SLUICE_STATE_ACTIVE = 1,   /* recording */
    SLUICE_STATE_FINISHED = 2, /* log written (or being written), or disabled */
};

extern int sluice__state;                                     /* enum sluice_state */
extern __thread int sluice__guard __attribute__((tls_model("initial-exec")));

static inline int sluice_active(void)
{
    return __builtin_expect(__atomic_load_n(&sluice__state, __ATOMIC_RELAXED) == SLUICE_STATE_ACTIVE, 1) &&
           !sluice__guard;
}

static inline int sluice_ret_int(int rc, int saved_errno)
{
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    errno = saved_errno;
    return rc;
}

static inline ssize_t sluice_ret_ssize(ssize_t rc, int saved_errno)
{
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    errno = saved_errno;
    return rc;
}

/* True in the child of a vfork() before it execs: it shares the parent's
 * memory, so it must change no state of ours (it only dup2s and closes). */
int sluice_in_vfork_child(void);

#endif
