/*
 * Finding the program's HDF5; see h5api.h.
 *
 * A program linked with libhdf5 has it in the global scope after
 * libsluice: dlsym(RTLD_NEXT) finds it. A Python extension (h5py's wheels
 * bring their own libhdf5) loads it privately: its calls still reach our
 * wrappers (the preloaded library comes first in every lookup) but
 * RTLD_NEXT cannot see it, so the loaded objects are searched for a
 * libhdf5 by name. Every function is then taken from that one library:
 * ids of one HDF5 instance mean nothing to another.
 */
#include "hdf5/h5api.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

static struct sluice_h5_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static int api_queries_ok;

struct found {
    void *handle;
};

/* A loaded object named libhdf5* that defines H5Fcreate (not ours). */
static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct found *f = arg;
    const char *name = info->dlpi_name, *base;
    void *h, *sym;

    (void)size;
    if (!name || !*name)
        return 0;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libhdf5", 7) != 0)
        return 0;
    h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    sym = dlsym(h, "H5Fcreate");
    if (sym && sym != (void *)H5Fcreate /* never our own */) {
        f->handle = h;
        return 1;
    }
    dlclose(h);
    return 0;
}

/* The library that holds the next H5open, as a handle (NULL: none found). */
static void *hdf5_library(void)
{
    void *next = dlsym(RTLD_NEXT, "H5open");
    Dl_info info;
    struct found f = {NULL};

    if (next && dladdr(next, &info) && info.dli_fname) {
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            return h;
    }
    dl_iterate_phdr(find_loaded, &f);
    return f.handle;
}

static void api_resolve(void)
{
    void *lib = hdf5_library();
    int ok = 1;

    /* with no handle (not expected), the next definitions and the global scope */
#define SLUICE_H5_WRAP(ret, name, params) \
    api.name = (ret(*) params)(lib ? dlsym(lib, #name) : dlsym(RTLD_NEXT, #name));
#define SLUICE_H5_QUERY(ret, name, params) \
    api.name = (ret(*) params)dlsym(lib ? lib : RTLD_DEFAULT, #name);
    SLUICE_H5_WRAPPED
    SLUICE_H5_QUERIES
#undef SLUICE_H5_WRAP
#undef SLUICE_H5_QUERY
    /* required for the counters; the rest are optional */
    ok = api.H5Sget_select_type && api.H5Sget_select_npoints && api.H5Sget_simple_extent_ndims &&
         api.H5Sget_simple_extent_npoints && api.H5Sclose && api.H5Dget_space && api.H5Dget_type &&
         api.H5Dget_create_plist && api.H5Tget_size && api.H5Tclose && api.H5Pget_layout && api.H5Pget_chunk &&
         api.H5Pclose && api.H5Fget_name && api.H5Iget_name;
    api_queries_ok = ok;
}

const struct sluice_h5_api *sluice_h5_api(void)
{
    pthread_once(&api_once, api_resolve);
    return &api;
}

int sluice_h5_queries_ok(void)
{
    return api_queries_ok;
}
