/*
 * Open files. A struct sluice_file is one open file description (what
 * open() creates and dup()/fork() share): its record, its tier stack, and
 * the file position as far as the counters need it. Descriptors map to it
 * through a flat table indexed by fd; several fds (dup) share one.
 *
 * The application keeps real kernel descriptors: sluice never invents or
 * renumbers them. A descriptor sluice did not see opened (a socket, a pipe,
 * an excluded path) has no entry and goes straight to the kernel.
 *
 * Lifetime: struct sluice_file objects are recycled through a free list and
 * never returned to the system, so a thread that loads a table slot while
 * another closes the descriptor touches valid memory; the reference count
 * taken by sluice_fd_get() and re-checked against the slot makes it safe.
 */
#ifndef SLUICE_CORE_FILE_H
#define SLUICE_CORE_FILE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/record.h"
#include "sluice/sluice_tier.h"

#define SLUICE_MAX_TIERS 4
/* Per-file state of all tiers together lives inside struct sluice_file,
 * recycled with it: opening and closing a million files costs no memory. */
#define SLUICE_TIER_STATE_BYTES 256

struct sluice_file {
    atomic_int refs;                 /* table slots + callers inside a wrapper */
    atomic_int nfds;                 /* descriptors naming this description */
    int fd;                          /* the descriptor tiers operate on */
    int flags;                       /* open() flags */
    struct sluice_record *rec;       /* POSIX record */
    _Atomic int64_t pos;             /* file position as the counters track it */
    uint64_t fork_gen;               /* sluice_fork_gen when opened: else shared with another process */
    unsigned sides;                  /* where the core counts: both sides when nothing sits above the file system */
    int owns_pos;                    /* a tier keeps the position (SLUICE_TIER_OWNS_POSITION) */
    int depth;                       /* tiers in the stack */
    int mode;                        /* enum sluice_mode the stack was built for */
    unsigned open_sides;             /* where its open and last close count: not the app side when
                                        it was opened for a stream (fopen through the stack: the
                                        program called fopen and fclose, counted by the STDIO module) */
    atomic_uint each_seen;           /* sluice_files_each's pass that reached it */
    const struct sluice_tier_ops *tier[SLUICE_MAX_TIERS]; /* top first */
    void *tier_state[SLUICE_MAX_TIERS]; /* file_state bytes per tier */
    struct sluice_file *free_next;   /* free list link */
    _Alignas(16) unsigned char tier_mem[SLUICE_TIER_STATE_BYTES];
};

/* Incremented in both processes at every fork: a description opened before
 * the latest fork may have its position moved by the other process. */
extern uint64_t sluice_fork_gen;

/* Set up the descriptor table (constructor). 0 or -errno. */
int sluice_files_init(void);

/* The description behind fd with a reference held, or NULL (not ours). */
struct sluice_file *sluice_fd_get(int fd);

/* The same, and at the first use of a descriptor number the process did
 * not open through us (inherited: a shell's redirection), the regular
 * file it names is recorded from then on, in profile mode's stack. */
struct sluice_file *sluice_fd_get_adopt(int fd);
void sluice_file_put(struct sluice_file *f);

/* Forget whatever the table holds for fd: the kernel handed the number out
 * anew, so the descriptor it named was closed unseen. If the tiers worked
 * through that number they move to a dup of it, or to none. */
void sluice_fd_forget(int fd);

/* ---- operations: return what the system call returns, as value or -errno ---- */

/* Around opens of a file shared between processes by design (inside
 * MPI_File_open): no tier that keeps files private to a node takes them. */
void sluice_shared_open_begin(void);
void sluice_shared_open_end(void);

/* The mode a recorded file of the path's `mode` gets: --mode auto leaves
 * a file on this node's own file system to it (profile; SLUICE_AUTO_LOCAL
 * keeps auto there). */
enum sluice_mode sluice_file_mode(enum sluice_mode mode, const struct sluice_record *rec);

/* Open (dirfd, path) when the policy records it, else plain openat. */
int sluice_file_open(int dirfd, const char *path, int flags, mode_t mode);

/* The same for fopen's open through the stack: the program's call is the
 * stream's (STDIO_OPENS); the POSIX record counts only what the file
 * system saw of this open and of the description's last close. */
int sluice_file_open_for_stream(int dirfd, const char *path, int flags, mode_t mode);

ssize_t sluice_file_read(struct sluice_file *f, int fd, void *buf, size_t n, off_t off);
ssize_t sluice_file_write(struct sluice_file *f, int fd, const void *buf, size_t n, off_t off);
ssize_t sluice_file_readv(struct sluice_file *f, int fd, const struct iovec *iov, int cnt, off_t off, int flags);
ssize_t sluice_file_writev(struct sluice_file *f, int fd, const struct iovec *iov, int cnt, off_t off, int flags);
off_t sluice_file_lseek(struct sluice_file *f, int fd, off_t off, int whence);
int sluice_file_fsync(struct sluice_file *f, int datasync);
int sluice_file_ftruncate(struct sluice_file *f, off_t len);
int sluice_file_fstat(struct sluice_file *f, struct stat *st);

/* statx of the descriptor itself (AT_EMPTY_PATH): the kernel's answer, or a
 * tier's (its size, its mode) when tiers sit above the file system. */
int sluice_file_statx(struct sluice_file *f, int flags, unsigned mask, struct statx *stx);

/* Metadata of an open file, down the stack (a tier holding bytes makes
 * them reach the file system first). fxattr returns a size. */
int sluice_file_fchmod(struct sluice_file *f, mode_t mode);
int sluice_file_fchown(struct sluice_file *f, uid_t uid, gid_t gid);
int sluice_file_futimens(struct sluice_file *f, const struct timespec times[2]);
int sluice_file_fallocate(struct sluice_file *f, int mode, off_t off, off_t len);
ssize_t sluice_file_fxattr(struct sluice_file *f, const struct sluice_xattr *x);

/* The kernel moved rc bytes from or to fd (copy_file_range, sendfile,
 * splice) at off (-1: at its position, now moved): counted as a read or
 * a write, and as a kernel copy, when fd is recorded. */
void sluice_file_kernel_copied(int fd, int64_t off, int kind, ssize_t rc, uint64_t t0);

/* close(fd): the real close of fd, and the tiers' close when it was the
 * description's last descriptor. */
int sluice_fd_close(int fd);

/* After a successful dup/dup2/dup3/F_DUPFD that made newfd a copy of oldfd:
 * newfd now names the same description. (If newfd named a recorded file,
 * dup2 closed it: the caller forgets it first with sluice_fd_drop().) */
void sluice_fd_dup(int oldfd, int newfd);

/* fd's file position, from /proc/self/fdinfo: no call on the file itself
 * (an lseek or fstat the file system would see and the program did not
 * make); -1 if unknown. */
int64_t sluice_fd_position(int fd);

/* The highest descriptor number the table has held (bounds range scans). */
int sluice_fd_high(void);

/* 1 when fd names a recorded file (a peek: no reference taken). */
int sluice_fd_known(int fd);

/* dup2/dup3 onto a recorded fd: before the call, keep the tiers' descriptor
 * alive if the kernel is about to close it; after success, release our side
 * of the description fd named before. */
void sluice_fd_prepare_replace(int fd);
void sluice_fd_replaced(int fd);

/* fd's file leaves any mode that changes its I/O (reason: sluice_fallback
 * bits): mmap, locks, fdopen. A no-op for descriptors sluice does not know. */
void sluice_fd_fallback(int fd, unsigned reason);

/* A tier moved f to another description (f->fd names it now): every
 * descriptor of the program naming f follows, keeping its close-on-exec
 * flag, since the kernel, stdio and the next program image use those
 * numbers without us. */
void sluice_file_descriptors_follow(struct sluice_file *f);

/* Before exec: each recorded description's tiers get SLUICE_CTL_EXEC once. */
void sluice_files_before_exec(void);

/* fn on every open description the program has a descriptor of, once each
 * (a reference held during the call). */
void sluice_files_each(void (*fn)(struct sluice_file *f, void *arg), void *arg);

/* In a forked child. */
void sluice_files_after_fork_child(void);

#endif
