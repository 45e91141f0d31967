/*
 * sluice-bench-h5write: the per-call cost of H5Dwrite. Two timed loops of
 * small writes into one HDF5 file (serial HDF5, the sec2 driver):
 *   hyperslab: --ops writes of one 64-double row of an OPS x 64 dataset,
 *              each selecting its row (H5Sselect_hyperslab is in the loop,
 *              outside the timed H5Dwrite only in spirit: it is timed too,
 *              the same in every variant);
 *   all:       --ops writes of a whole 64-double 1-D dataset (H5S_ALL);
 * --loop runs one of them only (to count instructions per call apart).
 * Prints {"ops", "hyperslab_seconds", "all_seconds", "bytes_written"}.
 */
#include <hdf5.h>
#include <stdlib.h>

#include "common.h"

static const char *prog = "sluice-bench-h5write";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --file PATH [--ops N] [--loop both|hyperslab|all]\n"
            "  --file PATH  the HDF5 file to create\n"
            "  --ops N      writes per loop (default 200000)\n"
            "  --loop L     run both loops (default) or one of them\n",
            prog);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    uint64_t ops = 200000;
    static const char *const loops[] = {"both", "hyperslab", "all", NULL};
    int loop = 0;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &path),
        BENCH_OPT_COUNT("ops", &ops),
        BENCH_OPT_CHOICE("loop", &loop, loops),
        BENCH_OPT_END,
    };
    double row[64] = {0};
    double t0, t1, t2;

    bench_parse_options(prog, argc, argv, options, usage);
    if (ops == 0)
        bench_die(prog, 0, "--ops must be at least 1");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        bench_die(prog, 0, "H5Fcreate %s failed", path);
    hsize_t dims[2] = {(hsize_t)ops, 64}, start[2] = {0, 0}, count[2] = {1, 64}, n64 = 64;
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t small = H5Screate_simple(1, &n64, NULL);
    hid_t d = H5Dcreate2(f, "rows", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d1 = H5Dcreate2(f, "row", H5T_NATIVE_DOUBLE, small, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0 || d1 < 0)
        bench_die(prog, 0, "H5Dcreate2 failed");

    t0 = bench_now();
    for (uint64_t i = 0; i < ops && loop != 2; i++) {
        start[0] = i;
        row[0] = (double)i;
        if (H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, row) < 0)
            bench_die(prog, 0, "H5Dwrite of row %llu failed", (unsigned long long)i);
    }
    t1 = bench_now();
    for (uint64_t i = 0; i < ops && loop != 1; i++) {
        row[0] = (double)i;
        if (H5Dwrite(d1, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, row) < 0)
            bench_die(prog, 0, "H5Dwrite %llu failed", (unsigned long long)i);
    }
    t2 = bench_now();
    H5Dclose(d1);
    H5Dclose(d);
    H5Sclose(small);
    H5Sclose(mem);
    H5Sclose(space);
    if (H5Fclose(f) < 0)
        bench_die(prog, 0, "H5Fclose failed");
    printf("{\"ops\": %llu, \"hyperslab_seconds\": %.9f, \"all_seconds\": %.9f, \"bytes_written\": %llu}\n",
           (unsigned long long)ops, t1 - t0, t2 - t1, (unsigned long long)(2 * ops * 64 * sizeof(double)));
    return bench_exit_status(1);
}
