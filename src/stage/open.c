/*
 * Which opens the tier serves: a file this process staged already,
 * another process's staged file (its data file, shared), or a new or
 * truncated file for writing, which is staged once the shared file system
 * says it may be written (docs/stage.md). Everything else goes straight
 * through.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/clock.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/stack.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/privfd.h"
#include "sys/real.h"
#include "sys/umask.h"

/* One of the tier's own look-ups on the shared file system (does the file
 * or its directory exist, may we write it): an operation the file system
 * served, answered yes or no. A no is the tier's answer, not an error of
 * the program's, and is never counted as one. */
static void count_fs(struct sluice_file *f, int counter, uint64_t t0)
{
    sluice_count_meta(f->rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
}

/* An open the node-local tier serves (POSIX_STAGED_OPENS): what auto mode
 * chose for this file, and what stage mode did with it. */
static void count_tier_open(struct sluice_file *f)
{
    uint64_t t = sluice_now();
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_STAGED_OPENS, t, t);
}

/* Flags for the data file: the program's access mode and position rules. */
static int data_flags(int flags)
{
    return (flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_CLOEXEC)) | O_NOFOLLOW;
}

/* Room on the tier for a new file. */
static int tier_has_room(void)
{
    struct statvfs sv;
    if (fstatvfs(stage_st.ddir, &sv) != 0)
        return 0;
    return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize >= sluice_cfg.stage_reserve;
}

/* A new staged file for abs; returns the data file's descriptor or -errno. */
static int stage_new_locked(struct sluice_file *f, struct stage_desc *d, const char *abs, int flags,
                            mode_t mode, int existed, int keep_inode)
{
    struct staged *s = calloc(1, sizeof *s);
    int fd, err = 0;

    if (!s)
        return -ENOMEM;
    snprintf(s->e.id, sizeof s->e.id, "%s-%ld-%lu", stage_st.host, (long)getpid(), ++stage_st.seq);
    snprintf(s->e.path, sizeof s->e.path, "%s", abs);
    s->e.mode = (existed ? mode : mode & ~sluice_umask_get()) & 07777;
    s->e.state = JOURNAL_OPEN;
    s->e.pid = getpid();
    s->e.created_ns = s->e.updated_ns = journal_now_ns();
    s->existed = existed;
    s->e.existed = existed;
    s->e.inplace = existed && keep_inode;   /* published into the same file (see stage_open_abs) */
    s->rec = f->rec;
    s->pre_fd = -1;
    fd = SLUICE_REAL(openat)(stage_st.ddir, s->e.id, data_flags(flags) | O_CREAT | O_EXCL, 0600);
    for (int tries = 0; fd < 0 && errno == EEXIST && tries < 8; tries++) {
        snprintf(s->e.id, sizeof s->e.id, "%s-%ld-%lu", stage_st.host, (long)getpid(), ++stage_st.seq);
        fd = SLUICE_REAL(openat)(stage_st.ddir, s->e.id, data_flags(flags) | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        err = -errno;
        free(s);
        return err;
    }
    if (stage_owner_lock_locked() != 0 || (err = journal_write(stage_st.jdir, &s->e)) != 0 ||
        (err = names_add(stage_st.ndir, abs, s->e.id, s->e.mode)) != 0) {
        /* -EEXIST: another process on the node staged the name meanwhile */
        err = err == -EEXIST ? -EEXIST : -EIO;
        SLUICE_REAL(close)(fd);
        SLUICE_REAL(unlinkat)(stage_st.jdir, s->e.id, 0);
        SLUICE_REAL(unlinkat)(stage_st.ddir, s->e.id, 0);
        free(s);
        return err;
    }
    s->opens = 1;
    stage_table_insert_locked(s);
    d->s = s;
    if (sluice_cfg.stage_precopy > 0)
        stage_drainers_start_locked();   /* early copies run while the program writes */
    return fd;
}

int stage_open_abs(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode,
                   const char *abs)
{
    struct stage_desc *d = stage_desc_of(f, level);
    struct staged *s;
    struct stat sb;
    int fd, existed = 0, keep_inode = 0, retried = 0;
    uint64_t t0;

    d->s = NULL;
    d->foreign = 0;
    d->foreign_wrote = 0;
    d->users_fd = -1;
    if (!stage_st.usable || abs[0] != '/')
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
again:
    existed = keep_inode = 0;
    pthread_mutex_lock(&stage_st.lock);
    /* A file being published is not changed under the drainer's mapping:
     * wait for that publish (it goes again after this open's close). */
    while ((s = stage_table_lookup_locked(abs)) != NULL && s->draining)
        pthread_cond_wait(&stage_st.done, &stage_st.lock);
    if (s) {
        /* Staged here already: the data file, and no shared-FS operation. */
        if ((flags & O_CREAT) && (flags & O_EXCL)) {
            pthread_mutex_unlock(&stage_st.lock);
            return -EEXIST;
        }
        /* (the entry says open before an O_TRUNC empties the data file: a
         * kill in between leaves an open entry, kept aside by `recover`,
         * not a closed one that publishes an empty file under its name) */
        struct stat dsb;
        if (s->e.state == JOURNAL_CLOSED && stage_data_stat(s, &dsb) != 0 && errno == ENOENT &&
            stage_published_elsewhere(s)) {
            /* the job's drainer published it (in its last look, as this
             * process took it back): it is on the shared file system now */
            stage_forget_published_elsewhere_locked(s);
            pthread_mutex_unlock(&stage_st.lock);
            goto again;
        }
        enum journal_state was = s->e.state;
        if (was != JOURNAL_OPEN) {
            s->e.state = JOURNAL_OPEN;
            s->e.updated_ns = journal_now_ns();
            stage_entry_write_locked(s);
        }
        fd = SLUICE_REAL(openat)(stage_st.ddir, s->e.id, data_flags(flags), 0);
        if (fd < 0) {
            fd = -errno;
            if (was != JOURNAL_OPEN) {
                s->e.state = was;
                stage_entry_write_locked(s);
            }
        } else {
            s->opens++;
            s->failed = 0;
            count_tier_open(f);
            d->s = s;
        }
        pthread_mutex_unlock(&stage_st.lock);
        return fd;
    }
    pthread_mutex_unlock(&stage_st.lock);

    /* Staged by another process on the node (or handed to the job): an
     * exclusive create fails; any other open shares its data file, as it
     * would share the file, holding locks/ID.users (shared) while open, so
     * that it is published only after the last such descriptor closed: a
     * reader's descriptor must not go on reading a data file that the
     * publish removed while the file changes on the shared file system. */
    struct names_entry ne;
    if (stage_foreign_lookup(abs, &ne)) {
        if ((flags & O_CREAT) && (flags & O_EXCL))
            return -EEXIST;
        if (!(flags & (O_DIRECTORY | O_PATH))) {
            struct names_entry again;
            int ufd = writers_join(stage_st.ldir, ne.id);
            if (ufd >= 0 && stage_foreign_lookup(abs, &again) && strcmp(again.id, ne.id) == 0) {
                fd = SLUICE_REAL(openat)(stage_st.ddir, ne.id, (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW, 0);
                if (fd >= 0) {
                    d->foreign = 1;
                    d->foreign_mode = again.mode;
                    d->users_fd = ufd;
                    snprintf(d->foreign_id, sizeof d->foreign_id, "%s", ne.id);
                    count_tier_open(f);
                    return fd;
                }
            }
            if (ufd >= 0)
                sluice_privfd_close(ufd);
            /* published meanwhile: on as for any other file */
        }
    }

    /* Not staged: only a new or truncated file for writing is; reading or
     * updating an existing file goes straight through. */
    if ((flags & O_ACCMODE) == O_RDONLY || !(flags & (O_CREAT | O_TRUNC)) || (flags & (O_DIRECTORY | O_PATH)))
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    char dir[4096];
    const char *slash = strrchr(abs, '/');
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - abs), abs);
    pthread_mutex_lock(&stage_st.lock);
    int dir_state = !dir[0] ? 1 : stage_dir_known_locked(dir);
    pthread_mutex_unlock(&stage_st.lock);
    if (!(flags & O_TRUNC)) {
        pthread_mutex_lock(&stage_st.lock);
        int known = stage_recently_published_locked(abs);
        pthread_mutex_unlock(&stage_st.lock);
        if (known)
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);   /* it exists: not staged */
    }
    t0 = sluice_now();
    if (dir_state == 2 && (flags & O_CREAT)) {
        /* a directory this process made holds only what it put there: a
         * file not staged here does not exist (no stat needed) */
    } else if (SLUICE_REAL(stat)(abs, &sb) == 0) {
        count_fs(f, POSIX_STATS, t0);
        if (!S_ISREG(sb.st_mode) || !(flags & O_TRUNC) || (flags & O_EXCL))
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);   /* update, or the kernel's error */
        t0 = sluice_now();
        if (SLUICE_REAL(faccessat)(AT_FDCWD, abs, W_OK, AT_EACCESS) != 0) {   /* may we overwrite it? */
            count_fs(f, POSIX_STATS, t0);
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
        }
        count_fs(f, POSIX_STATS, t0);
        if (atomic_load(&f->rec->open_files) > 0)
            /* this process has the file open already: its descriptors
             * must see the truncation and write the same file */
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
        existed = 1;
        mode = sb.st_mode;
        /* An overwrite is published by replacing the file whole (a reader
         * never sees it half written), except where the inode is what the
         * user relies on: another name links it, or it belongs to another
         * user or group than a new file of ours would. Then it is written
         * in place, as the program's O_TRUNC open would. */
        keep_inode = sb.st_nlink > 1 || sb.st_uid != geteuid() || sb.st_gid != getegid();
    } else if (errno != ENOENT || !(flags & O_CREAT)) {
        count_fs(f, POSIX_STATS, t0);
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    } else {
        count_fs(f, POSIX_STATS, t0);
        /* The directory must exist on the shared file system and take a new
         * file from us (permissions, a read-only file system), as for
         * open(): otherwise the kernel's own open answers. */
        if (!dir_state) {
            t0 = sluice_now();
            if (SLUICE_REAL(stat)(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                count_fs(f, POSIX_STATS, t0);
                return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
            }
            count_fs(f, POSIX_STATS, t0);
            t0 = sluice_now();
            if (SLUICE_REAL(faccessat)(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
                count_fs(f, POSIX_STATS, t0);
                return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
            }
            count_fs(f, POSIX_STATS, t0);
            pthread_mutex_lock(&stage_st.lock);
            stage_dir_remember_locked(dir, 0);
            pthread_mutex_unlock(&stage_st.lock);
        }
    }
    if (!tier_has_room()) {
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_FALLBACKS, t, t);
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    }
    pthread_mutex_lock(&stage_st.lock);
    fd = stage_new_locked(f, d, abs, flags, mode, existed, keep_inode);
    pthread_mutex_unlock(&stage_st.lock);
    if (fd == -EEXIST && (flags & O_CREAT) && (flags & O_EXCL))
        return -EEXIST;   /* another process staged the name first */
    if (fd == -EEXIST && !retried) {
        stage_wait_published(abs);
        retried = 1;
        goto again;
    }
    if (fd < 0)
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    count_tier_open(f);
    return fd;
}
