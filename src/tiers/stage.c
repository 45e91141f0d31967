/*
 * The stage tier (`--mode stage`): files the program creates or truncates
 * are written to a private node-local directory and published to the
 * shared file system by background drainers, atomically, once closed and
 * left alone for the stage delay (docs/stage.md).
 *
 * A staged file's descriptor is the data file's own descriptor: reads,
 * writes, seeks and sizes run at the tier's speed with the kernel's own
 * semantics. What reaches the shared file system (the existence checks,
 * the publish) is counted on the fs side of the file's record.
 *
 * This file is the tier's table of operations and its descriptor calls;
 * the rest is in src/stage/ (stage_state.h lists the files and their jobs).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "core/autolarge.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/stack.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/stage_state.h"
#include "stage/tierdir.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* The modes whose stacks hold this tier (core/modes.def): stage, and auto,
 * which stages the files it creates. */
static int mode_stages(const char *mode)
{
    return strcmp(mode, "stage") == 0 || strcmp(mode, "auto") == 0;
}

static int stage_init(void)
{
    char why[512];
    int root;

    /* Every process loads the stage stack; only one that may stage touches
     * the tier. */
    if (!mode_stages(sluice_cfg.mode) && !strstr(sluice_cfg.policy, "=stage") && !strstr(sluice_cfg.policy, "=auto"))
        return 0;
    if (sluice_cfg.tier[0])
        snprintf(stage_st.tier, sizeof stage_st.tier, "%s", sluice_cfg.tier);
    else
        tierdir_default(stage_st.tier, sizeof stage_st.tier);
    if (tierdir_open(stage_st.tier, &root, &stage_st.ddir, &stage_st.jdir, &stage_st.ldir, &stage_st.ndir, why,
                     sizeof why) != 0) {
        sluice_diag("stage mode: %s; files are written straight to the shared file system", why);
        return 0;   /* the tier stays in the stack and passes everything through */
    }
    SLUICE_REAL(close)(root);
    stage_st.ddir = sluice_privfd_keep(stage_st.ddir);
    stage_st.jdir = sluice_privfd_keep(stage_st.jdir);
    stage_st.ldir = sluice_privfd_keep(stage_st.ldir);
    stage_st.ndir = sluice_privfd_keep(stage_st.ndir);
    stage_st.ownerfd = -1;
    if (gethostname(stage_st.host, sizeof stage_st.host - 1) != 0)
        strcpy(stage_st.host, "host");
    for (char *p = stage_st.host; *p; p++)
        if (*p == '/' || *p == '.')
            *p = '_';
    /* IDs stay unique across an exec that keeps the process id: the counter
     * starts from the clock. */
    stage_st.seq = (unsigned long)(journal_now_ns() / 1000 % 1000000000000LL);
    stage_st.dirs = (struct tier_dirs){stage_st.ddir, stage_st.jdir, stage_st.ldir, stage_st.ndir};
    stage_st.job = stage_job_drainer_running(sluice_cfg.stage_job);
    stage_st.usable = 1;
    return 0;
}

/* A path that reaches a staged file through symbolic links on the shared
 * file system (where the link dangles until it is published) opens the
 * staged file, as plain would open the file the link names. Not for a
 * create: that stats the name first and stages what does not exist. */
static int stage_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode)
{
    char real[PATH_MAX];
    int fd = stage_open_abs(f, level, dirfd, path, flags, mode, f->rec->path);

    if (fd == -ENOENT && !(flags & (O_CREAT | O_NOFOLLOW)) && f->rec->path[0] == '/' &&
        stage_staged_through_links(f->rec->path, 1, real, sizeof real))
        fd = stage_open_abs(f, level, AT_FDCWD, real, flags, mode, real);
    return fd;
}

static ssize_t sys(ssize_t rc)
{
    return rc < 0 ? -errno : rc;
}

/* A transfer at the current position that the stage tier made itself on a
 * staged file: when a tier below keeps the position (auto: buffer under
 * stage), it moves with the kernel's, which the counters and a later move
 * to the shared file system read. Returns rc. */
static ssize_t staged_moved(struct sluice_file *f, off_t off, ssize_t rc)
{
    if (rc > 0 && off < 0 && f->owns_pos) {
        if (f->flags & O_APPEND) {
            off_t now = SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR);
            if (now >= 0)
                atomic_store(&f->pos, (int64_t)now);
        } else {
            atomic_fetch_add(&f->pos, (int64_t)rc);
        }
    }
    return rc;
}

/* The descriptor is a data file on the tier: this process's staged file,
 * or one another process staged (or handed to the job) that it opened by
 * name. Its transfers are the tier's, not the shared file system's. */
static int on_tier(const struct stage_desc *d)
{
    return d->s || d->foreign;
}

static ssize_t stage_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off)
{
    if (!on_tier(stage_desc_of(f, level)))
        return sluice_tier_read(f, level + 1, buf, n, off);
    return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(read)(f->fd, buf, n) : SLUICE_REAL(pread)(f->fd, buf, n, off)));
}

/* --mode auto at a staged file's first write (and --mode stage, under a
 * SLUICE_DIRECT_FROM prefix): a write the shared file system takes at full
 * speed (SLUICE_DIRECT_FROM's size under its prefix, where calibrate
 * measured it; elsewhere, auto's SLUICE_AUTO_LARGE and up) gains nothing from
 * the tier, which would write the bytes twice and hold them in node memory
 * until then. The file, empty still, goes to the shared file system now
 * and straight through from then on. Only a file this
 * description alone has open: no other description, no forked child, no
 * other process writing it through the tier (stage_move_to_shared checks
 * that). 1 when it went. */
static int auto_goes_direct(struct sluice_file *f, struct stage_desc *d, size_t n)
{
    struct staged *s = d->s;

    if ((f->mode != SLUICE_MODE_AUTO && f->mode != SLUICE_MODE_STAGE) || __atomic_load_n(&s->wrote, __ATOMIC_RELAXED))
        return 0;
    if (f->mode == SLUICE_MODE_STAGE && !sluice_cfg.direct_from[0])
        return 0;   /* (stage without --direct-from: every write stays on the tier, at no cost to look up) */
    int64_t large = sluice_auto_large(f->rec ? f->rec->path : "", f->mode == SLUICE_MODE_AUTO);
    if (large <= 0)
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    int first = !s->wrote;
    __atomic_store_n(&s->wrote, 1, __ATOMIC_RELAXED);
    /* (a file created without write permission for its owner could not be
     * opened again for writing on the shared file system: it stays) */
    int sole = first && s->opens == 1 && !s->forked && (s->e.mode & S_IWUSR);
    pthread_mutex_unlock(&stage_st.lock);
    if (!sole || n < (size_t)large)
        return 0;
    struct stat sb;
    if (SLUICE_REAL(fstat)(f->fd, &sb) != 0 || sb.st_size != 0)
        return 0;   /* sized by a truncate first: its holes stay on the tier, not copied as zeros */
    return stage_move_to_shared(f, d, POSIX_AUTO_DIRECT) == 0;   /* (not while another process writes it) */
}

/* The same at the first write of another process's staged file that this
 * process opened by name, handed to the job and still empty (N-1: a parent
 * made the checkpoint, its children write their parts): only while no
 * other process writes it through the tier (stage_foreign_move_at_first_write). */
static int foreign_goes_direct(struct sluice_file *f, struct stage_desc *d, size_t n)
{
    if ((f->mode != SLUICE_MODE_AUTO && f->mode != SLUICE_MODE_STAGE) ||
        __atomic_exchange_n(&d->foreign_wrote, 1, __ATOMIC_RELAXED))
        return 0;   /* (one decision, whichever thread writes first) */
    if (f->mode == SLUICE_MODE_STAGE && !sluice_cfg.direct_from[0])
        return 0;
    int64_t large = sluice_auto_large(f->rec ? f->rec->path : "", f->mode == SLUICE_MODE_AUTO);
    if (large <= 0 || n < (size_t)large || !(d->foreign_mode & S_IWUSR))
        return 0;
    return stage_foreign_move_at_first_write(f, d) == 0;
}

static ssize_t stage_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    struct stage_desc *d = stage_desc_of(f, level);
    ssize_t rc;

    if (!d->s && d->foreign && foreign_goes_direct(f, d, n))
        return sluice_tier_write(f, level + 1, buf, n, off);
    if (!d->s && d->foreign)
        return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, buf, n) : SLUICE_REAL(pwrite)(f->fd, buf, n, off)));
    if (!d->s || auto_goes_direct(f, d, n))
        return sluice_tier_write(f, level + 1, buf, n, off);
    rc = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, buf, n) : SLUICE_REAL(pwrite)(f->fd, buf, n, off)));
    if (rc > 0)
        stage_precopy_note_write(d->s, stage_written_at(f, off, rc));
    if (rc > 0 && (size_t)rc < n) {
        /* short: the tier filled up in the middle; the rest meets ENOSPC */
        size_t done = (size_t)rc;
        ssize_t more = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, (const char *)buf + done, n - done)
                                   : SLUICE_REAL(pwrite)(f->fd, (const char *)buf + done, n - done, off + (off_t)done)));
        if (more > 0)
            return (ssize_t)done + more;
        if ((more == -ENOSPC || more == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0) {
            more = sluice_tier_write(f, level + 1, (const char *)buf + done, n - done,
                                     off < 0 ? off : off + (off_t)done);
            return more > 0 ? (ssize_t)done + more : (ssize_t)done;
        }
        return rc;
    }
    if ((rc == -ENOSPC || rc == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0)
        return sluice_tier_write(f, level + 1, buf, n, off);
    return rc;
}

static ssize_t stage_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    if (!on_tier(stage_desc_of(f, level)))
        return sluice_tier_readv(f, level + 1, iov, cnt, off, flags);
    if (flags)
        return staged_moved(f, off, sys(SLUICE_REAL(preadv2)(f->fd, iov, cnt, off, flags)));
    return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(readv)(f->fd, iov, cnt) : SLUICE_REAL(preadv)(f->fd, iov, cnt, off)));
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    return total;
}

static ssize_t stage_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct stage_desc *d = stage_desc_of(f, level);
    ssize_t rc;

    if (!d->s && d->foreign && foreign_goes_direct(f, d, iov_total(iov, cnt)))
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    if (!d->s && d->foreign) {
        if (flags)
            return staged_moved(f, off, sys(SLUICE_REAL(pwritev2)(f->fd, iov, cnt, off, flags)));
        return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(writev)(f->fd, iov, cnt) : SLUICE_REAL(pwritev)(f->fd, iov, cnt, off)));
    }
    if (!d->s)
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    size_t total = iov_total(iov, cnt);
    if (auto_goes_direct(f, d, total))
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    if (flags)
        rc = staged_moved(f, off, sys(SLUICE_REAL(pwritev2)(f->fd, iov, cnt, off, flags)));
    else
        rc = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(writev)(f->fd, iov, cnt) : SLUICE_REAL(pwritev)(f->fd, iov, cnt, off)));
    if (rc > 0)
        stage_precopy_note_write(d->s, stage_written_at(f, off, rc));
    if ((rc == -ENOSPC || rc == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0)
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    if (rc > 0 && (size_t)rc < total && !flags) {
        /* cut short (the tier filled up): the rest piece by piece, as
         * write() finishes it (on the shared file system if need be) */
        size_t done = (size_t)rc, skip = done;
        for (int i = 0; i < cnt; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            size_t len = iov[i].iov_len - skip;
            ssize_t w = stage_write(f, level, (const char *)iov[i].iov_base + skip, len,
                                    off < 0 ? off : off + (off_t)done);
            skip = 0;
            if (w <= 0)
                break;
            done += (size_t)w;
            if ((size_t)w < len)
                break;
        }
        return (ssize_t)done;
    }
    return rc;
}

static off_t stage_lseek(struct sluice_file *f, int level, off_t off, int whence)
{
    if (!on_tier(stage_desc_of(f, level)))
        return sluice_tier_lseek(f, level + 1, off, whence);
    off_t rc = SLUICE_REAL(lseek)(f->fd, off, whence);
    if (rc >= 0 && f->owns_pos)
        atomic_store(&f->pos, (int64_t)rc);
    return rc < 0 ? -errno : rc;
}

static int stage_fsync(struct sluice_file *f, int level, int datasync)
{
    /* A staged file is durable as the tier is; it reaches the shared file
     * system when closed (docs/stage.md). */
    if (!on_tier(stage_desc_of(f, level)))
        return sluice_tier_fsync(f, level + 1, datasync);
    return (datasync ? SLUICE_REAL(fdatasync)(f->fd) : SLUICE_REAL(fsync)(f->fd)) < 0 ? -errno : 0;
}

static int stage_ftruncate(struct sluice_file *f, int level, off_t len)
{
    struct staged *s = stage_desc_of(f, level)->s;

    if (!on_tier(stage_desc_of(f, level)))
        return sluice_tier_ftruncate(f, level + 1, len);
    if (SLUICE_REAL(ftruncate)(f->fd, len) < 0)
        return -errno;
    if (s)
        stage_precopy_note_write(s, len);
    return 0;
}

/* fallocate of a staged file is the tier's; a mode the tier's file system
 * does not have (tmpfs: zero, collapse and insert range) moves the file to
 * the shared file system first (as mmap does), which then answers as
 * plain: with the change, or its own refusal. */
static int stage_fallocate(struct sluice_file *f, int level, int mode, off_t off, off_t len)
{
    struct stage_desc *d = stage_desc_of(f, level);
    int rc;

    if (!on_tier(d))
        return sluice_tier_fallocate(f, level + 1, mode, off, len);
    if (mode == SLUICE_POSIX_FALLOCATE)
        rc = -SLUICE_REAL(posix_fallocate)(f->fd, off, len);
    else
        rc = SLUICE_REAL(fallocate)(f->fd, mode, off, len) == 0 ? 0 : -errno;
    if (rc == -EOPNOTSUPP && stage_desc_move_to_shared(f, d) == 0)
        return sluice_tier_fallocate(f, level + 1, mode, off, len);
    if (rc == 0 && d->s)
        stage_precopy_note_write(d->s, off);
    return rc;
}

static int stage_fstat(struct sluice_file *f, int level, struct stat *sb)
{
    struct staged *s = stage_desc_of(f, level)->s;

    if (!s && stage_desc_of(f, level)->foreign) {
        if (SLUICE_REAL(fstat)(f->fd, sb) < 0)
            return -errno;
        sb->st_mode = (sb->st_mode & ~07777) | stage_desc_of(f, level)->foreign_mode;
        return 0;
    }
    if (!s)
        return sluice_tier_fstat(f, level + 1, sb);
    if (SLUICE_REAL(fstat)(f->fd, sb) < 0)
        return -errno;
    sb->st_mode = (sb->st_mode & ~07777) | s->e.mode;
    return 0;
}

static int stage_close(struct sluice_file *f, int level)
{
    struct stage_desc *d = stage_desc_of(f, level);
    struct staged *s = d->s;
    int rc;

    if (!s) {
        rc = sluice_tier_close(f, level + 1);
        if (d->users_fd >= 0) {
            sluice_privfd_close(d->users_fd);
            d->users_fd = -1;
            stage_foreign_takeover(d->foreign_id, f->rec->path, f->rec);
        }
        d->foreign = 0;
        return rc;
    }
    rc = sluice_privfd_close(f->fd);
    pthread_mutex_lock(&stage_st.lock);
    if (--s->opens == 0 && stage_st.job && s->pre_fd < 0 && !s->precopying) {
        stage_hand_over_locked(s);   /* (it asks whether the drainer still runs) */
    } else if (s->opens == 0) {
        /* (an early copy is ours to complete: handed over, it would be copied again) */
        s->own_publish = stage_st.job;
        s->e.state = JOURNAL_CLOSED;
        s->closed_ns = s->e.updated_ns = journal_now_ns();
        stage_entry_write_locked(s);
        stage_drainers_start_locked();
        pthread_cond_signal(&stage_st.work);
    }
    pthread_mutex_unlock(&stage_st.lock);
    d->s = NULL;
    return rc;
}

static int stage_control(struct sluice_file *f, int level, int op, void *arg)
{
    /* A staged file's descriptor is the kernel's own: locks and stdio work
     * on it as they are; but its bytes may now change without a write we
     * see, so an early copy is no longer trusted. */
    struct stage_desc *d = stage_desc_of(f, level);
    struct staged *s = d->s;
    if (op == SLUICE_CTL_NODE_LOCAL && (s || d->foreign))
        return 1;   /* f->fd is a data file on the tier */
    if (!s)
        return sluice_tier_control(f, level + 1, op, arg);
    if (op == SLUICE_CTL_EXEC) {
        /* The next image writes through the descriptor without us, after
         * the end's quiesce would have published the file as complete (a
         * shell's `cmd > file`): the file goes to the shared file system
         * now, and the descriptor with it. A file a forked parent staged is
         * the parent's to publish (its data file stays while it has it open). */
        if (s->e.pid != getpid() || stage_st.job)
            return 0;   /* (job mode: handed over at the end, the drainer waits for the new image) */
        return stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0 ? 1 : 0;
    }
    if (op == SLUICE_CTL_FALLBACK && (*(const unsigned *)arg & SLUICE_FALLBACK_MMAP)) {
        /* A mapping outlives the descriptor and its bytes change without a
         * write we see: the file moves to the shared file system before it
         * is mapped, and the mapping is of the real file. */
        return stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0 ? 0 : sluice_tier_control(f, level + 1, op, arg);
    }
    stage_precopy_note_write(s, 0);
    pthread_mutex_lock(&stage_st.lock);
    s->pre_done = INT64_MAX / 2;   /* and none is started */
    s->dirty_low = 0;
    pthread_mutex_unlock(&stage_st.lock);
    return 0;
}

/* futimens of an open staged file: the data file's times, carried at publish. */
static int stage_futimens(struct sluice_file *f, int level, const struct timespec times[2])
{
    struct staged *s = stage_desc_of(f, level)->s;
    int rc = sluice_tier_futimens(f, level + 1, times);

    if (rc == 0 && s) {
        pthread_mutex_lock(&stage_st.lock);
        s->e.keep_times = 1;
        pthread_mutex_unlock(&stage_st.lock);
    }
    return rc;
}

/* Owner and extended attributes (ACLs: cp -p, tar) of an open staged file
 * are the shared file system's to keep: the file moves there first (as
 * when the tier is full), then the call goes down. (While another process
 * writes the file through the tier it cannot move: the call fails with
 * EBUSY, where moving would lose that process's writes.) Times need no move: the
 * data file's times are published when the program set them. */
static int stage_fchown(struct sluice_file *f, int level, uid_t uid, gid_t gid)
{
    struct stage_desc *d = stage_desc_of(f, level);
    int rc = stage_desc_move_to_shared(f, d);
    return rc ? rc : sluice_tier_fchown(f, level + 1, uid, gid);
}

static ssize_t stage_fxattr(struct sluice_file *f, int level, const struct sluice_xattr *x)
{
    struct stage_desc *d = stage_desc_of(f, level);
    int moves = x->op == SLUICE_XATTR_SET || x->op == SLUICE_XATTR_REMOVE;
    int rc = moves ? stage_desc_move_to_shared(f, d) : 0;
    return rc ? rc : sluice_tier_fxattr(f, level + 1, x);
}

/* fchmod of a staged file: the mode it will be published with. */
static int stage_fchmod(struct sluice_file *f, int level, mode_t mode)
{
    struct staged *s = stage_desc_of(f, level)->s;
    if (!s)
        return sluice_tier_fchmod(f, level + 1, mode);
    pthread_mutex_lock(&stage_st.lock);
    s->e.mode = mode & 07777;
    s->e.updated_ns = journal_now_ns();
    stage_entry_write_locked(s);
    (void)names_update(stage_st.ndir, s->e.path, s->e.id, s->e.mode);
    pthread_mutex_unlock(&stage_st.lock);
    return 0;
}

const struct sluice_tier_ops sluice_tier_stage = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "stage",
    .caps = SLUICE_TIER_BUFFERS_WRITES | SLUICE_TIER_OPENS_STREAMS | SLUICE_TIER_NODE_PRIVATE,
    .file_state = sizeof(struct stage_desc),
    .init = stage_init,
    .open = stage_open,
    .read = stage_read,
    .write = stage_write,
    .readv = stage_readv,
    .writev = stage_writev,
    .lseek = stage_lseek,
    .fsync = stage_fsync,
    .ftruncate = stage_ftruncate,
    .fstat = stage_fstat,
    .close = stage_close,
    .control = stage_control,
    .fchmod = stage_fchmod,
    .fchown = stage_fchown,
    .futimens = stage_futimens,
    .fxattr = stage_fxattr,
    .fallocate = stage_fallocate,
    .path_stat = stage_tier_path_stat,
    .path_statx = stage_tier_path_statx,
    .path_access = stage_tier_path_access,
    .path_mkdir = stage_tier_path_mkdir,
    .path_unlink = stage_tier_path_unlink,
    .path_rename = stage_tier_path_rename,
    .path_truncate = stage_tier_path_truncate,
    .path_chmod = stage_tier_path_chmod,
    .path_link = stage_tier_path_link,
    .path_chown = stage_tier_path_chown,
    .path_utimens = stage_tier_path_utimens,
    .path_xattr = stage_tier_path_xattr,
    .path_list = stage_tier_path_list,
    .path_hides = stage_path_hides,
    .quiesce = stage_quiesce,
    .after_fork_child = stage_after_fork_child,
};
