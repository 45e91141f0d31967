/*
 * Descriptor lifecycle the C library hides: calls that close descriptors
 * without the public close() (closedir, close_range, closefrom, fclose of
 * an fdopen'd stream, syscall(SYS_close)) and calls that hand out new
 * descriptor numbers without the public open() (pipes, sockets, opendir,
 * mkstemp, eventfd, ...). A number sluice recorded must never outlive its
 * descriptor: the table slot is dropped when the kernel closes it, and a
 * number handed out anew never inherits a stale slot. Symbols: wrappers.def.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/counters.h"
#include "core/file.h"
#include "core/pathcall.h"
#include "core/stack.h"
#include "interpose/listing.h"
#include "sys/userptr.h"
#include "sys/privfd.h"
#include "interpose/interpose.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- closes the C library makes on the program's behalf ---- */

/* The kernel is about to close fd (and maybe more): tiers that work through
 * it get a private copy first. Returns 1 when the caller must report the
 * close afterwards with fd_closed(). */
static int fd_closing(int fd)
{
    if (!sluice_active() || !sluice_fd_known(fd) || sluice_in_vfork_child())
        return 0;
    sluice__guard++;
    sluice_fd_prepare_replace(fd);
    sluice__guard--;
    return 1;
}

static void fd_closed(int fd)
{
    int saved = errno;
    sluice__guard++;
    sluice_fd_replaced(fd);
    sluice__guard--;
    errno = saved;
}

/* A new descriptor the kernel gave out behind the public open(): whatever
 * the table held for its number belonged to a descriptor closed unseen. */
static int fd_fresh(int fd)
{
    /* (whether or not this thread is inside sluice: the table must be right) */
    if (fd >= 0 && __atomic_load_n(&sluice__state, __ATOMIC_RELAXED) == SLUICE_STATE_ACTIVE &&
        sluice_fd_known(fd) && !sluice_in_vfork_child()) {
        int saved = errno;
        sluice__guard++;
        sluice_fd_forget(fd);
        sluice__guard--;
        errno = saved;
    }
    return fd;
}

static void fd_pair_fresh(int rc, const int fds[2])
{
    if (rc == 0) {
        fd_fresh(fds[0]);
        fd_fresh(fds[1]);
    }
}

SLUICE_EXPORT int closedir(DIR *d)
{
    sluice_listing_end(d);
    int fd = d ? dirfd(d) : -1;
    int track = fd >= 0 && fd_closing(fd);
    int rc = SLUICE_REAL(closedir)(d);

    if (track)
        fd_closed(fd);
    return rc;
}

/* A listing of a directory is read: counted on the directory's record. */
#define LISTING(path, realcall, ok)                                           \
    do {                                                                      \
        struct sluice_pathcall c;                                             \
        int saved_ = errno;                                                   \
        if (!sluice_active() || sluice_ptr_null_page(path))                   \
            return realcall;                                                  \
        sluice__guard++;                                                      \
        sluice_pathcall_begin(&c, AT_FDCWD, path, POSIX_OPENDIRS);            \
        __typeof__(realcall) r_ = realcall;                                   \
        int err_ = (ok) ? saved_ : errno;                                     \
        (void)sluice_pathcall_end(&c, (ok) ? 0 : -err_);                      \
        sluice__guard--;                                                      \
        errno = err_;                                                         \
        return r_;                                                            \
    } while (0)

static DIR *opendir_fresh(const char *path)
{
    DIR *d = SLUICE_REAL(opendir)(path);
    if (d) {
        fd_fresh(dirfd(d));
        sluice_listing_begin(d, -1, path);
    }
    return d;
}

/* scandir of a directory whose tiers add names: the C library's scandir
 * reads with its own readdir, so it is done here with ours. */
static int scandir_listing(const char *path, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
                           int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
    DIR *d = opendir(path);
    struct dirent64 **out = NULL, *e;
    size_t n = 0, cap = 0;

    if (!d)
        return -1;
    while ((e = readdir64(d)) != NULL) {
        if (filter && !filter(e))
            continue;
        if (n == cap) {
            struct dirent64 **grown = realloc(out, (cap = cap ? cap * 2 : 32) * sizeof *out);
            if (!grown)
                goto fail;
            out = grown;
        }
        if (!(out[n] = malloc(e->d_reclen)))
            goto fail;
        memcpy(out[n++], e, e->d_reclen);
    }
    closedir(d);
    if (compar && n > 1)
        qsort(out, n, sizeof *out, (int (*)(const void *, const void *))compar);
    *list = out;
    return (int)n;
fail:
    while (n)
        free(out[--n]);
    free(out);
    closedir(d);
    errno = ENOMEM;
    return -1;
}

SLUICE_EXPORT DIR *opendir(const char *path)
{
    LISTING(path, opendir_fresh(path), r_ != NULL);
}

SLUICE_EXPORT int scandir64(const char *path, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
                            int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
    if (sluice_active() && sluice_stack_has_path_tiers() && !sluice_in_vfork_child())
        return scandir_listing(path, list, filter, compar);   /* (counted by its opendir) */
    LISTING(path, SLUICE_REAL(scandir64)(path, list, filter, compar), r_ >= 0);
}

SLUICE_EXPORT int scandir(const char *path, struct dirent ***list, int (*filter)(const struct dirent *),
                          int (*compar)(const struct dirent **, const struct dirent **))
{
    if (sluice_active() && sluice_stack_has_path_tiers() && !sluice_in_vfork_child())
        return scandir_listing(path, (struct dirent64 ***)list, (int (*)(const struct dirent64 *))filter,
                               (int (*)(const struct dirent64 **, const struct dirent64 **))compar);
    LISTING(path, SLUICE_REAL(scandir)(path, list, filter, compar), r_ >= 0);
}

/* The directory stream now owns fd: the descriptor stays what it was; a
 * recorded directory counts a listing read. */
SLUICE_EXPORT DIR *fdopendir(int fd)
{
    struct sluice_file *f;
    DIR *d = SLUICE_REAL(fdopendir)(fd);

    if (d && sluice_active() && (f = sluice_fd_get(fd)) != NULL) {
        int saved = errno;
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_OPENDIRS, t, t);
        sluice_file_put(f);
        sluice__guard++;
        sluice_listing_begin(d, fd, NULL);
        sluice__guard--;
        errno = saved;
    }
    return d;
}

static int close_range_call(unsigned lo, unsigned hi, unsigned flags, int is_syscall)
{
    return is_syscall ? (int)SLUICE_REAL(syscall)(SYS_close_range, lo, hi, flags)
                      : SLUICE_REAL(close_range)(lo, hi, (int)flags);
}

/* close_range(lo, hi): every recorded descriptor in the range is closed as
 * by close() (its tiers finish the file), then the kernel closes the rest
 * of the range in pieces that step over sluice's own descriptors. */
static int close_range_tracked(unsigned lo, unsigned hi, unsigned flags, int is_syscall)
{
    int saved = errno, rc = 0;

    if ((flags & CLOSE_RANGE_CLOEXEC) || lo > hi || !sluice_active() || sluice_in_vfork_child())
        return close_range_call(lo, hi, flags, is_syscall);
    int fdhigh = sluice_fd_high();
    for (long fd = lo; fd <= (long)hi && fd <= fdhigh; fd++)
        if (sluice_fd_known((int)fd))
            (void)close((int)fd);
    unsigned from = lo;
    int privhigh = sluice_privfd_high();
    for (long fd = lo; fd <= (long)hi && fd <= privhigh; fd++) {
        if (!sluice_privfd_is((int)fd))
            continue;
        if (from < (unsigned)fd && close_range_call(from, (unsigned)fd - 1, flags, is_syscall) != 0 && rc == 0)
            rc = -errno;
        from = (unsigned)fd + 1;
    }
    if (from <= hi && from >= lo && close_range_call(from, hi, flags, is_syscall) != 0 && rc == 0)
        rc = -errno;
    return sluice_ret_int(rc, saved);
}

SLUICE_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
    return close_range_tracked(lo, hi, (unsigned)flags, 0);
}

SLUICE_EXPORT void closefrom(int lo)
{
    int saved = errno;
    if (lo < 0)
        lo = 0;
    /* glibc's closefrom is close_range(lo, ~0U, 0) with a fallback for old
     * kernels; doing the same keeps the table right. */
    if (close_range_tracked((unsigned)lo, ~0U, 0, 0) != 0)
        SLUICE_REAL(closefrom)(lo);
    errno = saved;
}

/* ---- descriptors handed out without open() ---- */

SLUICE_EXPORT int pipe(int fds[2])
{
    int rc = SLUICE_REAL(pipe)(fds);
    fd_pair_fresh(rc, fds);
    return rc;
}

SLUICE_EXPORT int pipe2(int fds[2], int flags)
{
    int rc = SLUICE_REAL(pipe2)(fds, flags);
    fd_pair_fresh(rc, fds);
    return rc;
}

SLUICE_EXPORT int socket(int domain, int type, int protocol)
{
    return fd_fresh(SLUICE_REAL(socket)(domain, type, protocol));
}

SLUICE_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
    int rc = SLUICE_REAL(socketpair)(domain, type, protocol, fds);
    fd_pair_fresh(rc, fds);
    return rc;
}

SLUICE_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    return fd_fresh(SLUICE_REAL(accept)(fd, addr, len));
}

SLUICE_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    return fd_fresh(SLUICE_REAL(accept4)(fd, addr, len, flags));
}

SLUICE_EXPORT int eventfd(unsigned int count, int flags)
{
    return fd_fresh(SLUICE_REAL(eventfd)(count, flags));
}

SLUICE_EXPORT int epoll_create(int size)
{
    return fd_fresh(SLUICE_REAL(epoll_create)(size));
}

SLUICE_EXPORT int epoll_create1(int flags)
{
    return fd_fresh(SLUICE_REAL(epoll_create1)(flags));
}

SLUICE_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
    return fd_fresh(SLUICE_REAL(signalfd)(fd, mask, flags));
}

SLUICE_EXPORT int timerfd_create(int clock, int flags)
{
    return fd_fresh(SLUICE_REAL(timerfd_create)(clock, flags));
}

SLUICE_EXPORT int memfd_create(const char *name, unsigned int flags)
{
    return fd_fresh(SLUICE_REAL(memfd_create)(name, flags));
}

SLUICE_EXPORT int inotify_init(void)
{
    return fd_fresh(SLUICE_REAL(inotify_init)());
}

SLUICE_EXPORT int inotify_init1(int flags)
{
    return fd_fresh(SLUICE_REAL(inotify_init1)(flags));
}

/* mkstemp and friends open inside the C library. */
SLUICE_EXPORT int mkstemp(char *tmpl)
{
    return fd_fresh(SLUICE_REAL(mkstemp)(tmpl));
}

SLUICE_EXPORT int mkstemp64(char *tmpl)
{
    return fd_fresh(SLUICE_REAL(mkstemp64)(tmpl));
}

SLUICE_EXPORT int mkostemp(char *tmpl, int flags)
{
    return fd_fresh(SLUICE_REAL(mkostemp)(tmpl, flags));
}

SLUICE_EXPORT int mkostemp64(char *tmpl, int flags)
{
    return fd_fresh(SLUICE_REAL(mkostemp64)(tmpl, flags));
}

SLUICE_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
    return fd_fresh(SLUICE_REAL(mkstemps)(tmpl, suffixlen));
}

SLUICE_EXPORT int mkstemps64(char *tmpl, int suffixlen)
{
    return fd_fresh(SLUICE_REAL(mkstemps64)(tmpl, suffixlen));
}

SLUICE_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
    return fd_fresh(SLUICE_REAL(mkostemps)(tmpl, suffixlen, flags));
}

SLUICE_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
{
    return fd_fresh(SLUICE_REAL(mkostemps64)(tmpl, suffixlen, flags));
}

SLUICE_EXPORT FILE *tmpfile(void)
{
    FILE *fp = SLUICE_REAL(tmpfile)();
    if (fp)
        fd_fresh(fileno(fp));
    return fp;
}

SLUICE_EXPORT FILE *tmpfile64(void)
{
    FILE *fp = SLUICE_REAL(tmpfile64)();
    if (fp)
        fd_fresh(fileno(fp));
    return fp;
}

/* (its child is started as posix_spawn's, and only execs: process.c) */
SLUICE_EXPORT FILE *popen(const char *cmd, const char *type)
{
    sluice_before_spawn(1);
    FILE *fp = SLUICE_REAL(popen)(cmd, type);
    if (fp)
        fd_fresh(fileno(fp));
    return fp;
}

/* ---- syscall(): the descriptor calls go through the same doors ---- */

/* Every argument of a Linux system call is one register: forwarding six
 * longs is what the C library's own syscall() does. */
SLUICE_EXPORT long syscall(long nr, ...)
{
    va_list ap;
    long a[6];

    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    switch (nr) {
    case SYS_close:
        return close((int)a[0]);
    case SYS_close_range:
        return close_range_tracked((unsigned)a[0], (unsigned)a[1], (unsigned)a[2], 1);
    case SYS_dup:
        return dup((int)a[0]);
    case SYS_dup2:
        return dup2((int)a[0], (int)a[1]);
    case SYS_dup3:
        return dup3((int)a[0], (int)a[1], (int)a[2]);
    case SYS_fcntl:
        return fcntl((int)a[0], (int)a[1], (void *)a[2]);
    case SYS_open:
        return openat(AT_FDCWD, (const char *)a[0], (int)a[1], (mode_t)a[2]);
    case SYS_creat:
        return openat(AT_FDCWD, (const char *)a[0], O_CREAT | O_WRONLY | O_TRUNC, (mode_t)a[1]);
    case SYS_openat:
        return openat((int)a[0], (const char *)a[1], (int)a[2], (mode_t)a[3]);
    /* (programs that call these through syscall(), as fsstress does) */
    case SYS_copy_file_range:
        return copy_file_range((int)a[0], (loff_t *)a[1], (int)a[2], (loff_t *)a[3], (size_t)a[4], (unsigned)a[5]);
    case SYS_renameat2:
        return renameat2((int)a[0], (const char *)a[1], (int)a[2], (const char *)a[3], (unsigned)a[4]);
    case SYS_openat2:
    case SYS_pipe: case SYS_pipe2: case SYS_socket: case SYS_accept: case SYS_accept4:
    case SYS_memfd_create: case SYS_eventfd: case SYS_eventfd2: case SYS_epoll_create:
    case SYS_epoll_create1: case SYS_timerfd_create: case SYS_signalfd: case SYS_signalfd4:
    case SYS_inotify_init: case SYS_inotify_init1: case SYS_open_by_handle_at: case SYS_pidfd_open:
    case SYS_socketpair: {
        long rc = SLUICE_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (rc < 0)
            return rc;
        int saved = errno;
        if (nr == SYS_pipe || nr == SYS_pipe2 || nr == SYS_socketpair)
            fd_pair_fresh(0, (const int *)(a[nr == SYS_socketpair ? 3 : 0]));
        else
            fd_fresh((int)rc);
        errno = saved;
        return rc;
    }
    default:
        return SLUICE_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    }
}
