/*
 * Finding the program's HDF5; see h5api.h.
 *
 * A program linked with libhdf5 has it in the global scope after
 * libsluice: dlsym(RTLD_NEXT) finds it. A Python extension (h5py's wheels
 * bring their own libhdf5) loads it privately: its calls still reach our
 * wrappers (the preloaded library comes first in every lookup) but
 * RTLD_NEXT cannot see it. A program may hold several: h5py's wheel and
 * netCDF4's each bring their own libhdf5, and ids of one HDF5 instance mean
 * nothing to another. So each call goes to the library its caller's object
 * binds to (found through that object's own scope), every function of one
 * call from that one library.
 */
#include "hdf5/h5api.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

/* One per libhdf5 the program's objects bind to (h5py's wheel and
 * netCDF4's each bring their own): never freed, so callers keep pointers. */
#define H5_LIBS_MAX 8
static struct sluice_h5_api libs[H5_LIBS_MAX];
static const void *lib_base[H5_LIBS_MAX];
static int nlibs;
/* The first libhdf5 found, for callers whose own scope names none. */
static struct sluice_h5_api *first_api;
static struct sluice_h5_api no_api;
/* Call site -> its library: a wrapped call costs one lookup here. */
#define H5_SITES 256
static struct {
    const void *ra;
    const struct sluice_h5_api *api;
} sites[H5_SITES];
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* The library of the global scope's next H5open, else the first libhdf5
 * loaded privately, as a handle (NULL: none found). */
static void *global_library(void)
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

/* Every function from lib (NULL: the next definitions and the global scope). */
static void api_fill(struct sluice_h5_api *api, void *lib)
{
#define SLUICE_H5_WRAP(ret, name, params) \
    api->name = (ret(*) params)(lib ? dlsym(lib, #name) : dlsym(RTLD_NEXT, #name));
#define SLUICE_H5_QUERY(ret, name, params) \
    api->name = (ret(*) params)dlsym(lib ? lib : RTLD_DEFAULT, #name);
    SLUICE_H5_WRAPPED
    SLUICE_H5_QUERIES
#undef SLUICE_H5_WRAP
#undef SLUICE_H5_QUERY
    /* required for the counters; the rest are optional */
    api->queries_ok = api->H5Sget_select_type && api->H5Sget_select_npoints && api->H5Sget_simple_extent_ndims &&
                      api->H5Sget_simple_extent_npoints && api->H5Sclose && api->H5Dget_space &&
                      api->H5Dget_type && api->H5Dget_create_plist && api->H5Tget_size && api->H5Tclose &&
                      api->H5Pget_layout && api->H5Pget_chunk && api->H5Pclose && api->H5Fget_name &&
                      api->H5Iget_name;
}

/* The table entry of the library loaded at `base` (handle lib), made on
 * first use; NULL when the table is full. Under api_lock. */
static struct sluice_h5_api *lib_entry(const void *base, void *lib)
{
    for (int i = 0; i < nlibs; i++)
        if (lib_base[i] == base) {
            if (lib)
                dlclose(lib);   /* (a second reference: the first is kept) */
            return &libs[i];
        }
    if (nlibs == H5_LIBS_MAX)
        return NULL;   /* (the caller closes lib) */
    api_fill(&libs[nlibs], lib);
    lib_base[nlibs] = base;
    return &libs[nlibs++];
}

/* The first libhdf5 found. Under api_lock. */
static const struct sluice_h5_api *global_api(void)
{
    if (!first_api) {
        void *lib = global_library();
        Dl_info info;
        void *any = lib ? dlsym(lib, "H5open") : NULL;
        if (any && dladdr(any, &info))
            first_api = lib_entry(info.dli_fbase, lib);
        if (!first_api) {
            api_fill(&no_api, lib);
            first_api = &no_api;
        }
    }
    return first_api;
}

/* The libhdf5 the object holding code address ra binds to: its own H5open
 * as its dynamic linker scope (itself, then its dependencies) finds it,
 * which is how its calls would have gone without us. Under api_lock. */
static const struct sluice_h5_api *caller_api(const void *ra)
{
    Dl_info who, lib;
    const struct sluice_h5_api *api = NULL;
    void *h, *sym;

    if (!dladdr(ra, &who) || !who.dli_fname || !who.dli_fname[0])
        return global_api();   /* the program itself: the global scope */
    if (!(h = dlopen(who.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
        return global_api();
    sym = dlsym(h, "H5open");
    if (sym && dladdr(sym, &lib) && lib.dli_fname) {
        void *lh = dlopen(lib.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (lh && !(api = lib_entry(lib.dli_fbase, lh)))
            dlclose(lh);
    }
    dlclose(h);
    return api ? api : global_api();
}

const struct sluice_h5_api *sluice_h5_api_of(const void *ra)
{
    size_t i = ((uintptr_t)ra >> 2) * 0x9e3779b97f4a7c15ull >> 56;
    const struct sluice_h5_api *api;

    pthread_mutex_lock(&api_lock);
    if (sites[i].ra == ra && sites[i].api) {
        api = sites[i].api;
    } else {
        api = caller_api(ra);
        sites[i].ra = ra;
        sites[i].api = api;
    }
    pthread_mutex_unlock(&api_lock);
    return api;
}

void sluice_h5_api_after_fork_child(void)
{
    pthread_mutex_init(&api_lock, NULL);
}
