/*
 * A netCDF-4 (HDF5) file written in parallel the way AMR codes write
 * checkpoints, for the ACB byte-identity tests
 * (tests/python/test_acb_netcdf.py):
 *   mpirun -np 4 nc4_par_write OUT.nc
 * The 12 x 16 grid is cut into twelve 4 x 4 boxes, dealt to all ranks but
 * the last in a scattered order (the last rank owns no box, but takes part
 * in every collective call with empty counts). Variables:
 *   elev(y, x)       double, fixed, NC_COLLECTIVE: one put per box;
 *   mask(y, x)       int,    fixed, NC_INDEPENDENT: one put per box;
 *   temp(time, y, x) float,  record, chunked: records 0 and 2 NC_COLLECTIVE
 *                    (they extend the unlimited dimension, which HDF5 does
 *                    collectively), then record 1 NC_INDEPENDENT;
 *   step(time)       int,    record: NC_COLLECTIVE, only rank 0 with data.
 * Exits 1 on any netCDF error.
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>

#define NY 12
#define NX 16
#define BOX 4
#define NBOX ((NY / BOX) * (NX / BOX))
#define NREC 3

#define CHECK(call)                                                                         \
    do {                                                                                    \
        int err_ = (call);                                                                  \
        if (err_ != NC_NOERR) {                                                             \
            fprintf(stderr, "nc4_par_write:%d: %s: %s\n", __LINE__, #call, nc_strerror(err_)); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

/* Box b's owner: scattered over ranks 0..nprocs-2; the last rank owns none. */
static int owner(int b, int nprocs)
{
    int writers = nprocs > 1 ? nprocs - 1 : 1;
    return (b * 5 + b / 4) % writers;
}

static void box_start(int b, size_t *y, size_t *x)
{
    *y = (size_t)(b / (NX / BOX)) * BOX;
    *x = (size_t)(b % (NX / BOX)) * BOX;
}

static double value(int var, int rec, size_t y, size_t x)
{
    return var * 1000.0 + rec * 100.0 + (double)y + (double)x / 64.0;
}

/* Record rec of temp, one collective put per box. */
static void put_temp_collective(int ncid, int v_temp, int rec, const int *mine, int nmine, int most)
{
    for (int i = 0; i < most; i++) {
        float temp[BOX * BOX];
        size_t y = 0, x = 0, count[3] = {0, 0, 0};
        if (i < nmine) {
            box_start(mine[i], &y, &x);
            count[0] = 1, count[1] = count[2] = BOX;
            for (int k = 0; k < BOX * BOX; k++)
                temp[k] = (float)value(3, rec, y + k / BOX, x + k % BOX);
        }
        CHECK(nc_put_vara_float(ncid, v_temp, (size_t[]){(size_t)rec, y, x}, count, temp));
    }
}

int main(int argc, char **argv)
{
    int rank, nprocs, ncid, dim_t, dim_y, dim_x, v_elev, v_mask, v_temp, v_step;
    int mine[NBOX], nmine = 0, most = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int r = 0; r < nprocs; r++) {
        int n = 0;
        for (int b = 0; b < NBOX; b++)
            if (owner(b, nprocs) == r) {
                n++;
                if (r == rank && !(nprocs > 1 && rank == nprocs - 1))
                    mine[nmine++] = b;
            }
        if (!(nprocs > 1 && r == nprocs - 1) && n > most)
            most = n;
    }

    CHECK(nc_create_par(argv[1], NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    CHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &dim_t));
    CHECK(nc_def_dim(ncid, "y", NY, &dim_y));
    CHECK(nc_def_dim(ncid, "x", NX, &dim_x));
    CHECK(nc_def_var(ncid, "elev", NC_DOUBLE, 2, (int[]){dim_y, dim_x}, &v_elev));
    CHECK(nc_def_var(ncid, "mask", NC_INT, 2, (int[]){dim_y, dim_x}, &v_mask));
    CHECK(nc_def_var(ncid, "temp", NC_FLOAT, 3, (int[]){dim_t, dim_y, dim_x}, &v_temp));
    CHECK(nc_def_var_chunking(ncid, v_temp, NC_CHUNKED, (size_t[]){1, BOX * 2, NX / 2}));
    CHECK(nc_def_var(ncid, "step", NC_INT, 1, &dim_t, &v_step));
    CHECK(nc_put_att_text(ncid, NC_GLOBAL, "title", 14, "AMR checkpoint"));
    CHECK(nc_put_att_text(ncid, v_temp, "units", 1, "K"));
    CHECK(nc_enddef(ncid));

    CHECK(nc_var_par_access(ncid, v_elev, NC_COLLECTIVE));
    for (int i = 0; i < most; i++) {
        double elev[BOX * BOX];
        size_t y = 0, x = 0, count[2] = {0, 0};
        if (i < nmine) {
            box_start(mine[i], &y, &x);
            count[0] = count[1] = BOX;
            for (int k = 0; k < BOX * BOX; k++)
                elev[k] = value(1, 0, y + k / BOX, x + k % BOX);
        }
        CHECK(nc_put_vara_double(ncid, v_elev, (size_t[]){y, x}, count, elev));
    }

    CHECK(nc_var_par_access(ncid, v_mask, NC_INDEPENDENT));
    for (int i = 0; i < nmine; i++) {
        int mask[BOX * BOX];
        size_t y, x;
        box_start(mine[i], &y, &x);
        for (int k = 0; k < BOX * BOX; k++)
            mask[k] = (int)value(2, 0, y + k / BOX, x + k % BOX);
        CHECK(nc_put_vara_int(ncid, v_mask, (size_t[]){y, x}, (size_t[]){BOX, BOX}, mask));
    }

    /* Records 0 and 2 collectively (the second extends time to 3), so that
     * record 1 can then be written independently. */
    CHECK(nc_var_par_access(ncid, v_temp, NC_COLLECTIVE));
    put_temp_collective(ncid, v_temp, 0, mine, nmine, most);
    put_temp_collective(ncid, v_temp, 2, mine, nmine, most);
    CHECK(nc_var_par_access(ncid, v_temp, NC_INDEPENDENT));
    for (int i = 0; i < nmine; i++) {
        float temp[BOX * BOX];
        size_t y, x;
        box_start(mine[i], &y, &x);
        for (int k = 0; k < BOX * BOX; k++)
            temp[k] = (float)value(3, 1, y + k / BOX, x + k % BOX);
        CHECK(nc_put_vara_float(ncid, v_temp, (size_t[]){1, y, x}, (size_t[]){1, BOX, BOX}, temp));
    }

    /* step's length follows the unlimited dimension; its extension is
     * collective, so every rank takes part, only rank 0 with data. */
    CHECK(nc_var_par_access(ncid, v_step, NC_COLLECTIVE));
    CHECK(nc_put_vara_int(ncid, v_step, (size_t[]){0}, (size_t[]){rank == 0 ? NREC : 0}, (int[]){10, 20, 30}));
    CHECK(nc_close(ncid));
    MPI_Finalize();
    return 0;
}
