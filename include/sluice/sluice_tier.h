/*
 * The tier interface: a layer between the application's calls and the file
 * system is a table of function pointers, stacked per open file (top first,
 * the pass-through tier at the bottom). A tier calls the tier below through
 * the sluice_tier_<op>(f, level + 1, ...) dispatchers; a NULL slot means
 * "inherit from the tier below", so a tier implements only what it changes.
 *
 * Three kinds of slots (ABI 2):
 *  - per open file (open ... control): called with the file and the tier's
 *    level in the file's stack;
 *  - per path (path_*): calls that name a file instead of holding one (stat,
 *    unlink, rename, chmod, ...), called with the stack of the path's mode;
 *    a tier answers from what it holds or passes the call down;
 *  - per file, metadata (fchmod, fchown, futimens, fallocate, fxattr): a
 *    tier that holds bytes makes them reach the file system first.
 * Every wrapper has one shape: resolve, dispatch down the stack, count.
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
#include <time.h>

#define SLUICE_TIER_ABI 2
#define SLUICE_OFF_CURRENT ((off_t)-1)
/* The fallocate slot's mode for posix_fallocate() (which emulates where the
 * file system cannot allocate). */
#define SLUICE_POSIX_FALLOCATE (-1)

struct sluice_file;
struct sluice_record;
struct sluice_stack;   /* the tiers of one mode, top first (core/stack.h) */
struct statx;

/* A path as the program named it, and as sluice resolved it. */
struct sluice_path {
    int dirfd;                  /* as given: AT_FDCWD or a directory descriptor */
    const char *path;           /* as given */
    const char *abs;            /* absolute and normalised; NULL on a stack of the bottom tier alone */
    struct sluice_record *fs_rec; /* where the bottom tier counts what reaches the file system (NULL: the core does) */
};

/* Extended attributes: one slot for the four calls of each family. */
enum sluice_xattr_op { SLUICE_XATTR_GET, SLUICE_XATTR_SET, SLUICE_XATTR_LIST, SLUICE_XATTR_REMOVE };
struct sluice_xattr {
    enum sluice_xattr_op op;
    const char *name;           /* GET, SET, REMOVE */
    void *value;                /* GET: buffer; SET: the value; LIST: buffer of names */
    size_t size;
    int flags;                  /* SET: XATTR_CREATE / XATTR_REPLACE */
    int nofollow;               /* path calls: the l*xattr variants */
};

enum sluice_tier_caps {
    SLUICE_TIER_BUFFERS_WRITES = 1u << 0, /* may acknowledge before data reaches the tier below */
    SLUICE_TIER_TEST_ONLY = 1u << 1,      /* refused unless SLUICE_ALLOW_TEST_TIERS=1 */
    SLUICE_TIER_BOTTOM = 1u << 2,         /* talks to the file system; must be last */
    SLUICE_TIER_OWNS_POSITION = 1u << 3,  /* keeps the file position itself (in f->pos): it receives
                                             SLUICE_OFF_CURRENT and moves f->pos; the kernel's position
                                             is made right again at quiesce */
    SLUICE_TIER_NODE_PRIVATE = 1u << 5,   /* keeps a file's bytes where only this node sees them: never
                                             used for files shared between processes by design (opened
                                             through MPI-IO), which take the profile stack */
    SLUICE_TIER_OPENS_STREAMS = 1u << 4,  /* a stream's file is opened through the stack too (fopen is
                                             open + fdopen): the tier decides where the bytes live */
};

/* Why a tier stops changing a file's I/O (SLUICE_CTL_FALLBACK's argument;
 * each reason has a POSIX_FALLBACK_* counter). */
enum sluice_fallback {
    SLUICE_FALLBACK_MMAP = 1u << 0,   /* mapped: the kernel's pages are the truth */
    SLUICE_FALLBACK_DIRECT = 1u << 1, /* O_DIRECT, O_SYNC, O_DSYNC: every call must reach the device */
    /* 1u << 2 is free: locks are no reason to fall back (SLUICE_CTL_SYNC before a lock call,
     * SLUICE_CTL_LOCKED after one that took a lock) */
    SLUICE_FALLBACK_SHARED = 1u << 3, /* position shared with another process (fork) or stdio (fdopen) */
    SLUICE_FALLBACK_MEMORY = 1u << 4, /* no buffer memory and nothing to free */
    SLUICE_FALLBACK_KERNEL = 1u << 5, /* the kernel moves or changes the bytes itself (fallocate,
                                         copy_file_range, sendfile, splice): the whole file */
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
    /* Bring every byte the tier holds for this file to the tier below (no
     * fsync) and forget cached reads; the tier goes on as before. Before
     * calls that change the file's metadata (a later flush would change
     * its times or clear its set-id bits). arg: NULL. */
    SLUICE_CTL_SYNC = 3,
    /* The program took a lock on this file (flock, fcntl or OFD record
     * lock, lockf): another process may have changed the file while it
     * held the lock, so what the tier knows of the file's bytes and size
     * from before is forgotten. The tier received SLUICE_CTL_SYNC right
     * before the lock call (every lock or unlock call: bytes written under
     * a lock reach the tier below before it is released). arg: NULL. */
    SLUICE_CTL_LOCKED = 4,
    /* exec() is about to replace the program image, and the description
     * may outlive it: the next image (or this one, if exec fails) uses the
     * descriptor without the tier. A tier that keeps the file's bytes
     * where such writes would be lost moves the file to the tier below
     * now, points f->fd and every descriptor naming the description at it
     * (sluice_file_descriptors_follow) and goes straight through. Before
     * the quiesce of the end. arg: NULL. */
    SLUICE_CTL_EXEC = 5,
    /* A question, no action: does f->fd name a copy of the file's bytes
     * that lives on this node (a tier's data file) rather than the file on
     * the file system? 1: yes. A tier that does not hold the file passes
     * the question down; the bottom tier's -ENOTTY means no. Asked when the
     * C library wrote or read a stream's descriptor, to know whether the
     * file system saw it. arg: NULL. */
    SLUICE_CTL_NODE_LOCAL = 6,
    /* The description's position is moved where no tier sees it too: a
     * stream of the C library over descriptor 0, 1 or 2 writes and reads
     * at the kernel's position through calls no wrapper sees. From now on
     * the kernel's position is the description's. A tier that keeps the
     * position itself puts the kernel's where the application's is and,
     * from then on, moves the kernel's with every current-position
     * transfer (so the unseen writer lands after it, as without the
     * tier). A tier that cannot answers -ENOTTY (the bottom tier's
     * answer): the core then asks for SLUICE_CTL_FALLBACK with
     * SLUICE_FALLBACK_SHARED. arg: NULL. */
    SLUICE_CTL_KERNEL_POSITION = 7,
    /* The file was not opened through the stack: f->fd is a descriptor
     * the process inherited (a shell's `cmd > file`), f->flags its status
     * flags (F_GETFL), f->pos its position. The description may be shared
     * with other processes (the shell) and with stdio: its position is
     * the kernel's, as after SLUICE_CTL_KERNEL_POSITION. A tier that keeps
     * per-file state sets it up and answers 0, or answers -ENOTTY if it
     * cannot take such a file; a tier that holds nothing for a file it did
     * not open passes the request down. The bottom tier needs nothing and
     * answers -ENOTTY: the core then records the file through the profile
     * stack. arg: NULL. */
    SLUICE_CTL_ADOPT = 8,
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

    /* ---- metadata of an open file: 0 or -errno (fxattr: a size) ---- */
    int (*fchmod)(struct sluice_file *f, int level, mode_t mode);
    int (*fchown)(struct sluice_file *f, int level, uid_t uid, gid_t gid);
    int (*futimens)(struct sluice_file *f, int level, const struct timespec times[2]);
    int (*fallocate)(struct sluice_file *f, int level, int mode, off_t off, off_t len);
    ssize_t (*fxattr)(struct sluice_file *f, int level, const struct sluice_xattr *x);

    /* ---- paths: 0 or -errno (path_xattr: a size); flags as the *at() calls take them ---- */
    int (*path_stat)(const struct sluice_stack *s, int level, const struct sluice_path *p, struct stat *st, int flags);
    int (*path_statx)(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags,
                      unsigned mask, struct statx *stx);
    int (*path_access)(const struct sluice_stack *s, int level, const struct sluice_path *p, int mode, int flags);
    int (*path_mkdir)(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode);
    int (*path_unlink)(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags);
    int (*path_rename)(const struct sluice_stack *s, int level, const struct sluice_path *from,
                       const struct sluice_path *to, unsigned flags);
    int (*path_link)(const struct sluice_stack *s, int level, const struct sluice_path *from,
                     const struct sluice_path *to, int flags);
    int (*path_symlink)(const struct sluice_stack *s, int level, const char *target, const struct sluice_path *p);
    int (*path_truncate)(const struct sluice_stack *s, int level, const struct sluice_path *p, off_t len);
    int (*path_chmod)(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode, int flags);
    int (*path_chown)(const struct sluice_stack *s, int level, const struct sluice_path *p, uid_t uid, gid_t gid,
                      int flags);
    int (*path_utimens)(const struct sluice_stack *s, int level, const struct sluice_path *p,
                        const struct timespec times[2], int flags);
    ssize_t (*path_xattr)(const struct sluice_stack *s, int level, const struct sluice_path *p,
                          const struct sluice_xattr *x);
    /* A directory listing: the names of files under directory `dir` that
     * this tier holds and the file system does not show yet, one emit()
     * each (ino: what stat would say). Every tier of the stack that has the
     * slot is asked (the file system's own names come from the kernel). */
    void (*path_list)(const struct sluice_path *dir, void (*emit)(void *ctx, const char *name, ino_t ino),
                      void *ctx);
    /* 1 when a listing must not show `name`, an entry of the tier's own
     * making in a program's directory (stage mode's temporary names). */
    int (*path_hides)(const char *name);

    /* ---- streams: the buffer a stream of this mode gets from the C library
     * (glibc's stdio reaches the kernel through calls no wrapper sees; a
     * larger buffer is how a mode changes a stream's I/O). NULL: keep the C
     * library's. *size: in, nothing; out, the buffer's size. One tier per
     * process provides stream buffers; stream_buffer_free takes them back. */
    void *(*stream_buffer)(size_t *size);
    void (*stream_buffer_free)(void *buf, size_t size);

    /* Whole process: bring every byte the tier holds to the tier below and
     * leave each descriptor's kernel position where the application's is.
     * why: sluice_quiesce_reason bits (before a fork, at the end of the
     * process image: exit or exec; SIGNAL: in a signal handler, take no
     * lock that may be held). 0 or -errno. */
    int (*quiesce)(unsigned why);
    /* Whole process, in a forked child: reset locks and threads. */
    void (*after_fork_child)(void);

    /* 1 when none of the tier's path slots would change a path call now
     * (it holds nothing a path call must see: buffer mode with no file
     * buffered): such calls then go to the kernel first, and the path is
     * read only after it (no check of the pointer). A tier without this
     * slot is never idle. */
    int (*path_idle)(void);
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
int sluice_tier_fchmod(struct sluice_file *f, int level, mode_t mode);
int sluice_tier_fchown(struct sluice_file *f, int level, uid_t uid, gid_t gid);
int sluice_tier_futimens(struct sluice_file *f, int level, const struct timespec times[2]);
int sluice_tier_fallocate(struct sluice_file *f, int level, int mode, off_t off, off_t len);
ssize_t sluice_tier_fxattr(struct sluice_file *f, int level, const struct sluice_xattr *x);

int sluice_tier_path_stat(const struct sluice_stack *s, int level, const struct sluice_path *p, struct stat *st,
                          int flags);
int sluice_tier_path_statx(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags,
                           unsigned mask, struct statx *stx);
int sluice_tier_path_access(const struct sluice_stack *s, int level, const struct sluice_path *p, int mode, int flags);
int sluice_tier_path_mkdir(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode);
int sluice_tier_path_unlink(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags);
int sluice_tier_path_rename(const struct sluice_stack *s, int level, const struct sluice_path *from,
                            const struct sluice_path *to, unsigned flags);
int sluice_tier_path_link(const struct sluice_stack *s, int level, const struct sluice_path *from,
                          const struct sluice_path *to, int flags);
int sluice_tier_path_symlink(const struct sluice_stack *s, int level, const char *target, const struct sluice_path *p);
int sluice_tier_path_truncate(const struct sluice_stack *s, int level, const struct sluice_path *p, off_t len);
int sluice_tier_path_chmod(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode,
                           int flags);
int sluice_tier_path_chown(const struct sluice_stack *s, int level, const struct sluice_path *p, uid_t uid, gid_t gid,
                           int flags);
int sluice_tier_path_utimens(const struct sluice_stack *s, int level, const struct sluice_path *p,
                             const struct timespec times[2], int flags);
ssize_t sluice_tier_path_xattr(const struct sluice_stack *s, int level, const struct sluice_path *p,
                               const struct sluice_xattr *x);
/* Every tier's path_list; returns how many tiers of the stack have one (or
 * path_hides). */
int sluice_tier_path_list(const struct sluice_stack *s, const struct sluice_path *dir,
                          void (*emit)(void *ctx, const char *name, ino_t ino), void *ctx);
/* 1 when some tier of the stack hides `name` from listings. */
int sluice_tier_path_hides(const struct sluice_stack *s, const char *name);

#endif
