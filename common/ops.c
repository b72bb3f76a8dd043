/* ops.c — op plumbing (checks, f32 staging, cost records), GEMM, elementwise ops, losses
 * and optimizers on the CPU. Layer kernels (LayerNorm, GeLU, attention ...) are in ops_nn.c. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "bf16.h"
#include "err.h"
#include "backend.h"
#include "internal.h"
#include "ops_internal.h"
#include "stream.h"
#ifdef RL_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* ------------------------------------------------------------------ plumbing */

rl_ctx *ops_ctx(rl_ctx *ctx, const rl_tensor *t) { return ctx ? ctx : (t ? t->ctx : NULL); }

int ops_check(rl_ctx *ctx, const char *op, int n, const rl_tensor *const *ts, int allow_null)
{
    const rl_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (allow_null)
                continue;
            return rl_error(ctx, RL_ERR_ARG, "%s: tensor argument %d is NULL; pass an allocated tensor", op, i + 1);
        }
        /* GPU backend (issue 6): one device per op, and a device op needs a rank with a GPU */
        if (first && ts[i]->device != first->device)
            return rl_error(ctx, RL_ERR_ARG,
                            "%s: tensor '%s' is on the %s but '%s' is on the %s; an op needs all its tensors on "
                            "one device (a --backend cuda run allocates them on its GPU)",
                            op, first->name, first->device == RL_CUDA ? "GPU" : "CPU", ts[i]->name,
                            ts[i]->device == RL_CUDA ? "GPU" : "CPU");
        if (!first)
            first = ts[i];
        if (ts[i]->device == RL_CUDA && !rl_backend_has_gpu(ctx ? ctx : ts[i]->ctx)) {
            char why[200];
            rl_backend_no_gpu_reason(ctx ? ctx : ts[i]->ctx, why, sizeof why);
            return rl_error(ctx, RL_ERR_UNSUPPORTED, "%s: tensor '%s' is on the GPU, but %s; run with --backend sim",
                            op, ts[i]->name, why);
        }
    }
    return 0;
}

int ops_gpu(const rl_tensor *t)
{
#ifdef RL_FAKE_CUDA /* the emulated GPU's memory is host memory: the CPU kernels run on it */
    (void)t;
    return 0;
#else
    return t && t->device == RL_CUDA;
#endif
}

void *ops_host(const rl_tensor *t)
{
#ifdef RL_FAKE_CUDA
    return rl_tensor_data(t);
#else
    return rl_tensor_host_data(t);
#endif
}

void ops_gpu_begin(rl_ctx *ctx, const char *name) { rl_backend_op_begin(ctx, name); }

double ops_wall(rl_ctx *ctx) { return ctx ? rl_wall_now(ctx) : 0.0; }

void ops_record(rl_ctx *ctx, const char *name, rl_dtype dtype, double flops, double bytes,
                double wall_start, int nin, const rl_tensor *const *in, int nout,
                const rl_tensor *const *out)
{
    if (!ctx)
        return;
    char shapes[512];
    int k = 0;
    shapes[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? nout : nin;
        const rl_tensor *const *ts = pass ? out : in;
        if (pass && k < (int)sizeof shapes)
            k += snprintf(shapes + k, sizeof shapes - (size_t)k, " ->");
        for (int i = 0; i < n && k < (int)sizeof shapes - 2; i++) {
            if (!ts[i])
                continue;
            if (k > 0)
                shapes[k++] = ' ';
            rl_tensor_describe(ts[i], shapes + k, (int)sizeof shapes - k);
            k += (int)strlen(shapes + k);
        }
    }
    rl_compute_record(ctx, name, dtype, flops, bytes, shapes, wall_start);
}

const float *ops_in(const rl_tensor *t, ops_buf *b)
{
    b->owned = 0;
    b->p = NULL;
    if (t->dtype == RL_F32)
        return b->p = ops_host(t);
    b->p = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (!b->p)
        return NULL;
    b->owned = 1;
    rl_tensor_to_f32(t, b->p, t->numel);
    return b->p;
}

float *ops_out(const rl_tensor *t, ops_buf *b, int load)
{
    b->owned = 0;
    if (t->dtype == RL_F32)
        return b->p = ops_host(t);
    b->p = load ? malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float))
                : calloc((size_t)(t->numel > 0 ? t->numel : 1), sizeof(float));
    if (!b->p)
        return NULL;
    b->owned = 1;
    if (load)
        rl_tensor_to_f32(t, b->p, t->numel);
    return b->p;
}

void ops_commit(rl_tensor *t, ops_buf *b)
{
    if (b->owned) {
        rl_tensor_from_f32(t, b->p, t->numel);
        free(b->p);
    }
    b->p = NULL;
    b->owned = 0;
}

void ops_release(ops_buf *b)
{
    if (b->owned)
        free(b->p);
    b->p = NULL;
    b->owned = 0;
}

const float *ops_stage_in(ops_stage *s, const rl_tensor *t)
{
    if (!t)
        return NULL;
    const float *p = ops_in(t, &s->b[s->n]);
    s->out[s->n++] = NULL;
    s->failed |= !p;
    return p;
}

float *ops_stage_out(ops_stage *s, rl_tensor *t, int load)
{
    if (!t)
        return NULL;
    float *p = ops_out(t, &s->b[s->n], load);
    s->out[s->n++] = t;
    s->failed |= !p;
    return p;
}

void ops_stage_done(ops_stage *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->out[i])
            ops_commit(s->out[i], &s->b[i]);
        else
            ops_release(&s->b[i]);
    s->n = 0;
}

int ops_stage_nomem(rl_ctx *ctx, const char *op, ops_stage *s)
{
    for (int i = 0; i < s->n; i++)
        ops_release(&s->b[i]);
    s->n = 0;
    return ops_nomem(ctx, op);
}

void ops_matrix_dims(const rl_tensor *t, int64_t *rows, int64_t *cols)
{
    *cols = t->shape[t->ndim - 1];
    *rows = *cols ? t->numel / *cols : 0;
}

int ops_nomem(rl_ctx *ctx, const char *op)
{
    return rl_rank_out_of_memory(ctx, "%s: no host memory left for its f32 staging buffers", op);
}

int ops_numel_mismatch(rl_ctx *ctx, const char *op, const rl_tensor *a, const rl_tensor *b)
{
    char sa[128], sb[128];
    return rl_error(ctx, RL_ERR_ARG, "%s: %s and %s must have the same number of elements (%lld vs %lld)",
                    op, rl_tensor_describe(a, sa, sizeof sa), rl_tensor_describe(b, sb, sizeof sb),
                    (long long)a->numel, (long long)b->numel);
}

double ops_bytes(int n, const rl_tensor *const *ts)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        if (ts[i])
            s += (double)rl_tensor_bytes(ts[i]);
    return s;
}

/* ------------------------------------------------------------------ GEMM */

#ifdef RL_HAVE_OPENBLAS
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
/* Ranks are threads: each rank's GEMM runs on one BLAS thread. */
static void blas_single_thread(void) { openblas_set_num_threads(1); }

/* OpenBLAS allocates GEMM work buffers (128 MiB of address space each) as it finds it needs
 * them and retries for ever when such an allocation fails: under ulimit -v a run then hung in
 * it, at limits that depend on which GEMMs ran on which threads. So under an address-space limit
 * (and only there) the GEMMs take the plain loop below, which allocates nothing. */
static int blas_usable(void)
{
    struct rlimit lim;
    return getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY;
}
#endif

/* c[j] += a·b[j] for j < n. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize")))
#endif
static void axpy(float *restrict c, const float *restrict b, float a, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        c[j] += a * b[j];
}

/* Four rows at once: c_r[j] += a_r·b[j] (b is read once for the four). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize")))
#endif
static void axpy4(float *restrict c0, float *restrict c1, float *restrict c2, float *restrict c3,
                  const float *restrict b, const float a[4], int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        float bj = b[j];
        c0[j] += a[0] * bj;
        c1[j] += a[1] * bj;
        c2[j] += a[2] * bj;
        c3[j] += a[3] * bj;
    }
}

/* Row-major C[m,n] = op(A)·op(B) + beta·C with leading dimensions lda, ldb, ldc. */
static void sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                  const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
#ifdef RL_HAVE_OPENBLAS
    if (blas_usable()) {
        pthread_once(&blas_once, blas_single_thread);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, 1.0f, A, (blasint)(lda ? lda : 1), B,
                    (blasint)(ldb ? ldb : 1), beta, C, (blasint)ldc);
        return;
    }
#endif
    /* op(B) row by row: with tb, B is copied transposed first, so that the inner loop runs
     * along contiguous rows (it vectorises) */
    float *bt = tb ? malloc((size_t)(k ? k : 1) * (size_t)n * sizeof *bt) : NULL;
    if (bt) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t p = 0; p < k; p++)
                bt[p * n + j] = B[j * ldb + p];
        B = bt, ldb = n, tb = 0;
    }
    for (int64_t i = 0; i < m; i++) {
        float *c = C + i * ldc;
        for (int64_t j = 0; j < n; j++)
            c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
    int64_t i0 = 0;
    for (; !tb && i0 + 4 <= m; i0 += 4) /* four rows of C at a time */
        for (int64_t p = 0; p < k; p++) {
            float a[4];
            for (int r = 0; r < 4; r++)
                a[r] = ta ? A[p * lda + i0 + r] : A[(i0 + r) * lda + p];
            axpy4(C + i0 * ldc, C + (i0 + 1) * ldc, C + (i0 + 2) * ldc, C + (i0 + 3) * ldc, B + p * ldb, a, n);
        }
    for (int64_t i = i0; i < m; i++) {
        float *c = C + i * ldc;
        for (int64_t p = 0; p < k; p++) {
            float aip = ta ? A[p * lda + i] : A[i * lda + p];
            if (tb)
                for (int64_t j = 0; j < n; j++)
                    c[j] += aip * B[j * ldb + p];
            else
                axpy(c, B + p * ldb, aip, n);
        }
    }
    free(bt);
}

static int matmul_named(rl_ctx *ctx, const char *name, const rl_tensor *a, int ta, const rl_tensor *b,
                        int tb, rl_tensor *c, float beta)
{
    ctx = ops_ctx(ctx, c);
    int rc = ops_check(ctx, name, OPS_LIST(a, b, c), 0);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    int64_t ar, ac, br, bc, cr, cc;
    ops_matrix_dims(a, &ar, &ac);
    ops_matrix_dims(b, &br, &bc);
    ops_matrix_dims(c, &cr, &cc);
    int64_t m = ta ? ac : ar, k = ta ? ar : ac, kb = tb ? bc : br, n = tb ? br : bc;
    if (k != kb || cr != m || cc != n) {
        char sa[128], sb[128], sc[128];
        return rl_error(ctx, RL_ERR_ARG,
                        "%s: shapes do not chain: %s%s · %s%s -> %s; need op(a) [m,k], op(b) [k,n], c [m,n] "
                        "(here m=%lld, k=%lld vs %lld, n=%lld)",
                        name, rl_tensor_describe(a, sa, sizeof sa), ta ? "ᵀ" : "",
                        rl_tensor_describe(b, sb, sizeof sb), tb ? "ᵀ" : "",
                        rl_tensor_describe(c, sc, sizeof sc), (long long)m, (long long)k, (long long)kb,
                        (long long)n);
    }
    if (ops_gpu(c)) { /* GPU backend (issue 6): cuBLAS on the rank's compute stream */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_matmul(ctx, a, ta, b, tb, c, beta)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *A = ops_stage_in(&st, a);
    const float *B = ops_stage_in(&st, b);
    float *C = ops_stage_out(&st, c, beta != 0.0f);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    sgemm(ta, tb, m, n, k, A, ac, B, bc, beta, C, cc);
    ops_stage_done(&st);
record:;
    rl_dtype dt = (a->dtype == RL_BF16 && b->dtype == RL_BF16) ? RL_BF16 : RL_F32;
    double bytes = ops_bytes(OPS_LIST(a, b, c)) + (beta != 0.0f ? (double)rl_tensor_bytes(c) : 0.0);
    ops_record(ctx, name, dt, 2.0 * (double)m * (double)n * (double)k, bytes, w0, OPS_LIST(a, b), OPS_LIST(c));
    return 0;
}

int rl_matmul(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
              rl_tensor *c, float beta)
{
    return matmul_named(ctx, "matmul", a, trans_a, b, trans_b, c, beta);
}

int rl_matmul_backward(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
                       const rl_tensor *dc, rl_tensor *da, float beta_a, rl_tensor *db, float beta_b)
{
    int rc = 0;
    /* c = op(a)·op(b): d op(a) = dc·op(b)ᵀ, d op(b) = op(a)ᵀ·dc; transpose back when stored transposed. */
    if (da)
        rc = trans_a ? matmul_named(ctx, "matmul_bwd_a", b, trans_b, dc, 1, da, beta_a)
                     : matmul_named(ctx, "matmul_bwd_a", dc, 0, b, !trans_b, da, beta_a);
    if (!rc && db)
        rc = trans_b ? matmul_named(ctx, "matmul_bwd_b", dc, 1, a, trans_a, db, beta_b)
                     : matmul_named(ctx, "matmul_bwd_b", a, !trans_a, dc, 0, db, beta_b);
    return rc;
}

/* ------------------------------------------------------------------ elementwise */

/* out[i] = ca·a[i] + cb·b[i] (b may be NULL), the kernel of add/axpy/scale/copy/fill. */
static int lincomb(rl_ctx *ctx, const char *name, float ca, const rl_tensor *a, float cb, const rl_tensor *b,
                   float constant, rl_tensor *out)
{
    ctx = ops_ctx(ctx, out);
    int rc = ops_check(ctx, name, OPS_LIST(out), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(a, b), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(out, a, b), 1); /* one device for all */
    if (rc)
        return rc;
    if (a && a->numel != out->numel)
        return ops_numel_mismatch(ctx, name, a, out);
    if (b && b->numel != out->numel)
        return ops_numel_mismatch(ctx, name, b, out);
    double w0 = ops_wall(ctx);
    if (ops_gpu(out)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_lincomb(ctx, constant, ca, a, cb, b, out)))
            return rc;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *A = ops_stage_in(&st, a);
    const float *B = ops_stage_in(&st, b);
    float *O = ops_stage_out(&st, out, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    for (int64_t i = 0; i < out->numel; i++) {
        float v = constant;
        if (A)
            v += ca * A[i];
        if (B)
            v += cb * B[i];
        O[i] = v;
    }
    ops_stage_done(&st);
record:;
    int nin = (a != NULL) + (b != NULL);
    const rl_tensor *ins[2] = { a ? a : b, a ? b : NULL };
    ops_record(ctx, name, out->dtype, (double)out->numel * nin, ops_bytes(OPS_LIST(a, b, out)), w0, nin, ins,
               OPS_LIST(out));
    return 0;
}

int rl_add(rl_ctx *ctx, const rl_tensor *a, const rl_tensor *b, rl_tensor *out)
{
    if (!a || !b)
        return rl_error(ops_ctx(ctx, out), RL_ERR_ARG, "add: both inputs are required");
    return lincomb(ctx, "add", 1.0f, a, 1.0f, b, 0.0f, out);
}

int rl_residual_add(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *branch, rl_tensor *out)
{
    if (!x || !branch)
        return rl_error(ops_ctx(ctx, out), RL_ERR_ARG, "residual_add: both inputs are required");
    return lincomb(ctx, "residual_add", 1.0f, x, 1.0f, branch, 0.0f, out);
}

int rl_axpy(rl_ctx *ctx, float alpha, const rl_tensor *x, rl_tensor *y)
{
    if (!x)
        return rl_error(ops_ctx(ctx, y), RL_ERR_ARG, "axpy: x is NULL");
    return lincomb(ctx, "axpy", 1.0f, y, alpha, x, 0.0f, y);
}

int rl_scale(rl_ctx *ctx, rl_tensor *x, float alpha) { return lincomb(ctx, "scale", alpha, x, 0.0f, NULL, 0.0f, x); }

int rl_copy(rl_ctx *ctx, rl_tensor *dst, const rl_tensor *src)
{
    if (!src)
        return rl_error(ops_ctx(ctx, dst), RL_ERR_ARG, "copy: src is NULL");
    return lincomb(ctx, "copy", 1.0f, src, 0.0f, NULL, 0.0f, dst);
}

int rl_fill(rl_ctx *ctx, rl_tensor *x, float value) { return lincomb(ctx, "fill", 0.0f, NULL, 0.0f, NULL, value, x); }

int rl_zero(rl_ctx *ctx, rl_tensor *x) { return lincomb(ctx, "zero", 0.0f, NULL, 0.0f, NULL, 0.0f, x); }

int rl_zero_all(rl_ctx *ctx, rl_tensor *const *xs, int n)
{
    const char *name = "zero_all";
    if (n < 0 || (n > 0 && !xs))
        return rl_error(ctx, RL_ERR_ARG, "%s: %d tensors%s; pass an array of n >= 0 tensors", name, n,
                        xs ? "" : " and no array");
    if (n == 0)
        return 0;
    const rl_tensor *const *ts = (const rl_tensor *const *)xs;
    ctx = ops_ctx(ctx, xs[0]);
    int rc = ops_check(ctx, name, n, ts, 0); /* one device for all */
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(xs[0])) { /* one span on the GPU timeline: the launches of one multi-tensor kernel */
        ops_gpu_begin(ctx, name);
        for (int i = 0; i < n; i++)
            if ((rc = rl_backend_lincomb(ctx, 0.0f, 0.0f, NULL, 0.0f, NULL, xs[i])))
                return rc;
    } else {
        for (int i = 0; i < n; i++) {
            ops_buf b;
            float *X = ops_out(xs[i], &b, 0);
            if (!X)
                return ops_nomem(ctx, name);
            memset(X, 0, (size_t)xs[i]->numel * sizeof *X);
            ops_commit(xs[i], &b);
        }
    }
    ops_record(ctx, name, xs[0]->dtype, 0.0, ops_bytes(n, ts), w0, 0, NULL, n, ts);
    return 0;
}

static int reduce(rl_ctx *ctx, const char *name, const rl_tensor *x, int squares, double *out)
{
    ctx = ops_ctx(ctx, x);
    int rc = ops_check(ctx, name, OPS_LIST(x), 0);
    if (rc)
        return rc;
    if (!out)
        return rl_error(ctx, RL_ERR_ARG, "%s: result pointer is NULL", name);
    double w0 = ops_wall(ctx);
    if (ops_gpu(x)) { /* GPU backend (issue 6): waits for the total */
        ops_gpu_begin(ctx, name);
        double t = 0;
        if ((rc = rl_backend_sum(ctx, x, squares, &t)))
            return rc;
        *out = t;
        goto record;
    }
    ops_buf b;
    const float *X = ops_in(x, &b);
    if (!X)
        return ops_nomem(ctx, name);
    double s = 0;
    for (int64_t i = 0; i < x->numel; i++)
        s += squares ? (double)X[i] * X[i] : X[i];
    ops_release(&b);
    *out = s;
record:;
    ops_record(ctx, name, x->dtype, (double)x->numel * (squares ? 2 : 1), ops_bytes(OPS_LIST(x)), w0,
               OPS_LIST(x), 0, NULL);
    return 0;
}

int rl_sum(rl_ctx *ctx, const rl_tensor *x, double *sum) { return reduce(ctx, "sum", x, 0, sum); }
int rl_sum_squares(rl_ctx *ctx, const rl_tensor *x, double *sumsq) { return reduce(ctx, "sum_squares", x, 1, sumsq); }

/* ------------------------------------------------------------------ losses */

int rl_cross_entropy(rl_ctx *ctx, const rl_tensor *logits, const int *targets, float grad_scale,
                     rl_tensor *dlogits, float *loss)
{
    const char *name = "cross_entropy";
    ctx = ops_ctx(ctx, logits);
    int rc = ops_check(ctx, name, OPS_LIST(logits), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(dlogits), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(logits, dlogits), 1);
    if (rc)
        return rc;
    if (!targets || !loss)
        return rl_error(ctx, RL_ERR_ARG, "%s: targets and loss must not be NULL", name);
    if (dlogits && dlogits->numel != logits->numel)
        return ops_numel_mismatch(ctx, name, dlogits, logits);
    int64_t rows, V;
    ops_matrix_dims(logits, &rows, &V);
    for (int64_t r = 0; r < rows; r++)
        if (targets[r] < 0 || targets[r] >= V)
            return rl_error(ctx, RL_ERR_ARG, "%s: target %d of row %lld is outside [0, %lld) (the vocabulary of '%s')",
                            name, targets[r], (long long)r, (long long)V, logits->name);
    double w0 = ops_wall(ctx);
    if (ops_gpu(logits)) { /* GPU backend (issue 6): waits for the loss */
        ops_gpu_begin(ctx, name);
        double t = 0;
        if ((rc = rl_backend_cross_entropy(ctx, logits, targets, grad_scale, dlogits, &t)))
            return rc;
        *loss = rows ? (float)(t / (double)rows) : 0.0f;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *L = ops_stage_in(&st, logits);
    float *D = ops_stage_out(&st, dlogits, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    double total = 0;
    float g = rows ? grad_scale / (float)rows : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        const float *l = L + r * V;
        float mx = -INFINITY;
        for (int64_t j = 0; j < V; j++)
            mx = l[j] > mx ? l[j] : mx;
        double z = 0;
        for (int64_t j = 0; j < V; j++)
            z += exp((double)(l[j] - mx));
        double logz = log(z) + mx;
        total += logz - l[targets[r]];
        if (D)
            for (int64_t j = 0; j < V; j++)
                D[r * V + j] = g * ((float)exp((double)l[j] - logz) - (j == targets[r] ? 1.0f : 0.0f));
    }
    *loss = rows ? (float)(total / (double)rows) : 0.0f;
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, logits->dtype, 5.0 * (double)logits->numel, ops_bytes(OPS_LIST(logits, dlogits)), w0,
               OPS_LIST(logits), OPS_LIST(dlogits));
    return 0;
}

int rl_mse_loss(rl_ctx *ctx, const rl_tensor *pred, const rl_tensor *target, float grad_scale,
                rl_tensor *dpred, float *loss)
{
    const char *name = "mse_loss";
    ctx = ops_ctx(ctx, pred);
    int rc = ops_check(ctx, name, OPS_LIST(pred, target), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(dpred), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(pred, target, dpred), 1);
    if (rc)
        return rc;
    if (!loss)
        return rl_error(ctx, RL_ERR_ARG, "%s: loss must not be NULL", name);
    if (pred->numel != target->numel)
        return ops_numel_mismatch(ctx, name, pred, target);
    if (dpred && dpred->numel != pred->numel)
        return ops_numel_mismatch(ctx, name, dpred, pred);
    double w0 = ops_wall(ctx);
    if (ops_gpu(pred)) { /* GPU backend (issue 6): waits for the loss */
        ops_gpu_begin(ctx, name);
        double t = 0;
        if ((rc = rl_backend_mse_loss(ctx, pred, target, grad_scale, dpred, &t)))
            return rc;
        *loss = pred->numel ? (float)(t / (double)pred->numel) : 0.0f;
        goto record;
    }
    ops_stage st = { .n = 0 };
    const float *P = ops_stage_in(&st, pred);
    const float *T = ops_stage_in(&st, target);
    float *D = ops_stage_out(&st, dpred, 0);
    if (st.failed)
        return ops_stage_nomem(ctx, name, &st);
    int64_t n = pred->numel;
    double total = 0;
    float g = n ? 2.0f * grad_scale / (float)n : 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float d = P[i] - T[i];
        total += (double)d * d;
        if (D)
            D[i] = g * d;
    }
    *loss = n ? (float)(total / (double)n) : 0.0f;
    ops_stage_done(&st);
record:;
    ops_record(ctx, name, pred->dtype, 3.0 * (double)pred->numel, ops_bytes(OPS_LIST(pred, target, dpred)), w0,
               OPS_LIST(pred, target), OPS_LIST(dpred));
    return 0;
}

/* ------------------------------------------------------------------ optimizers */

rl_adamw_cfg rl_adamw_defaults(void)
{
    rl_adamw_cfg c = { 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f };
    return c;
}

/* Checks the optimizer's tensors: same numel, CPU, master/m/v f32. */
static int optim_check(rl_ctx *ctx, const char *name, rl_tensor *param, const rl_tensor *grad,
                       rl_tensor *master, rl_tensor *m, rl_tensor *v, int need_mv)
{
    int rc = ops_check(ctx, name, OPS_LIST(param, grad), 0);
    if (!rc && need_mv)
        rc = ops_check(ctx, name, OPS_LIST(m, v), 0);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(master), 1);
    if (!rc)
        rc = ops_check(ctx, name, OPS_LIST(param, grad, master, m, v), 1); /* one device for all */
    if (rc)
        return rc;
    const rl_tensor *all[4] = { grad, master, m, v };
    for (int i = 0; i < 4; i++)
        if (all[i] && all[i]->numel != param->numel)
            return ops_numel_mismatch(ctx, name, all[i], param);
    const rl_tensor *f32s[3] = { master, m, v };
    for (int i = 0; i < 3; i++)
        if (f32s[i] && f32s[i]->dtype != RL_F32)
            return rl_error(ctx, RL_ERR_ARG, "%s: optimizer state '%s' must be f32 (it is %s)", name,
                            f32s[i]->name, rl_dtype_name(f32s[i]->dtype));
    if (!master && param->dtype != RL_F32)
        return rl_error(ctx, RL_ERR_ARG,
                        "%s: param '%s' is bf16, so it needs an f32 master copy; pass a master tensor", name,
                        param->name);
    return 0;
}

static int adamw_step(rl_ctx *ctx, const rl_adamw_cfg *cfg, int64_t step, rl_tensor *param,
                      const rl_tensor *grad, rl_tensor *master, rl_tensor *m, rl_tensor *v)
{
    const char *name = "adamw";
    ctx = ops_ctx(ctx, param);
    if (!cfg || step < 1)
        return rl_error(ctx, RL_ERR_ARG, "%s: needs a config and step >= 1 (got step %lld)", name, (long long)step);
    int rc = optim_check(ctx, name, param, grad, master, m, v, 1);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(param)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_adamw_step(ctx, cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, step, param,
                                        grad, master, m, v)))
            return rc;
        goto record;
    }
    ops_buf bg;
    const float *G = ops_in(grad, &bg);
    if (!G)
        return ops_nomem(ctx, name);
    float *W = master ? ops_host(master) : ops_host(param);
    float *M = ops_host(m), *Vv = ops_host(v);
    double bc1 = 1.0 - pow(cfg->beta1, (double)step), bc2 = 1.0 - pow(cfg->beta2, (double)step);
    for (int64_t i = 0; i < param->numel; i++) {
        float g = G[i];
        M[i] = cfg->beta1 * M[i] + (1.0f - cfg->beta1) * g;
        Vv[i] = cfg->beta2 * Vv[i] + (1.0f - cfg->beta2) * g * g;
        float mhat = (float)(M[i] / bc1), vhat = (float)(Vv[i] / bc2);
        W[i] -= cfg->lr * (mhat / (sqrtf(vhat) + cfg->eps) + cfg->weight_decay * W[i]);
    }
    ops_release(&bg);
    if (master)
        rl_tensor_copy(param, master);
record:;
    ops_record(ctx, name, RL_F32, 12.0 * (double)param->numel,
               ops_bytes(OPS_LIST(param, grad, m, v)) + 2.0 * ops_bytes(OPS_LIST(master, m, v)), w0,
               OPS_LIST(param, grad, m, v), OPS_LIST(param));
    return 0;
}

static int sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master)
{
    const char *name = "sgd";
    ctx = ops_ctx(ctx, param);
    int rc = optim_check(ctx, name, param, grad, master, NULL, NULL, 0);
    if (rc)
        return rc;
    double w0 = ops_wall(ctx);
    if (ops_gpu(param)) { /* GPU backend (issue 6) */
        ops_gpu_begin(ctx, name);
        if ((rc = rl_backend_sgd_step(ctx, lr, param, grad, master)))
            return rc;
        goto record;
    }
    ops_buf bg;
    const float *G = ops_in(grad, &bg);
    if (!G)
        return ops_nomem(ctx, name);
    float *W = master ? ops_host(master) : ops_host(param);
    for (int64_t i = 0; i < param->numel; i++)
        W[i] -= lr * G[i];
    ops_release(&bg);
    if (master)
        rl_tensor_copy(param, master);
record:;
    ops_record(ctx, name, RL_F32, 2.0 * (double)param->numel,
               ops_bytes(OPS_LIST(param, grad)) + 2.0 * ops_bytes(OPS_LIST(master)), w0, OPS_LIST(param, grad),
               OPS_LIST(param));
    return 0;
}

int rl_adamw_step(rl_ctx *ctx, const rl_adamw_cfg *cfg, int64_t step, rl_tensor *param,
                  const rl_tensor *grad, rl_tensor *master, rl_tensor *m, rl_tensor *v)
{
    rl_ctx *c = ops_ctx(ctx, param); /* (the optimizer region: the update and its master copy) */
    char keep = rl_set_region(c, 'O');
    int rc = adamw_step(ctx, cfg, step, param, grad, master, m, v);
    rl_set_region(c, keep);
    return rc;
}

int rl_sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master)
{
    rl_ctx *c = ops_ctx(ctx, param);
    char keep = rl_set_region(c, 'O');
    int rc = sgd_step(ctx, lr, param, grad, master);
    rl_set_region(c, keep);
    return rc;
}
