/*
 * Reads the file pnc_write wrote, through one PnetCDF call of each kind the
 * PNETCDF_VAR counters tell apart, for tests/python/test_pnetcdf.py:
 *   mpirun -np N pnc_read FILE.nc
 * Every rank: elev whole (get_var, independent), one element of mask
 * (get_var1), every other row and column of temp's record 0 (get_vars_all,
 * collective), temp's record 1 posted non-blocking (iget_vara) and completed
 * by wait_all, and an inq_varid of a name the file does not have (its
 * error returned as PnetCDF gives it). Prints "ok" after checking values;
 * exits 1 on any other error.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define NY 12
#define NX 16

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int err_ = (call);                                                                 \
        if (err_ != NC_NOERR) {                                                            \
            fprintf(stderr, "pnc_read:%d: %s: %s\n", __LINE__, #call, ncmpi_strerror(err_)); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    int ncid, v_elev, v_mask, v_temp, missing, req, status, one;
    static double elev[NY * NX];
    static float sub[NY / 2 * NX / 2], rec1[NY * NX];

    MPI_Init(&argc, &argv);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    CHECK(ncmpi_open(MPI_COMM_WORLD, argv[1], NC_NOWRITE, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_inq_varid(ncid, "elev", &v_elev));
    CHECK(ncmpi_inq_varid(ncid, "mask", &v_mask));
    CHECK(ncmpi_inq_varid(ncid, "temp", &v_temp));
    if (ncmpi_inq_varid(ncid, "nosuch", &missing) != NC_ENOTVAR) {
        fprintf(stderr, "pnc_read: inq_varid of a missing name did not give NC_ENOTVAR\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    CHECK(ncmpi_get_vars_float_all(ncid, v_temp, (MPI_Offset[]){0, 0, 0}, (MPI_Offset[]){1, NY / 2, NX / 2},
                                   (MPI_Offset[]){1, 2, 2}, sub));
    CHECK(ncmpi_iget_vara_float(ncid, v_temp, (MPI_Offset[]){1, 0, 0}, (MPI_Offset[]){1, NY, NX}, rec1, &req));
    CHECK(ncmpi_wait_all(ncid, 1, &req, &status));
    CHECK(status);

    CHECK(ncmpi_begin_indep_data(ncid));
    CHECK(ncmpi_get_var_double(ncid, v_elev, elev));
    CHECK(ncmpi_get_var1_int(ncid, v_mask, (MPI_Offset[]){5, 7}, &one));
    CHECK(ncmpi_end_indep_data(ncid));
    CHECK(ncmpi_close(ncid));

    /* values pnc_write put there (value(var, rec, y, x) = var*1000 + rec*100 + y + x/64) */
    int bad = elev[5 * NX + 7] != 1000.0 + 5 + 7 / 64.0 || one != (int)(2000.0 + 5 + 7 / 64.0) ||
              sub[1 * (NX / 2) + 3] != (float)(3000.0 + 2 + 6 / 64.0) || rec1[NX + 1] != (float)(3100.0 + 1 + 1 / 64.0);
    if (bad) {
        fprintf(stderr, "pnc_read: wrong values\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("ok\n");
    MPI_Finalize();
    return 0;
}
