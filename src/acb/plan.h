/*
 * Aggregator and file-domain arithmetic, free of MPI so that it is tested on
 * its own (tests/unit/test_acb_plan.c). File domains follow the layout of a
 * striped file: stripe k belongs to aggregator k % aggregators (as ROMIO's
 * Lustre driver assigns them), so each aggregator's writes fall on its own
 * stripes and, with one aggregator per stripe target, on one server.
 */
#ifndef SLUICE_ACB_PLAN_H
#define SLUICE_ACB_PLAN_H

#include <stdint.h>

struct sluice_acb_plan {
    int64_t stripe;      /* bytes per stripe, > 0 */
    int naggs;           /* aggregators, 1..nprocs */
    int nprocs;          /* ranks in the communicator */
};

/* How many aggregators: `requested` if > 0, else one per node; never more
 * than nprocs nor than the stripes that [lo, hi) touches, never fewer than 1. */
int sluice_acb_plan_naggs(int64_t requested, int nnodes, int nprocs, int64_t lo, int64_t hi, int64_t stripe);

/* The rank of aggregator a: spread evenly over the ranks (with ranks placed
 * node by node, one aggregator per node lands on each node). */
int sluice_acb_plan_agg_rank(const struct sluice_acb_plan *pl, int a);

/* The aggregator owning byte off. */
int sluice_acb_plan_owner(const struct sluice_acb_plan *pl, int64_t off);

/* The end of the piece of [off, end) that starts at off and has one owner. */
int64_t sluice_acb_plan_piece_end(const struct sluice_acb_plan *pl, int64_t off, int64_t end);

/* The end of the write that starts at off within a run ending at end: writes
 * stop at multiples of write_size, so they stay stripe aligned when
 * write_size is a multiple of the stripe. */
int64_t sluice_acb_plan_write_end(int64_t write_size, int64_t off, int64_t end);

#endif
