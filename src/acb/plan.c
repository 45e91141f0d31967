/* Aggregator and file-domain arithmetic; see plan.h. */
#include "acb/plan.h"

int sluice_acb_plan_naggs(int64_t requested, int nnodes, int nprocs, int64_t lo, int64_t hi, int64_t stripe)
{
    int64_t n = requested > 0 ? requested : nnodes;
    int64_t stripes = hi > lo ? (hi - 1) / stripe - lo / stripe + 1 : 1;

    if (n > nprocs)
        n = nprocs;
    if (n > stripes)
        n = stripes;
    return n < 1 ? 1 : (int)n;
}

int sluice_acb_plan_agg_rank(const struct sluice_acb_plan *pl, int a)
{
    return (int)((int64_t)a * pl->nprocs / pl->naggs);
}

int sluice_acb_plan_owner(const struct sluice_acb_plan *pl, int64_t off)
{
    return (int)((off / pl->stripe) % pl->naggs);
}

int64_t sluice_acb_plan_piece_end(const struct sluice_acb_plan *pl, int64_t off, int64_t end)
{
    int64_t boundary;

    if (pl->naggs == 1)
        return end;
    boundary = (off / pl->stripe + 1) * pl->stripe;
    return boundary < end ? boundary : end;
}

int64_t sluice_acb_plan_write_end(int64_t write_size, int64_t off, int64_t end)
{
    int64_t boundary = (off / write_size + 1) * write_size;
    return boundary < end ? boundary : end;
}
