/*
 * The MPI library, reached without linking to it. libsluice.so is preloaded
 * into serial programs too, so it must not depend on libmpi: the MPI
 * functions and predefined handles sluice uses are looked up by name the
 * first time an MPI-IO call arrives (by then libmpi is loaded, whether the
 * program linked it or dlopened it, as Python's mpi4py does).
 *
 * Built against Open MPI's mpi.h (handles are pointers to library objects);
 * with another MPI the lookup of the Open MPI objects fails and sluice stays
 * out of the way (sluice_pmpi_load() returns -ENOSYS).
 */
#ifndef SLUICE_MPI_PMPI_H
#define SLUICE_MPI_PMPI_H

#include <mpi.h>

struct sluice_pmpi {
#define SLUICE_PMPI_FUNC(ret, name, params) ret (*name) params;
#define SLUICE_MPI_OBJECT(field, symbol) void *field;
#include "mpi/pmpi.def"
};

extern struct sluice_pmpi sluice__pmpi;   /* cross-file: mpi/ and acb/ */

/* Resolve the table once (thread-safe). 0, or -ENOSYS when this process has
 * no Open MPI library loaded. */
int sluice_pmpi_load(void);

/* The library handle to search when a symbol is not in the global scope
 * (libmpi dlopened privately); NULL when there is none. */
void *sluice_pmpi_library(void);

#define SLUICE_PMPI(name) (sluice__pmpi.name)
#define SLUICE_MPI_COMM_SELF ((MPI_Comm)sluice__pmpi.comm_self)
#define SLUICE_MPI_COMM_NULL ((MPI_Comm)sluice__pmpi.comm_null)
#define SLUICE_MPI_INFO_NULL ((MPI_Info)sluice__pmpi.info_null)
#define SLUICE_MPI_FILE_NULL ((MPI_File)sluice__pmpi.file_null)
#define SLUICE_MPI_DATATYPE_NULL ((MPI_Datatype)sluice__pmpi.datatype_null)
#define SLUICE_MPI_BYTE ((MPI_Datatype)sluice__pmpi.byte)
#define SLUICE_MPI_INT64 ((MPI_Datatype)sluice__pmpi.int64)
#define SLUICE_MPI_INT ((MPI_Datatype)sluice__pmpi.int_type)
#define SLUICE_MPI_MIN ((MPI_Op)sluice__pmpi.op_min)
#define SLUICE_MPI_MAX ((MPI_Op)sluice__pmpi.op_max)
#define SLUICE_MPI_SUM ((MPI_Op)sluice__pmpi.op_sum)

#endif
