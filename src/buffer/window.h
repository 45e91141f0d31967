/*
 * A write-behind window: the dirty bytes of one aligned span of a file,
 * [base, base + span), kept in memory until they are flushed. Which bytes
 * are dirty is a short sorted list of disjoint extents, so a flush writes
 * exactly what the application wrote and never a byte it did not (two
 * processes writing disjoint parts of one file stay correct).
 *
 * Pure bookkeeping: no locks, no system calls. The buffer grows on demand
 * (by doubling, up to span), through a callback that may refuse (memory cap).
 */
#ifndef SLUICE_BUFFER_WINDOW_H
#define SLUICE_BUFFER_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#define WINDOW_MAX_EXTENTS 16

struct window_extent {
    int64_t start, end;   /* [start, end), absolute file offsets */
};

struct buffer_window {
    int64_t base;         /* file offset of data[0]; a multiple of span */
    size_t span;          /* bytes the window may cover */
    size_t cap;           /* bytes allocated in data */
    unsigned char *data;
    int next;             /* extents in use */
    int adds;             /* writes taken since the window started (how much it coalesced) */
    int streaming;        /* allocate the whole span at once (sequential writer) */
    struct window_extent ext[WINDOW_MAX_EXTENTS];
};

/* Reserve (or give back, when negative) `delta` bytes of buffer memory:
 * 0 when granted. */
typedef int (*window_reserve_fn)(int64_t delta);

/* An empty window over the span containing `off`. Allocates nothing. */
void window_start(struct buffer_window *w, int64_t off, size_t span);

/* 1 when the window holds no dirty byte. */
static inline int window_empty(const struct buffer_window *w)
{
    return w->next == 0;
}

/* Copy as much of [off, off + n) as belongs to this window's span into it.
 * Returns the bytes taken (0 when off is outside the span), or -ENOMEM when
 * the buffer could not grow, or -E2BIG when one more extent would not fit
 * (the caller flushes and starts again). Nothing is changed on error. */
int64_t window_add(struct buffer_window *w, const void *buf, int64_t off, int64_t n,
                   window_reserve_fn reserve);

/* 1 when [off, off + n) lies inside one dirty extent (a read can be served
 * from the window alone); 2 when it overlaps dirty bytes only partly; 0
 * when it does not touch them. */
int window_overlap(const struct buffer_window *w, int64_t off, int64_t n);

/* End of the highest dirty byte + 1 (0 when empty). */
int64_t window_end(const struct buffer_window *w);

/* 1 when the whole span is dirty (nothing more can be coalesced into it). */
int window_full(const struct buffer_window *w);

/* Copy dirty bytes of [off, off + n) into buf (for reads served from the
 * window and for keeping a read cache coherent). */
void window_copy_out(const struct buffer_window *w, void *buf, int64_t off, int64_t n);

/* Drop the dirty bytes at or beyond `len` (the file was truncated). */
void window_truncate(struct buffer_window *w, int64_t len);

/* Hand the window's memory and extents to `to` (a flush job) and leave `w`
 * empty with no buffer. */
void window_move(struct buffer_window *w, struct buffer_window *to);

/* Free the buffer. Whole-span buffers go to a small pool for the next
 * window (still counted as reserved); others give their memory back
 * through reserve. */
void window_free(struct buffer_window *w, window_reserve_fn reserve);

/* Free the pooled buffers (memory pressure); returns the bytes given back. */
int64_t window_pool_drain(window_reserve_fn reserve);

#endif
