/* Attack: a function built with flags of its own (here tail calls forced on, so that a call it
 * makes does not return through it).
 * refused: the attribute optimize */
#include "zero.h"
__attribute__((optimize("O3", "optimize-sibling-calls"))) int zero_bytes_per_rank(rl_ctx *ctx, double psi, int n,
                                                                                zero_stage stage, double k, int group,
                                                                                zero_mem *out)
{
    (void)ctx, (void)psi, (void)n, (void)stage, (void)k, (void)group, (void)out;
    return 0;
}
