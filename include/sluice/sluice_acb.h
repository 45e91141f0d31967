/*
 * libsluice-mpi: Aggregated Collective Buffering for codes that write many
 * small blocks of one shared file (link with -lsluice-mpi; docs/acb.md).
 *
 * Each rank puts any number of (offset, buffer, length) blocks; nothing is
 * written until a collective flush or close, where the ranks hand their
 * blocks to a few aggregator ranks that write large, stripe-aligned,
 * contiguous pieces. Bytes no rank put are never written.
 *
 * Every function returns MPI_SUCCESS or an MPI error code. Collective calls
 * (open, flush, close) return the same code on every rank.
 *
 * MPI_Info hints (all optional): cb_nodes or sluice_acb_aggregators
 * (aggregator count; default one per node), striping_unit or
 * sluice_acb_stripe_size (bytes per file domain; default 1 MiB),
 * sluice_acb_write_size (largest write; default 16 MiB),
 * sluice_acb_max_memory (bytes a rank may hold before its puts are written
 * at once, independently; default 1 GiB). Sizes take K, M, G suffixes.
 */
#ifndef SLUICE_ACB_H
#define SLUICE_ACB_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sluice_acb_file;

/* Collective over comm: open (creating if needed) the file at path for
 * writing. The hints in info (may be MPI_INFO_NULL) are read now. */
int sluice_acb_open(MPI_Comm comm, const char *path, MPI_Info info, struct sluice_acb_file **file);

/* Local: keep a copy of len bytes of buf, to be written at byte offset
 * offset. buf may be reused as soon as this returns. A later put over the
 * same bytes from the same rank wins. */
int sluice_acb_put(struct sluice_acb_file *file, int64_t offset, const void *buf, int64_t len);

/* Collective: write everything put so far; on return the data is in the
 * file and visible to every rank. */
int sluice_acb_flush(struct sluice_acb_file *file);

/* Collective: flush, close and free the file; *file becomes NULL. */
int sluice_acb_close(struct sluice_acb_file **file);

/* Bytes this rank holds, and writes it issued as an aggregator so far. */
int64_t sluice_acb_pending_bytes(const struct sluice_acb_file *file);
int64_t sluice_acb_writes_issued(const struct sluice_acb_file *file);

/* Fortran's entry points (module sluice_acb, fortran/sluice_acb.f90):
 * handles as MPI_Fint, the file as an opaque pointer. */
int sluice_acb_open_f(MPI_Fint comm, const char *path, MPI_Fint info, struct sluice_acb_file **file);

#ifdef __cplusplus
}
#endif

#endif
