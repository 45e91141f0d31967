/* The rounds of an aggregated exchange; see rounds.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "acb/rounds.h"

#define HDR 4                      /* int64s per piece header: offset, length, epoch, sequence */

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

/* Where byte off lands in its aggregator's round buffer. */
static int64_t round_pos(const struct sluice_acb_rounds *rd, int64_t off)
{
    int64_t s = off / rd->pl.stripe;
    return (s / rd->pl.naggs % rd->spr) * rd->pl.stripe + off % rd->pl.stripe;
}

/* Call fn for each piece of p's extents (sorted by offset) from first on
 * that lies in [wstart, wend), cut where the owning aggregator changes. */
typedef void (*piece_fn)(void *ctx, int dest, const struct sluice_acb_extent *e, int64_t off, int64_t len);

static void for_each_piece(const struct sluice_acb_pending *p, size_t first, const struct sluice_acb_rounds *rd, int64_t wstart,
                           piece_fn fn, void *ctx)
{
    int64_t wend = wstart + rd->window;

    for (size_t i = first; i < p->n && p->ext[i].off < wend; i++) {
        const struct sluice_acb_extent *e = &p->ext[i];
        int64_t off = e->off > wstart ? e->off : wstart;
        int64_t end = e->off + e->len < wend ? e->off + e->len : wend;
        while (off < end) {
            int64_t pend = sluice_acb_plan_piece_end(&rd->pl, off, end);
            fn(ctx, sluice_acb_plan_agg_rank(&rd->pl, sluice_acb_plan_owner(&rd->pl, off)), e, off, pend - off);
            off = pend;
        }
    }
}

static void count_piece(void *ctx, int dest, const struct sluice_acb_extent *e, int64_t off, int64_t len)
{
    int64_t *counts = ctx;
    (void)e;
    (void)off;
    counts[2 * dest]++;
    counts[2 * dest + 1] += len;
}

/* One round's send side: the headers, and the blocks of pending data each
 * destination gets (the data is sent from where it is). */
struct send_side {
    int64_t *hdr;
    int *hpos;                     /* next header slot per destination */
    int *blen, *bpos;              /* block lengths, next block per destination */
    MPI_Aint *addr;
};

static void fill_piece(void *ctx, int dest, const struct sluice_acb_extent *e, int64_t off, int64_t len)
{
    struct send_side *s = ctx;
    int64_t *h = s->hdr + s->hpos[dest];

    h[0] = off, h[1] = len, h[2] = (int64_t)e->epoch, h[3] = (int64_t)e->seq;
    s->hpos[dest] += HDR;
    s->blen[s->bpos[dest]] = (int)len;
    s->addr[s->bpos[dest]++] = (MPI_Aint)(uintptr_t)(e->data + (off - e->off));
}

struct received_piece {
    int64_t off, len, epoch, seq, pos;   /* pos: where the data is in the contiguous receive buffer */
    int src;
};

static int by_offset(const void *a, const void *b)
{
    const struct received_piece *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

static int by_epoch_src_seq(const void *a, const void *b)
{
    const struct received_piece *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The received pieces into recv in the order in which they win on overlap
 * (recv's sequence numbers): by epoch, then source rank (the higher rank
 * wins), then the source's program order. */
static int add_received(struct sluice_acb_pending *recv, struct received_piece *pieces, size_t n,
                        const unsigned char *rdata)
{
    qsort(pieces, n, sizeof *pieces, by_epoch_src_seq);
    for (size_t k = 0; k < n; k++)
        if (sluice_acb_pending_add_ref(recv, pieces[k].off, pieces[k].len, rdata + pieces[k].pos) != 0)
            return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

/* Wait for the writes in flight from round buffer `slot` (0: rbuf, 1:
 * spare). MPI_SUCCESS or the first one's error. */
static int wait_writes(struct sluice_acb_flush *fl, int slot)
{
    int rc = MPI_SUCCESS;

    if (fl->nreqs[slot] > 0)
        rc = SLUICE_PMPI(Waitall)(fl->nreqs[slot], fl->reqs[slot], MPI_STATUSES_IGNORE);
    fl->nreqs[slot] = 0;
    return rc;
}

/* Room for one more request of slot 0; 0 or -1 without memory. */
static int request_slot(struct sluice_acb_flush *fl)
{
    if (fl->nreqs[0] == fl->capreqs[0]) {
        int cap = fl->capreqs[0] ? 2 * fl->capreqs[0] : 16;
        MPI_Request *r = realloc(fl->reqs[0], (size_t)cap * sizeof *r);
        if (!r)
            return -1;
        fl->reqs[0] = r;
        fl->capreqs[0] = cap;
    }
    return 0;
}

/* Write the disjoint pieces (sorted by offset) that were received to their
 * places in the round buffer: runs of touching pieces, straight from it.
 * When another round follows and the writer can, the writes are only
 * started (their requests in slot 0), to complete while the next round is
 * exchanged into the spare buffer. */
static int write_in_place(struct sluice_acb_flush *fl, const struct received_piece *pc, size_t n)
{
    const struct sluice_acb_writer *w = fl->w;
    int overlap = fl->more && w->iwrite_at;
    int rc = MPI_SUCCESS;

    for (size_t i = 0, j; i < n && rc == MPI_SUCCESS; i = j) {
        int64_t pos = pc[i].off, end = pc[i].off + pc[i].len;
        for (j = i + 1; j < n && pc[j].off == end; j++)
            end += pc[j].len;
        while (pos < end && rc == MPI_SUCCESS) {
            int64_t wend = sluice_acb_plan_write_end(fl->h->write_size, pos, end);
            const unsigned char *src = fl->rbuf + round_pos(&fl->rd, pos);
            if (overlap && request_slot(fl) == 0) {
                rc = w->iwrite_at(w->ctx, pos, src, wend - pos, &fl->reqs[0][fl->nreqs[0]]);
                if (rc == MPI_SUCCESS)
                    fl->nreqs[0]++;
            } else {
                rc = w->write_at(w->ctx, pos, src, wend - pos);
            }
            if (rc == MPI_SUCCESS) {
                fl->st->writes++;
                fl->st->bytes += wend - pos;
            }
            pos = wend;
        }
    }
    return rc;
}

/* After a round: the buffer just written from becomes the spare, its writes
 * in flight with it, and the spare (its writes complete, or made now)
 * becomes the round buffer. Without a spare buffer, wait instead. */
static int swap_round_buffers(struct sluice_acb_flush *fl)
{
    unsigned char *b;
    MPI_Request *r;
    int n, c;

    if (fl->nreqs[0] == 0)
        return MPI_SUCCESS;
    if (!fl->spare && (fl->spare = malloc((size_t)fl->h->buffer_size)) == NULL)
        return wait_writes(fl, 0);
    b = fl->rbuf, fl->rbuf = fl->spare, fl->spare = b;
    r = fl->reqs[0], fl->reqs[0] = fl->reqs[1], fl->reqs[1] = r;
    n = fl->nreqs[0], fl->nreqs[0] = fl->nreqs[1], fl->nreqs[1] = n;
    c = fl->capreqs[0], fl->capreqs[0] = fl->capreqs[1], fl->capreqs[1] = c;
    /* the new round buffer's own writes (two rounds back) end before it is reused */
    return wait_writes(fl, 0);
}

/* A hindexed type over blocks, or MPI_BYTE for none. */
static int block_type(int n, const int *blen, const MPI_Aint *addr, MPI_Datatype *t)
{
    *t = SLUICE_MPI_BYTE;
    if (n == 0)
        return MPI_SUCCESS;
    if (SLUICE_PMPI(Type_create_hindexed)(n, blen, addr, SLUICE_MPI_BYTE, t) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    return SLUICE_PMPI(Type_commit)(t);
}

static void free_types(MPI_Datatype *t, int n)
{
    for (int r = 0; r < n; r++)
        if (t[r] != SLUICE_MPI_BYTE)
            SLUICE_PMPI(Type_free)(&t[r]);
}


/* The aggregator's side of a round, once the headers are in: receive (in
 * place when the pieces are disjoint) and write. rdata: a contiguous
 * buffer for overlapping pieces. */
static int receive_and_write(struct sluice_acb_flush *fl, const int64_t *rhdr, const int *rhc, const int *rhd, const int *rdc,
                             const int *rdd, unsigned char *rdata, int *scnt, MPI_Datatype *stypes, int rc)
{
    int nprocs = fl->nprocs, *rcnt = fl->ints + 6 * nprocs, *zero = fl->ints + 7 * nprocs;
    MPI_Datatype *rtypes = fl->types + nprocs;
    size_t n = 0, k = 0;
    struct received_piece *pc;
    int disjoint = 1, *blen = NULL;
    MPI_Aint *addr = NULL;
    void *rbase = MPI_BOTTOM;

    for (int src = 0; src < nprocs; src++)
        n += (size_t)rhc[src] / HDR;
    pc = malloc((n ? n : 1) * sizeof *pc);
    blen = malloc((n ? n : 1) * sizeof *blen);
    addr = malloc((n ? n : 1) * sizeof *addr);
    if (!pc || !blen || !addr)
        rc = MPI_ERR_NO_MEM;   /* the data still moves: into rdata, unused */
    for (int src = 0; src < nprocs && pc; src++) {
        int64_t pos = rdd[src];
        for (int x = rhd[src]; x < rhd[src] + rhc[src]; x += HDR, k++) {
            pc[k] = (struct received_piece){rhdr[x], rhdr[x + 1], rhdr[x + 2], rhdr[x + 3], pos, src};
            pos += rhdr[x + 1];
        }
    }
    if (pc && n) {
        /* In place: each piece's block at its place in the round buffer. */
        for (k = 0; k < n; k++) {
            blen[k] = (int)pc[k].len;
            addr[k] = (MPI_Aint)(uintptr_t)(fl->rbuf + round_pos(&fl->rd, pc[k].off));
        }
        qsort(pc, n, sizeof *pc, by_offset);
        for (k = 1; k < n && disjoint; k++)
            disjoint = pc[k].off >= pc[k - 1].off + pc[k - 1].len;
    }
    for (int src = 0, b = 0; src < nprocs; src++) {
        int nb = rhc[src] / HDR;
        rcnt[src] = rdc[src];
        rtypes[src] = SLUICE_MPI_BYTE;
        if (disjoint && pc && rc == MPI_SUCCESS) {
            rcnt[src] = nb ? 1 : 0;
            if (block_type(nb, blen + b, addr + b, &rtypes[src]) != MPI_SUCCESS)
                rc = MPI_ERR_TYPE;
        }
        b += nb;
    }
    if (!disjoint || !pc || rc != MPI_SUCCESS) {
        free_types(rtypes, nprocs);
        for (int src = 0; src < nprocs; src++)
            rcnt[src] = rdc[src], rtypes[src] = SLUICE_MPI_BYTE;
        rbase = rdata;
    }
    memset(zero, 0, (size_t)nprocs * sizeof *zero);
    sluice_acb_clock_mark(fl->clock, PHASE_SORT);
    SLUICE_PMPI(Alltoallw)(MPI_BOTTOM, scnt, zero, stypes, rbase, rcnt,
                           rbase == rdata ? rdd : zero, rtypes, fl->comm);
    sluice_acb_clock_mark(fl->clock, PHASE_DATA);
    free_types(rtypes, nprocs);
    if (rc == MPI_SUCCESS && n) {
        if (rbase != rdata) {
            rc = write_in_place(fl, pc, n);
        } else {
            struct sluice_acb_pending recv = {0};
            rc = add_received(&recv, pc, n, rdata);
            if (rc == MPI_SUCCESS && sluice_acb_pending_normalize(&recv) != 0)
                rc = MPI_ERR_NO_MEM;
            if (rc == MPI_SUCCESS)
                rc = sluice_acb_write_runs(&recv, fl->h->write_size, fl->w, fl->st);
            sluice_acb_pending_clear(&recv);
        }
    }
    sluice_acb_clock_mark(fl->clock, PHASE_WRITE);
    free(pc);
    free(blen);
    free(addr);
    return rc;
}

/* One round over the window starting at wstart. Returns -1 when some rank
 * could not get its buffers (every rank then writes its own data from this
 * window on), else the round's MPI result on this rank. */
static int run_round(struct sluice_acb_flush *fl, size_t first, int64_t wstart)
{
    int nprocs = fl->nprocs, *ints = fl->ints;
    int64_t *scounts = fl->counts, *rcounts = fl->counts + 2 * nprocs, ok, all_ok, rsum = 0;
    int *shc = ints, *shd = ints + nprocs, *rhc = ints + 2 * nprocs, *rhd = ints + 3 * nprocs;
    int *rdc = ints + 4 * nprocs, *rdd = ints + 5 * nprocs;
    int *scnt = NULL, *hpos = NULL, *bpos = NULL;
    MPI_Datatype *stypes = fl->types;
    struct send_side ss = {0};
    int64_t *rhdr = NULL;
    unsigned char *rdata = NULL;
    int rdata_own = 0;
    int64_t nsend = 0, nrecv = 0;
    int rc = MPI_SUCCESS;

    memset(scounts, 0, (size_t)nprocs * 2 * sizeof *scounts);
    for_each_piece(fl->p, first, &fl->rd, wstart, count_piece, scounts);
    SLUICE_PMPI(Alltoall)(scounts, 2, SLUICE_MPI_INT64, rcounts, 2, SLUICE_MPI_INT64, fl->comm);
    ok = to_int_counts(scounts, 0, HDR, nprocs, shc, shd) == 0 && to_int_counts(rcounts, 0, HDR, nprocs, rhc, rhd) == 0 &&
         to_int_counts(rcounts, 1, 1, nprocs, rdc, rdd) == 0;
    for (int r = 0; r < nprocs; r++) {
        nsend += scounts[2 * r];
        nrecv += rcounts[2 * r];
        rsum += rcounts[2 * r + 1];
    }
    if (ok) {
        ss.hdr = malloc((size_t)(nsend ? nsend : 1) * HDR * sizeof *ss.hdr);
        ss.blen = malloc((size_t)(nsend ? nsend : 1) * sizeof *ss.blen);
        ss.addr = malloc((size_t)(nsend ? nsend : 1) * sizeof *ss.addr);
        scnt = malloc((size_t)nprocs * 3 * sizeof *scnt);
        rhdr = malloc((size_t)(nrecv ? nrecv : 1) * HDR * sizeof *rhdr);
        /* Overlapping pieces arrive in a contiguous buffer: the round
         * buffer when they fit it, else one of their size. */
        if (nrecv && !fl->rbuf)
            fl->rbuf = malloc((size_t)fl->h->buffer_size);
        rdata = rsum > fl->h->buffer_size ? malloc((size_t)rsum) : fl->rbuf;
        rdata_own = rdata != fl->rbuf;   /* (the round buffers swap below) */
        ok = ss.hdr && ss.blen && ss.addr && scnt && rhdr && (!nrecv || (fl->rbuf && rdata));
    }
    for (int r = 0; r < nprocs; r++)
        stypes[r] = SLUICE_MPI_BYTE;
    if (ok) {
        hpos = scnt + nprocs;
        bpos = scnt + 2 * nprocs;
        memcpy(hpos, shd, (size_t)nprocs * sizeof *hpos);
        for (int r = 0, b = 0; r < nprocs; r++) {
            bpos[r] = b;
            b += (int)scounts[2 * r];
        }
        ss.hpos = hpos;
        ss.bpos = bpos;
        for_each_piece(fl->p, first, &fl->rd, wstart, fill_piece, &ss);
        for (int r = 0, b = 0; r < nprocs && ok; r++) {
            scnt[r] = scounts[2 * r] ? 1 : 0;
            ok = block_type((int)scounts[2 * r], ss.blen + b, ss.addr + b, &stypes[r]) == MPI_SUCCESS;
            b += (int)scounts[2 * r];
        }
    }
    sluice_acb_clock_mark(fl->clock, PHASE_PACK);
    SLUICE_PMPI(Allreduce)(&ok, &all_ok, 1, SLUICE_MPI_INT64, SLUICE_MPI_MIN, fl->comm);
    sluice_acb_clock_mark(fl->clock, PHASE_PLAN);
    if (!all_ok) {
        rc = -1;
        goto out;
    }
    for (int r = 0; r < nprocs; r++)
        fl->sent += scounts[2 * r + 1];
    fl->received += rsum;
    SLUICE_PMPI(Alltoallv)(ss.hdr, shc, shd, SLUICE_MPI_INT64, rhdr, rhc, rhd, SLUICE_MPI_INT64, fl->comm);
    sluice_acb_clock_mark(fl->clock, PHASE_HEADERS);
    rc = receive_and_write(fl, rhdr, rhc, rhd, rdc, rdd, rdata, scnt, stypes, rc);
    if (fl->nreqs[0] > 0) {
        int sw = swap_round_buffers(fl);
        rc = rc != MPI_SUCCESS ? rc : sw;
    }
    fl->st->rounds++;
out:
    free_types(stypes, nprocs);
    free(ss.hdr);
    free(ss.blen);
    free(ss.addr);
    free(scnt);
    free(rhdr);
    if (rdata_own)
        free(rdata);
    return rc;
}

/* The first window at or after from in which this rank has data, as a
 * window start; INT64_MAX when none. */
static int64_t next_window(const struct sluice_acb_pending *p, size_t first, int64_t from, int64_t window)
{
    int64_t best = INT64_MAX;

    for (size_t i = first; i < p->n; i++) {
        const struct sluice_acb_extent *e = &p->ext[i];
        int64_t at = e->off > from ? e->off : from;
        if (e->off + e->len > from && at / window * window < best)
            best = at / window * window;
        if (e->off >= from)
            break;   /* later extents start later still */
    }
    return best;
}

/* Keep only what p holds at or after offset from. */
static void drop_before(struct sluice_acb_pending *p, int64_t from)
{
    size_t out = 0;

    p->bytes = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct sluice_acb_extent e = p->ext[i];
        if (e.off + e.len <= from)
            continue;
        if (e.off < from) {
            e.data += from - e.off;
            e.len -= from - e.off;
            e.off = from;
        }
        p->ext[out++] = e;
        p->bytes += e.len;
    }
    p->n = out;
}

static int first_error_of(int a, int b)
{
    return a != MPI_SUCCESS ? a : b;
}

/* The rounds, until no rank has data left. The window after a round is
 * agreed on before the round runs, so that its aggregators know whether
 * another round follows (and may leave its writes in flight). */
int sluice_acb_run_rounds(struct sluice_acb_flush *fl)
{
    int64_t mine, next, after;
    size_t first = 0;
    int rc = MPI_SUCCESS;

    sluice_acb_pending_sort(fl->p);
    mine = next_window(fl->p, first, INT64_MIN, fl->rd.window);
    SLUICE_PMPI(Allreduce)(&mine, &next, 1, SLUICE_MPI_INT64, SLUICE_MPI_MIN, fl->comm);
    while (next != INT64_MAX) {
        mine = next_window(fl->p, first, next + fl->rd.window, fl->rd.window);
        SLUICE_PMPI(Allreduce)(&mine, &after, 1, SLUICE_MPI_INT64, SLUICE_MPI_MIN, fl->comm);
        fl->more = after != INT64_MAX;
        int r = run_round(fl, first, next);
        if (r == -1) {
            /* Buffers could not be had somewhere: from this window on,
             * every rank writes its own data. */
            rc = first_error_of(rc, first_error_of(wait_writes(fl, 0), wait_writes(fl, 1)));
            drop_before(fl->p, next);
            return first_error_of(rc, sluice_acb_write_own(fl->p, fl->h, fl->w, fl->st));
        }
        rc = first_error_of(rc, r);
        while (first < fl->p->n && fl->p->ext[first].off + fl->p->ext[first].len <= next + fl->rd.window)
            first++;
        next = after;
    }
    return first_error_of(rc, first_error_of(wait_writes(fl, 0), wait_writes(fl, 1)));
}

void sluice_acb_rounds_free(struct sluice_acb_flush *fl)
{
    free(fl->rbuf);
    free(fl->spare);
    free(fl->reqs[0]);
    free(fl->reqs[1]);
}
