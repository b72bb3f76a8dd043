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
static inline __attribute__((unused)) rl_tensor *like(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t last, const char *lastname,
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
static inline __attribute__((unused)) rl_tensor *scaled_first(rl_ctx *ctx, const rl_tensor *x, const char *name, int64_t k, const char *firstname)
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
static inline __attribute__((unused)) void copy_block(rl_tensor *dst, const rl_tensor *src, int64_t src_cols, int64_t r0, int64_t c0)
{
    int64_t cols = dst->shape[dst->ndim - 1], rows = dst->numel / cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            rl_tensor_set(dst, i * cols + j, rl_tensor_get(src, (r0 + i) * src_cols + c0 + j));
}

static inline __attribute__((unused)) void free_saved(tp_mlp *m)
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
    /* TODO(30.1): the contract is README.md, step 30.1. In short: set ctx, tp, t, rank, h, f and
     * sequence_parallel from tp and the dense weights, and build this rank's shards under
     * RL_MEM_PARAM — w1 [h, f/t] (dims "h,4h/t") the r-th block of A's columns, b1 [f/t] the same
     * slice of a, w2 [f/t, h] (dims "4h/t,h") the rows of B that match them, b2 all of c — with
     * zeroed dw1, db1, dw2, db2 of the same shapes under RL_MEM_GRAD. Refuse f not divisible by t
     * (RL_ERR_ARG, a message naming f and t) and shapes that disagree (RL_ERR_ARG, a message).
     * The helpers above slice and shape tensors. Stuck: make hint LAB=30 STEP=30.1 */
    (void)m, (void)w1_full, (void)b1_full, (void)w2_full, (void)b2_full, (void)sequence_parallel;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    if (m->sequence_parallel)
        return sp_mlp_forward(m, x, y);
    /* TODO(30.1): y [b, s, h] (overwritten, the same on every rank of m->tp) = the dense
     * GeLU(x·A + a)·B + c, c counted once. One all-reduce of b·s·h elements on m->tp, no other
     * communication. Allocate saved activations under RL_MEM_ACTIVATION: x_in, and hpre, hact
     * [b, s, 4h/t], replacing the previous forward's; nothing else outlives the call. */
    (void)x, (void)y;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    if (m->sequence_parallel)
        return sp_mlp_backward(m, dy, dx);
    /* TODO(30.1): dx [b, s, h] (overwritten, the same on every rank) = the dense input gradient;
     * dw1, db1, dw2 += this rank's slices of the dense gradients and db2 += c's gradient (they
     * accumulate over calls). One all-reduce of b·s·h elements on m->tp, no other communication;
     * its temporaries freed. */
    (void)dy, (void)dx;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.2 TP attention */

int tp_attn_init(tp_attn *a, rl_comm *tp, int heads, const rl_tensor *wq, const rl_tensor *wk,
                 const rl_tensor *wv, const rl_tensor *wo)
{
    rl_ctx *ctx = tp ? rl_comm_ctx(tp) : NULL;
    /* TODO(30.2): the contract is README.md, step 30.2. In short: rank r computes whole heads, the
     * r-th group of a/t; wq, wk, wv [h, h/t] (dims "h,h/t") and wo [h/t, h] (dims "h/t,h") hold,
     * under RL_MEM_PARAM, exactly the part of each dense weight those heads use, in head order;
     * and the fields ctx, tp, t, rank, heads, local_heads, h, head_dim. Refuse heads not divisible
     * by t (RL_ERR_ARG, a message naming a and t) and h not divisible by heads.
     * Stuck: make hint LAB=30 STEP=30.2 */
    (void)a, (void)heads, (void)wq, (void)wk, (void)wv, (void)wo;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.2 (tensor-parallel attention) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int tp_attn_forward(tp_attn *a, const rl_tensor *x, rl_tensor *y)
{
    /* TODO(30.2): y [b, s, h] (overwritten, the same on every rank) = the dense causal attention
     * of x through Wq, Wk, Wv and Wo. rl_attention_forward sees this rank's heads: q, k, v
     * [b, s, h/t] (dims "b,s,h/t") and probs [b, a/t, s, s] (dims "b,a/t,s,s"). One all-reduce of
     * b·s·h elements on a->tp, no other collective; every temporary freed. */
    (void)x, (void)y;
    return rl_error(a->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.2 (tensor-parallel attention) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.3 sequence parallel */

int sp_mlp_forward(tp_mlp *m, const rl_tensor *x, rl_tensor *y)
{
    /* TODO(30.3): the contract is README.md, step 30.3. In short: x, y are [s/t, b, h], this rank's
     * positions in Megatron's [s, b, h] layout; y = those rows of the dense MLP's output, c once.
     * Saves x_in = the whole input [s, b, h] and hpre, hact [s, b, 4h/t] (RL_MEM_ACTIVATION). On
     * m->tp: an all-gather before the column-parallel linear and a reduce-scatter after the
     * row-parallel one, each of b·s·h elements, never an all-reduce; no temporary outlives the
     * call. Stuck: make hint LAB=30 STEP=30.3 */
    (void)x, (void)y;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.3 (sequence parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int sp_mlp_backward(tp_mlp *m, const rl_tensor *dy, rl_tensor *dx)
{
    /* TODO(30.3): dy, dx [s/t, b, h]: dx (overwritten) = this rank's rows of the dense input
     * gradient; dw1, db1, dw2 += the dense slices (the whole sequence), db2 += the sum of dy over
     * this rank's rows only. An all-gather, then a reduce-scatter, of b·s·h elements each, never an
     * all-reduce; temporaries freed. */
    (void)dy, (void)dx;
    return rl_error(m->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.3 (sequence parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.4 pipeline schedules */

rl_pp_schedule *pp_build_schedule(rl_pp_kind kind, int p, int m, int v, char *err, size_t errlen)
{
    /* TODO(30.4): the contract is README.md, step 30.4. In short: per-stage op lists built with
     * rl_pp_schedule_empty / rl_pp_schedule_append that carry the kind, p, m and v asked for
     * (s->kind = kind: rl_pp_schedule_empty leaves it custom), each F and B of every (micro-batch,
     * chunk) once per stage, in the order README.md fixes for GPipe, 1F1B (stage r holds at most
     * min(p − r, m) micro-batches) and Megatron's interleaved schedule. Refuse bad arguments: NULL
     * and a message in err (mp.h lists them). Stuck: make hint LAB=30 STEP=30.4 */
    (void)kind, (void)p, (void)m, (void)v;
    snprintf(err, errlen, "step 30.4 (pipeline schedules) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
    return NULL;
}

int pp_execute(pp_stage *st, const rl_pp_schedule *s)
{
    /* TODO(30.4): the contract is README.md, step 30.4. In short: run this stage's list
     * s->ops[st->rank] (s->nops[st->rank] ops), each op once, with pp_stage_forward /
     * pp_stage_backward; inputs from and outputs to the stages rl_pp_op_peers names,
     * activations on act_comm, gradients on grad_comm, every output sent exactly once. No
     * deadlock on any schedule that validates, knowing that a send completes only when the peer
     * posts the matching receive (README's Machine question). Buffers [rows, h] (RL_MEM_COMM):
     * one for the output, one input per kind; all freed before it returns.
     * Stuck: make hint LAB=30 STEP=30.4 */
    (void)s;
    return rl_error(st->ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.4 (pipeline executor) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

/* ================================================================== 30.5 context parallel */

int cp_positions(int64_t seq, int cp, int rank, int zigzag, int64_t *pos, char *err, size_t errlen)
{
    /* TODO(30.5): the contract is README.md, step 30.5. In short: pos[0 .. seq/cp − 1] = the global
     * positions of this rank's rows in local order — contiguous: its block of seq/cp consecutive
     * positions; zig-zag: chunk rank of 2cp ascending, then chunk 2cp−rank−1 (rl_cp_zigzag_chunks
     * names them). Nothing written past pos[seq/cp − 1]. RL_ERR_ARG with a message in err for a
     * bad cp, rank or seq. Stuck: make hint LAB=30 STEP=30.5 */
    (void)seq, (void)cp, (void)rank, (void)zigzag, (void)pos;
    snprintf(err, errlen, "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
    return RL_ERR_NOT_IMPLEMENTED;
}

int cp_lse_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                 int n_heads)
{
    /* TODO(30.5): (out, lse) ← the attention output and log-sum-exp of every (batch, head, row)
     * over the union of the two disjoint key sets that (out, lse) and (out_b, lse_b) cover
     * (layouts: mp.h); exact for any finite lse, |lse| near 800 included; an lse of −∞ is an empty
     * set. Not through rl_attn_merge / rl_attn_merge_rows. */
    (void)out, (void)lse, (void)out_b, (void)lse_b, (void)n_heads;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}

int cp_ring_attention(rl_comm *cp, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                      int zigzag, const int64_t *pos, rl_tensor *out, int64_t *work)
{
    rl_ctx *ctx = rl_comm_ctx(cp);
    /* TODO(30.5): out (overwritten) = causal attention of this rank's queries against the whole
     * sequence. K/V blocks travel the ring of cp with rl_send / rl_recv only: cp − 1 steps, each
     * sending the K and V blocks to one neighbour and receiving from the other (the same
     * direction on every rank), a step's send and receive in flight together; never a collective.
     * Every block attended once with its own positions and merged with cp_lse_merge; *work (when
     * not NULL) += the unmasked score entries computed; nothing left allocated. */
    (void)q, (void)k, (void)v, (void)n_heads, (void)zigzag, (void)pos, (void)out, (void)work;
    return rl_error(ctx, RL_ERR_NOT_IMPLEMENTED,
                    "step 30.5 (context parallelism) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md");
}
