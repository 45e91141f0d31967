/* The per-call trace; see trace.h. */
#include "core/trace.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "core/record.h"

struct sluice_trace_seg *sluice_trace_segs;
int64_t sluice_trace_cap;
atomic_llong sluice_trace_next;

int sluice_trace_init(int64_t cap)
{
    if (cap <= 0)
        return 0;
    if ((uint64_t)cap > SIZE_MAX / sizeof *sluice_trace_segs)
        return -ENOMEM;
    /* reserved, not touched: a cap of millions costs only the calls traced */
    void *p = mmap(NULL, (size_t)cap * sizeof *sluice_trace_segs, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    sluice_trace_segs = p;
    sluice_trace_cap = cap;
    return 0;
}

void sluice_trace_add(struct sluice_record *rec, enum sluice_trace_op op, int64_t offset, int64_t length,
                      uint64_t t0, uint64_t t1)
{
    long long i = atomic_fetch_add_explicit(&sluice_trace_next, 1, memory_order_relaxed);
    if (i >= sluice_trace_cap)
        return;
    struct sluice_trace_seg *s = &sluice_trace_segs[i];
    s->rec = rec;
    s->offset = offset;
    s->length = length;
    s->t0 = t0;
    s->t1 = t1;
    s->op = (uint8_t)op;
    atomic_store_explicit(&s->done, 1, memory_order_release);
}

void sluice_trace_meta(struct sluice_record *rec, unsigned sides, enum sluice_trace_op op, int64_t length,
                       uint64_t t0, uint64_t t1)
{
    if (sluice_trace_cap && rec && (rec->module == SLUICE_MOD_POSIX || rec->module == SLUICE_MOD_STDIO) &&
        (sides & (1u << SLUICE_SIDE_APP)))
        sluice_trace_add(rec, op, -1, length, t0, t1);
}
