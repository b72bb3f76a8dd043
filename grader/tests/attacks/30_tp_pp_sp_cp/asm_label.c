/* Attack: a reference renamed with an asm label, so the source never names it.
 * refused: __asm__ (inline assembly) */
#include "mp.h"
extern int merged_rows(void) __asm__("rl_attn_merge");
int cp_lse_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                 int n_heads)
{
    (void)ctx, (void)out, (void)lse, (void)out_b, (void)lse_b, (void)n_heads;
    return merged_rows();
}
