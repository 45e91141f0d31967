/*
 * A PnetCDF file written the way AMR codes write checkpoints, for the ACB
 * byte-identity tests (tests/python/test_acb_netcdf.py):
 *   mpirun -np 4 pnc_write OUT.nc [fill]
 * The 12 x 16 grid is cut into twelve 4 x 4 boxes, dealt to all ranks but
 * the last in a scattered order (the last rank owns no box, but takes part
 * in every collective call with empty counts). Variables:
 *   elev(y, x)       double, fixed: one collective put per box;
 *   mask(y, x)       int,    fixed: one independent put per box;
 *   temp(time, y, x) float,  record: record 0 one collective put per box,
 *                    record 1 one independent put per box, record 2 one
 *                    collective put_varn of all of a rank's boxes;
 *   step(time)       int,    record: written by rank 0 independently.
 * "fill" turns on fill mode (fill values first, then the data over them).
 * Exits 1 on any PnetCDF error.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define NY 12
#define NX 16
#define BOX 4
#define NBOX ((NY / BOX) * (NX / BOX))
#define NREC 3

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int err_ = (call);                                                                 \
        if (err_ != NC_NOERR) {                                                            \
            fprintf(stderr, "pnc_write:%d: %s: %s\n", __LINE__, #call, ncmpi_strerror(err_)); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

/* Box b's owner: scattered over ranks 0..nprocs-2, so that a rank's boxes are
 * not neighbours in the file; the last rank owns none. */
static int owner(int b, int nprocs)
{
    int writers = nprocs > 1 ? nprocs - 1 : 1;
    return (b * 5 + b / 4) % writers;
}

static void box_start(int b, MPI_Offset *y, MPI_Offset *x)
{
    *y = (MPI_Offset)(b / (NX / BOX)) * BOX;
    *x = (MPI_Offset)(b % (NX / BOX)) * BOX;
}

static double value(int var, int rec, MPI_Offset y, MPI_Offset x)
{
    return var * 1000.0 + rec * 100.0 + (double)y + (double)x / 64.0;
}

int main(int argc, char **argv)
{
    int rank, nprocs, ncid, dim_t, dim_y, dim_x, v_elev, v_mask, v_temp, v_step;
    int mine[NBOX], nmine = 0, most = 0;
    MPI_Offset starts[NBOX][3], counts[NBOX][3];

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

    CHECK(ncmpi_create(MPI_COMM_WORLD, argv[1], NC_CLOBBER | NC_64BIT_OFFSET, MPI_INFO_NULL, &ncid));
    if (argc > 2 && argv[2][0] == 'f')
        CHECK(ncmpi_set_fill(ncid, NC_FILL, NULL));
    CHECK(ncmpi_def_dim(ncid, "time", NC_UNLIMITED, &dim_t));
    CHECK(ncmpi_def_dim(ncid, "y", NY, &dim_y));
    CHECK(ncmpi_def_dim(ncid, "x", NX, &dim_x));
    CHECK(ncmpi_def_var(ncid, "elev", NC_DOUBLE, 2, (int[]){dim_y, dim_x}, &v_elev));
    CHECK(ncmpi_def_var(ncid, "mask", NC_INT, 2, (int[]){dim_y, dim_x}, &v_mask));
    CHECK(ncmpi_def_var(ncid, "temp", NC_FLOAT, 3, (int[]){dim_t, dim_y, dim_x}, &v_temp));
    CHECK(ncmpi_def_var(ncid, "step", NC_INT, 1, &dim_t, &v_step));
    CHECK(ncmpi_put_att_text(ncid, NC_GLOBAL, "title", 14, "AMR checkpoint"));
    CHECK(ncmpi_put_att_text(ncid, v_temp, "units", 1, "K"));
    CHECK(ncmpi_enddef(ncid));

    /* Collective, one box per call; ranks with fewer boxes put nothing. */
    for (int i = 0; i < most; i++) {
        double elev[BOX * BOX];
        float temp[BOX * BOX];
        MPI_Offset y = 0, x = 0, start2[2], count2[2] = {0, 0}, start3[3], count3[3] = {0, 0, 0};
        if (i < nmine) {
            box_start(mine[i], &y, &x);
            count2[0] = count2[1] = count3[1] = count3[2] = BOX;
            count3[0] = 1;
            for (int k = 0; k < BOX * BOX; k++) {
                elev[k] = value(1, 0, y + k / BOX, x + k % BOX);
                temp[k] = (float)value(3, 0, y + k / BOX, x + k % BOX);
            }
        }
        start2[0] = start3[1] = y;
        start2[1] = start3[2] = x;
        start3[0] = 0;
        CHECK(ncmpi_put_vara_double_all(ncid, v_elev, start2, count2, elev));
        CHECK(ncmpi_put_vara_float_all(ncid, v_temp, start3, count3, temp));
    }

    /* Independent, one box per call. */
    CHECK(ncmpi_begin_indep_data(ncid));
    for (int i = 0; i < nmine; i++) {
        int mask[BOX * BOX];
        float temp[BOX * BOX];
        MPI_Offset y, x;
        box_start(mine[i], &y, &x);
        for (int k = 0; k < BOX * BOX; k++) {
            mask[k] = (int)value(2, 0, y + k / BOX, x + k % BOX);
            temp[k] = (float)value(3, 1, y + k / BOX, x + k % BOX);
        }
        CHECK(ncmpi_put_vara_int(ncid, v_mask, (MPI_Offset[]){y, x}, (MPI_Offset[]){BOX, BOX}, mask));
        CHECK(ncmpi_put_vara_float(ncid, v_temp, (MPI_Offset[]){1, y, x}, (MPI_Offset[]){1, BOX, BOX}, temp));
    }
    if (rank == 0)
        CHECK(ncmpi_put_vara_int(ncid, v_step, (MPI_Offset[]){0}, (MPI_Offset[]){NREC}, (int[]){10, 20, 30}));
    CHECK(ncmpi_end_indep_data(ncid));

    /* Collective, all of a rank's boxes in one call (a derived file view). */
    {
        static float temp[NBOX * BOX * BOX];
        MPI_Offset *sp[NBOX], *cp[NBOX];
        for (int i = 0; i < nmine; i++) {
            MPI_Offset y, x;
            box_start(mine[i], &y, &x);
            starts[i][0] = 2, starts[i][1] = y, starts[i][2] = x;
            counts[i][0] = 1, counts[i][1] = counts[i][2] = BOX;
            sp[i] = starts[i];
            cp[i] = counts[i];
            for (int k = 0; k < BOX * BOX; k++)
                temp[i * BOX * BOX + k] = (float)value(3, 2, y + k / BOX, x + k % BOX);
        }
        CHECK(ncmpi_put_varn_float_all(ncid, v_temp, nmine, sp, cp, temp));
    }
    CHECK(ncmpi_close(ncid));
    MPI_Finalize();
    return 0;
}
