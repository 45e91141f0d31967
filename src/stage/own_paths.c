/*
 * Path calls on a file this process staged: answered from the tier
 * (stat, truncate, chmod, times of an open file), or changing the staged
 * file instead of the shared file system (unlink, rename, a directory
 * renamed above it, a rename over it), or publishing it first for the
 * calls the tier does not keep (paths.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/record.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/real.h"

int stage_path_stat(const char *abs, struct stat *sb)
{
    int handled = 0;

    pthread_mutex_lock(&stage_st.lock);
    struct staged *s = stage_table_lookup_locked(abs);
    if (s && stage_data_stat(s, sb) == 0) {
        sb->st_mode = (sb->st_mode & ~07777) | s->e.mode;
        handled = 1;
    }
    pthread_mutex_unlock(&stage_st.lock);
    return handled;
}

int stage_path_truncate(const char *abs, off_t len, int *rc)
{
    struct staged *s;
    int fd;

    pthread_mutex_lock(&stage_st.lock);
    while ((s = stage_table_lookup_locked(abs)) != NULL && s->draining)
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (!s) {
        pthread_mutex_unlock(&stage_st.lock);
        return 0;
    }
    fd = SLUICE_REAL(openat)(stage_st.ddir, s->e.id, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    *rc = fd < 0 || SLUICE_REAL(ftruncate)(fd, len) != 0 ? -errno : 0;
    if (fd >= 0)
        SLUICE_REAL(close)(fd);
    pthread_mutex_unlock(&stage_st.lock);
    return 1;
}

int stage_path_unlink(const char *abs, int *rc)
{
    struct staged *s;

    pthread_mutex_lock(&stage_st.lock);
    while ((s = stage_table_lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (!s) {
        pthread_mutex_unlock(&stage_st.lock);
        return 0;   /* not ours (or just published: the shared file system's unlink) */
    }
    int existed = s->existed;
    /* Open descriptors keep the (now nameless) data file, as unlink does. */
    stage_discard_locked(s);
    pthread_mutex_unlock(&stage_st.lock);
    *rc = existed ? (SLUICE_REAL(unlink)(abs) == 0 || errno == ENOENT ? 0 : -errno) : 0;
    return 1;
}

int stage_path_rename(const char *from, const char *to, int *rc)
{
    struct staged *s, *t;

    pthread_mutex_lock(&stage_st.lock);
    for (;;) {
        s = stage_table_lookup_locked(from);
        t = stage_table_lookup_locked(to);
        if (!(s && (s->draining || s->precopying)) && !(t && (t->draining || t->precopying)))
            break;
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    }
    if (!s || strlen(to) >= sizeof s->e.path) {
        pthread_mutex_unlock(&stage_st.lock);
        return 0;
    }
    if (t && t != s) {
        stage_discard_locked(t);
    }
    int existed = s->existed;
    stage_table_unlink_locked(s);
    names_remove(stage_st.ndir, from, s->e.id);
    snprintf(s->e.path, sizeof s->e.path, "%s", to);
    (void)names_add(stage_st.ndir, to, s->e.id, s->e.mode);   /* (another's entry there was waited for) */
    /* what reaches the shared file system for it is counted on its new name */
    struct sluice_record *rec = sluice_record_get(SLUICE_MOD_POSIX, to);
    if (rec)
        s->rec = rec;
    s->e.updated_ns = journal_now_ns();
    /* a rename puts this file in the name's place; a file may stand there
     * on the shared file system (published a moment ago): if this one goes
     * from the node before it is published over it, that one goes too */
    s->existed = s->e.existed = 1;
    s->e.inplace = 0;
    stage_table_insert_locked(s);
    stage_entry_write_locked(s);
    pthread_cond_signal(&stage_st.work);
    pthread_mutex_unlock(&stage_st.lock);
    *rc = existed ? (SLUICE_REAL(unlink)(from) == 0 || errno == ENOENT ? 0 : -errno) : 0;
    return 1;
}

/* Sets the mode publish will give abs (staged here). 1 when staged. */
int stage_path_set_mode(const char *abs, mode_t mode)
{
    pthread_mutex_lock(&stage_st.lock);
    struct staged *s = stage_table_lookup_locked(abs);
    if (s) {
        s->e.mode = mode & 07777;
        s->e.updated_ns = journal_now_ns();
        stage_entry_write_locked(s);
        (void)names_update(stage_st.ndir, abs, s->e.id, s->e.mode);
    }
    pthread_mutex_unlock(&stage_st.lock);
    return s != NULL;
}

/* Another file took the name abs on the shared file system (a rename over
 * it): what this process staged under that name is gone, as the replaced
 * file is (descriptors open on it keep the nameless data file). */
void stage_drop_replaced(const char *abs)
{
    struct staged *s;

    pthread_mutex_lock(&stage_st.lock);
    while ((s = stage_table_lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (s) {
        stage_discard_locked(s);
    }
    pthread_mutex_unlock(&stage_st.lock);
}

/* A directory was renamed from `from` to `to` on the shared file system:
 * the files this process staged under it move with it (their entries,
 * journal and index), as files in a renamed directory do. */
void stage_dir_renamed(const char *from, const char *to)
{
    size_t n = strlen(from);
    char path[sizeof ((struct journal_entry *)0)->path];

    stage_forget_known_dirs();
    pthread_mutex_lock(&stage_st.lock);
rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = stage_st.buckets[b]; s; s = s->next) {
            if (strncmp(s->e.path, from, n) != 0 || s->e.path[n] != '/')
                continue;
            if (s->draining || s->precopying) {
                pthread_cond_wait(&stage_st.done, &stage_st.lock);
                goto rescan;
            }
            if ((size_t)snprintf(path, sizeof path, "%s%s", to, s->e.path + n) >= sizeof path)
                continue;
            stage_table_unlink_locked(s);
            names_remove(stage_st.ndir, s->e.path, s->e.id);
            stage_precopy_drop_locked(s);
            snprintf(s->e.path, sizeof s->e.path, "%s", path);
            s->failed = 0;   /* (a publish under the old name may have just failed) */
            s->e.updated_ns = journal_now_ns();
            stage_entry_write_locked(s);
            (void)names_add(stage_st.ndir, s->e.path, s->e.id, s->e.mode);
            stage_table_insert_locked(s);
            goto rescan;   /* (it may sit in a bucket not yet scanned) */
        }
    pthread_mutex_unlock(&stage_st.lock);
}

/* Calls stage mode does not keep for a staged file (link, chown, times,
 * xattrs, renameat2's flags): a closed staged file is published now, then
 * the call reaches the shared file system as it would have. 0 (published,
 * or not staged here) or -errno (publishing failed: the call gets it). */
int stage_publish_now(const char *abs)
{
    char why[512];
    struct staged *s;
    int rc = 0;

    if (!abs)
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    while ((s = stage_table_lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (s && s->opens == 0) {
        int users;
        /* another process writing it closes it first (a minute at most) */
        for (int tries = 0; (users = writers_hold(stage_st.ldir, s->e.id)) == -EBUSY && tries < 6000; tries++) {
            struct timespec ts = {0, 10 * 1000000};
            pthread_mutex_unlock(&stage_st.lock);
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&stage_st.lock);
            if ((s = stage_table_lookup_locked(abs)) == NULL || s->opens || s->draining)
                break;
        }
        if (users == -EBUSY || !s || s->opens || s->draining) {
            writers_release(stage_st.ldir, users, abs, 0);
            pthread_mutex_unlock(&stage_st.lock);
            return s && users == -EBUSY ? -EBUSY : 0;
        }
        stage_precopy_drop_locked(s);
        rc = publish_entry(stage_st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
        if (rc == 0)
            stage_published_locked(s);
        writers_release(stage_st.ldir, users, s->e.id, rc == 0);
        if (rc == 0) {
            stage_dir_note_published_locked(s->e.path);
            stage_forget_locked(s);
        }
    }
    pthread_mutex_unlock(&stage_st.lock);
    return rc;
}

/* Times set on a staged file that is open: they are the data file's, and
 * its publish carries them. 1 when abs is such a file (*rc: the result). */
int stage_set_times_open(const char *abs, const struct timespec times[2], int *rc)
{
    struct staged *s;
    int hit;

    if (!abs)
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    hit = (s = stage_table_lookup_locked(abs)) != NULL && s->opens > 0;
    if (hit) {
        *rc = SLUICE_REAL(utimensat)(stage_st.ddir, s->e.id, times, 0) == 0 ? 0 : -errno;
        if (*rc == 0)
            s->e.keep_times = 1;
    }
    pthread_mutex_unlock(&stage_st.lock);
    return hit;
}
