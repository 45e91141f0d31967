/*
 * The table of real functions: for every symbol in wrappers.def, a pointer
 * to the next definition (normally glibc's), resolved eagerly by
 * sluice_real_init() from the library constructor. A wrapper that runs before
 * the constructor (another library's constructor calling open, say) resolves
 * its own slot lazily with dlsym(RTLD_NEXT): we do not wrap malloc, so dlsym
 * cannot recurse into us.
 */
#ifndef SLUICE_INTERPOSE_REAL_H
#define SLUICE_INTERPOSE_REAL_H

#include <aio.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <utime.h>
#include <unistd.h>

/* Old stat ABI, no longer declared by glibc 2.33+ headers but still called
 * by binaries built against older glibc (the h5py and netCDF4 wheels). */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp);
size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp);
char *__fgets_chk(char *s, size_t size, int n, FILE *fp);
char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *fp);
int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...);
int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap);
int __printf_chk(int flag, const char *fmt, ...);
int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __isoc99_fscanf(FILE *fp, const char *fmt, ...);
int __isoc99_vfscanf(FILE *fp, const char *fmt, va_list ap);
int _IO_putc(int c, FILE *fp);
int _IO_getc(FILE *fp);
int fcntl64(int fd, int cmd, ...);

enum sluice_real_id {
#define SLUICE_WRAP(ret, name, params, group) SLUICE_REAL_ID_##name,
#include "sys/wrappers.def"
#undef SLUICE_WRAP
    SLUICE_REAL_COUNT
};

struct sluice_real {
#define SLUICE_WRAP(ret, name, params, group) ret (*name) params;
#include "sys/wrappers.def"
#undef SLUICE_WRAP
};

extern struct sluice_real sluice__real;   /* cross-file: wrappers and tiers */
extern const char *const sluice_real_names[SLUICE_REAL_COUNT];

/* Resolve every slot now. Called once from the constructor. */
void sluice_real_init(void);

/* Resolve one slot (lazy path); returns the pointer or NULL. */
void *sluice_real_resolve(enum sluice_real_id id);

/* The real function `name`, resolved on first use if the constructor has not
 * run yet. */
#define SLUICE_REAL(name)                                                           \
    (__builtin_expect(sluice__real.name != NULL, 1)                                 \
         ? sluice__real.name                                                        \
         : (__typeof__(sluice__real.name))sluice_real_resolve(SLUICE_REAL_ID_##name))

#endif
