/*
 * The per-call trace (SLUICE_TRACE, Darshan's DXT): the first SLUICE_TRACE
 * reads and writes of the process (POSIX, stdio and MPI-IO, application
 * side), each with its file, offset, length, start and end, and the POSIX
 * and stdio opens, closes, truncates, syncs and flushes between them (what
 * a replay of the calls needs to place them: sluice predict), kept in one array
 * mapped when the library loads and written into the log (a TRACE region).
 * Calls beyond the cap are counted, not kept. Adding one is a fetch-add on
 * the array's index and a few stores: no lock, no allocation.
 */
#ifndef SLUICE_CORE_TRACE_H
#define SLUICE_CORE_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

struct sluice_record;

/* What a segment is (the log's TRACE region keeps the number). */
enum sluice_trace_op {
    SLUICE_TRACE_READ = 0,
    SLUICE_TRACE_WRITE = 1,
    SLUICE_TRACE_OPEN = 2,           /* offset -1, length 0 */
    SLUICE_TRACE_CLOSE = 3,          /* offset -1, length 0 */
    SLUICE_TRACE_TRUNCATE = 4,       /* offset -1, length: the new size */
    SLUICE_TRACE_SYNC = 5,           /* fsync or fdatasync; a stream's fflush; offset -1, length 0 */
};

struct sluice_trace_seg {
    struct sluice_record *rec;
    int64_t offset, length;
    uint64_t t0, t1;                 /* clock ticks (common/clock.h) */
    uint8_t op;                      /* enum sluice_trace_op */
    atomic_uchar done;               /* 1: every field above is set */
};

extern struct sluice_trace_seg *sluice_trace_segs;
extern int64_t sluice_trace_cap;
extern atomic_llong sluice_trace_next;   /* slots taken, kept or not */

/* Map the array for `cap` calls (from the constructor); 0 or -errno. */
int sluice_trace_init(int64_t cap);

/* One call on rec's file, as the application made it. */
void sluice_trace_add(struct sluice_record *rec, enum sluice_trace_op op, int64_t offset, int64_t length,
                      uint64_t t0, uint64_t t1);

/* The same for a POSIX metadata call counted on `sides` (kept only when
 * the app side is among them, as for the reads and writes). */
void sluice_trace_meta(struct sluice_record *rec, unsigned sides, enum sluice_trace_op op, int64_t length,
                       uint64_t t0, uint64_t t1);

/* Slots holding a call, and calls not kept (the cap was reached). */
static inline int64_t sluice_trace_kept(void)
{
    int64_t n = atomic_load_explicit(&sluice_trace_next, memory_order_acquire);
    return n < sluice_trace_cap ? n : sluice_trace_cap;
}

static inline int64_t sluice_trace_dropped(void)
{
    int64_t n = atomic_load_explicit(&sluice_trace_next, memory_order_acquire);
    return n > sluice_trace_cap ? n - sluice_trace_cap : 0;
}

#endif
