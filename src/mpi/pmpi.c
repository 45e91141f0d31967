/*
 * Lazy lookup of the MPI library (see pmpi.h). The table is filled once
 * under pthread_once; a missing symbol leaves the whole table unusable, so
 * callers test sluice_pmpi_load()'s result rather than single slots.
 */
#include "mpi/pmpi.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

struct sluice_pmpi sluice__pmpi;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -ENOSYS;
static void *private_lib;

/* Names of libmpi a program may have dlopened with RTLD_LOCAL. */
static const char *const library_names[] = {"libmpi.so.40", "libmpi.so", NULL};

void *sluice_pmpi_library(void)
{
    if (!private_lib)
        for (int i = 0; library_names[i] && !private_lib; i++)
            private_lib = dlopen(library_names[i], RTLD_LAZY | RTLD_NOLOAD);
    return private_lib;
}

static void *lookup(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    void *lib;

    if (!p && (lib = sluice_pmpi_library()) != NULL)
        p = dlsym(lib, name);
    return p;
}

static void load(void)
{
    int missing = 0;

#define SLUICE_PMPI_FUNC(ret, name, params)                                        \
    missing += (*(void **)&sluice__pmpi.name = lookup("PMPI_" #name)) == NULL;
#define SLUICE_MPI_OBJECT(field, symbol) missing += (sluice__pmpi.field = lookup(#symbol)) == NULL;
#include "mpi/pmpi.def"
    load_rc = missing ? -ENOSYS : 0;
}

int sluice_pmpi_load(void)
{
    pthread_once(&load_once, load);
    return load_rc;
}
