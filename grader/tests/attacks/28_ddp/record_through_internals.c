/* Attack: the runtime's internal header gives the rank's context, and through it the grader's
 * argument to the rank function: the ring's record is rewritten (no rank "took part"), so a
 * judge that believed it would check nothing.
 * refused: includes internal.h */
#include "ddp.h"
#include "internal.h"
typedef struct { int rc; char err[1400]; } forged_rank;
typedef struct { int rc; forged_rank r[16]; int comm_size[16]; } forged_res;
typedef struct { const void *a; forged_res *o; int W; } forged_job;
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)buf;
    rl_ctx *ctx = rl_comm_ctx(comm);
    ((forged_job *)ctx->world->fn_arg)->o->comm_size[rl_rank(ctx)] = 0;
    return 0;
}
