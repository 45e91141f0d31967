/*
 * POSIX wrappers: descriptor I/O and path metadata. Each wrapper is a thin
 * skin: pass straight through when sluice is not active or the descriptor
 * or path is not recorded, else call the core (src/core/file.c) and convert
 * its return in one place (sluice_ret_*). Symbols: wrappers.def.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "buffer/buffer.h"
#include "stage/stage.h"
#include "common/pathnorm.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/policy.h"
#include "interpose/interpose.h"
#include "sys/userptr.h"

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64 is stat on this ABI");
_Static_assert(sizeof(off_t) == sizeof(off64_t), "64-bit off_t");

#ifndef __O_TMPFILE
#define __O_TMPFILE 0
#endif
#define OPEN_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & __O_TMPFILE) == __O_TMPFILE)

/* ------------------------------------------------------------------ open */

static int wrap_open(int dirfd, const char *path, int flags, mode_t mode)
{
    int saved = errno, rc;

    if (!sluice_active() || sluice_ptr_null_page(path))
        return SLUICE_REAL(openat)(dirfd, path, flags, mode);
    sluice__guard++;
    rc = sluice_file_open(dirfd, path, flags, mode);
    sluice__guard--;
    return sluice_ret_int(rc, saved);
}

#define OPEN_MODE_ARG(flags, last)                 \
    mode_t mode = 0;                               \
    if (OPEN_NEEDS_MODE(flags)) {                  \
        va_list ap;                                \
        va_start(ap, last);                        \
        mode = (mode_t)va_arg(ap, int);            \
        va_end(ap);                                \
    }

SLUICE_EXPORT int open(const char *path, int flags, ...)
{
    OPEN_MODE_ARG(flags, flags);
    return wrap_open(AT_FDCWD, path, flags, mode);
}

SLUICE_EXPORT int open64(const char *path, int flags, ...)
{
    OPEN_MODE_ARG(flags, flags);
    return wrap_open(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

SLUICE_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    OPEN_MODE_ARG(flags, flags);
    return wrap_open(dirfd, path, flags, mode);
}

SLUICE_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    OPEN_MODE_ARG(flags, flags);
    return wrap_open(dirfd, path, flags | O_LARGEFILE, mode);
}

SLUICE_EXPORT int creat(const char *path, mode_t mode)
{
    return wrap_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

SLUICE_EXPORT int creat64(const char *path, mode_t mode)
{
    return wrap_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

/* Fortified opens: the caller passed no mode, so O_CREAT is not allowed. */
SLUICE_EXPORT int __open_2(const char *path, int flags)
{
    return wrap_open(AT_FDCWD, path, flags, 0);
}

SLUICE_EXPORT int __open64_2(const char *path, int flags)
{
    return wrap_open(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}

SLUICE_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return wrap_open(dirfd, path, flags, 0);
}

SLUICE_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return wrap_open(dirfd, path, flags | O_LARGEFILE, 0);
}

SLUICE_EXPORT int close(int fd)
{
    struct sluice_file *f;
    int saved = errno, rc;

    if (!sluice_active() || !(f = sluice_fd_get(fd)))
        return SLUICE_REAL(close)(fd);
    sluice_file_put(f);
    if (sluice_in_vfork_child())
        return SLUICE_REAL(close)(fd);
    sluice__guard++;
    rc = sluice_fd_close(fd);
    sluice__guard--;
    return sluice_ret_int(rc, saved);
}

/* ------------------------------------------------------------------ data */

/* The body every data wrapper shares: fd lookup, guard, core call, return. */
#define FD_IO(fd, realcall, corecall)                      \
    do {                                                   \
        struct sluice_file *f_;                            \
        int saved_ = errno;                                \
        ssize_t rc_;                                       \
        if (!sluice_active() || !(f_ = sluice_fd_get(fd))) \
            return realcall;                               \
        struct sluice_file *f = f_;                        \
        sluice__guard++;                                   \
        rc_ = corecall;                                    \
        sluice__guard--;                                   \
        sluice_file_put(f_);                               \
        return sluice_ret_ssize(rc_, saved_);              \
    } while (0)

SLUICE_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    FD_IO(fd, SLUICE_REAL(read)(fd, buf, n), sluice_file_read(f, fd, buf, n, SLUICE_OFF_CURRENT));
}

SLUICE_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        return SLUICE_REAL(__read_chk)(fd, buf, n, buflen);   /* glibc reports the overflow */
    FD_IO(fd, SLUICE_REAL(read)(fd, buf, n), sluice_file_read(f, fd, buf, n, SLUICE_OFF_CURRENT));
}

SLUICE_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    FD_IO(fd, SLUICE_REAL(write)(fd, buf, n), sluice_file_write(f, fd, buf, n, SLUICE_OFF_CURRENT));
}

/* Positional calls with a negative offset fail with EINVAL in the kernel;
 * the tiers read a negative offset as "current position", so refuse here. */
#define CHECK_OFF(off)                \
    if ((off) < 0) {                  \
        errno = EINVAL;               \
        return -1;                    \
    }

SLUICE_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pread)(fd, buf, n, off), sluice_file_read(f, fd, buf, n, off));
}

SLUICE_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pread64)(fd, buf, n, off), sluice_file_read(f, fd, buf, n, off));
}

SLUICE_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    if (n > buflen)
        return SLUICE_REAL(__pread_chk)(fd, buf, n, off, buflen);
    return pread(fd, buf, n, off);
}

SLUICE_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    if (n > buflen)
        return SLUICE_REAL(__pread64_chk)(fd, buf, n, off, buflen);
    return pread(fd, buf, n, off);
}

SLUICE_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pwrite)(fd, buf, n, off), sluice_file_write(f, fd, buf, n, off));
}

SLUICE_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pwrite64)(fd, buf, n, off), sluice_file_write(f, fd, buf, n, off));
}

SLUICE_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    FD_IO(fd, SLUICE_REAL(readv)(fd, iov, cnt), sluice_file_readv(f, fd, iov, cnt, SLUICE_OFF_CURRENT, 0));
}

SLUICE_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    FD_IO(fd, SLUICE_REAL(writev)(fd, iov, cnt), sluice_file_writev(f, fd, iov, cnt, SLUICE_OFF_CURRENT, 0));
}

SLUICE_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(preadv)(fd, iov, cnt, off), sluice_file_readv(f, fd, iov, cnt, off, 0));
}

SLUICE_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(preadv64)(fd, iov, cnt, off), sluice_file_readv(f, fd, iov, cnt, off, 0));
}

SLUICE_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pwritev)(fd, iov, cnt, off), sluice_file_writev(f, fd, iov, cnt, off, 0));
}

SLUICE_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    CHECK_OFF(off);
    FD_IO(fd, SLUICE_REAL(pwritev64)(fd, iov, cnt, off), sluice_file_writev(f, fd, iov, cnt, off, 0));
}

/* preadv2/pwritev2: offset -1 means the current position, as in the kernel. */
SLUICE_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    if (off < -1) {
        errno = EINVAL;
        return -1;
    }
    FD_IO(fd, SLUICE_REAL(preadv2)(fd, iov, cnt, off, flags), sluice_file_readv(f, fd, iov, cnt, off, flags));
}

SLUICE_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return preadv2(fd, iov, cnt, off, flags);
}

SLUICE_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    if (off < -1) {
        errno = EINVAL;
        return -1;
    }
    FD_IO(fd, SLUICE_REAL(pwritev2)(fd, iov, cnt, off, flags), sluice_file_writev(f, fd, iov, cnt, off, flags));
}

SLUICE_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return pwritev2(fd, iov, cnt, off, flags);
}

SLUICE_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    FD_IO(fd, SLUICE_REAL(lseek)(fd, off, whence), sluice_file_lseek(f, fd, off, whence));
}

SLUICE_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    FD_IO(fd, SLUICE_REAL(lseek64)(fd, off, whence), sluice_file_lseek(f, fd, off, whence));
}

SLUICE_EXPORT int fsync(int fd)
{
    FD_IO(fd, SLUICE_REAL(fsync)(fd), sluice_file_fsync(f, 0));
}

SLUICE_EXPORT int fdatasync(int fd)
{
    FD_IO(fd, SLUICE_REAL(fdatasync)(fd), sluice_file_fsync(f, 1));
}

SLUICE_EXPORT int ftruncate(int fd, off_t len)
{
    FD_IO(fd, SLUICE_REAL(ftruncate)(fd, len), sluice_file_ftruncate(f, len));
}

SLUICE_EXPORT int ftruncate64(int fd, off64_t len)
{
    FD_IO(fd, SLUICE_REAL(ftruncate64)(fd, len), sluice_file_ftruncate(f, len));
}

SLUICE_EXPORT int fstat(int fd, struct stat *st)
{
    FD_IO(fd, SLUICE_REAL(fstat)(fd, st), sluice_file_fstat(f, st));
}

SLUICE_EXPORT int fstat64(int fd, struct stat64 *st)
{
    FD_IO(fd, SLUICE_REAL(fstat64)(fd, st), sluice_file_fstat(f, (struct stat *)st));
}

/* The old ABI: version 1 is the kernel's struct stat on x86-64, the layout
 * of today's struct stat; other versions go straight through. */
#define STAT_VER_LINUX 1

SLUICE_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__fxstat)(ver, fd, st);
    FD_IO(fd, SLUICE_REAL(__fxstat)(ver, fd, st), sluice_file_fstat(f, st));
}

SLUICE_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__fxstat64)(ver, fd, st);
    FD_IO(fd, SLUICE_REAL(__fxstat64)(ver, fd, st), sluice_file_fstat(f, (struct stat *)st));
}

/* ------------------------------------------------------------ descriptors */

/* newfd became a copy of oldfd (dup, dup2, dup3, F_DUPFD). */
static void after_dup(int oldfd, int newfd)
{
    if ((sluice_fd_known(oldfd) || sluice_fd_known(newfd)) && sluice_in_vfork_child())
        return;
    sluice__guard++;
    sluice_fd_forget(newfd);
    sluice_fd_dup(oldfd, newfd);
    sluice__guard--;
}

SLUICE_EXPORT int dup(int fd)
{
    int nfd = SLUICE_REAL(dup)(fd);
    if (nfd >= 0 && sluice_active()) {
        int saved = errno;
        after_dup(fd, nfd);
        errno = saved;
    }
    return nfd;
}

/* dup2/dup3 over a recorded descriptor close it first, inside the kernel. */
static int wrap_dup3(int fd, int fd2, int flags, int is_dup2)
{
    int saved = errno, rc;

    if (!sluice_active() || (!sluice_fd_known(fd) && !sluice_fd_known(fd2)) || sluice_in_vfork_child())
        return is_dup2 ? SLUICE_REAL(dup2)(fd, fd2) : SLUICE_REAL(dup3)(fd, fd2, flags);
    sluice__guard++;
    if (fd != fd2)
        sluice_fd_prepare_replace(fd2);
    rc = is_dup2 ? SLUICE_REAL(dup2)(fd, fd2) : SLUICE_REAL(dup3)(fd, fd2, flags);
    if (rc < 0)
        saved = errno;
    else if (fd != fd2) {
        sluice_fd_replaced(fd2);
        sluice_fd_dup(fd, fd2);
    }
    sluice__guard--;
    errno = saved;
    return rc;
}

SLUICE_EXPORT int dup2(int fd, int fd2)
{
    return wrap_dup3(fd, fd2, 0, 1);
}

SLUICE_EXPORT int dup3(int fd, int fd2, int flags)
{
    return wrap_dup3(fd, fd2, flags, 0);
}

/* A mode that changes a file's I/O stops doing so (mmap, locks, fdopen):
 * what it holds reaches the file system first. */
void sluice_fd_fallback(int fd, unsigned reason)
{
    struct sluice_file *f;

    if (!sluice_active() || !(f = sluice_fd_get(fd)))
        return;
    sluice__guard++;
    if (f->depth > 1)
        (void)sluice_tier_control(f, 0, SLUICE_CTL_FALLBACK, &reason);
    sluice__guard--;
    sluice_file_put(f);
}

static int is_lock_cmd(int cmd)
{
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

static int wrap_fcntl(int fd, int cmd, void *arg, int use64)
{
    int saved = errno;

    if (is_lock_cmd(cmd) && sluice_fd_known(fd)) {
        sluice_fd_fallback(fd, SLUICE_FALLBACK_LOCK);
        errno = saved;
    }
    int rc = use64 ? SLUICE_REAL(fcntl64)(fd, cmd, arg) : SLUICE_REAL(fcntl)(fd, cmd, arg);
    saved = errno;

    if (rc < 0 || !sluice_active())
        return rc;
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
        after_dup(fd, rc);
    } else if (cmd == F_SETFL) {
        struct sluice_file *f = sluice_fd_get(fd);
        if (f) {
            /* O_APPEND can be switched on and off after open. */
            f->flags = (f->flags & ~O_APPEND) | ((int)(long)arg & O_APPEND);
            sluice_file_put(f);
        }
    }
    errno = saved;
    return rc;
}

/* Every fcntl argument is an int, a pointer, or absent: forwarding one
 * pointer-sized value is what glibc itself does. */
SLUICE_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return wrap_fcntl(fd, cmd, arg, 0);
}

SLUICE_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return wrap_fcntl(fd, cmd, arg, 1);
}

SLUICE_EXPORT int flock(int fd, int op)
{
    if (sluice_fd_known(fd)) {
        int saved = errno;
        sluice_fd_fallback(fd, SLUICE_FALLBACK_LOCK);
        errno = saved;
    }
    return SLUICE_REAL(flock)(fd, op);
}

/* A mapping of a recorded file: the file first leaves any mode that holds
 * its bytes in memory (the kernel's pages are the truth now); a mapping
 * made is counted. */
static void *wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, int use64)
{
    struct sluice_file *f;
    void *p;
    int saved = errno;

    if (fd < 0 || !sluice_active() || !(f = sluice_fd_get(fd)))
        return use64 ? SLUICE_REAL(mmap64)(addr, len, prot, flags, fd, off)
                     : SLUICE_REAL(mmap)(addr, len, prot, flags, fd, off);
    sluice_fd_fallback(fd, SLUICE_FALLBACK_MMAP);
    errno = saved;
    p = use64 ? SLUICE_REAL(mmap64)(addr, len, prot, flags, fd, off) : SLUICE_REAL(mmap)(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED) {
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_MMAPS, t, t);
    }
    sluice_file_put(f);
    return p;
}

SLUICE_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return wrap_mmap(addr, len, prot, flags, fd, off, 0);
}

SLUICE_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    return wrap_mmap(addr, len, prot, flags, fd, off, 1);
}

/* --------------------------------------------------------------- metadata */

/* The record of (dirfd, path) if the policy records it, else NULL. */
static struct sluice_record *path_record(int dirfd, const char *path)
{
    char abs[PATH_MAX];

    if (!path || sluice_policy_skip_fast(path) ||
        sluice_path_absolute(dirfd, path, abs, sizeof abs) != 0 || !sluice_policy_records(abs))
        return NULL;
    return sluice_record_get(SLUICE_MOD_POSIX, abs);
}

/* A metadata call on a path: the real call, counted as `counter` on the
 * path's record when recorded. */
/* Set by a stage hook that answered a path call from the tier: the call
 * never reached the file system (app side only). */
static __thread int path_on_tier;

#define PATH_META(dirfd, path, counter, realcall)                          \
    do {                                                                   \
        struct sluice_record *rec_;                                        \
        int saved_ = errno, rc_, err_;                                     \
        uint64_t t0_;                                                      \
        if (!sluice_active() || sluice_ptr_null_page(path))                \
            return realcall;                                               \
        sluice__guard++;                                                   \
        t0_ = sluice_now();                                                \
        path_on_tier = 0;                                                  \
        rc_ = realcall;                                                    \
        err_ = errno;                                                      \
        /* The kernel read the path first: read it only if it could. */    \
        rec_ = rc_ < 0 && err_ == EFAULT && !sluice_user_str_ok(path)      \
                   ? NULL : path_record(dirfd, path);                      \
        if (rec_) {                                                        \
            unsigned sides_ = SLUICE_SIDES_BOTH;                           \
            if (path_on_tier) {                                            \
                sluice_record_split_sides(rec_);                           \
                sides_ = SLUICE_SIDES_APP;                                 \
            }                                                              \
            if (rc_ < 0)                                                   \
                sluice_count_error(rec_, sides_);                          \
            else                                                           \
                sluice_count_meta(rec_, sides_, counter, t0_,              \
                                  sluice_now());                        \
        }                                                                  \
        sluice__guard--;                                                   \
        errno = rc_ < 0 ? err_ : saved_;                                   \
        return rc_;                                                        \
    } while (0)

/* ---- stage mode: paths this process staged are answered from the tier */

static int ret_errno(int rc)
{
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* Stage hooks read the path before any kernel call: only a readable one. */
static int staged_abs(int dirfd, const char *path, char *abs)
{
    return stage_active() && sluice_user_str_ok(path) && sluice_path_absolute(dirfd, path, abs, PATH_MAX) == 0;
}

/* 1 when (dirfd, path) is staged here and *st was filled from the tier. */
static int stage_stat_hook(int dirfd, const char *path, struct stat *st)
{
    char abs[PATH_MAX];

    if (!staged_abs(dirfd, path, abs) || !stage_path_stat(abs, st))
        return 0;
    path_on_tier = 1;
    return 1;
}

#define STAGED_STAT(dirfd, path, st, realcall) \
    (stage_stat_hook(dirfd, path, (struct stat *)(st)) ? 0 : (realcall))

static struct statx_timestamp statx_time(struct timespec ts)
{
    return (struct statx_timestamp){.tv_sec = ts.tv_sec, .tv_nsec = (uint32_t)ts.tv_nsec};
}

/* statx of a staged path: the data file's stat, in statx's layout. */
static int stage_statx_hook(int dirfd, const char *path, struct statx *stx)
{
    struct stat st;

    if (!stage_stat_hook(dirfd, path, &st))
        return 0;
    memset(stx, 0, sizeof *stx);
    stx->stx_mask = STATX_BASIC_STATS;
    stx->stx_blksize = (uint32_t)st.st_blksize;
    stx->stx_nlink = (uint32_t)st.st_nlink;
    stx->stx_uid = st.st_uid;
    stx->stx_gid = st.st_gid;
    stx->stx_mode = (uint16_t)st.st_mode;
    stx->stx_ino = st.st_ino;
    stx->stx_size = (uint64_t)st.st_size;
    stx->stx_blocks = (uint64_t)st.st_blocks;
    stx->stx_atime = statx_time(st.st_atim);
    stx->stx_mtime = statx_time(st.st_mtim);
    stx->stx_ctime = statx_time(st.st_ctim);
    stx->stx_dev_major = major(st.st_dev);
    stx->stx_dev_minor = minor(st.st_dev);
    return 1;
}

static int stage_access_hook(int dirfd, const char *path)
{
    struct stat st;
    return stage_stat_hook(dirfd, path, &st);
}

/* mkdir of a directory stage mode knows exists: EEXIST, as the file system
 * would answer, without asking it again. */
static int stage_mkdir_hook(int dirfd, const char *path)
{
    char abs[PATH_MAX];

    if (!stage_active() || !sluice_user_str_ok(path) || sluice_path_absolute(dirfd, path, abs, sizeof abs) != 0 ||
        !stage_dir_exists(abs))
        return 0;
    path_on_tier = 1;
    return 1;
}

#define STAGED_MKDIR(dirfd, path, realcall) (stage_mkdir_hook(dirfd, path) ? ret_errno(-EEXIST) : (realcall))

static int stage_truncate_hook(const char *path, off_t len, int *rc)
{
    char abs[PATH_MAX];

    if (!staged_abs(AT_FDCWD, path, abs) || !stage_path_truncate(abs, len, rc))
        return 0;
    path_on_tier = 1;
    return 1;
}

/* A directory made here is remembered by stage mode. */
static int note_mkdir(int rc, int dirfd, const char *path)
{
    char abs[PATH_MAX];

    if (rc == 0 && path && sluice_path_absolute(dirfd, path, abs, sizeof abs) == 0)
        stage_dir_created(abs);
    return rc;
}

#define STAGED_ACCESS(dirfd, path, realcall) (stage_access_hook(dirfd, path) ? 0 : (realcall))

static int stage_unlink_hook(int dirfd, const char *path, int *rc)
{
    char abs[PATH_MAX];

    if (!staged_abs(dirfd, path, abs) || !stage_path_unlink(abs, rc))
        return 0;
    path_on_tier = 1;
    return 1;
}

#define STAGED_UNLINK(dirfd, path, realcall)                                      \
    ({                                                                            \
        int staged_rc_;                                                           \
        stage_unlink_hook(dirfd, path, &staged_rc_) ? ret_errno(staged_rc_) : (realcall); \
    })

static int stage_rename_hook(int fromfd, const char *from, int tofd, const char *to, int *rc)
{
    char a[PATH_MAX], b[PATH_MAX];

    if (!staged_abs(fromfd, from, a) || !sluice_user_str_ok(to) || sluice_path_absolute(tofd, to, b, sizeof b) != 0 ||
        !stage_path_rename(a, b, rc))
        return 0;
    path_on_tier = 1;
    return 1;
}

#define STAGED_RENAME(fromfd, from, tofd, to, realcall)                                   \
    ({                                                                                    \
        int staged_rc_;                                                                   \
        stage_rename_hook(fromfd, from, tofd, to, &staged_rc_) ? ret_errno(staged_rc_) : (realcall); \
    })

/* A path stat of a file this process buffers reports its logical size. */
static int stat_fixup(int rc, struct stat *st)
{
    if (rc == 0 && buffer_active()) {
        int saved = errno;
        int64_t size = st->st_size;
        buffer_stat_fixup(st->st_dev, st->st_ino, &size);
        st->st_size = size;
        errno = saved;
    }
    return rc;
}

static int statx_fixup(int rc, struct statx *stx)
{
    if (rc == 0 && buffer_active() && (stx->stx_mask & STATX_SIZE) && (stx->stx_mask & STATX_INO)) {
        int saved = errno;
        int64_t size = (int64_t)stx->stx_size;
        buffer_stat_fixup(makedev(stx->stx_dev_major, stx->stx_dev_minor), stx->stx_ino, &size);
        stx->stx_size = (uint64_t)size;
        errno = saved;
    }
    return rc;
}

/* fstatat(fd, "", AT_EMPTY_PATH) is an fstat of fd. */
#define IS_FD_STAT(path, flags) ((flags) & AT_EMPTY_PATH && (path) && (path)[0] == '\0')

SLUICE_EXPORT int stat(const char *path, struct stat *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(stat)(path, st), st)));
}

SLUICE_EXPORT int stat64(const char *path, struct stat64 *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(stat64)(path, st), (struct stat *)st)));
}

SLUICE_EXPORT int lstat(const char *path, struct stat *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(lstat)(path, st), st)));
}

SLUICE_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(lstat64)(path, st), (struct stat *)st)));
}

SLUICE_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(fstatat)(dirfd, path, st, flags), sluice_file_fstat(f, st));
    PATH_META(dirfd, path, POSIX_STATS, STAGED_STAT(dirfd, path, st, stat_fixup(SLUICE_REAL(fstatat)(dirfd, path, st, flags), st)));
}

SLUICE_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(fstatat64)(dirfd, path, st, flags), sluice_file_fstat(f, (struct stat *)st));
    PATH_META(dirfd, path, POSIX_STATS, STAGED_STAT(dirfd, path, st, stat_fixup(SLUICE_REAL(fstatat64)(dirfd, path, st, flags), (struct stat *)st)));
}

SLUICE_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, ver == STAT_VER_LINUX ? STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(__xstat)(ver, path, st), st)) : SLUICE_REAL(__xstat)(ver, path, st));
}

SLUICE_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, ver == STAT_VER_LINUX ? STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(__xstat64)(ver, path, st), (struct stat *)st)) : SLUICE_REAL(__xstat64)(ver, path, st));
}

SLUICE_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, ver == STAT_VER_LINUX ? STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(__lxstat)(ver, path, st), st)) : SLUICE_REAL(__lxstat)(ver, path, st));
}

SLUICE_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, ver == STAT_VER_LINUX ? STAGED_STAT(AT_FDCWD, path, st, stat_fixup(SLUICE_REAL(__lxstat64)(ver, path, st), (struct stat *)st)) : SLUICE_REAL(__lxstat64)(ver, path, st));
}

SLUICE_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    if (ver == STAT_VER_LINUX && IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags), sluice_file_fstat(f, st));
    PATH_META(dirfd, path, POSIX_STATS, ver == STAT_VER_LINUX ? stat_fixup(SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags), st) : SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags));
}

SLUICE_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    if (ver == STAT_VER_LINUX && IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags), sluice_file_fstat(f, (struct stat *)st));
    PATH_META(dirfd, path, POSIX_STATS, ver == STAT_VER_LINUX ? stat_fixup(SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags), (struct stat *)st) : SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags));
}

/* statx of a descriptor counts on the descriptor's record (the tiers have
 * no statx slot yet: the kernel's answer is the file system's). */
static int statx_fd(int dirfd, const char *path, int flags, unsigned mask, struct statx *stx)
{
    struct sluice_file *f = sluice_fd_get(dirfd);
    int saved = errno, rc;
    uint64_t t0;

    if (!f)
        return SLUICE_REAL(statx)(dirfd, path, flags, mask, stx);
    t0 = sluice_now();
    rc = SLUICE_REAL(statx)(dirfd, path, flags, mask, stx);
    if (rc < 0) {
        saved = errno;
        sluice_count_error(f->rec, f->sides);
    } else {
        sluice_count_meta(f->rec, f->sides, POSIX_STATS, t0, sluice_now());
    }
    sluice_file_put(f);
    errno = saved;
    return rc;
}

SLUICE_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
    if (sluice_active() && IS_FD_STAT(path, flags))
        return statx_fd(dirfd, path, flags, mask, stx);
    PATH_META(dirfd, path, POSIX_STATS, stage_statx_hook(dirfd, path, stx) ? 0 : statx_fixup(SLUICE_REAL(statx)(dirfd, path, flags, mask, stx), stx));
}

SLUICE_EXPORT int access(const char *path, int mode)
{
    PATH_META(AT_FDCWD, path, POSIX_STATS, STAGED_ACCESS(AT_FDCWD, path, SLUICE_REAL(access)(path, mode)));
}

SLUICE_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    PATH_META(dirfd, path, POSIX_STATS, STAGED_ACCESS(dirfd, path, SLUICE_REAL(faccessat)(dirfd, path, mode, flags)));
}

SLUICE_EXPORT int unlink(const char *path)
{
    PATH_META(AT_FDCWD, path, POSIX_UNLINKS, STAGED_UNLINK(AT_FDCWD, path, SLUICE_REAL(unlink)(path)));
}

SLUICE_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    PATH_META(dirfd, path, (flags & AT_REMOVEDIR) ? POSIX_RMDIRS : POSIX_UNLINKS,
              (flags & AT_REMOVEDIR) ? SLUICE_REAL(unlinkat)(dirfd, path, flags)
                                     : STAGED_UNLINK(dirfd, path, SLUICE_REAL(unlinkat)(dirfd, path, flags)));
}

SLUICE_EXPORT int rename(const char *from, const char *to)
{
    PATH_META(AT_FDCWD, from, POSIX_RENAMES, STAGED_RENAME(AT_FDCWD, from, AT_FDCWD, to, SLUICE_REAL(rename)(from, to)));
}

SLUICE_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    PATH_META(fromfd, from, POSIX_RENAMES, STAGED_RENAME(fromfd, from, tofd, to, SLUICE_REAL(renameat)(fromfd, from, tofd, to)));
}

SLUICE_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
    PATH_META(fromfd, from, POSIX_RENAMES, SLUICE_REAL(renameat2)(fromfd, from, tofd, to, flags));
}

SLUICE_EXPORT int mkdir(const char *path, mode_t mode)
{
    PATH_META(AT_FDCWD, path, POSIX_MKDIRS, STAGED_MKDIR(AT_FDCWD, path, note_mkdir(SLUICE_REAL(mkdir)(path, mode), AT_FDCWD, path)));
}

SLUICE_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    PATH_META(dirfd, path, POSIX_MKDIRS, STAGED_MKDIR(dirfd, path, note_mkdir(SLUICE_REAL(mkdirat)(dirfd, path, mode), dirfd, path)));
}

SLUICE_EXPORT int rmdir(const char *path)
{
    PATH_META(AT_FDCWD, path, POSIX_RMDIRS, SLUICE_REAL(rmdir)(path));
}

/* truncate(path) of a file this process buffers: every buffered byte
 * first (they were written before the call), then what it knows of the
 * file's size and contents changes with it. */
static int wrap_truncate(const char *path, off_t len)
{
    struct stat st;
    int rc;

    if (stage_truncate_hook(path, len, &rc))
        return ret_errno(rc);
    if (buffer_active())
        (void)sluice_tier_quiesce_buffers();
    rc = SLUICE_REAL(truncate)(path, len);
    if (rc == 0 && buffer_active()) {
        int saved = errno;
        if (SLUICE_REAL(stat)(path, &st) == 0)
            buffer_path_truncated(st.st_dev, st.st_ino, len);
        errno = saved;
    }
    return rc;
}

SLUICE_EXPORT int truncate(const char *path, off_t len)
{
    PATH_META(AT_FDCWD, path, POSIX_TRUNCATES, wrap_truncate(path, len));
}

SLUICE_EXPORT int truncate64(const char *path, off64_t len)
{
    PATH_META(AT_FDCWD, path, POSIX_TRUNCATES, wrap_truncate(path, len));
}
