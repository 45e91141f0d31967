/*
 * A file on the tier moves to the shared file system while descriptions
 * are open on it (the tier is full, mmap, an exec, fchown, xattrs, a
 * fallocate mode the tier lacks, auto's large first write): it is
 * published now, and every description of it in this process is pointed
 * at the published file, keeping its number, position and flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/record.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* Where a description's stage tier keeps its state, or NULL (not staged). */
struct stage_desc *stage_desc_of_file(struct sluice_file *g)
{
    for (int i = 0; i < g->depth; i++)
        if (g->tier[i] == &sluice_tier_stage)
            return g->tier_state[i];
    return NULL;
}

struct move {
    struct staged *s;
    int counter;
    int rc;   /* the first failure */
};

/* Description g, on a data file the tier just published as path, names the
 * published file instead: the same number, position, flags and
 * close-on-exec flag (and the program's other numbers for it). 0 or -errno. */
static int reopen_published(struct sluice_file *g, const char *path)
{
    off_t pos = SLUICE_REAL(lseek)(g->fd, 0, SEEK_CUR);
    int fdflags = SLUICE_REAL(fcntl)(g->fd, F_GETFD);
    uint64_t t0 = sluice_now();
    int nfd = SLUICE_REAL(open)(path, (g->flags & (O_ACCMODE | O_APPEND)) | O_CLOEXEC, 0);

    if (nfd < 0 || SLUICE_REAL(dup3)(nfd, g->fd, fdflags > 0 && (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
        int err = -errno;
        if (nfd >= 0)
            SLUICE_REAL(close)(nfd);
        return err;
    }
    SLUICE_REAL(close)(nfd);
    /* the file system saw the open, and the seek to where the program was */
    sluice_count_open(g->rec, SLUICE_SIDES_FS, t0, sluice_now());
    sluice_count_open_flags(g->rec, SLUICE_SIDES_FS, g->flags & (O_ACCMODE | O_APPEND));
    if (pos >= 0) {
        t0 = sluice_now();
        if (SLUICE_REAL(lseek)(g->fd, pos, SEEK_SET) >= 0)
            sluice_count_meta(g->rec, SLUICE_SIDES_FS, POSIX_SEEKS, t0, sluice_now());
    }
    /* (a number the program dup'ed would still name the tier's file: the
     * kernel, stdio or an exec'd image would write the data file the
     * publish removes) */
    sluice_file_descriptors_follow(g);
    return 0;
}

/* After the publish: a description of m->s names the published file now
 * (same number, position, flags and close-on-exec flag; the program's
 * other numbers for it too) and goes straight through. Under stage_st.lock. */
static void move_description(struct sluice_file *g, void *arg)
{
    struct move *m = arg;
    struct stage_desc *gd = stage_desc_of_file(g);

    if (!gd || gd->s != m->s)
        return;
    int rc = reopen_published(g, m->s->e.path);
    if (rc) {
        if (!m->rc)
            m->rc = rc;
        return;
    }
    gd->s = NULL;
    m->s->opens--;
    uint64_t t = sluice_now();
    sluice_count_meta(g->rec, SLUICE_SIDES_BOTH, m->counter, t, t);
}

/* The tier is full under a staged file (or mmap, fchown, an exec, auto's
 * large first write): publish what it holds, point every description of it
 * at the shared file and go on straight through. All of them: a second
 * publish would replace the file under the first. 0 or -errno. */
int stage_move_to_shared(struct sluice_file *f, struct stage_desc *d, int counter)
{
    struct staged *s = d->s;
    struct move m = {s, counter, 0};
    char why[512];
    int rc;

    pthread_mutex_lock(&stage_st.lock);
    while (s->draining || s->precopying)
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (counter == POSIX_AUTO_DIRECT && s->opens != 1) {
        /* another thread opened the file meanwhile: auto's move is only for
         * a file one description has open */
        pthread_mutex_unlock(&stage_st.lock);
        return -EBUSY;
    }
    /* Another process writing the file through the tier would go on
     * writing a data file that the publish removes: no move then (the
     * caller's error stands), as no drainer publishes it then. Held, the
     * lock keeps new writers waiting until the file is on the shared file
     * system, where they then find it. */
    int users = writers_hold(stage_st.ldir, s->e.id);
    if (users == -EBUSY) {
        pthread_mutex_unlock(&stage_st.lock);
        return -EBUSY;
    }
    stage_precopy_drop_locked(s);
    rc = publish_entry(stage_st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
    if (rc == 0) {
        stage_dir_note_published_locked(s->e.path);
        move_description(f, &m);   /* (first: the caller's, whatever the table holds) */
        sluice_files_each(move_description, &m);
        if (s->opens == 0)
            stage_published_locked(s);
    }
    writers_release(stage_st.ldir, users, s->e.id, rc == 0);
    if (rc == 0) {
        if (s->opens == 0)
            stage_forget_locked(s);
        rc = d->s ? (m.rc ? m.rc : -EIO) : 0;
    }
    pthread_mutex_unlock(&stage_st.lock);
    return rc;
}

/* A description of another process's staged file, or one handed to the
 * job, that must reach the shared file system (a fallocate mode the tier
 * does not have, fchown, extended attributes): the file is published now
 * (not while yet another process writes it through the tier: -EBUSY), and
 * this process's descriptions of it move to the published file, keeping
 * their numbers, positions and flags. 0 or -errno. */
struct foreign_move {
    char id[96];
    const char *path;
    int rc;
};

static void move_foreign_description(struct sluice_file *g, void *arg)
{
    struct foreign_move *m = arg;
    struct stage_desc *gd = stage_desc_of_file(g);

    if (!gd || !gd->foreign || strcmp(gd->foreign_id, m->id) != 0)
        return;
    int rc = reopen_published(g, m->path);
    if (rc) {
        if (!m->rc)
            m->rc = rc;
        return;
    }
    gd->foreign = 0;
    if (gd->users_fd >= 0) {
        sluice_privfd_close(gd->users_fd);
        gd->users_fd = -1;
    }
}

/* only_empty: auto's move at a first write, while nobody has written the
 * data file yet. */
static int foreign_move_to_shared(struct sluice_file *f, struct stage_desc *d, int only_empty)
{
    struct foreign_move m = {.path = f->rec->path};
    struct journal_entry e;
    struct stat sb;
    char why[512];
    int lockfd, users, rc;

    /* Under the entry's lock no other publish runs: this writer's own lock
     * (held shared) may be let go for the publish and taken again when
     * another writer has the file open, with no publish in between. */
    if (handoff_get(&stage_st.dirs, f->rec->path, &e, &lockfd) != 1)
        return -EBUSY;   /* its process still has it open */
    snprintf(m.id, sizeof m.id, "%s", e.id);
    if (only_empty && (SLUICE_REAL(fstatat)(stage_st.ddir, e.id, &sb, AT_SYMLINK_NOFOLLOW) != 0 || sb.st_size != 0)) {
        SLUICE_REAL(close)(lockfd);
        return -EBUSY;   /* written already: its bytes are on the tier */
    }
    if (d->users_fd >= 0) {
        sluice_privfd_close(d->users_fd);
        d->users_fd = -1;
    }
    if ((users = writers_hold(stage_st.ldir, e.id)) == -EBUSY) {
        int ufd = writers_join(stage_st.ldir, e.id);
        d->users_fd = ufd >= 0 ? ufd : -1;
        SLUICE_REAL(close)(lockfd);
        return -EBUSY;
    }
    struct sluice_record *rec = f->rec;
    sluice_record_split_sides(rec);
    rc = publish_entry(stage_st.ddir, &e, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why);
    if (rc == 0) {
        publish_finish(stage_st.ddir, stage_st.jdir, stage_st.ndir, &e);
        pthread_mutex_lock(&stage_st.lock);
        move_foreign_description(f, &m);   /* (first: the caller's) */
        sluice_files_each(move_foreign_description, &m);
        pthread_mutex_unlock(&stage_st.lock);
        rc = d->foreign ? (m.rc ? m.rc : -EIO) : 0;
    }
    writers_release(stage_st.ldir, users, e.id, rc == 0);
    SLUICE_REAL(close)(lockfd);
    return rc;
}

/* Auto's move at the first write of another process's file, handed to the
 * job and still empty, that this process opened by name: only while no
 * other writer has it open through the tier (N-1: a parent made it, this
 * process writes the first part of it). POSIX_AUTO_DIRECT. 0 or -errno. */
int stage_foreign_move_at_first_write(struct sluice_file *f, struct stage_desc *d)
{
    int rc = foreign_move_to_shared(f, d, 1);
    if (rc == 0) {
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_AUTO_DIRECT, t, t);
    }
    return rc;
}

/* A description on the tier moves to the shared file system: this
 * process's staged file, or another's it opened by name. */
int stage_desc_move_to_shared(struct sluice_file *f, struct stage_desc *d)
{
    if (d->s)
        return stage_move_to_shared(f, d, POSIX_FALLBACKS);
    if (d->foreign)
        return foreign_move_to_shared(f, d, 0);
    return 0;
}
