/*
 * The bottom tier: every operation is the real system call on f->fd. When
 * other tiers sit above it, it counts the fs side of what reaches the file
 * system (in pass-through alone the core counts both sides at once).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/counters.h"
#include "core/file.h"
#include "core/pathcall.h"
#include "core/policy.h"
#include "core/stack.h"
#include "layout/layout.h"
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
    int created = 0;
    uint64_t t0;
    int fd;

    /* a new file on CephFS or Lustre: created with its layout first */
    if ((flags & O_CREAT) && f->rec && sluice_layout_active())
        flags = sluice_layout_create(dirfd, path, f->rec->path, flags, mode, sluice_policy_mode(f->rec->path),
                                     f->rec, &created);
    t0 = fs_now(f);
    fd = SLUICE_REAL(openat)(dirfd, path, flags, mode);
    if (fd < 0) {
        int err = errno;
        sluice_layout_undo(dirfd, path, created);
        if (fs_side_separate(f))
            sluice_count_error(f->rec, SLUICE_SIDES_FS);   /* the file system answered it */
        return -err;
    }
    if (fs_side_separate(f)) {
        sluice_count_open(f->rec, SLUICE_SIDES_FS, t0, sluice_now());
        sluice_count_open_flags(f->rec, SLUICE_SIDES_FS, flags);
    }
    sluice_layout_observe(f->rec, fd);
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

/* ---- metadata of an open file ---- */

static int passthru_fchmod(struct sluice_file *f, int level, mode_t mode)
{
    uint64_t t0 = fs_now(f);
    return passthru_meta_done(f, SLUICE_REAL(fchmod)(f->fd, mode), POSIX_CHMODS, 0, t0);
}

static int passthru_fchown(struct sluice_file *f, int level, uid_t uid, gid_t gid)
{
    uint64_t t0 = fs_now(f);
    return passthru_meta_done(f, SLUICE_REAL(fchown)(f->fd, uid, gid), POSIX_CHOWNS, 0, t0);
}

static int passthru_futimens(struct sluice_file *f, int level, const struct timespec times[2])
{
    uint64_t t0 = fs_now(f);
    return passthru_meta_done(f, SLUICE_REAL(futimens)(f->fd, times), POSIX_UTIMES, 0, t0);
}

static int passthru_fallocate(struct sluice_file *f, int level, int mode, off_t off, off_t len)
{
    uint64_t t0 = fs_now(f);
    int rc;

    if (mode == SLUICE_POSIX_FALLOCATE) {   /* returns the error number itself */
        int err = SLUICE_REAL(posix_fallocate)(f->fd, off, len);
        if (err)
            errno = err;
        rc = err ? -1 : 0;
    } else {
        rc = SLUICE_REAL(fallocate)(f->fd, mode, off, len);
    }
    return passthru_meta_done(f, rc, POSIX_FALLOCATES, 0, t0);
}

static ssize_t xattr_call(int fd, const char *path, int nofollow, const struct sluice_xattr *x)
{
    switch (x->op) {
    case SLUICE_XATTR_GET:
        return fd >= 0 ? SLUICE_REAL(fgetxattr)(fd, x->name, x->value, x->size)
               : nofollow ? SLUICE_REAL(lgetxattr)(path, x->name, x->value, x->size)
                          : SLUICE_REAL(getxattr)(path, x->name, x->value, x->size);
    case SLUICE_XATTR_SET:
        return fd >= 0 ? SLUICE_REAL(fsetxattr)(fd, x->name, x->value, x->size, x->flags)
               : nofollow ? SLUICE_REAL(lsetxattr)(path, x->name, x->value, x->size, x->flags)
                          : SLUICE_REAL(setxattr)(path, x->name, x->value, x->size, x->flags);
    case SLUICE_XATTR_LIST:
        return fd >= 0 ? SLUICE_REAL(flistxattr)(fd, x->value, x->size)
               : nofollow ? SLUICE_REAL(llistxattr)(path, x->value, x->size)
                          : SLUICE_REAL(listxattr)(path, x->value, x->size);
    case SLUICE_XATTR_REMOVE:
        return fd >= 0 ? SLUICE_REAL(fremovexattr)(fd, x->name)
               : nofollow ? SLUICE_REAL(lremovexattr)(path, x->name)
                          : SLUICE_REAL(removexattr)(path, x->name);
    }
    errno = EINVAL;
    return -1;
}

static int xattr_counter(const struct sluice_xattr *x)
{
    return x->op == SLUICE_XATTR_GET || x->op == SLUICE_XATTR_LIST ? POSIX_XATTR_READS : POSIX_XATTR_WRITES;
}

static ssize_t passthru_fxattr(struct sluice_file *f, int level, const struct sluice_xattr *x)
{
    uint64_t t0 = fs_now(f);
    ssize_t rc = xattr_call(f->fd, NULL, 0, x);
    int r = passthru_meta_done(f, rc < 0 ? -1 : 0, xattr_counter(x), 0, t0);
    return r < 0 ? r : rc;
}

/* ---- paths: the *at() call, the fs side counted where the core asks ---- */

static int path_done(const struct sluice_path *p, int rc, int counter, uint64_t t0)
{
    if (rc < 0) {
        rc = -errno;
        if (p->fs_rec)
            sluice_count_error(p->fs_rec, SLUICE_SIDES_FS);
    } else if (p->fs_rec) {
        sluice_count_meta(p->fs_rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
    }
    return rc;
}

static uint64_t path_now(const struct sluice_path *p)
{
    return p->fs_rec ? sluice_now() : 0;
}

typedef const struct sluice_stack cstack;
typedef const struct sluice_path cpath;

static int passthru_path_stat(cstack *s, int level, cpath *p, struct stat *st, int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(fstatat)(p->dirfd, p->path, st, flags), POSIX_STATS, t0);
}

static int passthru_path_statx(cstack *s, int level, cpath *p, int flags, unsigned mask, struct statx *stx)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(statx)(p->dirfd, p->path, flags, mask, stx), POSIX_STATS, t0);
}

static int passthru_path_access(cstack *s, int level, cpath *p, int mode, int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(faccessat)(p->dirfd, p->path, mode, flags), POSIX_STATS, t0);
}

static int passthru_path_mkdir(cstack *s, int level, cpath *p, mode_t mode)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(mkdirat)(p->dirfd, p->path, mode), POSIX_MKDIRS, t0);
}

static int passthru_path_unlink(cstack *s, int level, cpath *p, int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(unlinkat)(p->dirfd, p->path, flags),
                     (flags & AT_REMOVEDIR) ? POSIX_RMDIRS : POSIX_UNLINKS, t0);
}

static int passthru_path_rename(cstack *s, int level, cpath *from, cpath *to, unsigned flags)
{
    uint64_t t0 = path_now(from);
    int rc = flags ? SLUICE_REAL(renameat2)(from->dirfd, from->path, to->dirfd, to->path, flags)
                   : SLUICE_REAL(renameat)(from->dirfd, from->path, to->dirfd, to->path);
    if (rc == 0 && from->fs_rec)
        sluice_count_rename_target(to->dirfd, to->path, SLUICE_SIDES_FS);
    return path_done(from, rc, POSIX_RENAMES, t0);
}

static int passthru_path_link(cstack *s, int level, cpath *from, cpath *to, int flags)
{
    uint64_t t0 = path_now(to);
    return path_done(to, SLUICE_REAL(linkat)(from->dirfd, from->path, to->dirfd, to->path, flags), POSIX_LINKS, t0);
}

static int passthru_path_symlink(cstack *s, int level, const char *target, cpath *p)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(symlinkat)(target, p->dirfd, p->path), POSIX_LINKS, t0);
}

static int passthru_path_truncate(cstack *s, int level, cpath *p, off_t len)
{
    uint64_t t0 = path_now(p);
    int rc;

    if (p->dirfd == AT_FDCWD || p->path[0] == '/') {
        rc = SLUICE_REAL(truncate)(p->path, len);
    } else {   /* (no truncateat: open relative to the directory) */
        int fd = SLUICE_REAL(openat)(p->dirfd, p->path, O_WRONLY | O_CLOEXEC, 0);
        rc = fd < 0 ? -1 : SLUICE_REAL(ftruncate)(fd, len);
        if (fd >= 0) {
            int saved = errno;
            SLUICE_REAL(close)(fd);
            errno = saved;
        }
    }
    return path_done(p, rc, POSIX_TRUNCATES, t0);
}

static int passthru_path_chmod(cstack *s, int level, cpath *p, mode_t mode, int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(fchmodat)(p->dirfd, p->path, mode, flags), POSIX_CHMODS, t0);
}

static int passthru_path_chown(cstack *s, int level, cpath *p, uid_t uid, gid_t gid, int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(fchownat)(p->dirfd, p->path, uid, gid, flags), POSIX_CHOWNS, t0);
}

static int passthru_path_utimens(cstack *s, int level, cpath *p, const struct timespec times[2], int flags)
{
    uint64_t t0 = path_now(p);
    return path_done(p, SLUICE_REAL(utimensat)(p->dirfd, p->path, times, flags), POSIX_UTIMES, t0);
}

static ssize_t passthru_path_xattr(cstack *s, int level, cpath *p, const struct sluice_xattr *x)
{
    uint64_t t0 = path_now(p);
    ssize_t rc = xattr_call(-1, p->path, x->nofollow, x);
    int r = path_done(p, rc < 0 ? -1 : 0, xattr_counter(x), t0);
    return r < 0 ? r : rc;
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
    .fchmod = passthru_fchmod,
    .fchown = passthru_fchown,
    .futimens = passthru_futimens,
    .fallocate = passthru_fallocate,
    .fxattr = passthru_fxattr,
    .path_stat = passthru_path_stat,
    .path_statx = passthru_path_statx,
    .path_access = passthru_path_access,
    .path_mkdir = passthru_path_mkdir,
    .path_unlink = passthru_path_unlink,
    .path_rename = passthru_path_rename,
    .path_link = passthru_path_link,
    .path_symlink = passthru_path_symlink,
    .path_truncate = passthru_path_truncate,
    .path_chmod = passthru_path_chmod,
    .path_chown = passthru_path_chown,
    .path_utimens = passthru_path_utimens,
    .path_xattr = passthru_path_xattr,
};
