/*
 * Appends records one at a time to an unlimited dimension, as climate and
 * ensemble codes write their time series (FMS, Agro-IBIS):
 *   append_records h5|nc4 FILE RECORDS
 * h5: an HDF5 dataset extended by one row (chunked) per record, through
 * the HDF5 C API; nc4: a netCDF-4 variable along an unlimited `time`
 * dimension, one nc_put_vara per record. Each record is 32 doubles plus a
 * time value. File locking is the library's default.
 */
#include <hdf5.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 32

static void fill(double *row, long r)
{
    for (int i = 0; i < WIDTH; i++)
        row[i] = (double)r * 0.5 + i;
}

static int append_h5(const char *path, long records)
{
    hsize_t dims[2] = {0, WIDTH}, maxd[2] = {H5S_UNLIMITED, WIDTH}, chunk[2] = {64, WIDTH};
    double row[WIDTH];
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        return 1;
    hid_t space = H5Screate_simple(2, dims, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "field", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sclose(space);
    for (long r = 0; r < records; r++) {
        hsize_t size[2] = {(hsize_t)r + 1, WIDTH}, start[2] = {(hsize_t)r, 0}, count[2] = {1, WIDTH};
        fill(row, r);
        if (H5Dset_extent(d, size) < 0)
            return 1;
        hid_t fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        if (H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, row) < 0)
            return 1;
        H5Sclose(ms);
        H5Sclose(fs);
        if (r % 10 == 9)
            H5Fflush(f, H5F_SCOPE_LOCAL);   /* a model flushing its history file every few steps */
    }
    H5Pclose(dcpl);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

#define NC(call)                                                             \
    do {                                                                     \
        int e_ = (call);                                                     \
        if (e_ != NC_NOERR) {                                                \
            fprintf(stderr, "%s: %s\n", #call, nc_strerror(e_));             \
            return 1;                                                        \
        }                                                                    \
    } while (0)

static int append_nc4(const char *path, long records)
{
    int nc, dt, dx, vt, vf, dimids[2];
    double row[WIDTH];

    NC(nc_create(path, NC_CLOBBER | NC_NETCDF4, &nc));
    NC(nc_def_dim(nc, "time", NC_UNLIMITED, &dt));
    NC(nc_def_dim(nc, "x", WIDTH, &dx));
    NC(nc_def_var(nc, "time", NC_DOUBLE, 1, &dt, &vt));
    dimids[0] = dt;
    dimids[1] = dx;
    NC(nc_def_var(nc, "field", NC_DOUBLE, 2, dimids, &vf));
    NC(nc_put_att_text(nc, vf, "units", 1, "K"));
    NC(nc_enddef(nc));
    for (long r = 0; r < records; r++) {
        size_t start[2] = {(size_t)r, 0}, count[2] = {1, WIDTH};
        double t = (double)r * 3600.0;
        fill(row, r);
        NC(nc_put_vara_double(nc, vt, start, count, &t));
        NC(nc_put_vara_double(nc, vf, start, count, row));
        if (r % 100 == 99)
            NC(nc_sync(nc));
    }
    NC(nc_close(nc));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "h5") != 0 && strcmp(argv[1], "nc4") != 0)) {
        fprintf(stderr, "usage: append_records h5|nc4 FILE RECORDS\n");
        return 2;
    }
    long records = atol(argv[3]);
    return strcmp(argv[1], "h5") == 0 ? append_h5(argv[2], records) : append_nc4(argv[2], records);
}
