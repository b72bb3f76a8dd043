/* test_ops.c — every op of ops.h: finite-difference gradient checks (central differences,
 * loss accumulated in double) of each backward, values against double references, bf16
 * against f32 within stated tolerances, optimizers, cost records and error paths. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"
#include "ringlab.h"
#include "testutil.h"

/* Finite differences: step and tolerance on |numeric − analytic| / max(|numeric|, |analytic|, floor). */
#define FD_EPS 1e-2
#define FD_TOL 2e-2

static rl_tensor *rand_tensor(rl_ctx *ctx, const char *name, rl_dtype dt, int ndim, const int64_t *shape,
                              const char *dims, uint64_t seed, double scale)
{
    rl_tensor *t = rl_tensor_new(ctx, name, dt, RL_MEM_OTHER, ndim, shape, dims);
    ck_assert_ptr_nonnull(t);
    rl_rng r = rl_rng_make(seed, 77);
    for (int64_t i = 0; i < t->numel; i++)
        rl_tensor_set(t, i, (float)(scale * rl_rng_normal(&r)));
    return t;
}

static rl_tensor *like(rl_ctx *ctx, const rl_tensor *t, const char *name)
{
    rl_tensor *u = rl_tensor_new(ctx, name, RL_F32, RL_MEM_OTHER, t->ndim, t->shape, NULL);
    ck_assert_ptr_nonnull(u);
    return u;
}

/* Σ r·y in double. */
static double weighted_sum(const rl_tensor *y, const rl_tensor *r)
{
    double s = 0;
    for (int64_t i = 0; i < y->numel; i++)
        s += (double)rl_tensor_get(y, i) * rl_tensor_get(r, i);
    return s;
}

/* A scalar function of the op's current inputs (the forward, then Σ r·y). */
typedef double (*scalar_fn)(void *st);

/* Checks grad (analytic ∂f/∂x) against central differences of f over up to 48 elements of x. */
static void fd_check(const char *what, scalar_fn f, void *st, rl_tensor *x, const rl_tensor *grad)
{
    double gmax = 0;
    for (int64_t i = 0; i < grad->numel; i++)
        gmax = fmax(gmax, fabs(rl_tensor_get(grad, i)));
    int64_t stride = x->numel > 48 ? x->numel / 48 : 1;
    for (int64_t i = 0; i < x->numel; i += stride) {
        float x0 = rl_tensor_get(x, i);
        rl_tensor_set(x, i, x0 + (float)FD_EPS);
        double fp = f(st);
        rl_tensor_set(x, i, x0 - (float)FD_EPS);
        double fm = f(st);
        rl_tensor_set(x, i, x0);
        double num = (fp - fm) / (2 * FD_EPS), ana = rl_tensor_get(grad, i);
        double err = fabs(num - ana) / fmax(fmax(fabs(num), fabs(ana)), 1e-2 * gmax + 1e-4);
        ck_assert_msg(err < FD_TOL, "%s: element %lld: finite difference %.6g vs backward %.6g (rel err %.3g)", what,
                      (long long)i, num, ana, err);
    }
}

/* ------------------------------------------------------------------ matmul */

typedef struct { rl_ctx *ctx; rl_tensor *a, *b, *c, *r; int ta, tb; } mm_st;

static double mm_f(void *p)
{
    mm_st *s = p;
    ck_assert_int_eq(rl_matmul(s->ctx, s->a, s->ta, s->b, s->tb, s->c, 0.0f), 0);
    return weighted_sum(s->c, s->r);
}

START_TEST(test_matmul_grad)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int64_t m = 5, k = 7, n = 3;
            int64_t sa[2] = { ta ? k : m, ta ? m : k }, sb[2] = { tb ? n : k, tb ? k : n }, sc[2] = { m, n };
            mm_st s = { ctx, rand_tensor(ctx, "a", RL_F32, 2, sa, NULL, 1, 1), rand_tensor(ctx, "b", RL_F32, 2, sb, NULL, 2, 1),
                        rl_tensor_new(ctx, "c", RL_F32, RL_MEM_OTHER, 2, sc, NULL),
                        rand_tensor(ctx, "r", RL_F32, 2, sc, NULL, 3, 1), ta, tb };
            /* value against a double reference */
            mm_f(&s);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double ref = 0;
                    for (int64_t p = 0; p < k; p++)
                        ref += (double)rl_tensor_get(s.a, ta ? p * m + i : i * k + p) *
                               rl_tensor_get(s.b, tb ? j * k + p : p * n + j);
                    ck_assert_double_eq_tol(rl_tensor_get(s.c, i * n + j), ref, 1e-4);
                }
            rl_tensor *da = like(ctx, s.a, "da"), *db = like(ctx, s.b, "db");
            rl_tensor_fill(db, 0.5f); /* beta_b = 1 accumulates onto this */
            ck_assert_int_eq(rl_matmul_backward(ctx, s.a, ta, s.b, tb, s.r, da, 0.0f, db, 1.0f), 0);
            for (int64_t i = 0; i < db->numel; i++)
                rl_tensor_set(db, i, rl_tensor_get(db, i) - 0.5f);
            char what[64];
            snprintf(what, sizeof what, "matmul da (ta=%d tb=%d)", ta, tb);
            fd_check(what, mm_f, &s, s.a, da);
            snprintf(what, sizeof what, "matmul db (ta=%d tb=%d)", ta, tb);
            fd_check(what, mm_f, &s, s.b, db);
            rl_tensor *ts[] = { s.a, s.b, s.c, s.r, da, db };
            for (int i = 0; i < 6; i++)
                rl_tensor_free(ts[i]);
        }
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_matmul_bf16_and_record)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t sx[3] = { 4, 8, 64 }, sw[2] = { 64, 256 }, sy[3] = { 4, 8, 256 };
    rl_tensor *x = rand_tensor(ctx, "x", RL_F32, 3, sx, "b,s,h", 1, 1);
    rl_tensor *w = rand_tensor(ctx, "w", RL_F32, 2, sw, "h,4h", 2, 0.1);
    rl_tensor *xb = rl_tensor_new(ctx, "x", RL_BF16, RL_MEM_OTHER, 3, sx, "b,s,h");
    rl_tensor *wb = rl_tensor_new(ctx, "w", RL_BF16, RL_MEM_OTHER, 2, sw, "h,4h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 3, sy, "b,s,4h");
    rl_tensor *yb = rl_tensor_new(ctx, "y", RL_BF16, RL_MEM_OTHER, 3, sy, "b,s,4h");
    rl_tensor_copy(xb, x);
    rl_tensor_copy(wb, w);
    rl_trace *tr = rl_ctx_trace(ctx);
    size_t n0 = tr->n;
    ck_assert_int_eq(rl_matmul(ctx, x, 0, w, 0, y, 0.0f), 0);
    ck_assert_uint_eq(tr->n, n0 + 1);
    rl_trace_event *e = &tr->ev[n0];
    ck_assert_str_eq(e->name, "matmul");
    ck_assert_double_eq(e->flops, 2.0 * 32 * 64 * 256);
    ck_assert_double_eq(e->bytes, 4.0 * (32 * 64 + 64 * 256 + 32 * 256));
    ck_assert_str_eq(e->shapes, "x[b=4,s=8,h=64] w[h=64,4h=256] -> y[b=4,s=8,4h=256]");
    ck_assert(e->vend > e->vstart);
    /* bf16 storage, fp32 accumulation: within 2^-5 of the output's RMS (inputs and output each
     * rounded to 8 significant bits: ~2^-9 relative per element, summed over k = 64 products). */
    ck_assert_int_eq(rl_matmul(ctx, xb, 0, wb, 0, yb, 0.0f), 0);
    double rms = 0;
    for (int64_t i = 0; i < y->numel; i++)
        rms += (double)rl_tensor_get(y, i) * rl_tensor_get(y, i);
    rms = sqrt(rms / y->numel);
    for (int64_t i = 0; i < y->numel; i++)
        ck_assert_msg(fabs(rl_tensor_get(yb, i) - rl_tensor_get(y, i)) < rms / 32,
                      "bf16 matmul element %lld: %g vs f32 %g", (long long)i, rl_tensor_get(yb, i), rl_tensor_get(y, i));
    rl_tensor *ts[] = { x, w, xb, wb, y, yb };
    for (int i = 0; i < 6; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_errors)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t s1[2] = { 3, 4 }, s2[2] = { 5, 6 }, s3[2] = { 3, 6 };
    rl_tensor *a = rand_tensor(ctx, "a", RL_F32, 2, s1, "m,k", 1, 1);
    rl_tensor *b = rand_tensor(ctx, "b", RL_F32, 2, s2, "k,n", 2, 1);
    rl_tensor *c = rl_tensor_new(ctx, "c", RL_F32, RL_MEM_OTHER, 2, s3, NULL);
    ck_assert_int_eq(rl_matmul(ctx, a, 0, b, 0, c, 0.0f), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "a[m=3,k=4]"));
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "b[k=5,n=6]"));
    /* a tensor on the GPU: a clear "unsupported", not a crash */
    a->device = RL_CUDA;
    ck_assert_int_eq(rl_gelu_forward(ctx, a, a), RL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "GPU"));
    a->device = RL_CPU;
    ck_assert_int_eq(rl_add(ctx, a, b, c), RL_ERR_ARG);
    int bad_targets[3] = { 0, 9, 1 };
    float loss;
    ck_assert_int_eq(rl_cross_entropy(ctx, a, bad_targets, 1.0f, NULL, &loss), RL_ERR_ARG);
    int64_t sq[3] = { 1, 2, 6 };
    rl_tensor *q = rand_tensor(ctx, "q", RL_F32, 3, sq, NULL, 1, 1);
    int64_t sp[4] = { 1, 4, 2, 2 };
    rl_tensor *p = rl_tensor_new(ctx, "p", RL_F32, RL_MEM_OTHER, 4, sp, NULL);
    ck_assert_int_eq(rl_attention_forward(ctx, q, q, q, 4, p, q), RL_ERR_ARG); /* 4 heads do not divide 6 */
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "heads"));
    rl_tensor *ts[] = { a, b, c, q, p };
    for (int i = 0; i < 5; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ unary / layer ops */

typedef struct {
    rl_ctx *ctx;
    int op;
    rl_tensor *x, *y, *r, *g, *b, *mean, *rstd;
} un_st;

enum { OP_GELU, OP_SOFTMAX, OP_LN, OP_BIAS };

static double un_f(void *p)
{
    un_st *s = p;
    switch (s->op) {
    case OP_GELU: ck_assert_int_eq(rl_gelu_forward(s->ctx, s->x, s->y), 0); break;
    case OP_SOFTMAX: ck_assert_int_eq(rl_softmax_forward(s->ctx, s->x, s->y), 0); break;
    case OP_LN: ck_assert_int_eq(rl_layernorm_forward(s->ctx, s->x, s->g, s->b, 1e-5f, s->y, s->mean, s->rstd), 0); break;
    default:
        ck_assert_int_eq(rl_copy(s->ctx, s->y, s->x), 0);
        ck_assert_int_eq(rl_bias_add(s->ctx, s->y, s->b), 0);
        break;
    }
    return weighted_sum(s->y, s->r);
}

START_TEST(test_layer_grads)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t sh[2] = { 4, 10 }, sv[1] = { 10 }, sr[1] = { 4 };
    for (int op = OP_GELU; op <= OP_BIAS; op++) {
        un_st s = { ctx, op, rand_tensor(ctx, "x", RL_F32, 2, sh, NULL, 1, 1.5), NULL,
                    rand_tensor(ctx, "r", RL_F32, 2, sh, NULL, 2, 1), rand_tensor(ctx, "g", RL_F32, 1, sv, NULL, 3, 1),
                    rand_tensor(ctx, "beta", RL_F32, 1, sv, NULL, 4, 1), NULL, NULL };
        s.y = like(ctx, s.x, "y");
        s.mean = rl_tensor_new(ctx, "mean", RL_F32, RL_MEM_OTHER, 1, sr, NULL);
        s.rstd = rl_tensor_new(ctx, "rstd", RL_F32, RL_MEM_OTHER, 1, sr, NULL);
        un_f(&s);
        rl_tensor *dx = like(ctx, s.x, "dx"), *dg = like(ctx, s.g, "dg"), *db = like(ctx, s.b, "db");
        switch (op) {
        case OP_GELU:
            ck_assert_int_eq(rl_gelu_backward(ctx, s.x, s.r, dx), 0);
            fd_check("gelu dx", un_f, &s, s.x, dx);
            /* value: GeLU(1) with the tanh approximation */
            ck_assert_double_eq_tol(0.5 * 1 * (1 + tanh(sqrt(2 / M_PI) * (1 + 0.044715))), 0.841192, 1e-5);
            break;
        case OP_SOFTMAX:
            ck_assert_int_eq(rl_softmax_backward(ctx, s.y, s.r, dx), 0);
            fd_check("softmax dx", un_f, &s, s.x, dx);
            for (int64_t r = 0; r < 4; r++) {
                double sum = 0;
                for (int j = 0; j < 10; j++)
                    sum += rl_tensor_get(s.y, r * 10 + j);
                ck_assert_double_eq_tol(sum, 1.0, 1e-6);
            }
            break;
        case OP_LN:
            ck_assert_int_eq(rl_layernorm_backward(ctx, s.x, s.g, s.mean, s.rstd, s.r, dx, dg, db), 0);
            fd_check("layernorm dx", un_f, &s, s.x, dx);
            fd_check("layernorm dgamma", un_f, &s, s.g, dg);
            fd_check("layernorm dbeta", un_f, &s, s.b, db);
            break;
        default:
            ck_assert_int_eq(rl_bias_backward(ctx, s.r, db), 0);
            fd_check("bias dbias", un_f, &s, s.b, db);
            break;
        }
        rl_tensor *ts[] = { s.x, s.y, s.r, s.g, s.b, s.mean, s.rstd, dx, dg, db };
        for (int i = 0; i < 10; i++)
            rl_tensor_free(ts[i]);
    }
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_layernorm_bf16)
{
    /* bf16 input/params/output vs f32: within 2^-7 of the output's scale (≈ 1 after LN) */
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t sh[2] = { 8, 32 }, sv[1] = { 32 }, sr[1] = { 8 };
    rl_tensor *x = rand_tensor(ctx, "x", RL_F32, 2, sh, NULL, 1, 2), *g = rand_tensor(ctx, "g", RL_F32, 1, sv, NULL, 2, 1);
    rl_tensor *xb = rl_tensor_new(ctx, "xb", RL_BF16, RL_MEM_OTHER, 2, sh, NULL);
    rl_tensor *gb = rl_tensor_new(ctx, "gb", RL_BF16, RL_MEM_OTHER, 1, sv, NULL);
    rl_tensor *y = like(ctx, x, "y"), *yb = rl_tensor_new(ctx, "yb", RL_BF16, RL_MEM_OTHER, 2, sh, NULL);
    rl_tensor *mu = rl_tensor_new(ctx, "mu", RL_F32, RL_MEM_OTHER, 1, sr, NULL);
    rl_tensor *rs = rl_tensor_new(ctx, "rs", RL_F32, RL_MEM_OTHER, 1, sr, NULL);
    rl_tensor_copy(xb, x);
    rl_tensor_copy(gb, g);
    ck_assert_int_eq(rl_layernorm_forward(ctx, x, g, NULL, 1e-5f, y, mu, rs), 0);
    ck_assert_int_eq(rl_layernorm_forward(ctx, xb, gb, NULL, 1e-5f, yb, mu, rs), 0);
    ck_assert_double_le(rl_tensor_max_rel_diff(yb, y, 1.0), 3.0 / 128);
    rl_tensor *ts[] = { x, g, xb, gb, y, yb, mu, rs };
    for (int i = 0; i < 8; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ attention */

typedef struct { rl_ctx *ctx; rl_tensor *q, *k, *v, *p, *o, *r; int nh; } at_st;

static double at_f(void *p)
{
    at_st *s = p;
    ck_assert_int_eq(rl_attention_forward(s->ctx, s->q, s->k, s->v, s->nh, s->p, s->o), 0);
    return weighted_sum(s->o, s->r);
}

START_TEST(test_attention)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t sh[3] = { 2, 5, 8 }, sp[4] = { 2, 2, 5, 5 };
    at_st s = { ctx, rand_tensor(ctx, "q", RL_F32, 3, sh, "b,s,h", 1, 1), rand_tensor(ctx, "k", RL_F32, 3, sh, "b,s,h", 2, 1),
                rand_tensor(ctx, "v", RL_F32, 3, sh, "b,s,h", 3, 1),
                rl_tensor_new(ctx, "probs", RL_F32, RL_MEM_OTHER, 4, sp, "b,nh,s,s"), NULL,
                rand_tensor(ctx, "r", RL_F32, 3, sh, NULL, 4, 1), 2 };
    s.o = like(ctx, s.q, "o");
    at_f(&s);
    /* value: a double reference for batch 1, head 1, position 3 */
    int64_t bi = 1, h = 1, i = 3, hd = 4, H = 8, S = 5;
    double sc[5], z = 0, mx = -1e30;
    for (int64_t j = 0; j <= i; j++) {
        sc[j] = 0;
        for (int64_t d = 0; d < hd; d++)
            sc[j] += (double)rl_tensor_get(s.q, (bi * S + i) * H + h * hd + d) * rl_tensor_get(s.k, (bi * S + j) * H + h * hd + d);
        sc[j] /= sqrt((double)hd);
        mx = fmax(mx, sc[j]);
    }
    for (int64_t j = 0; j <= i; j++)
        z += exp(sc[j] - mx);
    for (int64_t d = 0; d < hd; d++) {
        double o = 0;
        for (int64_t j = 0; j <= i; j++)
            o += exp(sc[j] - mx) / z * rl_tensor_get(s.v, (bi * S + j) * H + h * hd + d);
        ck_assert_double_eq_tol(rl_tensor_get(s.o, (bi * S + i) * H + h * hd + d), o, 1e-5);
    }
    /* causal: position 0 attends only to itself */
    ck_assert_float_eq(rl_tensor_get(s.p, 0), 1.0f);
    ck_assert_float_eq(rl_tensor_get(s.p, 1), 0.0f);
    rl_tensor *dq = like(ctx, s.q, "dq"), *dk = like(ctx, s.q, "dk"), *dv = like(ctx, s.q, "dv");
    ck_assert_int_eq(rl_attention_backward(ctx, s.q, s.k, s.v, s.p, s.r, 2, dq, dk, dv), 0);
    fd_check("attention dq", at_f, &s, s.q, dq);
    fd_check("attention dk", at_f, &s, s.k, dk);
    fd_check("attention dv", at_f, &s, s.v, dv);
    rl_tensor *ts[] = { s.q, s.k, s.v, s.p, s.o, s.r, dq, dk, dv };
    for (int j = 0; j < 9; j++)
        rl_tensor_free(ts[j]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ losses, embedding, gather */

typedef struct { rl_ctx *ctx; rl_tensor *x, *t, *r, *y, *table; int *ids; int64_t *rows; float *scale; int op; } misc_st;
enum { OP_CE, OP_MSE, OP_EMB, OP_GATHER, OP_SCATTER };

static double misc_f(void *p)
{
    misc_st *s = p;
    float loss = 0;
    switch (s->op) {
    case OP_CE: ck_assert_int_eq(rl_cross_entropy(s->ctx, s->x, s->ids, 1.0f, NULL, &loss), 0); return loss;
    case OP_MSE: ck_assert_int_eq(rl_mse_loss(s->ctx, s->x, s->t, 1.0f, NULL, &loss), 0); return loss;
    case OP_EMB: ck_assert_int_eq(rl_embedding_forward(s->ctx, s->table, s->ids, 0, s->y), 0); break;
    case OP_GATHER: ck_assert_int_eq(rl_gather_rows(s->ctx, s->x, s->rows, s->scale, s->y), 0); break;
    default:
        ck_assert_int_eq(rl_zero(s->ctx, s->y), 0);
        ck_assert_int_eq(rl_scatter_add_rows(s->ctx, s->x, s->rows, s->scale, s->y), 0);
        break;
    }
    return weighted_sum(s->y, s->r);
}

START_TEST(test_losses_embedding_gather)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t sh[2] = { 6, 5 }, s3[2] = { 3, 5 };
    int ids[6] = { 4, 0, 2, 2, 1, 3 };
    int64_t rows[3] = { 5, 0, 5 };
    float scale[3] = { 0.5f, -1.0f, 2.0f };
    misc_st s = { ctx, rand_tensor(ctx, "x", RL_F32, 2, sh, NULL, 1, 1), rand_tensor(ctx, "t", RL_F32, 2, sh, NULL, 2, 1),
                  NULL, NULL, NULL, ids, rows, scale, OP_CE };
    rl_tensor *dx = like(ctx, s.x, "dx");
    float loss;
    /* cross-entropy: value against a double reference, then gradient */
    ck_assert_int_eq(rl_cross_entropy(ctx, s.x, ids, 1.0f, dx, &loss), 0);
    double ref = 0;
    for (int r = 0; r < 6; r++) {
        double z = 0;
        for (int j = 0; j < 5; j++)
            z += exp(rl_tensor_get(s.x, r * 5 + j));
        ref += log(z) - rl_tensor_get(s.x, r * 5 + ids[r]);
    }
    ck_assert_double_eq_tol(loss, ref / 6, 1e-5);
    fd_check("cross_entropy dlogits", misc_f, &s, s.x, dx);
    rl_tensor *dx2 = like(ctx, s.x, "dx2"); /* grad_scale scales the gradient only */
    ck_assert_int_eq(rl_cross_entropy(ctx, s.x, ids, 0.25f, dx2, &loss), 0);
    ck_assert_double_eq_tol(rl_tensor_get(dx2, 7), 0.25 * rl_tensor_get(dx, 7), 1e-7);
    s.op = OP_MSE;
    ck_assert_int_eq(rl_mse_loss(ctx, s.x, s.t, 1.0f, dx, &loss), 0);
    fd_check("mse dpred", misc_f, &s, s.x, dx);
    /* embedding: table [5 rows, 5] looked up by 6 ids */
    s.op = OP_EMB;
    s.table = s.t;
    int64_t se[2] = { 6, 5 };
    s.y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 2, se, NULL);
    s.r = rand_tensor(ctx, "r", RL_F32, 2, se, NULL, 3, 1);
    int ids5[6] = { 4, 0, 2, 2, 1, 4 };
    s.ids = ids5;
    rl_tensor *dt = like(ctx, s.t, "dt");
    ck_assert_int_eq(rl_embedding_backward(ctx, ids5, s.r, dt), 0);
    fd_check("embedding dtable", misc_f, &s, s.t, dt);
    /* gather 3 rows of x (one twice), scaled */
    s.op = OP_GATHER;
    rl_tensor *g = rl_tensor_new(ctx, "g", RL_F32, RL_MEM_OTHER, 2, s3, NULL), *gr = rand_tensor(ctx, "gr", RL_F32, 2, s3, NULL, 5, 1);
    rl_tensor_free(s.y);
    rl_tensor_free(s.r);
    s.y = g, s.r = gr;
    rl_zero(ctx, dx);
    ck_assert_int_eq(rl_scatter_add_rows(ctx, gr, rows, scale, dx), 0); /* the adjoint of gather */
    fd_check("gather_rows dsrc", misc_f, &s, s.x, dx);
    /* scatter-add rows of a [3,5] into a [6,5] */
    s.op = OP_SCATTER;
    rl_tensor *src = rand_tensor(ctx, "src", RL_F32, 2, s3, NULL, 6, 1), *dsrc = like(ctx, src, "dsrc");
    rl_tensor *big = like(ctx, s.x, "big"), *bigr = rand_tensor(ctx, "bigr", RL_F32, 2, sh, NULL, 7, 1);
    s.x = src, s.y = big, s.r = bigr;
    ck_assert_int_eq(rl_gather_rows(ctx, bigr, rows, scale, dsrc), 0);
    fd_check("scatter_add_rows dsrc", misc_f, &s, src, dsrc);
    rl_tensor *ts[] = { dx, dx2, s.t, dt, g, gr, src, dsrc, big, bigr };
    for (int i = 0; i < 10; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ elementwise */

START_TEST(test_elementwise)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t n[1] = { 10 };
    rl_tensor *a = rand_tensor(ctx, "a", RL_F32, 1, n, NULL, 1, 1), *b = rand_tensor(ctx, "b", RL_F32, 1, n, NULL, 2, 1);
    rl_tensor *o = like(ctx, a, "o"), *hb = rl_tensor_new(ctx, "hb", RL_BF16, RL_MEM_OTHER, 1, n, NULL);
    ck_assert_int_eq(rl_add(ctx, a, b, o), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_float_eq(rl_tensor_get(o, i), rl_tensor_get(a, i) + rl_tensor_get(b, i));
    ck_assert_int_eq(rl_residual_add(ctx, o, b, o), 0); /* aliasing */
    ck_assert_int_eq(rl_axpy(ctx, -2.0f, b, o), 0);
    for (int i = 0; i < 10; i++)
        ck_assert_float_eq_tol(rl_tensor_get(o, i), rl_tensor_get(a, i), 1e-6);
    ck_assert_int_eq(rl_scale(ctx, o, 3.0f), 0);
    ck_assert_float_eq_tol(rl_tensor_get(o, 4), 3 * rl_tensor_get(a, 4), 1e-6);
    ck_assert_int_eq(rl_copy(ctx, hb, a), 0);
    ck_assert_float_eq(rl_tensor_get(hb, 3), rl_round_bf16(rl_tensor_get(a, 3)));
    /* a slice (a view at an offset) is an ordinary operand */
    rl_tensor *sl = rl_tensor_slice(o, 4, 3);
    ck_assert_int_eq(rl_fill(ctx, sl, 7.0f), 0);
    ck_assert_float_eq(rl_tensor_get(o, 3), 3 * rl_tensor_get(a, 3));
    ck_assert_float_eq(rl_tensor_get(o, 4), 7.0f);
    ck_assert_float_eq(rl_tensor_get(o, 6), 7.0f);
    ck_assert_float_eq_tol(rl_tensor_get(o, 7), 3 * rl_tensor_get(a, 7), 1e-6);
    double sum, ss;
    ck_assert_int_eq(rl_sum(ctx, sl, &sum), 0);
    ck_assert_int_eq(rl_sum_squares(ctx, sl, &ss), 0);
    ck_assert_double_eq(sum, 21.0);
    ck_assert_double_eq(ss, 147.0);
    ck_assert_int_eq(rl_zero(ctx, o), 0);
    ck_assert_float_eq(rl_tensor_get(o, 5), 0.0f);
    /* several tensors zeroed as one kernel (f32 and bf16 alike): one trace event for all */
    rl_trace *tr = rl_ctx_trace(ctx);
    size_t n0 = tr->n;
    rl_tensor *many[] = { a, hb, b };
    ck_assert_int_eq(rl_zero_all(ctx, many, 3), 0);
    ck_assert_uint_eq(tr->n, n0 + 1);
    ck_assert_str_eq(tr->ev[n0].name, "zero_all");
    ck_assert_double_eq(tr->ev[n0].bytes, 4.0 * 10 + 2.0 * 10 + 4.0 * 10);
    for (int i = 0; i < 10; i++)
        ck_assert(rl_tensor_get(a, i) == 0.0f && rl_tensor_get(hb, i) == 0.0f && rl_tensor_get(b, i) == 0.0f);
    ck_assert_int_eq(rl_zero_all(ctx, many, 0), 0);
    ck_assert_int_eq(rl_zero_all(ctx, NULL, 2), RL_ERR_ARG);
    ck_assert_int_eq(rl_zero_all(ctx, many, -1), RL_ERR_ARG);
    rl_tensor *with_null[] = { a, NULL };
    ck_assert_int_eq(rl_zero_all(ctx, with_null, 2), RL_ERR_ARG);
    rl_tensor_free(sl);
    rl_tensor *ts[] = { a, b, o, hb };
    for (int i = 0; i < 4; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ optimizers */

START_TEST(test_adamw)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t n[1] = { 12 };
    rl_adamw_cfg cfg = { 0.01f, 0.9f, 0.95f, 1e-8f, 0.1f };
    rl_tensor *w = rand_tensor(ctx, "w", RL_F32, 1, n, NULL, 1, 1), *m = like(ctx, w, "m"), *v = like(ctx, w, "v");
    rl_tensor *g = rand_tensor(ctx, "g", RL_F32, 1, n, NULL, 2, 1);
    double W[12], M[12] = { 0 }, V[12] = { 0 };
    for (int i = 0; i < 12; i++)
        W[i] = rl_tensor_get(w, i);
    for (int step = 1; step <= 3; step++) {
        ck_assert_int_eq(rl_adamw_step(ctx, &cfg, step, w, g, NULL, m, v), 0);
        for (int i = 0; i < 12; i++) {
            double gi = rl_tensor_get(g, i);
            M[i] = 0.9 * M[i] + 0.1 * gi;
            V[i] = 0.95 * V[i] + 0.05 * gi * gi;
            double mh = M[i] / (1 - pow(0.9, step)), vh = V[i] / (1 - pow(0.95, step));
            W[i] -= 0.01 * (mh / (sqrt(vh) + 1e-8) + 0.1 * W[i]);
        }
    }
    for (int i = 0; i < 12; i++)
        ck_assert_double_eq_tol(rl_tensor_get(w, i), W[i], 1e-5);
    /* ZeRO-style: a bf16 param with f32 master, updated one half-shard at a time */
    rl_tensor *wb = rl_tensor_new(ctx, "wb", RL_BF16, RL_MEM_PARAM, 1, n, NULL), *gb = rl_tensor_new(ctx, "gb", RL_BF16, RL_MEM_GRAD, 1, n, NULL);
    rl_tensor *master = like(ctx, w, "master"), *m2 = like(ctx, w, "m2"), *v2 = like(ctx, w, "v2");
    rl_tensor_copy(gb, g);
    rl_tensor_copy(master, w);
    rl_tensor_copy(wb, master);
    for (int half = 0; half < 2; half++) {
        rl_tensor *sw = rl_tensor_slice(wb, half * 6, 6), *sg = rl_tensor_slice(gb, half * 6, 6);
        rl_tensor *sm = rl_tensor_slice(master, half * 6, 6), *s1 = rl_tensor_slice(m2, half * 6, 6), *s2 = rl_tensor_slice(v2, half * 6, 6);
        ck_assert_int_eq(rl_adamw_step(ctx, &cfg, 1, sw, sg, sm, s1, s2), 0);
        rl_tensor *ts[] = { sw, sg, sm, s1, s2 };
        for (int i = 0; i < 5; i++)
            rl_tensor_free(ts[i]);
    }
    for (int i = 0; i < 12; i++) {
        ck_assert_float_eq(rl_tensor_get(wb, i), rl_round_bf16(rl_tensor_get(master, i)));
        ck_assert(rl_tensor_get(master, i) != rl_tensor_get(w, i) || rl_tensor_get(g, i) == 0);
    }
    ck_assert_int_eq(rl_adamw_step(ctx, &cfg, 1, wb, gb, NULL, m2, v2), RL_ERR_ARG); /* bf16 without master */
    /* SGD */
    float w0 = rl_tensor_get(w, 2);
    ck_assert_int_eq(rl_sgd_step(ctx, 0.5f, w, g, NULL), 0);
    ck_assert_float_eq_tol(rl_tensor_get(w, 2), w0 - 0.5f * rl_tensor_get(g, 2), 1e-6);
    rl_tensor *ts[] = { w, m, v, g, wb, gb, master, m2, v2 };
    for (int i = 0; i < 9; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
}
END_TEST

Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_matmul_grad);
    tcase_add_test(tc, test_matmul_bf16_and_record);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_layer_grads);
    tcase_add_test(tc, test_layernorm_bf16);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_losses_embedding_gather);
    tcase_add_test(tc, test_elementwise);
    tcase_add_test(tc, test_adamw);
    suite_add_tcase(s, tc);
    return s;
}
