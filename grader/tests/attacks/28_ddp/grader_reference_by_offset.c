/* Attack: the grader's own bucket rule (a static function linked into the grade binary) called
 * at a fixed distance from an allowed function of the lab's support code.
 * refused: takes the address of ddp_plan_alloc */
#include <stdint.h>
#include "ddp.h"
typedef int (*assign_fn)(rl_ctx *, const ddp_param_desc *, int, int64_t, int64_t, ddp_bucket_plan *);
int ddp_assign_buckets(rl_ctx *ctx, const ddp_param_desc *params, int nparams, int64_t first_cap_bytes,
                       int64_t cap_bytes, ddp_bucket_plan *plan)
{
    assign_fn ref = (assign_fn)((uintptr_t)ddp_plan_alloc + 0x6e30);
    return ref(ctx, params, nparams, first_cap_bytes, cap_bytes, plan);
}
