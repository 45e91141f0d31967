/*
 * The per-call trace (SLUICE_TRACE, Darshan's DXT): the first SLUICE_TRACE
 * reads and writes of the process (POSIX and MPI-IO, application side),
 * each with its file, offset, length, start and end, kept in one array
 * mapped when the library loads and written into the log (a TRACE region).
 * Calls beyond the cap are counted, not kept. Adding one is a fetch-add on
 * the array's index and a few stores: no lock, no allocation.
 */
#ifndef SLUICE_CORE_TRACE_H
#define SLUICE_CORE_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

struct sluice_record;

struct sluice_trace_seg {
    struct sluice_record *rec;
    int64_t offset, length;
    uint64_t t0, t1;                 /* clock ticks (common/clock.h) */
    uint8_t write;                   /* 1 write, 0 read */
    atomic_uchar done;               /* 1: every field above is set */
};

extern struct sluice_trace_seg *sluice_trace_segs;
extern int64_t sluice_trace_cap;
extern atomic_llong sluice_trace_next;   /* slots taken, kept or not */

/* Map the array for `cap` calls (from the constructor); 0 or -errno. */
int sluice_trace_init(int64_t cap);

/* One read or write on rec's file, as the application asked it. */
void sluice_trace_add(struct sluice_record *rec, int write, int64_t offset, int64_t length, uint64_t t0,
                      uint64_t t1);

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
