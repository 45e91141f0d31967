/*
 * What the C library sent to the kernel for a stream (the STDIO module's fs
 * side). glibc's stdio calls write, read and lseek through internal aliases
 * that no wrapper sees, so the system calls are read off the stream's
 * buffer pointers before and after each stdio call: struct _IO_FILE is
 * public ABI (gnulib's freadptr and fpurge read the same fields). Bytes are
 * exact; calls are exact for what glibc does in one stdio call on a regular
 * file (flush the buffer, write or read whole blocks past it, refill it,
 * meet the end of the file); a short read or write before the end of the
 * file, which regular files do not give, would be counted as one call.
 * docs/counters.md says the same for users.
 */
#ifndef SLUICE_INTERPOSE_STDIO_KERNEL_H
#define SLUICE_INTERPOSE_STDIO_KERNEL_H

#include <stdint.h>
#include <stdio.h>

#include "core/stream.h"

/* A stream's buffer state at one moment. */
struct stream_snap {
    int flags;
    int fd;
    const char *rptr, *rend;            /* unread bytes of the read buffer */
    const char *wbase, *wptr, *wend;    /* bytes written to the buffer, not yet to the kernel; room */
    const char *buf_base, *buf_end;
    int64_t offset;                     /* the kernel's file position as the stream knows it; -1: unknown */
};

static inline void stream_snap_take(FILE *fp, struct stream_snap *s)
{
    s->flags = fp->_flags;
    s->fd = fp->_fileno;
    s->rptr = fp->_IO_read_ptr;
    s->rend = fp->_IO_read_end;
    s->wbase = fp->_IO_write_base;
    s->wptr = fp->_IO_write_ptr;
    s->wend = fp->_IO_write_end;
    s->buf_base = fp->_IO_buf_base;
    s->buf_end = fp->_IO_buf_end;
    s->offset = (int64_t)fp->_offset;
}

/* What the call did besides moving bytes through the buffer. */
enum stream_kernel_call {
    STREAM_K_IO = 0,     /* a read, write or flush */
    STREAM_K_SEEK = 1,   /* fseek, fseeko, rewind: one lseek, and maybe a refill */
    STREAM_K_TELL = 2,   /* ftell: an lseek only when the stream lost track of the position */
    STREAM_K_CLOSE = 3,  /* fclose: the stream is gone after (what it held is written) */
    STREAM_K_OPEN = 4,   /* after fopen/freopen: glibc seeks to the end of an "a" stream */
};

/* Right after fopen or freopen: 1 when stream_kernel_count(STREAM_K_OPEN)
 * would count nothing and leave the tracked positions as they are (the
 * stream holds no bytes, did not seek to the end and knows no position),
 * so the stream's entry need not be looked up for it. */
int stream_open_kernel_silent(FILE *fp);

/* 1 when the kernel calls on descriptor fd reach the file system, 0 when
 * it names a tier's copy of the file on this node. */
int stream_reaches_fs(int fd);

/* Count on s's record, fs side, the system calls the C library made during
 * one stdio call on fp (NULL after fclose): `before` was taken right
 * before it; app_wrote / app_read: the bytes the call took from or gave to
 * the program. t0, t1: the call's start and end. Nothing is counted when
 * the stream's descriptor names a copy on a node-local tier (stage mode):
 * the file system saw none of it. */
void stream_kernel_count(struct sluice_stream *s, FILE *fp, const struct stream_snap *before, int64_t app_wrote,
                         int64_t app_read, enum stream_kernel_call call, uint64_t t0, uint64_t t1);

/* exit(): the C library writes what streams still hold only after the
 * destructors ran: too late for the log and, in stage mode, after the tier
 * published the file (those bytes were lost). Recorded streams holding
 * written bytes are flushed first, as exit() itself would, and counted.
 * Not at exec, _exit or a fatal signal: they drop the bytes, plain too. */
void stream_flush_all_at_exit(void);

#endif
