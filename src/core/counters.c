/*
 * Counter updates; see counters.h. The module decides which counters an
 * access touches (the tables below); the arithmetic is shared.
 */
#include "core/counters.h"

#include <fcntl.h>

#include "core/trace.h"

uint64_t sluice_start_ticks;

/* Where each kind of access lands, per module; -1: the module has no such counter. */
struct rw_slots {
    int ops, bytes, max_byte, consec, seq, size0, rw_switches;
    int access1, stride1;      /* ACCESS1_ACCESS, STRIDE1_STRIDE: the four values, then their counts */
    int mem_not_aligned, file_not_aligned, max_time_size;
    int f_time, f_start, f_end, f_max_time;
};

static const struct rw_slots posix_rw[2] = {
    [SLUICE_READ] = {POSIX_READS, POSIX_BYTES_READ, POSIX_MAX_BYTE_READ, POSIX_CONSEC_READS,
                     POSIX_SEQ_READS, POSIX_SIZE_READ_0_100, POSIX_RW_SWITCHES, POSIX_ACCESS1_ACCESS,
                     POSIX_STRIDE1_STRIDE, POSIX_MEM_NOT_ALIGNED, POSIX_FILE_NOT_ALIGNED,
                     POSIX_MAX_READ_TIME_SIZE, POSIX_F_READ_TIME, POSIX_F_READ_START_TIMESTAMP,
                     POSIX_F_READ_END_TIMESTAMP, POSIX_F_MAX_READ_TIME},
    [SLUICE_WRITE] = {POSIX_WRITES, POSIX_BYTES_WRITTEN, POSIX_MAX_BYTE_WRITTEN, POSIX_CONSEC_WRITES,
                      POSIX_SEQ_WRITES, POSIX_SIZE_WRITE_0_100, POSIX_RW_SWITCHES, POSIX_ACCESS1_ACCESS,
                      POSIX_STRIDE1_STRIDE, POSIX_MEM_NOT_ALIGNED, POSIX_FILE_NOT_ALIGNED,
                      POSIX_MAX_WRITE_TIME_SIZE, POSIX_F_WRITE_TIME, POSIX_F_WRITE_START_TIMESTAMP,
                      POSIX_F_WRITE_END_TIMESTAMP, POSIX_F_MAX_WRITE_TIME},
};
static const struct rw_slots stdio_rw[2] = {
    [SLUICE_READ] = {STDIO_READS, STDIO_BYTES_READ, STDIO_MAX_BYTE_READ, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                     STDIO_F_READ_TIME, STDIO_F_READ_START_TIMESTAMP, STDIO_F_READ_END_TIMESTAMP, -1},
    [SLUICE_WRITE] = {STDIO_WRITES, STDIO_BYTES_WRITTEN, STDIO_MAX_BYTE_WRITTEN, -1, -1, -1, -1, -1, -1, -1, -1,
                      -1, STDIO_F_WRITE_TIME, STDIO_F_WRITE_START_TIMESTAMP, STDIO_F_WRITE_END_TIMESTAMP, -1},
};

/* MPI-IO offsets are in etypes of a file view, not bytes: no offset-derived counters. */
static const struct rw_slots mpiio_rw[2] = {
    [SLUICE_READ] = {MPIIO_INDEP_READS, MPIIO_BYTES_READ, -1, -1, -1, MPIIO_SIZE_READ_0_100,
                     MPIIO_RW_SWITCHES, MPIIO_ACCESS1_ACCESS, -1, -1, -1, MPIIO_MAX_READ_TIME_SIZE,
                     MPIIO_F_READ_TIME, MPIIO_F_READ_START_TIMESTAMP, MPIIO_F_READ_END_TIMESTAMP,
                     MPIIO_F_MAX_READ_TIME},
    [SLUICE_WRITE] = {MPIIO_INDEP_WRITES, MPIIO_BYTES_WRITTEN, -1, -1, -1, MPIIO_SIZE_WRITE_0_100,
                      MPIIO_RW_SWITCHES, MPIIO_ACCESS1_ACCESS, -1, -1, -1, MPIIO_MAX_WRITE_TIME_SIZE,
                      MPIIO_F_WRITE_TIME, MPIIO_F_WRITE_START_TIMESTAMP, MPIIO_F_WRITE_END_TIMESTAMP,
                      MPIIO_F_MAX_WRITE_TIME},
};

struct meta_slots {
    int opens, errors, f_meta, f_write, f_open_start, f_close_end;
};
static const struct meta_slots posix_meta = {POSIX_OPENS, POSIX_ERRORS, POSIX_F_META_TIME,
                                             POSIX_F_WRITE_TIME, POSIX_F_OPEN_START_TIMESTAMP,
                                             POSIX_F_CLOSE_END_TIMESTAMP};
static const struct meta_slots stdio_meta = {STDIO_OPENS, STDIO_ERRORS, STDIO_F_META_TIME,
                                             STDIO_F_WRITE_TIME, STDIO_F_OPEN_START_TIMESTAMP,
                                             STDIO_F_CLOSE_END_TIMESTAMP};

static const struct meta_slots mpiio_meta = {MPIIO_COLL_OPENS, MPIIO_ERRORS, MPIIO_F_META_TIME,
                                             MPIIO_F_WRITE_TIME, MPIIO_F_OPEN_START_TIMESTAMP,
                                             MPIIO_F_CLOSE_END_TIMESTAMP};

static const struct meta_slots *meta_of(const struct sluice_record *r)
{
    if (r->module == SLUICE_MOD_MPIIO)
        return &mpiio_meta;
    return r->module == SLUICE_MOD_STDIO ? &stdio_meta : &posix_meta;
}

static const struct rw_slots *rw_of(const struct sluice_record *r, enum sluice_access kind)
{
    if (r->module == SLUICE_MOD_MPIIO)
        return &mpiio_rw[kind];
    return r->module == SLUICE_MOD_STDIO ? &stdio_rw[kind] : &posix_rw[kind];
}

/* On a mirrored record the fs side is the app side: count it once. */
static unsigned effective_sides(const struct sluice_record *r, unsigned sides)
{
    return (sides == SLUICE_SIDES_BOTH && r->fs_mirror) ? SLUICE_SIDES_APP : sides;
}

/* Darshan's ten access-size buckets: 0-100, 100-1K, 1K-10K, ... 100M-1G, 1G+. */
static int size_bucket(int64_t n)
{
    static const int64_t limits[] = {100, 1024, 10240, 102400, 1048576, 4194304,
                                     10485760, 104857600, 1073741824};
    int b = 0;
    while (b < 9 && n > limits[b])
        b++;
    return b;
}

/* Ticks since the process started; at least one, since 0 means "never". */
static double since_start(uint64_t t)
{
    /* signed: converting an int64 to double is one instruction, a uint64 a branch */
    return t > sluice_start_ticks ? (double)(int64_t)(t - sluice_start_ticks) : 1.0;
}

/* One more occurrence of value v in table t (a value past the table's
 * SLUICE_CVAL_SLOTS distinct ones is not counted, as in Darshan), and the
 * four most frequent non-zero values top[0..3] with their counts top[4..7]
 * kept in order: higher count first, then the larger value. */
static void cval_count(struct sluice_cvals *t, int64_t *top, int64_t v)
{
    uint32_t i = 0, freq;
    int j = 0;

    while (i < t->n && t->val[i] != v)
        i++;
    if (i == t->n) {
        if (i == SLUICE_CVAL_SLOTS)
            return;
        t->val[i] = v;
        t->freq[i] = 0;
        t->n = i + 1;
    }
    freq = ++t->freq[i];
    if (v == 0)
        return;
    while (j < 4 && top[j] != v)
        j++;
    if (j == 4) {       /* not listed: it takes the fourth place if it beats it */
        if (top[7] > freq || (top[7] == freq && top[3] > v))
            return;
        j = 3;
        top[3] = v;
    }
    top[4 + j] = freq;
    for (; j > 0 && (top[3 + j] < freq || (top[3 + j] == freq && top[j - 1] < v)); j--) {
        top[j] = top[j - 1];
        top[4 + j] = top[3 + j];
        top[j - 1] = v;
        top[3 + j] = freq;
    }
}

void sluice_count_rw(struct sluice_record *r, unsigned sides, enum sluice_access kind,
                     int64_t off, int64_t n, uint64_t t0, uint64_t t1)
{
    sluice_count_rw_buf(r, sides, kind, -1, off, n, 0, t0, t1);
}

void sluice_count_rw_as(struct sluice_record *r, unsigned sides, enum sluice_access kind, int op_counter,
                        int64_t off, int64_t n, uint64_t t0, uint64_t t1)
{
    sluice_count_rw_buf(r, sides, kind, op_counter, off, n, 0, t0, t1);
}

void sluice_count_rw_buf(struct sluice_record *r, unsigned sides, enum sluice_access kind, int op_counter,
                         int64_t off, int64_t n, int mem_misaligned, uint64_t t0, uint64_t t1)
{
    const struct rw_slots *s = rw_of(r, kind);
    int ops = op_counter >= 0 ? op_counter : s->ops;
    double dt = (double)(int64_t)(t1 - t0);
    double ts0 = since_start(t0), ts1 = since_start(t1);
    int64_t align = r->file_align;
    int file_misaligned = off >= 0 && align > 0 &&
                          ((align & (align - 1)) == 0 ? (off & (align - 1)) != 0 : off % align != 0);

    if (sluice_trace_cap && (sides & (1u << SLUICE_SIDE_APP)) &&
        (r->module == SLUICE_MOD_POSIX || r->module == SLUICE_MOD_MPIIO || r->module == SLUICE_MOD_STDIO))
        sluice_trace_add(r, kind == SLUICE_WRITE ? SLUICE_TRACE_WRITE : SLUICE_TRACE_READ, off, n, t0, t1);
    sluice_record_lock(r);
    sides = effective_sides(r, sides);
    for (int side = 0; side < SLUICE_NUM_SIDES; side++) {
        if (!(sides & (1u << side)))
            continue;
        int64_t *ic = r->ic + side * r->ni;
        double *fc = r->fc + side * r->nf;
        struct sluice_cvals *cv = r->cv ? r->cv + side * SLUICE_CV_KINDS : NULL;
        int64_t stride = 0;
        ic[ops]++;
        ic[s->bytes] += n;
        if (s->size0 >= 0)
            ic[s->size0 + size_bucket(n)]++;
        if (off >= 0) {
            int64_t last = r->last_end[side][kind];
            if (n > 0 && off + n - 1 > ic[s->max_byte])
                ic[s->max_byte] = off + n - 1;
            if (last >= 0 && s->consec >= 0) {
                if (off == last)
                    ic[s->consec]++;
                if (off >= last) {
                    ic[s->seq]++;
                    stride = off - last;
                }
            }
            r->last_end[side][kind] = off + n;
        }
        if (cv && s->access1 >= 0)
            cval_count(&cv[SLUICE_CV_ACCESS], &ic[s->access1], n);
        if (cv && s->stride1 >= 0 && off >= 0)
            cval_count(&cv[SLUICE_CV_STRIDE], &ic[s->stride1], stride);
        if (s->mem_not_aligned >= 0) {
            ic[s->mem_not_aligned] += mem_misaligned;
            ic[s->file_not_aligned] += file_misaligned;
        }
        if (s->rw_switches >= 0) {
            int k = kind == SLUICE_READ ? 1 : 2;
            if (r->last_kind[side] && r->last_kind[side] != k)
                ic[s->rw_switches]++;
            r->last_kind[side] = k;
        }
        fc[s->f_time] += dt;
        if (s->f_max_time >= 0 && dt > fc[s->f_max_time]) {
            fc[s->f_max_time] = dt;
            ic[s->max_time_size] = n;
        }
        if (fc[s->f_start] == 0.0 || ts0 < fc[s->f_start])
            fc[s->f_start] = ts0;
        if (ts1 > fc[s->f_end])
            fc[s->f_end] = ts1;
    }
    sluice_record_unlock(r);
}

static void count_timed(struct sluice_record *r, unsigned sides, int counter, int ftime,
                        int fstamp_first, int fstamp_last, uint64_t t0, uint64_t t1)
{
    double dt = (double)(int64_t)(t1 - t0);
    double ts0 = since_start(t0), ts1 = since_start(t1);

    sluice_record_lock(r);
    sides = effective_sides(r, sides);
    for (int side = 0; side < SLUICE_NUM_SIDES; side++) {
        if (!(sides & (1u << side)))
            continue;
        int64_t *ic = r->ic + side * r->ni;
        double *fc = r->fc + side * r->nf;
        if (counter >= 0)
            ic[counter]++;
        fc[ftime] += dt;
        if (fstamp_first >= 0 && fc[fstamp_first] == 0.0)
            fc[fstamp_first] = ts0;
        if (fstamp_last >= 0 && ts1 > fc[fstamp_last])
            fc[fstamp_last] = ts1;
    }
    sluice_record_unlock(r);
}

void sluice_count_open(struct sluice_record *r, unsigned sides, uint64_t t0, uint64_t t1)
{
    const struct meta_slots *m = meta_of(r);
    sluice_trace_meta(r, sides, SLUICE_TRACE_OPEN, 0, t0, t1);
    count_timed(r, sides, m->opens, m->f_meta, m->f_open_start, -1, t0, t1);
}

void sluice_count_open_as(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1)
{
    const struct meta_slots *m = meta_of(r);
    count_timed(r, sides, counter, m->f_meta, m->f_open_start, -1, t0, t1);
}

/* The open-flag counters of a module: write, create, excl, trunc, append. */
static const int posix_open_flags[5] = {POSIX_OPENS_WRITE, POSIX_OPENS_CREATE, POSIX_OPENS_EXCL,
                                        POSIX_OPENS_TRUNC, POSIX_OPENS_APPEND};
static const int stdio_open_flags[5] = {STDIO_OPENS_WRITE, STDIO_OPENS_CREATE, STDIO_OPENS_EXCL,
                                        STDIO_OPENS_TRUNC, STDIO_OPENS_APPEND};

void sluice_count_open_flags(struct sluice_record *r, unsigned sides, int flags)
{
    const int *slot = r->module == SLUICE_MOD_POSIX ? posix_open_flags
                      : r->module == SLUICE_MOD_STDIO ? stdio_open_flags : NULL;
    if (!slot || (flags & O_ACCMODE) == O_RDONLY || (flags & (O_PATH | O_DIRECTORY)))
        return;
    sluice_record_lock(r);
    sides = effective_sides(r, sides);
    for (int side = 0; side < SLUICE_NUM_SIDES; side++) {
        if (!(sides & (1u << side)))
            continue;
        int64_t *ic = r->ic + side * r->ni;
        ic[slot[0]]++;
        ic[slot[1]] += (flags & O_CREAT) != 0;
        ic[slot[2]] += (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
        ic[slot[3]] += (flags & O_TRUNC) != 0;
        ic[slot[4]] += (flags & O_APPEND) != 0;
    }
    sluice_record_unlock(r);
}

void sluice_count_close(struct sluice_record *r, unsigned sides, uint64_t t0, uint64_t t1)
{
    const struct meta_slots *m = meta_of(r);
    sluice_trace_meta(r, sides, SLUICE_TRACE_CLOSE, 0, t0, t1);
    count_timed(r, sides, -1, m->f_meta, -1, m->f_close_end, t0, t1);
}

void sluice_count_meta(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1)
{
    count_timed(r, sides, counter, meta_of(r)->f_meta, -1, -1, t0, t1);
}

void sluice_count_sync(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1)
{
    count_timed(r, sides, counter, meta_of(r)->f_write, -1, -1, t0, t1);
}

void sluice_count_error(struct sluice_record *r, unsigned sides)
{
    int e = meta_of(r)->errors;

    sluice_record_lock(r);
    sides = effective_sides(r, sides);
    for (int side = 0; side < SLUICE_NUM_SIDES; side++)
        if (sides & (1u << side))
            r->ic[side * r->ni + e]++;
    sluice_record_unlock(r);
}

int sluice_size_bucket(int64_t n)
{
    return size_bucket(n);
}

double sluice_ticks_since_start(uint64_t t)
{
    return since_start(t);
}
