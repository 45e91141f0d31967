/*
 * HDF5 calls with known H5F/H5D counters (tests/python/test_hdf5_module.py
 * lists them):
 *   h5_known FILE            a failed H5Fopen of FILE.missing, then datasets: a chunked 2-D one written in regular
 *                            hyperslabs and by points, read whole and
 *                            again after reopening the file; a contiguous 2-D
 *                            one written whole and read through an irregular
 *                            hyperslab; a 1-D one (deprecated H5Dcreate1 and
 *                            H5Dopen1) in a group, read with a strided hyperslab
 *   h5_known --bench N FILE  N writes of one 64-double row each; prints the
 *                            nanoseconds per H5Dwrite
 * Built against parallel HDF5 as h5_known_par, also:
 *   mpirun -np R h5_known_par --parallel FILE   each rank writes, then reads,
 *                            its row block of a shared dataset collectively
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef H5_HAVE_PARALLEL
#include <mpi.h>
#endif

#define CHECK(x)                                                   \
    do {                                                           \
        if ((x) < 0) {                                             \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); \
            exit(1);                                               \
        }                                                          \
    } while (0)

#ifdef H5_HAVE_PARALLEL
static int parallel(const char *path)
{
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f);
    hsize_t dims[2] = {(hsize_t)nprocs * 4, 16}, start[2] = {(hsize_t)rank * 4, 0}, count[2] = {4, 16};
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t d = H5Dcreate2(f, "shared", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d);
    int buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = rank * 1000 + i;
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, mem, space, dxpl, buf));
    memset(buf, 0, sizeof buf);
    CHECK(H5Dread(d, H5T_NATIVE_INT, mem, space, dxpl, buf));
    for (int i = 0; i < 64; i++)
        if (buf[i] != rank * 1000 + i)
            return 1;
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Pclose(fapl);
    return H5Fclose(f) < 0;
}
#endif

static int bench(long n, const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {(hsize_t)n, 64}, start[2] = {0, 0}, count[2] = {1, 64};
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t d = H5Dcreate2(f, "rows", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double row[64] = {0};
    struct timespec t0, t1;

    CHECK(d);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        start[0] = (hsize_t)i;
        row[0] = (double)i;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, row));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.1f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

static int serial(const char *path)
{
    char missing[4096];
    hid_t f;

    /* a file that is not there: the failure reaches the program */
    snprintf(missing, sizeof missing, "%s.missing", path);
    H5E_BEGIN_TRY { f = H5Fopen(missing, H5F_ACC_RDONLY, H5P_DEFAULT); } H5E_END_TRY;
    if (f >= 0)
        return 1;
    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(f);

    /* "chunked": 40 x 30 int32 in 10 x 15 chunks */
    hsize_t dims[2] = {40, 30}, chunk[2] = {10, 15};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(H5Pset_chunk(dcpl, 2, chunk));
    hid_t d = H5Dcreate2(f, "chunked", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d);
    static int rows[40 * 30];
    for (int i = 0; i < 40 * 30; i++)
        rows[i] = i;
    hsize_t count[2] = {10, 30};
    hid_t mem = H5Screate_simple(2, count, NULL);
    for (hsize_t r0 = 0; r0 < 40; r0 += 10) {   /* 4 writes of 300 points: 1,200 bytes */
        hsize_t start[2] = {r0, 0};
        CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
        CHECK(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, rows + r0 * 30));
    }
    H5Sclose(mem);
    hsize_t coord[5][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {39, 29}}, five = 5;
    int pts[5] = {-1, -2, -3, -4, -5};
    CHECK(H5Sselect_elements(space, H5S_SELECT_SET, 5, &coord[0][0]));
    mem = H5Screate_simple(1, &five, NULL);
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, pts));   /* 20 bytes, points */
    H5Sclose(mem);
    CHECK(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows));   /* all: 4,800 bytes */
    if (rows[0] != -1 || rows[31] != -2 || rows[39 * 30 + 29] != -5 || rows[5] != 5)
        return 1;
    CHECK(H5Fflush(d, H5F_SCOPE_LOCAL));   /* through a dataset of the file */
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);

    /* "contig": 16 x 8 doubles, written whole, read through two row pairs */
    hsize_t cdims[2] = {16, 8};
    space = H5Screate_simple(2, cdims, NULL);
    d = H5Dcreate2(f, "contig", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(d);
    static double grid[16 * 8];
    for (int i = 0; i < 16 * 8; i++)
        grid[i] = i * 0.5;
    CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, grid));   /* 1,024 bytes */
    hsize_t s0[2] = {0, 0}, s1[2] = {5, 0}, two[2] = {2, 8}, three[2] = {3, 8}, forty = 40;
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, s0, NULL, two, NULL));
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_OR, s1, NULL, three, NULL));
    mem = H5Screate_simple(1, &forty, NULL);
    double back[40];
    CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, back));   /* 320 bytes, irregular */
    if (back[16] != 5 * 8 * 0.5)
        return 1;
    CHECK(H5Dflush(d));
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);

    /* "/g/v": 10 ints by the deprecated call, read at a stride of 2 */
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t ten = 10;
    space = H5Screate_simple(1, &ten, NULL);
    d = H5Dcreate1(g, "v", H5T_STD_I32LE, space, H5P_DEFAULT);
    CHECK(d);
    int v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4];
    CHECK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v));   /* 40 bytes */
    H5Dclose(d);
    d = H5Dopen1(g, "v");
    hsize_t st[1] = {1}, stride[1] = {2}, cnt[1] = {4}, four = 4;
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, st, stride, cnt, NULL));
    mem = H5Screate_simple(1, &four, NULL);
    CHECK(H5Dread(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, w));   /* 16 bytes: 1, 3, 5, 7 */
    if (w[3] != 7)
        return 1;
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Gclose(g);
    CHECK(H5Fclose(f));

    /* reopen: one more open of the file and of "chunked", one row block read */
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f);
    d = H5Dopen2(f, "/chunked", H5P_DEFAULT);
    CHECK(d);
    space = H5Dget_space(d);
    hsize_t start[2] = {10, 0};
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
    mem = H5Screate_simple(2, count, NULL);
    CHECK(H5Dread(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, rows));   /* 1,200 bytes */
    if (rows[0] != 300)
        return 1;
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
#ifdef H5_HAVE_PARALLEL
    MPI_Init(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "--parallel") == 0)
        rc = parallel(argv[2]);
#endif
    if (argc == 4 && strcmp(argv[1], "--bench") == 0)
        rc = bench(atol(argv[2]), argv[3]);
    else if (argc == 2)
        rc = serial(argv[1]);
#ifdef H5_HAVE_PARALLEL
    MPI_Finalize();
#endif
    return rc;
}
