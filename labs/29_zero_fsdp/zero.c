/* zero.c — Lab 29: ZeRO-1/2/3 and FSDP. THE file you edit.
 *
 * Work through the TODOs in order (29.1 → 29.5); README.md in this directory explains each
 * step, its three questions (Shape, Cost, Machine) and what the grader checks.
 *   make grade LAB=29 STEP=29.1      grade one step        make grade LAB=29    all of them
 *   make run LAB=29 RANKS=4          train with your engine and print the summary
 * A step you have not done yet returns RL_ERR_NOT_IMPLEMENTED with a message naming it;
 * the driver and the grader report it and carry on. Declarations, the buffer layout and the
 * lab's provided pieces are in zero.h / zero_support.c (read them; do not edit them). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "zero.h"

/* ================================================================== 29.1 memory model */

int zero_bytes_per_rank(rl_ctx *ctx, double psi, int n, zero_stage stage, double k, int group, zero_mem *out)
{
    /* TODO(29.1): the model-state bytes of one rank (zero.h lists the formulas).
     *  - Start from one replica: 2Ψ bf16 parameters, 2Ψ bf16 gradients, KΨ optimizer state
     *    (K = 12 when k <= 0: fp32 master 4 + Adam m 4 + v 4 bytes).
     *  - Stage 1 divides the optimizer state by n, stage 2 also the gradients, stage 3 all
     *    three; hsdp divides all three by the shard group G = group (which must divide n).
     *  - Fill param, grad, optim, total (bytes) and total in GB (/1e9) and GiB (/2^30).
     *  - Refuse psi < 0 (or NaN/inf), a NaN/inf k, n < 1, an unknown stage, a bad hsdp group:
     *    RL_ERR_ARG with a message (rl_error(ctx, ...); ctx may be NULL).
     * Sanity check: Ψ = 7e9, n = 8, ZeRO-1 → 4Ψ + 12Ψ/8 = 38.5 GB. */
    (void)psi, (void)n, (void)stage, (void)k, (void)group, (void)out;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.1 (memory model) is not implemented yet — see labs/29_zero_fsdp/README.md, step 29.1");
}

/* ================================================================== 29.2 ZeRO-1 */

int zero1_reduce_scatter_grads(zero_engine *e)
{
    /* TODO(29.2): after backward every rank holds the gradients of ITS micro-batch for the
     * whole model in e->flat_grad. For each unit u (e->units[u], layout in zero.h):
     *  - all  = rl_tensor_slice(e->flat_grad, U->flat_off, U->padded): the unit's gradients;
     *  - mine = the slice of `all` this rank owns: element U->flat_off + e->rank·U->shard, U->shard long;
     *  - rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0): in place, rank r receives the
     *    sum over ranks of piece r (send = the whole unit, recv = n times smaller);
     *  - divide `mine` by the data-parallel size (rl_scale): the optimizer wants the mean.
     * Free your slices (rl_tensor_free). Optional: rl_set_tag(ctx, RL_TAG_BUCKET, u) colours
     * the collective in the timeline. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: reduce-scatter of the gradients) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.2");
}

int zero_shard_adamw(zero_engine *e)
{
    /* TODO(29.2): one AdamW step on this rank's pieces only. e->step++ first (AdamW counts
     * from 1). For each unit with U->shard > 0, take slices of U->shard elements:
     *  - parameters: e->param_shard at U->shard_off if the stage has it (3, hsdp), else
     *    e->flat_param at U->flat_off + e->rank·U->shard;
     *  - gradients:  e->grad_shard at U->shard_off if it exists (2, 3, hsdp), else
     *    e->flat_grad at U->flat_off + e->rank·U->shard;
     *  - master, m, v: e->master, e->exp_avg, e->exp_avg_sq at U->shard_off;
     * and call rl_adamw_step(e->ctx, &e->cfg.adamw, e->step, param, grad, master, m, v): it
     * updates the fp32 master and writes the bf16 parameters from it. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: sharded AdamW) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.2");
}

int zero_all_gather_params(zero_engine *e)
{
    /* TODO(29.2): every rank updated only its pieces of e->flat_param. For each unit,
     * rl_all_gather(e->shard_comm, mine, all, 0) in place (mine = this rank's piece of the
     * unit in flat_param, all = the whole unit): afterwards every rank has the whole updated
     * model. Skip it and the other ranks train on stale parameters. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: all-gather of the updated parameters) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.2");
}

/* ================================================================== 29.3 ZeRO-2 */

int zero_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.3): no full gradient buffer: a unit gets its gradient bucket just before
     * backward enters it.
     *  - u = e->unit_of_model_unit[mu->index]; backward enters unit u at its LAST model unit
     *    (U->first_unit + U->nunits − 1): do nothing for the other model units, nor when
     *    U->grad already exists;
     *  - U->grad = a new bf16 tensor of U->padded elements under RL_MEM_GRAD (zero-filled);
     *  - zero_point_grads(e, u, U->grad): backward accumulates the unit's gradients there. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: gradient bucket before backward) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

int zero_grad_ready(rl_param *p, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.3): backward calls this the moment p's gradient is final.
     *  - u = e->unit_of_param[p->index]; count it off: U->pending−−; return 0 while > 0;
     *  - the unit is complete: launch rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_SUM,
     *    RL_ASYNC) into this rank's piece of e->grad_shard (slice at U->shard_off, U->shard
     *    long) and keep the handle in U->reduce — backward goes on while it travels;
     *  - keep at most two buckets alive: if e->last_reduced >= 0, rl_wait on that unit's
     *    reduce, detach its gradients (zero_point_grads(e, last, NULL)), free its bucket and
     *    set its grad/reduce to NULL; then e->last_reduced = u. */
    (void)p;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: reduce-scatter in the grad-ready hook) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

int zero_finalize_grads(zero_engine *e)
{
    /* TODO(29.3): after backward:
     *  - for every unit: wait for a reduce still in flight, detach and free its bucket;
     *    every unit must have pending == 0 (else return an error naming it); reset pending
     *    to U->nparams and e->last_reduced to −1 for the next backward;
     *  - TODO(29.5): HYBRID_SHARD (e->replica_comm != NULL): the pieces hold the sum over
     *    this shard group only; all-reduce e->grad_shard over e->replica_comm (RL_SUM);
     *  - divide e->grad_shard by the data-parallel size: e->n × the replica group's size. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: finalize the gradients) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

/* ================================================================== 29.4 ZeRO-3 / FSDP */

int zero3_gather(zero_engine *e, int u)
{
    /* TODO(29.4): start gathering unit u (check 0 <= u < e->nunits).
     *  - nothing to do if U->full is set (gathered, or prefetched and in flight);
     *  - U->full = a new bf16 tensor of U->padded elements under RL_MEM_PARAM;
     *  - U->gather = rl_all_gather(e->shard_comm, mine, U->full, RL_ASYNC), mine = this rank's
     *    piece: e->param_shard at U->shard_off, U->shard long;
     *  - zero_point_params(e, u, U->full): forward and backward read the parameters there
     *    (only after zero3_wait!). */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: all-gather a unit) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_wait(zero_engine *e, int u)
{
    /* TODO(29.4): rl_wait on U->gather if it is set, then U->gather = NULL. */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: wait for a gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_free(zero_engine *e, int u)
{
    /* TODO(29.4): free after use: if U->full is set, wait for its gather, detach the
     * parameters (zero_point_params(e, u, NULL)), rl_tensor_free(U->full), U->full = NULL.
     * Forget it and every unit stays gathered: the whole model sits on every rank. */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: free a unit) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_pre_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): before unit u's forward (u = e->unit_of_model_unit[mu->index]; act only at
     * its FIRST model unit): gather u and wait for it; then, with e->cfg.forward_prefetch,
     * start gathering u+1 (if it exists) so it travels while u computes. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: pre-forward gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_post_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): after unit u's forward (act only at its LAST model unit): free u. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: post-forward free) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): before unit u's backward (backward enters u at its LAST model unit): gather
     * u again and wait; give it its gradient bucket (zero_pre_backward(mu, arg)); then, with
     * e->cfg.backward_prefetch, start gathering the unit backward needs next: u−1. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: pre-backward gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_post_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): after unit u's backward (backward leaves u at its FIRST model unit): free u.
     * Its gradients were reduce-scattered by your grad-ready hook. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: post-backward free) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

/* ================================================================== 29.5 hybrid sharding */

int hsdp_make_mesh(rl_comm *world, int group, rl_comm **shard, rl_comm **replica)
{
    rl_ctx *ctx = rl_comm_ctx(world);
    /* TODO(29.5): the 2-D mesh. W = rl_comm_size(world), w = rl_comm_rank(world); refuse a
     * group that does not divide W (RL_ERR_ARG with a message).
     *  - *shard   = rl_comm_split(world, w / group, w % group): ranks of one group (a node);
     *  - *replica = rl_comm_split(world, w % group, w / group): the same index in every group.
     * Every rank must call both splits, in the same order (they are collectives).
     * And do the TODO(29.5) in zero_finalize_grads. */
    (void)group, (void)shard, (void)replica;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.5 (hybrid sharding: the 2-D mesh) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.5");
}
