/* ops.h — the math of the models, device-neutral: every op dispatches on its tensors'
 * device (CPU kernels here; on RL_CUDA an op returns RL_ERR_UNSUPPORTED until the GPU
 * backend adds kernels). Tensors may be f32 or bf16 in any mix; kernels accumulate in
 * f32. Every op reports its FLOPs, bytes moved and shapes ("x[b=8,h=64] w[h=64,4h=256] ->
 * y[b=8,4h=256]") to the cost model and the trace via rl_compute_record.
 *
 * Conventions:
 *  - Matrices: a tensor of any rank is read as a row-major matrix of
 *    rows = numel / shape[last] and cols = shape[last] ([b,s,h] is a [b·s, h] matrix).
 *  - Backward ops OVERWRITE input gradients (dx) and ACCUMULATE (+=) parameter
 *    gradients (dw, dbias, dgamma, dbeta), so gradient accumulation works.
 *  - Elementwise ops allow their output to alias an input.
 *  - Every op returns 0 or an error code with a message (rl_last_error) naming the shapes.
 *  - ctx is the rank the op runs on (its clock advances); it may be NULL in tools, then
 *    the op falls back to the output tensor's ctx, and records nothing if that is NULL. */
#ifndef RL_OPS_H
#define RL_OPS_H
#include <stdint.h>
#include "tensor.h"

typedef struct rl_ctx rl_ctx;

/* ------------------------------------------------------------------ GEMM */
/* c ← op(a)·op(b) + beta·c, op(x) = xᵀ when trans_x. a is [m,k] ([k,m] if trans_a), b is
 * [k,n] ([n,k] if trans_b), c is [m,n]. fp32 GEMM via OpenBLAS when built with it. */
int rl_matmul(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
              rl_tensor *c, float beta);
/* Both backward products of c = op(a)·op(b): da ← d(op(a)) + beta_a·da and db ← ... + beta_b·db
 * (pass beta 0 to overwrite an activation grad, 1 to accumulate a weight grad); da or db may be NULL. */
int rl_matmul_backward(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
                       const rl_tensor *dc, rl_tensor *da, float beta_a, rl_tensor *db, float beta_b);

/* ------------------------------------------------------------------ layers */
/* y[rows,n] += bias[n] (broadcast over rows). */
int rl_bias_add(rl_ctx *ctx, rl_tensor *y, const rl_tensor *bias);
/* dbias[n] += Σ_rows dy[rows,n]. */
int rl_bias_backward(rl_ctx *ctx, const rl_tensor *dy, rl_tensor *dbias);
/* y ← GeLU(x), tanh approximation. */
int rl_gelu_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y);
/* dx ← dy · GeLU'(x). */
int rl_gelu_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *dy, rl_tensor *dx);
/* y ← LayerNorm over the last dim: (x−mean)·rstd·gamma + beta; saves mean and rstd
 * (f32, one per row) for the backward. beta may be NULL. */
int rl_layernorm_forward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *beta,
                         float eps, rl_tensor *y, rl_tensor *mean, rl_tensor *rstd);
/* dx ← ∂/∂x; dgamma += , dbeta += (either may be NULL). */
int rl_layernorm_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *mean,
                          const rl_tensor *rstd, const rl_tensor *dy, rl_tensor *dx, rl_tensor *dgamma,
                          rl_tensor *dbeta);
/* y ← softmax over the last dim (max-subtracted). */
int rl_softmax_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y);
/* dx ← y ⊙ (dy − Σ dy⊙y) per row. */
int rl_softmax_backward(rl_ctx *ctx, const rl_tensor *y, const rl_tensor *dy, rl_tensor *dx);

/* Causal multi-head self-attention: q, k, v, out are [b, s, nh·hd] (heads side by side in
 * the last dim); probs [b, nh, s, s] (f32) receives the attention weights for the backward.
 * out = softmax(q·kᵀ/√hd + causal mask)·v per (batch, head). */
int rl_attention_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                         int n_heads, rl_tensor *probs, rl_tensor *out);
/* dq, dk, dv ← gradients of the attention above given dout (overwritten). */
int rl_attention_backward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                          const rl_tensor *probs, const rl_tensor *dout, int n_heads,
                          rl_tensor *dq, rl_tensor *dk, rl_tensor *dv);

/* Embedding lookup: out[r,:] ← table[ids[r],:] (+ out[r,:] when accumulate), for the n rows
 * of out [.., h]; table is [V, h]. Token embeddings, and positions with ids = 0..s−1. */
int rl_embedding_forward(rl_ctx *ctx, const rl_tensor *table, const int *ids, int accumulate, rl_tensor *out);
/* dtable[ids[r],:] += dout[r,:] for every row r of dout. */
int rl_embedding_backward(rl_ctx *ctx, const int *ids, const rl_tensor *dout, rl_tensor *dtable);

/* Row gather (MoE dispatch): dst[i,:] ← scale[i]·src[rows[i],:] for every row i of dst
 * (scale may be NULL for 1). */
int rl_gather_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale, rl_tensor *dst);
/* Row scatter-add (MoE combine): dst[rows[i],:] += scale[i]·src[i,:] for every row i of src
 * (scale may be NULL for 1). */
int rl_scatter_add_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale, rl_tensor *dst);

/* ------------------------------------------------------------------ losses */
/* Mean cross-entropy of logits [rows, V] against targets[rows] (class ids in [0,V)) into
 * *loss; dlogits (may be NULL) ← grad_scale · ∂loss/∂logits = grad_scale·(softmax − onehot)/rows. */
int rl_cross_entropy(rl_ctx *ctx, const rl_tensor *logits, const int *targets, float grad_scale,
                     rl_tensor *dlogits, float *loss);
/* Mean squared error mean((pred−target)²) into *loss; dpred (may be NULL) ←
 * grad_scale · 2(pred−target)/numel. */
int rl_mse_loss(rl_ctx *ctx, const rl_tensor *pred, const rl_tensor *target, float grad_scale,
                rl_tensor *dpred, float *loss);

/* ------------------------------------------------------------------ elementwise */
/* out ← a + b (same numel). */
int rl_add(rl_ctx *ctx, const rl_tensor *a, const rl_tensor *b, rl_tensor *out);
/* out ← x + branch: the residual connection (recorded as "residual_add"). */
int rl_residual_add(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *branch, rl_tensor *out);
/* y ← y + alpha·x. */
int rl_axpy(rl_ctx *ctx, float alpha, const rl_tensor *x, rl_tensor *y);
/* x ← alpha·x. */
int rl_scale(rl_ctx *ctx, rl_tensor *x, float alpha);
/* dst ← src (converting dtype; same numel). */
int rl_copy(rl_ctx *ctx, rl_tensor *dst, const rl_tensor *src);
/* x ← value everywhere. */
int rl_fill(rl_ctx *ctx, rl_tensor *x, float value);
/* x ← 0. */
int rl_zero(rl_ctx *ctx, rl_tensor *x);
/* Each of the n tensors xs[i] ← 0, as one kernel (a multi-tensor launch, like PyTorch's foreach
 * ops): one launch's latency for all of them, not one each. */
int rl_zero_all(rl_ctx *ctx, rl_tensor *const *xs, int n);
/* Σ x (accumulated in double) into *sum — for checks and summaries. */
int rl_sum(rl_ctx *ctx, const rl_tensor *x, double *sum);
/* Σ x² (accumulated in double) into *sumsq — gradient norms. */
int rl_sum_squares(rl_ctx *ctx, const rl_tensor *x, double *sumsq);

/* ------------------------------------------------------------------ optimizers */
/* AdamW hyper-parameters. */
typedef struct rl_adamw_cfg {
    float lr, beta1, beta2, eps, weight_decay;
} rl_adamw_cfg;
/* lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0. */
rl_adamw_cfg rl_adamw_defaults(void);
/* One AdamW step (step counts from 1) over matching elements of param, grad, master, m, v
 * (all the same numel; any of them may be a slice, e.g. a ZeRO shard). master, m, v are
 * f32; param and grad f32 or bf16. With master NULL, param must be f32 and is updated
 * directly; otherwise master is updated and param ← master (rounded to bf16 if bf16).
 * Decoupled weight decay: w ← w − lr·(m̂/(√v̂+eps) + wd·w). */
int rl_adamw_step(rl_ctx *ctx, const rl_adamw_cfg *cfg, int64_t step, rl_tensor *param,
                  const rl_tensor *grad, rl_tensor *master, rl_tensor *m, rl_tensor *v);
/* Plain SGD: param ← param − lr·grad (master as in rl_adamw_step, may be NULL). */
int rl_sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master);

#endif
