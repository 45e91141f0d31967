/* File-domain and aggregator arithmetic of ACB (src/acb/plan.c), without MPI. */
#include <stdio.h>
#include <string.h>

#include "acb/plan.h"
#include "../unit/harness.h"

int main(void)
{
    struct sluice_acb_plan one = {.stripe = 4096, .naggs = 1, .nprocs = 4};
    struct sluice_acb_plan two = {.stripe = 4096, .naggs = 2, .nprocs = 4};

    /* aggregator count: requested, else nodes; capped by ranks and stripes */
    CHECK_EQ(sluice_acb_plan_naggs(0, 1, 4, 0, 1 << 30, 4096), 1);
    CHECK_EQ(sluice_acb_plan_naggs(8, 1, 4, 0, 1 << 30, 4096), 4);
    CHECK_EQ(sluice_acb_plan_naggs(3, 1, 4, 100, 5000, 4096), 2);   /* touches stripes 0 and 1 */
    CHECK_EQ(sluice_acb_plan_naggs(3, 1, 4, 100, 200, 4096), 1);
    CHECK_EQ(sluice_acb_plan_naggs(0, 0, 4, 0, 0, 4096), 1);
    /* aggregators spread over the ranks */
    CHECK_EQ(sluice_acb_plan_agg_rank(&two, 0), 0);
    CHECK_EQ(sluice_acb_plan_agg_rank(&two, 1), 2);
    /* placed by node: the first rank of each node, then the second of each,
     * whether ranks were placed by slot (0 1 | 2 3) or round-robin (0 2 | 1 3) */
    {
        int by_slot[] = {0, 1, 0, 1}, round_robin[] = {0, 0, 1, 1}, uneven[] = {0, 1, 2, 0}, order[4], scratch[5];
        struct sluice_acb_plan placed = {.stripe = 4096, .naggs = 2, .nprocs = 4, .ranks = order};
        CHECK_EQ(sluice_acb_plan_node_order(by_slot, 4, order, scratch), 2);
        CHECK_EQ(sluice_acb_plan_agg_rank(&placed, 0), 0);
        CHECK_EQ(sluice_acb_plan_agg_rank(&placed, 1), 2);
        CHECK_EQ(order[2], 1);
        CHECK_EQ(order[3], 3);
        CHECK_EQ(sluice_acb_plan_node_order(round_robin, 4, order, scratch), 2);
        CHECK_EQ(sluice_acb_plan_agg_rank(&placed, 0), 0);
        CHECK_EQ(sluice_acb_plan_agg_rank(&placed, 1), 1);
        /* node A holds ranks 0-2, node B rank 3 */
        CHECK_EQ(sluice_acb_plan_node_order(uneven, 4, order, scratch), 2);
        CHECK_EQ(order[0], 0);
        CHECK_EQ(order[1], 3);
        CHECK_EQ(order[2], 1);
        CHECK_EQ(order[3], 2);
    }
    /* stripes round-robin; pieces cut at stripe ends only with several aggregators */
    CHECK_EQ(sluice_acb_plan_owner(&two, 4095), 0);
    CHECK_EQ(sluice_acb_plan_owner(&two, 4096), 1);
    CHECK_EQ(sluice_acb_plan_owner(&two, 8192), 0);
    CHECK_EQ(sluice_acb_plan_piece_end(&two, 1000, 10000), 4096);
    CHECK_EQ(sluice_acb_plan_piece_end(&two, 4096, 5000), 5000);
    CHECK_EQ(sluice_acb_plan_piece_end(&one, 1000, 10000), 10000);
    /* writes end on multiples of the write size */
    CHECK_EQ(sluice_acb_plan_write_end(8192, 1000, 100000), 8192);
    CHECK_EQ(sluice_acb_plan_write_end(8192, 8192, 10000), 10000);
    return done();
}
