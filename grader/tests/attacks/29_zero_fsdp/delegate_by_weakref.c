/* Attack: the ZeRO memory formulas of 29.1 taken from calc.h under another name.
 * refused: zero_bytes_per_rank (step 29.1) may not use rl_calc_zero */
#include "calc.h"
#include "zero.h"
static int other_name(const rl_calc_zero_in *in, rl_calc_zero_out *out, char *err, size_t errlen)
    __attribute__((weakref("rl_calc_zero")));
int zero_bytes_per_rank(rl_ctx *ctx, double psi, int n, zero_stage stage, double k, int group, zero_mem *out)
{
    (void)ctx, (void)stage, (void)out;
    rl_calc_zero_in in = { .params = psi, .dp = n, .k = k, .group = group };
    rl_calc_zero_out o;
    return other_name(&in, &o, NULL, 0);
}
