/*
 * sluice-io: a test driver that makes exactly the library calls it is told
 * to, one per argument, by their exact symbol names (fortified and old-ABI
 * ones included), and prints one JSON line per call: {"op", "ret", "errno"}.
 *
 *   sluice-io OP[:ARG[:ARG...]] ...
 *
 * It holds one current descriptor (fd), a second one (fd2, set by dup*),
 * and one current stream (fp). `swap` exchanges fd and fd2. Sizes are byte
 * counts; data written is the byte 'x'. Flags are comma lists of
 * r,w,rw,creat,trunc,append,excl,sync; whence is set,cur,end.
 */

#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/sendfile.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <utime.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp);
size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp);
char *__fgets_chk(char *s, size_t size, int n, FILE *fp);
char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *fp);
int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...);
int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap);
int __isoc99_fscanf(FILE *fp, const char *fmt, ...);
int __isoc99_vfscanf(FILE *fp, const char *fmt, va_list ap);
int _IO_putc(int c, FILE *fp);
int _IO_getc(FILE *fp);
int fcntl64(int fd, int cmd, ...);

static int fd = -1, fd2 = -1;
static FILE *fp;
static char buf[1 << 20], sbuf[4096];

static int parse_flags(const char *s)
{
    int f = 0, acc = O_RDONLY;
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "r")) acc = O_RDONLY;
        else if (!strcmp(t, "w")) acc = O_WRONLY;
        else if (!strcmp(t, "rw")) acc = O_RDWR;
        else if (!strcmp(t, "creat")) f |= O_CREAT;
        else if (!strcmp(t, "trunc")) f |= O_TRUNC;
        else if (!strcmp(t, "append")) f |= O_APPEND;
        else if (!strcmp(t, "excl")) f |= O_EXCL;
        else if (!strcmp(t, "sync")) f |= O_SYNC;
    }
    return f | acc;
}

static int whence(const char *s)
{
    return !strcmp(s, "cur") ? SEEK_CUR : !strcmp(s, "end") ? SEEK_END : SEEK_SET;
}

static void report(const char *op, long long ret, int err)
{
    printf("{\"op\": \"%s\", \"ret\": %lld, \"errno\": %d}\n", op, ret, err);
}

static int vfp(int (*f)(FILE *, const char *, va_list), FILE *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = f(s, fmt, ap);
    va_end(ap);
    return r;
}

static int vfp_chk(FILE *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(s, 1, fmt, ap);
    va_end(ap);
    return r;
}

static int vfs(int (*f)(FILE *, const char *, va_list), FILE *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = f(s, fmt, ap);
    va_end(ap);
    return r;
}

/* Calls that close or hand out descriptors behind the public close()/open()
 * (fdlife.c). Each leaves fd, fd2 and fp as they were, except closedir,
 * close_range, closefrom and syscall_close, which close fd. Returns 1 when
 * `name` was one of them, with its result in *ret. */
static int fdlife_op(const char *name, const char *arg, long long *ret)
{
    static DIR *dir;
    int p[2] = {-1, -1};
    char tmpl[4200];
    long long r = 0;

    snprintf(tmpl, sizeof tmpl, "%s.XXXXXX", arg);
#define FD_OP(s, call) else if (!strcmp(name, s)) { r = (call); if (r >= 0) close((int)r); }
#define PAIR_OP(s, call) else if (!strcmp(name, s)) { r = (call); if (r == 0) { close(p[0]); close(p[1]); } }
#define TMP_OP(s, call, sfx) else if (!strcmp(name, s)) { snprintf(tmpl, sizeof tmpl, "%s.XXXXXX%s", arg, sfx); \
                                                        r = (call); if (r >= 0) { close((int)r); unlink(tmpl); } }
    if (!strcmp(name, "opendir")) r = (dir = opendir(arg)) ? 0 : -1;
    else if (!strcmp(name, "fdopendir")) r = (dir = fdopendir(fd)) ? 0 : -1;
    else if (!strcmp(name, "closedir")) { r = closedir(dir); fd = -1; }
    else if (!strcmp(name, "readdir")) r = readdir(dir) ? 0 : -1;
    else if (!strcmp(name, "readdir64")) r = readdir64(dir) ? 0 : -1;
    else if (!strcmp(name, "rewinddir")) rewinddir(dir);
    else if (!strcmp(name, "scandir") || !strcmp(name, "scandir64")) {
        struct dirent **l = NULL;
        struct dirent64 **l64 = NULL;
        r = !strcmp(name, "scandir") ? scandir(arg, &l, NULL, alphasort) : scandir64(arg, &l64, NULL, alphasort64);
        for (long long i = 0; i < r; i++)
            free(l ? (void *)l[i] : (void *)l64[i]);
        free(l ? (void *)l : (void *)l64);
        r = r == 2 ? 0 : -1;   /* ".", ".." */
    }
    else if (!strcmp(name, "close_range")) { r = close_range((unsigned)fd, (unsigned)fd, 0); fd = -1; }
    else if (!strcmp(name, "closefrom")) { closefrom(fd); fd = -1; }
    else if (!strcmp(name, "syscall_close")) { r = syscall(SYS_close, fd); fd = -1; }
    else if (!strcmp(name, "umask")) { umask((mode_t)strtol(arg, NULL, 8)); r = 0; }
    else if (!strcmp(name, "syscall")) { r = syscall(SYS_getpid) > 0 ? 0 : -1; }
    PAIR_OP("pipe", pipe(p))
    PAIR_OP("pipe2", pipe2(p, O_CLOEXEC))
    PAIR_OP("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, p))
    FD_OP("socket", socket(AF_UNIX, SOCK_STREAM, 0))
    FD_OP("eventfd", eventfd(0, 0))
    FD_OP("epoll_create", epoll_create(1))
    FD_OP("epoll_create1", epoll_create1(0))
    FD_OP("timerfd_create", timerfd_create(CLOCK_MONOTONIC, 0))
    FD_OP("memfd_create", memfd_create("sluice-io", 0))
    FD_OP("inotify_init", inotify_init())
    FD_OP("inotify_init1", inotify_init1(0))
    else if (!strcmp(name, "signalfd")) {
        sigset_t m;
        sigemptyset(&m);
        r = signalfd(-1, &m, 0);
        if (r >= 0)
            close((int)r);
    }
    else if (!strcmp(name, "accept") || !strcmp(name, "accept4")) {
        /* A listening socket on an abstract address, one client, one accept. */
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "sluice-io-%d", (int)getpid());
        int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
        socklen_t len = (socklen_t)sizeof sa;
        r = bind(l, (struct sockaddr *)&sa, len) || listen(l, 1) || connect(c, (struct sockaddr *)&sa, len) ? -1 : 0;
        if (r == 0)
            r = !strcmp(name, "accept") ? accept(l, NULL, NULL) : accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (r >= 0)
            close((int)r);
        close(c);
        close(l);
    }
    TMP_OP("mkstemp", mkstemp(tmpl), "")
    TMP_OP("mkstemp64", mkstemp64(tmpl), "")
    TMP_OP("mkostemp", mkostemp(tmpl, O_CLOEXEC), "")
    TMP_OP("mkostemp64", mkostemp64(tmpl, O_CLOEXEC), "")
    TMP_OP("mkstemps", mkstemps(tmpl, 4), ".dat")
    TMP_OP("mkstemps64", mkstemps64(tmpl, 4), ".dat")
    TMP_OP("mkostemps", mkostemps(tmpl, 4, O_CLOEXEC), ".dat")
    TMP_OP("mkostemps64", mkostemps64(tmpl, 4, O_CLOEXEC), ".dat")
    else if (!strcmp(name, "tmpfile") || !strcmp(name, "tmpfile64")) {
        FILE *t = !strcmp(name, "tmpfile") ? tmpfile() : tmpfile64();
        r = t ? fclose(t) : -1;
    }
    else if (!strcmp(name, "popen")) {
        FILE *t = popen("true", "r");
        r = t ? pclose(t) : -1;
    }
    else
        return 0;
#undef FD_OP
#undef PAIR_OP
#undef TMP_OP
    *ret = r;
    return 1;
}

/* Metadata calls by path and by descriptor, and bytes the kernel moves:
 * a[0] is the path (the second path, for link/symlink/copies, is a[0]
 * with ".2" appended; count: the bytes a copy moves). Returns 1 when `name` was one of them. */
static int meta_op(const char *name, const char *path, long count, long long *ret)
{
    char other[4200], val[64];
    struct timespec ts[2] = {{1000000000, 5}, {1000000000, 7}};
    struct timeval tv[2] = {{1000000000, 5}, {1000000000, 7}};
    struct utimbuf ub = {1000000000, 1000000000};
    long long r;

    snprintf(other, sizeof other, "%s.2", path);
    if (!strcmp(name, "remove")) r = remove(path);
    else if (!strcmp(name, "link")) r = link(path, other);
    else if (!strcmp(name, "linkat")) r = linkat(AT_FDCWD, path, AT_FDCWD, other, 0);
    else if (!strcmp(name, "symlink")) r = symlink(path, other);
    else if (!strcmp(name, "symlinkat")) r = symlinkat(path, AT_FDCWD, other);
    else if (!strcmp(name, "chmod")) r = chmod(path, 0600);
    else if (!strcmp(name, "fchmodat")) r = fchmodat(AT_FDCWD, path, 0600, 0);
    else if (!strcmp(name, "chown")) r = chown(path, getuid(), getgid());
    else if (!strcmp(name, "lchown")) r = lchown(path, getuid(), getgid());
    else if (!strcmp(name, "fchownat")) r = fchownat(AT_FDCWD, path, getuid(), getgid(), 0);
    else if (!strcmp(name, "utime")) r = utime(path, &ub);
    else if (!strcmp(name, "utimes")) r = utimes(path, tv);
    else if (!strcmp(name, "lutimes")) r = lutimes(path, tv);
    else if (!strcmp(name, "utimensat")) r = utimensat(AT_FDCWD, path, ts, 0);
    else if (!strcmp(name, "setxattr")) r = setxattr(path, "user.sluice", "v1", 2, 0);
    else if (!strcmp(name, "lsetxattr")) r = lsetxattr(path, "user.sluice", "v1", 2, 0);
    else if (!strcmp(name, "getxattr")) r = getxattr(path, "user.sluice", val, sizeof val);
    else if (!strcmp(name, "lgetxattr")) r = lgetxattr(path, "user.sluice", val, sizeof val);
    else if (!strcmp(name, "listxattr")) r = listxattr(path, val, sizeof val);
    else if (!strcmp(name, "llistxattr")) r = llistxattr(path, val, sizeof val);
    else if (!strcmp(name, "removexattr")) r = removexattr(path, "user.sluice");
    else if (!strcmp(name, "lremovexattr")) r = lremovexattr(path, "user.sluice");
    else if (!strcmp(name, "realpath")) { char *p = realpath(path, NULL); r = p ? 0 : -1; free(p); }
    else if (!strcmp(name, "fchmod")) r = fchmod(fd, 0600);
    else if (!strcmp(name, "fchown")) r = fchown(fd, getuid(), getgid());
    else if (!strcmp(name, "futimens")) r = futimens(fd, ts);
    else if (!strcmp(name, "futimes")) r = futimes(fd, tv);
    else if (!strcmp(name, "fallocate")) r = fallocate(fd, 0, 0, 4096);
    else if (!strcmp(name, "fallocate64")) r = fallocate64(fd, 0, 0, 4096);
    else if (!strcmp(name, "posix_fallocate")) r = -posix_fallocate(fd, 0, 4096);
    else if (!strcmp(name, "posix_fallocate64")) r = -posix_fallocate64(fd, 0, 4096);
    else if (!strcmp(name, "fsetxattr")) r = fsetxattr(fd, "user.sluice", "v1", 2, 0);
    else if (!strcmp(name, "fgetxattr")) r = fgetxattr(fd, "user.sluice", val, sizeof val);
    else if (!strcmp(name, "flistxattr")) r = flistxattr(fd, val, sizeof val);
    else if (!strcmp(name, "fremovexattr")) r = fremovexattr(fd, "user.sluice");
    else if (!strcmp(name, "copy_file_range") || !strcmp(name, "sendfile") || !strcmp(name, "sendfile64") ||
             !strcmp(name, "splice")) {
        /* fd (open for reading, at 0) to a new file path.2; splice through a pipe */
        int out = open(other, O_CREAT | O_TRUNC | O_WRONLY, 0644), p[2];
        size_t n = (size_t)count;
        if (!strcmp(name, "copy_file_range")) r = copy_file_range(fd, NULL, out, NULL, n, 0);
        else if (!strcmp(name, "sendfile")) r = sendfile(out, fd, NULL, n);
        else if (!strcmp(name, "sendfile64")) r = sendfile64(out, fd, NULL, n);
        else {
            r = pipe(p) ? -1 : splice(fd, NULL, p[1], NULL, n, 0);
            if (r > 0)
                r = splice(p[0], NULL, out, NULL, (size_t)r, 0);
            close(p[0]);
            close(p[1]);
        }
        close(out);
    }
    else
        return 0;
    *ret = r;
    return 1;
}

/* Wait for an AIO request and return its result (aio_return), or -1. */
static long long aio_wait(struct aiocb *cb)
{
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
    return (long long)aio_return(cb);
}

static long long aio_wait64(struct aiocb64 *cb)
{
    const struct aiocb64 *list[1] = {cb};
    while (aio_error64(cb) == EINPROGRESS)
        aio_suspend64(list, 1, NULL);
    return (long long)aio_return64(cb);
}

int main(int argc, char **argv)
{
    memset(buf, 'x', sizeof buf);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        char op[256], *a[4] = {"", "", "", ""};
        snprintf(op, sizeof op, "%s", argv[i]);
        char *save, *name = strtok_r(op, ":", &save);
        for (int k = 0; k < 4; k++) {
            char *t = strtok_r(NULL, ":", &save);
            if (!t)
                break;
            a[k] = t;
        }
        long n = atol(a[0]), m = atol(a[1]), o = atol(a[2]);
        long long ret = 0;
        struct stat st;
        struct stat64 st64;
        struct statx stx;
        struct iovec iov[64];
        errno = 0;
#define IS(s) (strcmp(name, s) == 0)
#define IOV(total, cnt)                                               \
        int cnt_ = (int)((cnt) > 0 && (cnt) <= 64 ? (cnt) : 1);       \
        for (int k = 0; k < cnt_; k++) {                              \
            iov[k].iov_base = buf + k * ((total) / cnt_);             \
            iov[k].iov_len = (size_t)((total) / cnt_);                \
        }
        /* open */
        if (IS("open")) ret = fd = open(a[0], parse_flags(a[1]), 0644);
        else if (IS("open64")) ret = fd = open64(a[0], parse_flags(a[1]), 0644);
        else if (IS("openat")) ret = fd = openat(AT_FDCWD, a[0], parse_flags(a[1]), 0644);
        else if (IS("openat64")) ret = fd = openat64(AT_FDCWD, a[0], parse_flags(a[1]), 0644);
        else if (IS("creat")) ret = fd = creat(a[0], 0644);
        else if (IS("creat64")) ret = fd = creat64(a[0], 0644);
        else if (IS("__open_2")) ret = fd = __open_2(a[0], parse_flags(a[1]));
        else if (IS("__open64_2")) ret = fd = __open64_2(a[0], parse_flags(a[1]));
        else if (IS("__openat_2")) ret = fd = __openat_2(AT_FDCWD, a[0], parse_flags(a[1]));
        else if (IS("__openat64_2")) ret = fd = __openat64_2(AT_FDCWD, a[0], parse_flags(a[1]));
        else if (IS("close")) ret = close(fd);
        else if (IS("close2")) ret = close(fd2);
        /* data */
        else if (IS("read")) ret = read(fd, buf, (size_t)n);
        else if (IS("__read_chk")) ret = __read_chk(fd, buf, (size_t)n, sizeof buf);
        else if (IS("write")) ret = write(fd, buf, (size_t)n);
        else if (IS("pread")) ret = pread(fd, buf, (size_t)n, m);
        else if (IS("pread64")) ret = pread64(fd, buf, (size_t)n, m);
        else if (IS("__pread_chk")) ret = __pread_chk(fd, buf, (size_t)n, m, sizeof buf);
        else if (IS("__pread64_chk")) ret = __pread64_chk(fd, buf, (size_t)n, m, sizeof buf);
        else if (IS("pwrite")) ret = pwrite(fd, buf, (size_t)n, m);
        else if (IS("pwrite64")) ret = pwrite64(fd, buf, (size_t)n, m);
        else if (IS("readv")) { IOV(n, m); ret = readv(fd, iov, cnt_); }
        else if (IS("writev")) { IOV(n, m); ret = writev(fd, iov, cnt_); }
        else if (IS("preadv")) { IOV(n, m); ret = preadv(fd, iov, cnt_, o); }
        else if (IS("preadv64")) { IOV(n, m); ret = preadv64(fd, iov, cnt_, o); }
        else if (IS("pwritev")) { IOV(n, m); ret = pwritev(fd, iov, cnt_, o); }
        else if (IS("pwritev64")) { IOV(n, m); ret = pwritev64(fd, iov, cnt_, o); }
        else if (IS("preadv2")) { IOV(n, m); ret = preadv2(fd, iov, cnt_, o, 0); }
        else if (IS("preadv64v2")) { IOV(n, m); ret = preadv64v2(fd, iov, cnt_, o, 0); }
        else if (IS("pwritev2")) { IOV(n, m); ret = pwritev2(fd, iov, cnt_, o, 0); }
        else if (IS("pwritev64v2")) { IOV(n, m); ret = pwritev64v2(fd, iov, cnt_, o, 0); }
        else if (IS("lseek")) ret = lseek(fd, n, whence(a[1]));
        else if (IS("lseek64")) ret = lseek64(fd, n, whence(a[1]));
        else if (IS("fsync")) ret = fsync(fd);
        else if (IS("fdatasync")) ret = fdatasync(fd);
        else if (IS("ftruncate")) ret = ftruncate(fd, n);
        else if (IS("ftruncate64")) ret = ftruncate64(fd, n);
        /* descriptors */
        else if (IS("dup")) ret = fd2 = dup(fd);
        else if (IS("dup2")) ret = fd2 = dup2(fd, (int)n);
        else if (IS("dup3")) ret = fd2 = dup3(fd, (int)n, O_CLOEXEC);
        else if (IS("fcntl")) ret = fd2 = fcntl(fd, F_DUPFD, (int)n);
        else if (IS("fcntl64")) ret = fd2 = fcntl64(fd, F_DUPFD_CLOEXEC, (int)n);
        else if (IS("fcntl_setfl_append")) ret = fcntl(fd, F_SETFL, O_APPEND);
        else if (IS("fcntl_setlk")) {
            struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
            ret = fcntl(fd, F_SETLK, &lk);
        }
        else if (IS("flock")) ret = flock(fd, LOCK_EX) ?: flock(fd, LOCK_UN);
        /* POSIX AIO: one request at offset 0 (lio_listio: two writes, at 0
         * and at n), waited for; the result is aio_return's (summed) */
        else if (IS("aio_write") || IS("aio_read") || IS("aio_fsync")) {
            struct aiocb cb = {.aio_fildes = fd, .aio_buf = buf, .aio_nbytes = (size_t)n};
            int rc = IS("aio_write") ? aio_write(&cb) : IS("aio_read") ? aio_read(&cb) : aio_fsync(O_SYNC, &cb);
            ret = rc ? -1 : aio_wait(&cb);
        }
        else if (IS("aio_write64") || IS("aio_read64") || IS("aio_fsync64")) {
            struct aiocb64 cb = {.aio_fildes = fd, .aio_buf = buf, .aio_nbytes = (size_t)n};
            int rc = IS("aio_write64") ? aio_write64(&cb) : IS("aio_read64") ? aio_read64(&cb) : aio_fsync64(O_SYNC, &cb);
            ret = rc ? -1 : aio_wait64(&cb);
        }
        else if (IS("lio_listio")) {
            struct aiocb first = {.aio_fildes = fd, .aio_buf = buf, .aio_nbytes = (size_t)n, .aio_lio_opcode = LIO_WRITE};
            struct aiocb second = first;
            second.aio_offset = n;
            struct aiocb *list[2] = {&first, &second};
            ret = lio_listio(LIO_WAIT, list, 2, NULL) ? -1 : (long long)aio_return(&first) + (long long)aio_return(&second);
        }
        else if (IS("lio_listio64")) {
            struct aiocb64 first = {.aio_fildes = fd, .aio_buf = buf, .aio_nbytes = (size_t)n, .aio_lio_opcode = LIO_WRITE};
            struct aiocb64 second = first;
            second.aio_offset = n;
            struct aiocb64 *list[2] = {&first, &second};
            ret = lio_listio64(LIO_WAIT, list, 2, NULL) ? -1 : (long long)aio_return64(&first) + (long long)aio_return64(&second);
        }
        else if (IS("flock_ex")) ret = flock(fd, LOCK_EX);
        else if (IS("flock_un")) ret = flock(fd, LOCK_UN);
        else if (IS("fcntl_unlk")) {
            struct flock lk = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
            ret = fcntl(fd, F_SETLK, &lk);
        }
        /* take, test and release a lock over the whole file */
        else if (IS("lockf")) ret = lockf(fd, F_LOCK, 0) ?: lockf(fd, F_TEST, 0) ?: lockf(fd, F_ULOCK, 0);
        else if (IS("lockf64")) ret = lockf64(fd, F_TLOCK, 0) ?: lockf64(fd, F_ULOCK, 0);
        else if (IS("mmap") || IS("mmap64")) {
            /* map n bytes, return the sum of their values, unmap */
            unsigned char *p = IS("mmap") ? mmap(NULL, (size_t)n, PROT_READ, MAP_SHARED, fd, 0)
                                          : mmap64(NULL, (size_t)n, PROT_READ, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) ret = -1;
            else {
                for (long k = 0; k < n; k++) ret += p[k];
                munmap(p, (size_t)n);
            }
        }
        else if (IS("swap")) { int t = fd; fd = fd2; fd2 = t; }
        /* metadata */
        else if (IS("stat")) ret = stat(a[0], &st);
        else if (IS("stat64")) ret = stat64(a[0], &st64);
        else if (IS("lstat")) ret = lstat(a[0], &st);
        else if (IS("lstat64")) ret = lstat64(a[0], &st64);
        else if (IS("fstat")) ret = fstat(fd, &st) ?: st.st_size;
        else if (IS("fstat_mode")) ret = fstat(fd, &st) ?: (long long)st.st_mode;
        else if (IS("fstat64")) ret = fstat64(fd, &st64) ?: st64.st_size;
        else if (IS("fstatat")) ret = fstatat(AT_FDCWD, a[0], &st, 0);
        else if (IS("fstatat64")) ret = fstatat64(AT_FDCWD, a[0], &st64, 0);
        else if (IS("fstatat_empty")) ret = fstatat(fd, "", &st, AT_EMPTY_PATH) ?: st.st_size;
        else if (IS("statx")) ret = statx(AT_FDCWD, a[0], 0, STATX_SIZE, &stx);
        else if (IS("statx_empty")) ret = statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &stx) ?: (long long)stx.stx_size;
        else if (IS("__xstat")) ret = __xstat(1, a[0], &st);
        else if (IS("__xstat64")) ret = __xstat64(1, a[0], &st64);
        else if (IS("__lxstat")) ret = __lxstat(1, a[0], &st);
        else if (IS("__lxstat64")) ret = __lxstat64(1, a[0], &st64);
        else if (IS("__fxstat")) ret = __fxstat(1, fd, &st) ?: st.st_size;
        else if (IS("__fxstat64")) ret = __fxstat64(1, fd, &st64) ?: st64.st_size;
        else if (IS("__fxstatat")) ret = __fxstatat(1, AT_FDCWD, a[0], &st, 0);
        else if (IS("__fxstatat64")) ret = __fxstatat64(1, AT_FDCWD, a[0], &st64, 0);
        else if (IS("access")) ret = access(a[0], F_OK);
        else if (IS("faccessat")) ret = faccessat(AT_FDCWD, a[0], F_OK, 0);
        else if (IS("euidaccess")) ret = euidaccess(a[0], R_OK);
        else if (IS("eaccess")) ret = eaccess(a[0], R_OK);
        else if (IS("unlink")) ret = unlink(a[0]);
        else if (IS("unlinkat")) ret = unlinkat(AT_FDCWD, a[0], 0);
        else if (IS("unlinkat_dir")) ret = unlinkat(AT_FDCWD, a[0], AT_REMOVEDIR);
        else if (IS("rename")) ret = rename(a[0], a[1]);
        else if (IS("renameat")) ret = renameat(AT_FDCWD, a[0], AT_FDCWD, a[1]);
        else if (IS("renameat2")) ret = renameat2(AT_FDCWD, a[0], AT_FDCWD, a[1], 0);
        else if (IS("mkdir")) ret = mkdir(a[0], 0755);
        else if (IS("mkdirat")) ret = mkdirat(AT_FDCWD, a[0], 0755);
        else if (IS("rmdir")) ret = rmdir(a[0]);
        else if (IS("truncate")) ret = truncate(a[0], m);
        else if (IS("truncate64")) ret = truncate64(a[0], m);
        /* stdio */
        else if (IS("fopen")) ret = (fp = fopen(a[0], a[1])) != NULL;
        else if (IS("fopen64")) ret = (fp = fopen64(a[0], a[1])) != NULL;
        else if (IS("fdopen")) ret = (fp = fdopen(fd, a[0])) != NULL;
        else if (IS("freopen")) ret = (fp = freopen(a[0], a[1], fp)) != NULL;
        else if (IS("freopen64")) ret = (fp = freopen64(a[0], a[1], fp)) != NULL;
        else if (IS("fclose")) ret = fclose(fp);
        else if (IS("fread")) ret = (long long)fread(buf, 1, (size_t)n, fp);
        else if (IS("fread_unlocked")) ret = (long long)fread_unlocked(buf, 1, (size_t)n, fp);
        else if (IS("__fread_chk")) ret = (long long)__fread_chk(buf, sizeof buf, 1, (size_t)n, fp);
        else if (IS("__fread_unlocked_chk")) ret = (long long)__fread_unlocked_chk(buf, sizeof buf, 1, (size_t)n, fp);
        else if (IS("fwrite")) ret = (long long)fwrite(buf, 1, (size_t)n, fp);
        else if (IS("fwrite_unlocked")) ret = (long long)fwrite_unlocked(buf, 1, (size_t)n, fp);
        else if (IS("fgets")) ret = fgets(sbuf, (int)n, fp) ? (long long)strlen(sbuf) : -1;
        else if (IS("fgets_unlocked")) ret = fgets_unlocked(sbuf, (int)n, fp) ? (long long)strlen(sbuf) : -1;
        else if (IS("__fgets_chk")) ret = __fgets_chk(sbuf, sizeof sbuf, (int)n, fp) ? (long long)strlen(sbuf) : -1;
        else if (IS("__fgets_unlocked_chk")) ret = __fgets_unlocked_chk(sbuf, sizeof sbuf, (int)n, fp) ? (long long)strlen(sbuf) : -1;
        else if (IS("fputs")) ret = fputs(a[0], fp);
        else if (IS("fputs_unlocked")) ret = fputs_unlocked(a[0], fp);
        else if (IS("fputc")) ret = fputc('y', fp);
        else if (IS("putc")) ret = putc('y', fp);
        else if (IS("_IO_putc")) ret = _IO_putc('y', fp);
        else if (IS("fgetc")) ret = fgetc(fp);
        else if (IS("getc")) ret = getc(fp);
        else if (IS("_IO_getc")) ret = _IO_getc(fp);
        else if (IS("fprintf")) ret = fprintf(fp, "%s\n", a[0]);
        else if (IS("vfprintf")) ret = vfp(vfprintf, fp, "%s\n", a[0]);
        else if (IS("__fprintf_chk")) ret = __fprintf_chk(fp, 1, "%s\n", a[0]);
        else if (IS("__vfprintf_chk")) ret = vfp_chk(fp, "%s\n", a[0]);
        else if (IS("fscanf")) { int v = 0; ret = fscanf(fp, "%d", &v); }
        else if (IS("vfscanf")) { int v = 0; ret = vfs(vfscanf, fp, "%d", &v); }
        else if (IS("__isoc99_fscanf")) { int v = 0; ret = __isoc99_fscanf(fp, "%d", &v); }
        else if (IS("__isoc99_vfscanf")) { int v = 0; ret = vfs(__isoc99_vfscanf, fp, "%d", &v); }
        else if (IS("fseek")) ret = fseek(fp, n, whence(a[1]));
        else if (IS("fseeko")) ret = fseeko(fp, n, whence(a[1]));
        else if (IS("fseeko64")) ret = fseeko64(fp, n, whence(a[1]));
        else if (IS("ftell")) ret = ftell(fp);
        else if (IS("ftello")) ret = ftello(fp);
        else if (IS("ftello64")) ret = ftello64(fp);
        else if (IS("rewind")) rewind(fp);
        else if (IS("fflush")) ret = fflush(fp);
        else if (fdlife_op(name, a[0], &ret)) ;
        else if (meta_op(name, a[0], atol(a[1]), &ret)) ;
        else {
            fprintf(stderr, "sluice-io: unknown operation '%s'\n", name);
            return 2;
        }
        report(name, ret, (int)ret < 0 || (ret == 0 && errno) ? errno : 0);
    }
    return 0;
}
