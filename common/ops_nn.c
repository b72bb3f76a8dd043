/* ops_nn.c — CPU kernels of the layer ops: bias, GeLU, LayerNorm, softmax and causal
 * multi-head attention, forward and backward, in f32 arithmetic on any dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "backend.h"
#include "ops_internal.h"

/* ------------------------------------------------------------------ bias */

int rl_bias_add(rl_ctx *ctx, rl_tensor *y, const rl_tensor *bias)
{
    const char *name = "bias_add";
    ctx = ops_ctx(ctx, y);
    int rc = ops_check(ctx, name, OPS_LIST(y, bias), 0);
    if (rc)
        return rc;
    int64_t rows, n;
    ops_matrix_dims(y, &rows, &n);
    if (bias->numel != n) {
        char sy[128], sb[128];
        return rl_error(ctx, RL_ERR_ARG, "%s: bias %s must have as many elements as the last dim of %s (%lld)",
                        name, rl_tensor_describe(bias, sb, sizeof sb), rl_tensor_describe(y, sy, sizeof sy),
                        (long long)n);
    }
    double w0 = ops_wall(ctx);
    if (ops_gpu(y)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_bias_add(ctx, y, bias)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *B = ops_stage_in(&st, bias);
    float *Y = ops_stage_out(&st, y, 1);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++)
            Y[r * n + j] += B[j];
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, y->dtype, (double)y->numel, 2.0 * rl_tensor_bytes(y) + rl_tensor_bytes(bias), w0,
               OPS_LIST(y, bias), OPS_LIST(y));
    return 0;
}

int rl_bias_backward(rl_ctx *ctx, const rl_tensor *dy, rl_tensor *dbias)
{
    const char *name = "bias_bwd";
    ctx = ops_ctx(ctx, dbias);
    int rc = ops_check(ctx, name, OPS_LIST(dy, dbias), 0);
    if (rc)
        return rc;
    int64_t rows, n;
    ops_matrix_dims(dy, &rows, &n);
    if (dbias->numel != n) {
        char sy[128], sb[128];
        return rl_error(ctx, RL_ERR_ARG, "%s: %s must have as many elements as the last dim of %s (%lld)", name,
                        rl_tensor_describe(dbias, sb, sizeof sb), rl_tensor_describe(dy, sy, sizeof sy), (long long)n);
    }
    double w0 = ops_wall(ctx);
    if (ops_gpu(dbias)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_bias_backward(ctx, dy, dbias)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *D = ops_stage_in(&st, dy);
    float *G = ops_stage_out(&st, dbias, 1);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t j = 0; j < n; j++) {
        float s = 0;
        for (int64_t r = 0; r < rows; r++)
            s += D[r * n + j];
        G[j] += s;
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dy->dtype, (double)dy->numel, ops_bytes(OPS_LIST(dy, dbias, dbias)), w0, OPS_LIST(dy),
               OPS_LIST(dbias));
    return 0;
}

/* ------------------------------------------------------------------ GeLU */

#define GELU_C 0.7978845608028654f /* √(2/π) */
#define GELU_A 0.044715f

/* tanh through one expf (several times faster than tanhf; absolute error ~1e-7). */
static inline float fast_tanh(float u)
{
    if (u > 15.0f)
        return 1.0f;
    if (u < -15.0f)
        return -1.0f;
    return 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
}

int rl_gelu_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    const char *name = "gelu";
    ctx = ops_ctx(ctx, y);
    int rc = ops_check(ctx, name, OPS_LIST(x, y), 0);
    if (rc)
        return rc;
    if (x->numel != y->numel)
        return ops_numel_mismatch(ctx, name, x, y);
    double w0 = ops_wall(ctx);
    if (ops_gpu(y)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_gelu_forward(ctx, x, y)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *X = ops_stage_in(&st, x);
    float *Y = ops_stage_out(&st, y, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t i = 0; i < x->numel; i++) {
        float v = X[i];
        Y[i] = 0.5f * v * (1.0f + fast_tanh(GELU_C * (v + GELU_A * v * v * v)));
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, y->dtype, 10.0 * (double)x->numel, ops_bytes(OPS_LIST(x, y)), w0, OPS_LIST(x), OPS_LIST(y));
    return 0;
}

int rl_gelu_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *dy, rl_tensor *dx)
{
    const char *name = "gelu_bwd";
    ctx = ops_ctx(ctx, dx);
    int rc = ops_check(ctx, name, OPS_LIST(x, dy, dx), 0);
    if (rc)
        return rc;
    if (x->numel != dy->numel)
        return ops_numel_mismatch(ctx, name, x, dy);
    if (x->numel != dx->numel)
        return ops_numel_mismatch(ctx, name, x, dx);
    double w0 = ops_wall(ctx);
    if (ops_gpu(dx)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_gelu_backward(ctx, x, dy, dx)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *X = ops_stage_in(&st, x);
    const float *D = ops_stage_in(&st, dy);
    float *G = ops_stage_out(&st, dx, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t i = 0; i < x->numel; i++) {
        float v = X[i];
        float t = fast_tanh(GELU_C * (v + GELU_A * v * v * v));
        float dt = (1.0f - t * t) * GELU_C * (1.0f + 3.0f * GELU_A * v * v);
        G[i] = D[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dx->dtype, 16.0 * (double)x->numel, ops_bytes(OPS_LIST(x, dy, dx)), w0, OPS_LIST(x, dy),
               OPS_LIST(dx));
    return 0;
}

/* ------------------------------------------------------------------ LayerNorm */

/* Checks LayerNorm's per-row and per-feature tensors against x [rows, n]. */
static int ln_check(rl_ctx *ctx, const char *name, const rl_tensor *x, const rl_tensor *gamma,
                    const rl_tensor *beta, const rl_tensor *mean, const rl_tensor *rstd, const rl_tensor *other)
{
    int64_t rows, n;
    ops_matrix_dims(x, &rows, &n);
    char sx[128], so[128];
    if (gamma->numel != n || (beta && beta->numel != n))
        return rl_error(ctx, RL_ERR_ARG, "%s: gamma/beta %s must have %lld elements, the last dim of %s", name,
                        rl_tensor_describe(gamma, so, sizeof so), (long long)n, rl_tensor_describe(x, sx, sizeof sx));
    if (mean->numel != rows || rstd->numel != rows || mean->dtype != RL_F32 || rstd->dtype != RL_F32)
        return rl_error(ctx, RL_ERR_ARG, "%s: mean and rstd must be f32 with one element per row of %s (%lld)",
                        name, rl_tensor_describe(x, sx, sizeof sx), (long long)rows);
    if (other->numel != x->numel)
        return ops_numel_mismatch(ctx, name, other, x);
    return 0;
}

int rl_layernorm_forward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *beta,
                         float eps, rl_tensor *y, rl_tensor *mean, rl_tensor *rstd)
{
    const char *name = "layernorm";
    ctx = ops_ctx(ctx, y);
    int rc = ops_check(ctx, name, OPS_LIST(x, gamma, y, mean, rstd), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(beta), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(x, beta), 1);
    if (!rc)
        rc = ln_check(ctx, name, x, gamma, beta, mean, rstd, y);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(y)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_layernorm_forward(ctx, x, gamma, beta, eps, y, mean, rstd)))
            return rc;
        goto record;
    }
    int64_t rows, n;
    ops_matrix_dims(x, &rows, &n);
    ops_stage st = { .n = 0 };
    const float *X = ops_stage_in(&st, x);
    const float *Gm = ops_stage_in(&st, gamma);
    const float *Bt = ops_stage_in(&st, beta);
    float *Y = ops_stage_out(&st, y, 0);
    float *Mu = ops_host(mean), *Rs = ops_host(rstd);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = X + r * n;
        double s = 0, ss = 0;
        for (int64_t j = 0; j < n; j++)
            s += xr[j];
        float mu = (float)(s / (double)n);
        for (int64_t j = 0; j < n; j++)
            ss += (double)(xr[j] - mu) * (xr[j] - mu);
        float rs = 1.0f / sqrtf((float)(ss / (double)n) + eps);
        Mu[r] = mu;
        Rs[r] = rs;
        for (int64_t j = 0; j < n; j++)
            Y[r * n + j] = (xr[j] - mu) * rs * Gm[j] + (Bt ? Bt[j] : 0.0f);
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, y->dtype, 8.0 * (double)x->numel, ops_bytes(OPS_LIST(x, gamma, beta, y, mean, rstd)), w0,
               OPS_LIST(x, gamma, beta), OPS_LIST(y));
    return 0;
}

int rl_layernorm_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *mean,
                          const rl_tensor *rstd, const rl_tensor *dy, rl_tensor *dx, rl_tensor *dgamma,
                          rl_tensor *dbeta)
{
    const char *name = "layernorm_bwd";
    ctx = ops_ctx(ctx, dx);
    int rc = ops_check(ctx, name, OPS_LIST(x, gamma, mean, rstd, dy, dx), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(dgamma, dbeta), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(x, dgamma, dbeta), 1);
    if (!rc)
        rc = ln_check(ctx, name, x, gamma, NULL, mean, rstd, dx);
    if (!rc && dy->numel != x->numel)
        rc = ops_numel_mismatch(ctx, name, dy, x);
    if (!rc && ((dgamma && dgamma->numel != gamma->numel) || (dbeta && dbeta->numel != gamma->numel)))
        rc = ops_numel_mismatch(ctx, name, dgamma && dgamma->numel != gamma->numel ? dgamma : dbeta, gamma);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(dx)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_layernorm_backward(ctx, x, gamma, mean, rstd, dy, dx, dgamma, dbeta)))
            return rc;
        goto record;
    }
    int64_t rows, n;
    ops_matrix_dims(x, &rows, &n);
    ops_stage st = { .n = 0 };
    const float *X = ops_stage_in(&st, x);
    const float *Gm = ops_stage_in(&st, gamma);
    const float *D = ops_stage_in(&st, dy);
    float *DX = ops_stage_out(&st, dx, 0);
    float *DG = ops_stage_out(&st, dgamma, 1);
    float *DB = ops_stage_out(&st, dbeta, 1);
    const float *Mu = ops_host(mean), *Rs = ops_host(rstd);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = X + r * n, *dr = D + r * n;
        float mu = Mu[r], rs = Rs[r];
        /* xhat = (x−mu)·rs, g = dy·gamma: dx = rs·(g − mean(g) − xhat·mean(g·xhat)) */
        double sg = 0, sgx = 0;
        for (int64_t j = 0; j < n; j++) {
            float xh = (xr[j] - mu) * rs, g = dr[j] * Gm[j];
            sg += g;
            sgx += (double)g * xh;
            if (DG)
                DG[j] += dr[j] * xh;
            if (DB)
                DB[j] += dr[j];
        }
        float mg = (float)(sg / (double)n), mgx = (float)(sgx / (double)n);
        for (int64_t j = 0; j < n; j++) {
            float xh = (xr[j] - mu) * rs;
            DX[r * n + j] = rs * (dr[j] * Gm[j] - mg - xh * mgx);
        }
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dx->dtype, 14.0 * (double)x->numel,
               ops_bytes(OPS_LIST(x, gamma, mean, rstd, dy, dx, dgamma, dbeta)), w0, OPS_LIST(x, gamma, dy),
               OPS_LIST(dx, dgamma, dbeta));
    return 0;
}

/* ------------------------------------------------------------------ softmax */

/* Row softmax of x[n] into y[n] (f32, max-subtracted); cols beyond `valid` get 0. */
static void softmax_row(const float *x, float *y, int64_t n, int64_t valid)
{
    float mx = -INFINITY;
    for (int64_t j = 0; j < valid; j++)
        mx = x[j] > mx ? x[j] : mx;
    double z = 0;
    for (int64_t j = 0; j < valid; j++) {
        y[j] = expf(x[j] - mx);
        z += y[j];
    }
    float inv = (float)(1.0 / z);
    for (int64_t j = 0; j < valid; j++)
        y[j] *= inv;
    for (int64_t j = valid; j < n; j++)
        y[j] = 0.0f;
}

int rl_softmax_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y)
{
    const char *name = "softmax";
    ctx = ops_ctx(ctx, y);
    int rc = ops_check(ctx, name, OPS_LIST(x, y), 0);
    if (rc)
        return rc;
    if (x->numel != y->numel)
        return ops_numel_mismatch(ctx, name, x, y);
    double w0 = ops_wall(ctx);
    if (ops_gpu(y)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_softmax_forward(ctx, x, y)))
            return rc;
        goto record;
    }
    int64_t rows, n;
    ops_matrix_dims(x, &rows, &n);
    ops_stage st = { .n = 0 };
    const float *X = ops_stage_in(&st, x);
    float *Y = ops_stage_out(&st, y, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    if (X == Y) { /* in place on f32: stage the row */
        float *row = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
        if (!row)
            return ops_stage_nomem(ctx, name, &st);
        for (int64_t r = 0; r < rows; r++) {
            memcpy(row, X + r * n, (size_t)n * sizeof(float));
            softmax_row(row, Y + r * n, n, n);
        }
        free(row);
    } else {
        for (int64_t r = 0; r < rows; r++)
            softmax_row(X + r * n, Y + r * n, n, n);
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, y->dtype, 5.0 * (double)x->numel, ops_bytes(OPS_LIST(x, y)), w0, OPS_LIST(x), OPS_LIST(y));
    return 0;
}

int rl_softmax_backward(rl_ctx *ctx, const rl_tensor *y, const rl_tensor *dy, rl_tensor *dx)
{
    const char *name = "softmax_bwd";
    ctx = ops_ctx(ctx, dx);
    int rc = ops_check(ctx, name, OPS_LIST(y, dy, dx), 0);
    if (rc)
        return rc;
    if (y->numel != dy->numel)
        return ops_numel_mismatch(ctx, name, y, dy);
    if (y->numel != dx->numel)
        return ops_numel_mismatch(ctx, name, y, dx);
    double w0 = ops_wall(ctx);
    if (ops_gpu(dx)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_softmax_backward(ctx, y, dy, dx)))
            return rc;
        goto record;
    }
    int64_t rows, n;
    ops_matrix_dims(y, &rows, &n);
    ops_stage st = { .n = 0 };
    const float *Y = ops_stage_in(&st, y);
    const float *D = ops_stage_in(&st, dy);
    float *G = ops_stage_out(&st, dx, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t j = 0; j < n; j++)
            s += (double)D[r * n + j] * Y[r * n + j];
        for (int64_t j = 0; j < n; j++)
            G[r * n + j] = Y[r * n + j] * (D[r * n + j] - (float)s);
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dx->dtype, 4.0 * (double)y->numel, ops_bytes(OPS_LIST(y, dy, dx)), w0, OPS_LIST(y, dy),
               OPS_LIST(dx));
    return 0;
}

/* ------------------------------------------------------------------ attention */

/* Checks q, k, v, out are [b, s, nh·hd] alike and probs is f32 [b, nh, s, s]; sets dims. */
static int attn_check(rl_ctx *ctx, const char *name, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                      const rl_tensor *out, const rl_tensor *probs, int n_heads, int64_t *B, int64_t *S, int64_t *H)
{
    char s1[128], s2[128];
    if (q->ndim != 3)
        return rl_error(ctx, RL_ERR_ARG, "%s: q %s must be 3-D [b, s, heads·head_dim]", name,
                        rl_tensor_describe(q, s1, sizeof s1));
    const rl_tensor *same[3] = { k, v, out };
    for (int i = 0; i < 3; i++)
        if (same[i]->ndim != 3 || same[i]->shape[0] != q->shape[0] || same[i]->shape[1] != q->shape[1] ||
            same[i]->shape[2] != q->shape[2])
            return rl_error(ctx, RL_ERR_ARG, "%s: %s must have the shape of q %s", name,
                            rl_tensor_describe(same[i], s1, sizeof s1), rl_tensor_describe(q, s2, sizeof s2));
    *B = q->shape[0];
    *S = q->shape[1];
    *H = q->shape[2];
    if (n_heads < 1 || *H % n_heads)
        return rl_error(ctx, RL_ERR_ARG, "%s: %d heads do not divide the last dim of %s (%lld); pick a head count "
                        "that divides it", name, n_heads, rl_tensor_describe(q, s1, sizeof s1), (long long)*H);
    if (probs->dtype != RL_F32 || probs->numel != *B * n_heads * *S * *S)
        return rl_error(ctx, RL_ERR_ARG, "%s: probs %s must be f32 [b=%lld, heads=%d, s=%lld, s=%lld]", name,
                        rl_tensor_describe(probs, s1, sizeof s1), (long long)*B, n_heads, (long long)*S,
                        (long long)*S);
    return 0;
}

int rl_attention_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                         int n_heads, rl_tensor *probs, rl_tensor *out)
{
    const char *name = "attention";
    ctx = ops_ctx(ctx, out);
    int rc = ops_check(ctx, name, OPS_LIST(q, k, v, probs, out), 0);
    int64_t B, S, H;
    if (!rc)
        rc = attn_check(ctx, name, q, k, v, out, probs, n_heads, &B, &S, &H);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(out)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_attention_forward(ctx, q, k, v, n_heads, probs, out)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *Q = ops_stage_in(&st, q), *K = ops_stage_in(&st, k), *V = ops_stage_in(&st, v);
    float *O = ops_stage_out(&st, out, 0);
    float *P = ops_host(probs);
    float *scores = malloc((size_t)(S > 0 ? S : 1) * sizeof(float));
    if (st.failed || !scores) {
        free(scores);
        return ops_stage_nomem(ctx, name, &st);
    }
    int64_t hd = H / n_heads;
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t h = 0; h < n_heads; h++)
            for (int64_t i = 0; i < S; i++) {
                const float *qi = Q + (bi * S + i) * H + h * hd;
                for (int64_t j = 0; j <= i; j++) {
                    const float *kj = K + (bi * S + j) * H + h * hd;
                    float s = 0;
                    for (int64_t d = 0; d < hd; d++)
                        s += qi[d] * kj[d];
                    scores[j] = s * scale;
                }
                float *pi = P + ((bi * n_heads + h) * S + i) * S;
                softmax_row(scores, pi, S, i + 1);
                float *oi = O + (bi * S + i) * H + h * hd;
                for (int64_t d = 0; d < hd; d++)
                    oi[d] = 0.0f;
                for (int64_t j = 0; j <= i; j++) {
                    const float *vj = V + (bi * S + j) * H + h * hd;
                    for (int64_t d = 0; d < hd; d++)
                        oi[d] += pi[j] * vj[d];
                }
            }
    free(scores);
    ops_stage_done(&st);
record:;
    /* Q·Kᵀ and P·V over the causal half (each 2·b·nh·(s²/2)·hd), softmax ≈ 5 per score. */
    double flops = 2.0 * B * S * S * H + 2.5 * B * n_heads * S * S;
    ops_record(ctx, name, out->dtype, flops, ops_bytes(OPS_LIST(q, k, v, probs, out)), w0, OPS_LIST(q, k, v),
               OPS_LIST(out, probs));
    return 0;
}

int rl_attention_backward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                          const rl_tensor *probs, const rl_tensor *dout, int n_heads,
                          rl_tensor *dq, rl_tensor *dk, rl_tensor *dv)
{
    const char *name = "attention_bwd";
    ctx = ops_ctx(ctx, dq);
    int rc = ops_check(ctx, name, OPS_LIST(q, k, v, probs, dout, dq, dk, dv), 0);
    int64_t B, S, H;
    if (!rc)
        rc = attn_check(ctx, name, q, k, v, dout, probs, n_heads, &B, &S, &H);
    if (!rc)
        rc = attn_check(ctx, name, dq, dk, dv, q, probs, n_heads, &B, &S, &H);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(dq)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_attention_backward(ctx, q, k, v, probs, dout, n_heads, dq, dk, dv)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *Q = ops_stage_in(&st, q), *K = ops_stage_in(&st, k), *V = ops_stage_in(&st, v),
                *DO = ops_stage_in(&st, dout);
    float *DQ = ops_stage_out(&st, dq, 0), *DK = ops_stage_out(&st, dk, 0), *DV = ops_stage_out(&st, dv, 0);
    const float *P = ops_host(probs);
    float *dp = malloc((size_t)(S > 0 ? S : 1) * sizeof(float));
    if (st.failed || !dp) {
        free(dp);
        return ops_stage_nomem(ctx, name, &st);
    }
    int64_t hd = H / n_heads;
    float scale = 1.0f / sqrtf((float)hd);
    memset(DQ, 0, (size_t)q->numel * sizeof(float));
    memset(DK, 0, (size_t)q->numel * sizeof(float));
    memset(DV, 0, (size_t)q->numel * sizeof(float));
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t h = 0; h < n_heads; h++)
            for (int64_t i = 0; i < S; i++) {
                const float *pi = P + ((bi * n_heads + h) * S + i) * S;
                const float *doi = DO + (bi * S + i) * H + h * hd;
                /* dV_j += P_ij dO_i; dP_ij = dO_i·V_j */
                double rowdot = 0;
                for (int64_t j = 0; j <= i; j++) {
                    const float *vj = V + (bi * S + j) * H + h * hd;
                    float *dvj = DV + (bi * S + j) * H + h * hd;
                    float s = 0;
                    for (int64_t d = 0; d < hd; d++) {
                        dvj[d] += pi[j] * doi[d];
                        s += doi[d] * vj[d];
                    }
                    dp[j] = s;
                    rowdot += (double)s * pi[j];
                }
                /* dS_ij = P_ij (dP_ij − Σ_j P_ij dP_ij); dQ_i += dS_ij K_j·scale; dK_j += dS_ij Q_i·scale */
                const float *qi = Q + (bi * S + i) * H + h * hd;
                float *dqi = DQ + (bi * S + i) * H + h * hd;
                for (int64_t j = 0; j <= i; j++) {
                    float ds = pi[j] * (dp[j] - (float)rowdot) * scale;
                    const float *kj = K + (bi * S + j) * H + h * hd;
                    float *dkj = DK + (bi * S + j) * H + h * hd;
                    for (int64_t d = 0; d < hd; d++) {
                        dqi[d] += ds * kj[d];
                        dkj[d] += ds * qi[d];
                    }
                }
            }
    free(dp);
    ops_stage_done(&st);
record:;
    double flops = 4.0 * B * S * S * H + 3.0 * B * n_heads * S * S;
    ops_record(ctx, name, dq->dtype, flops, ops_bytes(OPS_LIST(q, k, v, probs, dout, dq, dk, dv)), w0,
               OPS_LIST(q, k, v, probs, dout), OPS_LIST(dq, dk, dv));
    return 0;
}

/* ------------------------------------------------------------------ embedding */

/* Checks table [V, h] against rows of x [n, h] and the ids. */
static int emb_check(rl_ctx *ctx, const char *name, const rl_tensor *table, const int *ids, const rl_tensor *x)
{
    char st[128], sx[128];
    int64_t V, h, n, hx;
    ops_matrix_dims(table, &V, &h);
    ops_matrix_dims(x, &n, &hx);
    if (!ids)
        return rl_error(ctx, RL_ERR_ARG, "%s: ids must not be NULL", name);
    if (h != hx)
        return rl_error(ctx, RL_ERR_ARG, "%s: table %s and %s must have the same last dim", name,
                        rl_tensor_describe(table, st, sizeof st), rl_tensor_describe(x, sx, sizeof sx));
    for (int64_t r = 0; r < n; r++)
        if (ids[r] < 0 || ids[r] >= V)
            return rl_error(ctx, RL_ERR_ARG, "%s: id %d of row %lld is outside the %lld rows of table %s", name,
                            ids[r], (long long)r, (long long)V, rl_tensor_describe(table, st, sizeof st));
    return 0;
}

int rl_embedding_forward(rl_ctx *ctx, const rl_tensor *table, const int *ids, int accumulate, rl_tensor *out)
{
    const char *name = "embedding";
    ctx = ops_ctx(ctx, out);
    int rc = ops_check(ctx, name, OPS_LIST(table, out), 0);
    if (!rc)
        rc = emb_check(ctx, name, table, ids, out);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(out)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_embedding_forward(ctx, table, ids, accumulate, out)))
            return rc;
        goto record;
    }
    int64_t n, h;
    ops_matrix_dims(out, &n, &h);
    ops_stage st = { .n = 0 };
    const float *T = ops_stage_in(&st, table);
    float *O = ops_stage_out(&st, out, accumulate);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < h; j++)
            O[r * h + j] = (accumulate ? O[r * h + j] : 0.0f) + T[(int64_t)ids[r] * h + j];
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, out->dtype, accumulate ? (double)out->numel : 0.0,
               (1.0 + accumulate) * rl_tensor_bytes(out) + (double)out->numel * rl_dtype_size(table->dtype), w0,
               OPS_LIST(table), OPS_LIST(out));
    return 0;
}

int rl_embedding_backward(rl_ctx *ctx, const int *ids, const rl_tensor *dout, rl_tensor *dtable)
{
    const char *name = "embedding_bwd";
    ctx = ops_ctx(ctx, dtable);
    int rc = ops_check(ctx, name, OPS_LIST(dout, dtable), 0);
    if (!rc)
        rc = emb_check(ctx, name, dtable, ids, dout);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(dtable)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_embedding_backward(ctx, ids, dout, dtable)))
            return rc;
        goto record;
    }
    int64_t n, h;
    ops_matrix_dims(dout, &n, &h);
    ops_stage st = { .n = 0 };
    const float *D = ops_stage_in(&st, dout);
    float *G = ops_stage_out(&st, dtable, 1);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < h; j++)
            G[(int64_t)ids[r] * h + j] += D[r * h + j];
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dtable->dtype, (double)dout->numel, 3.0 * rl_tensor_bytes(dout), w0, OPS_LIST(dout),
               OPS_LIST(dtable));
    return 0;
}

/* ------------------------------------------------------------------ row gather / scatter */

/* Checks that src/dst rows match in width and every index is inside `into` (the indexed side). */
static int rows_check(rl_ctx *ctx, const char *name, const rl_tensor *indexed, const rl_tensor *other,
                      const int64_t *rows)
{
    char s1[128], s2[128];
    int64_t n_idx, h1, n, h2;
    ops_matrix_dims(indexed, &n_idx, &h1);
    ops_matrix_dims(other, &n, &h2);
    if (h1 != h2)
        return rl_error(ctx, RL_ERR_ARG, "%s: %s and %s must have the same last dim", name,
                        rl_tensor_describe(indexed, s1, sizeof s1), rl_tensor_describe(other, s2, sizeof s2));
    if (n > 0 && !rows)
        return rl_error(ctx, RL_ERR_ARG, "%s: row indices must not be NULL", name);
    for (int64_t i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= n_idx)
            return rl_error(ctx, RL_ERR_ARG, "%s: row index %lld (entry %lld) is outside the %lld rows of %s", name,
                            (long long)rows[i], (long long)i, (long long)n_idx,
                            rl_tensor_describe(indexed, s1, sizeof s1));
    return 0;
}

int rl_gather_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale, rl_tensor *dst)
{
    const char *name = "gather_rows";
    ctx = ops_ctx(ctx, dst);
    int rc = ops_check(ctx, name, OPS_LIST(src, dst), 0);
    if (!rc)
        rc = rows_check(ctx, name, src, dst, rows);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(dst)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_gather_rows(ctx, src, rows, scale, dst)))
            return rc;
        goto record;
    }
    int64_t n, h;
    ops_matrix_dims(dst, &n, &h);
    ops_stage st = { .n = 0 };
    const float *S = ops_stage_in(&st, src);
    float *D = ops_stage_out(&st, dst, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t i = 0; i < n; i++) {
        float c = scale ? scale[i] : 1.0f;
        for (int64_t j = 0; j < h; j++)
            D[i * h + j] = c * S[rows[i] * h + j];
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dst->dtype, scale ? (double)dst->numel : 0.0, 2.0 * rl_tensor_bytes(dst), w0,
               OPS_LIST(src), OPS_LIST(dst));
    return 0;
}

int rl_scatter_add_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale, rl_tensor *dst)
{
    const char *name = "scatter_add_rows";
    ctx = ops_ctx(ctx, dst);
    int rc = ops_check(ctx, name, OPS_LIST(src, dst), 0);
    if (!rc)
        rc = rows_check(ctx, name, dst, src, rows);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(dst)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_scatter_add_rows(ctx, src, rows, scale, dst)))
            return rc;
        goto record;
    }
    int64_t n, h;
    ops_matrix_dims(src, &n, &h);
    ops_stage st = { .n = 0 };
    const float *S = ops_stage_in(&st, src);
    float *D = ops_stage_out(&st, dst, 1);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t i = 0; i < n; i++) {
        float c = scale ? scale[i] : 1.0f;
        for (int64_t j = 0; j < h; j++)
            D[rows[i] * h + j] += c * S[i * h + j];
    }
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, dst->dtype, 2.0 * (double)src->numel, 3.0 * rl_tensor_bytes(src), w0, OPS_LIST(src),
               OPS_LIST(dst));
    return 0;
}
