/*
 * The PNETCDF_FILE and PNETCDF_VAR modules (docs/counters.md): PnetCDF files
 * and variables with Darshan's counters. wrappers.c defines PnetCDF's API
 * functions (the ones Darshan's module wraps: create, open, close, redef,
 * sync, wait, def_var, inq_varid and every put and get), each calling the
 * next definition and then one of the functions below when it succeeded.
 *
 * libsluice needs no PnetCDF headers or library: the types are MPI's and
 * int, the few queries (dimension lengths, a variable's type, the bytes
 * PnetCDF moved) are looked up in the loaded library by name.
 */
#ifndef SLUICE_PNETCDF_PNETCDF_H
#define SLUICE_PNETCDF_PNETCDF_H

#include <mpi.h>
#include <stdint.h>

#define SLUICE_NC_NOERR 0
#define SLUICE_NC_ENOTSUPPORTED (-128)   /* returned when the next definition cannot be found */

/* What a data call was: its family and its kind (counter offsets from
 * PNETCDF_VAR_PUT_VAR and from PNETCDF_VAR_PUT_VAR's family start). */
enum sluice_pnc_family { SLUICE_PNC_PUT, SLUICE_PNC_GET, SLUICE_PNC_IPUT, SLUICE_PNC_IGET, SLUICE_PNC_BPUT };
enum sluice_pnc_kind { SLUICE_PNC_VAR, SLUICE_PNC_VAR1, SLUICE_PNC_VARA, SLUICE_PNC_VARS, SLUICE_PNC_VARM,
                       SLUICE_PNC_VARN, SLUICE_PNC_VARD };

/* The shape of a data call: what it names, as its arguments give it. */
struct sluice_pnc_call {
    enum sluice_pnc_family family;
    enum sluice_pnc_kind kind;
    int collective;                  /* the _all form */
    const MPI_Offset *count;         /* vara, vars, varm */
    const MPI_Offset *stride;        /* vars, varm (NULL: 1) */
    int num;                         /* varn */
    MPI_Offset *const *counts;       /* varn (NULL: one element each) */
    MPI_Datatype filetype;           /* vard */
};

/* The next definition of a PnetCDF function (NULL when none is loaded). */
void *sluice_pnc_next(const char *name);

/* Files: after ncmpi_create/ncmpi_open (rc: what it returned; *ncidp set
 * when it succeeded), before and after ncmpi_close, after redef, sync,
 * wait and wait_all. */
void sluice_pnc_opened(const char *path, int create, int rc, const int *ncidp, uint64_t t0, uint64_t t1);
void sluice_pnc_closing(int ncid, int64_t *put_size, int64_t *get_size);
void sluice_pnc_closed(int ncid, int rc, int64_t put_size, int64_t get_size, uint64_t t0, uint64_t t1);
void sluice_pnc_file_call(int ncid, int rc, int counter, uint64_t t0, uint64_t t1);
void sluice_pnc_waited(int ncid, int rc, int collective, uint64_t t0, uint64_t t1);

/* Variables: after ncmpi_def_var (xtype, ndims, dimids given) and
 * ncmpi_inq_varid (asked of the library). */
void sluice_pnc_var_defined(int ncid, const char *name, int xtype, int ndims, const int *dimids, int rc,
                            const int *varidp, uint64_t t0, uint64_t t1);
void sluice_pnc_var_found(int ncid, const char *name, int rc, const int *varidp, uint64_t t0, uint64_t t1);

/* A data call on (ncid, varid) that returned rc. */
void sluice_pnc_data(int ncid, int varid, int rc, const struct sluice_pnc_call *call, uint64_t t0, uint64_t t1);

#endif
