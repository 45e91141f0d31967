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
    const int *ranks;    /* when not NULL, the rank of aggregator a is ranks[a] */
};

/* How many aggregators: `requested` if > 0, else one per node; never more
 * than nprocs nor than the stripes that [lo, hi) touches, never fewer than 1. */
int sluice_acb_plan_naggs(int64_t requested, int nnodes, int nprocs, int64_t lo, int64_t hi, int64_t stripe);

/* The rank of aggregator a: ranks[a] when the plan has them (the node
 * order, below), else spread evenly over the ranks. */
int sluice_acb_plan_agg_rank(const struct sluice_acb_plan *pl, int a);

/* The order in which ranks become aggregators, from each rank's rank within
 * its node (local[r], numbered in rank order): the first rank of every node,
 * in rank order, then the second of every node, and so on, so that N
 * aggregators are one per node for N up to the node count, whatever the
 * ranks' placement (by slot or round-robin), as ROMIO's cb_config_list
 * "*:1" places them. Fills order[0..nprocs), using start[0..nprocs] as
 * scratch (no allocation: every rank must reach the same plan); returns the
 * number of nodes. Each local[r] is in [0, nprocs). */
int sluice_acb_plan_node_order(const int *local, int nprocs, int *order, int *start);

/* The aggregator owning byte off. */
int sluice_acb_plan_owner(const struct sluice_acb_plan *pl, int64_t off);

/* The end of the piece of [off, end) that starts at off and has one owner. */
int64_t sluice_acb_plan_piece_end(const struct sluice_acb_plan *pl, int64_t off, int64_t end);

/* The end of the write that starts at off within a run ending at end: writes
 * stop at multiples of write_size, so they stay stripe aligned when
 * write_size is a multiple of the stripe. */
int64_t sluice_acb_plan_write_end(int64_t write_size, int64_t off, int64_t end);

#endif
