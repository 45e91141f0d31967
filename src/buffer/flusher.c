/* The background flusher; see flusher.h. */
#include "buffer/flusher.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "buffer/budget.h"
#include "core/file.h"
#include "sys/guard.h"
#include "sys/real.h"

struct flush_job {
    struct buffer_inode *ino;
    struct sluice_file *file;
    int level;
    int append;
    struct buffer_window win;
    struct flush_job *next;
};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static struct flush_job *queue_head, *queue_tail;
static int thread_started;
static atomic_int jobs_pending;

static ssize_t raw_write(struct sluice_file *f, const void *p, size_t n, off_t off)
{
    ssize_t rc = off < 0 ? SLUICE_REAL(write)(f->fd, p, n) : SLUICE_REAL(pwrite)(f->fd, p, n, off);
    return rc < 0 ? -errno : rc;
}

int flush_window(struct sluice_file *f, int level, const struct buffer_window *w, int append, int64_t *end,
                 int raw)
{
    int err = 0;

    *end = 0;
    for (int i = 0; i < w->next; i++) {
        int64_t off = w->ext[i].start, left = w->ext[i].end - w->ext[i].start;
        const unsigned char *p = w->data + (off - w->base);
        while (left > 0) {
            off_t at = append ? SLUICE_OFF_CURRENT : off;
            ssize_t rc = raw ? raw_write(f, p, (size_t)left, at) : sluice_tier_write(f, level + 1, p, (size_t)left, at);
            if (rc == -EINTR)
                continue;
            if (rc <= 0) {
                /* Bytes before the failure are on the file system; the
                 * error goes to the application at its next call. */
                if (!err)
                    err = rc < 0 ? (int)rc : -EIO;
                break;
            }
            p += rc;
            off += rc;
            left -= rc;
            if (off > *end)
                *end = off;
        }
    }
    return err;
}

void flusher_account(struct buffer_inode *ino, int err, int64_t end)
{
    if (err && !ino->error)
        ino->error = err;
    if (end > ino->fs_size)
        ino->fs_size = end;
}

static void job_finish(struct flush_job *j, int err, int64_t end)
{
    struct buffer_inode *ino = j->ino;

    pthread_mutex_lock(&ino->lock);
    flusher_account(ino, err, end);
    if (--ino->inflight == 0) {
        ino->inflight_lo = ino->inflight_hi = 0;
        pthread_cond_broadcast(&ino->idle);
    }
    pthread_mutex_unlock(&ino->lock);
    window_free(&j->win, budget_reserve);
    sluice_file_put(j->file);
    free(j);
    atomic_fetch_sub(&jobs_pending, 1);
    budget_wake();
}

static void *flusher_main(void *arg)
{
    sigset_t all;

    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    sluice__guard = 1;   /* our own calls are never the application's */
    for (;;) {
        struct flush_job *j;
        int64_t end;
        pthread_mutex_lock(&queue_lock);
        while (!queue_head)
            pthread_cond_wait(&queue_cond, &queue_lock);
        j = queue_head;
        queue_head = j->next;
        if (!queue_head)
            queue_tail = NULL;
        pthread_mutex_unlock(&queue_lock);
        int err = flush_window(j->file, j->level, &j->win, j->append, &end, 0);
        job_finish(j, err, end);
    }
    return NULL;
}

static int flusher_start_locked(void)
{
    pthread_t t;
    pthread_attr_t a;

    if (thread_started)
        return 0;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &a, flusher_main, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0)
        return -rc;
    thread_started = 1;
    return 0;
}

void flusher_submit(struct buffer_inode *ino)
{
    struct flush_job *j;
    int64_t end;

    if (window_empty(&ino->win))
        return;
    j = malloc(sizeof *j);
    if (j) {
        j->ino = ino;
        j->file = ino->win_file;
        j->level = ino->win_level;
        j->append = ino->win_append;
        j->next = NULL;
        pthread_mutex_lock(&queue_lock);
        if (flusher_start_locked() == 0) {
            window_move(&ino->win, &j->win);
            ino->win_file = NULL;
            int64_t lo = j->win.ext[0].start, hi = window_end(&j->win);
            if (ino->inflight++ == 0 || lo < ino->inflight_lo)
                ino->inflight_lo = lo;
            if (hi > ino->inflight_hi)
                ino->inflight_hi = hi;
            atomic_fetch_add(&jobs_pending, 1);
            if (queue_tail)
                queue_tail->next = j;
            else
                queue_head = j;
            queue_tail = j;
            pthread_cond_signal(&queue_cond);
            pthread_mutex_unlock(&queue_lock);
            return;
        }
        pthread_mutex_unlock(&queue_lock);
        free(j);
    }
    /* No job (no memory, no thread): write it now, in order, after the
     * jobs already queued for this file. */
    while (ino->inflight > 0)
        pthread_cond_wait(&ino->idle, &ino->lock);
    int err = flush_window(ino->win_file, ino->win_level, &ino->win, ino->win_append, &end, 0);
    flusher_account(ino, err, end);
    window_free(&ino->win, budget_reserve);
    sluice_file_put(ino->win_file);
    ino->win_file = NULL;
}

int flusher_jobs_pending(void)
{
    return atomic_load(&jobs_pending);
}

int flusher_drain(int timeout_ms)
{
    struct timespec ms = {0, 1000 * 1000};

    for (int waited = 0; atomic_load(&jobs_pending) > 0 && waited < timeout_ms; waited++)
        nanosleep(&ms, NULL);
    return atomic_load(&jobs_pending);
}

void flusher_after_fork_child(void)
{
    pthread_mutex_init(&queue_lock, NULL);
    pthread_cond_init(&queue_cond, NULL);
    thread_started = 0;
    /* Jobs the parent had queued are the parent's to write. */
    queue_head = queue_tail = NULL;
    atomic_store(&jobs_pending, 0);
}
