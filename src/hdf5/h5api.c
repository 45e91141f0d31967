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
 * ("" for the program itself). 0 when p is in none. (Its link map is no
 * handle for dlsym before a dlopen of it: an object loaded at start-up has
 * no search list of its own until then.) */
struct object {
    const void *base;
    const char *name;
};

static int object_of(const void *p, struct object *o)
{
#ifdef DLFO_STRUCT_HAS_EH_DBASE /* glibc 2.35 and later */
    struct dl_find_object fo;
    if (_dl_find_object((void *)p, &fo) != 0 || !fo.dlfo_link_map)
        return 0;
    o->base = fo.dlfo_map_start;
    o->name = fo.dlfo_link_map->l_name ? fo.dlfo_link_map->l_name : "";
    return 1;
#else
    Dl_info info;
    if (!dladdr(p, &info))
        return 0;
    o->base = info.dli_fbase;
    o->name = info.dli_fname ? info.dli_fname : "";
    return 1;
#endif
}

/* How many objects were loaded when the library started: the program, the
 * preloads and their dependencies, which bind in the global scope. */
static int startup_objects;

static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    ++*(int *)arg;
    return 0;
}

void sluice_h5_api_init(void)
{
    int n = 0;
    dl_iterate_phdr(count_object, &n);
    startup_objects = n;
}

struct position {
    const char *name;
    int index, found;
};

static int find_position(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct position *p = arg;
    (void)size;
    if (info->dlpi_name == p->name || (info->dlpi_name && strcmp(info->dlpi_name, p->name) == 0)) {
        p->found = 1;
        return 1;
    }
    p->index++;
    return 0;
}

/* An object loaded at start-up (a dependency of the program or of a
 * preload, never dlopen'ed): its references bind in the global scope, so
 * its libhdf5 is the global scope's next one, found without a dlopen (a
 * dlopen of libnetcdf, even with RTLD_NOLOAD, builds its dependencies'
 * search list: 240 K instructions at every netCDF program's start). */
static int loaded_at_startup(const char *name)
{
    struct position p = {name, 0, 0};
    dl_iterate_phdr(find_position, &p);
    return p.found && p.index < startup_objects;
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

/* The first libhdf5 loaded privately (none is in the global scope), as a
 * handle (NULL: none found). */
static void *private_library(void)
{
    struct found f = {NULL};
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

/* The table entry of the library loaded at `base`, if made. */
static struct sluice_h5_api *lib_known(const void *base)
{
    for (int i = 0; i < nlibs; i++)
        if (lib_base[i] == base)
            return &libs[i];
    return NULL;
}

/* The table entry of the library loaded at `base` (handle lib), made on
 * first use; NULL when the table is full. Under api_lock. */
static struct sluice_h5_api *lib_entry(const void *base, void *lib)
{
    struct sluice_h5_api *known = lib_known(base);
    if (known) {
        if (lib)
            dlclose(lib);   /* (a second reference: the first is kept) */
        return known;
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
        /* the global scope's next libhdf5: its functions by RTLD_NEXT, no
         * handle needed; else the first one loaded privately */
        void *next = dlsym(RTLD_NEXT, "H5open"), *lib = NULL, *any;
        struct object o;
        if (next && object_of(next, &o))
            first_api = lib_entry(o.base, NULL);
        else if ((lib = private_library()) && (any = dlsym(lib, "H5open")) && object_of(any, &o))
            first_api = lib_entry(o.base, lib);
        if (!first_api) {
            api_fill(&no_api, lib);
            first_api = &no_api;
        }
    }
    return first_api;
}

/* The libhdf5 the calling object binds to: its own H5open as its dynamic
 * linker scope (itself, then its dependencies) finds it, which is how its
 * calls would have gone without us. A library seen before is not opened
 * again; a new one is opened once, and that reference kept, so that it
 * stays loaded while we hold its functions. Under api_lock. */
static const struct sluice_h5_api *object_api(const struct object *caller)
{
    const struct sluice_h5_api *api = NULL;
    struct object lib;
    void *h, *sym;

    if (!caller->name[0] || loaded_at_startup(caller->name) || !(h = dlopen(caller->name, RTLD_LAZY | RTLD_NOLOAD)))
        return global_api();   /* the program itself and its libraries: the global scope */
    sym = dlsym(h, "H5open");
    if (sym && object_of(sym, &lib) && lib.name[0] && !(api = lib_known(lib.base))) {
        void *lh = dlopen(lib.name, RTLD_LAZY | RTLD_NOLOAD);
        if (lh && !(api = lib_entry(lib.base, lh)))
            dlclose(lh);
    }
    dlclose(h);
    return api ? api : global_api();
}

/* The libhdf5 of the object holding code address ra, looked up once per
 * object. Under api_lock. */
static const struct sluice_h5_api *caller_api(const void *ra)
{
    struct object o;
    const struct sluice_h5_api *api;

    if (!object_of(ra, &o))
        return global_api();
    for (int i = 0; i < ncallers; i++)
        if (callers[i].base == o.base)
            return callers[i].api;
    api = object_api(&o);
    if (ncallers < H5_CALLERS) {
        callers[ncallers].base = o.base;
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
