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
    /* TODO(28.1): in-place sum of buf over every rank of comm, as a ring, with rl_send and
     * rl_recv only (no rl_all_reduce / rl_reduce_scatter / rl_all_gather here).
     *  - n = rl_comm_size(comm), r = rl_comm_rank(comm); the right neighbour is (r+1) % n,
     *    the left one (r+n−1) % n. Nothing to do for n == 1 or an empty buffer.
     *  - Cut the count elements into n chunks: chunk c = [count·c/n, count·(c+1)/n) —
     *    sizes differ by at most one and may be 0 when count < n.
     *  - Reduce-scatter, n−1 steps: at step s send chunk (r−s) mod n to the right and receive
     *    chunk (r−s−1) mod n from the left into a scratch tensor (ceil(count/n) elements,
     *    RL_MEM_COMM), then add it into buf (rl_axpy). Afterwards rank r holds the finished
     *    sum of chunk (r+1) mod n.
     *  - All-gather, n−1 steps: at step s send chunk (r+1−s) mod n, receive chunk (r−s) mod n
     *    straight into buf.
     *  - A step's send and recv must be issued together: rl_group_start(ctx), rl_send,
     *    rl_recv, rl_group_end(ctx). Without the group every rank sends first, nobody
     *    receives, and the watchdog reports a deadlock — just as in NCCL.
     *  - Views: rl_tensor_slice(buf, offset, len) (free them with rl_tensor_free, and the
     *    scratch tensor at the end); skip the send/recv of a chunk of length 0 on both sides.
     *  - Optional: rl_set_tag(ctx, RL_TAG_CHUNK, c) shows the chunk in the timeline. */
    (void)buf;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.1 (ring all-reduce) is not implemented yet — see labs/28_ddp/README.md, step 28.1");
}

/* ================================================================== 28.2 buckets */

int ddp_assign_buckets(rl_ctx *ctx, const ddp_param_desc *params, int nparams, int64_t first_cap_bytes,
                       int64_t cap_bytes, ddp_bucket_plan *plan)
{
    /* TODO(28.2): fill plan (its arrays are allocated for nparams entries) as PyTorch's
     * Reducer buckets parameters:
     *  - Walk the parameters in REVERSE registration order (nparams−1 down to 0): roughly
     *    the order backward makes their gradients ready.
     *  - Skip a tied duplicate (params[i].tied_to >= 0): its tensor is bucketed once, where
     *    its original (params[tied_to]) falls; give the duplicate the original's bucket_of
     *    and offset_of.
     *  - Append each parameter whole to the current bucket (order[], bucket_of, offset_of in
     *    elements, the bucket's nparams / numel / bytes). Close the bucket as soon as its
     *    bytes reach its cap — first_cap_bytes for bucket 0, cap_bytes for the others — so a
     *    parameter larger than the cap sits alone in its bucket. Never split a parameter.
     *  - An empty list gives 0 buckets. Refuse (RL_ERR_ARG, with a message) caps <= 0,
     *    negative numel, a bad tied_to, and mixed dtypes. */
    (void)params, (void)nparams, (void)first_cap_bytes, (void)cap_bytes, (void)plan;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.2 (bucket assignment) is not implemented yet — see labs/28_ddp/README.md, step 28.2");
}

/* ================================================================== 28.3 overlapped DDP */

int ddp_grad_ready(rl_param *p, void *arg)
{
    ddp_reducer *r = arg;
    /* TODO(28.4): inside no_sync (r->require_sync == 0) backward only accumulates: return 0
     * before marking anything. */
    /* TODO(28.3): backward calls this the moment p's gradient is final, in the order
     * backward makes gradients ready — not always reverse registration order.
     *  - Mark p (r->marked[p->index]; marking twice is an error) and count it off its
     *    bucket: r->pending[r->plan.bucket_of[p->index]]--.
     *  - Buckets launch in bucket order: while bucket r->next_bucket has pending == 0,
     *    launch its all-reduce and move next_bucket on. A complete bucket whose
     *    predecessor is still waiting for gradients waits too.
     *  - Launch = rl_all_reduce(r->comm, r->bucket_buf[b], r->bucket_buf[b], RL_SUM, RL_ASYNC),
     *    keeping the handle in r->work[b]. RL_ASYNC puts it on the comm stream and returns at
     *    once: backward goes on computing while the bucket travels. Tag it first with
     *    rl_set_tag(r->ctx, RL_TAG_BUCKET, b) (and -1 after) so the timeline colours it. */
    (void)p;
    return rl_error(r->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.3 (overlapped DDP: grad-ready hook) is not implemented yet — see labs/28_ddp/README.md, "
                    "step 28.3");
}

int ddp_finalize_backward(ddp_reducer *r)
{
    /* TODO(28.4): inside no_sync nothing was launched: return 0. */
    /* TODO(28.3): before the optimizer step:
     *  - every bucket must have been launched (r->next_bucket == nbuckets); otherwise some
     *    parameter got no gradient — return an error naming the bucket (after waiting for the
     *    buckets that were launched, and ddp_reducer_reset: see ddp.h);
     *  - rl_wait on each bucket's work, in bucket order, and average: the all-reduce
     *    summed n ranks' gradients, the optimizer wants their mean (rl_scale by 1/n);
     *  - ddp_reducer_reset(r) for the next backward. */
    return rl_error(r->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.3 (overlapped DDP: finalize backward) is not implemented yet — see "
                    "labs/28_ddp/README.md, step 28.3");
}

/* ================================================================== 28.4 no_sync */

int ddp_train_step(ddp_reducer *r, rl_data *data, int64_t step, int64_t micro_batch, int accum_steps,
                   rl_batch *batch, float *loss)
{
    if (accum_steps != 1) {
        /* TODO(28.4): gradient accumulation with no_sync. Generalise the one-micro-step code
         * below to accum_steps micro-steps:
         *  - zero the gradients once, at the start;
         *  - micro-step k of this rank reads samples
         *    (rank·accum_steps + k)·micro_batch .. +micro_batch−1 (rl_data_get);
         *  - micro-steps 0..K−2 run inside no_sync (r->require_sync = 0): backward only
         *    accumulates; the last one syncs (require_sync = 1) — one all-reduce per bucket
         *    per K micro-steps instead of K;
         *  - scale each backward by 1/K (rl_model_backward's grad_scale) so the result is the
         *    mean over all K·micro_batch samples;
         *  - and do the no_sync TODOs in ddp_grad_ready and ddp_finalize_backward.
         * *loss = mean of the micro-steps' losses; return with r->require_sync = 1. */
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
    /* TODO(28.5): the α-β time of a ring all-reduce: 2(n−1) steps of α each, and every rank
     * sends 2(n−1)/n of the buffer at link->bw bytes/s: 2(n−1)·α + 2(n−1)/n·S/bw. 0 for n = 1.
     * Refuse n < 1, bytes < 0, a NULL link or bw <= 0 with RL_ERR_ARG. */
    (void)n, (void)bytes, (void)link, (void)seconds;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (alpha-beta ring time) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}

int ddp_ab_tree_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    /* TODO(28.5): the α-β time of a (double binary) tree all-reduce: about 2·log2(n) latency
     * steps and 2·S/bw of data: 2·log2(n)·α + 2·S/bw. 0 for n = 1. Same argument checks. */
    (void)n, (void)bytes, (void)link, (void)seconds;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (alpha-beta tree time) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}

int ddp_scaling_sweep(const ddp_sweep_config *cfg, ddp_sweep_table *out)
{
    /* TODO(28.5): the sweep. For each row: copy cfg->base, set opts.ranks, bucket_cap_mb and
     * (straggler row only) one fault {RL_FAULT_STRAGGLER, rank, ms}; run it with ddp_run();
     * fill the row (label, ranks, bucket_cap_mb, straggler_ms, stats) and predicted_comm =
     * Σ over the run's buckets (stats.bucket_bytes) of your ddp_ab_ring_all_reduce on the
     * link the ranks use (rl_hw_group_link of ranks 0..n−1 on cfg->base.opts.hw, or
     * rl_hw_default() when that is NULL).
     * Rows, in this order:
     *  1. "bucket <cap> MiB" for each cfg->caps_mb[i], at cfg->base.opts.ranks ranks;
     *  2. "world <n>" for n = 1..cfg->max_ranks at cfg->base.bucket_cap_mb, with
     *     efficiency = t(1)/t(n) (step times; weak scaling: every rank keeps its batch, so
     *     n ranks do n× the work) and speedup = n·efficiency;
     *  3. "straggler rank <R> +<X> ms" (if cfg->straggler_ms > 0) at base ranks and cap.
     * Check that the rows fit in DDP_SWEEP_MAX. */
    (void)cfg, (void)out;
    return rl_error(NULL, RL_ERR_NOT_IMPLEMENTED,
                    "step 28.5 (scaling sweep) is not implemented yet — see labs/28_ddp/README.md, step 28.5");
}
