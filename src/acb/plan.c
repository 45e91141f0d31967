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
    if (pl->ranks)
        return pl->ranks[a];
    return (int)((int64_t)a * pl->nprocs / pl->naggs);
}

int sluice_acb_plan_node_order(const int *local, int nprocs, int *order, int *start)
{
    int nodes = 0, top = 0;

    for (int r = 0; r < nprocs; r++) {
        nodes += local[r] == 0;
        if (local[r] > top)
            top = local[r];
    }
    /* a counting sort by local rank, stable: within a level, rank order */
    for (int l = 0; l <= top + 1; l++)
        start[l] = 0;
    for (int r = 0; r < nprocs; r++)
        start[local[r] + 1]++;
    for (int l = 0; l <= top; l++)
        start[l + 1] += start[l];
    for (int r = 0; r < nprocs; r++)
        order[start[local[r]]++] = r;
    return nodes > 0 ? nodes : 1;
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
