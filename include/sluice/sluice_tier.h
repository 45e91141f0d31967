/*
 * The tier interface: a layer between the application's calls and the file
 * system is a table of function pointers, stacked per open file (top first,
 * the pass-through tier at the bottom). A tier calls the tier below through
 * the sluice_tier_<op>(f, level + 1, ...) dispatchers; a NULL slot means
 * "inherit from the tier below", so a tier implements only what it changes.
 *
 * Conventions:
 *  - returns: 0 or -errno; byte counts or -errno; never -1 + errno;
 *  - offsets: off < 0 (SLUICE_OFF_CURRENT) means "at the descriptor's current
 *    position", as read()/write() do; otherwise the call is positional;
 *  - the core allocates file_state bytes per open file for each tier (zeroed),
 *    reachable as f->tier_state[level];
 *  - the core never tests a tier's name: behaviour is declared in caps.
 */
#ifndef SLUICE_TIER_H
#define SLUICE_TIER_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SLUICE_TIER_ABI 1
#define SLUICE_OFF_CURRENT ((off_t)-1)

struct sluice_file;

enum sluice_tier_caps {
    SLUICE_TIER_BUFFERS_WRITES = 1u << 0, /* may acknowledge before data reaches the tier below */
    SLUICE_TIER_TEST_ONLY = 1u << 1,      /* refused unless SLUICE_ALLOW_TEST_TIERS=1 */
    SLUICE_TIER_BOTTOM = 1u << 2,         /* talks to the file system; must be last */
    SLUICE_TIER_OWNS_POSITION = 1u << 3,  /* keeps the file position itself (in f->pos): it receives
                                             SLUICE_OFF_CURRENT and moves f->pos; the kernel's position
                                             is made right again at quiesce */
};

/* Why a tier stops changing a file's I/O (SLUICE_CTL_FALLBACK's argument;
 * each reason has a POSIX_FALLBACK_* counter). */
enum sluice_fallback {
    SLUICE_FALLBACK_MMAP = 1u << 0,   /* mapped: the kernel's pages are the truth */
    SLUICE_FALLBACK_DIRECT = 1u << 1, /* O_DIRECT, O_SYNC, O_DSYNC: every call must reach the device */
    SLUICE_FALLBACK_LOCK = 1u << 2,   /* fcntl/flock locks: another process coordinates with us */
    SLUICE_FALLBACK_SHARED = 1u << 3, /* position shared with another process (fork) or stdio (fdopen) */
    SLUICE_FALLBACK_MEMORY = 1u << 4, /* no buffer memory and nothing to free */
};

enum sluice_quiesce_reason {
    SLUICE_QUIESCE_SIGNAL = 1u << 0,
    SLUICE_QUIESCE_FORK = 1u << 1,
    SLUICE_QUIESCE_END = 1u << 2,
};

/* Requests through the control slot. */
enum sluice_tier_control_op {
    /* Stop changing this file's I/O: arg is an unsigned * holding
     * sluice_fallback bits; the tier flushes what it holds,
     * syncs the kernel's position and passes every later call through. */
    SLUICE_CTL_FALLBACK = 1,
    /* The descriptor the tiers use for this file (f->fd) is about to be
     * replaced by a private copy and closed: finish every call in flight
     * that uses it (a background flush) before returning. arg: NULL. */
    SLUICE_CTL_QUIET = 2,
};

struct sluice_tier_ops {
    size_t size;       /* sizeof(struct sluice_tier_ops) when the tier was compiled */
    unsigned abi;      /* SLUICE_TIER_ABI */
    const char *name;  /* as written in SLUICE_TIERS and in logs */
    unsigned caps;     /* enum sluice_tier_caps */
    size_t file_state; /* bytes of per-open-file state the core allocates */

    /* Whole-process setup, from the library constructor; 0 or -errno (the
     * stack is then built without this tier and the reason is printed). */
    int (*init)(void);

    /* Open: returns a kernel descriptor or -errno. f->fd is not yet set. */
    int (*open)(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode);
    ssize_t (*read)(struct sluice_file *f, int level, void *buf, size_t n, off_t off);
    ssize_t (*write)(struct sluice_file *f, int level, const void *buf, size_t n, off_t off);
    /* Vectored I/O; flags are preadv2/pwritev2's RWF_* (0 for readv/preadv). */
    ssize_t (*readv)(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags);
    ssize_t (*writev)(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags);
    off_t (*lseek)(struct sluice_file *f, int level, off_t off, int whence);
    int (*fsync)(struct sluice_file *f, int level, int datasync);
    int (*ftruncate)(struct sluice_file *f, int level, off_t len);
    int (*fstat)(struct sluice_file *f, int level, struct stat *st);
    /* Called once, when the last descriptor of this open file is closed. */
    int (*close)(struct sluice_file *f, int level);
    /* Escape hatch for tier-specific requests; -ENOTTY when not understood. */
    int (*control)(struct sluice_file *f, int level, int op, void *arg);

    /* Whole process: bring every byte the tier holds to the tier below and
     * leave each descriptor's kernel position where the application's is.
     * why: sluice_quiesce_reason bits (before a fork, at the end of the
     * process image: exit or exec; SIGNAL: in a signal handler, take no
     * lock that may be held). 0 or -errno. */
    int (*quiesce)(unsigned why);
    /* Whole process, in a forked child: reset locks and threads. */
    void (*after_fork_child)(void);
};

/* True when `ops` was compiled with slot `member` and fills it. */
#define SLUICE_TIER_HAS(ops, member)                                                     \
    ((ops)->size >= offsetof(struct sluice_tier_ops, member) + sizeof((ops)->member) && \
     (ops)->member != NULL)

/* Dispatchers: call op on the first tier at or below `level` that has it. */
int sluice_tier_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode);
ssize_t sluice_tier_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off);
ssize_t sluice_tier_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off);
ssize_t sluice_tier_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags);
ssize_t sluice_tier_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags);
off_t sluice_tier_lseek(struct sluice_file *f, int level, off_t off, int whence);
int sluice_tier_fsync(struct sluice_file *f, int level, int datasync);
int sluice_tier_ftruncate(struct sluice_file *f, int level, off_t len);
int sluice_tier_fstat(struct sluice_file *f, int level, struct stat *st);
int sluice_tier_close(struct sluice_file *f, int level);
int sluice_tier_control(struct sluice_file *f, int level, int op, void *arg);

#endif
