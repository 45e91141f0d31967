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
/* Calling object (its load address) -> its library: a new call site of a
 * known object costs one _dl_find_object, not a dladdr (which searches the
 * object's symbol table: 3 M instructions in a netCDF program's start). */
#define H5_CALLERS 64
static struct {
    const void *base;
    const struct sluice_h5_api *api;
} callers[H5_CALLERS];
static int ncallers;
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

/* The loaded object holding address p: its load address and file name
 * ("" for the program itself). 0 when p is in none. */
static int object_of(const void *p, const void **base, const char **name)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE /* glibc 2.35 and later */
    struct dl_find_object o;
    if (_dl_find_object((void *)p, &o) != 0 || !o.dlfo_link_map)
        return 0;
    *base = o.dlfo_map_start;
    *name = o.dlfo_link_map->l_name ? o.dlfo_link_map->l_name : "";
    return 1;
#else
    Dl_info info;
    if (!dladdr(p, &info))
        return 0;
    *base = info.dli_fbase;
    *name = info.dli_fname ? info.dli_fname : "";
    return 1;
#endif
}

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
    const void *base;
    const char *name;
    struct found f = {NULL};

    if (next && object_of(next, &base, &name) && name[0]) {
        void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
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
        const void *base;
        const char *name;
        void *any = lib ? dlsym(lib, "H5open") : NULL;
        if (any && object_of(any, &base, &name))
            first_api = lib_entry(base, lib);
        if (!first_api) {
            api_fill(&no_api, lib);
            first_api = &no_api;
        }
    }
    return first_api;
}

/* The libhdf5 the object loaded at `base` (file `name`) binds to: its own
 * H5open as its dynamic linker scope (itself, then its dependencies) finds
 * it, which is how its calls would have gone without us. Under api_lock. */
static const struct sluice_h5_api *object_api(const char *name)
{
    const struct sluice_h5_api *api = NULL;
    const void *lbase;
    const char *lname;
    void *h, *sym;

    if (!name[0] || !(h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)))
        return global_api();   /* the program itself: the global scope */
    sym = dlsym(h, "H5open");
    if (sym && object_of(sym, &lbase, &lname) && lname[0]) {
        void *lh = dlopen(lname, RTLD_LAZY | RTLD_NOLOAD);
        if (lh && !(api = lib_entry(lbase, lh)))
            dlclose(lh);
    }
    dlclose(h);
    return api ? api : global_api();
}

/* The libhdf5 of the object holding code address ra, looked up once per
 * object. Under api_lock. */
static const struct sluice_h5_api *caller_api(const void *ra)
{
    const void *base;
    const char *name;
    const struct sluice_h5_api *api;

    if (!object_of(ra, &base, &name))
        return global_api();
    for (int i = 0; i < ncallers; i++)
        if (callers[i].base == base)
            return callers[i].api;
    api = object_api(name);
    if (ncallers < H5_CALLERS) {
        callers[ncallers].base = base;
        callers[ncallers].api = api;
        ncallers++;
    }
    return api;
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
