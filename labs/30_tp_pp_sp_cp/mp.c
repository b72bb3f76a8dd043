/* mp.c — Lab 30: model parallelism (TP, SP, PP, CP). THE file you edit.
 *
 * Work through the TODOs in order (30.1 → 30.5); README.md in this directory explains each
 * step, its three questions (Shape, Cost, Machine) and what the grader checks.
 *   make grade LAB=30 STEP=30.1      grade one step        make grade LAB=30    all of them
 *   make run LAB=30                  run every part and print the summary
 * A step you have not done yet returns RL_ERR_NOT_IMPLEMENTED with a message naming it; the
 * driver and the grader report it and carry on. The helpers below are yours to use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mp.h"

/* A new f32 tensor shaped like x with the last dim replaced (and named). */
static inline rl_tensor *like(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t last, const char *lastname,
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
static inline rl_tensor *scaled_first(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t k, const char *firstname)
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
static inline void copy_block(rl_tensor *dst, const rl_tensor *src, int64_t src_cols, int64_t r0, int64_t c0)
{
    int64_t cols = dst->shape[dst->ndim - 1], rows = dst->numel / cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            rl_tensor_set(dst, i * cols + j, rl_tensor_get(src, (r0 + i) * src_cols + c0 + j));
}

static inline void free_saved(tp_mlp *m)
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
    /* TODO(30.1): shard the dense weights (Shape).
     *  - memset *m, set ctx, tp, t = rl_comm_size(tp), rank = rl_comm_rank(tp), sequence_parallel;
     *  - h = w1_full->shape[0], f = w1_full->shape[1]; refuse f % t != 0 and shapes that disagree
     *    (RL_ERR_ARG with a message naming the numbers);
     *  - ColumnParallelLinear: w1 [h, f/t] (dims "h,4h/t") = columns rank·f/t .. of A, b1 [f/t] the
     *    same slice of a; RowParallelLinear: w2 [f/t, h] (dims "4h/t,h") = rows rank·f/t .. of B;
     *    b2 = all of c (added once, after g). copy_block() does the slicing;
     *  - dw1, db1, dw2, db2: zeroed tensors of the same shapes under RL_MEM_GRAD. */
    (void)m, (void)w1_full, (void)b1_full, (void)w2_full, (void)b2_full, (void)sequence_parallel;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    if (m->sequence_parallel)
        return sp_mlp_forward(m, x, y);
    /* TODO(30.1): Y = GeLU(X·A_r + a_r)·B_r summed over ranks, + c.
     *  - free_saved(m); m->x_in = a copy of x (f is the identity forward: x is already whole);
     *  - m->hpre = like(ctx, x, "hpre", f/t, "4h/t", RL_MEM_ACTIVATION): [b, s, 4h/t]; rl_matmul,
     *    rl_bias_add(b1), m->hact = GeLU(hpre);
     *  - y = hact·w2: a PARTIAL sum (this rank's f/t rows of B only);
     *  - g: ONE rl_all_reduce(m->tp, y, y, RL_SUM, 0); then rl_bias_add(y, b2). */
    (void)x, (void)y;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    if (m->sequence_parallel)
        return sp_mlp_backward(m, dy, dx);
    /* TODO(30.1): the backward (g is the identity: dy is whole on every rank).
     *  - db2 += Σ dy (rl_bias_backward); rl_matmul_backward(hact, w2, dy) → dhact (beta 0), dw2 (beta 1);
     *  - dhpre = GeLU'(hpre)·dhact; db1 += Σ dhpre; rl_matmul_backward(x_in, w1, dhpre) → dx, dw1;
     *  - f backward: dx covers only this rank's f/t columns: ONE rl_all_reduce of dx. Forget it and
     *    dx is 1/t of the truth (roughly) — the gradient of everything before the MLP is wrong. */
    (void)dy, (void)dx;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.2 TP attention */

int tp_attn_init(tp_attn *a, rl_comm *tp, int heads, const rl_tensor *wq, const rl_tensor *wk,
                 const rl_tensor *wv, const rl_tensor *wo)
{
    rl_ctx *ctx = tp ? rl_comm_ctx(tp) : NULL;
    /* TODO(30.2): heads split across ranks.
     *  - refuse heads % t != 0 with RL_ERR_ARG and a message naming a and t ("every rank needs
     *    whole heads"); also h % heads != 0;
     *  - wq, wk, wv: columns rank·h/t .. of the dense [h, h] (dims "h,h/t": heads rank·a/t ..
     *    sit side by side there); wo: rows rank·h/t .. (dims "h/t,h"); local_heads = a/t. */
    (void)a, (void)heads, (void)wq, (void)wk, (void)wv, (void)wo;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.2 (tensor-parallel attention) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_attn_forward(tp_attn *a, const rl_tensor *x, rl_tensor *y)
{
    /* TODO(30.2): q, k, v = x·wq, x·wk, x·wv ([b, s, h/t]); rl_attention_forward with
     * local_heads (probs [b, a/t, s, s]); y = out·wo (partial); ONE all-reduce (g). Free temps. */
    (void)x, (void)y;
    return rl_error(a->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.2 (tensor-parallel attention) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.3 sequence parallel */

int sp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    /* TODO(30.3): x, y are [s/t, b, h] (this rank's sequence positions).
     *  - free_saved(m); m->x_in = scaled_first(ctx, x, "x_in", t, "s"); rl_all_gather(x → x_in);
     *  - the same column/row-parallel compute as 30.1 into a temporary z [s, b, h];
     *  - rl_reduce_scatter(m->tp, z, y, RL_SUM, 0): rank r receives the summed rows of its s/t
     *    positions (NOT an all-reduce: same result, twice the bytes); + b2; free z. */
    (void)x, (void)y;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.3 (sequence parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int sp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    /* TODO(30.3): db2 += Σ dy (this rank's rows); all-gather dy → [s, b, h]; the 30.1 backward
     * into a partial dx [s, b, h]; rl_reduce_scatter it into dx [s/t, b, h]. */
    (void)dy, (void)dx;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.3 (sequence parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.4 pipeline schedules */

rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    /* TODO(30.4): s = rl_pp_schedule_empty(p, m, v, 0, err, errlen); s->kind = kind; then for each
     * stage r append its ops (rl_pp_schedule_append(s, r, 'F' or 'B', mb, chunk)):
     *  - gpipe: F0..F(m−1), B0..B(m−1) (v = 1; refuse another v, as for 1f1b);
     *  - 1f1b: warm-up w = min(p−r−1, m) forwards, then (F(w+i), B(i)) for i < m−w, then the rest of B;
     *  - interleaved (2 <= v <= MP_MAX_CHUNKS, m % p == 0): total = m·v virtual micro-batches,
     *    warm-up min((p−r−1)·2 + (v−1)·p, total); the k-th forward is chunk (k mod pv)/p of
     *    micro-batch (k / pv)·p + k mod p; the k-th backward the same micro-batch with chunk
     *    v−1−(k mod pv)/p; warm-up forwards, then one F one B, then the remaining B (p >= 2);
     * Refuse bad arguments (NULL, message in err; mp.h lists them). */
    (void)kind, (void)p, (void)m, (void)v;
    snprintf(err, errlen, "step 30.4 (pipeline schedules) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
    return NULL;
}

int pp_execute(pp_stage *st, const rl_pp_schedule *s)
{
    /* TODO(30.4): run this stage's list s->ops[st->rank] (s->nops[st->rank] ops). Buffers [rows, h]
     * (RL_MEM_COMM): one for the output, one input per kind (activations, gradients). For op i:
     *  - rl_pp_op_peers(s, rank, op, &from, &to);
     *  - ONE group (rl_group_start/end) with: the pending send of the previous op's output (if
     *    any), the receive of this op's input (from >= 0: 'F' on act_comm, 'B' on grad_comm), and
     *    — interleaved only (s->v > 1), on a stage whose list mixes F and B — the receive of op
     *    i+1's input when op i+1 is of the other kind (remember it arrived, so op i+1 does not
     *    receive again; a stage with all its F before its first B must not: see mp.h);
     *  - pp_stage_forward(st, mb, chunk, from >= 0 ? in : NULL, to >= 0 ? out : NULL) (or
     *    pp_stage_backward); if to >= 0 the output becomes the pending send;
     *  - after the loop send what is still pending. An unpaired blocking send waits for a
     *    receive the peer has not posted yet: a deadlock (the watchdog ends the run). */
    (void)s;
    return rl_error(st->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.4 (pipeline executor) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.5 context parallel */

int cp_positions(int64_t seq, int cp, int rank, int zigzag, int64_t *pos, char *err, size_t errlen)
{
    /* TODO(30.5): contiguous: pos[i] = rank·seq/cp + i (seq % cp == 0); zig-zag: chunks rank and
     * 2cp−rank−1 of 2cp (rl_cp_zigzag_chunks names them). Refuse bad input (message in err). */
    (void)seq, (void)cp, (void)rank, (void)zigzag, (void)pos;
    snprintf(err, errlen, "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
    return RL_ERR_NOT_IMPLEMENTED;
}

int cp_lse_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                 int n_heads)
{
    /* TODO(30.5): for every (batch, head, row i): l = lse[(b·nh + head)·sq + i], lb = lse_b[...];
     * skip rows with lb = −∞; l' = max + log(exp(l − max) + exp(lb − max)) (stable);
     * out row (elements (b·sq + i)·nh·hd + head·hd ..) ← exp(l − l')·out + exp(lb − l')·out_b;
     * lse ← l'. Use rl_tensor_get / rl_tensor_set. */
    (void)out, (void)lse, (void)out_b, (void)lse_b, (void)n_heads;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int cp_ring_attention(rl_comm *cp, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                      int zigzag, const int64_t *pos, rl_tensor *out, int64_t *work)
{
    rl_ctx *ctx = rl_comm_ctx(cp);
    /* TODO(30.5): ring attention.
     *  - out, lse ← rl_attn_block_forward_pos(q, k, v, pos, pos) (lse [b, nh, s/cp] f32);
     *  - for step = 1 .. cp−1: in ONE group send the K and V blocks you hold to r+1 and receive
     *    r−1's (two buffers each, swap); the block came from src = (r − step) mod cp: its positions
     *    are cp_positions(seq, cp, src, zigzag); (o_b, lse_b) ← block(q, k_b, v_b, pos, kpos);
     *    cp_lse_merge(out, lse, o_b, lse_b);
     *  - *work += rl_cp_causal_work(pos, s/cp, kpos, s/cp) for every block (when work != NULL). */
    (void)q, (void)k, (void)v, (void)n_heads, (void)zigzag, (void)pos, (void)out, (void)work;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}
