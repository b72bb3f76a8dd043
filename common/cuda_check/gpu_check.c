/* gpu_check.c — `make gpu-check`'s program (GPU machines only). On a one-rank --backend cuda
 * run it calls every op of ops.h through the ops API twice, on device tensors and on CPU
 * tensors holding the same values, and prints one table row per op and dtype: the max
 * relative error of the GPU result against the CPU reference, the tolerance and PASS/FAIL.
 * It also checks that the run's trace carries measured (CUDA-event) times, the device
 * transport's reduction (bitwise the sim's), and measures GEMM TFLOP/s against the hardware
 * profile's peak. Exits 0 when every check passes, 1 otherwise, 2 without a GPU.
 *
 * Tolerances (max |gpu − cpu| / max(|cpu|, floor)):
 *   f32 elementwise, bias, embedding/rows, optimizers: 1e-6 (the kernels repeat the CPU's f32
 *     operations in the CPU's order: these are expected to be exact);
 *   f32 LayerNorm, softmax, GeLU, attention, losses, sums: 1e-4 (expf/exp of the device
 *     library, tree-ordered double sums);
 *   f32 GEMM: 1e-4 with floor 1 (cuBLAS sums in another order than the CPU GEMM); GeLU: floor 1
 *     (see check_gelu);
 *   bf16 outputs: 1e-2 (one bf16 rounding step is 2^-8 ≈ 3.9e-3 relative). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend.h"
#include "bf16.h"
#include "cuda_backend.h"
#include "ops.h"
#include "ringlab.h"

typedef struct check {
    rl_ctx *cpu;          /* standalone context for the CPU references */
    rl_ctx *gpu;          /* the rank of the --backend cuda run */
    int rows, failed;
} check;

/* A CPU reference tensor and its GPU twin with the same values. */
typedef struct twin {
    rl_tensor *c, *g;
} twin;

static void row(check *k, const char *op, const char *dtype, const char *shape, double err, double tol)
{
    int ok = err <= tol; /* NaN fails */
    k->failed += !ok;
    k->rows++;
    printf("| %-28s | %-5s | %-22s | %11.2e | %8.0e | %-4s |\n", op, dtype, shape, err, tol, ok ? "PASS" : "FAIL");
    fflush(stdout);
}

/* Deterministic values in [lo, hi). */
static void values(float *v, int64_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 2654435761u + 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = lo + (hi - lo) * (float)((double)(s >> 11) / 9007199254740992.0);
    }
}

static twin make(check *k, const char *name, rl_dtype dt, int nd, int64_t s0, int64_t s1, int64_t s2, uint64_t seed,
                 float lo, float hi)
{
    int64_t shape[3] = { s0, s1, s2 };
    twin t = { rl_tensor_new(k->cpu, name, dt, RL_MEM_OTHER, nd, shape, NULL),
               rl_tensor_new(k->gpu, name, dt, RL_MEM_OTHER, nd, shape, NULL) };
    if (!t.c || !t.g) {
        fprintf(stderr, "gpu_check: could not allocate '%s': %s\n", name, rl_last_error(k->gpu));
        return t;
    }
    float *v = malloc((size_t)t.c->numel * sizeof(float));
    values(v, t.c->numel, seed, lo, hi);
    rl_tensor_from_f32(t.c, v, t.c->numel);
    rl_tensor_from_f32(t.g, v, t.g->numel);
    free(v);
    return t;
}

static void drop(twin *t)
{
    rl_tensor_free(t->c);
    rl_tensor_free(t->g);
    t->c = t->g = NULL;
}

/* Max relative error of the GPU twin against the CPU one; INFINITY when missing. */
static double err_of(const twin *t, double floor)
{
    return t->c && t->g ? rl_tensor_max_rel_diff(t->g, t->c, floor) : INFINITY;
}

static double worst(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a > b ? a : b); }

/* Both calls must succeed; otherwise the row gets INFINITY and the message is printed. */
static int both(check *k, const char *op, int rc_cpu, int rc_gpu)
{
    if (rc_cpu)
        fprintf(stderr, "gpu_check: %s on the CPU: %s\n", op, rl_last_error(k->cpu));
    if (rc_gpu)
        fprintf(stderr, "gpu_check: %s on the GPU: %s\n", op, rl_last_error(k->gpu));
    return !rc_cpu && !rc_gpu;
}

static double tol_for(rl_dtype dt, double f32_tol) { return dt == RL_BF16 ? 1e-2 : f32_tol; }

static double scalar_err(double g, double c, double floor) { return fabs(g - c) / fmax(fabs(c), floor); }

/* ------------------------------------------------------------------ the checks */

static void check_matmul(check *k, rl_dtype dt, rl_dtype bdt, int ta, int tb)
{
    int64_t m = 192, n = 320, kk = 256;
    twin a = ta ? make(k, "a", dt, 2, kk, m, 0, 1, -1, 1) : make(k, "a", dt, 2, m, kk, 0, 1, -1, 1);
    twin b = tb ? make(k, "b", bdt, 2, n, kk, 0, 2, -1, 1) : make(k, "b", bdt, 2, kk, n, 0, 2, -1, 1);
    twin c = make(k, "c", dt, 2, m, n, 0, 3, -1, 1);
    double e = INFINITY;
    if (both(k, "matmul", rl_matmul(k->cpu, a.c, ta, b.c, tb, c.c, 0.5f), rl_matmul(k->gpu, a.g, ta, b.g, tb, c.g, 0.5f)))
        e = err_of(&c, 1.0);
    char name[48];
    snprintf(name, sizeof name, "matmul%s%s%s", ta ? " aT" : "", tb ? " bT" : "", bdt != dt ? " (b bf16)" : "");
    row(k, name, rl_dtype_name(dt), "192x256 . 256x320 +.5c", e, tol_for(dt == bdt ? dt : RL_F32, 1e-4));
    drop(&a);
    drop(&b);
    drop(&c);
}

static void check_matmul_backward(check *k, rl_dtype dt)
{
    twin a = make(k, "a", dt, 2, 128, 96, 0, 4, -1, 1), b = make(k, "b", dt, 2, 96, 160, 0, 5, -1, 1);
    twin dc = make(k, "dc", dt, 2, 128, 160, 0, 6, -1, 1);
    twin da = make(k, "da", dt, 2, 128, 96, 0, 7, -1, 1), db = make(k, "db", dt, 2, 96, 160, 0, 8, -1, 1);
    double e = INFINITY;
    if (both(k, "matmul_backward", rl_matmul_backward(k->cpu, a.c, 0, b.c, 0, dc.c, da.c, 0.0f, db.c, 1.0f),
             rl_matmul_backward(k->gpu, a.g, 0, b.g, 0, dc.g, da.g, 0.0f, db.g, 1.0f)))
        e = worst(err_of(&da, 1.0), err_of(&db, 1.0));
    row(k, "matmul_backward (da, db+=)", rl_dtype_name(dt), "128x96 . 96x160", e, tol_for(dt, 1e-4));
    drop(&a);
    drop(&b);
    drop(&dc);
    drop(&da);
    drop(&db);
}

/* Elementwise ops: 0 add, 1 residual_add, 2 axpy, 3 scale, 4 copy (to the other dtype), 5 fill, 6 zero. */
static void check_lincomb(check *k, rl_dtype dt, int which)
{
    static const char *const names[] = { "add", "residual_add", "axpy", "scale", "copy (to other dtype)", "fill",
                                         "zero" };
    twin x = make(k, "x", dt, 2, 64, 1000, 0, 9, -2, 2), y = make(k, "y", dt, 2, 64, 1000, 0, 10, -2, 2);
    twin o = make(k, "o", which == 4 ? (dt == RL_F32 ? RL_BF16 : RL_F32) : dt, 2, 64, 1000, 0, 11, -2, 2);
    int rc = -1, rg = -1;
    switch (which) {
    case 0: rc = rl_add(k->cpu, x.c, y.c, o.c), rg = rl_add(k->gpu, x.g, y.g, o.g); break;
    case 1: rc = rl_residual_add(k->cpu, x.c, y.c, o.c), rg = rl_residual_add(k->gpu, x.g, y.g, o.g); break;
    case 2: rc = rl_axpy(k->cpu, 0.75f, x.c, o.c), rg = rl_axpy(k->gpu, 0.75f, x.g, o.g); break;
    case 3: rc = rl_scale(k->cpu, o.c, -1.5f), rg = rl_scale(k->gpu, o.g, -1.5f); break;
    case 4: rc = rl_copy(k->cpu, o.c, x.c), rg = rl_copy(k->gpu, o.g, x.g); break;
    case 5: rc = rl_fill(k->cpu, o.c, 0.3f), rg = rl_fill(k->gpu, o.g, 0.3f); break;
    default: rc = rl_zero(k->cpu, o.c), rg = rl_zero(k->gpu, o.g); break;
    }
    double e = both(k, names[which], rc, rg) ? err_of(&o, 1e-3) : INFINITY;
    row(k, names[which], rl_dtype_name(dt), "64x1000", e, tol_for(o.c ? o.c->dtype : dt, 1e-6));
    drop(&x);
    drop(&y);
    drop(&o);
}

static void check_sums(check *k, rl_dtype dt)
{
    twin x = make(k, "x", dt, 1, 1000003, 0, 0, 12, -1, 1);
    double sc = 0, sg = 0, qc = 0, qg = 0;
    double e1 = both(k, "sum", rl_sum(k->cpu, x.c, &sc), rl_sum(k->gpu, x.g, &sg)) ? scalar_err(sg, sc, 1.0) : INFINITY;
    double e2 = both(k, "sum_squares", rl_sum_squares(k->cpu, x.c, &qc), rl_sum_squares(k->gpu, x.g, &qg))
                    ? scalar_err(qg, qc, 1.0) : INFINITY;
    row(k, "sum", rl_dtype_name(dt), "1000003", e1, 1e-9);
    row(k, "sum_squares", rl_dtype_name(dt), "1000003", e2, 1e-9);
    drop(&x);
}

static void check_bias(check *k, rl_dtype dt)
{
    twin y = make(k, "y", dt, 2, 300, 257, 0, 13, -1, 1), b = make(k, "b", dt, 1, 257, 0, 0, 14, -1, 1);
    twin db = make(k, "db", dt, 1, 257, 0, 0, 15, -1, 1);
    double e = both(k, "bias_add", rl_bias_add(k->cpu, y.c, b.c), rl_bias_add(k->gpu, y.g, b.g)) ? err_of(&y, 1e-3)
                                                                                                   : INFINITY;
    row(k, "bias_add", rl_dtype_name(dt), "300x257 + 257", e, tol_for(dt, 1e-6));
    e = both(k, "bias_bwd", rl_bias_backward(k->cpu, y.c, db.c), rl_bias_backward(k->gpu, y.g, db.g))
            ? err_of(&db, 1e-3) : INFINITY;
    row(k, "bias_bwd (db +=)", rl_dtype_name(dt), "300x257 -> 257", e, tol_for(dt, 1e-6));
    drop(&y);
    drop(&b);
    drop(&db);
}

static void check_gelu(check *k, rl_dtype dt)
{
    twin x = make(k, "x", dt, 2, 64, 1000, 0, 16, -4, 4), dy = make(k, "dy", dt, 2, 64, 1000, 0, 17, -1, 1);
    twin y = make(k, "y", dt, 2, 64, 1000, 0, 18, 0, 1);
    /* floor 1 (|y| is up to 4): for x < 0, y = x·(1 + tanh(u))/2 cancels, so the last-ulp
     * difference between the device's and glibc's expf (inside tanh) is ~1e-7 absolute but
     * looks like 4e-4 relative to a tiny y (seen on an H200) */
    double e = both(k, "gelu", rl_gelu_forward(k->cpu, x.c, y.c), rl_gelu_forward(k->gpu, x.g, y.g))
                   ? err_of(&y, 1.0) : INFINITY;
    row(k, "gelu", rl_dtype_name(dt), "64x1000", e, tol_for(dt, 1e-4));
    e = both(k, "gelu_bwd", rl_gelu_backward(k->cpu, x.c, dy.c, y.c), rl_gelu_backward(k->gpu, x.g, dy.g, y.g))
            ? err_of(&y, 1.0) : INFINITY;
    row(k, "gelu_bwd", rl_dtype_name(dt), "64x1000", e, tol_for(dt, 1e-4));
    drop(&x);
    drop(&dy);
    drop(&y);
}

static void check_layernorm(check *k, rl_dtype dt)
{
    int64_t R = 200, N = 384;
    twin x = make(k, "x", dt, 2, R, N, 0, 19, -2, 3), g = make(k, "g", dt, 1, N, 0, 0, 20, 0.5f, 1.5f);
    twin b = make(k, "b", dt, 1, N, 0, 0, 21, -0.5f, 0.5f), y = make(k, "y", dt, 2, R, N, 0, 22, 0, 1);
    twin mu = make(k, "mean", RL_F32, 1, R, 0, 0, 23, 0, 1), rs = make(k, "rstd", RL_F32, 1, R, 0, 0, 24, 0, 1);
    twin dy = make(k, "dy", dt, 2, R, N, 0, 25, -1, 1), dx = make(k, "dx", dt, 2, R, N, 0, 26, 0, 1);
    twin dg = make(k, "dg", dt, 1, N, 0, 0, 27, -1, 1), dbt = make(k, "dbt", dt, 1, N, 0, 0, 28, -1, 1);
    double e = INFINITY;
    if (both(k, "layernorm", rl_layernorm_forward(k->cpu, x.c, g.c, b.c, 1e-5f, y.c, mu.c, rs.c),
             rl_layernorm_forward(k->gpu, x.g, g.g, b.g, 1e-5f, y.g, mu.g, rs.g)))
        e = worst(err_of(&y, 1e-2), worst(err_of(&mu, 1e-2), err_of(&rs, 1e-2)));
    row(k, "layernorm (y, mean, rstd)", rl_dtype_name(dt), "200x384", e, tol_for(dt, 1e-4));
    e = INFINITY;
    /* the backward from the CPU's saved statistics on both sides */
    rl_tensor_copy(mu.g, mu.c);
    rl_tensor_copy(rs.g, rs.c);
    if (both(k, "layernorm_bwd", rl_layernorm_backward(k->cpu, x.c, g.c, mu.c, rs.c, dy.c, dx.c, dg.c, dbt.c),
             rl_layernorm_backward(k->gpu, x.g, g.g, mu.g, rs.g, dy.g, dx.g, dg.g, dbt.g)))
        e = worst(err_of(&dx, 1e-2), worst(err_of(&dg, 1e-2), err_of(&dbt, 1e-2)));
    row(k, "layernorm_bwd (dx, dg+=, db+=)", rl_dtype_name(dt), "200x384", e, tol_for(dt, 1e-4));
    twin *all[] = { &x, &g, &b, &y, &mu, &rs, &dy, &dx, &dg, &dbt };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        drop(all[i]);
}

static void check_softmax(check *k, rl_dtype dt)
{
    twin x = make(k, "x", dt, 2, 128, 500, 0, 29, -5, 5), y = make(k, "y", dt, 2, 128, 500, 0, 30, 0, 1);
    twin dy = make(k, "dy", dt, 2, 128, 500, 0, 31, -1, 1), dx = make(k, "dx", dt, 2, 128, 500, 0, 32, 0, 1);
    double e = both(k, "softmax", rl_softmax_forward(k->cpu, x.c, y.c), rl_softmax_forward(k->gpu, x.g, y.g))
                   ? err_of(&y, 1e-6) : INFINITY;
    row(k, "softmax", rl_dtype_name(dt), "128x500", e, tol_for(dt, 1e-4));
    e = both(k, "softmax_bwd", rl_softmax_backward(k->cpu, y.c, dy.c, dx.c), rl_softmax_backward(k->gpu, y.g, dy.g, dx.g))
            ? err_of(&dx, 1e-4) : INFINITY;
    row(k, "softmax_bwd", rl_dtype_name(dt), "128x500", e, tol_for(dt, 1e-4));
    e = both(k, "softmax in place", rl_softmax_forward(k->cpu, x.c, x.c), rl_softmax_forward(k->gpu, x.g, x.g))
            ? err_of(&x, 1e-6) : INFINITY;
    row(k, "softmax (in place)", rl_dtype_name(dt), "128x500", e, tol_for(dt, 1e-4));
    drop(&x);
    drop(&y);
    drop(&dy);
    drop(&dx);
}

static void check_attention(check *k, rl_dtype dt)
{
    int64_t B = 2, S = 96, H = 128;
    int nh = 4;
    twin q = make(k, "q", dt, 3, B, S, H, 33, -1, 1), kk = make(k, "k", dt, 3, B, S, H, 34, -1, 1);
    twin v = make(k, "v", dt, 3, B, S, H, 35, -1, 1), o = make(k, "o", dt, 3, B, S, H, 36, 0, 1);
    int64_t ps[4] = { B, nh, S, S };
    twin p = { rl_tensor_new(k->cpu, "probs", RL_F32, RL_MEM_OTHER, 4, ps, NULL),
               rl_tensor_new(k->gpu, "probs", RL_F32, RL_MEM_OTHER, 4, ps, NULL) };
    twin dO = make(k, "dout", dt, 3, B, S, H, 37, -1, 1);
    twin dq = make(k, "dq", dt, 3, B, S, H, 38, 0, 1), dk = make(k, "dk", dt, 3, B, S, H, 39, 0, 1);
    twin dv = make(k, "dv", dt, 3, B, S, H, 40, 0, 1);
    double e = INFINITY;
    if (both(k, "attention", rl_attention_forward(k->cpu, q.c, kk.c, v.c, nh, p.c, o.c),
             rl_attention_forward(k->gpu, q.g, kk.g, v.g, nh, p.g, o.g)))
        e = worst(err_of(&o, 1e-2), err_of(&p, 1e-6));
    row(k, "attention (out, probs)", rl_dtype_name(dt), "b2 s96 h128 4 heads", e, tol_for(dt, 1e-4));
    e = INFINITY;
    rl_tensor_copy(p.g, p.c); /* the backward from the CPU's probabilities on both sides */
    if (both(k, "attention_bwd", rl_attention_backward(k->cpu, q.c, kk.c, v.c, p.c, dO.c, nh, dq.c, dk.c, dv.c),
             rl_attention_backward(k->gpu, q.g, kk.g, v.g, p.g, dO.g, nh, dq.g, dk.g, dv.g)))
        e = worst(err_of(&dq, 1e-2), worst(err_of(&dk, 1e-2), err_of(&dv, 1e-2)));
    row(k, "attention_bwd (dq, dk, dv)", rl_dtype_name(dt), "b2 s96 h128 4 heads", e, tol_for(dt, 1e-4));
    twin *all[] = { &q, &kk, &v, &o, &p, &dO, &dq, &dk, &dv };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        drop(all[i]);
}

static void check_rows(check *k, rl_dtype dt)
{
    enum { V = 50, N = 300, H = 72 };
    int ids[N];
    int64_t rows[N];
    float scale[N];
    for (int i = 0; i < N; i++) {
        ids[i] = (i * 7 + 3) % V; /* repeats: the backward adds several rows into one */
        rows[i] = (i * 11 + 5) % V;
        scale[i] = 0.25f + (float)(i % 5) * 0.5f;
    }
    twin table = make(k, "table", dt, 2, V, H, 0, 41, -1, 1), out = make(k, "out", dt, 2, N, H, 0, 42, -1, 1);
    twin dtab = make(k, "dtable", dt, 2, V, H, 0, 43, -1, 1);
    double e = both(k, "embedding", rl_embedding_forward(k->cpu, table.c, ids, 1, out.c),
                    rl_embedding_forward(k->gpu, table.g, ids, 1, out.g)) ? err_of(&out, 1e-3) : INFINITY;
    row(k, "embedding (accumulate)", rl_dtype_name(dt), "50x72 -> 300 rows", e, tol_for(dt, 1e-6));
    e = both(k, "embedding_bwd", rl_embedding_backward(k->cpu, ids, out.c, dtab.c),
             rl_embedding_backward(k->gpu, ids, out.g, dtab.g)) ? err_of(&dtab, 1e-3) : INFINITY;
    row(k, "embedding_bwd (repeated ids)", rl_dtype_name(dt), "300 rows -> 50x72", e, tol_for(dt, 1e-6));
    e = both(k, "gather_rows", rl_gather_rows(k->cpu, table.c, rows, scale, out.c),
             rl_gather_rows(k->gpu, table.g, rows, scale, out.g)) ? err_of(&out, 1e-3) : INFINITY;
    row(k, "gather_rows (scaled)", rl_dtype_name(dt), "50x72 -> 300 rows", e, tol_for(dt, 1e-6));
    e = both(k, "scatter_add_rows", rl_scatter_add_rows(k->cpu, out.c, rows, scale, table.c),
             rl_scatter_add_rows(k->gpu, out.g, rows, scale, table.g)) ? err_of(&table, 1e-3) : INFINITY;
    row(k, "scatter_add_rows (repeats)", rl_dtype_name(dt), "300 rows -> 50x72", e, tol_for(dt, 1e-6));
    drop(&table);
    drop(&out);
    drop(&dtab);
}

static void check_losses(check *k, rl_dtype dt)
{
    enum { R = 256, V = 1000 };
    int targets[R];
    for (int i = 0; i < R; i++)
        targets[i] = (i * 37 + 11) % V;
    twin l = make(k, "logits", dt, 2, R, V, 0, 44, -4, 4), dl = make(k, "dlogits", dt, 2, R, V, 0, 45, 0, 1);
    float lc = 0, lg = 0;
    double e = INFINITY;
    if (both(k, "cross_entropy", rl_cross_entropy(k->cpu, l.c, targets, 0.5f, dl.c, &lc),
             rl_cross_entropy(k->gpu, l.g, targets, 0.5f, dl.g, &lg)))
        e = worst(scalar_err(lg, lc, 1e-3), err_of(&dl, 1e-6));
    row(k, "cross_entropy (loss, dlogits)", rl_dtype_name(dt), "256x1000", e, tol_for(dt, 1e-4));
    twin p = make(k, "pred", dt, 2, 300, 40, 0, 46, -1, 1), t = make(k, "target", dt, 2, 300, 40, 0, 47, -1, 1);
    twin dp = make(k, "dpred", dt, 2, 300, 40, 0, 48, 0, 1);
    e = INFINITY;
    if (both(k, "mse_loss", rl_mse_loss(k->cpu, p.c, t.c, 2.0f, dp.c, &lc), rl_mse_loss(k->gpu, p.g, t.g, 2.0f, dp.g, &lg)))
        e = worst(scalar_err(lg, lc, 1e-3), err_of(&dp, 1e-6));
    row(k, "mse_loss (loss, dpred)", rl_dtype_name(dt), "300x40", e, tol_for(dt, 1e-4));
    drop(&l);
    drop(&dl);
    drop(&p);
    drop(&t);
    drop(&dp);
}

/* AdamW / SGD: param dtype pdt (bf16 uses an f32 master), grads of the same dtype. */
static void check_optim(check *k, rl_dtype pdt, int sgd)
{
    int64_t n = 100003;
    twin p = make(k, "p", pdt, 1, n, 0, 0, 49, -1, 1), g = make(k, "g", pdt, 1, n, 0, 0, 50, -1, 1);
    twin m = make(k, "m", RL_F32, 1, n, 0, 0, 51, -0.1f, 0.1f), v = make(k, "v", RL_F32, 1, n, 0, 0, 52, 0, 0.01f);
    twin w = { NULL, NULL };
    if (pdt == RL_BF16) {
        w = make(k, "master", RL_F32, 1, n, 0, 0, 53, -1, 1);
        rl_tensor_copy(w.c, p.c);
        rl_tensor_copy(w.g, p.g);
    }
    rl_adamw_cfg cfg = rl_adamw_defaults();
    cfg.weight_decay = 0.01f;
    double e = INFINITY;
    int rc = 0, rg = 0;
    for (int step = 1; step <= 3 && !rc && !rg; step++) {
        rc = sgd ? rl_sgd_step(k->cpu, 0.05f, p.c, g.c, w.c) : rl_adamw_step(k->cpu, &cfg, step, p.c, g.c, w.c, m.c, v.c);
        rg = sgd ? rl_sgd_step(k->gpu, 0.05f, p.g, g.g, w.g) : rl_adamw_step(k->gpu, &cfg, step, p.g, g.g, w.g, m.g, v.g);
    }
    if (both(k, sgd ? "sgd" : "adamw", rc, rg)) {
        e = err_of(&p, 1e-3);
        if (!sgd)
            e = worst(e, worst(err_of(&m, 1e-3), err_of(&v, 1e-6)));
        if (w.c)
            e = worst(e, err_of(&w, 1e-3));
    }
    row(k, sgd ? "sgd (3 steps)" : "adamw (3 steps; p, m, v)", rl_dtype_name(pdt),
        pdt == RL_BF16 ? "100003, f32 master" : "100003", e, tol_for(pdt, 1e-6));
    drop(&p);
    drop(&g);
    drop(&m);
    drop(&v);
    drop(&w);
}

/* Ops on tensors of the wrong device are refused with a message, not run. */
static void check_refusals(check *k)
{
    twin a = make(k, "a", RL_F32, 1, 16, 0, 0, 54, -1, 1);
    int rc = rl_add(k->gpu, a.g, a.c, a.g); /* one GPU and one CPU input */
    row(k, "mixed devices refused", "f32", "16", rc == RL_ERR_ARG ? 0.0 : 1.0, 0);
    drop(&a);
}

/* ------------------------------------------------------------------ the run */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rank_fn(rl_ctx *ctx, void *arg)
{
    check *k = arg;
    k->gpu = ctx;
    printf("| %-28s | %-5s | %-22s | %11s | %8s | %-4s |\n", "op vs CPU reference", "dtype", "shape", "max rel err",
           "tol", "");
    printf("|------------------------------|-------|------------------------|-------------|----------|------|\n");
    rl_step_begin(ctx, 0);
    for (int dt = 0; dt < 2; dt++) {
        for (int t = 0; t < 4; t++)
            check_matmul(k, (rl_dtype)dt, (rl_dtype)dt, t & 1, t >> 1);
        check_matmul_backward(k, (rl_dtype)dt);
    }
    check_matmul(k, RL_F32, RL_BF16, 0, 1);
    for (int dt = 0; dt < 2; dt++) {
        for (int w = 0; w < 7; w++)
            check_lincomb(k, (rl_dtype)dt, w);
        check_sums(k, (rl_dtype)dt);
        check_bias(k, (rl_dtype)dt);
        check_gelu(k, (rl_dtype)dt);
        check_layernorm(k, (rl_dtype)dt);
        check_softmax(k, (rl_dtype)dt);
        check_attention(k, (rl_dtype)dt);
        check_rows(k, (rl_dtype)dt);
        check_losses(k, (rl_dtype)dt);
        check_optim(k, (rl_dtype)dt, 0);
        check_optim(k, (rl_dtype)dt, 1);
    }
    check_refusals(k);
    rl_step_end(ctx);
    return 0;
}

/* The trace of the run: every op of rank 0 has a measured span inside the run. */
static void check_trace(check *k, const rl_trace *t, double run_s)
{
    size_t n = 0, bad = 0, timed = 0;
    for (size_t i = 0; t && i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->cat != RL_CAT_COMPUTE)
            continue;
        n++;
        if (!(e->vstart >= 0 && e->vend >= e->vstart && e->vend <= run_s + 1.0))
            bad++;
        if (e->vend > e->vstart)
            timed++;
    }
    printf("\ntrace: %zu op events; %zu with a measured duration > 0; %zu outside [0, %.2f s]\n", n, timed, bad, run_s);
    char shape[40];
    snprintf(shape, sizeof shape, "%zu events", n);
    row(k, "trace times from CUDA events", "-", shape, n && timed && !bad ? 0.0 : 1.0, 0);
}

/* The device transport's reduction against the sim's host order: bitwise equal. */
static void check_reduce(check *k, rl_cuda_rank *g, rl_dtype dt)
{
    enum { N = 4, L = 100003 };
    float *h = malloc(sizeof(float) * L * (N + 1));
    void *d[N + 1] = { 0 };
    char err[300] = "";
    size_t es = rl_dtype_size(dt);
    int ok = h != NULL;
    rl_tensor *tmp = rl_tensor_new(k->cpu, "t", dt, RL_MEM_OTHER, 1, (int64_t[]){ L }, NULL);
    for (int q = 0; q < N && ok; q++) {
        values(h + (size_t)q * L, L, 60 + (uint64_t)q, -1, 1);
        rl_tensor_from_f32(tmp, h + (size_t)q * L, L);
        rl_tensor_to_f32(tmp, h + (size_t)q * L, L); /* rounded to dt */
        ok = (d[q] = rl_cuda_malloc(g, L * (int64_t)es, err, sizeof err)) &&
             !rl_cuda_memcpy(g, 0, d[q], rl_tensor_host_data(tmp), L * (int64_t)es, err, sizeof err);
    }
    ok = ok && (d[N] = rl_cuda_malloc(g, L * (int64_t)es, err, sizeof err));
    double e = INFINITY;
    if (ok && !rl_cuda_reduce(g, 0, (int)dt, 0, N, (const void *const *)d, d[N], 0, L, err, sizeof err) &&
        !rl_cuda_memcpy(g, 0, rl_tensor_host_data(tmp), d[N], L * (int64_t)es, err, sizeof err)) {
        e = 0;
        for (int64_t i = 0; i < L; i++) { /* the sim's order: ((s0 + s1) + s2) + s3 in f32, then rounded */
            float acc = h[i];
            for (int q = 1; q < N; q++)
                acc += h[(size_t)q * L + i];
            float want = dt == RL_BF16 ? rl_bf16_to_f32(rl_f32_to_bf16(acc)) : acc;
            if (rl_tensor_get(tmp, i) != want)
                e = fmax(e, scalar_err(rl_tensor_get(tmp, i), want, 1e-30));
        }
    }
    if (err[0])
        fprintf(stderr, "gpu_check: transport reduce: %s\n", err);
    row(k, "transport reduce (sum, 4)", rl_dtype_name(dt), "100003", e, 0);
    for (int q = 0; q <= N; q++)
        rl_cuda_free(d[q]);
    rl_tensor_free(tmp);
    free(h);
}

int main(void)
{
    char why[320], name[160], err[300] = "";
    int n = rl_cuda_device_count(why, sizeof why);
    if (n < 1) {
        fprintf(stderr, "gpu_check: %s\n", why);
        return 2;
    }
    check k;
    memset(&k, 0, sizeof k);
    k.cpu = rl_ctx_new_standalone(NULL, 1);
    printf("## GPU 0 of %d: %s\n\n", n, rl_cuda_device_name(0, name, sizeof name));

    /* every op through the ops API on a one-rank --backend cuda run */
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = 1;
    o.backend = RL_BACKEND_CUDA;
    o.quiet = 1;
    rl_trace *tr = NULL;
    double t0 = now_s();
    int rc = rl_launch(&o, rank_fn, &k, &tr);
    double run_s = now_s() - t0;
    if (rc) {
        printf("\nthe --backend cuda run failed: %s\n", rl_status_name(rc));
        k.failed++;
    } else {
        check_trace(&k, tr, run_s);
    }
    rl_trace_free(tr);

    rl_cuda_rank *g = rl_cuda_rank_new(0, err, sizeof err);
    if (!g) {
        fprintf(stderr, "gpu_check: %s\n", err);
        return 1;
    }
    check_reduce(&k, g, RL_F32);
    check_reduce(&k, g, RL_BF16);

    const rl_hw *hw = rl_hw_default();
    printf("\n| GEMM (cuBLAS, f32 accumulate) | TFLOP/s | of %s peak | of the best measured |\n|---|---|---|---|\n",
           hw->name);
    static const int64_t sizes[] = { 2048, 4096, 8192 };
    for (int dt = 1; dt >= 0; dt--) {
        double t[3], best = 0;
        for (int i = 0; i < 3; i++) {
            t[i] = rl_cuda_gemm_tflops(g, dt, sizes[i], dt ? 20 : 5, err, sizeof err);
            best = t[i] > best ? t[i] : best;
        }
        double peak = rl_hw_peak_flops(hw, (rl_dtype)dt) / 1e12;
        for (int i = 0; i < 3; i++)
            printf("| %s %lld^3 | %.1f | %.0f%% of %.0f | %.0f%% of %.1f |\n", dt ? "bf16" : "f32",
                   (long long)sizes[i], t[i], peak > 0 ? 100.0 * t[i] / peak : 0.0, peak,
                   best > 0 ? 100.0 * t[i] / best : 0.0, best);
    }
    printf("(random inputs in [-1, 1); the profile's peaks are datasheet figures of %s: dense bf16 on tensor "
           "cores, f32 without; an H200 has the H100's compute)\n", hw->name);
    rl_cuda_rank_free(g);
    rl_ctx_free_standalone(k.cpu);
    printf("\ngpu_check: %d checks, %d failed: %s\n", k.rows, k.failed,
           k.failed ? "SOME CHECKS FAILED" : "every op within tolerance");
    return k.failed ? 1 : 0;
}
