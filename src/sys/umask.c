/* See umask.h. */
#include "sys/umask.h"

#include <sys/stat.h>

#include "sys/real.h"

static mode_t current = 022;

void sluice_umask_init(void)
{
    mode_t m = SLUICE_REAL(umask)(0);
    SLUICE_REAL(umask)(m);
    __atomic_store_n(&current, m, __ATOMIC_RELAXED);
}

mode_t sluice_umask_get(void)
{
    return __atomic_load_n(&current, __ATOMIC_RELAXED);
}

void sluice_umask_note(mode_t m)
{
    __atomic_store_n(&current, m & 0777, __ATOMIC_RELAXED);
}
