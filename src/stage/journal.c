/* Journal entries; see journal.h and docs/stage.md. */
#include "stage/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/real.h"


int64_t journal_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Write e under .ID.tmp and rename it over journal/ID. With lockfd, the new
 * file is locked before the rename and *lockfd (the old one's lock) is
 * replaced by it, so the entry stays locked throughout. */
static int write_entry(int jdir, const struct journal_entry *e, int *lockfd)
{
    char buf[16384], tmp[128];
    ssize_t n = journal_format(e, buf, sizeof buf);
    int fd, err = 0;

    if (n < 0)
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof tmp, ".%s.tmp", e->id);
    fd = SLUICE_REAL(openat)(jdir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    if (lockfd && SLUICE_REAL(flock)(fd, LOCK_EX | LOCK_NB) != 0)
        err = -errno;
    if (!err && (SLUICE_REAL(write)(fd, buf, (size_t)n) != n || SLUICE_REAL(fsync)(fd) != 0))
        err = errno ? -errno : -EIO;
    if (!err && SLUICE_REAL(renameat)(jdir, tmp, jdir, e->id) != 0)
        err = -errno;
    if (err) {
        SLUICE_REAL(unlinkat)(jdir, tmp, 0);
        SLUICE_REAL(close)(fd);
        return err;
    }
    if (lockfd) {
        SLUICE_REAL(close)(*lockfd);
        *lockfd = fd;
    } else {
        SLUICE_REAL(close)(fd);
    }
    return 0;
}

int journal_write(int jdir, const struct journal_entry *e)
{
    return write_entry(jdir, e, NULL);
}

int journal_write_locked(int jdir, const struct journal_entry *e, int *lockfd)
{
    return write_entry(jdir, e, lockfd);
}

int journal_lock(int jdir, const char *id, int wait)
{
    for (;;) {
        struct stat held, named;
        /* (O_NONBLOCK: a FIFO put in its place must not hang us) */
        int fd = SLUICE_REAL(openat)(jdir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd < 0)
            return -errno;
        if (SLUICE_REAL(fstat)(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
            SLUICE_REAL(close)(fd);
            return -EBADMSG;   /* not an entry */
        }
        if (SLUICE_REAL(flock)(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
            int err = -errno;
            SLUICE_REAL(close)(fd);
            return err;
        }
        if (SLUICE_REAL(fstat)(fd, &held) == 0 && SLUICE_REAL(fstatat)(jdir, id, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev)
            return fd;
        SLUICE_REAL(close)(fd);   /* rewritten or removed while we waited: the current one */
        struct stat gone;
        if (SLUICE_REAL(fstatat)(jdir, id, &gone, AT_SYMLINK_NOFOLLOW) != 0)
            return -ENOENT;
    }
}

int journal_read(int jdir, const char *id, struct journal_entry *e)
{
    char buf[16384];
    ssize_t n;
    struct stat sb;
    int fd = SLUICE_REAL(openat)(jdir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);

    if (fd < 0)
        return errno == ELOOP ? -EBADMSG : -errno;
    if (SLUICE_REAL(fstat)(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        SLUICE_REAL(close)(fd);
        return -EBADMSG;   /* (a FIFO or a directory is no entry) */
    }
    n = SLUICE_REAL(read)(fd, buf, sizeof buf);
    int err = n < 0 ? -errno : 0;
    SLUICE_REAL(close)(fd);
    if (err)
        return err;
    if ((size_t)n == sizeof buf || journal_parse(buf, (size_t)n, e) != 0 || strcmp(e->id, id) != 0)
        return -EBADMSG;
    return 0;
}
