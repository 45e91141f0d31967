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
