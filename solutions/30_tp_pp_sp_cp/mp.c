/* mp.c — Lab 30: model parallelism (TP, SP, PP, CP). Reference solution.
 *
 * Work through the TODOs in order (30.1 → 30.5); README.md in this directory explains each
 * step, its three questions (Shape, Cost, Machine) and what the grader checks.
 *   make grade LAB=30 STEP=30.1      grade one step        make grade LAB=30    all of them
 *   make run LAB=30                  run every part and print the summary */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mp.h"

/* A new f32 tensor shaped like x with the last dim replaced (and named). */
static rl_tensor *like(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t last, const char *lastname,
                       rl_mem_cat cat)
{
    int64_t shape[RL_MAX_DIMS];
    char dims[64] = "";
    for (int i = 0; i < x->ndim; i++) {
        shape[i] = x->shape[i];
        const char *d = i == x->ndim - 1 ? lastname : x->dims[i];
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s", i ? "," : "", d[0] ? d : "?");
    }
    shape[x->ndim - 1] = last;
    return rl_tensor_new(ctx, name, RL_F32, cat, x->ndim, shape, dims);
}

/* A new f32 tensor shaped like x with the first dim multiplied by k. */
static rl_tensor *scaled_first(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t k, const char *firstname)
{
    int64_t shape[RL_MAX_DIMS];
    char dims[64] = "";
    for (int i = 0; i < x->ndim; i++) {
        shape[i] = i ? x->shape[i] : x->shape[i] * k;
        const char *d = i ? x->dims[i] : firstname;
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s", i ? "," : "", d[0] ? d : "?");
    }
    return rl_tensor_new(ctx, name, RL_F32, RL_MEM_ACTIVATION, x->ndim, shape, dims);
}

/* dst[i, j] = src[r0 + i, c0 + j] for dst [rows, cols] and src with src_cols columns. */
static void copy_block(rl_tensor *dst, const rl_tensor *src, int64_t src_cols, int64_t r0, int64_t c0)
{
    int64_t cols = dst->shape[dst->ndim - 1], rows = dst->numel / cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            rl_tensor_set(dst, i * cols + j, rl_tensor_get(src, (r0 + i) * src_cols + c0 + j));
}

static void free_saved(tp_mlp *m)
{
    rl_tensor_free(m->x_in);
    rl_tensor_free(m->hpre);
    rl_tensor_free(m->hact);
    m->x_in = m->hpre = m->hact = NULL;
}

/* ================================================================== 30.1 TP MLP */

int tp_mlp_init(tp_mlp *m, rl_comm *tp, const rl_tensor *w1_full, const rl_tensor *b1_full,
                const rl_tensor *w2_full, const rl_tensor *b2_full, int sequence_parallel)
{
    rl_ctx *ctx = tp ? rl_comm_ctx(tp) : NULL;
    if (!m || !tp || !w1_full || !b1_full || !w2_full || !b2_full)
        return rl_error(ctx, RL_ERR_ARG, "tp_mlp_init: the MLP, the TP group and four weights are required");
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->tp = tp;
    m->t = rl_comm_size(tp);
    m->rank = rl_comm_rank(tp);
    m->sequence_parallel = sequence_parallel;
    if (w1_full->ndim != 2 || w2_full->ndim != 2)
        return rl_error(ctx, RL_ERR_ARG, "tp_mlp_init: A and B must be 2-D ([h, f] and [f, h])");
    int64_t h = w1_full->shape[0], f = w1_full->shape[1];
    if (w2_full->shape[0] != f || w2_full->shape[1] != h || b1_full->numel != f || b2_full->numel != h)
        return rl_error(ctx, RL_ERR_ARG, "tp_mlp_init: shapes disagree: A [%lld, %lld], B [%lld, %lld], a %lld, c %lld "
                        "(want A [h, f], B [f, h], a [f], c [h])", (long long)h, (long long)f,
                        (long long)w2_full->shape[0], (long long)w2_full->shape[1], (long long)b1_full->numel,
                        (long long)b2_full->numel);
    if (f % m->t)
        return rl_error(ctx, RL_ERR_ARG, "tp_mlp_init: the FFN size f = %lld is not divisible by "
                        "tensor_model_parallel_size t = %d", (long long)f, m->t);
    int64_t fl = f / m->t;
    m->h = h;
    m->f = f;
    int64_t s1[2] = { h, fl }, s2[2] = { fl, h };
    m->w1 = rl_tensor_new(ctx, "w1", RL_F32, RL_MEM_PARAM, 2, s1, "h,4h/t");
    m->b1 = rl_tensor_new(ctx, "b1", RL_F32, RL_MEM_PARAM, 1, &fl, "4h/t");
    m->w2 = rl_tensor_new(ctx, "w2", RL_F32, RL_MEM_PARAM, 2, s2, "4h/t,h");
    m->b2 = rl_tensor_new(ctx, "b2", RL_F32, RL_MEM_PARAM, 1, &h, "h");
    m->dw1 = rl_tensor_new(ctx, "dw1", RL_F32, RL_MEM_GRAD, 2, s1, "h,4h/t");
    m->db1 = rl_tensor_new(ctx, "db1", RL_F32, RL_MEM_GRAD, 1, &fl, "4h/t");
    m->dw2 = rl_tensor_new(ctx, "dw2", RL_F32, RL_MEM_GRAD, 2, s2, "4h/t,h");
    m->db2 = rl_tensor_new(ctx, "db2", RL_F32, RL_MEM_GRAD, 1, &h, "h");
    if (!m->w1 || !m->b1 || !m->w2 || !m->b2 || !m->dw1 || !m->db1 || !m->dw2 || !m->db2)
        return RL_ERR_NOMEM;
    copy_block(m->w1, w1_full, f, 0, m->rank * fl);       /* columns r·f/t .. */
    copy_block(m->b1, b1_full, f, 0, m->rank * fl);
    copy_block(m->w2, w2_full, h, m->rank * fl, 0);       /* rows r·f/t .. */
    copy_block(m->b2, b2_full, h, 0, 0);
    return 0;
}

/* Column-parallel linear + GeLU + row-parallel linear on x_in: the partial sum into z. */
static int mlp_local_forward(tp_mlp *m, rl_tensor *z)
{
    m->hpre = like(m->ctx, m->x_in, "hpre", m->f / m->t, "4h/t", RL_MEM_ACTIVATION);
    m->hact = like(m->ctx, m->x_in, "hact", m->f / m->t, "4h/t", RL_MEM_ACTIVATION);
    if (!m->hpre || !m->hact)
        return RL_ERR_NOMEM;
    int rc = rl_matmul(m->ctx, m->x_in, 0, m->w1, 0, m->hpre, 0);
    if (!rc)
        rc = rl_bias_add(m->ctx, m->hpre, m->b1);
    if (!rc)
        rc = rl_gelu_forward(m->ctx, m->hpre, m->hact);
    if (!rc)
        rc = rl_matmul(m->ctx, m->hact, 0, m->w2, 0, z, 0);
    return rc;
}

/* The local backward from the full-length dy to the partial dx (before f's collective). */
static int mlp_local_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx_partial)
{
    rl_tensor *dh = like(m->ctx, m->hact, "dhact", m->f / m->t, "4h/t", RL_MEM_ACTIVATION);
    rl_tensor *dp = like(m->ctx, m->hpre, "dhpre", m->f / m->t, "4h/t", RL_MEM_ACTIVATION);
    int rc = dh && dp ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_matmul_backward(m->ctx, m->hact, 0, m->w2, 0, dy, dh, 0, m->dw2, 1);
    if (!rc)
        rc = rl_gelu_backward(m->ctx, m->hpre, dh, dp);
    if (!rc)
        rc = rl_bias_backward(m->ctx, dp, m->db1);
    if (!rc)
        rc = rl_matmul_backward(m->ctx, m->x_in, 0, m->w1, 0, dp, dx_partial, 0, m->dw1, 1);
    rl_tensor_free(dh);
    rl_tensor_free(dp);
    return rc;
}

int tp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    if (m->sequence_parallel)
        return sp_mlp_forward(m, x, y);
    free_saved(m);
    /* f: identity forward — every rank already holds the whole x */
    m->x_in = like(m->ctx, x, "x_in", m->h, "h", RL_MEM_ACTIVATION);
    if (!m->x_in)
        return RL_ERR_NOMEM;
    int rc = rl_copy(m->ctx, m->x_in, x);
    if (!rc)
        rc = mlp_local_forward(m, y);
    /* g: all-reduce forward — sum the row-parallel partial outputs */
    if (!rc)
        rc = rl_all_reduce(m->tp, y, y, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    if (!rc)
        rc = rl_bias_add(m->ctx, y, m->b2);
    return rc;
}

int tp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    if (m->sequence_parallel)
        return sp_mlp_backward(m, dy, dx);
    if (!m->x_in)
        return rl_error(m->ctx, RL_ERR_ARG, "tp_mlp_backward: run the forward first");
    /* g: identity backward — dy is already whole on every rank */
    int rc = rl_bias_backward(m->ctx, dy, m->db2);
    if (!rc)
        rc = mlp_local_backward(m, dy, dx);
    /* f: all-reduce backward — each rank's dx covers only its f/t columns of A */
    if (!rc)
        rc = rl_all_reduce(m->tp, dx, dx, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    return rc;
}

/* ================================================================== 30.2 TP attention */

int tp_attn_init(tp_attn *a, rl_comm *tp, int heads, const rl_tensor *wq, const rl_tensor *wk,
                 const rl_tensor *wv, const rl_tensor *wo)
{
    rl_ctx *ctx = tp ? rl_comm_ctx(tp) : NULL;
    if (!a || !tp || !wq || !wk || !wv || !wo || wq->ndim != 2)
        return rl_error(ctx, RL_ERR_ARG, "tp_attn_init: the TP group and four [h, h] weights are required");
    memset(a, 0, sizeof *a);
    a->ctx = ctx;
    a->tp = tp;
    a->t = rl_comm_size(tp);
    a->rank = rl_comm_rank(tp);
    int64_t h = wq->shape[0];
    if (heads < 1 || h % heads)
        return rl_error(ctx, RL_ERR_ARG, "tp_attn_init: h = %lld is not divisible by a = %d heads", (long long)h,
                        heads);
    if (heads % a->t)
        return rl_error(ctx, RL_ERR_ARG, "tp_attn_init: a = %d attention heads are not divisible by "
                        "tensor_model_parallel_size t = %d; every rank needs whole heads (choose t dividing a)",
                        heads, a->t);
    a->heads = heads;
    a->local_heads = heads / a->t;
    a->h = h;
    a->head_dim = h / heads;
    int64_t hl = h / a->t, sc[2] = { h, hl }, sr[2] = { hl, h };
    a->wq = rl_tensor_new(ctx, "wq", RL_F32, RL_MEM_PARAM, 2, sc, "h,h/t");
    a->wk = rl_tensor_new(ctx, "wk", RL_F32, RL_MEM_PARAM, 2, sc, "h,h/t");
    a->wv = rl_tensor_new(ctx, "wv", RL_F32, RL_MEM_PARAM, 2, sc, "h,h/t");
    a->wo = rl_tensor_new(ctx, "wo", RL_F32, RL_MEM_PARAM, 2, sr, "h/t,h");
    if (!a->wq || !a->wk || !a->wv || !a->wo)
        return RL_ERR_NOMEM;
    copy_block(a->wq, wq, h, 0, a->rank * hl);  /* heads r·a/t .. sit side by side in these columns */
    copy_block(a->wk, wk, h, 0, a->rank * hl);
    copy_block(a->wv, wv, h, 0, a->rank * hl);
    copy_block(a->wo, wo, h, a->rank * hl, 0);
    return 0;
}

int tp_attn_forward(tp_attn *a, const rl_tensor *x, rl_tensor *y)
{
    int64_t hl = a->h / a->t;
    rl_tensor *q = like(a->ctx, x, "q", hl, "h/t", RL_MEM_ACTIVATION);
    rl_tensor *k = like(a->ctx, x, "k", hl, "h/t", RL_MEM_ACTIVATION);
    rl_tensor *v = like(a->ctx, x, "v", hl, "h/t", RL_MEM_ACTIVATION);
    rl_tensor *o = like(a->ctx, x, "attn_out", hl, "h/t", RL_MEM_ACTIVATION);
    int64_t b = x->shape[0], s = x->shape[1], ps[4] = { b, a->local_heads, s, s };
    rl_tensor *probs = rl_tensor_new(a->ctx, "probs", RL_F32, RL_MEM_ACTIVATION, 4, ps, "b,a/t,s,s");
    int rc = q && k && v && o && probs ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_matmul(a->ctx, x, 0, a->wq, 0, q, 0);
    if (!rc)
        rc = rl_matmul(a->ctx, x, 0, a->wk, 0, k, 0);
    if (!rc)
        rc = rl_matmul(a->ctx, x, 0, a->wv, 0, v, 0);
    if (!rc)
        rc = rl_attention_forward(a->ctx, q, k, v, a->local_heads, probs, o);
    if (!rc)
        rc = rl_matmul(a->ctx, o, 0, a->wo, 0, y, 0);            /* row-parallel: partial sums */
    if (!rc)
        rc = rl_all_reduce(a->tp, y, y, RL_SUM, 0) ? 0 : RL_ERR_ARG; /* g */
    rl_tensor_free(q);
    rl_tensor_free(k);
    rl_tensor_free(v);
    rl_tensor_free(o);
    rl_tensor_free(probs);
    return rc;
}

/* ================================================================== 30.3 sequence parallel */

int sp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    free_saved(m);
    /* f under SP: all-gather along s, [s/t, b, h] → [s, b, h] */
    m->x_in = scaled_first(m->ctx, x, "x_in", m->t, "s");
    rl_tensor *z = scaled_first(m->ctx, y, "z_partial", m->t, "s");
    int rc = m->x_in && z ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_all_gather(m->tp, x, m->x_in, 0) ? 0 : RL_ERR_ARG;
    if (!rc)
        rc = mlp_local_forward(m, z);
    /* g under SP: reduce-scatter along s, the partial [s, b, h] → the summed [s/t, b, h] */
    if (!rc)
        rc = rl_reduce_scatter(m->tp, z, y, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    if (!rc)
        rc = rl_bias_add(m->ctx, y, m->b2);
    rl_tensor_free(z);
    return rc;
}

int sp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    if (!m->x_in)
        return rl_error(m->ctx, RL_ERR_ARG, "sp_mlp_backward: run the forward first");
    rl_tensor *dyg = scaled_first(m->ctx, dy, "dy_gathered", m->t, "s");
    rl_tensor *dxp = scaled_first(m->ctx, dx, "dx_partial", m->t, "s");
    int rc = dyg && dxp ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_bias_backward(m->ctx, dy, m->db2);  /* this rank's rows only: a partial sum */
    /* g backward under SP: all-gather dy along s */
    if (!rc)
        rc = rl_all_gather(m->tp, dy, dyg, 0) ? 0 : RL_ERR_ARG;
    if (!rc)
        rc = mlp_local_backward(m, dyg, dxp);
    /* f backward under SP: reduce-scatter the partial dx along s */
    if (!rc)
        rc = rl_reduce_scatter(m->tp, dxp, dx, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    rl_tensor_free(dyg);
    rl_tensor_free(dxp);
    return rc;
}

/* ================================================================== 30.4 pipeline schedules */

rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    if (p < 1 || m < 1 || m > MP_MAX_MB) {
        snprintf(err, errlen, "pp_build_schedule: need p >= 1 and 1 <= m <= %d (got p = %d, m = %d)", MP_MAX_MB, p, m);
        return NULL;
    }
    if (kind == RL_PP_INTERLEAVED) {
        if (p < 2 || v < 2 || v > MP_MAX_CHUNKS || m % p) {
            snprintf(err, errlen, "pp_build_schedule: interleaved 1F1B needs p >= 2 stages, 2 <= v <= %d and m a "
                     "multiple of p (got p = %d, v = %d, m = %d)", MP_MAX_CHUNKS, p, v, m);
            return NULL;
        }
    } else if (kind == RL_PP_GPIPE || kind == RL_PP_1F1B) {
        if (v != 1) {
            snprintf(err, errlen, "pp_build_schedule: %s has one chunk per stage, v = 1 (got v = %d; interleaved 1F1B "
                     "takes v >= 2)", rl_pp_kind_name(kind), v);
            return NULL;
        }
    } else {
        snprintf(err, errlen, "pp_build_schedule: this lab builds gpipe, 1f1b and interleaved (got %s)",
                 rl_pp_kind_name(kind));
        return NULL;
    }
    rl_pp_schedule *s = rl_pp_schedule_empty(p, m, v, 0, err, errlen);
    if (!s)
        return NULL;
    s->kind = kind;
    int rc = 0;
    for (int r = 0; r < p && !rc; r++) {
        if (kind == RL_PP_GPIPE) {
            for (int i = 0; i < m && !rc; i++)
                rc = rl_pp_schedule_append(s, r, 'F', i, 0);
            for (int i = 0; i < m && !rc; i++)
                rc = rl_pp_schedule_append(s, r, 'B', i, 0);
        } else if (kind == RL_PP_1F1B) {
            int warm = p - r - 1 < m ? p - r - 1 : m;
            for (int i = 0; i < warm && !rc; i++)
                rc = rl_pp_schedule_append(s, r, 'F', i, 0);
            for (int i = 0; i < m - warm && !rc; i++) {
                rc = rl_pp_schedule_append(s, r, 'F', warm + i, 0);
                if (!rc)
                    rc = rl_pp_schedule_append(s, r, 'B', i, 0);
            }
            for (int i = m - warm; i < m && !rc; i++)
                rc = rl_pp_schedule_append(s, r, 'B', i, 0);
        } else {
            /* Megatron: virtual micro-batch k runs chunk (k mod pv)/p of micro-batch (k / pv)·p + k mod p;
             * backward walks the chunks in reverse */
            int total = m * v, warm = (p - r - 1) * 2 + (v - 1) * p;
            if (warm > total)
                warm = total;
#define FCH(k) (((k) % (p * v)) / p)
#define KMB(k) (((k) / (p * v)) * p + (k) % p)
            for (int k = 0; k < warm && !rc; k++)
                rc = rl_pp_schedule_append(s, r, 'F', KMB(k), FCH(k));
            for (int i = 0; i < total - warm && !rc; i++) {
                rc = rl_pp_schedule_append(s, r, 'F', KMB(warm + i), FCH(warm + i));
                if (!rc)
                    rc = rl_pp_schedule_append(s, r, 'B', KMB(i), v - 1 - FCH(i));
            }
            for (int k = total - warm; k < total && !rc; k++)
                rc = rl_pp_schedule_append(s, r, 'B', KMB(k), v - 1 - FCH(k));
#undef FCH
#undef KMB
        }
    }
    if (rc) {
        snprintf(err, errlen, "pp_build_schedule: appending an op failed (%s)", rl_status_name(rc));
        rl_pp_schedule_free(s);
        return NULL;
    }
    return s;
}

int pp_execute(pp_stage *st, const rl_pp_schedule *s)
{
    rl_ctx *ctx = st->ctx;
    int r = st->rank, n = s->nops[r];
    int64_t shape[2] = { st->rows, st->h };
    rl_tensor *out = rl_tensor_new(ctx, "p2p_out", RL_F32, RL_MEM_COMM, 2, shape, "b,h");
    rl_tensor *inb[2] = { rl_tensor_new(ctx, "p2p_in_act", RL_F32, RL_MEM_COMM, 2, shape, "b,h"),
                          rl_tensor_new(ctx, "p2p_in_grad", RL_F32, RL_MEM_COMM, 2, shape, "b,h") };
    int rc = out && inb[0] && inb[1] ? 0 : RL_ERR_NOMEM;
    int pend_peer = -1, have[2] = { -1, -1 }; /* have[kind]: op index whose input already sits in inb[kind] */
    /* a stage that runs all its F before its first B (m = p) has no steady phase: its first B's
     * gradient comes only after its last F's output has left, so it must not be received early */
    int mixed = 0, seen_b = 0;
    for (int i = 0; i < n; i++) {
        seen_b |= s->ops[r][i].kind == 'B';
        mixed |= seen_b && s->ops[r][i].kind == 'F';
    }
    rl_comm *pend_comm = NULL;
    for (int i = 0; i < n && !rc; i++) {
        const rl_pp_op *o = &s->ops[r][i];
        int kb = o->kind == 'F' ? 0 : 1, from, to;
        rl_pp_op_peers(s, r, o, &from, &to);
        rl_comm *c = kb ? st->grad_comm : st->act_comm;
        int need = from >= 0 && have[kb] != i;
        /* interleaved, on a stage that mixes F and B: also receive the next op's input now when it is
         * of the other kind (Megatron's send_forward_backward_recv_forward_backward) */
        int la = -1, la_from = -1, la_to;
        if (s->v > 1 && mixed && i + 1 < n && s->ops[r][i + 1].kind != o->kind) {
            rl_pp_op_peers(s, r, &s->ops[r][i + 1], &la_from, &la_to);
            if (la_from >= 0)
                la = i + 1;
        }
        if (pend_peer >= 0 || need || la >= 0) {
            /* Megatron's pairing: the pending send and the receives in ONE group */
            rl_group_start(ctx);
            if (pend_peer >= 0 && !rl_send(pend_comm, out, pend_peer, 0))
                rc = RL_ERR_ARG;
            if (need && !rl_recv(c, inb[kb], from, 0))
                rc = RL_ERR_ARG;
            if (la >= 0 && !rl_recv(kb ? st->act_comm : st->grad_comm, inb[1 - kb], la_from, 0))
                rc = RL_ERR_ARG;
            int g = rl_group_end(ctx);
            rc = rc ? rc : g;
            pend_peer = -1;
            if (la >= 0)
                have[1 - kb] = la;
        }
        if (rc)
            break;
        if (o->kind == 'F')
            rc = pp_stage_forward(st, o->mb, o->chunk, from >= 0 ? inb[0] : NULL, to >= 0 ? out : NULL);
        else
            rc = pp_stage_backward(st, o->mb, o->chunk, from >= 0 ? inb[1] : NULL, to >= 0 ? out : NULL);
        if (!rc && to >= 0) {
            pend_peer = to;
            pend_comm = c;
        }
    }
    if (!rc && pend_peer >= 0)
        rc = rl_send(pend_comm, out, pend_peer, 0) ? 0 : RL_ERR_ARG;
    rl_tensor_free(out);
    rl_tensor_free(inb[0]);
    rl_tensor_free(inb[1]);
    return rc;
}

/* ================================================================== 30.5 context parallel */

int cp_positions(int64_t seq, int cp, int rank, int zigzag, int64_t *pos, char *err, size_t errlen)
{
    if (cp < 1 || rank < 0 || rank >= cp || seq < 1 || !pos) {
        snprintf(err, errlen, "cp_positions: need cp >= 1, 0 <= rank < cp, seq >= 1 (got %lld, %d, %d)",
                 (long long)seq, cp, rank);
        return RL_ERR_ARG;
    }
    if (zigzag) { /* chunk rank, then its mirror 2cp-1-rank: every rank gets an early and a late chunk */
        if (seq % (2 * cp)) {
            snprintf(err, errlen, "cp_positions: zig-zag needs the sequence (%lld) divisible by 2·cp = %d",
                     (long long)seq, 2 * cp);
            return RL_ERR_ARG;
        }
        int64_t c = seq / (2 * cp);
        for (int64_t i = 0; i < c; i++) {
            pos[i] = (int64_t)rank * c + i;
            pos[c + i] = (int64_t)(2 * cp - 1 - rank) * c + i;
        }
        return 0;
    }
    if (seq % cp) {
        snprintf(err, errlen, "cp_positions: the sequence (%lld) is not divisible by cp = %d", (long long)seq, cp);
        return RL_ERR_ARG;
    }
    int64_t n = seq / cp;
    for (int64_t i = 0; i < n; i++)
        pos[i] = (int64_t)rank * n + i;
    return 0;
}

int cp_lse_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                 int n_heads)
{
    if (!out || !lse || !out_b || !lse_b || n_heads < 1 || out->ndim != 3 || !rl_tensor_same_shape(out, out_b) ||
        lse->numel != lse_b->numel || out->shape[2] % n_heads)
        return rl_error(ctx, RL_ERR_ARG, "cp_lse_merge: out/out_b [b, sq, nh*hd] and lse/lse_b [b, nh, sq] must match");
    int64_t b = out->shape[0], sq = out->shape[1], w = out->shape[2], hd = w / n_heads;
    for (int64_t bb = 0; bb < b; bb++)
        for (int hh = 0; hh < n_heads; hh++)
            for (int64_t i = 0; i < sq; i++) {
                int64_t li = (bb * n_heads + hh) * sq + i, o0 = (bb * sq + i) * w + hh * hd;
                double l = rl_tensor_get(lse, li), lb = rl_tensor_get(lse_b, li);
                if (isinf(lb) && lb < 0)
                    continue; /* nothing to add */
                double mx = l > lb ? l : lb;
                double lnew = mx + log(exp(l - mx) + exp(lb - mx));
                double a = exp(l - lnew), c = exp(lb - lnew);
                for (int64_t d = 0; d < hd; d++)
                    rl_tensor_set(out, o0 + d, (float)(a * rl_tensor_get(out, o0 + d) + c * rl_tensor_get(out_b, o0 + d)));
                rl_tensor_set(lse, li, (float)lnew);
            }
    return 0;
}

int cp_ring_attention(rl_comm *cp, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                      int zigzag, const int64_t *pos, rl_tensor *out, int64_t *work)
{
    rl_ctx *ctx = rl_comm_ctx(cp);
    int n = rl_comm_size(cp), r = rl_comm_rank(cp);
    int64_t b = q->shape[0], sl = q->shape[1], seq = sl * n, ls[3] = { b, n_heads, sl };
    rl_tensor *lse = rl_tensor_new(ctx, "lse", RL_F32, RL_MEM_ACTIVATION, 3, ls, "b,a,s/cp");
    rl_tensor *lse_b = rl_tensor_new(ctx, "lse_b", RL_F32, RL_MEM_ACTIVATION, 3, ls, "b,a,s/cp");
    rl_tensor *out_b = rl_tensor_new(ctx, "out_b", RL_F32, RL_MEM_ACTIVATION, 3, out->shape, "b,s/cp,h");
    rl_tensor *kv[2][2];
    for (int j = 0; j < 2; j++) {
        kv[j][0] = rl_tensor_new(ctx, "k_block", RL_F32, RL_MEM_COMM, 3, k->shape, "b,s/cp,h");
        kv[j][1] = rl_tensor_new(ctx, "v_block", RL_F32, RL_MEM_COMM, 3, v->shape, "b,s/cp,h");
    }
    int64_t *kpos = malloc((size_t)sl * sizeof *kpos);
    char err[256];
    int rc = lse && lse_b && out_b && kv[0][0] && kv[0][1] && kv[1][0] && kv[1][1] && kpos ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_copy(ctx, kv[0][0], k);
    if (!rc)
        rc = rl_copy(ctx, kv[0][1], v);
    /* step 0: this rank's own K/V block */
    if (!rc)
        rc = rl_attn_block_forward_pos(ctx, q, k, v, n_heads, pos, pos, out, lse);
    if (!rc && work)
        *work += rl_cp_causal_work(pos, sl, pos, sl);
    int cur = 0;
    for (int step = 1; step < n && !rc; step++) {
        /* pass the block we hold to r+1, receive r−1's: grouped, or the ring deadlocks */
        rl_group_start(ctx);
        int bad = !rl_send(cp, kv[cur][0], (r + 1) % n, 0) || !rl_send(cp, kv[cur][1], (r + 1) % n, 0) ||
                  !rl_recv(cp, kv[1 - cur][0], (r + n - 1) % n, 0) || !rl_recv(cp, kv[1 - cur][1], (r + n - 1) % n, 0);
        rc = rl_group_end(ctx);
        if (bad && !rc)
            rc = RL_ERR_ARG;
        cur = 1 - cur;
        int src = (r - step + n) % n; /* whose block arrived */
        if (!rc)
            rc = cp_positions(seq, n, src, zigzag, kpos, err, sizeof err) ? rl_error(ctx, RL_ERR_ARG, "%s", err) : 0;
        if (!rc)
            rc = rl_attn_block_forward_pos(ctx, q, kv[cur][0], kv[cur][1], n_heads, pos, kpos, out_b, lse_b);
        if (!rc && work)
            *work += rl_cp_causal_work(pos, sl, kpos, sl);
        if (!rc)
            rc = cp_lse_merge(ctx, out, lse, out_b, lse_b, n_heads);
    }
    free(kpos);
    for (int j = 0; j < 2; j++)
        rl_tensor_free(kv[j][0]), rl_tensor_free(kv[j][1]);
    rl_tensor_free(lse);
    rl_tensor_free(lse_b);
    rl_tensor_free(out_b);
    return rc;
}
