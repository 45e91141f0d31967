/*
 * stdio streams sluice records: FILE* -> record, with the stream position
 * as far as the counters need it. glibc's stdio reaches the kernel through
 * internal calls no write() wrapper sees, so streams are recorded at the
 * stdio layer (the STDIO module), as Darshan does.
 */
#ifndef SLUICE_CORE_STREAM_H
#define SLUICE_CORE_STREAM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "core/record.h"

struct sluice_stream {
    FILE *fp;                        /* the stream; NULL while on the free list */
    struct sluice_record *rec;       /* its STDIO record */
    _Atomic int64_t pos;             /* position the counters track; -1: unknown */
    _Atomic int64_t kernel_pos;      /* the descriptor's position as the fs side tracks it; -1: unknown */
    void *buf;                       /* buffer mode: the stream buffer we gave glibc (freed after fclose) */
    size_t buf_size;
    struct sluice_stream *next;      /* hash chain or free list */
};

/* The stream's entry, or NULL when it is not recorded. Entries are
 * recycled, never freed, so the pointer stays valid memory. */
struct sluice_stream *sluice_stream_get(FILE *fp);

/* Start recording fp (after a successful fopen/fdopen/freopen); buf: the
 * stream buffer sluice gave it, or NULL. */
void sluice_stream_add(FILE *fp, struct sluice_record *rec, int64_t pos, void *buf, size_t buf_size);

/* Stop recording fp; returns its record (NULL if it was not recorded) and,
 * in buf and buf_size, the buffer sluice gave it (to free once glibc is
 * done with it). */
struct sluice_record *sluice_stream_remove(FILE *fp, void **buf, size_t *buf_size);

/* fn on every recorded stream (a shard's lock held: fn must not open or
 * close streams). */
void sluice_streams_each(void (*fn)(struct sluice_stream *s, void *arg), void *arg);

void sluice_streams_after_fork_child(void);

#endif
