/*
 * The drainers: background threads of this process that publish each
 * staged file once it is closed and left alone for the stage delay, and
 * run the early copies (precopy.c) meanwhile. At exit the thread that
 * waits for them publishes too (process.c).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/diag.h"
#include "core/config.h"
#include "stage/journal.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/guard.h"
#include "sys/real.h"

/* The next file due for publishing, or NULL; *wait_ns: until the next one. */
struct staged *stage_next_due_locked(int64_t now, int64_t *wait_ns)
{
    int64_t delay = stage_st.ending ? 0 : sluice_cfg.stage_delay_ms * 1000000;

    *wait_ns = 100000000;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next) {
            /* a failed file waits for `sluice drain` (or a reopen) */
            if (s->e.state != JOURNAL_CLOSED || s->opens || s->draining || s->failed || s->precopying ||
                s->handed_over)
                continue;
            int64_t due = s->closed_ns + delay;
            if (due <= now)
                return s;
            if (due - now < *wait_ns)
                *wait_ns = due - now;
        }
    return NULL;
}

/* Publish one due file (stage_st.lock held; dropped while its bytes are copied).
 * The drainers call it, and so does a thread waiting for them at exit. */
void stage_drain_one_locked(struct staged *s)
{
    char why[512];

    struct journal_entry e = s->e;
    int users = writers_hold(stage_st.ldir, e.id);
    if (users == -EBUSY) {
        /* another process writes it: later, or (at exit) it publishes it */
        if (stage_st.ending)
            s->handed_over = 1;
        else
            s->closed_ns = journal_now_ns();
        return;
    }
    /* Publishers exclude each other by the entry's lock (the job's drainer,
     * `sluice drain` and `recover` take it too): a second publish of a file
     * already published would find its data gone, fail, and write its
     * error back into an entry that no longer exists. */
    int jfd = journal_lock(stage_st.jdir, e.id, 0);
    if (jfd == -EWOULDBLOCK) {
        writers_release(stage_st.ldir, users, e.id, 0);
        int64_t delay = stage_st.ending ? 0 : sluice_cfg.stage_delay_ms * 1000000;
        s->closed_ns = journal_now_ns() + JOURNAL_LOCKED_RETRY_NS - delay;   /* (due again then) */
        return;
    }
    if (jfd == -ENOENT || (jfd >= 0 && stage_published_elsewhere(s))) {
        if (jfd >= 0)
            SLUICE_REAL(close)(jfd);
        writers_release(stage_st.ldir, users, e.id, 1);
        stage_forget_published_elsewhere_locked(s);
        return;
    }
    s->draining = 1;
    /* An early copy is completed from where it may be stale. */
    int pre_fd = s->pre_fd;
    int64_t from = s->pre_done < s->dirty_low ? s->pre_done : s->dirty_low;
    char tmp[sizeof s->pre_tmp];
    snprintf(tmp, sizeof tmp, "%s", s->pre_tmp);
    __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&stage_st.lock);
    int rc = pre_fd >= 0 ? publish_complete(stage_st.ddir, &e, pre_fd, tmp, from, (size_t)sluice_cfg.buffer_size,
                                            s->rec, why, sizeof why)
                         : publish_entry(stage_st.ddir, &e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
    pthread_mutex_lock(&stage_st.lock);
    s->draining = 0;
    if (s->opens || s->e.state != JOURNAL_CLOSED || strcmp(s->e.path, e.path) != 0) {
        /* reopened, renamed or unlinked meanwhile: it goes again later */
        if (jfd >= 0)
            SLUICE_REAL(close)(jfd);
        writers_release(stage_st.ldir, users, e.id, 0);
        pthread_cond_broadcast(&stage_st.done);
        return;
    }
    /* (the file leaves the tier before a writer waiting to join goes on:
     * it then finds the published file; and before the entry's lock goes:
     * nobody publishes it again) */
    if (rc == 0)
        stage_published_locked(s);
    if (jfd >= 0)
        SLUICE_REAL(close)(jfd);
    writers_release(stage_st.ldir, users, e.id, rc == 0);
    if (rc == 0) {
        stage_dir_note_published_locked(s->e.path);
        stage_forget_locked(s);
    } else {
        if (!s->failed)
            sluice_diag("stage mode: cannot publish %s (%s); it stays on the tier %s until `sluice drain`",
                        s->e.path, why, stage_st.tier);
        s->failed = 1;
        snprintf(s->e.error, sizeof s->e.error, "%.255s", why);
        s->e.updated_ns = journal_now_ns();
        if (s->own_publish && stage_job_running()) {
            s->own_publish = 0;
            stage_hand_over_locked(s);   /* the job's drainer tries again, and `sluice run` names it */
            return;
        }
        stage_entry_write_locked(s);
        pthread_cond_broadcast(&stage_st.done);
    }
}

static void *drainer_main(void *arg)
{
    sigset_t all;

    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    sluice__guard = 1;
    /* Copying in the background never takes a core the program wants (a
     * checkpoint written to the tier is CPU work, and an early copy beside
     * it made the program wait longer than without staging): the drainers
     * run only on idle CPU time, SCHED_IDLE. */
    struct sched_param idle = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    pthread_mutex_lock(&stage_st.lock);
    for (;;) {
        int64_t wait_ns;
        struct staged *s = stage_next_due_locked(journal_now_ns(), &wait_ns);
        if (!s && (s = stage_next_precopy_locked()) != NULL) {
            stage_precopy_step_locked(s);
            continue;
        }
        if (!s) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_ns / 1000000000;
            ts.tv_nsec += wait_ns % 1000000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&stage_st.work, &stage_st.lock, &ts);
            continue;
        }
        stage_drain_one_locked(s);
    }
    return NULL;
}

void stage_drainers_start_locked(void)
{
    int want = sluice_cfg.stage_drainers > 0 ? (int)sluice_cfg.stage_drainers : 1;

    while (stage_st.drainers < want) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &a, drainer_main, NULL);
        pthread_attr_destroy(&a);
        if (rc != 0)
            break;
        stage_st.drainers++;
    }
}
