/* Attack: a condition on a macro the build defines and the check does not (_FORTIFY_SOURCE is
 * 0 in the check, 2 in a distribution's default build), choosing which code is linked.
 * refused: tests _FORTIFY_SOURCE, a name the compiler or the C library defines */
#include "zero.h"
#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0
#define STAGE_FACTOR 2
#else
#define STAGE_FACTOR 1
#endif
int zero_bytes_per_rank(rl_ctx *ctx, double psi, int n, zero_stage stage, double k, int group, zero_mem *out)
{
    (void)ctx, (void)n, (void)stage, (void)k, (void)group;
    out->param = out->grad = out->optim = psi * STAGE_FACTOR;
    return 0;
}
