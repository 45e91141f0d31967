/*
 * Early copies (SLUICE_STAGE_PRECOPY): a large staged file still being
 * written is copied to its temporary file on the shared file system in the
 * background, so that its publish at close has only the rest to copy. The
 * drainers run the copies (drainers.c); a write the program makes below
 * what was copied marks the copy stale from there.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/file.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* Drop an early copy (the file was renamed, unlinked or moved). */
void stage_precopy_drop_locked(struct staged *s)
{
    if (s->pre_fd >= 0) {
        sluice_privfd_close(s->pre_fd);
        SLUICE_REAL(unlink)(s->pre_tmp);
        __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
    }
}

/* Where a write of rc bytes just landed (off: as the program gave it). */
int64_t stage_written_at(struct sluice_file *f, off_t off, ssize_t rc)
{
    struct stat sb;
    int64_t at;

    if (f->flags & O_APPEND)   /* appended, whatever off said */
        at = SLUICE_REAL(fstat)(f->fd, &sb) == 0 ? (int64_t)sb.st_size - rc : 0;
    else if (off >= 0)
        at = off;
    else
        at = (int64_t)SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR) - rc;
    return at > 0 ? at : 0;
}

/* The program wrote (or truncated) at off: an early copy holds stale bytes
 * from there on. */
void stage_precopy_note_write(struct staged *s, int64_t off)
{
    if (__atomic_load_n(&s->pre_fd, __ATOMIC_RELAXED) < 0 && !__atomic_load_n(&s->precopying, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&stage_st.lock);
    if (off < s->dirty_low)
        s->dirty_low = off;
    pthread_mutex_unlock(&stage_st.lock);
}

/* A file still open with at least SLUICE_STAGE_PRECOPY bytes not yet
 * copied early, or NULL. */
struct staged *stage_next_precopy_locked(void)
{
    struct stat sb;

    if (sluice_cfg.stage_precopy <= 0 || stage_st.ending)
        return NULL;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next)
            /* (not into a file published in place: its name would hold
             * new bytes before the program closed it) */
            if (s->e.state == JOURNAL_OPEN && !s->draining && !s->precopying && !s->e.inplace && !s->forked &&
                stage_data_stat(s, &sb) == 0 && sb.st_size - s->pre_done >= sluice_cfg.stage_precopy)
                return s;
    return NULL;
}

/* Copy what a large open file holds so far to its temporary file. */
void stage_precopy_step_locked(struct staged *s)
{
    char why[512];
    struct stat sb;
    int src;

    /* (precopying and pre_fd are read without the lock by stage_precopy_note_write) */
    __atomic_store_n(&s->precopying, 1, __ATOMIC_RELAXED);
    if (s->pre_fd < 0) {
        s->dirty_low = INT64_MAX;
        s->pre_done = 0;
        __atomic_store_n(&s->pre_fd, publish_begin(&s->e, s->rec, s->pre_tmp, sizeof s->pre_tmp, why, sizeof why),
                         __ATOMIC_RELAXED);
        if (s->pre_fd < 0) {
            __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->precopying, 0, __ATOMIC_RELAXED);
            s->pre_done = INT64_MAX / 2;   /* no early copy for this file */
            return;
        }
    }
    int64_t from = s->pre_done;
    struct journal_entry e = s->e;
    int dst = s->pre_fd, sparse;   /* (the size is set when the publish completes) */
    pthread_mutex_unlock(&stage_st.lock);
    src = sluice_privfd_keep(SLUICE_REAL(openat)(stage_st.ddir, e.id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0));
    int ok = src >= 0 && SLUICE_REAL(fstat)(src, &sb) == 0 &&
             publish_copy_from(src, dst, from, sb.st_size, (size_t)sluice_cfg.buffer_size, s->rec, &sparse) == 0;
    if (src >= 0)
        sluice_privfd_close(src);
    pthread_mutex_lock(&stage_st.lock);
    if (ok)
        s->pre_done = sb.st_size;
    else
        stage_precopy_drop_locked(s);   /* the publish at close does it all */
    __atomic_store_n(&s->precopying, 0, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&stage_st.done);
}
