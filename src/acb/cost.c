/* The cost model's decisions; see cost.h. */
#include "acb/cost.h"

int sluice_acb_cost_direct(int64_t unit, int64_t off, int64_t len)
{
    return len >= unit && (off % unit == 0 || len >= 4 * unit);
}

int sluice_acb_cost_runs_large(const struct sluice_acb_pending *p, int64_t unit)
{
    int64_t runs = 0;

    for (size_t i = 0; i < p->n; i++)
        if (i == 0 || p->ext[i].off != p->ext[i - 1].off + p->ext[i - 1].len)
            runs++;
    return runs == 0 || p->bytes >= runs * unit;
}
