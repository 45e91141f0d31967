/*
 * This process's staged files at its boundaries: handed to the job's
 * drainer (at a close, an exec or the end, when one runs), published
 * before a fork (closed ones) and at the end (everything, waiting for the
 * drainers), and forgotten in a fork's child.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "core/config.h"
#include "core/file.h"
#include "stage/journal.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* Job mode: a staged file none of this process's descriptors holds is
 * left to the job's drainer: its entry says closed (with the path and mode
 * the journal has now: another process may have renamed its directory or
 * changed its mode), and this process forgets it; the index still names it,
 * so this process and every other find it on the tier until it is
 * published. Descriptors of other processes (a child's, an exec'd
 * program's) keep it from being published: the drainer sees them. */
void stage_hand_over_locked(struct staged *s)
{
    struct journal_entry disk;
    int lockfd;

    while (s->draining || s->precopying)
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    stage_precopy_drop_locked(s);
    lockfd = journal_lock(stage_st.jdir, s->e.id, 1);
    if (lockfd >= 0 && journal_read(stage_st.jdir, s->e.id, &disk) == 0) {
        if (disk.state == JOURNAL_REMOVED || disk.state == JOURNAL_PUBLISHED) {
            SLUICE_REAL(close)(lockfd);
            lockfd = -1;   /* removed by another process meanwhile: nothing to hand over */
        } else {
            snprintf(s->e.path, sizeof s->e.path, "%s", disk.path);
            s->e.mode = disk.mode;
        }
    }
    if (lockfd >= 0) {
        s->e.state = JOURNAL_CLOSED;
        s->closed_ns = s->e.updated_ns = journal_now_ns();
        int written = journal_write_locked(stage_st.jdir, &s->e, &lockfd) == 0;
        SLUICE_REAL(close)(lockfd);
        if (!written)
            s->own_publish = 1;   /* (the tier is full: the entry still says open; we publish it) */
        int ours = !written || !stage_job_running();
        /* (asked after the entry says closed: a drainer that ended before
         * saw it in its last look; one that ends now leaves it to us, and
         * so does the lock file; one in its last look may have taken it
         * already: under the entry's lock, as that drainer reads our lock
         * file, the entry says whether it did) */
        if (ours && written && (lockfd = journal_lock(stage_st.jdir, s->e.id, 1)) >= 0) {
            ours = !stage_published_elsewhere(s);
            SLUICE_REAL(close)(lockfd);
        } else if (ours && written && lockfd == -ENOENT) {
            ours = 0;
        }
        if (ours) {
            stage_drainers_start_locked();
            pthread_cond_signal(&stage_st.work);
            return;
        }
    }
    /* The drainer may publish it any moment: its directory no longer holds
     * only what this process stages, and a name staged there again must be
     * checked (and replace, or take with it, the published file) */
    stage_dir_note_published_locked(s->e.path);
    stage_table_unlink_locked(s);
    free(s);
    pthread_cond_broadcast(&stage_st.done);
}

/* Job mode, at exit or exec: every staged file goes to the job, open ones
 * too (what the process holds open at its end is complete); descriptors
 * that outlive this (an exec'd image's, a destructor's) write its data
 * file as before, and the drainer waits for them. */
static void detach_description(struct sluice_file *g, void *arg)
{
    struct stage_desc *gd = stage_desc_of_file(g);

    (void)arg;
    if (gd && gd->s) {
        gd->s->opens--;
        gd->s = NULL;
    }
}

static void hand_over_all_locked(void)
{
    sluice_files_each(detach_description, NULL);
rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next)
            if (!s->kept && !s->own_publish) {
                s->kept = 1;   /* (still here after: the drainer ended, we publish it) */
                stage_hand_over_locked(s);
                goto rescan;   /* (the table may have changed while it waited) */
            }
}

static int64_t pending_bytes_locked(int *files)
{
    int64_t bytes = 0;
    struct stat sb;

    *files = 0;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next)
            if (!s->failed) {
                (*files)++;
                if (stage_data_stat(s, &sb) == 0)
                    bytes += sb.st_size;
            }
    return bytes;
}

/* Before a fork: every closed staged file reaches the shared file system,
 * so that the child, which does not know our staged files, opens the real
 * file (a parent lays a file out, its child writes it: fio's pattern).
 * Files still open stay staged: the child writes them through the
 * descriptors it inherits. */
static void publish_closed_locked(void)
{
    char why[512];

rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next) {
            if (s->opens || s->e.state != JOURNAL_CLOSED || s->failed)
                continue;
            if (s->draining || s->precopying) {
                pthread_cond_wait(&stage_st.done, &stage_st.lock);
                goto rescan;   /* the table may have changed */
            }
            int users = writers_hold(stage_st.ldir, s->e.id);
            if (users == -EBUSY)
                continue;   /* another process writes it: it stays staged */
            stage_precopy_drop_locked(s);
            if (publish_entry(stage_st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why) == 0) {
                stage_published_locked(s);
                writers_release(stage_st.ldir, users, s->e.id, 1);
                stage_dir_note_published_locked(s->e.path);
                stage_forget_locked(s);   /* s is freed: scan again */
                goto rescan;
            }
            writers_release(stage_st.ldir, users, s->e.id, 0);
            s->failed = 1;   /* the drainers report it; the child sees the old file, or none */
        }
}

/* A file still to publish (or being published) by this process. */
static int any_unpublished_locked(void)
{
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next)
            if (s->draining || (!s->failed && !s->handed_over))
                return 1;
    return 0;
}

int stage_quiesce(unsigned why)
{
    int64_t start = journal_now_ns();
    int told = 0, files;

    /* Staged bytes are safe on the tier: a fork child shares them, and a
     * signal handler may not wait; the journal lets `sluice recover` finish. */
    if (stage_st.usable && (why & SLUICE_QUIESCE_FORK)) {
        /* a child may write through inherited descriptors where we do not see */
        pthread_mutex_lock(&stage_st.lock);
        for (int b = 0; b < STAGE_BUCKETS; b++)
            for (struct staged *s = stage_st.buckets[b]; s; s = s->next) {
                s->forked = 1;   /* (files staged after the fork are the parent's alone) */
                s->dirty_low = 0;
            }
        if (!stage_st.job)   /* (job mode: closed files are the job's already, seen through the index) */
            publish_closed_locked();
        pthread_mutex_unlock(&stage_st.lock);
    }
    if (!stage_st.usable || (why & (SLUICE_QUIESCE_FORK | SLUICE_QUIESCE_SIGNAL)))
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    if (stage_job_running()) {
        /* no wait: the job's drainer publishes */
        hand_over_all_locked();
        if (stage_st.count == 0) {
            stage_owner_lock_drop_locked();
            pthread_mutex_unlock(&stage_st.lock);
            return 0;
        }
        /* (the drainer ended meanwhile: what it did not take is published as without it) */
    }
    if (stage_st.count == 0 || sluice_cfg.stage_detach) {
        stage_owner_lock_drop_locked();   /* (kept while detached entries remain) */
        pthread_mutex_unlock(&stage_st.lock);
        return 0;
    }
    /* The program is ending: what it still holds open is complete. */
    stage_st.ending = 1;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next)
            if (s->e.state == JOURNAL_OPEN) {
                s->opens = 0;
                s->e.state = JOURNAL_CLOSED;
                s->closed_ns = journal_now_ns();
                stage_entry_write_locked(s);
            }
    stage_drainers_start_locked();
    pthread_cond_broadcast(&stage_st.work);
    for (;;) {
        if (!any_unpublished_locked())
            break;
        if (!told && journal_now_ns() - start > 1000000000LL) {
            /* (a stat per staged file: asked once, not at every publish) */
            int64_t bytes = pending_bytes_locked(&files);
            sluice_diag("stage mode: waiting for %d file%s (%.1f MiB) to reach the shared file system", files,
                        files == 1 ? "" : "s", bytes / 1048576.0);
            told = 1;
        }
        /* The program waits now: this thread publishes too, at the program's
         * own priority (the drainers' idle priority gets no CPU time on a
         * node whose cores are all busy). */
        int64_t unused;
        struct staged *due = stage_next_due_locked(journal_now_ns(), &unused);
        if (due) {
            stage_drain_one_locked(due);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&stage_st.done, &stage_st.lock, &ts);
    }
    stage_owner_lock_drop_locked();
    pthread_mutex_unlock(&stage_st.lock);
    return 0;
}

/* In a fork's child, a description of one of the parent's staged files
 * names a file another process staged: its data file, written and read as
 * it is, with the parent's mode for fstat. The child's close then only
 * closes its descriptor (the parent still has the file in its table; the
 * job's drainer learns of the child's descriptor from the kernel: a read
 * lease is refused while it is open for writing), where before it handed
 * the parent's entry over from a table the child had emptied (SIGSEGV:
 * `strace -o FILE`, whose test children close the output file). */
static void description_of_the_parent(struct sluice_file *g, void *arg)
{
    struct stage_desc *gd = stage_desc_of_file(g);

    (void)arg;
    if (!gd || !gd->s)
        return;
    gd->foreign = 1;
    gd->foreign_mode = gd->s->e.mode;
    snprintf(gd->foreign_id, sizeof gd->foreign_id, "%s", gd->s->e.id);
    gd->users_fd = -1;
    gd->s = NULL;
}

void stage_after_fork_child(void)
{
    /* The parent's staged files stay the parent's: forget them here, and
     * its ownership lock with them (closing our copy leaves the parent's
     * lock in place; the child takes its own at its first staged file).
     * (Every tier hears of every fork, set up or not: a tier that never
     * initialised holds no descriptor.) */
    if (stage_st.usable && stage_st.ownerfd >= 0) {
        sluice_privfd_close(stage_st.ownerfd);
        stage_st.ownerfd = -1;
    }
    pthread_mutex_init(&stage_st.lock, NULL);
    pthread_cond_init(&stage_st.work, NULL);
    pthread_cond_init(&stage_st.done, NULL);
    if (stage_st.usable)
        sluice_files_each(description_of_the_parent, NULL);
    memset(stage_st.buckets, 0, sizeof stage_st.buckets);
    stage_known_dirs_clear();
    stage_st.count = 0;
    stage_st.drainers = 0;
}
