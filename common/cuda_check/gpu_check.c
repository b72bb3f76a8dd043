/* gpu_check.c — `make gpu-check`'s program (GPU machines only): each GPU kernel against the
 * CPU reference of ops.h (max relative error), device tensors and the device-memory
 * transport's reduction against the host, and GEMM TFLOP/s against the best measured.
 * Prints a table; exits 0 when every check is within tolerance, 1 otherwise, 2 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"
#include "cuda_backend.h"
#include "ops.h"
#include "ringlab.h"

typedef struct check {
    rl_ctx *cpu;          /* standalone one-rank context for the CPU references */
    rl_cuda_rank *gpu;
    int failed;
    char err[512];
} check;

/* Device copy of a host tensor's elements (dtype kept). */
static void *to_dev(check *c, const rl_tensor *t)
{
    int64_t bytes = rl_tensor_bytes(t);
    void *d = rl_cuda_malloc(c->gpu, bytes, c->err, sizeof c->err);
    if (d && rl_cuda_memcpy(c->gpu, 0, d, rl_tensor_host_data(t), bytes, c->err, sizeof c->err)) {
        rl_cuda_free(d);
        return NULL;
    }
    return d;
}

/* Max |dev − ref| / max(|ref|, floor) over the elements of ref (dev has ref's dtype). */
static double rel_err(check *c, const void *dev, const rl_tensor *ref, double floor)
{
    rl_tensor *h = rl_tensor_new(c->cpu, "gpu", ref->dtype, RL_MEM_OTHER, ref->ndim, ref->shape, NULL);
    if (!h || rl_cuda_memcpy(c->gpu, 0, rl_tensor_host_data(h), dev, rl_tensor_bytes(ref), c->err, sizeof c->err)) {
        rl_tensor_free(h);
        return INFINITY;
    }
    double e = rl_tensor_max_rel_diff(h, ref, floor);
    rl_tensor_free(h);
    return e;
}

static void row(check *c, const char *op, const char *dtype, const char *shape, double err, double tol)
{
    int ok = err <= tol;
    c->failed += !ok;
    printf("| %-22s | %-5s | %-18s | %10.2e | %8.0e | %-4s |\n", op, dtype, shape, err, tol, ok ? "ok" : "FAIL");
}

static rl_tensor *rnd(check *c, const char *name, rl_dtype dt, int64_t r, int64_t k, uint64_t seed)
{
    rl_tensor *t = rl_tensor_new(c->cpu, name, dt, RL_MEM_OTHER, 2, (int64_t[]){ r, k }, NULL);
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < t->numel; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        rl_tensor_set(t, i, (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0));
    }
    return t;
}

static void check_matmul(check *c, rl_dtype dt, int ta, int tb)
{
    int64_t m = 192, n = 320, k = 256;
    rl_tensor *a = ta ? rnd(c, "a", dt, k, m, 1) : rnd(c, "a", dt, m, k, 1);
    rl_tensor *b = tb ? rnd(c, "b", dt, n, k, 2) : rnd(c, "b", dt, k, n, 2);
    rl_tensor *ref = rnd(c, "c", dt, m, n, 3);
    void *da = to_dev(c, a), *db = to_dev(c, b), *dc = to_dev(c, ref);
    double e = INFINITY;
    if (da && db && dc && rl_matmul(c->cpu, a, ta, b, tb, ref, 0.5f) == 0 &&
        rl_cuda_matmul(c->gpu, da, dt, ta, db, dt, tb, dc, dt, m, n, k, 0.5f, c->err, sizeof c->err) == 0 &&
        rl_cuda_stream_sync(c->gpu, 0, c->err, sizeof c->err) == 0)
        e = rel_err(c, dc, ref, 1.0);
    char name[40];
    snprintf(name, sizeof name, "matmul%s%s (cuBLAS)", ta ? " aT" : "", tb ? " bT" : "");
    row(c, name, rl_dtype_name(dt), "192x256 . 256x320", e, dt == RL_BF16 ? 1e-2 : 1e-4);
    rl_cuda_free(da);
    rl_cuda_free(db);
    rl_cuda_free(dc);
    rl_tensor_free(a);
    rl_tensor_free(b);
    rl_tensor_free(ref);
}

/* Elementwise ops: which 0 add, 1 axpy, 2 scale, 3 gelu, 4 gelu backward. */
static void check_elementwise(check *c, rl_dtype dt, int which)
{
    static const char *const names[] = { "add", "axpy", "scale", "gelu_forward", "gelu_backward" };
    rl_tensor *x = rnd(c, "x", dt, 64, 1000, 4), *y = rnd(c, "y", dt, 64, 1000, 5), *o = rnd(c, "o", dt, 64, 1000, 6);
    void *dx = to_dev(c, x), *dy = to_dev(c, y), *dout = to_dev(c, o);
    int64_t n = x->numel;
    int rc = -1, crc = -1;
    if (dx && dy && dout) {
        switch (which) {
        case 0:
            crc = rl_add(c->cpu, x, y, o);
            rc = rl_cuda_add(c->gpu, dx, dt, dy, dt, dout, dt, n, c->err, sizeof c->err);
            break;
        case 1:
            crc = rl_axpy(c->cpu, 0.75f, x, o);
            rc = rl_cuda_axpy(c->gpu, 0.75f, dx, dt, dout, dt, n, c->err, sizeof c->err);
            break;
        case 2:
            crc = rl_scale(c->cpu, o, -1.5f);
            rc = rl_cuda_scale(c->gpu, dout, dt, -1.5f, n, c->err, sizeof c->err);
            break;
        case 3:
            crc = rl_gelu_forward(c->cpu, x, o);
            rc = rl_cuda_gelu_forward(c->gpu, dx, dt, dout, dt, n, c->err, sizeof c->err);
            break;
        default:
            crc = rl_gelu_backward(c->cpu, x, y, o);
            rc = rl_cuda_gelu_backward(c->gpu, dx, dt, dy, dt, dout, dt, n, c->err, sizeof c->err);
            break;
        }
    }
    double e = INFINITY;
    if (!rc && !crc && !rl_cuda_stream_sync(c->gpu, 0, c->err, sizeof c->err))
        e = rel_err(c, dout, o, 1e-3);
    row(c, names[which], rl_dtype_name(dt), "64x1000", e, dt == RL_BF16 ? 1e-2 : 1e-5);
    rl_cuda_free(dx);
    rl_cuda_free(dy);
    rl_cuda_free(dout);
    rl_tensor_free(x);
    rl_tensor_free(y);
    rl_tensor_free(o);
}

static void check_adamw(check *c)
{
    rl_tensor *p = rnd(c, "p", RL_F32, 1, 4096, 7), *g = rnd(c, "g", RL_F32, 1, 4096, 8);
    rl_tensor *m = rnd(c, "m", RL_F32, 1, 4096, 9), *v = rnd(c, "v", RL_F32, 1, 4096, 10);
    for (int64_t i = 0; i < v->numel; i++)
        rl_tensor_set(v, i, fabsf(rl_tensor_get(v, i)));
    void *dp = to_dev(c, p), *dg = to_dev(c, g), *dm = to_dev(c, m), *dv = to_dev(c, v);
    rl_adamw_cfg cfg = rl_adamw_defaults();
    cfg.weight_decay = 0.01f;
    double e = INFINITY;
    if (dp && dg && dm && dv && rl_adamw_step(c->cpu, &cfg, 3, p, g, NULL, m, v) == 0 &&
        rl_cuda_adamw(c->gpu, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, 3, dp, 0, dg, 0, NULL, dm, dv,
                      p->numel, c->err, sizeof c->err) == 0 &&
        rl_cuda_stream_sync(c->gpu, 0, c->err, sizeof c->err) == 0)
        e = rel_err(c, dp, p, 1e-3);
    row(c, "adamw_step", "f32", "4096", e, 1e-5);
    rl_cuda_free(dp);
    rl_cuda_free(dg);
    rl_cuda_free(dm);
    rl_cuda_free(dv);
    rl_tensor_free(p);
    rl_tensor_free(g);
    rl_tensor_free(m);
    rl_tensor_free(v);
}

/* The device transport's reduction against the sim's host reduction: must be bitwise equal. */
static void check_reduce(check *c, rl_dtype dt)
{
    enum { N = 4 };
    rl_tensor *src[N];
    void *dsrc[N];
    int ok = 1;
    for (int q = 0; q < N; q++) {
        src[q] = rnd(c, "s", dt, 1, 100003, 20 + (uint64_t)q);
        dsrc[q] = to_dev(c, src[q]);
        ok = ok && dsrc[q];
    }
    rl_tensor *ref = rl_tensor_new(c->cpu, "sum", dt, RL_MEM_OTHER, 2, src[0]->shape, NULL);
    for (int64_t i = 0; i < ref->numel; i++) { /* the sim's order: ((s0 + s1) + s2) + s3 in f32 */
        float acc = rl_tensor_get(src[0], i);
        for (int q = 1; q < N; q++)
            acc += rl_tensor_get(src[q], i);
        rl_tensor_set(ref, i, acc);
    }
    void *dd = to_dev(c, ref);
    double e = INFINITY;
    if (ok && dd &&
        rl_cuda_reduce(c->gpu, 0, dt, 0, N, (const void *const *)dsrc, dd, 0, ref->numel, c->err, sizeof c->err) == 0)
        e = rel_err(c, dd, ref, 1e-30);
    row(c, "transport reduce (sum)", rl_dtype_name(dt), "4 x 100003", e, 0);
    for (int q = 0; q < N; q++) {
        rl_cuda_free(dsrc[q]);
        rl_tensor_free(src[q]);
    }
    rl_cuda_free(dd);
    rl_tensor_free(ref);
}

int main(void)
{
    char why[320], name[160];
    int n = rl_cuda_device_count(why, sizeof why);
    if (n < 1) {
        fprintf(stderr, "gpu_check: %s\n", why);
        return 2;
    }
    check c;
    memset(&c, 0, sizeof c);
    c.cpu = rl_ctx_new_standalone(NULL, 1);
    c.gpu = rl_cuda_rank_new(0, c.err, sizeof c.err);
    if (!c.gpu) {
        fprintf(stderr, "gpu_check: %s\n", c.err);
        return 1;
    }
    printf("## GPU 0 of %d: %s\n\n", n, rl_cuda_device_name(0, name, sizeof name));
    printf("| %-22s | %-5s | %-18s | %10s | %8s | %-4s |\n", "op vs CPU reference", "dtype", "shape", "max rel err",
           "tol", "");
    printf("|%s|%s|%s|%s|%s|%s|\n", "------------------------", "-------", "--------------------", "------------",
           "----------", "------");
    for (int dt = 0; dt < 2; dt++)
        for (int t = 0; t < 4; t++)
            check_matmul(&c, (rl_dtype)dt, t & 1, t >> 1);
    for (int dt = 0; dt < 2; dt++)
        for (int w = 0; w < 5; w++)
            check_elementwise(&c, (rl_dtype)dt, w);
    check_adamw(&c);
    check_reduce(&c, RL_F32);
    check_reduce(&c, RL_BF16);
    if (c.err[0])
        printf("\nlast error: %s\n", c.err);

    printf("\n| GEMM (cuBLAS, f32 accumulate) | TFLOP/s | of best measured |\n|---|---|---|\n");
    static const int64_t sizes[] = { 2048, 4096, 8192 };
    double t[2][3], best = 0;
    for (int dt = 0; dt < 2; dt++)
        for (int i = 0; i < 3; i++) {
            t[dt][i] = rl_cuda_gemm_tflops(c.gpu, dt, sizes[i], 20, c.err, sizeof c.err);
            if (dt == 1 && t[dt][i] > best)
                best = t[dt][i];
        }
    for (int dt = 0; dt < 2; dt++)
        for (int i = 0; i < 3; i++)
            printf("| %s %lld^3 | %.1f | %.0f%% |\n", dt ? "bf16" : "f32", (long long)sizes[i], t[dt][i],
                   best > 0 ? 100.0 * t[dt][i] / best : 0.0);
    const rl_hw *hw = rl_hw_default();
    printf("(profile %s: %.0f TFLOP/s dense bf16 on the datasheet)\n", hw->name, hw->peak_flops_bf16 / 1e12);
    rl_cuda_rank_free(c.gpu);
    rl_ctx_free_standalone(c.cpu);
    printf("\ngpu_check: %s\n", c.failed ? "SOME CHECKS FAILED" : "all op checks within tolerance");
    return c.failed ? 1 : 0;
}
