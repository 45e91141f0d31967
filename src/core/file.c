/*
 * Open files and the descriptor table; see file.h.
 *
 * Counting: the core counts the app side of every call here, around the
 * whole tier stack. When the stack is the pass-through tier alone
 * (f->sides == both), the same numbers are the fs side and are counted in
 * the same locked update; otherwise the bottom tier counts the fs side.
 */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/pathnorm.h"
#include "common/statconv.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/trace.h"
#include "core/mounts.h"
#include "core/pathcall.h"
#include "core/policy.h"
#include "core/stack.h"
#include "layout/layout.h"
#include "sys/guard.h"
#include "sys/privfd.h"
#include "sys/userptr.h"
#include "sys/real.h"

uint64_t sluice_fork_gen;

static _Atomic(struct sluice_file *) *fd_table;
static int fd_table_size;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sluice_file *free_list;

int sluice_files_init(void)
{
    struct rlimit rl;
    size_t n = 65536;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max;
    if (n > (1u << 20))
        n = 1u << 20;
    /* Untouched pages cost nothing: only slots of descriptors in use are backed. */
    void *m = mmap(NULL, n * sizeof *fd_table, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    fd_table = m;
    fd_table_size = (int)n;
    return 0;
}

static struct sluice_file *file_alloc(void)
{
    struct sluice_file *f;

    pthread_mutex_lock(&free_lock);
    f = free_list;
    if (f)
        free_list = f->free_next;
    pthread_mutex_unlock(&free_lock);
    if (!f)
        f = sluice_arena_alloc(sizeof *f);
    if (f) {
        atomic_store(&f->refs, 1);
        atomic_store(&f->nfds, 0);
        f->free_next = NULL;
    }
    return f;
}

void sluice_file_put(struct sluice_file *f)
{
    if (atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    pthread_mutex_lock(&free_lock);
    f->free_next = free_list;
    free_list = f;
    pthread_mutex_unlock(&free_lock);
}

struct sluice_file *sluice_fd_get(int fd)
{
    struct sluice_file *f;

    if ((unsigned)fd >= (unsigned)fd_table_size)
        return NULL;
    f = atomic_load_explicit(&fd_table[fd], memory_order_acquire);
    if (!f)
        return NULL;
    atomic_fetch_add(&f->refs, 1);
    if (atomic_load_explicit(&fd_table[fd], memory_order_acquire) != f) {
        sluice_file_put(f);   /* closed under us */
        return NULL;
    }
    if (__builtin_expect(f->fd < 0, 0))
        f->fd = fd;   /* the tiers' descriptor was lost (fd_slot_stale): fd names the description */
    return f;
}

/* Take fd's slot away; returns what it held (with the slot's reference). */
static struct sluice_file *fd_take(int fd)
{
    if ((unsigned)fd >= (unsigned)fd_table_size)
        return NULL;
    return atomic_exchange(&fd_table[fd], NULL);
}

/* Highest descriptor ever installed: bounds the rare scans below. */
static atomic_int fd_high;

/* A slot that outlived its descriptor: the kernel closed `fd` without our
 * seeing it and gave the number to something else. If the tiers worked
 * through that number, they move to another descriptor still naming the
 * description (a dup), or to none: sluice never acts through a number it
 * does not own. */
static void fd_slot_stale(int fd, struct sluice_file *old)
{
    if (atomic_fetch_sub(&old->nfds, 1) > 1 && old->fd == fd) {
        int high = atomic_load(&fd_high);
        old->fd = -1;
        for (int i = 0; i <= high && i < fd_table_size; i++)
            if (i != fd && atomic_load_explicit(&fd_table[i], memory_order_acquire) == old) {
                old->fd = i;
                break;
            }
    } else if (old->fd == fd) {
        old->fd = -1;
    }
    sluice_file_put(old);
}

/* 0, 1 and 2 are stdin, stdout and stderr, the C library's streams that
 * no wrapper of ours sees: through them the description's position moves
 * behind the tiers' back (a shell's `{ echo a; cmd; } > file` writes with
 * stdout's buffer, then forks). From then on the kernel's position is the
 * description's: a tier that keeps the position moves the kernel's with
 * every transfer, so the stream's writes land after it as without sluice;
 * a tier that cannot goes straight through, as for fdopen. Not for a
 * direction the stream cannot use (a program without stdin opening a file
 * to write gets 0). */
static void fd_under_std_stream(int fd, struct sluice_file *f)
{
    int acc = f->flags & O_ACCMODE;
    int stream_can = fd == STDIN_FILENO ? acc != O_WRONLY : acc != O_RDONLY;

    if (fd <= STDERR_FILENO && stream_can && f->depth > 1 &&
        sluice_tier_control(f, 0, SLUICE_CTL_KERNEL_POSITION, NULL) == -ENOTTY) {
        unsigned reason = SLUICE_FALLBACK_SHARED;
        (void)sluice_tier_control(f, 0, SLUICE_CTL_FALLBACK, &reason);
    }
}

static void fd_install(int fd, struct sluice_file *f)
{
    struct sluice_file *old;

    atomic_fetch_add(&f->refs, 1);
    atomic_fetch_add(&f->nfds, 1);
    for (int high = atomic_load(&fd_high); fd > high && !atomic_compare_exchange_weak(&fd_high, &high, fd);)
        ;
    old = atomic_exchange(&fd_table[fd], f);
    if (old)
        fd_slot_stale(fd, old);   /* closed behind our back (a raw syscall) */
}

/* Descriptor numbers already looked at by sluice_fd_get_adopt and found
 * not to name a recorded file; a number the kernel hands out anew is
 * looked at again. */
#define ADOPT_FDS 65536
static _Atomic uint64_t adopt_checked[ADOPT_FDS / 64];

static void adopt_recheck(int fd)
{
    if ((unsigned)fd < ADOPT_FDS)
        atomic_fetch_and(&adopt_checked[fd / 64], ~(UINT64_C(1) << (fd % 64)));
}

void sluice_fd_forget(int fd)
{
    struct sluice_file *f = fd_take(fd);
    if (f)
        fd_slot_stale(fd, f);
    adopt_recheck(fd);
}

int64_t sluice_fd_position(int fd)
{
    char name[64], buf[256];
    int64_t pos = -1;
    ssize_t n;
    int pfd;

    snprintf(name, sizeof name, "/proc/self/fdinfo/%d", fd);
    if ((pfd = SLUICE_REAL(open)(name, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = SLUICE_REAL(read)(pfd, buf, sizeof buf - 1);
    SLUICE_REAL(close)(pfd);
    if (n > 4 && strncmp(buf, "pos:", 4) == 0) {
        buf[n] = '\0';
        pos = 0;
        for (const char *p = buf + 4; *p == ' ' || *p == '\t' || (*p >= '0' && *p <= '9'); p++)
            if (*p >= '0' && *p <= '9')
                pos = pos * 10 + (*p - '0');
    }
    return pos;
}

static enum sluice_mode open_mode(enum sluice_mode mode);

/* The stack of the path's mode for an adopted description, when its tiers
 * take a file they did not open (SLUICE_CTL_ADOPT: buffer mode, and auto's
 * buffer tier); else the pass-through stack. 0 or -ENOMEM. */
static int adopt_stack(struct sluice_file *f, const char *abs)
{
    enum sluice_mode mode = sluice_file_mode(open_mode(sluice_policy_mode(abs)), f->rec);

    if (mode != SLUICE_MODE_PROFILE && !sluice_stack_is_bottom_only(mode) && sluice_stack_build(f, mode) == 0) {
        if (sluice_tier_control(f, 0, SLUICE_CTL_ADOPT, NULL) == 0) {
            if (f->sides != SLUICE_SIDES_BOTH)
                sluice_record_split_sides(f->rec);
            f->open_sides = f->sides;
            return 0;
        }
    }
    return sluice_stack_build(f, SLUICE_MODE_PROFILE);
}

/* A regular file behind fd that the process did not open itself (it
 * inherited it: a shell's `> F`; or a parent's descriptor): recorded from
 * now on, as the path it names, through the stack of its path's mode when
 * the mode's tiers take such a file (its position is the kernel's: the
 * description may be shared with the shell), else the pass-through stack. */
static struct sluice_file *fd_adopt(int fd)
{
    char link[64], path[PATH_MAX], abs[PATH_MAX];
    struct sluice_record *rec;
    struct sluice_file *f;
    struct stat st;
    ssize_t n;
    int flags;

    if (SLUICE_REAL(fstat)(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (flags = SLUICE_REAL(fcntl)(fd, F_GETFL)) < 0)
        return NULL;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    if ((n = readlink(link, path, sizeof path - 1)) <= 0 || path[0] != '/')
        return NULL;
    path[n] = '\0';
    if (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)
        return NULL;
    if (sluice_policy_skip_fast(path) || (rec = sluice_path_record(AT_FDCWD, path, abs)) == NULL)
        return NULL;
    if ((f = file_alloc()) == NULL)
        return NULL;
    int64_t pos = sluice_fd_position(fd);
    f->rec = rec;
    f->flags = flags;
    atomic_store(&f->pos, pos >= 0 ? pos : 0);
    f->fork_gen = sluice_fork_gen;
    f->fd = fd;
    if (adopt_stack(f, abs) != 0) {
        sluice_file_put(f);
        return NULL;
    }
    atomic_fetch_add(&rec->open_files, 1);
    sluice_layout_observe(rec, fd);
    fd_install(fd, f);   /* the table's reference; the caller gets ours */
    return f;
}

struct sluice_file *sluice_fd_get_adopt(int fd)
{
    struct sluice_file *f = sluice_fd_get(fd);
    uint64_t bit = UINT64_C(1) << ((unsigned)fd % 64);

    if (f || (unsigned)fd >= ADOPT_FDS || (unsigned)fd >= (unsigned)fd_table_size ||
        (atomic_load_explicit(&adopt_checked[fd / 64], memory_order_relaxed) & bit))
        return f;
    atomic_fetch_or(&adopt_checked[fd / 64], bit);
    if (sluice_in_vfork_child())
        return NULL;
    return fd_adopt(fd);
}

/* Profile mode everywhere: the kernel opens first (and is the one to read
 * the path, answering EFAULT for a bad pointer), then the descriptor is
 * recorded as the pass-through stack would have. */
/* Pass-through modes set a layout only when SLUICE_LAYOUT asks for one in
 * every mode (layout/layout.h): the flags for the open. */
static int layout_create(int dirfd, const char *path, int flags, mode_t mode, int *created)
{
    char abs[PATH_MAX];
    struct sluice_record *rec;

    if (!sluice_user_str_ok(path) || sluice_policy_skip_fast(path) ||
        sluice_path_absolute(dirfd, path, abs, sizeof abs) != 0 || !sluice_policy_records(abs) ||
        (rec = sluice_record_get(SLUICE_MOD_POSIX, abs)) == NULL)
        return flags;
    return sluice_layout_create(dirfd, path, abs, flags, mode, SLUICE_MODE_PROFILE, rec, created);
}

static int file_open_profiled(int dirfd, const char *path, int flags, mode_t mode)
{
    char abs[PATH_MAX];
    struct sluice_file *f;
    struct sluice_record *rec;
    int created = 0;
    uint64_t t0, t1;
    int fd, err;

    if ((flags & O_CREAT) && sluice_layout_active())
        flags = layout_create(dirfd, path, flags, mode, &created);
    t0 = sluice_now();
    fd = SLUICE_REAL(openat)(dirfd, path, flags, mode);
    t1 = sluice_now();
    err = fd < 0 ? -errno : 0;
    if (fd < 0)
        sluice_layout_undo(dirfd, path, created);

    if (err == -EFAULT)
        return err;
    if (fd >= 0)
        sluice_fd_forget(fd);
    if ((rec = sluice_path_record(dirfd, path, abs)) == NULL)
        return fd < 0 ? err : fd;
    if (fd < 0) {
        sluice_count_error(rec, SLUICE_SIDES_BOTH);
        return err;
    }
    if ((f = file_alloc()) == NULL || sluice_stack_build(f, SLUICE_MODE_PROFILE) != 0) {
        if (f)
            sluice_file_put(f);
        return fd;
    }
    f->rec = rec;
    f->flags = flags;
    atomic_store(&f->pos, 0);
    f->fork_gen = sluice_fork_gen;
    f->fd = fd;
    atomic_fetch_add(&rec->open_files, 1);
    sluice_count_open(rec, f->sides, t0, t1);
    sluice_count_open_flags(rec, f->sides, flags);
    sluice_layout_observe(rec, fd);
    if ((unsigned)fd < (unsigned)fd_table_size)
        fd_install(fd, f);
    sluice_file_put(f);
    return fd;
}

/* Every mode a path may get has the bottom tier alone (profile, acb). */
static int modes_are_pass_through(void)
{
    unsigned used = sluice_policy_modes_used();
    for (int m = 0; m < SLUICE_MODE_COUNT; m++)
        if ((used & (1u << m)) && !sluice_stack_is_bottom_only((enum sluice_mode)m))
            return 0;
    return 1;
}

/* Opens made while a shared file is being opened (MPI_File_open: every
 * rank, maybe on other nodes, opens the same file). */
static __thread int shared_opens;

void sluice_shared_open_begin(void)
{
    shared_opens++;
}

void sluice_shared_open_end(void)
{
    shared_opens--;
}

/* The stack a file of `mode` gets: a shared file never goes to a tier that
 * keeps it private to this node. */
static enum sluice_mode open_mode(enum sluice_mode mode)
{
    if (shared_opens > 0 && (sluice_stack_caps(mode) & SLUICE_TIER_NODE_PRIVATE))
        return SLUICE_MODE_PROFILE;
    return mode;
}

enum sluice_mode sluice_file_mode(enum sluice_mode mode, const struct sluice_record *rec)
{
    /* --mode auto on a file system of this node: a tier is no faster than
     * the file system itself, so there is nothing to gain */
    if (mode == SLUICE_MODE_AUTO && !sluice_cfg.auto_local && rec && sluice_mount_is_local(rec->mount))
        return SLUICE_MODE_PROFILE;
    return mode;
}

static int file_open(int dirfd, const char *path, int flags, mode_t mode, unsigned hidden);

int sluice_file_open(int dirfd, const char *path, int flags, mode_t mode)
{
    return file_open(dirfd, path, flags, mode, 0);
}

int sluice_file_open_for_stream(int dirfd, const char *path, int flags, mode_t mode)
{
    return file_open(dirfd, path, flags, mode, SLUICE_SIDES_APP);
}

/* hidden: the sides its open and last close are not counted on. */
static int file_open(int dirfd, const char *path, int flags, mode_t mode, unsigned hidden)
{
    char abs[PATH_MAX];
    struct sluice_file *f = NULL;
    struct sluice_record *rec;
    uint64_t t0, t1;
    int fd;

    if (modes_are_pass_through())
        return file_open_profiled(dirfd, path, flags, mode);
    /* The path decides the file's mode before it is opened: read it only
     * if it can be read (else the kernel answers, unrecorded). */
    if (!sluice_user_str_ok(path)) {
        fd = SLUICE_REAL(openat)(dirfd, path, flags, mode);
        return fd < 0 ? -errno : fd;
    }
    enum sluice_mode fmode = SLUICE_MODE_PROFILE;
    int local = 0;
    if ((rec = sluice_path_record(dirfd, path, abs)) != NULL) {
        enum sluice_mode asked = open_mode(sluice_policy_mode(abs));
        fmode = sluice_file_mode(asked, rec);
        local = fmode != asked;
    }
    if (rec == NULL || (f = file_alloc()) == NULL || sluice_stack_build(f, fmode) != 0) {
        if (f)
            sluice_file_put(f);
        fd = SLUICE_REAL(openat)(dirfd, path, flags, mode);
        if (fd < 0)
            return -errno;
        sluice_fd_forget(fd);
        return fd;
    }
    f->rec = rec;
    f->open_sides = f->sides & ~hidden;
    if (f->sides != SLUICE_SIDES_BOTH || hidden)
        sluice_record_split_sides(rec);
    f->flags = flags;
    atomic_store(&f->pos, 0);
    f->fork_gen = sluice_fork_gen;
    f->fd = -1;

    t0 = sluice_now();
    fd = sluice_tier_open(f, 0, dirfd, path, flags, mode);
    t1 = sluice_now();
    if (fd < 0) {
        sluice_count_error(rec, f->open_sides);
        sluice_file_put(f);
        return fd;
    }
    if (local)
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_AUTO_LOCAL, t1, t1);
    f->fd = fd;
    atomic_fetch_add(&rec->open_files, 1);
    sluice_count_open(rec, f->open_sides, t0, t1);
    sluice_count_open_flags(rec, f->open_sides, flags);
    if ((unsigned)fd < (unsigned)fd_table_size)
        fd_install(fd, f);
    fd_under_std_stream(fd, f);
    sluice_file_put(f);   /* the table holds it now */
    return fd;
}

/* Offset at which a current-position transfer of n bytes began, and the
 * tracked position moved past it. The kernel is asked only when our own
 * tracking cannot know: O_APPEND, or a description shared with another
 * process since a fork. */
static int64_t file_pos_advance(struct sluice_file *f, int fd, int64_t n)
{
    if ((f->flags & O_APPEND) || f->fork_gen != sluice_fork_gen) {
        off_t end = SLUICE_REAL(lseek)(fd, 0, SEEK_CUR);
        if (end < 0)
            return -1;
        atomic_store_explicit(&f->pos, (int64_t)end, memory_order_relaxed);
        return (int64_t)end - n;
    }
    /* Not a locked add: two threads moving one descriptor's position at
     * once race in the kernel too, and this is every read's hot path. */
    int64_t start = atomic_load_explicit(&f->pos, memory_order_relaxed);
    atomic_store_explicit(&f->pos, start + n, memory_order_relaxed);
    return start;
}

static ssize_t file_rw_done(struct sluice_file *f, int fd, enum sluice_access kind, ssize_t rc,
                            off_t off, int mem_misaligned, uint64_t t0, uint64_t t1)
{
    if (rc < 0) {
        sluice_count_error(f->rec, f->sides);
        return rc;
    }
    /* A tier that keeps the position has already moved it past the transfer. */
    int64_t start = off >= 0 ? (int64_t)off
                    : f->owns_pos ? atomic_load_explicit(&f->pos, memory_order_relaxed) - rc
                    : file_pos_advance(f, fd, rc);
    sluice_count_rw_buf(f->rec, f->sides, kind, -1, start, rc, mem_misaligned, t0, t1);
    return rc;
}

/* POSIX_MEM_NOT_ALIGNED: a buffer (any buffer of a vector) off SLUICE_MEM_ALIGNMENT. */
static inline int mem_misaligned(const void *buf)
{
    return ((uintptr_t)buf & (SLUICE_MEM_ALIGNMENT - 1)) != 0;
}

static int iov_misaligned(const struct iovec *iov, int cnt)
{
    for (int i = 0; i < cnt; i++)
        if (mem_misaligned(iov[i].iov_base))
            return 1;
    return 0;
}

/* When the stack is the bottom tier alone, a read or write is exactly the
 * system call the program made, on the descriptor it named: the hot path
 * of profile mode makes it here, without the tier dispatch. */
static inline ssize_t sys_ret(ssize_t rc)
{
    return rc < 0 ? -errno : rc;
}

ssize_t sluice_file_read(struct sluice_file *f, int fd, void *buf, size_t n, off_t off)
{
    uint64_t t0 = sluice_now();
    ssize_t rc = f->depth > 1 ? sluice_tier_read(f, 0, buf, n, off)
                 : sys_ret(off < 0 ? SLUICE_REAL(read)(fd, buf, n) : SLUICE_REAL(pread)(fd, buf, n, off));
    return file_rw_done(f, fd, SLUICE_READ, rc, off, mem_misaligned(buf), t0, sluice_now());
}

ssize_t sluice_file_write(struct sluice_file *f, int fd, const void *buf, size_t n, off_t off)
{
    uint64_t t0 = sluice_now();
    ssize_t rc = f->depth > 1 ? sluice_tier_write(f, 0, buf, n, off)
                 : sys_ret(off < 0 ? SLUICE_REAL(write)(fd, buf, n) : SLUICE_REAL(pwrite)(fd, buf, n, off));
    return file_rw_done(f, fd, SLUICE_WRITE, rc, off, mem_misaligned(buf), t0, sluice_now());
}

ssize_t sluice_file_readv(struct sluice_file *f, int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    uint64_t t0 = sluice_now();
    ssize_t rc = sluice_tier_readv(f, 0, iov, cnt, off, flags);
    return file_rw_done(f, fd, SLUICE_READ, rc, off, iov_misaligned(iov, cnt), t0, sluice_now());
}

ssize_t sluice_file_writev(struct sluice_file *f, int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    uint64_t t0 = sluice_now();
    ssize_t rc = sluice_tier_writev(f, 0, iov, cnt, off, flags);
    return file_rw_done(f, fd, SLUICE_WRITE, rc, off, iov_misaligned(iov, cnt), t0, sluice_now());
}

off_t sluice_file_lseek(struct sluice_file *f, int fd, off_t off, int whence)
{
    uint64_t t0 = sluice_now();
    off_t rc = sluice_tier_lseek(f, 0, off, whence);
    uint64_t t1 = sluice_now();

    if (rc < 0) {
        sluice_count_error(f->rec, f->sides);
        return rc;
    }
    atomic_store(&f->pos, (int64_t)rc);
    sluice_count_meta(f->rec, f->sides, POSIX_SEEKS, t0, t1);
    return rc;
}

int sluice_file_fsync(struct sluice_file *f, int datasync)
{
    uint64_t t0 = sluice_now();
    int rc = sluice_tier_fsync(f, 0, datasync);
    uint64_t t1 = sluice_now();

    if (rc < 0)
        sluice_count_error(f->rec, f->sides);
    else {
        sluice_count_sync(f->rec, f->sides, datasync ? POSIX_FDSYNCS : POSIX_FSYNCS, t0, t1);
        sluice_trace_meta(f->rec, f->sides, SLUICE_TRACE_SYNC, 0, t0, t1);
    }
    return rc;
}

int sluice_file_ftruncate(struct sluice_file *f, off_t len)
{
    uint64_t t0 = sluice_now();
    int rc = sluice_tier_ftruncate(f, 0, len);
    uint64_t t1 = sluice_now();

    if (rc < 0)
        sluice_count_error(f->rec, f->sides);
    else {
        sluice_count_meta(f->rec, f->sides, POSIX_TRUNCATES, t0, t1);
        sluice_trace_meta(f->rec, f->sides, SLUICE_TRACE_TRUNCATE, (int64_t)len, t0, t1);
    }
    return rc;
}

static int file_meta_done(struct sluice_file *f, int rc, int counter, uint64_t t0)
{
    uint64_t t1 = sluice_now();

    if (rc < 0)
        sluice_count_error(f->rec, f->sides);
    else
        sluice_count_meta(f->rec, f->sides, counter, t0, t1);
    return rc;
}

int sluice_file_fstat(struct sluice_file *f, struct stat *st)
{
    uint64_t t0 = sluice_now();
    int rc = sluice_tier_fstat(f, 0, st);
    uint64_t t1 = sluice_now();

    if (rc < 0)
        sluice_count_error(f->rec, f->sides);
    else
        sluice_count_meta(f->rec, f->sides, POSIX_STATS, t0, t1);
    return rc;
}

int sluice_file_statx(struct sluice_file *f, int flags, unsigned mask, struct statx *stx)
{
    uint64_t t0 = sluice_now();
    int rc;

    if (f->depth > 1) {
        struct stat st;
        rc = sluice_tier_fstat(f, 0, &st);
        if (rc == 0)
            sluice_stat_to_statx(&st, stx);
    } else {
        rc = SLUICE_REAL(statx)(f->fd, "", flags | AT_EMPTY_PATH, mask, stx) < 0 ? -errno : 0;
    }
    return file_meta_done(f, rc, POSIX_STATS, t0);
}

int sluice_file_fchmod(struct sluice_file *f, mode_t mode)
{
    uint64_t t0 = sluice_now();
    return file_meta_done(f, sluice_tier_fchmod(f, 0, mode), POSIX_CHMODS, t0);
}

int sluice_file_fchown(struct sluice_file *f, uid_t uid, gid_t gid)
{
    uint64_t t0 = sluice_now();
    return file_meta_done(f, sluice_tier_fchown(f, 0, uid, gid), POSIX_CHOWNS, t0);
}

int sluice_file_futimens(struct sluice_file *f, const struct timespec times[2])
{
    uint64_t t0 = sluice_now();
    return file_meta_done(f, sluice_tier_futimens(f, 0, times), POSIX_UTIMES, t0);
}

int sluice_file_fallocate(struct sluice_file *f, int mode, off_t off, off_t len)
{
    uint64_t t0 = sluice_now();
    return file_meta_done(f, sluice_tier_fallocate(f, 0, mode, off, len), POSIX_FALLOCATES, t0);
}

ssize_t sluice_file_fxattr(struct sluice_file *f, const struct sluice_xattr *x)
{
    uint64_t t0 = sluice_now();
    ssize_t rc = sluice_tier_fxattr(f, 0, x);
    int counter = x->op == SLUICE_XATTR_GET || x->op == SLUICE_XATTR_LIST ? POSIX_XATTR_READS : POSIX_XATTR_WRITES;
    int r = file_meta_done(f, rc < 0 ? (int)rc : 0, counter, t0);
    return r < 0 ? r : rc;
}

void sluice_file_kernel_copied(int fd, int64_t off, int kind, ssize_t rc, uint64_t t0)
{
    struct sluice_file *f = sluice_fd_get(fd);
    uint64_t t1 = sluice_now();

    if (!f)
        return;
    /* The kernel's own calls: both sides, whatever the stack (it stepped aside). */
    if (rc < 0) {
        sluice_count_error(f->rec, SLUICE_SIDES_BOTH);
    } else {
        int64_t start = off;
        if (start < 0) {
            off_t now = SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR);
            start = now >= 0 ? (int64_t)now - rc : 0;
            if (now >= 0 && !f->owns_pos)
                atomic_store_explicit(&f->pos, (int64_t)now, memory_order_relaxed);
        }
        sluice_count_rw(f->rec, SLUICE_SIDES_BOTH, (enum sluice_access)kind, start, rc, t0, t1);
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_KERNEL_COPIES, t0, t1);
    }
    sluice_file_put(f);
}

int sluice_fd_close(int fd)
{
    struct sluice_file *f = fd_take(fd);
    uint64_t t0, t1;
    int rc;

    if (!f) {
        adopt_recheck(fd);
        return SLUICE_REAL(close)(fd) < 0 ? -errno : 0;
    }
    if (f->fd < 0)
        f->fd = fd;
    t0 = sluice_now();
    if (atomic_fetch_sub(&f->nfds, 1) == 1) {
        /* The description's last descriptor: the tiers finish the file. */
        atomic_fetch_sub(&f->rec->open_files, 1);
        rc = sluice_tier_close(f, 0);
        if (fd != f->fd && SLUICE_REAL(close)(fd) < 0 && rc == 0)
            rc = -errno;
    } else {
        if (fd == f->fd) {
            /* Tiers keep working on the description through a private
             * copy, since the application may close the original first
             * (open, dup2 onto 1, close); a background write still using
             * the original finishes first. */
            if (f->depth > 1)
                (void)sluice_tier_control(f, 0, SLUICE_CTL_QUIET, NULL);
            int keep = sluice_privfd_dup(fd);
            if (keep >= 0)
                f->fd = keep;
        }
        rc = SLUICE_REAL(close)(fd) < 0 ? -errno : 0;
    }
    t1 = sluice_now();
    /* close() releases the descriptor even when it reports an error. */
    if (rc < 0)
        sluice_count_error(f->rec, f->sides);
    else
        sluice_count_close(f->rec, f->sides, t0, t1);
    sluice_file_put(f);
    return rc;
}

void sluice_fd_dup(int oldfd, int newfd)
{
    struct sluice_file *f = sluice_fd_get(oldfd);

    if (!f)
        return;
    if ((unsigned)newfd < (unsigned)fd_table_size) {
        fd_install(newfd, f);
        fd_under_std_stream(newfd, f);
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, f->sides, POSIX_DUPS, t, t);
    }
    sluice_file_put(f);
}

int sluice_fd_high(void)
{
    return atomic_load(&fd_high);
}

int sluice_fd_known(int fd)
{
    return (unsigned)fd < (unsigned)fd_table_size &&
           atomic_load_explicit(&fd_table[fd], memory_order_relaxed) != NULL;
}

void sluice_fd_prepare_replace(int fd)
{
    struct sluice_file *f = sluice_fd_get(fd);

    if (!f)
        return;
    /* The kernel is about to close fd: if the tiers work through it and
     * other descriptors still name the description, or a tier holds data it
     * must still write at its close, give them a private copy. */
    if (f->fd == fd && (atomic_load(&f->nfds) > 1 || f->depth > 1)) {
        if (f->depth > 1)
            (void)sluice_tier_control(f, 0, SLUICE_CTL_QUIET, NULL);
        int keep = sluice_privfd_dup(fd);
        if (keep >= 0)
            f->fd = keep;
    }
    sluice_file_put(f);
}

void sluice_fd_replaced(int fd)
{
    struct sluice_file *f = fd_take(fd);
    uint64_t t;

    if (!f)
        return;
    t = sluice_now();
    if (atomic_fetch_sub(&f->nfds, 1) == 1) {
        atomic_fetch_sub(&f->rec->open_files, 1);
        if (f->fd != fd)
            (void)sluice_tier_close(f, 0);   /* the last name was a private copy */
        /* else the kernel closed the description's last descriptor itself */
        sluice_count_close(f->rec, f->open_sides, t, t);
    } else {
        sluice_count_close(f->rec, f->sides, t, t);
    }
    sluice_file_put(f);
}

void sluice_file_descriptors_follow(struct sluice_file *f)
{
    int high = atomic_load(&fd_high);

    for (int i = 0; i <= high && i < fd_table_size; i++) {
        if (i == f->fd || atomic_load_explicit(&fd_table[i], memory_order_acquire) != f)
            continue;
        int fl = SLUICE_REAL(fcntl)(i, F_GETFD);
        if (fl >= 0)
            (void)SLUICE_REAL(dup3)(f->fd, i, (fl & FD_CLOEXEC) ? O_CLOEXEC : 0);
    }
}

/* (A walk inside fn, as a stage move inside an exec's walk, renews the
 * marks: the outer walk may then reach a description twice, which fn must
 * bear; SLUICE_CTL_EXEC does, a moved file being straight through.) */
void sluice_files_each(void (*fn)(struct sluice_file *f, void *arg), void *arg)
{
    static atomic_uint passes;
    unsigned pass = atomic_fetch_add(&passes, 1) + 1;
    int high = atomic_load(&fd_high);

    for (int i = 0; i <= high && i < fd_table_size; i++) {
        struct sluice_file *f = sluice_fd_get(i);
        if (!f)
            continue;
        if (atomic_exchange(&f->each_seen, pass) != pass)
            fn(f, arg);
        sluice_file_put(f);
    }
}

static void description_before_exec(struct sluice_file *f, void *arg)
{
    (void)arg;
    if (f->depth > 1)
        (void)sluice_tier_control(f, 0, SLUICE_CTL_EXEC, NULL);
}

void sluice_files_before_exec(void)
{
    sluice_files_each(description_before_exec, NULL);
}

void sluice_files_after_fork_child(void)
{
    pthread_mutex_init(&free_lock, NULL);
}
