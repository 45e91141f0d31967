/*
 * Writes an HDF5 file with the real HDF5 library: a group, a 2-D double
 * dataset written in row blocks, a chunked int dataset and an attribute.
 *   h5_write FILE
 */
#include <hdf5.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        return 1;
    hid_t g = H5Gcreate2(f, "/fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {64, 128};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(g, "temperature", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double *row = malloc(sizeof(double) * 8 * 128);
    for (hsize_t r0 = 0; r0 < 64; r0 += 8) {
        for (int i = 0; i < 8 * 128; i++)
            row[i] = (double)(r0 * 128 + (hsize_t)i) * 0.25;
        hsize_t start[2] = {r0, 0}, count[2] = {8, 128};
        hid_t mem = H5Screate_simple(2, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, row);
        H5Sclose(mem);
    }
    hsize_t n = 1000, chunk = 100;
    hid_t s1 = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t d2 = H5Dcreate2(f, "counts", H5T_STD_I32LE, s1, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int *v = malloc(sizeof(int) * 1000);
    for (int i = 0; i < 1000; i++)
        v[i] = i * i;
    H5Dwrite(d2, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    hid_t as = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "step", H5T_STD_I32LE, as, H5P_DEFAULT, H5P_DEFAULT);
    int step = 42;
    H5Awrite(a, H5T_NATIVE_INT, &step);
    H5Aclose(a); H5Sclose(as); H5Dclose(d2); H5Pclose(dcpl); H5Sclose(s1);
    H5Dclose(d); H5Sclose(space); H5Gclose(g);
    free(row); free(v);
    return H5Fclose(f) < 0;
}
