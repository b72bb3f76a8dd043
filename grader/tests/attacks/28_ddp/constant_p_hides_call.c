/* Attack: a call the optimiser keeps and an unoptimised compile drops — __builtin_constant_p of
 * a local is 1 at -O2 and 0 at -O0 — so a check at another optimisation level than the build's
 * never sees it.
 * refused: ddp_ab_ring_all_reduce (step 28.5) may not use rl_ab_time */
#include "ddp.h"
int ddp_ab_ring_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    int k = 1;
    (void)ctx;
    if (__builtin_constant_p(k)) {
        *seconds = rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n, bytes, link);
        return 0;
    }
    return -1;
}
