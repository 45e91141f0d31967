/*
 * The aggregated collective exchange (see acb.h), collective over the
 * file's communicator:
 *   1. allreduce: the byte range written by anyone, whether anyone failed,
 *      and whether every rank's data already forms large runs in one epoch
 *      (then each rank writes its own: the cost model, cost.h);
 *   2. allgather of each rank's rank within its node: how many nodes, and
 *      which ranks aggregate (one per node first, whatever the placement);
 *   3. rounds, each over one window of the file in which every aggregator
 *      owns at most buffer_size bytes (cb_buffer_size): allreduce of the
 *      next window anyone has data in, alltoall of the pieces and bytes each
 *      rank sends each aggregator, allreduce that all buffers were had,
 *      alltoallv of the (offset, length, epoch, sequence) headers, and one
 *      alltoallw of the data: sent straight from the pending writes and, when
 *      the pieces an aggregator receives do not overlap, received straight
 *      to their places in its round buffer, which it then writes as it is;
 *   4. after the last round, allreduce of the result, which is also the
 *      barrier that makes the data visible to every rank.
 * A window is at most 1 GiB, so every MPI count fits an int; with more
 * aggregators than that allows, or when buffers cannot be had, every rank
 * writes its own data (sluice_acb_write_own) instead.
 */
#include <stdlib.h>

#include "acb/acb.h"
#include "acb/cost.h"
#include "acb/flush_clock.h"
#include "acb/plan.h"
#include "acb/rounds.h"

/* Each rank's rank within its node, gathered into the order in which
 * ranks become aggregators (plan.h); returns the number of nodes. local
 * and scratch hold nprocs + 1 ints. Every rank calls the same collectives
 * whatever fails on it: a rank whose node cannot be told counts as a node
 * of its own. */
static int node_order(MPI_Comm comm, int nprocs, int *order, int *local, int *scratch)
{
    MPI_Comm node;
    int mine = 0;

    if (SLUICE_PMPI(Comm_split_type)(comm, MPI_COMM_TYPE_SHARED, 0, SLUICE_MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        SLUICE_PMPI(Comm_rank)(node, &mine);
        SLUICE_PMPI(Comm_free)(&node);
    }
    if (SLUICE_PMPI(Allgather)(&mine, 1, SLUICE_MPI_INT, local, 1, SLUICE_MPI_INT, comm) != MPI_SUCCESS)
        for (int r = 0; r < nprocs; r++)
            local[r] = 0;
    return sluice_acb_plan_node_order(local, nprocs, order, scratch);
}

int sluice_acb_exchange(struct sluice_acb_pending *p, MPI_Comm comm, const struct sluice_acb_hints *h,
                        const struct sluice_acb_writer *w, struct sluice_acb_stats *st)
{
    struct flush_clock clock = {0};
    struct sluice_acb_flush fl = {.p = p, .comm = comm, .h = h, .w = w, .st = st, .clock = &clock};
    int64_t local[6], global[6], rc64, rc_all, writes_before = st->writes, rounds_before = st->rounds, wanted;
    int rc = MPI_SUCCESS, one_epoch, nodes;

    sluice_acb_clock_start(&clock);
    st->own = 0;
    SLUICE_PMPI(Comm_size)(comm, &fl.nprocs);
    fl.counts = calloc((size_t)fl.nprocs * 4, sizeof *fl.counts);
    fl.ints = calloc((size_t)fl.nprocs * 8, sizeof *fl.ints);
    fl.types = calloc((size_t)fl.nprocs * 2, sizeof *fl.types);
    fl.order = calloc((size_t)fl.nprocs, sizeof *fl.order);
    /* Resolving this rank's own overlaps first sends less, but a merged
     * extent has one epoch: only when all of them share it. */
    one_epoch = sluice_acb_pending_one_epoch(p);
    if (!fl.counts || !fl.ints || !fl.types || !fl.order || (one_epoch && sluice_acb_pending_normalize(p) != 0))
        rc = MPI_ERR_NO_MEM;
    local[0] = local[1] = local[4] = local[5] = INT64_MAX;
    for (size_t i = 0; i < p->n; i++) {
        if (p->ext[i].off < local[0])
            local[0] = p->ext[i].off;
        if (-(p->ext[i].off + p->ext[i].len) < local[1])
            local[1] = -(p->ext[i].off + p->ext[i].len);
    }
    local[2] = rc == MPI_SUCCESS ? 0 : -1;
    /* The cost model: this rank's data already forms large runs. */
    local[3] = one_epoch && sluice_acb_cost_runs_large(p, h->direct_size) ? 0 : -1;
    if (p->n) {
        local[4] = (int64_t)p->ext[0].epoch;
        local[5] = -(int64_t)p->ext[0].epoch;
    }
    SLUICE_PMPI(Allreduce)(local, global, 6, SLUICE_MPI_INT64, SLUICE_MPI_MIN, comm);
    if (global[2] != 0) {
        /* Someone is out of memory already: every rank writes its own data. */
        rc = sluice_acb_write_own(p, h, w, st);
        goto agree;
    }
    if (global[0] == INT64_MAX)
        goto agree;   /* nothing pending anywhere */
    if (global[3] == 0 && global[4] == -global[5]) {
        /* Every rank's data is in large runs, all of one epoch: an exchange
         * would only copy it. Each rank writes its own. */
        st->own = 1;
        rc = sluice_acb_write_own(p, h, w, st);
        goto agree;
    }
    /* (fl.ints is free until the rounds: the gathered local ranks and the scratch) */
    nodes = node_order(comm, fl.nprocs, fl.order, fl.ints, fl.ints + fl.nprocs + 1);
    fl.rd.pl = (struct sluice_acb_plan){.stripe = h->stripe_size, .nprocs = fl.nprocs, .ranks = fl.order};
    wanted = h->aggregators > 0 ? 1 : (int64_t)nodes * h->per_node;
    fl.rd.pl.naggs = sluice_acb_plan_naggs(h->aggregators, (int)(wanted < fl.nprocs ? wanted : fl.nprocs),
                                           fl.nprocs, global[0], -global[1], h->stripe_size);
    fl.rd.spr = h->buffer_size / h->stripe_size;
    if ((int64_t)fl.rd.pl.naggs * h->stripe_size > SLUICE_ACB_MAX_WINDOW) {
        rc = sluice_acb_write_own(p, h, w, st);
        goto agree;
    }
    if (fl.rd.spr * fl.rd.pl.naggs * h->stripe_size > SLUICE_ACB_MAX_WINDOW)
        fl.rd.spr = SLUICE_ACB_MAX_WINDOW / ((int64_t)fl.rd.pl.naggs * h->stripe_size);
    fl.rd.window = fl.rd.spr * fl.rd.pl.naggs * h->stripe_size;
    sluice_acb_clock_mark(&clock, PHASE_PLAN);
    rc = sluice_acb_run_rounds(&fl);

agree:
    sluice_acb_clock_mark(&clock, PHASE_WRITE);
    rc64 = rc;
    SLUICE_PMPI(Allreduce)(&rc64, &rc_all, 1, SLUICE_MPI_INT64, SLUICE_MPI_MAX, comm);
    sluice_acb_clock_mark(&clock, PHASE_AGREE);
    sluice_acb_clock_print(&clock, comm, fl.rd.pl.naggs, fl.sent, fl.received, st, writes_before, rounds_before);
    sluice_acb_pending_clear(p);
    sluice_acb_rounds_free(&fl);
    free(fl.counts);
    free(fl.ints);
    free(fl.types);
    free(fl.order);
    return (int)rc_all;
}
