/*
 * The buffered state of one file (inode) in this process, shared by every
 * open file description of it: reads through one descriptor see writes
 * made through another, exactly as with the kernel's page cache. Holds the
 * write-behind window, the read-ahead cache, what is known of the size on
 * the file system, and the deferred write error.
 *
 * Lock order: inode_table lock, then an inode's lock; the flusher takes an
 * inode's lock only after writing, holding nothing else.
 */
#ifndef SLUICE_BUFFER_INODE_H
#define SLUICE_BUFFER_INODE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "buffer/window.h"
#include "sluice/sluice_tier.h"

struct sluice_file;
struct buffer_desc;

/* Why a file or a description goes straight through (see sluice_tier.h). */
#define BUFFER_FALLBACK_MMAP SLUICE_FALLBACK_MMAP
#define BUFFER_FALLBACK_DIRECT SLUICE_FALLBACK_DIRECT
#define BUFFER_FALLBACK_SHARED SLUICE_FALLBACK_SHARED
#define BUFFER_FALLBACK_MEMORY SLUICE_FALLBACK_MEMORY

struct buffer_inode {
    dev_t dev;
    ino_t ino;
    int refs;                      /* descriptions open on it (under the table lock) */
    pthread_mutex_t lock;
    pthread_cond_t idle;           /* broadcast when inflight drops to 0 */
    size_t unit;                   /* write-behind span: the file system's preferred write size */
    struct buffer_window win;      /* dirty bytes not yet handed to the flusher */
    int win_append;                /* the window holds O_APPEND data: its offset is the file's end at flush */
    struct sluice_file *win_file;  /* description the window is flushed through (a reference is held) */
    int win_level;                 /* the buffer tier's level in win_file's stack */
    int inflight;                  /* flush jobs queued or running */
    int64_t inflight_lo, inflight_hi; /* span of the bytes in flight */
    int64_t fs_size;               /* size on the file system, as far as this process knows */
    int fs_size_stale;             /* fs_size may be below the file system's (a lock was taken since
                                      it was learnt): ask before treating reads past it as holes */
    int locked;                    /* the program locked the file: any close is a durability point */
    int error;                     /* deferred write error (-errno), reported once */
    unsigned fallback;             /* sluice_fallback bits: the whole file goes straight through */
    unsigned char *ra;             /* read-ahead cache: file bytes [ra_off, ra_off + ra_len) */
    size_t ra_cap;
    int64_t ra_off, ra_len;
    uint64_t last_use;             /* for evicting the least recently used windows */
    int streaming;                 /* the last window was flushed full: start the next one at full size */
    int scattered;                 /* positional writes too scattered to coalesce: straight through */
    int contiguous_run;            /* while scattered: writes in a row that began where the last ended */
    int direct_writes;             /* while scattered: writes that went straight through */
    int retry_after;               /* while scattered: direct writes before buffering is tried again */
    int64_t last_write_end;        /* while scattered: end of the last write */
    int64_t positional_end;        /* end of the last positional write + 1 (0: none yet) */
    int dirty_noted;               /* counted in inode_dirty_windows() */
    struct buffer_inode *next;     /* table chain */
    struct buffer_desc *descs;     /* descriptions open on it (changed under both locks) */
};

/* What the buffer tier keeps per open file description. */
struct buffer_desc {
    struct sluice_file *file;
    struct buffer_inode *ino;      /* NULL: not a regular file, straight through */
    int level;                     /* the buffer tier's level in file's stack */
    unsigned fallback;             /* sluice_fallback bits for this description alone */
    unsigned counted;              /* reasons already counted that do not stick (memory) */
    int wrote;                     /* made a write: its close is a durability point */
    int kernel_pos;                /* the kernel keeps the position (an inherited description, or one
                                      under stdin/stdout/stderr: the shell or stdio may move it): each
                                      current-position write claims its bytes there with an lseek */
    int64_t last_read_end;         /* sequential-read detection (-1: nothing read yet) */
    int64_t ra_window;             /* size of this description's last read-ahead fill (0: none yet) */
    int64_t eof_seen;              /* where a fill found the file's end (-1: none): no read-ahead past it */
    struct buffer_desc *next;      /* ino->descs chain */
};

/* The inode for (dev, ino), created with `unit` if new; NULL without memory.
 * Registers d as one of its descriptions. */
struct buffer_inode *inode_attach(dev_t dev, ino_t ino, size_t unit, struct buffer_desc *d);

/* d is closing: unregister it and drop the inode when it was the last. */
void inode_detach(struct buffer_desc *d);

/* Number of inodes with buffered state (0: no stat needs patching). */
int inode_count(void);

/* Call fn(ino, arg) for each inode, with the table locked (blocking, or
 * only if free when try is set: signal context). Returns -EBUSY if the
 * table could not be taken. */
int inode_for_each(void (*fn)(struct buffer_inode *, void *), void *arg, int try);

/* The inode for (dev, ino) if this process buffers it, with a reference
 * (release with inode_release), else NULL. */
struct buffer_inode *inode_find(dev_t dev, ino_t ino);
void inode_release(struct buffer_inode *ino);

/* In a forked child: every lock of the parent is reset. */
void inode_after_fork_child(void);

/* Inodes whose window holds dirty bytes, and the bookkeeping of it (call
 * after any change of ino->win's emptiness, ino->lock held). */
int inode_dirty_windows(void);
void inode_note_window(struct buffer_inode *ino);

/* A monotonic use counter for LRU. */
uint64_t inode_tick(void);

#endif
