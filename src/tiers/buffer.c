/*
 * The buffer tier (`--mode buffer`): write-behind coalescing and read-ahead
 * for any program, as Cray IOBUF did for some.
 *
 * Small writes gather in a per-file window (buffer/window.h) spanning one
 * write unit (buffer/unit.h); a window the program has filled, or left for
 * another part of the file, goes to the background flusher and reaches the
 * file system as one aligned write. Sequential small reads are served from
 * a read-ahead cache filled by large reads. The state is per inode
 * (buffer/inode.h), so every descriptor of a file sees every byte written
 * through any other, and the tier keeps the file position itself.
 *
 * Durability points: fsync, fdatasync, close (buffers reach the file system
 * before they return), and before fork, exec and exit. A write error met
 * by a background flush is returned at the file's next write, read, fsync
 * or close, once, as the kernel reports deferred write errors.
 *
 * What it cannot keep correct goes straight through, counted in the
 * profile (POSIX_FALLBACK_*): mmap, O_DIRECT/O_SYNC/O_DSYNC, descriptors
 * shared with a forked process or a stdio stream (fdopen). Locks are
 * handover points, not fallbacks: every lock and unlock call writes what
 * is held first, and a lock taken forgets what was read before it.
 *
 * Descriptions whose position others move too (inherited ones, a shell's
 * `prog > F`; descriptors 0-2, under the C library's std streams) keep
 * the position in the kernel: each current-position write claims its
 * bytes there with lseek(SEEK_CUR) and is buffered at the offset claimed,
 * so stdio, the shell or a child writing through the same description
 * land after it, as without the tier (O_APPEND ones go straight through).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "buffer/budget.h"
#include "buffer/buffer.h"
#include "buffer/flusher.h"
#include "buffer/inode.h"
#include "buffer/unit.h"
#include "buffer/window.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/stack.h"
#include "sys/real.h"

#define MIB (1024 * 1024)

static int64_t readahead_size;

static int buffer_init(void)
{
    int64_t cap = sluice_cfg.buffer_memory;

    if (cap <= 0) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        cap = pages > 0 && psz > 0 ? (int64_t)pages * psz / 32 : 256 * MIB;
        if (cap < 64 * MIB)
            cap = 64 * MIB;
        if (cap > 1024 * MIB)
            cap = 1024 * MIB;
    }
    budget_init(cap);
    readahead_size = sluice_cfg.readahead;
    return 0;
}

static inline struct buffer_desc *desc_of(struct sluice_file *f, int level)
{
    return f->tier_state[level];
}

/* ------------------------------------------------------------ fallbacks */

/* counter of each sluice_fallback bit; -1: not a reason this tier uses */
static const int fallback_counter[] = {
    [0] = POSIX_FALLBACK_MMAP, [1] = POSIX_FALLBACK_DIRECT, [2] = -1,
    [3] = POSIX_FALLBACK_SHARED, [4] = POSIX_FALLBACK_MEMORY, [5] = POSIX_FALLBACK_KERNEL,
};

static void count_fallback(struct sluice_file *f, unsigned reason)
{
    uint64_t t = sluice_now();

    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_FALLBACKS, t, t);
    for (unsigned i = 0; i < sizeof fallback_counter / sizeof *fallback_counter; i++)
        if ((reason & (1u << i)) && fallback_counter[i] >= 0)
            sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, fallback_counter[i], t, t);
}

/* Put the kernel's position of d's descriptor where the application's is:
 * whatever uses the descriptor without us next (a forked child, the next
 * program image, stdio) starts from there. */
static void desc_sync_position(struct buffer_desc *d)
{
    struct sluice_file *f = d->file;

    if (d->kernel_pos)
        return;   /* the kernel's is the truth already (and others may have moved it since) */
    /* O_APPEND too: reads use the position, and our appends moved it.
     * The file system saw this seek: an fs-side one. */
    uint64_t t0 = sluice_now();
    if (SLUICE_REAL(lseek)(f->fd, (off_t)atomic_load(&f->pos), SEEK_SET) >= 0)
        sluice_count_meta(f->rec, SLUICE_SIDES_FS, POSIX_SEEKS, t0, sluice_now());
}

/* Reasons for d to go straight through; 0 when buffered. */
static unsigned desc_fallback(struct sluice_file *f, struct buffer_desc *d)
{
    if (!d->ino)
        return ~0u;
    if (f->fork_gen != sluice_fork_gen && !d->kernel_pos && !(d->fallback & BUFFER_FALLBACK_SHARED)) {
        /* Shared with a forked process: its position is the kernel's now
         * (quiesce put it right before the fork). (A description whose
         * writes claim their bytes in the kernel's position stays
         * buffered: the other process's writes land after the claims.) */
        d->fallback |= BUFFER_FALLBACK_SHARED;
        count_fallback(f, BUFFER_FALLBACK_SHARED);
    }
    return d->fallback | d->ino->fallback;
}

/* ------------------------------------------------------------ inode helpers (ino->lock held) */

static void wait_inflight(struct buffer_inode *ino)
{
    while (ino->inflight > 0)
        pthread_cond_wait(&ino->idle, &ino->lock);
}

static int has_pending(const struct buffer_inode *ino)
{
    return ino->inflight > 0 || !window_empty(&ino->win);
}

/* Every buffered byte of ino on the file system, in order. */
static void flush_sync(struct buffer_inode *ino)
{
    int64_t end;

    wait_inflight(ino);
    if (!window_empty(&ino->win)) {
        int err = flush_window(ino->win_file, ino->win_level, &ino->win, ino->win_append, &end, 0);
        flusher_account(ino, err, end);
    }
    ino->win.next = 0;
    window_free(&ino->win, budget_reserve);
    if (ino->win_file) {
        sluice_file_put(ino->win_file);
        ino->win_file = NULL;
    }
    inode_note_window(ino);
}

/* The deferred write error, reported once. */
static int take_error(struct buffer_inode *ino)
{
    int err = ino->error;
    ino->error = 0;
    return err;
}

/* A size the file system reported. Never below what this process itself
 * wrote and truncated to (ino->fs_size): some clients (MooseFS's, with its
 * attribute cache) report a size that lags behind writes just made. Only
 * another process truncating the file shrinks it behind our back, and that
 * needs coordination the program would have to do anyway. */
static int64_t note_fs_size(struct buffer_inode *ino, int64_t reported)
{
    ino->fs_size_stale = 0;
    if (reported > ino->fs_size)
        ino->fs_size = reported;
    return ino->fs_size;
}

/* End of the bytes held in memory or in flight (0: none). Computed, never
 * stored: a stored maximum outlives the truncation that invalidates it. */
static int64_t pending_end(const struct buffer_inode *ino)
{
    int64_t w = window_end(&ino->win), f = ino->inflight ? ino->inflight_hi : 0;
    return w > f ? w : f;
}

static int64_t logical_size(const struct buffer_inode *ino, int64_t fs_size)
{
    int64_t p = pending_end(ino);
    return p > fs_size ? p : fs_size;
}

static int ranges_overlap(int64_t a, int64_t an, int64_t b, int64_t bn)
{
    return a < b + bn && b < a + an;
}

/* Keep the read-ahead cache equal to the file after a write. */
static void ra_update(struct buffer_inode *ino, const unsigned char *buf, int64_t off, int64_t n)
{
    int64_t s, e;

    if (!ino->ra_len || !ranges_overlap(off, n, ino->ra_off, ino->ra_len))
        return;
    s = off > ino->ra_off ? off : ino->ra_off;
    e = off + n < ino->ra_off + ino->ra_len ? off + n : ino->ra_off + ino->ra_len;
    memcpy(ino->ra + (s - ino->ra_off), buf + (s - off), (size_t)(e - s));
}

/* ------------------------------------------------------------ memory pressure */

struct evict_scan {
    struct buffer_inode *self;
    struct buffer_inode *cand[64];
    int n;
};

static void evict_collect(struct buffer_inode *ino, void *arg)
{
    struct evict_scan *s = arg;

    if (ino == s->self || window_empty(&ino->win))
        return;
    if (s->n < (int)(sizeof s->cand / sizeof *s->cand)) {
        s->cand[s->n++] = ino;
        return;
    }
    /* Keep the 64 least recently used. */
    int newest = 0;
    for (int i = 1; i < s->n; i++)
        if (s->cand[i]->last_use > s->cand[newest]->last_use)
            newest = i;
    if (ino->last_use < s->cand[newest]->last_use)
        s->cand[newest] = ino;
}

static void evict_submit(struct buffer_inode *ino, void *arg)
{
    struct evict_scan *s = arg;

    for (int i = 0; i < s->n; i++)
        if (s->cand[i] == ino && pthread_mutex_trylock(&ino->lock) == 0) {
            flusher_submit(ino);
            inode_note_window(ino);
            pthread_mutex_unlock(&ino->lock);
        }
}

/* Hand the least recently used idle windows of other files to the flusher.
 * Called with self->lock held, so the table is only tried, never waited for. */
static int evict_idle_windows(struct buffer_inode *self)
{
    struct evict_scan s = {.self = self};

    if (inode_for_each(evict_collect, &s, 1) != 0 || s.n == 0)
        return 0;
    (void)inode_for_each(evict_submit, &s, 1);
    return s.n;
}

/* The buffer could not grow by `want` bytes. Returns 1 when the caller
 * should try again (memory was or is being freed), 0 when it must write
 * straight through. May drop and retake ino->lock. */
static int relieve_pressure(struct buffer_inode *ino, int64_t want)
{
    if (window_pool_drain(budget_reserve) > 0)
        return 1;
    if (flusher_jobs_pending() == 0 && evict_idle_windows(ino) == 0) {
        if (window_empty(&ino->win))
            return 0;
        flusher_submit(ino);   /* our own window: its memory comes back when written */
        inode_note_window(ino);
    }
    pthread_mutex_unlock(&ino->lock);
    budget_wait(want);
    pthread_mutex_lock(&ino->lock);
    return budget_used() + want <= budget_cap();
}

/* ------------------------------------------------------------ writes */

/* A write straight to the tier below, after everything buffered before it. */
static ssize_t write_direct(struct sluice_file *f, struct buffer_desc *d, struct buffer_inode *ino,
                            const unsigned char *buf, int64_t n, int64_t off, int append)
{
    ssize_t rc;

    flush_sync(ino);
    rc = sluice_tier_write(f, d->level + 1, buf, (size_t)n, append ? SLUICE_OFF_CURRENT : off);
    if (rc > 0) {
        ra_update(ino, buf, off, rc);
        if (off + rc > ino->fs_size)
            ino->fs_size = off + rc;
    }
    return rc;
}

/* Where an O_APPEND write lands: the file's end as the file system has it
 * (fresh: other processes append too) plus what we still hold. */
static int64_t append_offset(struct sluice_file *f, struct buffer_desc *d, struct buffer_inode *ino)
{
    struct stat st;

    if ((!has_pending(ino) || ino->fs_size_stale) && sluice_tier_fstat(f, d->level + 1, &st) == 0)
        note_fs_size(ino, st.st_size);   /* (stale: a lock was taken, the end may have moved) */
    return logical_size(ino, ino->fs_size);
}

/* Strided and random writers (N processes writing interleaved pieces of
 * one file, scattered updates) fill a window with pieces that do not touch:
 * its flush would make as many writes as the program did, after a copy.
 * When a window runs out of pieces with fewer than 2 writes in each, it is
 * written at once and the file's positional writes go straight through
 * (nothing copied, nothing held) until 4 in a row follow each other, or
 * until a number of them have gone through (256, doubling at each retry
 * that finds the same pattern, at most 65,536): then one window is tried. */
#define SCATTERED_RUN 4
#define SCATTERED_RETRY_FIRST 256
#define SCATTERED_RETRY_MAX 65536

static void become_scattered(struct sluice_file *f, struct buffer_inode *ino)
{
    uint64_t t = sluice_now();

    ino->retry_after = ino->retry_after ? ino->retry_after * 2 : SCATTERED_RETRY_FIRST;
    if (ino->retry_after > SCATTERED_RETRY_MAX)
        ino->retry_after = SCATTERED_RETRY_MAX;
    ino->scattered = 1;
    ino->contiguous_run = 0;
    ino->direct_writes = 0;
    ino->last_write_end = -1;
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_FALLBACKS, t, t);
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_FALLBACK_SCATTERED, t, t);
}

/* A positional write while scattered: 1 to write it straight through, 0
 * to buffer it (and the writes after it) again. */
static int scattered_write(struct buffer_inode *ino, int64_t off, int64_t n)
{
    ino->contiguous_run = off == ino->last_write_end ? ino->contiguous_run + 1 : 0;
    ino->last_write_end = off + n;
    if (ino->contiguous_run >= SCATTERED_RUN)
        ino->retry_after = 0;   /* the pattern changed */
    else if (++ino->direct_writes < ino->retry_after)
        return 1;
    ino->scattered = 0;
    return 0;
}

/* The smallest positional write that goes straight through when it does
 * not continue the write before it: an eighth of the unit (512 KiB of the
 * default 4 MiB), which the file system takes in one request at nearly
 * its full speed. */
#define LONE_WRITE_FLOOR (256 * 1024)

static int64_t lone_write_min(const struct buffer_inode *ino)
{
    int64_t eighth = (int64_t)ino->unit / 8;
    return eighth > LONE_WRITE_FLOOR ? eighth : LONE_WRITE_FLOOR;
}

/* Write n bytes at off (for append: off is the logical end) into ino's
 * window, or straight through. ino->lock held. */
static ssize_t write_locked(struct sluice_file *f, struct buffer_desc *d, struct buffer_inode *ino,
                            const unsigned char *buf, int64_t n, int64_t off, int append)
{
    int64_t done = 0;

    if (!window_empty(&ino->win) && ino->win_append != append)
        flush_sync(ino);   /* positional and appended bytes never share a window */
    /* A large piece that continues no write before it (a box of an N-1
     * checkpoint, a block at a random offset): a window would copy it and
     * write it alone (in two where it crosses a window's edge), and no
     * later write is known to join it. The writes that continue it are
     * buffered again. */
    int continues = ino->positional_end == off + 1;
    if (!append)
        ino->positional_end = off + n + 1;
    if (ino->scattered && !append && scattered_write(ino, off, n))
        return write_direct(f, d, ino, buf, n, off, 0);
    if ((size_t)n >= ino->unit || (!append && !continues && n >= lone_write_min(ino))) {
        /* Already large: one write, after what overlaps it in memory. */
        if (window_overlap(&ino->win, off, n) || append)
            flush_sync(ino);
        else if (ino->inflight && ranges_overlap(off, n, ino->inflight_lo, ino->inflight_hi - ino->inflight_lo))
            wait_inflight(ino);
        ssize_t rc = sluice_tier_write(f, d->level + 1, buf, (size_t)n, append ? SLUICE_OFF_CURRENT : off);
        if (rc > 0) {
            ra_update(ino, buf, off, rc);
            if (off + rc > ino->fs_size)
                ino->fs_size = off + rc;
        }
        return rc;
    }
    while (done < n) {
        struct buffer_window *w = &ino->win;
        int64_t at = off + done;
        if (!window_empty(w) && append && window_end(w) + (n - done) > w->base + (int64_t)w->span) {
            flusher_submit(ino);   /* an appended record is never split between two flushes */
            inode_note_window(ino);
        }
        if (window_empty(w)) {
            window_start(w, at, ino->unit);
            if (append)
                w->base = at;
            w->streaming = ino->streaming;
            ino->win_append = append;
        }
        int64_t k = window_add(w, buf + done, at, n - done, budget_reserve);
        if (k == -E2BIG && !append && w->adds < 2 * w->next) {
            become_scattered(f, ino);
            /* written here and now: the writes after it go straight through anyway */
            ssize_t rc = write_direct(f, d, ino, buf + done, n - done, at, 0);
            if (rc < 0)
                return done ? done : rc;
            done += rc;
            break;
        }
        if (k == 0 || k == -E2BIG) {
            flusher_submit(ino);
            inode_note_window(ino);
            continue;
        }
        if (k == -ENOMEM) {
            if (relieve_pressure(ino, (int64_t)ino->unit))
                continue;
            if (!(d->counted & BUFFER_FALLBACK_MEMORY)) {
                d->counted |= BUFFER_FALLBACK_MEMORY;   /* counted once; later writes try again */
                count_fallback(f, BUFFER_FALLBACK_MEMORY);
            }
            ssize_t rc = write_direct(f, d, ino, buf + done, n - done, at, append);
            if (rc < 0)
                return done ? done : rc;
            done += rc;
            break;
        }
        if (!ino->win_file) {
            atomic_fetch_add(&f->refs, 1);
            ino->win_file = f;
            ino->win_level = d->level;
        }
        done += k;
        if (window_full(w) || (append && window_end(w) == w->base + (int64_t)w->span)) {
            ino->streaming = 1;
            flusher_submit(ino);
            inode_note_window(ino);
        }
    }
    inode_note_window(ino);
    ra_update(ino, buf, off, done);
    ino->last_use = inode_tick();
    return done;
}

/* ------------------------------------------------------------ reads */

/* Read-ahead grows as the kernel's does: nothing until a descriptor reads
 * where its last read ended, then a window of 4 requests (at least 16 KiB)
 * that doubles with each fill up to --readahead, and starts over after a
 * seek. A program that reads a header and jumps, or reads at random, pays
 * for no bytes it does not ask for; a long sequential run soon reads in
 * --readahead pieces. */
#define RA_FIRST_MIN (16 * 1024)
#define RA_ALIGN 4096

/* The next window for a sequential read of `want` bytes; 0: read directly
 * (the window would be no larger than the request). */
static int64_t ra_next_window(const struct buffer_desc *d, int64_t want)
{
    int64_t w = d->ra_window ? 2 * d->ra_window : (4 * want > RA_FIRST_MIN ? 4 * want : RA_FIRST_MIN);

    if (w > readahead_size)
        w = readahead_size;
    return w > want ? w : 0;
}

/* Room for `len` cached bytes, within the memory budget. 0, or -ENOMEM. */
static int ra_reserve(struct buffer_inode *ino, int64_t len)
{
    if ((int64_t)ino->ra_cap >= len)
        return 0;
    if (budget_reserve(len - (int64_t)ino->ra_cap) != 0)
        return -ENOMEM;
    unsigned char *p = realloc(ino->ra, (size_t)len);
    if (!p) {
        budget_reserve((int64_t)ino->ra_cap - len);
        return -ENOMEM;
    }
    ino->ra = p;
    ino->ra_cap = (size_t)len;
    return 0;
}

/* Fill the read-ahead cache with up to `len` of the file's bytes from `at`
 * (the end aligned, so the next fill starts aligned). 0, or -errno. */
static int ra_fill(struct sluice_file *f, struct buffer_desc *d, struct buffer_inode *ino, int64_t at, int64_t len,
                   int64_t want)
{
    int64_t end = (at + len) / RA_ALIGN * RA_ALIGN, got = 0;

    if (end > at + want)
        len = end - at;
    if (ra_reserve(ino, len) != 0)
        return -ENOMEM;
    if (ino->inflight && ranges_overlap(at, len, ino->inflight_lo, ino->inflight_hi - ino->inflight_lo))
        wait_inflight(ino);
    ino->ra_len = 0;
    while (got < len) {
        ssize_t rc = sluice_tier_read(f, d->level + 1, ino->ra + got, (size_t)(len - got), at + got);
        if (rc == -EINTR)
            continue;
        if (rc < 0)
            return (int)rc;
        got += rc;
        /* A short read of a regular file is its end (fs_size may be stale:
         * another process can have written since). */
        if (rc == 0 || rc < len - (got - rc))
            break;
    }
    ino->ra_off = at;
    ino->ra_len = got;
    /* Bytes still in the window are newer than the file system's. */
    window_copy_out(&ino->win, ino->ra, at, got);
    return 0;
}

static ssize_t read_locked(struct sluice_file *f, struct buffer_desc *d, struct buffer_inode *ino,
                           unsigned char *buf, int64_t n, int64_t off)
{
    int64_t total = 0;

    if (n <= 0)
        return 0;
    if (!window_empty(&ino->win)) {
        int ov = ino->win_append ? 2 : window_overlap(&ino->win, off, n);
        if (ov == 1) {
            window_copy_out(&ino->win, buf, off, n);
            return n;
        }
        if (ov == 2)
            flush_sync(ino);
    }
    /* Bytes past the file system's end may be buffered (or a hole before
     * buffered bytes): let the file system hold them all first. After a
     * lock the end is not known: ask before taking the read for a hole. */
    if (ino->fs_size_stale && pending_end(ino) > ino->fs_size && off + n > ino->fs_size) {
        struct stat st;
        if (sluice_tier_fstat(f, d->level + 1, &st) == 0) {
            note_fs_size(ino, st.st_size);
            ino->fs_size_stale = 0;
        }
    }
    if (pending_end(ino) > ino->fs_size && off + n > ino->fs_size)
        flush_sync(ino);
    if (ino->inflight && ranges_overlap(off, n, ino->inflight_lo, ino->inflight_hi - ino->inflight_lo))
        wait_inflight(ino);

    while (total < n) {
        int64_t at = off + total, want = n - total;
        if (ino->ra_len && at >= ino->ra_off && at < ino->ra_off + ino->ra_len) {
            int64_t k = ino->ra_off + ino->ra_len - at;
            if (k > want)
                k = want;
            memcpy(buf + total, ino->ra + (at - ino->ra_off), (size_t)k);
            total += k;
            continue;
        }
        if (at != d->last_read_end && total == 0)
            d->ra_window = 0;   /* a seek: start over */
        else if (readahead_size > 0 && !(d->eof_seen >= 0 && at >= d->eof_seen)) {
            int64_t w = ra_next_window(d, want);
            if (w > 0 && ra_fill(f, d, ino, at, w, want) == 0) {
                if (ino->ra_off + ino->ra_len < at + w) {
                    d->eof_seen = ino->ra_off + ino->ra_len;   /* the fill met the end: no larger one */
                } else {
                    d->ra_window = w;
                }
                if (!(at >= ino->ra_off && at < ino->ra_off + ino->ra_len))
                    break;   /* end of file */
                continue;
            }
        }
        /* (past an end a fill met, reads go as asked, as plain's: one that
         * finds the file grown lets read-ahead start again) */
        ssize_t rc = sluice_tier_read(f, d->level + 1, buf + total, (size_t)want, at);
        if (rc < 0)
            return total ? total : rc;
        if (rc > 0 && d->eof_seen >= 0 && at >= d->eof_seen)
            d->eof_seen = -1;
        total += rc;
        break;
    }
    return total;
}

/* ------------------------------------------------------------ straight through */

/* A call on a description that is not buffered: what the file holds in
 * memory reaches the file system first, and the cache forgets. */
static void pass_prepare(struct buffer_desc *d)
{
    struct buffer_inode *ino = d->ino;

    if (!ino)
        return;
    pthread_mutex_lock(&ino->lock);
    if (has_pending(ino))
        flush_sync(ino);
    ino->ra_len = 0;
    pthread_mutex_unlock(&ino->lock);
}

/* After a current-position transfer below: the kernel's position is ours.
 * (Asked of the kernel: another process may share it. The file system
 * saw this seek: an fs-side one, as strace counts it.) */
static void pass_track_position(struct sluice_file *f, ssize_t rc, off_t off)
{
    if (rc < 0 || off >= 0)
        return;
    uint64_t t0 = sluice_now();
    off_t pos = SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR);
    if (pos >= 0)
        sluice_count_meta(f->rec, SLUICE_SIDES_FS, POSIX_SEEKS, t0, sluice_now());
    atomic_store(&f->pos, pos >= 0 ? (int64_t)pos : atomic_load(&f->pos) + rc);
}

/* After a write below on a description that is not buffered. */
static void pass_wrote(struct sluice_file *f, struct buffer_desc *d, ssize_t rc, off_t off)
{
    pass_track_position(f, rc, off);
    /* (an O_APPEND write lands at the end whatever off says: the next
     * fstat will tell) */
    if (rc > 0 && d->ino && !(f->flags & O_APPEND)) {
        int64_t end = off >= 0 ? off + rc : atomic_load(&f->pos);
        pthread_mutex_lock(&d->ino->lock);
        if (end > d->ino->fs_size)
            d->ino->fs_size = end;
        pthread_mutex_unlock(&d->ino->lock);
    }
}

/* ------------------------------------------------------------ tier operations */

/* Which file fd is (device, inode, type, block size), from the client's
 * cached inode: statx with AT_STATX_DONT_SYNC and no size asks nothing of
 * a network file system (no attribute request, no Lustre glimpse; the
 * MooseFS testbed's client sees no request either), so keying the
 * per-inode state costs the file system nothing and is not counted. */
static int file_identity(int fd, struct stat *st)
{
    struct statx stx;

    if (SLUICE_REAL(statx)(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx) != 0 ||
        (stx.stx_mask & (STATX_TYPE | STATX_INO)) != (STATX_TYPE | STATX_INO))
        return -1;
    memset(st, 0, sizeof *st);
    st->st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    st->st_ino = stx.stx_ino;
    st->st_mode = stx.stx_mode;
    st->st_blksize = stx.stx_blksize;
    return 0;
}

/* d's state for f->fd, a descriptor opened with `flags` (by buffer_open,
 * or inherited); a file that is not regular goes straight through. */
static void desc_setup(struct sluice_file *f, int level, int flags)
{
    struct buffer_desc *d = desc_of(f, level);
    struct stat st;

    d->file = f;
    d->level = level;
    d->ino = NULL;
    d->last_read_end = -1;   /* the first read is never sequential */
    d->ra_window = 0;
    d->eof_seen = -1;
    if ((flags & O_PATH) || file_identity(f->fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;   /* not a regular file: straight through */
    if (!inode_attach(st.st_dev, st.st_ino, buffer_unit(f->fd, &st, sluice_cfg.buffer_size, f->rec), d))
        return;
    struct buffer_inode *ino = d->ino;
    pthread_mutex_lock(&ino->lock);
    if (!has_pending(ino)) {
        /* Emptied by this open: the size is known. Otherwise it is asked
         * for when first needed (an append, a read past what we know). */
        ino->fs_size = 0;
        ino->fs_size_stale = !(flags & O_TRUNC);
    }
    ino->ra_len = 0;   /* close-to-open: another process may have written since */
    if (flags & O_DIRECT) {
        flush_sync(ino);
        if (!(ino->fallback & BUFFER_FALLBACK_DIRECT))
            count_fallback(f, BUFFER_FALLBACK_DIRECT);
        ino->fallback |= BUFFER_FALLBACK_DIRECT;
    } else if (flags & (O_SYNC | O_DSYNC)) {
        d->fallback |= BUFFER_FALLBACK_DIRECT;
        count_fallback(f, BUFFER_FALLBACK_DIRECT);
    }
    pthread_mutex_unlock(&ino->lock);
}

static int buffer_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode)
{
    int fd;

    /* A truncating open must come after every byte we still hold for the
     * file: find out which file the path names (one stat, only when some
     * bytes are held at all) and write its bytes first. */
    if ((flags & O_TRUNC) && (inode_dirty_windows() > 0 || flusher_jobs_pending() > 0)) {
        struct stat pre;
        uint64_t t0 = sluice_now();
        if (SLUICE_REAL(fstatat)(dirfd, path, &pre, 0) == 0) {
            sluice_count_meta(f->rec, SLUICE_SIDES_FS, POSIX_STATS, t0, sluice_now());
            struct buffer_inode *old = inode_find(pre.st_dev, pre.st_ino);
            if (old) {
                pthread_mutex_lock(&old->lock);
                flush_sync(old);
                pthread_mutex_unlock(&old->lock);
                inode_release(old);
            }
        }
    }
    fd = sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    if (fd < 0)
        return fd;
    f->fd = fd;   /* the core sets it after we return; fstat below needs it now */
    desc_setup(f, level, flags);
    return fd;
}

static ssize_t buffer_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int append = (f->flags & O_APPEND) != 0;
    ssize_t rc;

    if (flags || desc_fallback(f, d)) {
        /* RWF_* flags (RWF_DSYNC, RWF_APPEND, ...) ask for this call as it is. */
        pass_prepare(d);
        rc = sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
        pass_wrote(f, d, rc, off);
        return rc;
    }
    if (cnt < 0)
        return -EINVAL;
    if ((f->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    int claim = d->kernel_pos && !append && off < 0;
    int64_t want = 0;
    if (claim) {
        for (int i = 0; i < cnt; i++) {
            if (iov[i].iov_len > (size_t)SSIZE_MAX - (size_t)want)
                return -EINVAL;
            want += (int64_t)iov[i].iov_len;
        }
        if (want == 0)
            return 0;
    }
    pthread_mutex_lock(&ino->lock);
    if ((rc = take_error(ino)) == 0) {
        int64_t at;
        if (claim) {
            /* The kernel's position is shared (the shell, stdio): the
             * bytes' place is claimed there at once, as a write would
             * take it, and the bytes are buffered at it. */
            off_t end = sluice_tier_lseek(f, level + 1, (off_t)want, SEEK_CUR);
            if (end < 0) {
                pthread_mutex_unlock(&ino->lock);
                return end == -EINVAL ? -EFBIG : (ssize_t)end;
            }
            at = (int64_t)end - want;
        } else {
            at = append ? append_offset(f, d, ino) : off >= 0 ? off : atomic_load(&f->pos);
        }
        int64_t total = 0;
        d->wrote = 1;
        for (int i = 0; i < cnt; i++) {
            if (!iov[i].iov_len)
                continue;
            ssize_t r = write_locked(f, d, ino, iov[i].iov_base, (int64_t)iov[i].iov_len, at + total, append);
            if (r < 0) {
                if (!total)
                    rc = r;
                break;
            }
            total += r;
            if ((size_t)r < iov[i].iov_len)
                break;
        }
        if (rc == 0) {
            rc = total;
            /* pwrite on an O_APPEND file appends but moves no position (Linux). */
            if (off < 0)
                atomic_store(&f->pos, at + total);
        }
        if (claim && total < want)   /* a short write or an error: the rest of the claim back */
            (void)sluice_tier_lseek(f, level + 1, (off_t)(at + total), SEEK_SET);
    }
    pthread_mutex_unlock(&ino->lock);
    return rc;
}

static ssize_t buffer_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    ssize_t rc;

    if (flags || desc_fallback(f, d)) {
        pass_prepare(d);
        rc = sluice_tier_readv(f, level + 1, iov, cnt, off, flags);
        pass_track_position(f, rc, off);
        return rc;
    }
    if (d->kernel_pos && off < 0) {
        /* At the shared position: the kernel's read takes its bytes there
         * (after every byte held reached the file system). */
        pass_prepare(d);
        rc = sluice_tier_readv(f, level + 1, iov, cnt, off, 0);
        if (rc > 0)
            atomic_fetch_add(&f->pos, (int64_t)rc);
        return rc;
    }
    if (cnt < 0)
        return -EINVAL;
    if ((f->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    pthread_mutex_lock(&ino->lock);
    if ((rc = take_error(ino)) == 0) {
        int64_t at = off >= 0 ? off : atomic_load(&f->pos);
        int64_t total = 0;
        for (int i = 0; i < cnt; i++) {
            if (!iov[i].iov_len)
                continue;
            ssize_t r = read_locked(f, d, ino, iov[i].iov_base, (int64_t)iov[i].iov_len, at + total);
            if (r < 0) {
                if (!total)
                    rc = r;
                break;
            }
            total += r;
            d->last_read_end = at + total;
            if ((size_t)r < iov[i].iov_len)
                break;
        }
        if (rc == 0) {
            rc = total;
            if (off < 0)
                atomic_store(&f->pos, at + total);
        }
    }
    pthread_mutex_unlock(&ino->lock);
    return rc;
}

/* read and write are readv and writev of one piece. */
static ssize_t buffer_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off)
{
    struct iovec one = {buf, n};
    return buffer_readv(f, level, &one, 1, off, 0);
}

static ssize_t buffer_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    struct iovec one = {(void *)buf, n};
    return buffer_writev(f, level, &one, 1, off, 0);
}

static off_t buffer_lseek(struct sluice_file *f, int level, off_t off, int whence)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int64_t pos;

    if (desc_fallback(f, d) || d->kernel_pos) {
        /* (the kernel's position is the description's: SEEK_END and the
         * holes are the file system's after every byte held reached it) */
        if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE)
            pass_prepare(d);
        off_t rc = sluice_tier_lseek(f, level + 1, off, whence);
        if (rc >= 0)
            atomic_store(&f->pos, (int64_t)rc);
        return rc;
    }
    pthread_mutex_lock(&ino->lock);
    switch (whence) {
    case SEEK_SET:
        pos = off;
        break;
    case SEEK_CUR:
        pos = atomic_load(&f->pos) + off;
        break;
    case SEEK_END: {
        struct stat st;
        int rc = sluice_tier_fstat(f, level + 1, &st);
        if (rc < 0) {
            pthread_mutex_unlock(&ino->lock);
            return rc;
        }
        pos = logical_size(ino, note_fs_size(ino, st.st_size)) + off;
        break;
    }
    case SEEK_DATA:
    case SEEK_HOLE:
        /* Only the file system knows its holes: let it hold every byte. */
        flush_sync(ino);
        pos = sluice_tier_lseek(f, level + 1, off, whence);
        if (pos < 0) {
            pthread_mutex_unlock(&ino->lock);
            return (off_t)pos;
        }
        break;
    default:
        pthread_mutex_unlock(&ino->lock);
        return -EINVAL;
    }
    if (pos < 0) {
        pthread_mutex_unlock(&ino->lock);
        return -EINVAL;
    }
    atomic_store(&f->pos, pos);
    pthread_mutex_unlock(&ino->lock);
    return (off_t)pos;
}

static int buffer_fsync(struct sluice_file *f, int level, int datasync)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int err = 0, rc;

    if (ino) {
        pthread_mutex_lock(&ino->lock);
        flush_sync(ino);
        err = take_error(ino);
        pthread_mutex_unlock(&ino->lock);
    }
    rc = sluice_tier_fsync(f, level + 1, datasync);
    return err ? err : rc;
}

static int buffer_ftruncate(struct sluice_file *f, int level, off_t len)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int rc;

    if (!ino)
        return sluice_tier_ftruncate(f, level + 1, len);
    pthread_mutex_lock(&ino->lock);
    if ((rc = take_error(ino)) == 0) {
        flush_sync(ino);
        rc = sluice_tier_ftruncate(f, level + 1, len);
        if (rc == 0) {
            ino->fs_size = len;
            ino->fs_size_stale = 0;
            if (ino->ra_len && ino->ra_off + ino->ra_len > len)
                ino->ra_len = len > ino->ra_off ? len - ino->ra_off : 0;
        }
    }
    pthread_mutex_unlock(&ino->lock);
    return rc;
}

static int buffer_fstat(struct sluice_file *f, int level, struct stat *st)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int rc = sluice_tier_fstat(f, level + 1, st);

    if (rc == 0 && ino) {
        pthread_mutex_lock(&ino->lock);
        if ((st->st_mode & (S_ISUID | S_ISGID)) && has_pending(ino)) {
            /* The kernel clears set-id bits when the bytes land (a writer
             * without CAP_FSETID): let them land before answering. */
            flush_sync(ino);
            rc = sluice_tier_fstat(f, level + 1, st);
        }
        st->st_size = logical_size(ino, note_fs_size(ino, st->st_size));
        pthread_mutex_unlock(&ino->lock);
    }
    return rc;
}

static int buffer_close(struct sluice_file *f, int level)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    int err = 0, rc;

    if (ino) {
        pthread_mutex_lock(&ino->lock);
        /* close is a durability point: another process that opens the file
         * after it sees every byte (and the window may work through us). A
         * close also drops the program's locks on the file (fcntl's, of any
         * descriptor; flock's, of this description): an unlock. */
        if (d->wrote || ino->win_file == f || ino->locked)
            flush_sync(ino);
        if (d->wrote)
            err = take_error(ino);
        pthread_mutex_unlock(&ino->lock);
        inode_detach(d);
    }
    rc = sluice_tier_close(f, level + 1);
    return err ? err : rc;
}

static int buffer_control(struct sluice_file *f, int level, int op, void *arg)
{
    struct buffer_desc *d = desc_of(f, level);
    struct buffer_inode *ino = d->ino;
    unsigned reason;

    if (op == SLUICE_CTL_QUIET) {
        /* flush jobs write through their window's description: wait for
         * every job of this file (the simple, sufficient condition) */
        if (ino) {
            pthread_mutex_lock(&ino->lock);
            wait_inflight(ino);
            pthread_mutex_unlock(&ino->lock);
        }
        return sluice_tier_control(f, level + 1, op, arg);
    }
    if (op == SLUICE_CTL_SYNC) {
        if (ino) {
            pthread_mutex_lock(&ino->lock);
            flush_sync(ino);
            ino->ra_len = 0;
            pthread_mutex_unlock(&ino->lock);
        }
        return sluice_tier_control(f, level + 1, op, arg);
    }
    if (op == SLUICE_CTL_LOCKED) {
        /* The previous holder of the lock may have written, truncated or
         * extended the file: forget cached bytes and the size learnt
         * before (what we wrote since is counted again as it lands). */
        if (ino) {
            pthread_mutex_lock(&ino->lock);
            ino->ra_len = 0;
            ino->fs_size = 0;
            ino->fs_size_stale = 1;
            ino->locked = 1;
            pthread_mutex_unlock(&ino->lock);
        }
        return sluice_tier_control(f, level + 1, op, arg);
    }
    if (op == SLUICE_CTL_ADOPT) {
        desc_setup(f, level, f->flags);
        d->kernel_pos = 1;
        ino = d->ino;
        if (ino && (f->flags & O_APPEND)) {
            /* Appends of whoever shares the description (the shell, a
             * stream's writes no wrapper sees) would land before ours. */
            pthread_mutex_lock(&ino->lock);
            d->fallback |= BUFFER_FALLBACK_SHARED;
            count_fallback(f, BUFFER_FALLBACK_SHARED);
            pthread_mutex_unlock(&ino->lock);
        }
        return 0;
    }
    if (op == SLUICE_CTL_KERNEL_POSITION) {
        if (!ino || d->kernel_pos)
            return 0;
        if (!(f->flags & O_APPEND)) {
            pthread_mutex_lock(&ino->lock);
            if (!desc_fallback(f, d))
                desc_sync_position(d);   /* where the application's is, once */
            d->kernel_pos = 1;
            pthread_mutex_unlock(&ino->lock);
            return 0;
        }
        /* O_APPEND: the unseen writer's appends would land before ours */
        reason = SLUICE_FALLBACK_SHARED;
        arg = &reason;
        op = SLUICE_CTL_FALLBACK;
    }
    if (op != SLUICE_CTL_FALLBACK)
        return sluice_tier_control(f, level + 1, op, arg);
    reason = *(const unsigned *)arg;
    if (!ino)
        return 0;
    pthread_mutex_lock(&ino->lock);
    flush_sync(ino);
    ino->ra_len = 0;
    if (reason & (BUFFER_FALLBACK_MMAP | BUFFER_FALLBACK_DIRECT | SLUICE_FALLBACK_KERNEL)) {
        /* The whole file: every description of it goes straight through.
         * Positions move to the kernel once: after that the kernel keeps
         * them (a second request must not put back a stale one). */
        if ((ino->fallback & reason) != reason)
            count_fallback(f, reason & ~ino->fallback);
        /* (not a description shared with a forked process: the kernel's
         * position is already the truth, and the child may have moved it) */
        if (!ino->fallback)
            for (struct buffer_desc *o = ino->descs; o; o = o->next)
                if (!desc_fallback(o->file, o))
                    desc_sync_position(o);
        ino->fallback |= reason;
    } else {
        unsigned had = desc_fallback(f, d);   /* (forked: SHARED, counted, now) */
        if ((d->fallback & reason) != reason)
            count_fallback(f, reason & ~d->fallback);
        if (!had)
            desc_sync_position(d);
        d->fallback |= reason;
    }
    pthread_mutex_unlock(&ino->lock);
    return 0;
}

/* ------------------------------------------------------------ metadata */

/* A change of the file's metadata comes after every byte written before it
 * (a later flush would move its times or clear its set-id bits). */
static int buffer_quiesce(unsigned why);

static void sync_first(struct sluice_file *f, int level)
{
    (void)buffer_control(f, level, SLUICE_CTL_SYNC, NULL);
}

static int buffer_fchmod(struct sluice_file *f, int level, mode_t mode)
{
    sync_first(f, level);
    return sluice_tier_fchmod(f, level + 1, mode);
}

static int buffer_fchown(struct sluice_file *f, int level, uid_t uid, gid_t gid)
{
    sync_first(f, level);
    return sluice_tier_fchown(f, level + 1, uid, gid);
}

static int buffer_futimens(struct sluice_file *f, int level, const struct timespec times[2])
{
    sync_first(f, level);
    return sluice_tier_futimens(f, level + 1, times);
}

static ssize_t buffer_fxattr(struct sluice_file *f, int level, const struct sluice_xattr *x)
{
    if (x->op == SLUICE_XATTR_SET || x->op == SLUICE_XATTR_REMOVE)
        sync_first(f, level);
    return sluice_tier_fxattr(f, level + 1, x);
}

/* The kernel changes the bytes (holes, ranges, preallocation): the file
 * goes straight through from here on. What this process knew of its size
 * is void: FALLOC_FL_COLLAPSE_RANGE shrinks it and FALLOC_FL_INSERT_RANGE
 * moves its end, neither a write nor a truncate (a size kept as "at least
 * what we wrote" would outlive the collapse); the next stat learns it. */
static int buffer_fallocate(struct sluice_file *f, int level, int mode, off_t off, off_t len)
{
    struct buffer_inode *ino = desc_of(f, level)->ino;
    unsigned reason = SLUICE_FALLBACK_KERNEL;

    (void)buffer_control(f, level, SLUICE_CTL_FALLBACK, &reason);
    int rc = sluice_tier_fallocate(f, level + 1, mode, off, len);
    if (rc == 0 && ino) {
        pthread_mutex_lock(&ino->lock);
        ino->fs_size = 0;
        ino->fs_size_stale = 1;
        ino->ra_len = 0;
        pthread_mutex_unlock(&ino->lock);
    }
    return rc;
}

/* Path calls: the sizes this process knows, and its bytes first. */
typedef const struct sluice_stack cstack;
typedef const struct sluice_path cpath;

static int buffer_path_stat(cstack *s, int level, cpath *p, struct stat *st, int flags)
{
    int rc = sluice_tier_path_stat(s, level + 1, p, st, flags);
    if (rc == 0 && buffer_active() && S_ISREG(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) &&
        buffer_sync_inode(st->st_dev, st->st_ino))
        rc = sluice_tier_path_stat(s, level + 1, p, st, flags);   /* set-id bits as they are after the bytes land */
    if (rc == 0 && buffer_active()) {
        int64_t size = st->st_size;
        buffer_stat_fixup(st->st_dev, st->st_ino, &size);
        st->st_size = size;
    }
    return rc;
}

static int buffer_path_statx(cstack *s, int level, cpath *p, int flags, unsigned mask, struct statx *stx)
{
    int rc = sluice_tier_path_statx(s, level + 1, p, flags, mask, stx);
    if (rc == 0 && buffer_active() && (stx->stx_mask & STATX_SIZE) && (stx->stx_mask & STATX_INO)) {
        int64_t size = (int64_t)stx->stx_size;
        buffer_stat_fixup(makedev(stx->stx_dev_major, stx->stx_dev_minor), stx->stx_ino, &size);
        stx->stx_size = (uint64_t)size;
    }
    return rc;
}

/* truncate(path) of a file this process buffers: every buffered byte
 * first (they were written before the call), then what it knows of the
 * file's size and contents changes with it. */
static int buffer_path_truncate(cstack *s, int level, cpath *p, off_t len)
{
    struct stat st;
    int active = buffer_active();

    if (active)
        (void)buffer_quiesce(SLUICE_QUIESCE_END);
    int rc = sluice_tier_path_truncate(s, level + 1, p, len);
    if (rc == 0 && active && sluice_tier_path_stat(s, level + 1, p, &st, 0) == 0)
        buffer_path_truncated(st.st_dev, st.st_ino, len);
    return rc;
}

static void quiesce_if_active(void)
{
    if (buffer_active())
        (void)buffer_quiesce(SLUICE_QUIESCE_END);
}

static int buffer_path_chmod(cstack *s, int level, cpath *p, mode_t mode, int flags)
{
    quiesce_if_active();
    return sluice_tier_path_chmod(s, level + 1, p, mode, flags);
}

static int buffer_path_chown(cstack *s, int level, cpath *p, uid_t uid, gid_t gid, int flags)
{
    quiesce_if_active();
    return sluice_tier_path_chown(s, level + 1, p, uid, gid, flags);
}

static int buffer_path_utimens(cstack *s, int level, cpath *p, const struct timespec times[2], int flags)
{
    quiesce_if_active();
    return sluice_tier_path_utimens(s, level + 1, p, times, flags);
}

static ssize_t buffer_path_xattr(cstack *s, int level, cpath *p, const struct sluice_xattr *x)
{
    if (x->op == SLUICE_XATTR_SET || x->op == SLUICE_XATTR_REMOVE)
        quiesce_if_active();
    return sluice_tier_path_xattr(s, level + 1, p, x);
}

/* ------------------------------------------------------------ whole process */

static void quiesce_one(struct buffer_inode *ino, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ino->lock);
    flush_sync(ino);
    for (struct buffer_desc *d = ino->descs; d; d = d->next)
        if (!desc_fallback(d->file, d))
            desc_sync_position(d);
    pthread_mutex_unlock(&ino->lock);
}

/* Signal context: nothing that may be locked is waited for. */
static void quiesce_one_from_signal(struct buffer_inode *ino, void *arg)
{
    int64_t end;

    (void)arg;
    if (pthread_mutex_trylock(&ino->lock) != 0)
        return;
    if (!window_empty(&ino->win) && ino->inflight == 0 && ino->win_file) {
        (void)flush_window(ino->win_file, ino->win_level, &ino->win, ino->win_append, &end, 1);
        ino->win.next = 0;
        inode_note_window(ino);
    }
    for (struct buffer_desc *d = ino->descs; d; d = d->next)
        if (!d->fallback && !ino->fallback)
            desc_sync_position(d);
    pthread_mutex_unlock(&ino->lock);
}

static int buffer_quiesce(unsigned why)
{
    if (inode_count() == 0)
        return 0;
    if (why & SLUICE_QUIESCE_SIGNAL) {
        (void)flusher_drain(10000);
        return inode_for_each(quiesce_one_from_signal, NULL, 1);
    }
    return inode_for_each(quiesce_one, NULL, 0);
}

int sluice_tier_quiesce_buffers(void)
{
    return buffer_quiesce(SLUICE_QUIESCE_END);
}

static void *buffer_stream_alloc(size_t *size)
{
    int64_t n = sluice_cfg.buffer_size;
    void *p;

    if (n <= BUFSIZ || budget_reserve(n) != 0)
        return NULL;
    if (!(p = malloc((size_t)n))) {
        budget_reserve(-n);
        return NULL;
    }
    *size = (size_t)n;
    return p;
}

static void buffer_stream_free(void *buf, size_t size)
{
    free(buf);
    budget_reserve(-(int64_t)size);
}

int buffer_active(void)
{
    return inode_count() > 0;
}

/* No file buffered: stat sizes need no fixing and nothing needs writing
 * before a metadata change, so path calls can skip resolving first. */
static int buffer_path_idle(void)
{
    return !buffer_active();
}

static void buffer_after_fork_child(void)
{
    budget_after_fork_child();
    flusher_after_fork_child();
    inode_after_fork_child();
}

/* ------------------------------------------------------------ path operations */

void buffer_stat_fixup(dev_t dev, ino_t ino_nr, int64_t *size)
{
    struct buffer_inode *ino = inode_find(dev, ino_nr);

    if (!ino)
        return;
    pthread_mutex_lock(&ino->lock);
    /* (not below what this process knows it wrote: a flush that ended
     * between the kernel's answer and now is in neither) */
    *size = logical_size(ino, note_fs_size(ino, *size));
    pthread_mutex_unlock(&ino->lock);
    inode_release(ino);
}

/* Every buffered byte of (dev, ino) written; 1 if there were any. */
int buffer_sync_inode(dev_t dev, ino_t ino_nr)
{
    struct buffer_inode *ino = inode_find(dev, ino_nr);
    int had;

    if (!ino)
        return 0;
    pthread_mutex_lock(&ino->lock);
    had = has_pending(ino);
    if (had)
        flush_sync(ino);
    pthread_mutex_unlock(&ino->lock);
    inode_release(ino);
    return had;
}

void buffer_path_truncated(dev_t dev, ino_t ino_nr, int64_t len)
{
    struct buffer_inode *ino = inode_find(dev, ino_nr);

    if (!ino)
        return;
    pthread_mutex_lock(&ino->lock);
    ino->fs_size = len;
    ino->fs_size_stale = 0;
    ino->ra_len = 0;
    pthread_mutex_unlock(&ino->lock);
    inode_release(ino);
}

const struct sluice_tier_ops sluice_tier_buffer = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "buffer",
    .caps = SLUICE_TIER_BUFFERS_WRITES | SLUICE_TIER_OWNS_POSITION,
    .file_state = sizeof(struct buffer_desc),
    .init = buffer_init,
    .open = buffer_open,
    .read = buffer_read,
    .write = buffer_write,
    .readv = buffer_readv,
    .writev = buffer_writev,
    .lseek = buffer_lseek,
    .fsync = buffer_fsync,
    .ftruncate = buffer_ftruncate,
    .fstat = buffer_fstat,
    .close = buffer_close,
    .control = buffer_control,
    .fchmod = buffer_fchmod,
    .fchown = buffer_fchown,
    .futimens = buffer_futimens,
    .fallocate = buffer_fallocate,
    .fxattr = buffer_fxattr,
    .path_stat = buffer_path_stat,
    .path_statx = buffer_path_statx,
    .path_truncate = buffer_path_truncate,
    .path_chmod = buffer_path_chmod,
    .path_chown = buffer_path_chown,
    .path_utimens = buffer_path_utimens,
    .path_xattr = buffer_path_xattr,
    .stream_buffer = buffer_stream_alloc,
    .stream_buffer_free = buffer_stream_free,
    .quiesce = buffer_quiesce,
    .after_fork_child = buffer_after_fork_child,
    .path_idle = buffer_path_idle,
};
