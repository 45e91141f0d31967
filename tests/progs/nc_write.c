/*
 * Writes a netCDF file with the real netCDF library, a time series in
 * records the way climate models do: classic format, or netCDF-4 with -4.
 *   nc_write [-4] FILE
 */
#include <netcdf.h>
#include <stdio.h>
#include <string.h>

#define CHECK(x) do { int e_ = (x); if (e_ != NC_NOERR) { fprintf(stderr, "%s\n", nc_strerror(e_)); return 1; } } while (0)

int main(int argc, char **argv)
{
    int nc4 = argc == 3 && !strcmp(argv[1], "-4");
    if (argc != 2 + nc4)
        return 2;
    int ncid, dt, dy, dx, vt, vv;
    CHECK(nc_create(argv[argc - 1], nc4 ? NC_NETCDF4 | NC_CLOBBER : NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt));
    CHECK(nc_def_dim(ncid, "lat", 32, &dy));
    CHECK(nc_def_dim(ncid, "lon", 64, &dx));
    CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dt, &vt));
    int dims[3] = {dt, dy, dx};
    CHECK(nc_def_var(ncid, "tas", NC_FLOAT, 3, dims, &vv));
    CHECK(nc_put_att_text(ncid, vv, "units", 1, "K"));
    CHECK(nc_enddef(ncid));
    static float field[32 * 64];
    for (size_t t = 0; t < 12; t++) {
        double tt = (double)t * 3600.0;
        size_t one = 1;
        CHECK(nc_put_vara_double(ncid, vt, &t, &one, &tt));
        for (int i = 0; i < 32 * 64; i++)
            field[i] = 250.0f + (float)((int)t + i % 64) * 0.5f;
        size_t start[3] = {t, 0, 0}, count[3] = {1, 32, 64};
        CHECK(nc_put_vara_float(ncid, vv, start, count, field));
    }
    CHECK(nc_close(ncid));
    return 0;
}
