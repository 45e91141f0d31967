/*
 * MPI datatypes as lists of (displacement, length) byte blocks, and file
 * views as maps from a rank's data stream to file offsets. Aggregation keeps
 * pending writes at file byte offsets, so a write through a view with a
 * derived filetype (HDF5 hyperslabs, say) is flattened when it is made.
 *
 * Decoded through MPI_Type_get_envelope / get_contents: contiguous, vector,
 * hvector, indexed, hindexed, (h)indexed_block, struct, subarray, resized and
 * dup, nested freely. darray and the Fortran parameterised types are not
 * decoded (-ENOTSUP): such a file is left to MPI-IO (pass-through).
 */
#ifndef SLUICE_ACB_VIEW_H
#define SLUICE_ACB_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/pmpi.h"

struct sluice_acb_block {
    int64_t off, len;
};

struct sluice_acb_flat {
    struct sluice_acb_block *b;    /* in typemap order; touching blocks merged */
    size_t n, cap;
    int64_t size;                  /* sum of lengths (MPI_Type_size) */
    int64_t extent;                /* distance between repetitions (MPI_Type_get_extent) */
    int64_t *prefix;               /* prefix[i]: bytes before block i (n + 1 entries) */
};

/* Flatten t into f (which must be zeroed or freed). 0, -ENOTSUP, -ENOMEM or
 * -E2BIG (more blocks than sluice keeps). */
int sluice_acb_flatten(MPI_Datatype t, struct sluice_acb_flat *f);

void sluice_acb_flat_free(struct sluice_acb_flat *f);

/* 1 if the flattened type is one block starting at 0 and as long as its extent. */
int sluice_acb_flat_contiguous(const struct sluice_acb_flat *f);

/* Call piece(ctx, file offset, length, offset in the stream range) for each
 * piece of the view's stream bytes [pos, pos + n), the view being the
 * filetype f tiled from byte disp. Stops at the first non-zero return. */
int sluice_acb_view_map(const struct sluice_acb_flat *f, int64_t disp, int64_t pos, int64_t n,
                        int (*piece)(void *ctx, int64_t file_off, int64_t len, int64_t data_off), void *ctx);

#endif
