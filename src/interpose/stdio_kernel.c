/* The system calls behind a stdio call, from the stream's buffer pointers;
 * see stdio_kernel.h. */
#include "interpose/stdio_kernel.h"

#include "core/counters.h"
#include "core/file.h"

/* glibc's stream flags (libio.h; their values are part of the ABI that
 * the stdio macros of old binaries compiled in). */
#define STREAM_EOF_SEEN 0x0010
#define STREAM_LINE_BUF 0x0200
#define STREAM_PUTTING 0x0800
#define STREAM_APPENDING 0x1000

/* Bytes written into the buffer and not yet to the kernel. */
static int64_t pending_writes(const struct stream_snap *s)
{
    return s->wptr > s->wbase ? s->wptr - s->wbase : 0;
}

/* Bytes the kernel gave the buffer that the program has not read yet. */
static int64_t unread(const struct stream_snap *s)
{
    return !(s->flags & STREAM_PUTTING) && s->rend > s->rptr ? s->rend - s->rptr : 0;
}

/* Room left in the write buffer before the call (a line-buffered stream
 * may fill the whole buffer before it flushes). */
static int64_t write_room(const struct stream_snap *s)
{
    const char *end = (s->flags & (STREAM_LINE_BUF | STREAM_PUTTING)) == (STREAM_LINE_BUF | STREAM_PUTTING)
                          ? s->buf_end : s->wend;
    return end > s->wptr ? end - s->wptr : 0;
}

int stream_open_kernel_silent(FILE *fp)
{
    struct stream_snap now;

    stream_snap_take(fp, &now);
    return !(now.flags & STREAM_APPENDING) && now.offset < 0 && pending_writes(&now) == 0;
}

int stream_reaches_fs(int fd)
{
    struct sluice_file *f = fd >= 0 ? sluice_fd_get(fd) : NULL;
    int local = 0;

    if (f) {
        local = f->depth > 1 && sluice_tier_control(f, 0, SLUICE_CTL_NODE_LOCAL, NULL) == 1;
        sluice_file_put(f);
    }
    return !local;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

void stream_kernel_count(struct sluice_stream *s, FILE *fp, const struct stream_snap *before, int64_t app_wrote,
                         int64_t app_read, enum stream_kernel_call call, uint64_t t0, uint64_t t1)
{
    struct stream_snap after = {0};
    struct sluice_record *r = s->rec;
    int64_t pend0 = pending_writes(before), wrote, got = 0;
    int64_t read_sizes[3];   /* the read calls, in order */
    int reads = 0, seeks = 0;

    if (fp)
        stream_snap_take(fp, &after);
    else
        after.offset = -1;

    /* Writes: what left the buffer. glibc flushes the full buffer once,
     * then writes whole blocks of what is left straight from the caller's
     * memory: at most two write calls per stdio call. */
    wrote = pend0 + app_wrote - (fp ? pending_writes(&after) : 0);

    switch (call) {
    case STREAM_K_IO: {
        got = app_read - unread(before) + unread(&after);
        /* A refill leaves its bytes in the buffer; what else came from the
         * kernel came straight into the caller's memory, in one call
         * before it. */
        int64_t fill = after.rend > after.buf_base ? after.rend - after.buf_base : 0;
        if (got > fill)
            read_sizes[reads++] = got - fill;
        if (fill > 0 && got >= fill)
            read_sizes[reads++] = fill;
        if (got > 0 && reads == 0)
            read_sizes[reads++] = got;
        /* the end of the file, met now: one more read, of nothing */
        if ((after.flags & STREAM_EOF_SEEN) && !(before->flags & STREAM_EOF_SEEN))
            read_sizes[reads++] = 0;
        if (got < 0)
            got = 0;
        break;
    }
    case STREAM_K_SEEK:
        seeks = 1;
        /* a seek to the middle of a block reads that block */
        if (after.rend > after.buf_base && (after.rend != before->rend || after.offset != before->offset)) {
            got = after.rend - after.buf_base;
            read_sizes[reads++] = got;
        }
        break;
    case STREAM_K_TELL:
        seeks = before->offset < 0 || ((before->flags & STREAM_APPENDING) && pend0 > 0);
        break;
    case STREAM_K_OPEN:
        seeks = (after.flags & STREAM_APPENDING) != 0;
        break;
    case STREAM_K_CLOSE:
        break;
    }

    /* Where the kernel's position was: the stream's own idea when it has
     * one, else ours. Writes (a flush) come before reads. */
    int64_t base = before->offset >= 0 ? before->offset : atomic_load_explicit(&s->kernel_pos, memory_order_relaxed);
    if ((before->flags & STREAM_APPENDING) && wrote > 0)
        base = -1;
    int64_t now = fp && after.offset >= 0 ? after.offset : base >= 0 ? base + (wrote > 0 ? wrote : 0) + got : -1;
    if (call == STREAM_K_SEEK)
        base = now >= 0 ? now - got : -1;   /* the refill starts where the seek went */
    atomic_store_explicit(&s->kernel_pos, now, memory_order_relaxed);   /* (as s->pos: no locked store per call) */

    if ((wrote <= 0 && reads == 0 && seeks == 0) || !stream_reaches_fs(before->fd))
        return;
    if (wrote > 0) {
        int64_t flush = min64(wrote, pend0 + min64(write_room(before), app_wrote));
        if (flush > 0)
            sluice_count_rw(r, SLUICE_SIDES_FS, SLUICE_WRITE, base, flush, t0, t1);
        if (wrote > flush)
            sluice_count_rw(r, SLUICE_SIDES_FS, SLUICE_WRITE, base >= 0 ? base + flush : -1, wrote - flush, t0, t1);
    }
    int64_t at = base >= 0 && call != STREAM_K_SEEK ? base + (wrote > 0 ? wrote : 0) : base;
    for (int i = 0; i < reads; i++) {
        sluice_count_rw(r, SLUICE_SIDES_FS, SLUICE_READ, read_sizes[i] > 0 ? at : -1, read_sizes[i], t0, t1);
        if (at >= 0)
            at += read_sizes[i];
    }
    if (seeks > 0)
        sluice_count_meta(r, SLUICE_SIDES_FS, STDIO_SEEKS, t0, t1);
}

static void stream_flush_at_exit(struct sluice_stream *s, void *arg)
{
    struct stream_snap before;
    FILE *fp = s->fp;

    (void)arg;
    if (!fp)
        return;
    stream_snap_take(fp, &before);
    if (pending_writes(&before) == 0)
        return;   /* exit() flushes only streams holding written bytes */
    uint64_t t0 = sluice_now();
    (void)fflush_unlocked(fp);   /* unlocked, as exit() does: a thread may hold the lock */
    stream_kernel_count(s, fp, &before, 0, 0, STREAM_K_IO, t0, sluice_now());
}

void stream_flush_all_at_exit(void)
{
    sluice_streams_each(stream_flush_at_exit, NULL);
}
