/*
 * The aggregated collective exchange (see acb.h), in five collective steps
 * over the file's communicator:
 *   1. allreduce: the byte range written by anyone, and whether anyone failed;
 *   2. (default aggregator count only) the number of nodes;
 *   3. alltoall: how many extents and bytes each rank sends each aggregator;
 *   4. alltoallv twice: the (offset, length, epoch) headers, then the data;
 *   5. after the aggregators' writes, allreduce of the result, which is also
 *      the barrier that makes the data visible to every rank.
 * MPI counts are ints: a flush that would move 2 GiB or more between two
 * ranks (or through one rank) is done instead by every rank writing its own
 * data (sluice_acb_write_own), decided collectively in step 3.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acb/acb.h"
#include "acb/plan.h"

/* SLUICE_ACB_TIMING set: every rank prints where its flushes' time went,
 * one line per flush on stderr (docs/acb.md). */
enum flush_phase { PHASE_PLAN, PHASE_PACK, PHASE_HEADERS, PHASE_DATA, PHASE_SORT, PHASE_WRITE, PHASE_AGREE, PHASE_COUNT };
static const char *const phase_names[PHASE_COUNT] = {"plan", "pack", "headers", "data", "sort", "write", "agree"};

struct flush_clock {
    int on;
    double last, spent[PHASE_COUNT];
};

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void clock_start(struct flush_clock *c)
{
    const char *v = getenv("SLUICE_ACB_TIMING");
    c->on = v && *v && *v != '0';
    if (c->on)
        c->last = seconds_now();
}

/* The time since the previous mark goes to phase. */
static void clock_mark(struct flush_clock *c, enum flush_phase phase)
{
    if (c->on) {
        double t = seconds_now();
        c->spent[phase] += t - c->last;
        c->last = t;
    }
}

static void clock_print(const struct flush_clock *c, MPI_Comm comm, int naggs, int64_t sent, int64_t received,
                        const struct sluice_acb_stats *st, int64_t writes_before)
{
    char line[512];
    int rank, len;
    double total = 0;

    if (!c->on)
        return;
    SLUICE_PMPI(Comm_rank)(comm, &rank);
    len = snprintf(line, sizeof line, "sluice-acb: rank %d aggregators %d sent %lld received %lld writes %lld", rank,
                   naggs, (long long)sent, (long long)received, (long long)(st->writes - writes_before));
    for (int i = 0; i < PHASE_COUNT && len < (int)sizeof line; i++) {
        total += c->spent[i];
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.4f", phase_names[i], c->spent[i]);
    }
    if (len < (int)sizeof line)
        snprintf(line + len, sizeof line - (size_t)len, " total %.4f\n", total);
    fputs(line, stderr);
}

/* Write the disjoint, ascending extents of p as runs of touching extents,
 * each cut where a multiple of write_size falls. */
static int write_runs(const struct sluice_acb_pending *p, int64_t write_size, const struct sluice_acb_writer *w,
                      struct sluice_acb_stats *st)
{
    const struct sluice_acb_extent *e = p->ext;
    unsigned char *scratch = NULL;
    int rc = MPI_SUCCESS;
    size_t i = 0;

    while (i < p->n && rc == MPI_SUCCESS) {
        size_t j = i + 1, k = i;
        int64_t run_end = e[i].off + e[i].len, pos = e[i].off;
        while (j < p->n && e[j].off == run_end)
            run_end += e[j++].len;
        while (pos < run_end && rc == MPI_SUCCESS) {
            int64_t wend = sluice_acb_plan_write_end(write_size, pos, run_end);
            const unsigned char *src;
            while (e[k].off + e[k].len <= pos)
                k++;
            if (wend <= e[k].off + e[k].len) {
                src = e[k].data + (pos - e[k].off);
            } else {
                if (!scratch && (scratch = malloc((size_t)write_size)) == NULL) {
                    rc = MPI_ERR_NO_MEM;
                    break;
                }
                for (size_t m = k; m < j && e[m].off < wend; m++) {
                    int64_t from = e[m].off > pos ? e[m].off : pos;
                    int64_t to = e[m].off + e[m].len < wend ? e[m].off + e[m].len : wend;
                    memcpy(scratch + (from - pos), e[m].data + (from - e[m].off), (size_t)(to - from));
                }
                src = scratch;
            }
            rc = w->write_at(w->ctx, pos, src, wend - pos);
            if (rc == MPI_SUCCESS) {
                st->writes++;
                st->bytes += wend - pos;
            }
            pos = wend;
        }
        i = j;
    }
    free(scratch);
    return rc;
}

int sluice_acb_write_own(struct sluice_acb_pending *p, const struct sluice_acb_hints *h,
                         const struct sluice_acb_writer *w, struct sluice_acb_stats *st)
{
    int rc = sluice_acb_pending_normalize(p) == 0 ? MPI_SUCCESS : MPI_ERR_NO_MEM;

    if (rc == MPI_SUCCESS)
        rc = write_runs(p, h->write_size, w, st);
    sluice_acb_pending_clear(p);
    return rc;
}

static int count_nodes(MPI_Comm comm)
{
    MPI_Comm node;
    int64_t leader = 0, nodes = 1;
    int node_rank = 0;

    if (SLUICE_PMPI(Comm_split_type)(comm, MPI_COMM_TYPE_SHARED, 0, SLUICE_MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return 1;
    SLUICE_PMPI(Comm_rank)(node, &node_rank);
    SLUICE_PMPI(Comm_free)(&node);
    leader = node_rank == 0;
    SLUICE_PMPI(Allreduce)(&leader, &nodes, 1, SLUICE_MPI_INT64, SLUICE_MPI_SUM, comm);
    return nodes > 0 ? (int)nodes : 1;
}

static void count_pieces(const struct sluice_acb_pending *p, const struct sluice_acb_plan *pl, int64_t *counts)
{
    for (size_t i = 0; i < p->n; i++) {
        int64_t off = p->ext[i].off, end = off + p->ext[i].len;
        while (off < end) {
            int64_t pend = sluice_acb_plan_piece_end(pl, off, end);
            int dest = sluice_acb_plan_agg_rank(pl, sluice_acb_plan_owner(pl, off));
            counts[2 * dest]++;
            counts[2 * dest + 1] += pend - off;
            off = pend;
        }
    }
}

/* Fill the send buffers in destination order; a piece's header is
 * (offset, length, epoch). */
static void pack_pieces(const struct sluice_acb_pending *p, const struct sluice_acb_plan *pl, int64_t *hdr,
                        int *hdr_pos, unsigned char *data, int *data_pos)
{
    for (size_t i = 0; i < p->n; i++) {
        int64_t off = p->ext[i].off, end = off + p->ext[i].len;
        while (off < end) {
            int64_t pend = sluice_acb_plan_piece_end(pl, off, end);
            int dest = sluice_acb_plan_agg_rank(pl, sluice_acb_plan_owner(pl, off));
            hdr[hdr_pos[dest]++] = off;
            hdr[hdr_pos[dest]++] = pend - off;
            hdr[hdr_pos[dest]++] = (int64_t)p->ext[i].epoch;
            memcpy(data + data_pos[dest], p->ext[i].data + (off - p->ext[i].off), (size_t)(pend - off));
            data_pos[dest] += (int)(pend - off);
            off = pend;
        }
    }
}

/* counts (int64) to MPI's int counts and displacements; -1 if any sum or
 * count does not fit an int. */
static int to_int_counts(const int64_t *counts, int stride_index, int64_t scale, int nprocs, int *cnt, int *displ)
{
    int64_t total = 0;

    for (int r = 0; r < nprocs; r++) {
        int64_t c = counts[2 * r + stride_index] * scale;
        if (c > INT_MAX || total > INT_MAX - c)
            return -1;
        cnt[r] = (int)c;
        displ[r] = (int)total;
        total += c;
    }
    return 0;
}

struct received_piece {
    int64_t off, len, epoch, pos;   /* pos: where the data is in the receive buffer */
    int src, index;
};

static int by_epoch_src_index(const void *a, const void *b)
{
    const struct received_piece *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The received pieces into recv in the order in which they win on overlap
 * (recv's sequence numbers): by epoch, then source rank (the higher rank
 * wins), then the source's own order. */
static int add_received(struct sluice_acb_pending *recv, const int64_t *rhdr, const int *rhc, const int *rhd,
                        const unsigned char *rdata, const int *rdd, int nprocs)
{
    size_t n = 0, k = 0;
    struct received_piece *pieces;
    int rc = MPI_SUCCESS;

    for (int src = 0; src < nprocs; src++)
        n += (size_t)rhc[src] / 3;
    if (n == 0)
        return MPI_SUCCESS;
    if ((pieces = malloc(n * sizeof *pieces)) == NULL)
        return MPI_ERR_NO_MEM;
    for (int src = 0; src < nprocs; src++) {
        const int64_t *hd = rhdr + rhd[src];
        int64_t pos = rdd[src];
        for (int x = 0; x < rhc[src]; x += 3, k++) {
            pieces[k] = (struct received_piece){hd[x], hd[x + 1], hd[x + 2], pos, src, x};
            pos += hd[x + 1];
        }
    }
    qsort(pieces, n, sizeof *pieces, by_epoch_src_index);
    for (k = 0; k < n && rc == MPI_SUCCESS; k++)
        if (sluice_acb_pending_add_ref(recv, pieces[k].off, pieces[k].len, rdata + pieces[k].pos) != 0)
            rc = MPI_ERR_NO_MEM;
    free(pieces);
    return rc;
}

int sluice_acb_exchange(struct sluice_acb_pending *p, MPI_Comm comm, const struct sluice_acb_hints *h,
                     const struct sluice_acb_writer *w, struct sluice_acb_stats *st)
{
    struct sluice_acb_plan pl = {.stripe = h->stripe_size};
    struct sluice_acb_pending recv = {0};
    int64_t local[3], global[3], fits, all_fit, rc64, rc_all;
    int64_t *scounts, *rcounts, *shdr = NULL, *rhdr = NULL;
    unsigned char *sdata = NULL, *rdata = NULL;
    int *ints, *shc, *shd, *rhc, *rhd, *sdc, *sdd, *rdc, *rdd, *hpos, *dpos;
    int nprocs, rc = MPI_SUCCESS;
    struct flush_clock clock = {0};
    int64_t sent = 0, received = 0, writes_before = st->writes;

    clock_start(&clock);
    SLUICE_PMPI(Comm_size)(comm, &nprocs);
    scounts = calloc((size_t)nprocs * 4, sizeof *scounts);
    rcounts = scounts ? scounts + 2 * nprocs : NULL;
    ints = calloc((size_t)nprocs * 10, sizeof *ints);
    /* Resolving this rank's own overlaps first sends less, but a merged
     * extent has one epoch: only when all of them share it. */
    if (!scounts || !ints || (sluice_acb_pending_one_epoch(p) && sluice_acb_pending_normalize(p) != 0))
        rc = MPI_ERR_NO_MEM;
    local[0] = local[1] = INT64_MAX;
    for (size_t i = 0; i < p->n; i++) {
        if (p->ext[i].off < local[0])
            local[0] = p->ext[i].off;
        if (-(p->ext[i].off + p->ext[i].len) < local[1])
            local[1] = -(p->ext[i].off + p->ext[i].len);
    }
    local[2] = rc == MPI_SUCCESS ? 0 : -1;
    SLUICE_PMPI(Allreduce)(local, global, 3, SLUICE_MPI_INT64, SLUICE_MPI_MIN, comm);
    if (global[2] != 0) {
        /* Someone is out of memory already: every rank writes its own data. */
        rc = sluice_acb_write_own(p, h, w, st);
        goto agree;
    }
    if (global[0] == INT64_MAX)
        goto agree;   /* nothing pending anywhere */

    pl.nprocs = nprocs;
    pl.naggs = sluice_acb_plan_naggs(h->aggregators, h->aggregators > 0 ? 1 : count_nodes(comm), nprocs,
                                     global[0], -global[1], pl.stripe);
    count_pieces(p, &pl, scounts);
    SLUICE_PMPI(Alltoall)(scounts, 2, SLUICE_MPI_INT64, rcounts, 2, SLUICE_MPI_INT64, comm);
    shc = ints, shd = ints + nprocs, rhc = ints + 2 * nprocs, rhd = ints + 3 * nprocs;
    sdc = ints + 4 * nprocs, sdd = ints + 5 * nprocs, rdc = ints + 6 * nprocs, rdd = ints + 7 * nprocs;
    hpos = ints + 8 * nprocs, dpos = ints + 9 * nprocs;
    fits = to_int_counts(scounts, 0, 3, nprocs, shc, shd) == 0 && to_int_counts(rcounts, 0, 3, nprocs, rhc, rhd) == 0 &&
           to_int_counts(scounts, 1, 1, nprocs, sdc, sdd) == 0 && to_int_counts(rcounts, 1, 1, nprocs, rdc, rdd) == 0;
    if (fits) {
        int64_t nsh = (int64_t)shd[nprocs - 1] + shc[nprocs - 1], nrh = (int64_t)rhd[nprocs - 1] + rhc[nprocs - 1];
        int64_t nsd = (int64_t)sdd[nprocs - 1] + sdc[nprocs - 1], nrd = (int64_t)rdd[nprocs - 1] + rdc[nprocs - 1];
        shdr = malloc((size_t)(nsh ? nsh : 1) * sizeof *shdr);
        rhdr = malloc((size_t)(nrh ? nrh : 1) * sizeof *rhdr);
        sdata = malloc((size_t)(nsd ? nsd : 1));
        rdata = malloc((size_t)(nrd ? nrd : 1));
        fits = shdr && rhdr && sdata && rdata;
    }
    SLUICE_PMPI(Allreduce)(&fits, &all_fit, 1, SLUICE_MPI_INT64, SLUICE_MPI_MIN, comm);
    if (!all_fit) {
        rc = sluice_acb_write_own(p, h, w, st);
        goto agree;
    }
    sent = (int64_t)sdd[nprocs - 1] + sdc[nprocs - 1];
    received = (int64_t)rdd[nprocs - 1] + rdc[nprocs - 1];
    clock_mark(&clock, PHASE_PLAN);
    memcpy(hpos, shd, (size_t)nprocs * sizeof *hpos);
    memcpy(dpos, sdd, (size_t)nprocs * sizeof *dpos);
    pack_pieces(p, &pl, shdr, hpos, sdata, dpos);
    sluice_acb_pending_clear(p);
    clock_mark(&clock, PHASE_PACK);
    SLUICE_PMPI(Alltoallv)(shdr, shc, shd, SLUICE_MPI_INT64, rhdr, rhc, rhd, SLUICE_MPI_INT64, comm);
    clock_mark(&clock, PHASE_HEADERS);
    SLUICE_PMPI(Alltoallv)(sdata, sdc, sdd, SLUICE_MPI_BYTE, rdata, rdc, rdd, SLUICE_MPI_BYTE, comm);
    clock_mark(&clock, PHASE_DATA);
    free(sdata);
    sdata = NULL;
    if (rc == MPI_SUCCESS)
        rc = add_received(&recv, rhdr, rhc, rhd, rdata, rdd, nprocs);
    if (rc == MPI_SUCCESS && recv.n) {
        if (sluice_acb_pending_normalize(&recv) != 0)
            rc = MPI_ERR_NO_MEM;
        clock_mark(&clock, PHASE_SORT);
        if (rc == MPI_SUCCESS)
            rc = write_runs(&recv, h->write_size, w, st);
    }
    sluice_acb_pending_clear(&recv);

agree:
    clock_mark(&clock, PHASE_WRITE);
    rc64 = rc;
    SLUICE_PMPI(Allreduce)(&rc64, &rc_all, 1, SLUICE_MPI_INT64, SLUICE_MPI_MAX, comm);
    clock_mark(&clock, PHASE_AGREE);
    clock_print(&clock, comm, pl.naggs, sent, received, st, writes_before);
    sluice_acb_pending_clear(p);
    free(scounts);
    free(ints);
    free(shdr);
    free(rhdr);
    free(sdata);
    free(rdata);
    return (int)rc_all;
}
