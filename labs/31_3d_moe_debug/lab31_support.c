/* lab31_support.c — the pieces Lab 31 gives you (do not edit): mesh helpers, the TP and PP
 * building blocks of the 3D step (Megatron-style column/row-parallel MLP blocks, the
 * grouped pipeline exchange), the MoE layer's weights and expert MLPs, the fault-injection
 * run behind 31.4, and the planner's link and α-β helpers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lab31.h"
#include "rng.h"

#define LN_EPS_LAB 1e-5f /* model.h's LayerNorm epsilon */

/* ================================================================== 31.1 helpers */

const char *mesh_dim_name(mesh_dim d)
{
    static const char *const n[MESH_NDIMS] = { "tp", "cp", "pp", "dp", "ep", "edp" };
    return d >= 0 && d < MESH_NDIMS ? n[d] : "?";
}

int mesh_dim_bits(mesh_dim d)
{
    static const int b[MESH_NDIMS] = { RL_MESH_TP, RL_MESH_CP, RL_MESH_PP, RL_MESH_DP, RL_MESH_EP, RL_MESH_EDP };
    return d >= 0 && d < MESH_NDIMS ? b[d] : 0;
}

void mesh_comms_free(mesh_comms *mc)
{
    if (!mc)
        return;
    for (int d = 0; d < MESH_NDIMS; d++) {
        if (mc->c[d])
            rl_comm_free(mc->c[d]);
        mc->c[d] = NULL;
    }
}

/* ================================================================== 31.2 the 3D engine */

/* One parameter of this rank: a view into flat_param / flat_grad. */
typedef struct td_param {
    char name[40];        /* the one-rank model's name ("block0.fc1.w") */
    int slice;            /* 0 full copy, 1 columns [h, f/t] of [h, f], 2 entries [f/t] of [f], 3 rows [f/t, h] of [f, h] */
    int64_t off, numel, rows, cols;
    rl_tensor *value, *grad;
} td_param;

typedef struct td_block_acts {
    rl_tensor *y, *mean, *rstd, *pre, *act, *out;
    const rl_tensor *in;
} td_block_acts;

struct td_state {
    int nparams;
    td_param *p;
    int nblocks, m;
    int64_t b, h, f, fs, out_dim;  /* fs = f / tp */
    td_block_acts **acts;          /* [m][nblocks] */
    rl_batch *batch;               /* [m] */
    rl_tensor **recv_act, **recv_grad, **dx, **pred, **dpred; /* [m] */
    rl_tensor *d_act, *d_y, *d_x, *d_cur;
};

static td_param *tp_param(td_engine *e, int blk, int which) /* which: 0 ln.g 1 ln.b 2 fc1.w 3 fc1.b 4 fc2.w 5 fc2.b */
{
    return &e->st->p[blk * 6 + which];
}

static int add_param(td_state *st, const char *name, int slice, int64_t rows, int64_t cols, int64_t *off)
{
    td_param *p = &st->p[st->nparams++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->slice = slice;
    p->rows = rows;
    p->cols = cols;
    p->numel = rows * cols;
    p->off = *off;
    *off += p->numel;
    return 0;
}

/* Copies this rank's piece of the one-rank parameter full into p (or back, export = 1). */
static void copy_piece(const td_engine *e, const td_param *p, float *full, int64_t full_cols, float *mine, int export)
{
    int64_t t = e->tp_rank;
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t c = 0; c < p->cols; c++) {
            int64_t src;
            switch (p->slice) {
            case 1: src = r * full_cols + t * p->cols + c; break;  /* columns */
            case 2: src = t * p->cols + c; break;                   /* a 1-D piece */
            case 3: src = (t * p->rows + r) * full_cols + c; break; /* rows */
            default: src = r * p->cols + c; break;
            }
            if (export)
                full[src] = mine[r * p->cols + c];
            else
                mine[r * p->cols + c] = full[src];
        }
}

static int64_t full_cols_of(const td_engine *e, const td_param *p)
{
    const td_state *st = e->st;
    if (p->slice == 1)
        return st->f;
    if (p->slice == 3)
        return st->h;
    return p->cols;
}

#define TDTRY(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)

static rl_tensor *t2(rl_ctx *ctx, const char *name, rl_mem_cat cat, int64_t a, int64_t b, const char *dims)
{
    int64_t sh[2] = { a, b };
    return rl_tensor_new(ctx, name, RL_F32, cat, 2, sh, dims);
}

td_engine *td_engine_new(rl_ctx *ctx, const td_config *cfg, rl_data *data)
{
    const rl_model_config *mc = &cfg->model;
    int W = rl_world_size(ctx);
    if (cfg->dp < 1 || cfg->pp < 1 || cfg->tp < 1 || cfg->dp * cfg->pp * cfg->tp != W) {
        rl_error(ctx, RL_ERR_ARG, "3D step: dp=%d x pp=%d x tp=%d must equal the %d ranks", cfg->dp, cfg->pp, cfg->tp, W);
        return NULL;
    }
    int f = mc->ffn > 0 ? mc->ffn : 4 * mc->hidden;
    if (mc->kind != RL_MODEL_MLP || mc->layers % cfg->pp || f % cfg->tp || cfg->micro_batches < 1 ||
        cfg->micro_batch < 1 || mc->param_dtype != RL_F32 || mc->grad_dtype != RL_F32) {
        rl_error(ctx, RL_ERR_ARG, "3D step: needs an f32 MLP stack whose %d layers divide by pp=%d and whose ffn %d "
                 "divides by tp=%d, and m, b >= 1", mc->layers, cfg->pp, f, cfg->tp);
        return NULL;
    }
    td_engine *e = calloc(1, sizeof *e);
    td_state *st = calloc(1, sizeof *st);
    if (!e || !st) {
        free(e);
        free(st);
        return NULL;
    }
    e->ctx = ctx;
    e->cfg = *cfg;
    e->st = st;
    e->data = data;
    char err[256];
    rl_mesh_shape sh = rl_mesh_shape_make(cfg->dp, cfg->pp, cfg->tp);
    if (rl_mesh_init(&e->mesh, &sh, W, rl_ctx_hw(ctx), err, sizeof err)) {
        rl_error(ctx, RL_ERR_ARG, "%s", err);
        goto fail;
    }
    if (rl_mesh_build_comms(ctx, &e->mesh, &e->comms))
        goto fail;
    e->stage = e->comms.coord.pp;
    e->tp_rank = e->comms.coord.tp;
    e->dp_rank = e->comms.coord.dp;
    e->sched = rl_pp_schedule_new(RL_PP_1F1B, cfg->pp, cfg->micro_batches, 1, err, sizeof err);
    if (!e->sched) {
        rl_error(ctx, RL_ERR_ARG, "%s", err);
        goto fail;
    }
    int P = cfg->pp, m = cfg->micro_batches, last = e->stage == P - 1;
    st->nblocks = mc->layers / P;
    st->m = m;
    st->b = cfg->micro_batch;
    st->h = mc->hidden;
    st->f = f;
    st->fs = f / cfg->tp;
    st->out_dim = mc->out_dim;
    st->p = calloc((size_t)(6 * st->nblocks + 2), sizeof *st->p);
    if (!st->p)
        goto fail;
    int64_t off = 0, h = st->h, fs = st->fs;
    char n[40];
    for (int k = 0; k < st->nblocks; k++) {
        int l = e->stage * st->nblocks + k;
        snprintf(n, sizeof n, "block%d.ln.g", l), add_param(st, n, 0, 1, h, &off);
        snprintf(n, sizeof n, "block%d.ln.b", l), add_param(st, n, 0, 1, h, &off);
        snprintf(n, sizeof n, "block%d.fc1.w", l), add_param(st, n, 1, h, fs, &off);
        snprintf(n, sizeof n, "block%d.fc1.b", l), add_param(st, n, 2, 1, fs, &off);
        snprintf(n, sizeof n, "block%d.fc2.w", l), add_param(st, n, 3, fs, h, &off);
        snprintf(n, sizeof n, "block%d.fc2.b", l), add_param(st, n, 0, 1, h, &off);
    }
    if (last) {
        add_param(st, "head.w", 0, h, st->out_dim, &off);
        add_param(st, "head.b", 0, 1, st->out_dim, &off);
    }
    e->numel = off;
    e->padded = (off + cfg->dp - 1) / cfg->dp * cfg->dp;
    e->shard = e->padded / cfg->dp;
    e->flat_param = rl_tensor_new_1d(ctx, "flat_param", RL_F32, RL_MEM_PARAM, e->padded);
    e->flat_grad = rl_tensor_new_1d(ctx, "flat_grad", RL_F32, RL_MEM_GRAD, e->padded);
    e->exp_avg = rl_tensor_new_1d(ctx, "exp_avg", RL_F32, RL_MEM_OPTIM, e->shard);
    e->exp_avg_sq = rl_tensor_new_1d(ctx, "exp_avg_sq", RL_F32, RL_MEM_OPTIM, e->shard);
    if (!e->flat_param || !e->flat_grad || !e->exp_avg || !e->exp_avg_sq)
        goto fail;
    /* this rank's pieces of the one-rank model (same config, same seed) */
    rl_model *full = rl_model_new(ctx, mc);
    if (!full)
        goto fail;
    /* built on the host, then copied once (the flat parameter may be GPU memory) */
    float *host = calloc((size_t)e->padded, sizeof(float));
    if (!host) {
        rl_model_free(full);
        goto fail;
    }
    for (int i = 0; i < st->nparams; i++) {
        td_param *p = &st->p[i];
        rl_param *fp = rl_model_find_param(full, p->name);
        float *buf = fp ? malloc(sizeof(float) * (size_t)fp->numel) : NULL;
        if (!buf) {
            free(host);
            rl_model_free(full);
            rl_error(ctx, RL_ERR_ARG, "3D step: the one-rank model has no parameter %s", p->name);
            goto fail;
        }
        rl_tensor_to_f32(fp->value, buf, fp->numel);
        copy_piece(e, p, buf, full_cols_of(e, p), host + p->off, 0);
        free(buf);
        int64_t shp[2] = { p->rows, p->cols };
        int nd = p->rows == 1 ? 1 : 2;
        p->value = rl_tensor_view(e->flat_param, p->name, p->off, nd, nd == 1 ? shp + 1 : shp, NULL);
        p->grad = rl_tensor_view(e->flat_grad, p->name, p->off, nd, nd == 1 ? shp + 1 : shp, NULL);
    }
    rl_model_free(full);
    int copied = rl_tensor_from_f32(e->flat_param, host, e->padded);
    free(host);
    if (copied)
        goto fail;
    /* activations and p2p buffers per micro-batch */
    int64_t b = st->b;
    st->acts = calloc((size_t)m, sizeof *st->acts);
    st->batch = calloc((size_t)m, sizeof *st->batch);
    st->recv_act = calloc((size_t)m, sizeof(rl_tensor *));
    st->recv_grad = calloc((size_t)m, sizeof(rl_tensor *));
    st->dx = calloc((size_t)m, sizeof(rl_tensor *));
    st->pred = calloc((size_t)m, sizeof(rl_tensor *));
    st->dpred = calloc((size_t)m, sizeof(rl_tensor *));
    if (!st->acts || !st->batch || !st->recv_act || !st->recv_grad || !st->dx || !st->pred || !st->dpred)
        goto fail;
    for (int j = 0; j < m; j++) {
        st->acts[j] = calloc((size_t)st->nblocks, sizeof(td_block_acts));
        if (!st->acts[j])
            goto fail;
        for (int k = 0; k < st->nblocks; k++) {
            td_block_acts *a = &st->acts[j][k];
            a->y = t2(ctx, "ln", RL_MEM_ACTIVATION, b, h, "b,h");
            a->mean = rl_tensor_new_1d(ctx, "ln.mean", RL_F32, RL_MEM_ACTIVATION, b);
            a->rstd = rl_tensor_new_1d(ctx, "ln.rstd", RL_F32, RL_MEM_ACTIVATION, b);
            a->pre = t2(ctx, "fc1", RL_MEM_ACTIVATION, b, fs, "b,4h/t");
            a->act = t2(ctx, "gelu", RL_MEM_ACTIVATION, b, fs, "b,4h/t");
            a->out = t2(ctx, "out", RL_MEM_ACTIVATION, b, h, "b,h");
            if (!a->y || !a->mean || !a->rstd || !a->pre || !a->act || !a->out)
                goto fail;
        }
        st->recv_act[j] = e->stage > 0 ? t2(ctx, "recv_act", RL_MEM_COMM, b, h, "b,h") : NULL;
        st->recv_grad[j] = !last ? t2(ctx, "recv_grad", RL_MEM_COMM, b, h, "b,h") : NULL;
        st->dx[j] = t2(ctx, "dx", RL_MEM_ACTIVATION, b, h, "b,h");
        st->pred[j] = last ? t2(ctx, "pred", RL_MEM_ACTIVATION, b, st->out_dim, "b,out") : NULL;
        st->dpred[j] = last ? t2(ctx, "dpred", RL_MEM_ACTIVATION, b, st->out_dim, "b,out") : NULL;
        if (!st->dx[j] || (e->stage > 0 && !st->recv_act[j]) || (!last && !st->recv_grad[j]) ||
            (last && (!st->pred[j] || !st->dpred[j])))
            goto fail;
    }
    st->d_act = t2(ctx, "d_act", RL_MEM_ACTIVATION, b, fs, "b,4h/t");
    st->d_y = t2(ctx, "d_ln", RL_MEM_ACTIVATION, b, h, "b,h");
    st->d_x = t2(ctx, "d_x", RL_MEM_ACTIVATION, b, h, "b,h");
    if (!st->d_act || !st->d_y || !st->d_x)
        goto fail;
    return e;
fail:
    td_engine_free(e);
    return NULL;
}

void td_engine_free(td_engine *e)
{
    if (!e)
        return;
    td_state *st = e->st;
    if (st) {
        for (int i = 0; i < st->nparams; i++) {
            rl_tensor_free(st->p[i].value);
            rl_tensor_free(st->p[i].grad);
        }
        free(st->p);
        for (int j = 0; j < st->m; j++) {
            if (st->acts && st->acts[j]) {
                for (int k = 0; k < st->nblocks; k++) {
                    td_block_acts *a = &st->acts[j][k];
                    rl_tensor_free(a->y), rl_tensor_free(a->mean), rl_tensor_free(a->rstd);
                    rl_tensor_free(a->pre), rl_tensor_free(a->act), rl_tensor_free(a->out);
                }
                free(st->acts[j]);
            }
            if (st->batch)
                rl_batch_free(&st->batch[j]);
            if (st->recv_act)
                rl_tensor_free(st->recv_act[j]);
            if (st->recv_grad)
                rl_tensor_free(st->recv_grad[j]);
            if (st->dx)
                rl_tensor_free(st->dx[j]);
            if (st->pred)
                rl_tensor_free(st->pred[j]);
            if (st->dpred)
                rl_tensor_free(st->dpred[j]);
        }
        free(st->acts), free(st->batch), free(st->recv_act), free(st->recv_grad), free(st->dx), free(st->pred);
        free(st->dpred);
        rl_tensor_free(st->d_act), rl_tensor_free(st->d_y), rl_tensor_free(st->d_x);
        free(st);
    }
    rl_tensor_free(e->flat_param), rl_tensor_free(e->flat_grad);
    rl_tensor_free(e->exp_avg), rl_tensor_free(e->exp_avg_sq);
    rl_pp_schedule_free(e->sched);
    rl_comm *cs[] = { e->comms.tp, e->comms.cp, e->comms.pp, e->comms.dp, e->comms.ep, e->comms.edp,
                      e->comms.dp_cp, e->comms.mp };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        if (cs[i])
            rl_comm_free(cs[i]);
    free(e);
}

static int check_mb(td_engine *e, int mb, const char *what)
{
    if (!e || !e->st || mb < 0 || mb >= e->st->m)
        return rl_error(e ? e->ctx : NULL, RL_ERR_ARG, "%s: micro-batch %d is outside 0..%d", what, mb,
                        e && e->st ? e->st->m - 1 : -1);
    return 0;
}

int td_stage_forward(td_engine *e, rl_comm *tp, int64_t step, int mb)
{
    TDTRY(check_mb(e, mb, "td_stage_forward"));
    td_state *st = e->st;
    rl_ctx *ctx = e->ctx;
    int last = e->stage == e->cfg.pp - 1;
    if (!tp || rl_comm_size(tp) != e->cfg.tp)
        return rl_error(ctx, RL_ERR_ARG, "td_stage_forward: the tensor-parallel communicator must have tp=%d ranks "
                        "(got %d): pass this rank's TP group", e->cfg.tp, tp ? rl_comm_size(tp) : 0);
    int64_t first = ((int64_t)e->dp_rank * st->m + mb) * st->b;
    if (e->stage == 0 || last)
        TDTRY(rl_data_get(e->data, ctx, step, first, st->b, &st->batch[mb]));
    const rl_tensor *x = e->stage == 0 ? st->batch[mb].x : st->recv_act[mb];
    for (int k = 0; k < st->nblocks; k++) {
        td_block_acts *a = &st->acts[mb][k];
        rl_set_tag(ctx, RL_TAG_LAYER, e->stage * st->nblocks + k);
        a->in = x;
        TDTRY(rl_layernorm_forward(ctx, x, tp_param(e, k, 0)->value, tp_param(e, k, 1)->value, LN_EPS_LAB, a->y,
                                   a->mean, a->rstd));
        TDTRY(rl_matmul(ctx, a->y, 0, tp_param(e, k, 2)->value, 0, a->pre, 0.0f)); /* column-parallel fc1 */
        TDTRY(rl_bias_add(ctx, a->pre, tp_param(e, k, 3)->value));
        TDTRY(rl_gelu_forward(ctx, a->pre, a->act));
        TDTRY(rl_matmul(ctx, a->act, 0, tp_param(e, k, 4)->value, 0, a->out, 0.0f)); /* row-parallel fc2: partial */
        if (e->cfg.tp > 1 && !rl_all_reduce(tp, a->out, a->out, RL_SUM, 0))          /* g: all-reduce forward */
            return rl_error(ctx, RL_ERR_ARG, "td_stage_forward: the TP all-reduce failed: %s", rl_last_error(ctx));
        TDTRY(rl_bias_add(ctx, a->out, tp_param(e, k, 5)->value));
        TDTRY(rl_residual_add(ctx, x, a->out, a->out));
        x = a->out;
    }
    rl_set_tag(ctx, RL_TAG_LAYER, -1);
    if (last) {
        td_param *hw = &st->p[6 * st->nblocks], *hb = &st->p[6 * st->nblocks + 1];
        float l = 0;
        TDTRY(rl_matmul(ctx, x, 0, hw->value, 0, st->pred[mb], 0.0f));
        TDTRY(rl_bias_add(ctx, st->pred[mb], hb->value));
        TDTRY(rl_mse_loss(ctx, st->pred[mb], st->batch[mb].y, 1.0f / (float)st->m, st->dpred[mb], &l));
        e->loss_sum += l;
    }
    return 0;
}

int td_stage_backward(td_engine *e, rl_comm *tp, int mb)
{
    TDTRY(check_mb(e, mb, "td_stage_backward"));
    td_state *st = e->st;
    rl_ctx *ctx = e->ctx;
    int last = e->stage == e->cfg.pp - 1;
    if (!tp || rl_comm_size(tp) != e->cfg.tp)
        return rl_error(ctx, RL_ERR_ARG, "td_stage_backward: the tensor-parallel communicator must have tp=%d ranks "
                        "(got %d)", e->cfg.tp, tp ? rl_comm_size(tp) : 0);
    rl_tensor *dcur = st->dx[mb];
    if (last) {
        td_param *hw = &st->p[6 * st->nblocks], *hb = &st->p[6 * st->nblocks + 1];
        const rl_tensor *xl = st->nblocks ? st->acts[mb][st->nblocks - 1].out
                                          : (e->stage == 0 ? st->batch[mb].x : st->recv_act[mb]);
        TDTRY(rl_bias_backward(ctx, st->dpred[mb], hb->grad));
        TDTRY(rl_matmul_backward(ctx, xl, 0, hw->value, 0, st->dpred[mb], dcur, 0.0f, hw->grad, 1.0f));
    } else {
        TDTRY(rl_copy(ctx, dcur, st->recv_grad[mb]));
    }
    for (int k = st->nblocks - 1; k >= 0; k--) {
        td_block_acts *a = &st->acts[mb][k];
        rl_set_tag(ctx, RL_TAG_LAYER, e->stage * st->nblocks + k);
        TDTRY(rl_bias_backward(ctx, dcur, tp_param(e, k, 5)->grad));
        TDTRY(rl_matmul_backward(ctx, a->act, 0, tp_param(e, k, 4)->value, 0, dcur, st->d_act, 0.0f,
                                 tp_param(e, k, 4)->grad, 1.0f));
        TDTRY(rl_gelu_backward(ctx, a->pre, st->d_act, st->d_act));
        TDTRY(rl_bias_backward(ctx, st->d_act, tp_param(e, k, 3)->grad));
        TDTRY(rl_matmul_backward(ctx, a->y, 0, tp_param(e, k, 2)->value, 0, st->d_act, st->d_y, 0.0f,
                                 tp_param(e, k, 2)->grad, 1.0f));
        if (e->cfg.tp > 1 && !rl_all_reduce(tp, st->d_y, st->d_y, RL_SUM, 0)) /* f: all-reduce backward */
            return rl_error(ctx, RL_ERR_ARG, "td_stage_backward: the TP all-reduce failed: %s", rl_last_error(ctx));
        TDTRY(rl_layernorm_backward(ctx, a->in, tp_param(e, k, 0)->value, a->mean, a->rstd, st->d_y, st->d_x,
                                    tp_param(e, k, 0)->grad, tp_param(e, k, 1)->grad));
        TDTRY(rl_add(ctx, dcur, st->d_x, dcur));
    }
    rl_set_tag(ctx, RL_TAG_LAYER, -1);
    return 0;
}

int td_p2p(td_engine *e, rl_comm *pp, const rl_pp_op *send, const rl_pp_op *recv)
{
    td_state *st = e->st;
    rl_ctx *ctx = e->ctx;
    int s = e->stage, P = e->cfg.pp;
    if (!pp || rl_comm_size(pp) != P)
        return rl_error(ctx, RL_ERR_ARG, "td_p2p: the pipeline communicator must have pp=%d ranks (got %d): pass this "
                        "rank's PP group", P, pp ? rl_comm_size(pp) : 0);
    if ((send && (send->mb < 0 || send->mb >= st->m)) || (recv && (recv->mb < 0 || recv->mb >= st->m)))
        return rl_error(ctx, RL_ERR_ARG, "td_p2p: micro-batch out of range");
    rl_tensor *sbuf = NULL, *rbuf = NULL;
    int speer = -1, rpeer = -1;
    if (send && send->kind == 'F' && s < P - 1)
        sbuf = st->nblocks ? st->acts[send->mb][st->nblocks - 1].out : NULL, speer = s + 1;
    else if (send && send->kind == 'B' && s > 0)
        sbuf = st->dx[send->mb], speer = s - 1;
    if (recv && recv->kind == 'F' && s > 0)
        rbuf = st->recv_act[recv->mb], rpeer = s - 1;
    else if (recv && recv->kind == 'B' && s < P - 1)
        rbuf = st->recv_grad[recv->mb], rpeer = s + 1;
    if (!sbuf && !rbuf)
        return 0;
    TDTRY(rl_group_start(ctx));
    if (sbuf && !rl_send(pp, sbuf, speer, 0))
        return rl_group_end(ctx), rl_error(ctx, RL_ERR_ARG, "td_p2p: send to stage %d failed", speer);
    if (rbuf && !rl_recv(pp, rbuf, rpeer, 0))
        return rl_group_end(ctx), rl_error(ctx, RL_ERR_ARG, "td_p2p: recv from stage %d failed", rpeer);
    return rl_group_end(ctx);
}

int td_export_params(const td_engine *e, float *full)
{
    if (!e || !full)
        return RL_ERR_ARG;
    rl_ctx *sctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(sctx, &e->cfg.model);
    if (!m) {
        rl_ctx_free_standalone(sctx);
        return RL_ERR_ARG;
    }
    float *host = malloc(sizeof(float) * (size_t)e->padded); /* a host copy (GPU memory too) */
    if (!host || rl_tensor_to_f32(e->flat_param, host, e->padded)) {
        free(host);
        rl_model_free(m);
        rl_ctx_free_standalone(sctx);
        return RL_ERR_NOMEM;
    }
    int64_t base = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_param *fp = &m->params[i];
        for (int k = 0; k < e->st->nparams; k++) {
            const td_param *p = &e->st->p[k];
            if (strcmp(p->name, fp->name) == 0)
                copy_piece(e, p, full + base, full_cols_of(e, p), host + p->off, 1);
        }
        base += fp->numel;
    }
    free(host);
    rl_model_free(m);
    rl_ctx_free_standalone(sctx);
    return 0;
}

/* ================================================================== 31.3 MoE layer */

static rl_tensor *seeded(rl_ctx *ctx, const char *name, int64_t rows, int64_t cols, double std, uint64_t seed,
                         uint64_t stream)
{
    rl_tensor *t = rows > 1 ? t2(ctx, name, RL_MEM_PARAM, rows, cols, NULL)
                            : rl_tensor_new_1d(ctx, name, RL_F32, RL_MEM_PARAM, cols);
    if (!t)
        return NULL;
    rl_rng r = rl_rng_make(seed, stream);
    float *d = malloc(sizeof(float) * (size_t)(rows * cols)); /* host values, copied once (GPU too) */
    if (!d) {
        rl_tensor_free(t);
        return NULL;
    }
    for (int64_t i = 0; i < rows * cols; i++)
        d[i] = (float)(std * rl_rng_normal(&r));
    int rc = rl_tensor_from_f32(t, d, rows * cols);
    free(d);
    if (rc) {
        rl_tensor_free(t);
        return NULL;
    }
    return t;
}

moe_layer *moe_layer_new(rl_ctx *ctx, const moe_config *cfg, int ep_rank)
{
    if (!cfg || cfg->hidden < 1 || cfg->ffn < 1 || cfg->num_experts < 1 || cfg->num_experts > 64 || cfg->top_k < 1 ||
        cfg->top_k > cfg->num_experts || cfg->ep < 1 || cfg->num_experts % cfg->ep || ep_rank < 0 ||
        ep_rank >= cfg->ep) {
        rl_error(ctx, RL_ERR_ARG, "moe: need 1 <= top_k <= num_experts <= 64, ep dividing num_experts and "
                 "0 <= ep_rank < ep");
        return NULL;
    }
    moe_layer *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->ctx = ctx;
    l->cfg = *cfg;
    l->ep_rank = ep_rank;
    l->local_experts = cfg->num_experts / cfg->ep;
    int n = l->local_experts, h = cfg->hidden, f = cfg->ffn;
    l->fc1_w = calloc((size_t)n, sizeof(rl_tensor *));
    l->fc1_b = calloc((size_t)n, sizeof(rl_tensor *));
    l->fc2_w = calloc((size_t)n, sizeof(rl_tensor *));
    l->fc2_b = calloc((size_t)n, sizeof(rl_tensor *));
    l->router_w = seeded(ctx, "router.w", h, cfg->num_experts, 1.0 / sqrt(h), cfg->seed, 1000003);
    int bad = !l->fc1_w || !l->fc1_b || !l->fc2_w || !l->fc2_b || !l->router_w;
    for (int i = 0; i < n && !bad; i++) {
        uint64_t e = (uint64_t)(ep_rank * n + i);
        l->fc1_w[i] = seeded(ctx, "expert.fc1.w", h, f, 1.0 / sqrt(h), cfg->seed, 4 * e + 1);
        l->fc1_b[i] = seeded(ctx, "expert.fc1.b", 1, f, 0.1, cfg->seed, 4 * e + 2);
        l->fc2_w[i] = seeded(ctx, "expert.fc2.w", f, h, 1.0 / sqrt(f), cfg->seed, 4 * e + 3);
        l->fc2_b[i] = seeded(ctx, "expert.fc2.b", 1, h, 0.1, cfg->seed, 4 * e + 4);
        bad = !l->fc1_w[i] || !l->fc1_b[i] || !l->fc2_w[i] || !l->fc2_b[i];
    }
    if (bad) {
        moe_layer_free(l);
        return NULL;
    }
    return l;
}

void moe_layer_free(moe_layer *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->local_experts; i++) {
        if (l->fc1_w)
            rl_tensor_free(l->fc1_w[i]);
        if (l->fc1_b)
            rl_tensor_free(l->fc1_b[i]);
        if (l->fc2_w)
            rl_tensor_free(l->fc2_w[i]);
        if (l->fc2_b)
            rl_tensor_free(l->fc2_b[i]);
    }
    free(l->fc1_w), free(l->fc1_b), free(l->fc2_w), free(l->fc2_b);
    rl_tensor_free(l->router_w);
    free(l);
}

int moe_expert_forward(moe_layer *l, int le, const rl_tensor *rows, rl_tensor *out)
{
    if (!l || le < 0 || le >= l->local_experts || !rows || !out || rows->ndim != 2 || out->ndim != 2 ||
        rows->shape[1] != l->cfg.hidden || out->shape[0] != rows->shape[0])
        return rl_error(l ? l->ctx : NULL, RL_ERR_ARG, "moe_expert_forward: rows and out must be [n, %d], local "
                        "expert 0..%d", l ? l->cfg.hidden : 0, l ? l->local_experts - 1 : 0);
    int64_t n = rows->shape[0];
    if (n == 0)
        return 0;
    rl_ctx *ctx = l->ctx;
    rl_set_tag(ctx, RL_TAG_EXPERT, l->ep_rank * l->local_experts + le);
    rl_tensor *pre = t2(ctx, "expert.fc1", RL_MEM_ACTIVATION, n, l->cfg.ffn, "tokens,f");
    int rc = pre ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_matmul(ctx, rows, 0, l->fc1_w[le], 0, pre, 0.0f);
    if (!rc)
        rc = rl_bias_add(ctx, pre, l->fc1_b[le]);
    if (!rc)
        rc = rl_gelu_forward(ctx, pre, pre);
    if (!rc)
        rc = rl_matmul(ctx, pre, 0, l->fc2_w[le], 0, out, 0.0f);
    if (!rc)
        rc = rl_bias_add(ctx, out, l->fc2_b[le]);
    rl_set_tag(ctx, RL_TAG_EXPERT, -1);
    rl_tensor_free(pre);
    return rc;
}

int moe_plan_alloc(moe_plan *p, int64_t tokens, int experts, int top_k, int ep)
{
    if (!p || tokens < 0 || experts < 1 || top_k < 1 || ep < 1)
        return RL_ERR_ARG;
    memset(p, 0, sizeof *p);
    p->tokens = tokens, p->experts = experts, p->top_k = top_k, p->ep = ep;
    size_t slots = (size_t)(tokens * top_k) + 1;
    p->routed = calloc((size_t)experts, sizeof(int64_t));
    p->kept = calloc((size_t)experts, sizeof(int64_t));
    p->expert_counts = calloc((size_t)experts, sizeof(int64_t));
    p->send_slot = calloc(slots, sizeof(int64_t));
    p->send_counts = calloc((size_t)ep, sizeof(int64_t));
    p->send_displs = calloc((size_t)ep, sizeof(int64_t));
    if (!p->routed || !p->kept || !p->expert_counts || !p->send_slot || !p->send_counts || !p->send_displs) {
        moe_plan_free(p);
        return RL_ERR_NOMEM;
    }
    return 0;
}

void moe_plan_free(moe_plan *p)
{
    if (!p)
        return;
    free(p->routed), free(p->kept), free(p->expert_counts), free(p->send_slot), free(p->send_counts);
    free(p->send_displs);
    memset(p, 0, sizeof *p);
}

/* ================================================================== 31.4 the fault run */

fault_run_config fault_run_config_default(void)
{
    fault_run_config c;
    memset(&c, 0, sizeof c);
    rl_opts_init(&c.opts);
    c.opts.ranks = 8;
    c.steps = 6;
    c.layers = 4;
    c.base_ms = 2200;
    c.spike_rank = c.spike_step = c.spike_layer = -1;
    c.spike_factor = 40;
    return c;
}

typedef struct fault_shared {
    const fault_run_config *cfg;
    fault_run_log *log;
} fault_shared;

static int fault_rank(rl_ctx *ctx, void *arg)
{
    fault_shared *sh = arg;
    const fault_run_config *c = sh->cfg;
    int r = rl_rank(ctx), R = rl_world_size(ctx), L = c->layers;
    const int64_t B = 4, H = 16;
    rl_tensor *x = t2(ctx, "x", RL_MEM_ACTIVATION, B, H, "b,h"), *y = t2(ctx, "y", RL_MEM_ACTIVATION, B, H, "b,h");
    rl_tensor *g = rl_tensor_new_1d(ctx, "grads", RL_F32, RL_MEM_GRAD, 256);
    rl_tensor *w[16] = { 0 }; /* no malloc here: a rank stopped by the watchdog exits without returning */
    float xhost[4 * 16];      /* B x H: the step's input, built on the host (copied to the GPU there) */
    int rc = x && y && g ? 0 : RL_ERR_NOMEM;
    for (int l = 0; l < L && !rc; l++)
        if (!(w[l] = seeded(ctx, "layer.w", H, H, 1.0 / sqrt((double)H), 77, (uint64_t)l)))
            rc = RL_ERR_NOMEM;
    rl_rng jit = rl_rng_make(rl_ctx_seed(ctx) + 5, (uint64_t)r);
    double jitter = 1.0 + 0.01 * (2 * rl_rng_uniform(&jit) - 1);
    for (int s = 0; s < c->steps && !rc; s++) {
        double t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        rl_step_begin(ctx, s);
        rl_rng d = rl_rng_make(1234 + (uint64_t)s, (uint64_t)r);
        for (int64_t i = 0; i < B * H; i++)
            xhost[i] = (float)rl_rng_normal(&d);
        rc = rl_tensor_from_f32(x, xhost, B * H);
        for (int l = 0; l < L && !rc; l++) {
            rl_set_tag(ctx, RL_TAG_LAYER, l);
            rc = rl_matmul(ctx, x, 0, w[l], 0, y, 0.0f);
            if (!rc)
                rc = rl_gelu_forward(ctx, y, y);
            if (!rc)
                rc = rl_scale(ctx, y, 2.0f);
            if (!rc && rl_fault_nan_due(ctx, s, l))
                rl_tensor_set(y, 0, NAN);
            if (!rc && r == c->spike_rank && s == c->spike_step && l == c->spike_layer)
                rc = rl_scale(ctx, y, (float)c->spike_factor);
            double ss = 0;
            if (!rc)
                rc = rl_sum_squares(ctx, y, &ss);
            sh->log->norms[((int64_t)s * R + r) * L + l] = sqrt(ss);
            if (!rc)
                rc = rl_copy(ctx, x, y);
        }
        rl_set_tag(ctx, RL_TAG_LAYER, -1);
        rl_compute_delay(ctx, "forward+backward (modelled)", c->base_ms * jitter * 1e-3);
        sh->log->step_ms[r] = (rl_stream_time(ctx, RL_STREAM_COMPUTE) - t0) * 1e3;
        for (int k = 0; k < 3 && !rc; k++)
            if (!rl_all_reduce(rl_comm_world(ctx), g, g, RL_SUM, 0))
                rc = RL_ERR_ARG;
        rl_step_end(ctx);
    }
    for (int l = 0; l < L; l++)
        rl_tensor_free(w[l]);
    rl_tensor_free(x), rl_tensor_free(y), rl_tensor_free(g);
    return rc;
}

int fault_run(const fault_run_config *cfg, fault_run_log *log)
{
    if (!cfg || !log || cfg->opts.ranks < 1 || cfg->opts.ranks > LAB31_MAX_RANKS || cfg->steps < 1 || cfg->layers < 1 ||
        cfg->layers > 16)
        return rl_error(NULL, RL_ERR_ARG, "fault_run: need 1..%d ranks, steps >= 1 and 1..16 layers", LAB31_MAX_RANKS);
    memset(log, 0, sizeof *log);
    log->steps = cfg->steps, log->ranks = cfg->opts.ranks, log->layers = cfg->layers;
    size_t n = (size_t)cfg->steps * (size_t)cfg->opts.ranks * (size_t)cfg->layers;
    log->norms = malloc(n * sizeof(double));
    if (!log->norms)
        return RL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        log->norms[i] = NAN;
    fault_shared sh = { cfg, log };
    log->status = rl_launch(&cfg->opts, fault_rank, &sh, NULL);
    return 0;
}

/* ================================================================== 31.5 planner helpers */

const rl_link *plan_group_link(const rl_hw *hw, int stride, int n)
{
    int r[2] = { 0, stride * (n - 1) };
    return rl_hw_group_link(hw, r, n > 1 ? 2 : 1);
}

double plan_ring_time(rl_coll_kind kind, int n, double bytes, const rl_link *link)
{
    return n > 1 ? rl_ab_time(kind, RL_ALGO_RING, n, bytes, link) : 0.0;
}
