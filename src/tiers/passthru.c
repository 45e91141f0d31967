/*
 * The bottom tier: every operation is the real system call on f->fd. When
 * other tiers sit above it, it counts the fs side of what reaches the file
 * system (in pass-through alone the core counts both sides at once).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/counters.h"
#include "core/file.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* fs-side accounting, needed only when a tier above may change the calls. */
static int fs_side_separate(const struct sluice_file *f)
{
    return f->sides != SLUICE_SIDES_BOTH;
}

/* The clock, read only when this side is counted here. */
static uint64_t fs_now(const struct sluice_file *f)
{
    return fs_side_separate(f) ? sluice_now() : 0;
}

static ssize_t passthru_done_rw(struct sluice_file *f, enum sluice_access kind, ssize_t rc,
                                off_t off, uint64_t t0)
{
    if (rc < 0) {
        rc = -errno;
        if (fs_side_separate(f))
            sluice_count_error(f->rec, SLUICE_SIDES_FS);
    } else if (fs_side_separate(f)) {
        /* Current-position I/O from above has no known offset on this side. */
        sluice_count_rw(f->rec, SLUICE_SIDES_FS, kind, off, rc, t0, sluice_now());
    }
    return rc;
}

static int passthru_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode)
{
    uint64_t t0 = fs_now(f);
    int fd = SLUICE_REAL(openat)(dirfd, path, flags, mode);

    if (fd < 0)
        return -errno;
    if (fs_side_separate(f))
        sluice_count_open(f->rec, SLUICE_SIDES_FS, t0, sluice_now());
    return fd;
}

static ssize_t passthru_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off)
{
    uint64_t t0 = fs_now(f);
    ssize_t rc = off < 0 ? SLUICE_REAL(read)(f->fd, buf, n) : SLUICE_REAL(pread)(f->fd, buf, n, off);
    return passthru_done_rw(f, SLUICE_READ, rc, off, t0);
}

static ssize_t passthru_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    uint64_t t0 = fs_now(f);
    ssize_t rc = off < 0 ? SLUICE_REAL(write)(f->fd, buf, n) : SLUICE_REAL(pwrite)(f->fd, buf, n, off);
    return passthru_done_rw(f, SLUICE_WRITE, rc, off, t0);
}

static ssize_t passthru_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    uint64_t t0 = fs_now(f);
    ssize_t rc;

    if (flags)
        rc = SLUICE_REAL(preadv2)(f->fd, iov, cnt, off, flags);
    else if (off < 0)
        rc = SLUICE_REAL(readv)(f->fd, iov, cnt);
    else
        rc = SLUICE_REAL(preadv)(f->fd, iov, cnt, off);
    return passthru_done_rw(f, SLUICE_READ, rc, off, t0);
}

static ssize_t passthru_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    uint64_t t0 = fs_now(f);
    ssize_t rc;

    if (flags)
        rc = SLUICE_REAL(pwritev2)(f->fd, iov, cnt, off, flags);
    else if (off < 0)
        rc = SLUICE_REAL(writev)(f->fd, iov, cnt);
    else
        rc = SLUICE_REAL(pwritev)(f->fd, iov, cnt, off);
    return passthru_done_rw(f, SLUICE_WRITE, rc, off, t0);
}

/* Metadata-like calls: the real call, and the fs-side count when separate. */
static int passthru_meta_done(struct sluice_file *f, int rc, int counter, int is_sync, uint64_t t0)
{
    if (rc < 0) {
        rc = -errno;
        if (fs_side_separate(f))
            sluice_count_error(f->rec, SLUICE_SIDES_FS);
    } else if (fs_side_separate(f)) {
        if (is_sync)
            sluice_count_sync(f->rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
        else
            sluice_count_meta(f->rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
    }
    return rc;
}

static off_t passthru_lseek(struct sluice_file *f, int level, off_t off, int whence)
{
    uint64_t t0 = fs_now(f);
    off_t rc = SLUICE_REAL(lseek)(f->fd, off, whence);
    if (rc < 0)
        return passthru_meta_done(f, -1, POSIX_SEEKS, 0, t0);
    (void)passthru_meta_done(f, 0, POSIX_SEEKS, 0, t0);
    return rc;
}

static int passthru_fsync(struct sluice_file *f, int level, int datasync)
{
    uint64_t t0 = fs_now(f);
    int rc = datasync ? SLUICE_REAL(fdatasync)(f->fd) : SLUICE_REAL(fsync)(f->fd);
    return passthru_meta_done(f, rc, datasync ? POSIX_FDSYNCS : POSIX_FSYNCS, 1, t0);
}

static int passthru_ftruncate(struct sluice_file *f, int level, off_t len)
{
    uint64_t t0 = fs_now(f);
    return passthru_meta_done(f, SLUICE_REAL(ftruncate)(f->fd, len), POSIX_TRUNCATES, 0, t0);
}

static int passthru_fstat(struct sluice_file *f, int level, struct stat *st)
{
    uint64_t t0 = fs_now(f);
    return passthru_meta_done(f, SLUICE_REAL(fstat)(f->fd, st), POSIX_STATS, 0, t0);
}

static int passthru_close(struct sluice_file *f, int level)
{
    uint64_t t0 = fs_now(f);
    /* f->fd may be a private copy (the program closed the original). */
    int rc = sluice_privfd_close(f->fd);

    if (rc < 0) {
        if (fs_side_separate(f))
            sluice_count_error(f->rec, SLUICE_SIDES_FS);
    } else if (fs_side_separate(f)) {
        sluice_count_close(f->rec, SLUICE_SIDES_FS, t0, sluice_now());
    }
    return rc;
}

static int passthru_control(struct sluice_file *f, int level, int op, void *arg)
{
    return -ENOTTY;
}

const struct sluice_tier_ops sluice_tier_passthru = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "passthru",
    .caps = SLUICE_TIER_BOTTOM,
    .file_state = 0,
    .open = passthru_open,
    .read = passthru_read,
    .write = passthru_write,
    .readv = passthru_readv,
    .writev = passthru_writev,
    .lseek = passthru_lseek,
    .fsync = passthru_fsync,
    .ftruncate = passthru_ftruncate,
    .fstat = passthru_fstat,
    .close = passthru_close,
    .control = passthru_control,
};
