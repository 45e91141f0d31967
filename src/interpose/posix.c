/*
 * POSIX wrappers: descriptor I/O and path metadata. Each wrapper is a thin
 * skin: pass straight through when sluice is not active or the descriptor
 * or path is not recorded, else call the core (src/core/file.c) and convert
 * its return in one place (sluice_ret_*). Symbols: wrappers.def.
 */
#include <aio.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/sendfile.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <utime.h>

#include "common/pathnorm.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/pathcall.h"
#include "core/policy.h"
#include "interpose/interpose.h"
#include "interpose/stdio_kernel.h"
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
        if (!sluice_active() || !(f_ = sluice_fd_get_adopt(fd))) \
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

#define STAT_VER_LINUX 1   /* the old stat ABI's version of today's struct stat */

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

/* A lock call on a recorded file (flock, fcntl record or OFD lock, lockf).
 * Locks are how processes hand a file to each other: before the call every
 * byte a mode holds for the file reaches the file system (an unlock
 * publishes what was written under the lock; a lock taken comes after what
 * was written before it); after a lock was taken, what the mode knew of
 * the file is forgotten (the previous holder may have changed it). The
 * file keeps its mode: nothing falls back. */
struct lock_call {
    struct sluice_file *f;
    uint64_t t0;
};

static void lock_call_begin(struct lock_call *lc, int fd)
{
    int saved = errno;

    lc->f = NULL;
    if (!sluice_active() || !sluice_fd_known(fd) || !(lc->f = sluice_fd_get(fd)))
        return;
    sluice__guard++;
    if (lc->f->depth > 1)
        (void)sluice_tier_control(lc->f, 0, SLUICE_CTL_SYNC, NULL);
    sluice__guard--;
    lc->t0 = sluice_now();
    errno = saved;
}

static int lock_call_end(struct lock_call *lc, int rc, int took)
{
    int saved = errno;

    if (!lc->f)
        return rc;
    if (rc == 0) {
        sluice_count_meta(lc->f->rec, SLUICE_SIDES_BOTH, POSIX_LOCKS, lc->t0, sluice_now());
        sluice__guard++;
        if (took && lc->f->depth > 1)
            (void)sluice_tier_control(lc->f, 0, SLUICE_CTL_LOCKED, NULL);
        sluice__guard--;
    }
    sluice_file_put(lc->f);
    errno = saved;
    return rc;
}

static int wrap_fcntl(int fd, int cmd, void *arg, int use64)
{
    if (is_lock_cmd(cmd)) {
        struct lock_call lc;
        lock_call_begin(&lc, fd);
        int rc = use64 ? SLUICE_REAL(fcntl64)(fd, cmd, arg) : SLUICE_REAL(fcntl)(fd, cmd, arg);
        /* a call that succeeded read a valid struct flock */
        return lock_call_end(&lc, rc, rc == 0 && ((const struct flock *)arg)->l_type != F_UNLCK);
    }
    int rc = use64 ? SLUICE_REAL(fcntl64)(fd, cmd, arg) : SLUICE_REAL(fcntl)(fd, cmd, arg);
    int saved = errno;

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
    struct lock_call lc;

    lock_call_begin(&lc, fd);
    int rc = SLUICE_REAL(flock)(fd, op);
    return lock_call_end(&lc, rc, !(op & LOCK_UN));
}

/* glibc's lockf reaches fcntl inside the library, where no wrapper sees it. */
static int wrap_lockf(int fd, int cmd, off64_t len, int use64)
{
    struct lock_call lc;

    if (cmd == F_TEST)
        return use64 ? SLUICE_REAL(lockf64)(fd, cmd, len) : SLUICE_REAL(lockf)(fd, cmd, (off_t)len);
    lock_call_begin(&lc, fd);
    int rc = use64 ? SLUICE_REAL(lockf64)(fd, cmd, len) : SLUICE_REAL(lockf)(fd, cmd, (off_t)len);
    return lock_call_end(&lc, rc, cmd == F_LOCK || cmd == F_TLOCK);
}

SLUICE_EXPORT int lockf(int fd, int cmd, off_t len)
{
    return wrap_lockf(fd, cmd, len, 0);
}

SLUICE_EXPORT int lockf64(int fd, int cmd, off64_t len)
{
    return wrap_lockf(fd, cmd, len, 1);
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

/* Every call that names a path: resolve, down the mode's stack, count
 * (core/pathcall.h). `realcall` is the untouched call for when sluice is
 * not recording; `tiercall` uses c (struct sluice_pathcall). */
#define PATH_CALL(dirfd, path, counter, realcall, tiercall)                  \
    do {                                                                     \
        struct sluice_pathcall c;                                            \
        int saved_ = errno;                                                  \
        long rc_;                                                            \
        if (!sluice_active() || sluice_ptr_null_page(path))                  \
            return realcall;                                                 \
        sluice__guard++;                                                     \
        sluice_pathcall_begin(&c, dirfd, path, counter);                     \
        rc_ = sluice_pathcall_end(&c, (long)(tiercall));                     \
        sluice__guard--;                                                     \
        return sluice_ret_int((int)rc_, saved_);                             \
    } while (0)

/* fstatat(fd, "", AT_EMPTY_PATH) is an fstat of fd. */
#define IS_FD_STAT(path, flags) ((flags) & AT_EMPTY_PATH && (path) && (path)[0] == '\0')

/* The old ABI: version 1 is the kernel's struct stat on x86-64, the layout
 * of today's struct stat; other versions go straight through. */
#define STAT_AT(dirfd, path, st, flags, realcall) \
    PATH_CALL(dirfd, path, POSIX_STATS, realcall, sluice_tier_path_stat(c.stack, 0, &c.p, (struct stat *)(st), flags))

SLUICE_EXPORT int stat(const char *path, struct stat *st)
{
    STAT_AT(AT_FDCWD, path, st, 0, SLUICE_REAL(stat)(path, st));
}

SLUICE_EXPORT int stat64(const char *path, struct stat64 *st)
{
    STAT_AT(AT_FDCWD, path, st, 0, SLUICE_REAL(stat64)(path, st));
}

SLUICE_EXPORT int lstat(const char *path, struct stat *st)
{
    STAT_AT(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, SLUICE_REAL(lstat)(path, st));
}

SLUICE_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    STAT_AT(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, SLUICE_REAL(lstat64)(path, st));
}

SLUICE_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(fstatat)(dirfd, path, st, flags), sluice_file_fstat(f, st));
    STAT_AT(dirfd, path, st, flags, SLUICE_REAL(fstatat)(dirfd, path, st, flags));
}

SLUICE_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(fstatat64)(dirfd, path, st, flags), sluice_file_fstat(f, (struct stat *)st));
    STAT_AT(dirfd, path, st, flags, SLUICE_REAL(fstatat64)(dirfd, path, st, flags));
}

SLUICE_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__xstat)(ver, path, st);
    STAT_AT(AT_FDCWD, path, st, 0, SLUICE_REAL(__xstat)(ver, path, st));
}

SLUICE_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__xstat64)(ver, path, st);
    STAT_AT(AT_FDCWD, path, st, 0, SLUICE_REAL(__xstat64)(ver, path, st));
}

SLUICE_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__lxstat)(ver, path, st);
    STAT_AT(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, SLUICE_REAL(__lxstat)(ver, path, st));
}

SLUICE_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__lxstat64)(ver, path, st);
    STAT_AT(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW, SLUICE_REAL(__lxstat64)(ver, path, st));
}

SLUICE_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags);
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags), sluice_file_fstat(f, st));
    STAT_AT(dirfd, path, st, flags, SLUICE_REAL(__fxstatat)(ver, dirfd, path, st, flags));
}

SLUICE_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    if (ver != STAT_VER_LINUX)
        return SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags);
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags), sluice_file_fstat(f, (struct stat *)st));
    STAT_AT(dirfd, path, st, flags, SLUICE_REAL(__fxstatat64)(ver, dirfd, path, st, flags));
}

/* statx of a descriptor counts on the descriptor's record (the kernel's
 * answer, with the size of what a tier holds: sluice_file_statx). */
SLUICE_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
    if (IS_FD_STAT(path, flags))
        FD_IO(dirfd, SLUICE_REAL(statx)(dirfd, path, flags, mask, stx), sluice_file_statx(f, flags, mask, stx));
    PATH_CALL(dirfd, path, POSIX_STATS, SLUICE_REAL(statx)(dirfd, path, flags, mask, stx),
              sluice_tier_path_statx(c.stack, 0, &c.p, flags, mask, stx));
}

SLUICE_EXPORT int access(const char *path, int mode)
{
    PATH_CALL(AT_FDCWD, path, POSIX_STATS, SLUICE_REAL(access)(path, mode),
              sluice_tier_path_access(c.stack, 0, &c.p, mode, 0));
}

SLUICE_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    PATH_CALL(dirfd, path, POSIX_STATS, SLUICE_REAL(faccessat)(dirfd, path, mode, flags),
              sluice_tier_path_access(c.stack, 0, &c.p, mode, flags));
}

/* euidaccess and eaccess (GNU sort, test -r, find -readable check their
 * inputs with them): glibc calls its faccessat inside, where no wrapper
 * sees it, so a staged file would not exist for them. */
SLUICE_EXPORT int euidaccess(const char *path, int mode)
{
    PATH_CALL(AT_FDCWD, path, POSIX_STATS, SLUICE_REAL(euidaccess)(path, mode),
              sluice_tier_path_access(c.stack, 0, &c.p, mode, AT_EACCESS));
}

SLUICE_EXPORT int eaccess(const char *path, int mode)
{
    PATH_CALL(AT_FDCWD, path, POSIX_STATS, SLUICE_REAL(eaccess)(path, mode),
              sluice_tier_path_access(c.stack, 0, &c.p, mode, AT_EACCESS));
}

SLUICE_EXPORT int unlink(const char *path)
{
    PATH_CALL(AT_FDCWD, path, POSIX_UNLINKS, SLUICE_REAL(unlink)(path), sluice_tier_path_unlink(c.stack, 0, &c.p, 0));
}

SLUICE_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    PATH_CALL(dirfd, path, (flags & AT_REMOVEDIR) ? POSIX_RMDIRS : POSIX_UNLINKS,
              SLUICE_REAL(unlinkat)(dirfd, path, flags), sluice_tier_path_unlink(c.stack, 0, &c.p, flags));
}

SLUICE_EXPORT int rmdir(const char *path)
{
    PATH_CALL(AT_FDCWD, path, POSIX_RMDIRS, SLUICE_REAL(rmdir)(path),
              sluice_tier_path_unlink(c.stack, 0, &c.p, AT_REMOVEDIR));
}

/* remove(): unlink, or rmdir of a directory, as the C library does it. */
static __thread int remove_was_rmdir;

static long remove_down(struct sluice_pathcall *c)
{
    long rc = sluice_tier_path_unlink(c->stack, 0, &c->p, 0);
    if (rc == -EISDIR || rc == -EPERM) {
        long r2 = sluice_tier_path_unlink(c->stack, 0, &c->p, AT_REMOVEDIR);
        if (r2 == 0) {
            c->counter = POSIX_RMDIRS;
            remove_was_rmdir = 1;
        }
        if (r2 == 0 || rc == -EISDIR)
            rc = r2;
    }
    return rc;
}

static int wrap_remove(const char *path)
{
    PATH_CALL(AT_FDCWD, path, POSIX_UNLINKS, SLUICE_REAL(remove)(path), remove_down(&c));
}

/* The C library's remove() leaves errno at EISDIR after removing a
 * directory; a program may look, so it finds the same. */
SLUICE_EXPORT int remove(const char *path)
{
    remove_was_rmdir = 0;
    int rc = wrap_remove(path);
    if (rc == 0 && remove_was_rmdir)
        errno = EISDIR;
    return rc;
}

/* Two-path calls: the second path goes down with the first. */
#define TWO_PATHS(c, to, dirfd2, path2)  \
    struct sluice_path to;               \
    char to##_abs[PATH_MAX];             \
    sluice_pathcall_second(&(c), &to, to##_abs, dirfd2, path2)

static long rename_down(struct sluice_pathcall *c, int tofd, const char *to_path, unsigned flags)
{
    TWO_PATHS(*c, to, tofd, to_path);
    long rc = sluice_tier_path_rename(c->stack, 0, &c->p, &to, flags);
    /* the name the file took (the tier below counts the fs side of a split record) */
    if (rc >= 0)
        sluice_count_rename_target(tofd, to_path, c->p.fs_rec ? SLUICE_SIDES_APP : SLUICE_SIDES_BOTH);
    return rc;
}

SLUICE_EXPORT int rename(const char *from, const char *to)
{
    PATH_CALL(AT_FDCWD, from, POSIX_RENAMES, SLUICE_REAL(rename)(from, to), rename_down(&c, AT_FDCWD, to, 0));
}

SLUICE_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    PATH_CALL(fromfd, from, POSIX_RENAMES, SLUICE_REAL(renameat)(fromfd, from, tofd, to),
              rename_down(&c, tofd, to, 0));
}

SLUICE_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
    PATH_CALL(fromfd, from, POSIX_RENAMES, SLUICE_REAL(renameat2)(fromfd, from, tofd, to, flags),
              rename_down(&c, tofd, to, flags));
}

/* link(from, to) and symlink(target, to) are counted on the name made. */
static long link_down(struct sluice_pathcall *c, int fromfd, const char *from, int flags)
{
    TWO_PATHS(*c, src, fromfd, from);
    return sluice_tier_path_link(c->stack, 0, &src, &c->p, flags);
}

SLUICE_EXPORT int link(const char *from, const char *to)
{
    PATH_CALL(AT_FDCWD, to, POSIX_LINKS, SLUICE_REAL(link)(from, to), link_down(&c, AT_FDCWD, from, 0));
}

SLUICE_EXPORT int linkat(int fromfd, const char *from, int tofd, const char *to, int flags)
{
    PATH_CALL(tofd, to, POSIX_LINKS, SLUICE_REAL(linkat)(fromfd, from, tofd, to, flags),
              link_down(&c, fromfd, from, flags));
}

SLUICE_EXPORT int symlink(const char *target, const char *to)
{
    PATH_CALL(AT_FDCWD, to, POSIX_LINKS, SLUICE_REAL(symlink)(target, to),
              sluice_tier_path_symlink(c.stack, 0, target, &c.p));
}

SLUICE_EXPORT int symlinkat(const char *target, int tofd, const char *to)
{
    PATH_CALL(tofd, to, POSIX_LINKS, SLUICE_REAL(symlinkat)(target, tofd, to),
              sluice_tier_path_symlink(c.stack, 0, target, &c.p));
}

SLUICE_EXPORT int mkdir(const char *path, mode_t mode)
{
    PATH_CALL(AT_FDCWD, path, POSIX_MKDIRS, SLUICE_REAL(mkdir)(path, mode),
              sluice_tier_path_mkdir(c.stack, 0, &c.p, mode));
}

SLUICE_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    PATH_CALL(dirfd, path, POSIX_MKDIRS, SLUICE_REAL(mkdirat)(dirfd, path, mode),
              sluice_tier_path_mkdir(c.stack, 0, &c.p, mode));
}

SLUICE_EXPORT int truncate(const char *path, off_t len)
{
    PATH_CALL(AT_FDCWD, path, POSIX_TRUNCATES, SLUICE_REAL(truncate)(path, len),
              sluice_tier_path_truncate(c.stack, 0, &c.p, len));
}

SLUICE_EXPORT int truncate64(const char *path, off64_t len)
{
    PATH_CALL(AT_FDCWD, path, POSIX_TRUNCATES, SLUICE_REAL(truncate64)(path, len),
              sluice_tier_path_truncate(c.stack, 0, &c.p, len));
}

/* ---- modes, owners, times ---- */

SLUICE_EXPORT int chmod(const char *path, mode_t mode)
{
    PATH_CALL(AT_FDCWD, path, POSIX_CHMODS, SLUICE_REAL(chmod)(path, mode),
              sluice_tier_path_chmod(c.stack, 0, &c.p, mode, 0));
}

SLUICE_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
    PATH_CALL(dirfd, path, POSIX_CHMODS, SLUICE_REAL(fchmodat)(dirfd, path, mode, flags),
              sluice_tier_path_chmod(c.stack, 0, &c.p, mode, flags));
}

SLUICE_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
    PATH_CALL(AT_FDCWD, path, POSIX_CHOWNS, SLUICE_REAL(chown)(path, uid, gid),
              sluice_tier_path_chown(c.stack, 0, &c.p, uid, gid, 0));
}

SLUICE_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
    PATH_CALL(AT_FDCWD, path, POSIX_CHOWNS, SLUICE_REAL(lchown)(path, uid, gid),
              sluice_tier_path_chown(c.stack, 0, &c.p, uid, gid, AT_SYMLINK_NOFOLLOW));
}

SLUICE_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
    PATH_CALL(dirfd, path, POSIX_CHOWNS, SLUICE_REAL(fchownat)(dirfd, path, uid, gid, flags),
              sluice_tier_path_chown(c.stack, 0, &c.p, uid, gid, flags));
}

SLUICE_EXPORT int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags)
{
    /* (a NULL path: the C library's own EINVAL, from the real call) */
    PATH_CALL(dirfd, path, POSIX_UTIMES, SLUICE_REAL(utimensat)(dirfd, path, times, flags),
              sluice_tier_path_utimens(c.stack, 0, &c.p, times, flags));
}

/* The microsecond calls, in nanoseconds (NULL: now). */
static const struct timespec *timeval_to_timespec(const struct timeval tv[2], struct timespec ts[2])
{
    if (!tv)
        return NULL;
    for (int i = 0; i < 2; i++)
        ts[i] = (struct timespec){.tv_sec = tv[i].tv_sec, .tv_nsec = tv[i].tv_usec * 1000};
    return ts;
}

SLUICE_EXPORT int utimes(const char *path, const struct timeval tv[2])
{
    struct timespec ts[2];
    PATH_CALL(AT_FDCWD, path, POSIX_UTIMES, SLUICE_REAL(utimes)(path, tv),
              sluice_tier_path_utimens(c.stack, 0, &c.p, timeval_to_timespec(tv, ts), 0));
}

SLUICE_EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
    struct timespec ts[2];
    PATH_CALL(AT_FDCWD, path, POSIX_UTIMES, SLUICE_REAL(lutimes)(path, tv),
              sluice_tier_path_utimens(c.stack, 0, &c.p, timeval_to_timespec(tv, ts), AT_SYMLINK_NOFOLLOW));
}

SLUICE_EXPORT int utime(const char *path, const struct utimbuf *ub)
{
    struct timespec ts[2];
    if (ub) {
        ts[0] = (struct timespec){.tv_sec = ub->actime};
        ts[1] = (struct timespec){.tv_sec = ub->modtime};
    }
    PATH_CALL(AT_FDCWD, path, POSIX_UTIMES, SLUICE_REAL(utime)(path, ub),
              sluice_tier_path_utimens(c.stack, 0, &c.p, ub ? ts : NULL, 0));
}

/* ---- extended attributes ---- */

#define XATTR_PATH(path, realcall, ...)                                                 \
    do {                                                                                \
        struct sluice_xattr x_ = {__VA_ARGS__};                                         \
        int counter_ = x_.op == SLUICE_XATTR_GET || x_.op == SLUICE_XATTR_LIST ? POSIX_XATTR_READS \
                                                                               : POSIX_XATTR_WRITES; \
        struct sluice_pathcall c;                                                       \
        int saved_ = errno;                                                             \
        long rc_;                                                                       \
        if (!sluice_active() || sluice_ptr_null_page(path))                             \
            return realcall;                                                            \
        sluice__guard++;                                                                \
        sluice_pathcall_begin(&c, AT_FDCWD, path, counter_);                            \
        rc_ = sluice_pathcall_end(&c, (long)sluice_tier_path_xattr(c.stack, 0, &c.p, &x_)); \
        sluice__guard--;                                                                \
        return sluice_ret_ssize(rc_, saved_);                                           \
    } while (0)

SLUICE_EXPORT ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
    XATTR_PATH(path, SLUICE_REAL(getxattr)(path, name, value, size), .op = SLUICE_XATTR_GET, .name = name,
               .value = value, .size = size);
}

SLUICE_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
    XATTR_PATH(path, SLUICE_REAL(lgetxattr)(path, name, value, size), .op = SLUICE_XATTR_GET, .name = name,
               .value = value, .size = size, .nofollow = 1);
}

SLUICE_EXPORT int setxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
    XATTR_PATH(path, SLUICE_REAL(setxattr)(path, name, value, size, flags), .op = SLUICE_XATTR_SET, .name = name,
               .value = (void *)value, .size = size, .flags = flags);
}

SLUICE_EXPORT int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
    XATTR_PATH(path, SLUICE_REAL(lsetxattr)(path, name, value, size, flags), .op = SLUICE_XATTR_SET, .name = name,
               .value = (void *)value, .size = size, .flags = flags, .nofollow = 1);
}

SLUICE_EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
    XATTR_PATH(path, SLUICE_REAL(listxattr)(path, list, size), .op = SLUICE_XATTR_LIST, .value = list, .size = size);
}

SLUICE_EXPORT ssize_t llistxattr(const char *path, char *list, size_t size)
{
    XATTR_PATH(path, SLUICE_REAL(llistxattr)(path, list, size), .op = SLUICE_XATTR_LIST, .value = list,
               .size = size, .nofollow = 1);
}

SLUICE_EXPORT int removexattr(const char *path, const char *name)
{
    XATTR_PATH(path, SLUICE_REAL(removexattr)(path, name), .op = SLUICE_XATTR_REMOVE, .name = name);
}

SLUICE_EXPORT int lremovexattr(const char *path, const char *name)
{
    XATTR_PATH(path, SLUICE_REAL(lremovexattr)(path, name), .op = SLUICE_XATTR_REMOVE, .name = name,
               .nofollow = 1);
}

/* ---- metadata of an open file ---- */

SLUICE_EXPORT int fchmod(int fd, mode_t mode)
{
    FD_IO(fd, SLUICE_REAL(fchmod)(fd, mode), sluice_file_fchmod(f, mode));
}

SLUICE_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
    FD_IO(fd, SLUICE_REAL(fchown)(fd, uid, gid), sluice_file_fchown(f, uid, gid));
}

SLUICE_EXPORT int futimens(int fd, const struct timespec times[2])
{
    FD_IO(fd, SLUICE_REAL(futimens)(fd, times), sluice_file_futimens(f, times));
}

SLUICE_EXPORT int futimes(int fd, const struct timeval tv[2])
{
    struct timespec ts[2];
    FD_IO(fd, SLUICE_REAL(futimes)(fd, tv), sluice_file_futimens(f, timeval_to_timespec(tv, ts)));
}

SLUICE_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    FD_IO(fd, SLUICE_REAL(fallocate)(fd, mode, off, len), sluice_file_fallocate(f, mode, off, len));
}

SLUICE_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
    FD_IO(fd, SLUICE_REAL(fallocate64)(fd, mode, off, len), sluice_file_fallocate(f, mode, off, len));
}

/* posix_fallocate returns the error number itself. */
SLUICE_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    struct sluice_file *f;
    int rc;

    if (!sluice_active() || !(f = sluice_fd_get(fd)))
        return SLUICE_REAL(posix_fallocate)(fd, off, len);
    sluice__guard++;
    rc = sluice_file_fallocate(f, SLUICE_POSIX_FALLOCATE, off, len);
    sluice__guard--;
    sluice_file_put(f);
    return -rc;
}

SLUICE_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
    return posix_fallocate(fd, off, len);
}

#define XATTR_FD(fd, realcall, ...)                                                        \
    do {                                                                                   \
        struct sluice_xattr x_ = {__VA_ARGS__};                                            \
        FD_IO(fd, realcall, sluice_file_fxattr(f, &x_));                                   \
    } while (0)

SLUICE_EXPORT ssize_t fgetxattr(int fd, const char *name, void *value, size_t size)
{
    XATTR_FD(fd, SLUICE_REAL(fgetxattr)(fd, name, value, size), .op = SLUICE_XATTR_GET, .name = name,
             .value = value, .size = size);
}

SLUICE_EXPORT int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
    XATTR_FD(fd, SLUICE_REAL(fsetxattr)(fd, name, value, size, flags), .op = SLUICE_XATTR_SET, .name = name,
             .value = (void *)value, .size = size, .flags = flags);
}

SLUICE_EXPORT ssize_t flistxattr(int fd, char *list, size_t size)
{
    XATTR_FD(fd, SLUICE_REAL(flistxattr)(fd, list, size), .op = SLUICE_XATTR_LIST, .value = list, .size = size);
}

SLUICE_EXPORT int fremovexattr(int fd, const char *name)
{
    XATTR_FD(fd, SLUICE_REAL(fremovexattr)(fd, name), .op = SLUICE_XATTR_REMOVE, .name = name);
}

/* ---- POSIX AIO (Open MPI's OMPIO uses it for non-blocking I/O) ---- */

/* Requests in flight on recorded files, until aio_return tells how many
 * bytes each moved: which kind, where, and when submitted. Darshan counts
 * an AIO transfer as a read or write at aio_return; so does sluice (both
 * sides: the C library's AIO threads made the system call the program
 * asked for). A request past the table's size is counted as a request
 * only. */
#define AIO_SLOTS 256
static struct aio_pending {
    const void *cb;
    int fd, write;
    int64_t off;
    uint64_t t0;
} aio_pending[AIO_SLOTS];
static pthread_mutex_t aio_lock = PTHREAD_MUTEX_INITIALIZER;

static void aio_remember(const void *cb, int fd, int write, int64_t off)
{
    pthread_mutex_lock(&aio_lock);
    struct aio_pending *free_slot = NULL;
    for (int i = 0; i < AIO_SLOTS; i++) {
        if (aio_pending[i].cb == cb) {   /* a control block used again */
            free_slot = &aio_pending[i];
            break;
        }
        if (!aio_pending[i].cb && !free_slot)
            free_slot = &aio_pending[i];
    }
    if (free_slot)
        *free_slot = (struct aio_pending){.cb = cb, .fd = fd, .write = write, .off = off, .t0 = sluice_now()};
    pthread_mutex_unlock(&aio_lock);
}

/* An AIO request on a recorded file: the kernel (or the C library's AIO
 * threads) reads or writes it later, where no tier sees it, so a tier
 * holding the file's bytes steps aside first, as for kernel copies; the
 * request is counted, and its bytes at aio_return. */
static void aio_submitted(const void *cb, int fd, int counter, int64_t off)
{
    int saved = errno;
    struct sluice_file *f;

    if (!sluice_active() || !sluice_fd_known(fd))
        return;
    sluice_fd_fallback(fd, SLUICE_FALLBACK_KERNEL);
    if (counter >= 0 && (f = sluice_fd_get(fd)) != NULL) {
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, counter, t, t);
        sluice_file_put(f);
        aio_remember(cb, fd, counter == POSIX_AIO_WRITES, off);
    }
    errno = saved;
}

/* aio_return(cb) gave rc: the request's transfer, counted. */
static void aio_returned(const void *cb, ssize_t rc)
{
    struct aio_pending p = {0};
    struct sluice_file *f;
    int saved = errno;

    if (!sluice_active())
        return;
    pthread_mutex_lock(&aio_lock);
    for (int i = 0; i < AIO_SLOTS; i++)
        if (aio_pending[i].cb == cb) {
            p = aio_pending[i];
            aio_pending[i].cb = NULL;
            break;
        }
    pthread_mutex_unlock(&aio_lock);
    if (!p.cb || rc < 0 || (f = sluice_fd_get(p.fd)) == NULL) {
        errno = saved;
        return;
    }
    sluice_count_rw(f->rec, SLUICE_SIDES_BOTH, p.write ? SLUICE_WRITE : SLUICE_READ, p.off, rc, p.t0, sluice_now());
    sluice_file_put(f);
    errno = saved;
}

SLUICE_EXPORT ssize_t aio_return(struct aiocb *cb)
{
    ssize_t rc = SLUICE_REAL(aio_return)(cb);
    aio_returned(cb, rc);
    return rc;
}

SLUICE_EXPORT ssize_t aio_return64(struct aiocb64 *cb)
{
    ssize_t rc = SLUICE_REAL(aio_return64)(cb);
    aio_returned(cb, rc);
    return rc;
}

SLUICE_EXPORT int aio_read(struct aiocb *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, POSIX_AIO_READS, (int64_t)cb->aio_offset);
    return SLUICE_REAL(aio_read)(cb);
}

SLUICE_EXPORT int aio_read64(struct aiocb64 *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, POSIX_AIO_READS, (int64_t)cb->aio_offset);
    return SLUICE_REAL(aio_read64)(cb);
}

SLUICE_EXPORT int aio_write(struct aiocb *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, POSIX_AIO_WRITES, (int64_t)cb->aio_offset);
    return SLUICE_REAL(aio_write)(cb);
}

SLUICE_EXPORT int aio_write64(struct aiocb64 *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, POSIX_AIO_WRITES, (int64_t)cb->aio_offset);
    return SLUICE_REAL(aio_write64)(cb);
}

/* (an fsync: every byte a tier holds goes first; not counted as a request) */
SLUICE_EXPORT int aio_fsync(int op, struct aiocb *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, -1, -1);
    return SLUICE_REAL(aio_fsync)(op, cb);
}

SLUICE_EXPORT int aio_fsync64(int op, struct aiocb64 *cb)
{
    if (cb)
        aio_submitted(cb, cb->aio_fildes, -1, -1);
    return SLUICE_REAL(aio_fsync64)(op, cb);
}

SLUICE_EXPORT int lio_listio(int mode, struct aiocb *const list[], int n, struct sigevent *sev)
{
    for (int i = 0; list && i < n; i++)
        if (list[i] && list[i]->aio_lio_opcode != LIO_NOP)
            aio_submitted(list[i], list[i]->aio_fildes, list[i]->aio_lio_opcode == LIO_READ ? POSIX_AIO_READS : POSIX_AIO_WRITES,
                          (int64_t)list[i]->aio_offset);
    return SLUICE_REAL(lio_listio)(mode, list, n, sev);
}

SLUICE_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int n, struct sigevent *sev)
{
    for (int i = 0; list && i < n; i++)
        if (list[i] && list[i]->aio_lio_opcode != LIO_NOP)
            aio_submitted(list[i], list[i]->aio_fildes, list[i]->aio_lio_opcode == LIO_READ ? POSIX_AIO_READS : POSIX_AIO_WRITES,
                          (int64_t)list[i]->aio_offset);
    return SLUICE_REAL(lio_listio64)(mode, list, n, sev);
}

/* ---- bytes the kernel moves between descriptors ---- */

/* copy_file_range, sendfile, splice: the kernel reads one file and writes
 * another without the bytes passing through the program, so a tier holding
 * either file's bytes steps aside first (SLUICE_FALLBACK_KERNEL); the bytes
 * moved are counted as a read of the source and a write of the target. */
static int kernel_copy_prepare(int in, int out)
{
    int known = 0;
    if (!sluice_active())
        return 0;
    if (sluice_fd_known(in)) {
        sluice_fd_fallback(in, SLUICE_FALLBACK_KERNEL);
        known = 1;
    }
    if (sluice_fd_known(out)) {
        sluice_fd_fallback(out, SLUICE_FALLBACK_KERNEL);
        known = 1;
    }
    return known;
}

static void kernel_copy_done(int in, const loff_t *off_in, int out, const loff_t *off_out, ssize_t rc,
                             uint64_t t0)
{
    int saved = errno;
    sluice__guard++;
    sluice_file_kernel_copied(in, off_in ? *off_in - (rc > 0 ? rc : 0) : -1, SLUICE_READ, rc, t0);
    sluice_file_kernel_copied(out, off_out ? *off_out - (rc > 0 ? rc : 0) : -1, SLUICE_WRITE, rc, t0);
    sluice__guard--;
    errno = saved;
}

/* copy_file_range between a file on the node-local tier (a staged file)
 * and one on the shared file system: the kernel refuses to copy across file
 * systems (EXDEV) where the program, plain, copies within one. The copy is
 * made here instead, as the kernel would make it: up to len bytes, from and
 * to the offsets given (or the descriptors' positions, which move). */
static ssize_t copy_across_tiers(int in, loff_t *off_in, int out, loff_t *off_out, size_t len)
{
    char buf[65536];
    size_t done = 0;

    while (done < len) {
        size_t want = len - done < sizeof buf ? len - done : sizeof buf;
        ssize_t r = off_in ? SLUICE_REAL(pread)(in, buf, want, *off_in) : SLUICE_REAL(read)(in, buf, want);
        if (r <= 0)
            return done ? (ssize_t)done : r;
        ssize_t w = off_out ? SLUICE_REAL(pwrite)(out, buf, (size_t)r, *off_out) : SLUICE_REAL(write)(out, buf, (size_t)r);
        if (w < 0)
            return done ? (ssize_t)done : w;
        if (off_in)
            *off_in += w;
        else if (w < r)
            (void)SLUICE_REAL(lseek)(in, w - r, SEEK_CUR);   /* (read more than was written) */
        if (off_out)
            *off_out += w;
        done += (size_t)w;
        if (w < r)
            break;
    }
    return (ssize_t)done;
}

SLUICE_EXPORT ssize_t copy_file_range(int in, loff_t *off_in, int out, loff_t *off_out, size_t len,
                                      unsigned int flags)
{
    if (!kernel_copy_prepare(in, out))
        return SLUICE_REAL(copy_file_range)(in, off_in, out, off_out, len, flags);
    uint64_t t0 = sluice_now();
    ssize_t rc = SLUICE_REAL(copy_file_range)(in, off_in, out, off_out, len, flags);
    if (rc < 0 && errno == EXDEV && flags == 0 && (!stream_reaches_fs(in) || !stream_reaches_fs(out)))
        rc = copy_across_tiers(in, off_in, out, off_out, len);
    kernel_copy_done(in, off_in, out, off_out, rc, t0);
    return rc;
}

SLUICE_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
    if (!kernel_copy_prepare(in, out))
        return SLUICE_REAL(sendfile)(out, in, off, count);
    uint64_t t0 = sluice_now();
    ssize_t rc = SLUICE_REAL(sendfile)(out, in, off, count);
    kernel_copy_done(in, (const loff_t *)off, out, NULL, rc, t0);
    return rc;
}

SLUICE_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
    return sendfile(out, in, off, count);
}

SLUICE_EXPORT ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len, unsigned int flags)
{
    if (!kernel_copy_prepare(in, out))
        return SLUICE_REAL(splice)(in, off_in, out, off_out, len, flags);
    uint64_t t0 = sluice_now();
    ssize_t rc = SLUICE_REAL(splice)(in, off_in, out, off_out, len, flags);
    kernel_copy_done(in, off_in, out, off_out, rc, t0);
    return rc;
}

/* ---- names the C library resolves ---- */

/* A name only the tiers know (a file stage mode holds): its directory's
 * real path and its own name. */
static char *realpath_of_tier_name(struct sluice_pathcall *c, char *resolved)
{
    struct stat st;
    char dir[PATH_MAX], *slash;

    if (!c->p.abs || sluice_tier_path_stat(c->stack, 0, &c->p, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        S_ISLNK(st.st_mode) || strlen(c->p.abs) >= sizeof dir)
        return NULL;
    strcpy(dir, c->p.abs);
    slash = strrchr(dir, '/');
    *slash = '\0';
    char *r = SLUICE_REAL(realpath)(dir[0] ? dir : "/", NULL);
    if (!r)
        return NULL;
    size_t n = strlen(r), m = strlen(slash + 1);
    char *out = resolved ? resolved : malloc(PATH_MAX);
    if (out && n + 1 + m < PATH_MAX) {
        memcpy(out, r, n);
        out[n] = '/';
        memcpy(out + n + 1 - (n == 1), slash + 1, m + 1);
    } else if (out && out != resolved) {
        free(out);
        out = NULL;
    }
    free(r);
    return out;
}

/* realpath() stats every component itself: one stat of the path, counted. */
SLUICE_EXPORT char *realpath(const char *path, char *resolved)
{
    struct sluice_pathcall c;
    int saved = errno;
    char *r;

    if (!sluice_active() || sluice_ptr_null_page(path))
        return SLUICE_REAL(realpath)(path, resolved);
    sluice__guard++;
    sluice_pathcall_begin(&c, AT_FDCWD, path, POSIX_STATS);
    r = SLUICE_REAL(realpath)(path, resolved);
    saved = errno;   /* as the C library leaves it, success included (EINVAL from its readlinks) */
    if (!r && saved == ENOENT && (r = realpath_of_tier_name(&c, resolved)) != NULL)
        saved = EINVAL;   /* what the C library leaves after a file's realpath */
    (void)sluice_pathcall_end(&c, r ? 0 : -saved);
    sluice__guard--;
    errno = saved;
    return r;
}
