/*
 * The cost model of ACB: what is not worth aggregating goes straight
 * through. Aggregation pays for a copy and an exchange with fewer, larger
 * writes; a write that is already a whole unit of the file system (its
 * preferred I/O size: the stripe on Lustre, the block on MooseFS) gains
 * nothing from them. Free of MPI, so that it is tested on its own.
 */
#ifndef SLUICE_ACB_COST_H
#define SLUICE_ACB_COST_H

#include <stdint.h>

#include "acb/acb.h"

/* 1 if a write of len bytes at file offset off is worth making as it is:
 * at least one unit starting on a unit boundary, or at least four units
 * anywhere (its unaligned edges are then a small part of it). */
int sluice_acb_cost_direct(int64_t unit, int64_t off, int64_t len);

/* 1 if the disjoint, ascending extents of p form runs of touching extents
 * that are unit bytes or more on average (a rank's sequential region):
 * writing them as they are costs no more than after an exchange. */
int sluice_acb_cost_runs_large(const struct sluice_acb_pending *p, int64_t unit);

#endif
