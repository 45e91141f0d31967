/*
 * The part of HDF5's C API the H5F and H5D modules use, declared here so
 * that libsluice needs no HDF5 headers and no libhdf5 at link time: a
 * program without HDF5 never calls these names, and one with HDF5 has its
 * library loaded when it does.
 *
 * Types are HDF5's since 1.10 (hid_t 64 bits) and unchanged in 1.14 and 2.0.
 */
#ifndef SLUICE_HDF5_H5API_H
#define SLUICE_HDF5_H5API_H

#include <stdint.h>
#include <sys/types.h>

typedef int64_t sluice_hid_t;
typedef int sluice_herr_t;
typedef int sluice_htri_t;
typedef unsigned long long sluice_hsize_t;
typedef long long sluice_hssize_t;

#define SLUICE_H5P_DEFAULT ((sluice_hid_t)0)
#define SLUICE_H5S_ALL ((sluice_hid_t)0)

/* H5S_sel_type, H5D_layout_t, H5I_type_t, H5FD_mpio_xfer_t */
enum { SLUICE_H5S_SEL_POINTS = 1, SLUICE_H5S_SEL_HYPERSLABS = 2, SLUICE_H5S_SEL_ALL = 3 };
enum { SLUICE_H5D_CHUNKED = 2 };
enum { SLUICE_H5I_DATASET = 5 };   /* H5I_type_t */
enum { SLUICE_H5FD_MPIO_COLLECTIVE = 1 };

#define SLUICE_H5_MAX_NDIMS 5   /* dimensions Darshan's H5D counters describe */
#define SLUICE_H5_RANK_MAX 32   /* H5S_MAX_RANK */

/* The wrapped functions: SLUICE_H5_WRAP(ret, name, params). */
#define SLUICE_H5_WRAPPED                                                                                     \
    SLUICE_H5_WRAP(sluice_hid_t, H5Fcreate, (const char *, unsigned, sluice_hid_t, sluice_hid_t))               \
    SLUICE_H5_WRAP(sluice_hid_t, H5Fopen, (const char *, unsigned, sluice_hid_t))                               \
    SLUICE_H5_WRAP(sluice_herr_t, H5Fflush, (sluice_hid_t, int))                                                \
    SLUICE_H5_WRAP(sluice_herr_t, H5Fclose, (sluice_hid_t))                                                     \
    SLUICE_H5_WRAP(sluice_hid_t, H5Dcreate1, (sluice_hid_t, const char *, sluice_hid_t, sluice_hid_t, sluice_hid_t)) \
    SLUICE_H5_WRAP(sluice_hid_t, H5Dcreate2,                                                                    \
                   (sluice_hid_t, const char *, sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t)) \
    SLUICE_H5_WRAP(sluice_hid_t, H5Dopen1, (sluice_hid_t, const char *))                                        \
    SLUICE_H5_WRAP(sluice_hid_t, H5Dopen2, (sluice_hid_t, const char *, sluice_hid_t))                          \
    SLUICE_H5_WRAP(sluice_herr_t, H5Dread,                                                                      \
                   (sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t, void *))              \
    SLUICE_H5_WRAP(sluice_herr_t, H5Dwrite,                                                                     \
                   (sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t, sluice_hid_t, const void *))        \
    SLUICE_H5_WRAP(sluice_herr_t, H5Dflush, (sluice_hid_t))                                                     \
    SLUICE_H5_WRAP(sluice_herr_t, H5Dclose, (sluice_hid_t))                                                     \
    SLUICE_H5_WRAP(sluice_hid_t, H5Oopen, (sluice_hid_t, const char *, sluice_hid_t))

/* The queries, taken from the library that holds the wrapped functions
 * (ids belong to one library instance). Optional ones may be missing:
 * H5Sis_regular_hyperslab before 1.10, the MPI-IO ones in serial builds. */
#define SLUICE_H5_QUERIES                                                                                      \
    SLUICE_H5_QUERY(int, H5Sget_select_type, (sluice_hid_t))                                                    \
    SLUICE_H5_QUERY(sluice_hssize_t, H5Sget_select_npoints, (sluice_hid_t))                                     \
    SLUICE_H5_QUERY(sluice_htri_t, H5Sis_regular_hyperslab, (sluice_hid_t))                                     \
    SLUICE_H5_QUERY(sluice_herr_t, H5Sget_regular_hyperslab,                                                    \
                    (sluice_hid_t, sluice_hsize_t *, sluice_hsize_t *, sluice_hsize_t *, sluice_hsize_t *))     \
    SLUICE_H5_QUERY(int, H5Sget_simple_extent_ndims, (sluice_hid_t))                                            \
    SLUICE_H5_QUERY(sluice_hssize_t, H5Sget_simple_extent_npoints, (sluice_hid_t))                              \
    SLUICE_H5_QUERY(sluice_herr_t, H5Sclose, (sluice_hid_t))                                                    \
    SLUICE_H5_QUERY(sluice_hid_t, H5Dget_space, (sluice_hid_t))                                                 \
    SLUICE_H5_QUERY(sluice_hid_t, H5Dget_type, (sluice_hid_t))                                                  \
    SLUICE_H5_QUERY(sluice_hid_t, H5Dget_create_plist, (sluice_hid_t))                                          \
    SLUICE_H5_QUERY(size_t, H5Tget_size, (sluice_hid_t))                                                        \
    SLUICE_H5_QUERY(sluice_herr_t, H5Tclose, (sluice_hid_t))                                                    \
    SLUICE_H5_QUERY(int, H5Pget_layout, (sluice_hid_t))                                                         \
    SLUICE_H5_QUERY(int, H5Pget_chunk, (sluice_hid_t, int, sluice_hsize_t *))                                   \
    SLUICE_H5_QUERY(sluice_hid_t, H5Pget_driver, (sluice_hid_t))                                                \
    SLUICE_H5_QUERY(sluice_herr_t, H5Pclose, (sluice_hid_t))                                                    \
    SLUICE_H5_QUERY(ssize_t, H5Fget_name, (sluice_hid_t, char *, size_t))                                       \
    SLUICE_H5_QUERY(ssize_t, H5Iget_name, (sluice_hid_t, char *, size_t))                                       \
    SLUICE_H5_QUERY(sluice_htri_t, H5Iis_valid, (sluice_hid_t))                                                 \
    SLUICE_H5_QUERY(int, H5Iget_type, (sluice_hid_t))                                                           \
    SLUICE_H5_QUERY(sluice_hid_t, H5FD_mpio_init, (void))                                                       \
    SLUICE_H5_QUERY(sluice_herr_t, H5Pget_dxpl_mpio, (sluice_hid_t, int *))

/* libsluice's definitions of the wrapped functions (hdf5.c). */
#define SLUICE_H5_WRAP(ret, name, params) ret name params;
SLUICE_H5_WRAPPED
#undef SLUICE_H5_WRAP

struct sluice_h5_api {
#define SLUICE_H5_WRAP(ret, name, params) ret(*name) params;
#define SLUICE_H5_QUERY(ret, name, params) ret(*name) params;
    SLUICE_H5_WRAPPED
    SLUICE_H5_QUERIES
#undef SLUICE_H5_WRAP
#undef SLUICE_H5_QUERY
    int queries_ok;   /* the queries the counters need were all found */
};

/* The HDF5 of the code that called a wrapper (ra: its return address),
 * resolved on its first call (its library is loaded by then): the libhdf5
 * the caller's object binds to (h5py's or netCDF4's own copy), else the
 * next definitions in the global scope (dlsym(RTLD_NEXT)), else the first
 * libhdf5 loaded. A wrapped slot is NULL only if no HDF5 is loaded. */
const struct sluice_h5_api *sluice_h5_api_of(const void *ra);

/* At load: which objects the program started with (they bind in the
 * global scope; objects dlopen'ed later may bring a libhdf5 of their own). */
void sluice_h5_api_init(void);
/* In a forked child. */
void sluice_h5_api_after_fork_child(void);

#endif
