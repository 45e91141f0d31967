/*
 * Aggregated Collective Buffering (ACB): the engine shared by transparent
 * aggregation of MPI-IO writes (`--mode acb`, src/mpi/) and the explicit API
 * of libsluice-mpi (include/sluice/sluice_acb.h).
 *
 * Each rank keeps the writes it has not yet made visible as a list of
 * (file offset, length, copy of the data): its pending writes. At a
 * collective point (MPI_File_sync, close, set_size, sluice_acb_flush) every
 * rank of the file's communicator calls sluice_acb_exchange(): the ranks send
 * their pending bytes to a few aggregator ranks, each owning the stripes
 * (file domains) `stripe index % aggregators`, and the aggregators write
 * what they received as large contiguous writes. Bytes no rank wrote are
 * never written (holes between runs stay holes).
 *
 * Memory: a rank holds its pending data (bounded by max_memory; beyond it
 * the caller writes it out with sluice_acb_write_own() and stops
 * aggregating); an aggregator additionally holds what it receives in one
 * flush. Not thread-safe: one file is used by one thread at a time, as MPI-IO
 * requires of collective calls.
 */
#ifndef SLUICE_ACB_ACB_H
#define SLUICE_ACB_ACB_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/pmpi.h"

/* Tunables, from the environment and then MPI_Info hints (docs/acb.md). */
struct sluice_acb_hints {
    int64_t aggregators;   /* aggregator ranks; 0: per_node on each node (capped by stripes touched) */
    int64_t per_node;      /* aggregators per node when aggregators is 0 (cb_config_list "*:N"); 0: 1 */
    int64_t stripe_size;   /* bytes per file domain unit (the file system's stripe) */
    int64_t write_size;    /* largest write an aggregator issues; writes end on multiples of it */
    int64_t max_memory;    /* pending bytes a rank may hold per file before it stops aggregating */
    int64_t direct_size;   /* the cost model's unit: writes this large go straight through */
    int64_t buffer_size;   /* bytes an aggregator receives per round of a flush (cb_buffer_size) */
};

#define SLUICE_ACB_DEFAULT_STRIPE (1 << 20)
#define SLUICE_ACB_DEFAULT_WRITE (16 << 20)
#define SLUICE_ACB_DEFAULT_MEMORY ((int64_t)1 << 30)
/* Below 64 KiB the cost of a call dominates a write on every file system
 * measured (tmpfs, ext4, MooseFS; docs/benchmarks.md "IOR-style"). */
#define SLUICE_ACB_DEFAULT_DIRECT (64 << 10)
#define SLUICE_ACB_DEFAULT_BUFFER (16 << 20)   /* ROMIO's cb_buffer_size */

/* Defaults for every field still 0, then overrides from info (may be
 * MPI_INFO_NULL): cb_nodes / sluice_acb_aggregators, striping_unit /
 * sluice_acb_stripe_size, sluice_acb_write_size, sluice_acb_max_memory,
 * sluice_acb_direct_size, cb_buffer_size, cb_config_list ("*:N" or "*:*" only:
 * N aggregators on each node, or every rank). */
void sluice_acb_hints_apply(struct sluice_acb_hints *h, MPI_Info info);

/* One pending write. */
struct sluice_acb_extent {
    int64_t off, len;              /* file byte range */
    const unsigned char *data;     /* len bytes, owned by the pending list */
    uint64_t seq;                  /* program order: later writes win on overlap */
    uint64_t epoch;                /* the list's epoch when it was added */
};

struct sluice_acb_chunk;

struct sluice_acb_pending {
    struct sluice_acb_extent *ext; /* in arrival order until normalised */
    size_t n, cap;
    struct sluice_acb_chunk *chunks; /* data storage, newest first */
    int64_t bytes;                 /* sum of ext[].len */
    uint64_t seq;                  /* next sequence number */
    /* Set by the caller before adding: orders overlapping writes of
     * different ranks. Every rank counts the collective calls on the file
     * alike, so a write made after collective call k carries a larger epoch
     * on every rank than one made in or before it (an HDF5 chunk's fill,
     * written collectively, then its data, written by another rank). */
    uint64_t epoch;
};

/* Room for len bytes at file offset off; the caller fills it. NULL when out
 * of memory (nothing was added). */
unsigned char *sluice_acb_pending_add(struct sluice_acb_pending *p, int64_t off, int64_t len);

/* Add a write whose data stays owned by the caller until the list is
 * cleared (an aggregator's receive buffer). 0 or -ENOMEM. */
int sluice_acb_pending_add_ref(struct sluice_acb_pending *p, int64_t off, int64_t len, const unsigned char *data);

/* 1 if [off, off + len) overlaps a pending write. */
int sluice_acb_pending_overlaps(const struct sluice_acb_pending *p, int64_t off, int64_t len);

/* Sort by offset and resolve overlaps (the later write wins), so that the
 * extents are disjoint and ascending. 0 or -ENOMEM. */
int sluice_acb_pending_normalize(struct sluice_acb_pending *p);

/* Sort by offset, then program order, keeping every extent (overlaps
 * stay for the receiving aggregator to resolve by epoch). */
void sluice_acb_pending_sort(struct sluice_acb_pending *p);

/* 1 if every pending write carries the same epoch (normalising then loses
 * nothing another rank's writes are ordered against). */
int sluice_acb_pending_one_epoch(const struct sluice_acb_pending *p);

/* Drop every pending write and free the data. */
void sluice_acb_pending_clear(struct sluice_acb_pending *p);

/* How the engine writes: len bytes at byte offset off of the file. Returns
 * MPI_SUCCESS or an MPI error code. iwrite_at, when not NULL, starts the
 * same write and gives its request (buf must stay until it completes): an
 * aggregator then writes one round while it exchanges the next. */
struct sluice_acb_writer {
    int (*write_at)(void *ctx, int64_t off, const void *buf, int64_t len);
    void *ctx;
    int (*iwrite_at)(void *ctx, int64_t off, const void *buf, int64_t len, MPI_Request *req);
};

struct sluice_acb_stats {
    int64_t writes;                /* writes this rank issued */
    int64_t bytes;                 /* bytes they carried */
    int64_t rounds;                /* exchange rounds (each at most buffer_size per aggregator) */
    int own;                       /* the flush exchanged nothing: every rank wrote its own data */
};

/* Collective over comm: exchange every rank's pending writes and let the
 * aggregators write them, in rounds of at most buffer_size bytes per
 * aggregator; the pending list is empty afterwards. When every rank's
 * pending data already forms runs of direct_size or more (sequential
 * per-rank regions), all in one epoch, each rank writes its own instead
 * (st->own), with no exchange. Where the
 * writes of different ranks overlap, the larger epoch wins, then the higher
 * rank; a rank's own later write beats its earlier one. Returns
 * MPI_SUCCESS on every rank, or the same MPI error code on every rank when
 * any write failed. The call returns only after every aggregator finished,
 * so the data is visible to all ranks (MPI's sync-barrier-sync). */
int sluice_acb_exchange(struct sluice_acb_pending *p, MPI_Comm comm, const struct sluice_acb_hints *h,
                     const struct sluice_acb_writer *w, struct sluice_acb_stats *st);

/* Write the disjoint, ascending extents of p as runs of touching extents,
 * each cut where a multiple of write_size falls (a run that spans several
 * extents is copied into one buffer per write). MPI_SUCCESS or the first
 * write's error. */
int sluice_acb_write_runs(const struct sluice_acb_pending *p, int64_t write_size, const struct sluice_acb_writer *w,
                          struct sluice_acb_stats *st);

/* Independent: write this rank's own pending writes, coalesced into runs,
 * and empty the list (the memory-cap and atomic-mode fallbacks, reads of
 * pending ranges). MPI_SUCCESS or the first write's error. */
int sluice_acb_write_own(struct sluice_acb_pending *p, const struct sluice_acb_hints *h,
                         const struct sluice_acb_writer *w, struct sluice_acb_stats *st);

#endif
