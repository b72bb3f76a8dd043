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
    /* TODO(29.1): the contract is README.md, step 29.1. In short: *out gets the model-state
     * bytes one rank holds between steps — bf16 parameters, bf16 gradients and K optimizer
     * bytes per parameter (k <= 0: K = 12), each held whole or split evenly over the ranks that
     * share it, as the stage shards it (zero.h) — their total, and the total in GB and GiB;
     * exact, not rounded. Refuse a bad Ψ, k, n, stage or out, and (hsdp only) a bad group, with
     * RL_ERR_ARG and a message (ctx may be NULL). No calc.h. Stuck: make hint LAB=29 STEP=29.1 */
    (void)psi, (void)n, (void)stage, (void)k, (void)group, (void)out;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.1 (memory model) is not implemented yet — see labs/29_zero_fsdp/README.md, step 29.1");
}

/* ================================================================== 29.2 ZeRO-1 */

int zero1_reduce_scatter_grads(zero_engine *e)
{
    /* TODO(29.2): the contract is README.md, step 29.2. In short: e->flat_grad holds this rank's
     * own gradients of every unit; afterwards this rank's piece of each unit (zero.h's layout)
     * holds the mean over the ranks of e->shard_comm — one reduce-scatter per unit, in place in
     * flat_grad, no buffer of your own; the other ranks' pieces are left as they are (or ÷N).
     * Stuck: make hint LAB=29 STEP=29.2 */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: reduce-scatter of the gradients) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.2");
}

int zero_shard_adamw(zero_engine *e)
{
    /* TODO(29.2): one AdamW step (rl_adamw_step with e->cfg.adamw) on this rank's pieces only —
     * every unit's bf16 parameters and reduced gradients where the stage keeps them, its fp32
     * master, m and v (zero.h's layout) — with e->step one more than before the call (AdamW
     * counts from 1). No communication. Every stage uses it. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: sharded AdamW) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.2");
}

int zero_all_gather_params(zero_engine *e)
{
    /* TODO(29.2): stages 1 and 2: afterwards every rank's e->flat_param holds every rank's
     * updated pieces — the whole model, the same on every rank: one all-gather per unit, in
     * place, no buffer of your own. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.2 (ZeRO-1: all-gather of the updated parameters) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.2");
}

/* ================================================================== 29.3 ZeRO-2 */

int zero_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.3): the contract is README.md, step 29.3. In short: when backward enters a unit
     * (mu is one of its model units; backward enters a unit at its last one), the unit gets its
     * gradient bucket — U->grad, zero-filled bf16 [padded] under RL_MEM_GRAD, the unit's
     * gradients pointing into it (zero_point_grads) — once per backward.
     * Stuck: make hint LAB=29 STEP=29.3 */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: gradient bucket before backward) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

int zero_grad_ready(rl_param *p, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.3): backward calls this once per parameter, the moment p's gradient is final, in an
     * order that is not always reverse registration order. The call that brings a unit's last
     * gradient launches that unit's reduce-scatter (RL_ASYNC, handle in U->reduce) into this
     * rank's piece of e->grad_shard. When it returns, at most one complete unit still holds a
     * bucket — the one launched last; the one launched before it has been
     * released (its reduce-scatter complete, its gradients detached, its bucket freed, U->grad
     * and U->reduce NULL). A unit announced more often than it has parameters is an error.
     * What you remember between calls lives in e->scratch (all 0 between backwards): design it. */
    (void)p;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: reduce-scatter in the grad-ready hook) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

int zero_finalize_grads(zero_engine *e)
{
    /* TODO(29.3): after backward. When it returns every reduce-scatter has ended, every bucket
     * is freed, e->scratch is all 0 again, and the pieces of
     * e->grad_shard hold the mean over every data-parallel rank. A unit still pending is an
     * error whose message names it ("unit 3" or "block2"), returned after the same clean-up.
     * TODO(29.5): HYBRID_SHARD (e->replica_comm != NULL): the mean is over every rank of every
     * replica — the pieces must agree across e->replica_comm too. */
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.3 (ZeRO-2: finalize the gradients) is not implemented yet — see "
                    "labs/29_zero_fsdp/README.md, step 29.3");
}

/* ================================================================== 29.4 ZeRO-3 / FSDP */

int zero3_gather(zero_engine *e, int u)
{
    /* TODO(29.4): the contract is README.md, step 29.4. In short: afterwards unit u has U->full,
     * a new bf16 [padded] buffer under RL_MEM_PARAM that an asynchronous all-gather (handle in
     * U->gather) on e->shard_comm fills from every rank's piece of e->param_shard, and its
     * parameters point into it (zero_point_params; readable only after zero3_wait). Nothing to
     * do when u is already gathered or on its way; RL_ERR_ARG for a u that is not a unit.
     * Stuck: make hint LAB=29 STEP=29.4 */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: all-gather a unit) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_wait(zero_engine *e, int u)
{
    /* TODO(29.4): afterwards unit u's gather, if one was in flight, has completed (U->gather
     * NULL). */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: wait for a gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_free(zero_engine *e, int u)
{
    /* TODO(29.4): afterwards unit u holds no gathered parameters (detached, U->full freed and
     * NULL), and a gather still in flight has ended first. Nothing to do if u is not gathered. */
    (void)u;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: free a unit) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_pre_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): when unit u's forward begins (forward enters a unit at its first model unit),
     * u is gathered and its gather has ended; with e->cfg.forward_prefetch, the gather of the
     * unit forward needs next has been issued too, and u's compute never waits for it. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: pre-forward gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_post_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): after unit u's forward (forward leaves a unit at its last model unit), u holds
     * no gathered parameters. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: post-forward free) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): when unit u's backward begins (backward enters a unit at its last model unit),
     * u is gathered again and its gather has ended, and u has its gradient bucket (29.3); with
     * e->cfg.backward_prefetch, the gather of the unit backward needs next has been issued too,
     * and u's compute never waits for it. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: pre-backward gather) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

int zero3_post_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    /* TODO(29.4): after unit u's backward (backward leaves a unit at its first model unit), u
     * holds no gathered parameters; its gradients left through your grad-ready hook. */
    (void)mu;
    return rl_error(e->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.4 (ZeRO-3: post-backward free) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.4");
}

/* ================================================================== 29.5 hybrid sharding */

int hsdp_make_mesh(rl_comm *world, int group, rl_comm **shard, rl_comm **replica)
{
    rl_ctx *ctx = rl_comm_ctx(world);
    /* TODO(29.5): the contract is README.md, step 29.5. In short: *shard = the communicator of
     * this rank's block of `group` consecutive world ranks (one node), ordered by world rank;
     * *replica = the ranks at the same position in every block, ordered by block; both from
     * rl_comm_split, the same splits in the same order on every rank. A group that does not
     * divide the world size: RL_ERR_ARG with a message, on every rank, before any split.
     * And do the TODO(29.5) in zero_finalize_grads. Stuck: make hint LAB=29 STEP=29.5 */
    (void)group, (void)shard, (void)replica;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 29.5 (hybrid sharding: the 2-D mesh) is not implemented yet — see labs/29_zero_fsdp/README.md, "
                    "step 29.5");
}
