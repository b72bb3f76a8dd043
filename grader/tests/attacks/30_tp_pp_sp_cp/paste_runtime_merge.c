/* Attack: 30.5's merge pasted from the runtime's own (merge_row in common/attn_blocks.c),
 * names changed.
 * refused: the code of merge_row in common/attn_blocks.c */
#include <math.h>
#include <string.h>
#include "mp.h"
static void one_row(float *dst, float *l, const float *src, float lb, int64_t width)
{
    float la = *l;
    if (lb == -INFINITY)
        return;
    if (la == -INFINITY) {
        memcpy(dst, src, sizeof(float) * (size_t)width);
        *l = lb;
        return;
    }
    float top = la > lb ? la : lb;
    float joint = top + log1pf(expf(-fabsf(la - lb)));
    float keep = expf(la - joint), take = expf(lb - joint);
    for (int64_t i = 0; i < width; i++)
        dst[i] = keep * dst[i] + take * src[i];
    *l = joint;
}
int cp_lse_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                 int n_heads)
{
    (void)ctx, (void)out, (void)lse, (void)out_b, (void)lse_b, (void)n_heads;
    float o[4] = { 0 }, l = 0, ob[4] = { 0 };
    one_row(o, &l, ob, 0, 4);
    return 0;
}
