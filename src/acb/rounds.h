/*
 * The rounds of an aggregated exchange (see exchange.c): each round covers
 * one window of the file in which every aggregator owns at most
 * buffer_size bytes; the data is sent straight from the pending writes and,
 * when an aggregator's pieces do not overlap, received straight to their
 * places in its round buffer, which it writes as it is.
 */
#ifndef SLUICE_ACB_ROUNDS_H
#define SLUICE_ACB_ROUNDS_H

#include <stdint.h>

#include "acb/acb.h"
#include "acb/flush_clock.h"
#include "acb/plan.h"

/* A window is at most this, so that every MPI count of a round fits an int. */
#define SLUICE_ACB_MAX_WINDOW ((int64_t)1 << 30)

/* The rounds of one flush: round k covers the file window
 * [k * window, (k + 1) * window), in which each aggregator owns `spr`
 * stripes (at most buffer_size bytes). */
struct sluice_acb_rounds {
    struct sluice_acb_plan pl;
    int64_t spr, window;
};

/* Per-flush state of the rounds. */
struct sluice_acb_flush {
    struct sluice_acb_pending *p;
    MPI_Comm comm;
    int nprocs;
    const struct sluice_acb_hints *h;
    const struct sluice_acb_writer *w;
    struct sluice_acb_stats *st;
    struct sluice_acb_rounds rd;
    struct flush_clock *clock;
    unsigned char *rbuf;           /* an aggregator's round buffer, buffer_size bytes */
    /* Overlap (writer with iwrite_at): the round buffer's writes may still
     * be in flight while the next round is exchanged into the spare one. */
    unsigned char *spare;          /* the other round buffer, made on first use */
    MPI_Request *reqs[2];          /* writes in flight from rbuf [0] and spare [1] */
    int nreqs[2], capreqs[2];
    int more;                      /* a round follows this one */
    int64_t *counts;               /* 4 * nprocs: sent then received (pieces, bytes) per rank */
    int *ints;                     /* 8 * nprocs */
    MPI_Datatype *types;           /* 2 * nprocs */
    int *order;                    /* nprocs: the aggregators' ranks, in order (plan.h) */
    int64_t sent, received;
};

/* Collective: the rounds, until no rank has data left; every write done on
 * return. Returns this rank's MPI result (the caller agrees on it). */
int sluice_acb_run_rounds(struct sluice_acb_flush *fl);

/* Free the round buffers and request lists (the writes are complete). */
void sluice_acb_rounds_free(struct sluice_acb_flush *fl);

#endif
