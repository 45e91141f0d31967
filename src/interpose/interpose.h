/*
 * What every wrapper needs: whether sluice is active in this thread, the
 * reentrancy guard, and the conversion of internal returns (value or
 * -errno) into the C library's (-1 and errno), done here and nowhere else.
 * On success errno is restored to its value at entry: a wrapper must never
 * leak an errno from its own bookkeeping.
 */
#ifndef SLUICE_INTERPOSE_H
#define SLUICE_INTERPOSE_H

#include <errno.h>
#include <sys/types.h>

#include "interpose/real.h"

#define SLUICE_EXPORT __attribute__((visibility("default")))

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

/* Write this process's log once and stop recording (exit, exec, _exit,
 * SIGTERM). Returns 0 if this call wrote it. */
int sluice_finish(unsigned end_reason, unsigned flags, char *path, unsigned long path_len);

/* After a failed exec: drop the log written for it and record again. */
void sluice_resume_after_exec_failure(const char *log_path);

#endif
