/*
 * badptr DIR: every path call wrapped by sluice, given a NULL path and a
 * pointer to an unmapped page; prints "NAME ret errno" per call. The kernel
 * answers EFAULT; under sluice the output must be identical (and the
 * process must not crash).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

static void show(const char *name, const char *which, long ret)
{
    printf("%s(%s) %ld %d\n", name, which, ret, ret < 0 ? errno : 0);
}

#define T(name, call) do { errno = 0; long r_ = (long)(call); show(name, which, r_); } while (0)
#define TP(name, call) do { errno = 0; long r_ = (call) ? 0 : -1; show(name, which, r_); } while (0)

int main(int argc, char **argv)
{
    struct stat st;
    struct stat64 st64;
    struct statx stx;
    const char *ok = argc > 1 ? argv[1] : ".";
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page, 4096);
    const char *bad[2] = {NULL, (const char *)page};
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (chdir(ok) != 0)
        return 2;
    for (int i = 0; i < 2; i++) {
        const char *p = bad[i], *which = i ? "unmapped" : "NULL";
        T("open", open(p, O_RDONLY));
        T("open64", open64(p, O_RDONLY));
        T("openat", openat(AT_FDCWD, p, O_RDONLY));
        T("openat64", openat64(AT_FDCWD, p, O_RDONLY));
        T("creat", creat(p, 0644));
        T("creat64", creat64(p, 0644));
        T("__open_2", __open_2(p, O_RDONLY));
        T("__open64_2", __open64_2(p, O_RDONLY));
        T("__openat_2", __openat_2(AT_FDCWD, p, O_RDONLY));
        T("__openat64_2", __openat64_2(AT_FDCWD, p, O_RDONLY));
        T("stat", stat(p, &st));
        T("stat64", stat64(p, &st64));
        T("lstat", lstat(p, &st));
        T("lstat64", lstat64(p, &st64));
        T("fstatat", fstatat(AT_FDCWD, p, &st, 0));
        T("fstatat64", fstatat64(AT_FDCWD, p, &st64, 0));
        T("statx", statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &stx));
        T("__xstat", __xstat(1, p, &st));
        T("__xstat64", __xstat64(1, p, &st64));
        T("__lxstat", __lxstat(1, p, &st));
        T("__lxstat64", __lxstat64(1, p, &st64));
        T("__fxstatat", __fxstatat(1, AT_FDCWD, p, &st, 0));
        T("__fxstatat64", __fxstatat64(1, AT_FDCWD, p, &st64, 0));
        T("access", access(p, F_OK));
        T("faccessat", faccessat(AT_FDCWD, p, F_OK, 0));
        T("unlink", unlink(p));
        T("unlinkat", unlinkat(AT_FDCWD, p, 0));
        T("rename-from", rename(p, "x"));
        T("rename-to", rename(ok, p));
        T("renameat", renameat(AT_FDCWD, p, AT_FDCWD, "x"));
        T("renameat2", renameat2(AT_FDCWD, p, AT_FDCWD, "x", 0));
        T("mkdir", mkdir(p, 0755));
        T("mkdirat", mkdirat(AT_FDCWD, p, 0755));
        T("rmdir", rmdir(p));
        T("truncate", truncate(p, 0));
        T("truncate64", truncate64(p, 0));
        TP("fopen", fopen(p, "r"));
        TP("fopen64", fopen64(p, "r"));
        /* (opendir crashes inside the C library itself; freopen(NULL, ...)
         * means "the same file") */
        if (i == 1) {   /* (not "if (p)": p was passed as nonnull above) */
            FILE *f = fopen("reopen-me", "w");
            TP("freopen", freopen(p, "r", f));
        }
    }
    return 0;
}
