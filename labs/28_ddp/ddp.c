/* ddp.c — Lab 28: DDP, data parallelism and bucket overlap. THE file you edit.
 *
 * Work through the TODOs in order (28.1 → 28.5); README.md in this directory explains each
 * step, its three questions (Shape, Cost, Machine) and what the grader checks.
 *   make grade LAB=28 STEP=28.1      grade one step        make grade LAB=28    all of them
 *   make run LAB=28 RANKS=4          train with your DDP and print the summary
 * A step you have not done yet returns RL_ERR_NOT_IMPLEMENTED with a message naming it;
 * the driver and the grader report it and carry on. Declarations and the lab's provided
 * pieces are in ddp.h / ddp_support.c (read them; do not edit them). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ddp.h"

/* ================================================================== 28.1 ring all-reduce */

int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    rl_ctx *ctx = rl_comm_ctx(comm);
    /* TODO(28.1): the contract is README.md, step 28.1. In short: on return every rank of comm
     * holds, in buf, the element-wise sum of every rank's buf. Only rl_send / rl_recv between
     * ring neighbours, one direction for the whole call; every message at most ceil(count/n)
     * elements and never empty; 2(n−1)/n·S bytes sent per rank; a step's messages in flight
     * together; at most ceil(count/n) elements of RL_MEM_COMM scratch, nothing left
     * allocated. No collective, directly or through a helper. Stuck: make hint LAB=28 STEP=28.1 */
    (void)buf;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.1 (ring all-reduce) is not implemented yet — see labs/28_ddp/README.md, step 28.1");
}

/* ================================================================== 28.2 buckets */

int ddp_assign_buckets(rl_ctx *ctx, const ddp_param_desc *params, int nparams, int64_t first_cap_bytes,
                       int64_t cap_bytes, ddp_bucket_plan *plan)
{
    /* TODO(28.2): the contract is README.md, step 28.2. In short: fill plan (its arrays hold
     * nparams entries) as PyTorch's Reducer buckets parameters — reverse registration order,
     * whole parameters, a bucket closed once its bytes reach its cap (first_cap_bytes for
     * bucket 0, cap_bytes after), a tied duplicate where its original is. Refuse bad caps and
     * entries with RL_ERR_ARG and a message. Stuck: make hint LAB=28 STEP=28.2 */
    (void)params, (void)nparams, (void)first_cap_bytes, (void)cap_bytes, (void)plan;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.2 (bucket assignment) is not implemented yet — see labs/28_ddp/README.md, step 28.2");
}

/* ================================================================== 28.3 overlapped DDP */

int ddp_grad_ready(rl_param *p, void *arg)
{
    ddp_reducer *r = arg;
    /* TODO(28.4): inside no_sync (r->require_sync == 0) this changes nothing. */
    /* TODO(28.3): the contract is README.md, step 28.3. In short: backward calls this the moment
     * p's gradient is final, in an order that differs from rank to rank. When it returns, every
     * bucket that can go has gone: its all-reduce launched asynchronously on r->comm (handle in
     * r->work[b], tagged RL_TAG_BUCKET while it is launched), the same collectives in the same
     * order on every rank. A second mark of p in one backward is refused and not counted.
     * What you remember between calls lives in r->scratch (all 0 after each reset): design it.
     * Stuck: make hint LAB=28 STEP=28.3 */
    (void)p;
    return rl_error(r->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.3 (overlapped DDP: grad-ready hook) is not implemented yet — see labs/28_ddp/README.md, "
                    "step 28.3");
}

int ddp_finalize_backward(ddp_reducer *r)
{
    /* TODO(28.4): inside no_sync this changes nothing either. */
    /* TODO(28.3): before the optimizer step: afterwards every gradient is the mean over the
     * ranks of r->comm and the reducer is ready for the next backward. A bucket never launched
     * is an error naming it ("bucket <b>"), returned with nothing left in flight and the reducer
     * reset (ddp.h). */
    return rl_error(r->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.3 (overlapped DDP: finalize backward) is not implemented yet — see "
                    "labs/28_ddp/README.md, step 28.3");
}

/* ================================================================== 28.4 no_sync */

int ddp_train_step(ddp_reducer *r, rl_data *data, int64_t step, int64_t micro_batch, int accum_steps,
                   rl_batch *batch, float *loss)
{
    if (accum_steps != 1) {
        /* TODO(28.4): the contract is README.md, step 28.4. In short: K = accum_steps
         * micro-steps of micro_batch samples whose gradients add up to the gradient of the mean
         * loss over all of them (this rank's samples: its rank-major slice of the step's global
         * batch), one all-reduce per bucket per step, *loss the mean of the micro-steps' losses,
         * r->require_sync 1 on return. The one-micro-step code below is where to start.
         * Stuck: make hint LAB=28 STEP=28.4 */
        return rl_error(r->ctx, RL_ERR_NOT_IMPLEMENTED,
                        "step 28.4 (gradient accumulation with no_sync) is not implemented yet — see "
                        "labs/28_ddp/README.md, step 28.4");
    }
    /* one micro-step per step (given): zero grads, forward, backward (your hook fires in
     * there), then wait and average */
    int rank = rl_comm_rank(r->comm);
    float l = 0;
    int rc = rl_model_zero_grad(r->model);
    if (!rc)
        rc = rl_data_get(data, r->ctx, step, rank * micro_batch, micro_batch, batch);
    if (!rc)
        rc = rl_model_forward(r->model, batch, &l);
    if (!rc)
        rc = rl_model_backward(r->model, 1.0f);
    if (!rc)
        rc = ddp_finalize_backward(r);
    if (loss)
        *loss = l;
    return rc;
}

/* ================================================================== 28.5 α-β and scaling */

int ddp_ab_ring_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    /* TODO(28.5): the α-β time of your 28.1 ring: (its latency-bound steps)·α + (the bytes one
     * rank sends)/bw, 0 for n = 1. Refuse n < 1, bytes < 0, a NULL link or bw <= 0 with
     * RL_ERR_ARG. README.md, step 28.5; stuck: make hint LAB=28 STEP=28.5 */
    (void)n, (void)bytes, (void)link, (void)seconds;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (alpha-beta ring time) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}

int ddp_ab_tree_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    /* TODO(28.5): the α-β time of a (double binary) tree all-reduce as README.md, step 28.5
     * models it (log2(n) levels up and down, every byte over each rank's link twice). 0 for
     * n = 1. The same argument checks. */
    (void)n, (void)bytes, (void)link, (void)seconds;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (alpha-beta tree time) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}

int ddp_scaling_sweep(const ddp_sweep_config *cfg, ddp_sweep_table *out)
{
    /* TODO(28.5): the sweep's rows, their order, labels and fields are in README.md, step 28.5
     * (bucket caps, world sizes, a straggler; one ddp_run() each; predicted_comm from your
     * ring formula on the link the run's ranks cross). */
    (void)cfg, (void)out;
    return rl_error(NULL, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (scaling sweep) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}
