/*
 * The real-function table (see real.h). Every slot is an atomic-sized
 * pointer written once with the same value by whoever resolves it first, so
 * a lazy resolution racing the constructor is harmless.
 */
#include "sys/real.h"

#include <dlfcn.h>

struct sluice_real sluice__real;

const char *const sluice_real_names[SLUICE_REAL_COUNT] = {
#define SLUICE_WRAP(ret, name, params, group) [SLUICE_REAL_ID_##name] = #name,
#include "sys/wrappers.def"
#undef SLUICE_WRAP
};

void *sluice_real_resolve(enum sluice_real_id id)
{
    void **slots = (void **)&sluice__real;
    void *p = slots[id];

    if (!p) {
        p = dlsym(RTLD_NEXT, sluice_real_names[id]);
        __atomic_store_n(&slots[id], p, __ATOMIC_RELEASE);
    }
    return p;
}

void sluice_real_init(void)
{
    for (int i = 0; i < SLUICE_REAL_COUNT; i++)
        (void)sluice_real_resolve((enum sluice_real_id)i);
}
