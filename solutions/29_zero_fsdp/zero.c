/* zero.c — Lab 29 reference solution: the ZeRO memory model, ZeRO-1 (sharded optimizer
 * state), ZeRO-2 (bucketed gradient reduce-scatter), ZeRO-3 / FSDP (per-unit gather and
 * free with prefetch) and hybrid sharding. Same functions as labs/29_zero_fsdp/zero.c,
 * filled in. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "zero.h"

/* ================================================================== 29.1 memory model */

int zero_bytes_per_rank(rl_ctx *ctx, double psi, int n, zero_stage stage, double k, int group, zero_mem *out)
{
    if (!out || !(psi >= 0) || !isfinite(psi) || n < 1 || !isfinite(k))
        return rl_error(ctx, RL_ERR_ARG, "zero_bytes_per_rank: need psi >= 0 parameters, n >= 1 ranks and a finite k "
                        "(got %g, %d, %g)", psi, n, k);
    if (!(k > 0))
        k = ZERO_DEFAULT_K;
    memset(out, 0, sizeof *out);
    double p = 2 * psi, g = 2 * psi, o = k * psi; /* bf16 params, bf16 grads, fp32 master + m + v */
    switch (stage) {
    case ZERO_DDP: break;
    case ZERO_STAGE1: o /= n; break;
    case ZERO_STAGE2: g /= n, o /= n; break;
    case ZERO_STAGE3: p /= n, g /= n, o /= n; break;
    case ZERO_HSDP:
        if (group < 1 || group > n || n % group)
            return rl_error(ctx, RL_ERR_ARG, "zero_bytes_per_rank: hsdp group %d must divide the %d ranks", group, n);
        p /= group, g /= group, o /= group;
        break;
    default:
        return rl_error(ctx, RL_ERR_ARG, "zero_bytes_per_rank: unknown stage %d (ZERO_DDP .. ZERO_HSDP)", (int)stage);
    }
    out->param = p;
    out->grad = g;
    out->optim = o;
    out->total = p + g + o;
    out->gb = out->total / ZERO_GB;
    out->gib = out->total / ZERO_GIB;
    return 0;
}

/* ================================================================== 29.2 ZeRO-1 */

/* Number of ranks a gradient is averaged over: the shard group times the replicas. */
static int dp_size(const zero_engine *e)
{
    return e->n * (e->replica_comm ? rl_comm_size(e->replica_comm) : 1);
}

int zero1_reduce_scatter_grads(zero_engine *e)
{
    int rc = 0;
    for (int u = 0; u < e->nunits && !rc; u++) {
        zero_unit *U = &e->units[u];
        rl_tensor *all = rl_tensor_slice(e->flat_grad, U->flat_off, U->padded);
        rl_tensor *mine = rl_tensor_slice(e->flat_grad, U->flat_off + (int64_t)e->rank * U->shard, U->shard);
        rl_set_tag(e->ctx, RL_TAG_BUCKET, u);
        rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;
        rl_set_tag(e->ctx, RL_TAG_BUCKET, -1);
        if (!rc && e->n > 1)
            rc = rl_scale(e->ctx, mine, 1.0f / (float)e->n);
        rl_tensor_free(all);
        rl_tensor_free(mine);
    }
    return rc;
}

int zero_shard_adamw(zero_engine *e)
{
    e->step++;
    int rc = 0;
    for (int u = 0; u < e->nunits && !rc; u++) {
        zero_unit *U = &e->units[u];
        if (!U->shard)
            continue;
        int64_t mine = U->flat_off + (int64_t)e->rank * U->shard;
        rl_tensor *p = e->param_shard ? rl_tensor_slice(e->param_shard, U->shard_off, U->shard)
                                      : rl_tensor_slice(e->flat_param, mine, U->shard);
        rl_tensor *g = e->grad_shard ? rl_tensor_slice(e->grad_shard, U->shard_off, U->shard)
                                     : rl_tensor_slice(e->flat_grad, mine, U->shard);
        rl_tensor *w = rl_tensor_slice(e->master, U->shard_off, U->shard);
        rl_tensor *m = rl_tensor_slice(e->exp_avg, U->shard_off, U->shard);
        rl_tensor *v = rl_tensor_slice(e->exp_avg_sq, U->shard_off, U->shard);
        rc = rl_adamw_step(e->ctx, &e->cfg.adamw, e->step, p, g, w, m, v);
        rl_tensor_free(p);
        rl_tensor_free(g);
        rl_tensor_free(w);
        rl_tensor_free(m);
        rl_tensor_free(v);
    }
    return rc;
}

int zero_all_gather_params(zero_engine *e)
{
    int rc = 0;
    for (int u = 0; u < e->nunits && !rc; u++) {
        zero_unit *U = &e->units[u];
        rl_tensor *all = rl_tensor_slice(e->flat_param, U->flat_off, U->padded);
        rl_tensor *mine = rl_tensor_slice(e->flat_param, U->flat_off + (int64_t)e->rank * U->shard, U->shard);
        rl_set_tag(e->ctx, RL_TAG_BUCKET, u);
        rc = rl_all_gather(e->shard_comm, mine, all, 0) ? 0 : RL_ERR_ARG;
        rl_set_tag(e->ctx, RL_TAG_BUCKET, -1);
        rl_tensor_free(all);
        rl_tensor_free(mine);
    }
    return rc;
}

/* ================================================================== 29.3 ZeRO-2 */

/* Waits for unit u's reduce-scatter and frees its gradient bucket. */
static int release_bucket(zero_engine *e, int u)
{
    zero_unit *U = &e->units[u];
    int rc = 0;
    if (U->reduce)
        rc = rl_wait(U->reduce);
    U->reduce = NULL;
    if (U->grad) {
        int st = zero_point_grads(e, u, NULL);
        rl_tensor_free(U->grad);
        U->grad = NULL;
        rc = rc ? rc : st;
    }
    return rc;
}

int zero_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_model_unit[mu->index];
    zero_unit *U = &e->units[u];
    if (mu->index != U->first_unit + U->nunits - 1 || U->grad)
        return 0;
    char name[32];
    snprintf(name, sizeof name, "grad_bucket%d", u);
    U->grad = rl_tensor_new_1d(e->ctx, name, RL_BF16, RL_MEM_GRAD, U->padded);
    if (!U->grad)
        return RL_ERR_NOMEM;
    return zero_point_grads(e, u, U->grad);
}

/* This backward's bookkeeping, in the engine's scratch (all 0 between backwards): per unit how
 * many of its gradients are ready, and after them 1 + the unit launched last (0: none yet). */
static int *ready_counts(zero_engine *e) { return e->scratch; }
static int *last_launched(zero_engine *e) { return e->scratch + e->nunits; }

int zero_grad_ready(rl_param *p, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_param[p->index], *ready = ready_counts(e), *last = last_launched(e);
    zero_unit *U = &e->units[u];
    if (++ready[u] < U->nparams)
        return 0;
    if (ready[u] > U->nparams || !U->grad)
        return rl_error(e->ctx, RL_ERR_ARG, "zero: unit %d's gradients became ready twice or without a bucket", u);
    rl_tensor *mine = rl_tensor_slice(e->grad_shard, U->shard_off, U->shard);
    rl_set_tag(e->ctx, RL_TAG_BUCKET, u);
    U->reduce = rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_SUM, RL_ASYNC);
    rl_set_tag(e->ctx, RL_TAG_BUCKET, -1);
    rl_tensor_free(mine);
    if (!U->reduce)
        return RL_ERR_ARG;
    /* at most two buckets alive: the one just launched and the one still travelling */
    int rc = *last ? release_bucket(e, *last - 1) : 0;
    *last = u + 1;
    return rc;
}

int zero_finalize_grads(zero_engine *e)
{
    int rc = 0;
    for (int u = 0; u < e->nunits; u++) {
        int st = release_bucket(e, u);
        rc = rc ? rc : st;
        if (!rc && ready_counts(e)[u] != e->units[u].nparams)
            rc = rl_error(e->ctx, RL_ERR_ARG, "zero: unit %d still waits for %d gradient(s) after backward", u,
                          e->units[u].nparams - ready_counts(e)[u]);
    }
    memset(e->scratch, 0, (size_t)e->nscratch * sizeof *e->scratch);
    if (!rc && e->replica_comm && rl_comm_size(e->replica_comm) > 1)
        rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    if (!rc && dp_size(e) > 1)
        rc = rl_scale(e->ctx, e->grad_shard, 1.0f / (float)dp_size(e));
    return rc;
}

/* ================================================================== 29.4 ZeRO-3 / FSDP */

int zero3_gather(zero_engine *e, int u)
{
    if (u < 0 || u >= e->nunits)
        return rl_error(e->ctx, RL_ERR_ARG, "zero3_gather: unit %d does not exist (0..%d)", u, e->nunits - 1);
    zero_unit *U = &e->units[u];
    if (U->full)
        return 0;
    char name[32];
    snprintf(name, sizeof name, "unit%d.full", u);
    U->full = rl_tensor_new_1d(e->ctx, name, RL_BF16, RL_MEM_PARAM, U->padded);
    if (!U->full)
        return RL_ERR_NOMEM;
    rl_tensor *mine = rl_tensor_slice(e->param_shard, U->shard_off, U->shard);
    rl_set_tag(e->ctx, RL_TAG_BUCKET, u);
    U->gather = rl_all_gather(e->shard_comm, mine, U->full, RL_ASYNC);
    rl_set_tag(e->ctx, RL_TAG_BUCKET, -1);
    rl_tensor_free(mine);
    if (!U->gather)
        return RL_ERR_ARG;
    return zero_point_params(e, u, U->full);
}

int zero3_wait(zero_engine *e, int u)
{
    zero_unit *U = &e->units[u];
    int rc = U->gather ? rl_wait(U->gather) : 0;
    U->gather = NULL;
    return rc;
}

int zero3_free(zero_engine *e, int u)
{
    zero_unit *U = &e->units[u];
    if (!U->full)
        return 0;
    int rc = zero3_wait(e, u);
    int st = zero_point_params(e, u, NULL);
    rl_tensor_free(U->full);
    U->full = NULL;
    return rc ? rc : st;
}

int zero3_pre_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_model_unit[mu->index];
    if (mu->index != e->units[u].first_unit)
        return 0;
    int rc = zero3_gather(e, u);
    if (!rc)
        rc = zero3_wait(e, u);
    if (!rc && e->cfg.forward_prefetch && u + 1 < e->nunits)
        rc = zero3_gather(e, u + 1);
    return rc;
}

int zero3_post_forward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_model_unit[mu->index];
    if (mu->index != e->units[u].first_unit + e->units[u].nunits - 1)
        return 0;
    return zero3_free(e, u);
}

int zero3_pre_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_model_unit[mu->index];
    if (mu->index != e->units[u].first_unit + e->units[u].nunits - 1)
        return 0;
    int rc = zero3_gather(e, u);
    if (!rc)
        rc = zero3_wait(e, u);
    if (!rc)
        rc = zero_pre_backward(mu, arg);
    if (!rc && e->cfg.backward_prefetch && u - 1 >= 0)
        rc = zero3_gather(e, u - 1);
    return rc;
}

int zero3_post_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int u = e->unit_of_model_unit[mu->index];
    if (mu->index != e->units[u].first_unit)
        return 0;
    return zero3_free(e, u);
}

/* ================================================================== 29.5 hybrid sharding */

int hsdp_make_mesh(rl_comm *world, int group, rl_comm **shard, rl_comm **replica)
{
    rl_ctx *ctx = rl_comm_ctx(world);
    if (!world || !shard || !replica)
        return rl_error(ctx, RL_ERR_ARG, "hsdp_make_mesh: world, shard and replica are required");
    int W = rl_comm_size(world), w = rl_comm_rank(world);
    if (group < 1 || W % group)
        return rl_error(ctx, RL_ERR_ARG, "hsdp_make_mesh: a shard group of %d ranks does not divide the world of %d; "
                        "pick a divisor (e.g. the GPUs of one node)", group, W);
    *shard = rl_comm_split(world, w / group, w % group);
    *replica = *shard ? rl_comm_split(world, w % group, w / group) : NULL;
    if (!*shard || !*replica) {
        char why[256];
        snprintf(why, sizeof why, "%s", rl_last_error(ctx));
        return rl_error(ctx, RL_ERR_ARG, "hsdp_make_mesh: rl_comm_split failed: %s", why);
    }
    return 0;
}
