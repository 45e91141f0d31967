/* Staged files left to the job; see handoff.h and docs/stage.md. */
#include "stage/handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "stage/names.h"
#include "stage/writers.h"
#include "sys/real.h"

/* locks/HOST-PID of entry id, open; -errno when there is none. */
static int owner_file(int ldir, const char *id)
{
    char owner[96];
    const char *dash = strrchr(id, '-');

    if (!dash || (size_t)(dash - id) >= sizeof owner)
        return -EINVAL;
    snprintf(owner, sizeof owner, "%.*s", (int)(dash - id), id);
    int fd = SLUICE_REAL(openat)(ldir, owner, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    return fd < 0 ? -errno : fd;
}

int handoff_owner_job(int ldir, const char *id, char *job, size_t len)
{
    char mark[128];
    int fd = owner_file(ldir, id);

    job[0] = '\0';
    if (fd == -ENOENT)
        return 1;   /* its process ended (and nothing of it is on the tier under its lock) */
    if (fd < 0)
        return 0;
    int free_ = SLUICE_REAL(flock)(fd, LOCK_SH | LOCK_NB) == 0;
    ssize_t n = SLUICE_REAL(pread)(fd, mark, sizeof mark - 1, 0);
    SLUICE_REAL(close)(fd);
    if (n > 4 && memcmp(mark, "job ", 4) == 0 && mark[n - 1] == '\n') {
        mark[n - 1] = '\0';
        snprintf(job, len, "%s", mark + 4);
        return 1;
    }
    return free_;
}

int handoff_owner_released(int ldir, const char *id)
{
    char job[128];
    return handoff_owner_job(ldir, id, job, sizeof job);
}

int handoff_get(const struct tier_dirs *t, const char *abs, struct journal_entry *e, int *lockfd)
{
    struct names_entry ne;
    int fd;

    if (!names_lookup(t->ndir, abs, &ne))
        return 0;
    fd = journal_lock(t->jdir, ne.id, 1);
    if (fd < 0)
        return 0;   /* published and gone meanwhile */
    if (journal_read(t->jdir, ne.id, e) != 0 || strcmp(e->path, abs) != 0 || e->state == JOURNAL_PUBLISHED ||
        e->state == JOURNAL_REMOVED) {
        SLUICE_REAL(close)(fd);
        return 0;
    }
    /* (an entry of this very process that is not in its table, which the
     * callers look in first, is one it let go of: its owner lock, held
     * until it exits, says nothing then; waiting on it would wait on
     * ourselves) */
    if (e->state != JOURNAL_CLOSED || (e->pid != getpid() && !handoff_owner_released(t->ldir, e->id))) {
        SLUICE_REAL(close)(fd);
        return -EAGAIN;
    }
    *lockfd = fd;
    return 1;
}

void handoff_discard(const struct tier_dirs *t, struct journal_entry *e, int *lockfd, int job)
{
    if (job) {
        e->state = JOURNAL_REMOVED;
        e->updated_ns = journal_now_ns();
        (void)journal_write_locked(t->jdir, e, lockfd);
    }
    (void)SLUICE_REAL(unlinkat)(t->ddir, e->id, 0);
    names_remove(t->ndir, e->path, e->id);
    writers_forget(t->ldir, e->id);
    if (!job)
        (void)SLUICE_REAL(unlinkat)(t->jdir, e->id, 0);
}

int handoff_move(const struct tier_dirs *t, struct journal_entry *e, int *lockfd, const char *to)
{
    char from[sizeof e->path];
    int rc;

    if (strlen(to) >= sizeof e->path)
        return -ENAMETOOLONG;
    snprintf(from, sizeof from, "%s", e->path);
    if ((rc = names_add(t->ndir, to, e->id, e->mode)) != 0)
        return rc;
    snprintf(e->path, sizeof e->path, "%s", to);
    e->inplace = 0;   /* it takes the new name's place whole */
    /* (a file may stand at `to` on the shared file system, published a
     * moment ago: if this one goes from the node before it is published
     * over it, that one goes too, as the rename would have replaced it) */
    e->existed = 1;
    e->updated_ns = journal_now_ns();
    (void)journal_write_locked(t->jdir, e, lockfd);
    names_remove(t->ndir, from, e->id);
    return 0;
}

static void hold_one(void *arg, const char *below, const char *id)
{
    struct handoff_dir *d = arg;

    (void)below;
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->held[i].id, id) == 0)
            return;   /* (an exchange of two trees, one inside the other: once) */
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 16;
        void *p = realloc(d->held, (size_t)cap * sizeof *d->held);
        if (!p)
            return;
        d->held = p;
        d->cap = cap;
    }
    snprintf(d->held[d->n].id, sizeof d->held[d->n].id, "%s", id);
    d->held[d->n].fd = -1;
    d->n++;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct handoff_locked *)a)->id, ((const struct handoff_locked *)b)->id);
}

void handoff_dir_lock(const struct tier_dirs *t, const char *dir, const char *dir2, struct handoff_dir *d)
{
    names_under(t->ndir, dir, hold_one, d);
    if (dir2)
        names_under(t->ndir, dir2, hold_one, d);
    /* (in id order, each once: two processes renaming overlapping trees
     * never wait on each other in a circle, nor on themselves) */
    if (d->n > 1)
        qsort(d->held, (size_t)d->n, sizeof *d->held, by_id);
    for (int i = 0; i < d->n; i++)
        d->held[i].fd = journal_lock(t->jdir, d->held[i].id, 1);
}

/* The path e.path takes when directory from becomes to (and, exchanged,
 * to becomes from): 1 and out, or 0 when it is under neither. */
static int moved_path(const char *path, const char *from, const char *to, int exchanged, char *out, size_t len)
{
    size_t n = strlen(from), m = strlen(to);

    if (strncmp(path, from, n) == 0 && path[n] == '/')
        return (size_t)snprintf(out, len, "%s%s", to, path + n) < len;
    if (exchanged && strncmp(path, to, m) == 0 && path[m] == '/')
        return (size_t)snprintf(out, len, "%s%s", from, path + m) < len;
    return 0;
}

void handoff_dir_moved(const struct tier_dirs *t, struct handoff_dir *d, const char *from, const char *to,
                       int exchanged)
{
    struct journal_entry *e = calloc((size_t)(d->n ? d->n : 1), sizeof *e);
    char path[sizeof e->path];

    if (!e)
        return;
    /* every old name first, then the new ones: an exchange swaps names */
    for (int i = 0; i < d->n; i++) {
        if (d->held[i].fd < 0 || journal_read(t->jdir, d->held[i].id, &e[i]) != 0 ||
            e[i].state == JOURNAL_PUBLISHED || e[i].state == JOURNAL_REMOVED ||
            !moved_path(e[i].path, from, to, exchanged, path, sizeof path)) {
            e[i].id[0] = '\0';
            continue;
        }
        names_remove(t->ndir, e[i].path, e[i].id);
        snprintf(e[i].path, sizeof e[i].path, "%s", path);
    }
    /* (moved, whoever holds it: a process that has it open takes the
     * journal's path when it hands it over) */
    for (int i = 0; i < d->n; i++) {
        if (!e[i].id[0])
            continue;
        e[i].updated_ns = journal_now_ns();
        (void)journal_write_locked(t->jdir, &e[i], &d->held[i].fd);
        (void)names_add(t->ndir, e[i].path, e[i].id, e[i].mode);
    }
    free(e);
}

void handoff_dir_release(struct handoff_dir *d)
{
    for (int i = 0; i < d->n; i++) {
        if (d->held[i].fd >= 0)
            SLUICE_REAL(close)(d->held[i].fd);
    }
    free(d->held);
    d->held = NULL;
    d->n = d->cap = 0;
}
