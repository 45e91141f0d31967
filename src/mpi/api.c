/*
 * libsluice-mpi: the explicit ACB API (include/sluice/sluice_acb.h) over the
 * engine in src/acb/. The aggregators write with the public
 * MPI_File_write_at, so that a profiler (sluice's own MPIIO module
 * included) sees the writes that reach MPI-IO; collectives go through PMPI.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acb/acb.h"
#include "sluice/sluice_acb.h"

#define API __attribute__((visibility("default")))

struct sluice_acb_file {
    MPI_File fh;                   /* opened on comm, default view */
    MPI_Comm comm;                 /* private duplicate for the exchange */
    struct sluice_acb_hints hints;
    struct sluice_acb_pending pending;
    struct sluice_acb_stats stats;
};

static int write_at(void *ctx, int64_t off, const void *buf, int64_t len)
{
    struct sluice_acb_file *f = ctx;
    return MPI_File_write_at(f->fh, (MPI_Offset)off, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
}

API int sluice_acb_open(MPI_Comm comm, const char *path, MPI_Info info, struct sluice_acb_file **file)
{
    struct sluice_acb_file *f;
    int rc, ok, all_ok;

    *file = NULL;
    if (sluice_pmpi_load() != 0)
        return MPI_ERR_OTHER;
    f = calloc(1, sizeof *f);
    rc = MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, f ? &f->fh : &(MPI_File){0});
    if (rc != MPI_SUCCESS) {
        free(f);
        return rc;
    }
    ok = f && PMPI_Comm_dup(comm, &f->comm) == MPI_SUCCESS;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (f && ok)
            PMPI_Comm_free(&f->comm);
        if (f)
            MPI_File_close(&f->fh);
        free(f);
        return MPI_ERR_NO_MEM;
    }
    sluice_acb_hints_apply(&f->hints, info);
    *file = f;
    return MPI_SUCCESS;
}

API int sluice_acb_put(struct sluice_acb_file *f, int64_t offset, const void *buf, int64_t len)
{
    unsigned char *dst;

    if (!f || offset < 0 || len < 0 || (len > 0 && !buf))
        return MPI_ERR_ARG;
    if (len == 0)
        return MPI_SUCCESS;
    if (f->pending.bytes + len > f->hints.max_memory) {
        /* Over the cap: what this rank holds goes out now, independently. */
        struct sluice_acb_writer w = {write_at, f, NULL};
        int rc = sluice_acb_write_own(&f->pending, &f->hints, &w, &f->stats);
        if (rc != MPI_SUCCESS)
            return rc;
        if (len > f->hints.max_memory)
            return write_at(f, offset, buf, len);
    }
    if ((dst = sluice_acb_pending_add(&f->pending, offset, len)) == NULL)
        return MPI_ERR_NO_MEM;
    memcpy(dst, buf, (size_t)len);
    return MPI_SUCCESS;
}

API int sluice_acb_flush(struct sluice_acb_file *f)
{
    struct sluice_acb_writer w = {write_at, f, NULL};
    return sluice_acb_exchange(&f->pending, f->comm, &f->hints, &w, &f->stats);
}

API int sluice_acb_close(struct sluice_acb_file **file)
{
    struct sluice_acb_file *f = *file;
    int rc, close_rc;

    if (!f)
        return MPI_ERR_ARG;
    rc = sluice_acb_flush(f);
    close_rc = MPI_File_close(&f->fh);
    PMPI_Comm_free(&f->comm);
    sluice_acb_pending_clear(&f->pending);
    free(f);
    *file = NULL;
    return rc != MPI_SUCCESS ? rc : close_rc;
}

API int64_t sluice_acb_pending_bytes(const struct sluice_acb_file *f)
{
    return f ? f->pending.bytes : 0;
}

API int64_t sluice_acb_writes_issued(const struct sluice_acb_file *f)
{
    return f ? f->stats.writes : 0;
}

API int sluice_acb_open_f(MPI_Fint comm, const char *path, MPI_Fint info, struct sluice_acb_file **file)
{
    return sluice_acb_open(MPI_Comm_f2c(comm), path, MPI_Info_f2c(info), file);
}
