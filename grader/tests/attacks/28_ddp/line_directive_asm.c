/* Attack: a #line directive gives the lab file's next lines a runtime header's name, so the
 * source check would take its inline assembly (a call with a forged return address) for the
 * header's.
 * refused: a #line directive */
#include <stdint.h>
#include "ddp.h"
#line 1 "cost.h"
static double forged(uintptr_t fn, double x)
{
    double r;
    __asm__ volatile("call *%1" : "=x"(r) : "r"(fn), "x"(x) : "memory");
    return r;
}
#line 20 "ddp.c"
int ddp_ab_ring_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    (void)ctx, (void)n, (void)link;
    *seconds = forged((uintptr_t)&ddp_ab_ring_all_reduce, bytes);
    return 0;
}
