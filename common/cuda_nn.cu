/* cuda_nn.cu — the GPU kernels of the ops API (ops.h) beyond GEMM: the linear combination
 * behind add/axpy/scale/copy/fill/zero, bias, LayerNorm, softmax, causal attention,
 * embedding and row gather/scatter, the losses, sums, SGD. Each mirrors its CPU kernel
 * (ops.c, ops_nn.c): the same f32 arithmetic in the same order where the order is serial
 * (elementwise ops, column sums, attention dot products are bitwise the CPU's: no fused
 * multiply-add), double accumulators where the CPU uses double (LayerNorm statistics,
 * softmax/cross-entropy normalisers, losses and sums; tree-ordered here, so those may
 * differ from the CPU in the last bits). Accumulating outputs in bf16 are staged in f32
 * and rounded once, as on the CPU. Every call runs on the rank's compute stream; scratch
 * is stream-ordered (cudaMallocAsync). Calls that return a value to the host (losses,
 * sums) wait for the stream. Entry points are declared in cuda_backend.h.
 * Has not run on a GPU yet: see docs/gpu-runs.md. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_backend.h"
#include "cuda_common.cuh"

#define NT 256 /* threads per block (a power of two: the block reductions need it) */

static inline unsigned nblocks(int64_t n, int t) { return (unsigned)((n + t - 1) / t); }

__device__ static inline float ldf(const void *p, int dt, int64_t i)
{
    return dt ? rl_dev_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

__device__ static inline void stf(void *p, int dt, int64_t i, float v)
{
    if (dt)
        ((uint16_t *)p)[i] = rl_dev_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* a + b·c in two roundings, as the CPU computes it (no FMA contraction). */
__device__ static inline float madd(float a, float b, float c) { return __fadd_rn(a, __fmul_rn(b, c)); }

/* Sum over the block (blockDim.x a power of two, sh holds blockDim.x values). */
template <typename T> __device__ static T block_sum(T v, T *sh)
{
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] += sh[t + s];
        __syncthreads();
    }
    T r = sh[0];
    __syncthreads();
    return r;
}

__device__ static float block_max(float v, float *sh)
{
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] = fmaxf(sh[t], sh[t + s]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

/* ------------------------------------------------------------------ scratch and staging */

static cudaStream_t cs(rl_cuda_rank *r) { return rl_cuda_rank_cstream(r, 0); }

/* Stream-ordered scratch of bytes on the compute stream (NULL with a message). */
static void *tmp_alloc(rl_cuda_rank *r, int64_t bytes, char *err, int len)
{
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, (size_t)(bytes > 0 ? bytes : 1), cs(r));
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(err, (size_t)len, "scratch of %lld bytes: %s", (long long)bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void tmp_free(rl_cuda_rank *r, void *p)
{
    if (p)
        cudaFreeAsync(p, cs(r));
}

/* A device copy of bytes of host memory (stream-ordered scratch), NULL with a message. */
static void *tmp_from_host(rl_cuda_rank *r, const void *host, int64_t bytes, char *err, int len)
{
    void *d = tmp_alloc(r, bytes, err, len);
    if (d && bytes > 0 && cudaMemcpyAsync(d, host, (size_t)bytes, cudaMemcpyHostToDevice, cs(r)) != cudaSuccess) {
        snprintf(err, (size_t)len, "copy of %lld bytes to the GPU: %s", (long long)bytes,
                 cudaGetErrorString(cudaGetLastError()));
        tmp_free(r, d);
        return NULL;
    }
    return d;
}

__global__ void convert_nn_kernel(void *dst, int dd, const void *src, int sd, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        stf(dst, dd, i, ldf(src, sd, i));
}

/* An f32 view of x for accumulation: x itself when f32, else an f32 scratch (loaded with
 * x's values when load). */
static float *stage(rl_cuda_rank *r, void *x, int dt, int64_t n, int load, char *err, int len)
{
    if (!dt)
        return (float *)x;
    float *f = (float *)tmp_alloc(r, n * 4, err, len);
    if (f && load && n > 0)
        convert_nn_kernel<<<nblocks(n, NT), NT, 0, cs(r)>>>(f, 0, x, 1, n);
    else if (f && !load)
        cudaMemsetAsync(f, 0, (size_t)(n > 0 ? n : 1) * 4, cs(r));
    return f;
}

/* Writes a staged f32 view back into x (rounding to bf16) and frees it. */
static void unstage(rl_cuda_rank *r, float *f, void *x, int dt, int64_t n)
{
    if (!dt || !f)
        return;
    if (n > 0)
        convert_nn_kernel<<<nblocks(n, NT), NT, 0, cs(r)>>>(x, 1, f, 0, n);
    tmp_free(r, f);
}

/* The launch error (if any) as the call's result. */
static int launched(const char *what, char *err, int len)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, (size_t)len, "%s: %s", what, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* Waits for the compute stream (for results the host reads). */
static int wait_stream(rl_cuda_rank *r, const char *what, char *err, int len)
{
    cudaError_t e = cudaStreamSynchronize(cs(r));
    if (e != cudaSuccess) {
        snprintf(err, (size_t)len, "%s: %s", what, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ elementwise */

/* out[i] = constant + ca·a[i] + cb·b[i] (a, b may be NULL), evaluated as the CPU's lincomb. */
__global__ void lincomb_kernel(void *out, int odt, int64_t n, float constant, float ca, const void *a, int adt,
                               float cb, const void *b, int bdt)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = constant;
    if (a)
        v = madd(v, ca, ldf(a, adt, i));
    if (b)
        v = madd(v, cb, ldf(b, bdt, i));
    stf(out, odt, i, v);
}

extern "C" int rl_cuda_lincomb(rl_cuda_rank *r, void *out, int out_dt, int64_t n, float constant, float ca,
                               const void *a, int a_dt, float cb, const void *b, int b_dt, char *err, int len)
{
    if (n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    lincomb_kernel<<<nblocks(n, NT), NT, 0, cs(r)>>>(out, out_dt, n, constant, ca, a, a_dt, cb, b, b_dt);
    return launched("lincomb kernel", err, len);
}

/* ------------------------------------------------------------------ bias */

__global__ void bias_add_kernel(void *y, int ydt, const void *bias, int bdt, int64_t total, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total)
        stf(y, ydt, i, __fadd_rn(ldf(y, ydt, i), ldf(bias, bdt, i % n)));
}

extern "C" int rl_cuda_bias_add(rl_cuda_rank *r, void *y, int y_dt, const void *bias, int b_dt, int64_t rows,
                                int64_t n, char *err, int len)
{
    if (rows * n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    bias_add_kernel<<<nblocks(rows * n, NT), NT, 0, cs(r)>>>(y, y_dt, bias, b_dt, rows * n, n);
    return launched("bias_add kernel", err, len);
}

/* dbias[j] += Σ_r dy[r,j], one thread per column, rows in order (the CPU's order). */
__global__ void bias_bwd_kernel(const void *dy, int dydt, void *db, int dbdt, int64_t rows, int64_t n)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float s = 0;
    for (int64_t r = 0; r < rows; r++)
        s = __fadd_rn(s, ldf(dy, dydt, r * n + j));
    stf(db, dbdt, j, __fadd_rn(ldf(db, dbdt, j), s));
}

extern "C" int rl_cuda_bias_backward(rl_cuda_rank *r, const void *dy, int dy_dt, void *dbias, int db_dt,
                                     int64_t rows, int64_t n, char *err, int len)
{
    if (n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    bias_bwd_kernel<<<nblocks(n, 128), 128, 0, cs(r)>>>(dy, dy_dt, dbias, db_dt, rows, n);
    return launched("bias_backward kernel", err, len);
}

/* ------------------------------------------------------------------ LayerNorm */

/* One block per row: mean and variance in double (as the CPU), y, mean, rstd. */
__global__ void ln_fwd_kernel(const void *x, int xdt, const void *g, int gdt, const void *b, int bdt, float eps,
                              void *y, int ydt, float *mean, float *rstd, int64_t n)
{
    __shared__ double sh[NT];
    int64_t row = blockIdx.x, base = row * n;
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        s += ldf(x, xdt, base + j);
    s = block_sum(s, sh);
    float mu = (float)(s / (double)n);
    double ss = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        float d = __fsub_rn(ldf(x, xdt, base + j), mu);
        ss += (double)d * (double)d;
    }
    ss = block_sum(ss, sh);
    float rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn((float)(ss / (double)n), eps)));
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = rs;
    }
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        float v = __fmul_rn(__fmul_rn(__fsub_rn(ldf(x, xdt, base + j), mu), rs), ldf(g, gdt, j));
        stf(y, ydt, base + j, __fadd_rn(v, b ? ldf(b, bdt, j) : 0.0f));
    }
}

extern "C" int rl_cuda_layernorm_forward(rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
                                         const void *beta, int b_dt, float eps, void *y, int y_dt, float *mean,
                                         float *rstd, int64_t rows, int64_t n, char *err, int len)
{
    if (rows <= 0 || n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    ln_fwd_kernel<<<(unsigned)rows, NT, 0, cs(r)>>>(x, x_dt, gamma, g_dt, beta, b_dt, eps, y, y_dt, mean, rstd, n);
    return launched("layernorm kernel", err, len);
}

/* One block per row: dx = rs·(dy·γ − mean(dy·γ) − x̂·mean(dy·γ·x̂)). */
__global__ void ln_bwd_dx_kernel(const void *x, int xdt, const void *g, int gdt, const float *mean, const float *rstd,
                                 const void *dy, int dydt, void *dx, int dxdt, int64_t n)
{
    __shared__ double sh[NT];
    int64_t row = blockIdx.x, base = row * n;
    float mu = mean[row], rs = rstd[row];
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        float xh = __fmul_rn(__fsub_rn(ldf(x, xdt, base + j), mu), rs);
        float gg = __fmul_rn(ldf(dy, dydt, base + j), ldf(g, gdt, j));
        sg += gg;
        sgx += (double)gg * xh;
    }
    sg = block_sum(sg, sh);
    sgx = block_sum(sgx, sh);
    float mg = (float)(sg / (double)n), mgx = (float)(sgx / (double)n);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        float xh = __fmul_rn(__fsub_rn(ldf(x, xdt, base + j), mu), rs);
        float gg = __fmul_rn(ldf(dy, dydt, base + j), ldf(g, gdt, j));
        stf(dx, dxdt, base + j, __fmul_rn(rs, __fsub_rn(__fsub_rn(gg, mg), __fmul_rn(xh, mgx))));
    }
}

/* dgamma[j] += Σ_r dy·x̂, dbeta[j] += Σ_r dy: one thread per column, rows in order (f32 views). */
__global__ void ln_bwd_params_kernel(const void *x, int xdt, const float *mean, const float *rstd, const void *dy,
                                     int dydt, float *dg, float *db, int64_t rows, int64_t n)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float sg = dg ? dg[j] : 0.0f, sb = db ? db[j] : 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        float d = ldf(dy, dydt, r * n + j);
        if (dg)
            sg = madd(sg, d, __fmul_rn(__fsub_rn(ldf(x, xdt, r * n + j), mean[r]), rstd[r]));
        if (db)
            sb = __fadd_rn(sb, d);
    }
    if (dg)
        dg[j] = sg;
    if (db)
        db[j] = sb;
}

extern "C" int rl_cuda_layernorm_backward(rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
                                          const float *mean, const float *rstd, const void *dy, int dy_dt, void *dx,
                                          int dx_dt, void *dgamma, int dg_dt, void *dbeta, int db_dt, int64_t rows,
                                          int64_t n, char *err, int len)
{
    if (rows <= 0 || n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    ln_bwd_dx_kernel<<<(unsigned)rows, NT, 0, cs(r)>>>(x, x_dt, gamma, g_dt, mean, rstd, dy, dy_dt, dx, dx_dt, n);
    if (launched("layernorm_backward kernel", err, len))
        return -1;
    if (!dgamma && !dbeta)
        return 0;
    float *fg = dgamma ? stage(r, dgamma, dg_dt, n, 1, err, len) : NULL;
    float *fb = dbeta ? stage(r, dbeta, db_dt, n, 1, err, len) : NULL;
    if ((dgamma && !fg) || (dbeta && !fb)) {
        if (fg != dgamma)
            tmp_free(r, fg);
        if (fb != dbeta)
            tmp_free(r, fb);
        return -1;
    }
    ln_bwd_params_kernel<<<nblocks(n, 128), 128, 0, cs(r)>>>(x, x_dt, mean, rstd, dy, dy_dt, fg, fb, rows, n);
    int rc = launched("layernorm_backward (gamma/beta) kernel", err, len);
    unstage(r, fg, dgamma, dg_dt, n);
    unstage(r, fb, dbeta, db_dt, n);
    return rc;
}

/* ------------------------------------------------------------------ softmax */

/* One block per row, max-subtracted; y may alias x (each element is read, then written, by
 * the same thread after the reductions). */
__global__ void softmax_fwd_kernel(const void *x, int xdt, void *y, int ydt, int64_t n)
{
    __shared__ float shf[NT];
    __shared__ double shd[NT];
    int64_t base = (int64_t)blockIdx.x * n;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        mx = fmaxf(mx, ldf(x, xdt, base + j));
    mx = block_max(mx, shf);
    double z = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        z += expf(__fsub_rn(ldf(x, xdt, base + j), mx));
    z = block_sum(z, shd);
    float inv = (float)(1.0 / z);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        stf(y, ydt, base + j, __fmul_rn(expf(__fsub_rn(ldf(x, xdt, base + j), mx)), inv));
}

extern "C" int rl_cuda_softmax_forward(rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t rows,
                                       int64_t n, char *err, int len)
{
    if (rows <= 0 || n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    softmax_fwd_kernel<<<(unsigned)rows, NT, 0, cs(r)>>>(x, x_dt, y, y_dt, n);
    return launched("softmax kernel", err, len);
}

__global__ void softmax_bwd_kernel(const void *y, int ydt, const void *dy, int dydt, void *dx, int dxdt, int64_t n)
{
    __shared__ double sh[NT];
    int64_t base = (int64_t)blockIdx.x * n;
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        s += (double)ldf(dy, dydt, base + j) * ldf(y, ydt, base + j);
    s = block_sum(s, sh);
    float fs = (float)s;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        stf(dx, dxdt, base + j, __fmul_rn(ldf(y, ydt, base + j), __fsub_rn(ldf(dy, dydt, base + j), fs)));
}

extern "C" int rl_cuda_softmax_backward(rl_cuda_rank *r, const void *y, int y_dt, const void *dy, int dy_dt,
                                        void *dx, int dx_dt, int64_t rows, int64_t n, char *err, int len)
{
    if (rows <= 0 || n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    softmax_bwd_kernel<<<(unsigned)rows, NT, 0, cs(r)>>>(y, y_dt, dy, dy_dt, dx, dx_dt, n);
    return launched("softmax_backward kernel", err, len);
}

/* ------------------------------------------------------------------ causal attention */
/* q, k, v, out are [B, S, H] with H = nh·hd (head h at columns h·hd ..); probs [B, nh, S, S]. */

#define AT 128 /* threads per attention block */

/* One block per query row (b, h, i): scores over j ≤ i, softmax into probs, out = P·V. */
__global__ void attn_fwd_kernel(const void *q, int qdt, const void *k, int kdt, const void *v, int vdt, float *probs,
                                void *out, int odt, int64_t S, int64_t H, int nh, int64_t hd, float scale)
{
    __shared__ float shf[AT];
    __shared__ double shd[AT];
    int64_t row = blockIdx.x, i = row % S, bh = row / S, h = bh % nh, b = bh / nh;
    float *p = probs + row * S;
    int64_t qo = (b * S + i) * H + h * hd;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
        float s = 0;
        if (j <= i) {
            int64_t ko = (b * S + j) * H + h * hd;
            for (int64_t d = 0; d < hd; d++)
                s = madd(s, ldf(q, qdt, qo + d), ldf(k, kdt, ko + d));
            s = __fmul_rn(s, scale);
            mx = fmaxf(mx, s);
        }
        p[j] = s;
    }
    mx = block_max(mx, shf);
    double z = 0;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
        float e = expf(__fsub_rn(p[j], mx));
        p[j] = e;
        z += e;
    }
    z = block_sum(z, shd);
    float inv = (float)(1.0 / z);
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x)
        p[j] = j <= i ? __fmul_rn(p[j], inv) : 0.0f;
    __syncthreads();
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = 0;
        for (int64_t j = 0; j <= i; j++)
            o = madd(o, p[j], ldf(v, vdt, (b * S + j) * H + h * hd + d));
        stf(out, odt, qo + d, o);
    }
}

extern "C" int rl_cuda_attention_forward(rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt,
                                         const void *v, int v_dt, float *probs, void *out, int out_dt, int64_t B,
                                         int64_t S, int64_t H, int n_heads, char *err, int len)
{
    if (B <= 0 || S <= 0 || H <= 0)
        return 0;
    int64_t hd = H / n_heads;
    rl_cuda_rank_device(r);
    attn_fwd_kernel<<<(unsigned)(B * n_heads * S), AT, 0, cs(r)>>>(q, q_dt, k, k_dt, v, v_dt, probs, out, out_dt, S,
                                                                    H, n_heads, hd, 1.0f / sqrtf((float)hd));
    return launched("attention kernel", err, len);
}

/* One block per query row (b, h, i): dp_j = dO_i·V_j, ds_ij = P_ij(dp_j − Σ_j P_ij dp_j)·scale
 * into ds; dQ_i = Σ_j ds_ij K_j. */
__global__ void attn_bwd_q_kernel(const void *k, int kdt, const void *v, int vdt, const float *probs, const void *dout,
                                  int dodt, float *ds, void *dq, int dqdt, int64_t S, int64_t H, int nh, int64_t hd,
                                  float scale)
{
    __shared__ double shd[AT];
    int64_t row = blockIdx.x, i = row % S, bh = row / S, h = bh % nh, b = bh / nh;
    const float *p = probs + row * S;
    float *dsr = ds + row * S;
    int64_t qo = (b * S + i) * H + h * hd;
    double rowdot = 0;
    for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) {
        int64_t vo = (b * S + j) * H + h * hd;
        float s = 0;
        for (int64_t d = 0; d < hd; d++)
            s = madd(s, ldf(dout, dodt, qo + d), ldf(v, vdt, vo + d));
        dsr[j] = s; /* dp_j for now */
        rowdot += (double)s * p[j];
    }
    rowdot = block_sum(rowdot, shd);
    float rd = (float)rowdot;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x)
        dsr[j] = j <= i ? __fmul_rn(__fmul_rn(p[j], __fsub_rn(dsr[j], rd)), scale) : 0.0f;
    __syncthreads();
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float g = 0;
        for (int64_t j = 0; j <= i; j++)
            g = madd(g, dsr[j], ldf(k, kdt, (b * S + j) * H + h * hd + d));
        stf(dq, dqdt, qo + d, g);
    }
}

/* One block per key row (b, h, j): dK_j = Σ_{i≥j} ds_ij Q_i, dV_j = Σ_{i≥j} P_ij dO_i (i in order). */
__global__ void attn_bwd_kv_kernel(const void *q, int qdt, const float *probs, const void *dout, int dodt,
                                   const float *ds, void *dk, int dkdt, void *dv, int dvdt, int64_t S, int64_t H, int nh,
                                   int64_t hd)
{
    int64_t row = blockIdx.x, j = row % S, bh = row / S, h = bh % nh, b = bh / nh;
    int64_t ko = (b * S + j) * H + h * hd;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float gk = 0, gv = 0;
        for (int64_t i = j; i < S; i++) {
            int64_t pi = (bh * S + i) * S + j, qo = (b * S + i) * H + h * hd + d;
            gv = madd(gv, probs[pi], ldf(dout, dodt, qo));
            gk = madd(gk, ds[pi], ldf(q, qdt, qo));
        }
        stf(dk, dkdt, ko + d, gk);
        stf(dv, dvdt, ko + d, gv);
    }
}

extern "C" int rl_cuda_attention_backward(rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt,
                                          const void *v, int v_dt, const float *probs, const void *dout, int do_dt,
                                          void *dq, int dq_dt, void *dk, int dk_dt, void *dv, int dv_dt, int64_t B,
                                          int64_t S, int64_t H, int n_heads, char *err, int len)
{
    if (B <= 0 || S <= 0 || H <= 0)
        return 0;
    int64_t hd = H / n_heads, rows = B * n_heads * S;
    rl_cuda_rank_device(r);
    float *ds = (float *)tmp_alloc(r, rows * S * 4, err, len);
    if (!ds)
        return -1;
    attn_bwd_q_kernel<<<(unsigned)rows, AT, 0, cs(r)>>>(k, k_dt, v, v_dt, probs, dout, do_dt, ds, dq, dq_dt, S, H,
                                                         n_heads, hd, 1.0f / sqrtf((float)hd));
    int rc = launched("attention_backward (dq) kernel", err, len);
    if (!rc) {
        attn_bwd_kv_kernel<<<(unsigned)rows, 64, 0, cs(r)>>>(q, q_dt, probs, dout, do_dt, ds, dk, dk_dt, dv, dv_dt, S,
                                                              H, n_heads, hd);
        rc = launched("attention_backward (dk, dv) kernel", err, len);
    }
    tmp_free(r, ds);
    return rc;
}

/* ------------------------------------------------------------------ rows: embedding, gather, scatter */

/* dst[i,:] = (acc ? dst[i,:] : 0) + scale[i]·src[rows[i],:] (scale NULL: 1). */
__global__ void gather_kernel(const void *src, int sdt, const int64_t *rows, const float *scale, void *dst, int ddt,
                              int acc, int64_t n, int64_t h)
{
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n * h)
        return;
    int64_t i = e / h, j = e % h;
    float v = ldf(src, sdt, rows[i] * h + j);
    if (scale)
        v = __fmul_rn(scale[i], v);
    if (acc)
        v = __fadd_rn(ldf(dst, ddt, e), v);
    stf(dst, ddt, e, v);
}

extern "C" int rl_cuda_gather_rows(rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows,
                                   const float *scale, int accumulate, void *dst, int dst_dt, int64_t n, int64_t h,
                                   char *err, int len)
{
    if (n <= 0 || h <= 0)
        return 0;
    rl_cuda_rank_device(r);
    int64_t *drows = (int64_t *)tmp_from_host(r, rows, n * 8, err, len);
    float *dscale = scale ? (float *)tmp_from_host(r, scale, n * 4, err, len) : NULL;
    int rc = -1;
    if (drows && (!scale || dscale)) {
        gather_kernel<<<nblocks(n * h, NT), NT, 0, cs(r)>>>(src, src_dt, drows, dscale, dst, dst_dt, accumulate, n, h);
        rc = launched("gather kernel", err, len);
    }
    tmp_free(r, drows);
    tmp_free(r, dscale);
    return rc;
}

/* dst[rows[i],:] += scale[i]·src[i,:]: one thread per column, i in order (repeated rows add
 * up in the CPU's order; no atomics). dst is an f32 view. */
__global__ void scatter_kernel(const void *src, int sdt, const int64_t *rows, const float *scale, float *dst,
                               int64_t n, int64_t h)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= h)
        return;
    for (int64_t i = 0; i < n; i++) {
        float v = ldf(src, sdt, i * h + j);
        if (scale)
            v = __fmul_rn(scale[i], v);
        float *d = dst + rows[i] * h + j;
        *d = __fadd_rn(*d, v);
    }
}

extern "C" int rl_cuda_scatter_add_rows(rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows,
                                        const float *scale, void *dst, int dst_dt, int64_t dst_numel, int64_t n,
                                        int64_t h, char *err, int len)
{
    if (n <= 0 || h <= 0)
        return 0;
    rl_cuda_rank_device(r);
    int64_t *drows = (int64_t *)tmp_from_host(r, rows, n * 8, err, len);
    float *dscale = scale ? (float *)tmp_from_host(r, scale, n * 4, err, len) : NULL;
    float *f = drows && (!scale || dscale) ? stage(r, dst, dst_dt, dst_numel, 1, err, len) : NULL;
    int rc = -1;
    if (f) {
        scatter_kernel<<<nblocks(h, 64), 64, 0, cs(r)>>>(src, src_dt, drows, dscale, f, n, h);
        rc = launched("scatter_add kernel", err, len);
        unstage(r, f, dst, dst_dt, dst_numel);
    }
    tmp_free(r, drows);
    tmp_free(r, dscale);
    return rc;
}

/* ------------------------------------------------------------------ losses and sums */

/* One block per row: loss_r = logsumexp(l) − l[t] (double), dl = g·(softmax − onehot). */
__global__ void xent_kernel(const void *logits, int ldt, const int *targets, float g, void *dl, int dldt,
                            double *rowloss, int64_t V)
{
    __shared__ float shf[NT];
    __shared__ double shd[NT];
    int64_t r = blockIdx.x, base = r * V;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
        mx = fmaxf(mx, ldf(logits, ldt, base + j));
    mx = block_max(mx, shf);
    double z = 0;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
        z += exp((double)__fsub_rn(ldf(logits, ldt, base + j), mx));
    z = block_sum(z, shd);
    double logz = log(z) + mx;
    int t = targets[r];
    if (threadIdx.x == 0)
        rowloss[r] = logz - ldf(logits, ldt, base + t);
    if (dl)
        for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
            float pj = (float)exp((double)ldf(logits, ldt, base + j) - logz);
            stf(dl, dldt, base + j, __fmul_rn(g, __fsub_rn(pj, j == t ? 1.0f : 0.0f)));
        }
}

extern "C" int rl_cuda_cross_entropy(rl_cuda_rank *r, const void *logits, int l_dt, const int *targets, float g,
                                     void *dlogits, int dl_dt, int64_t rows, int64_t V, double *total, char *err,
                                     int len)
{
    *total = 0;
    if (rows <= 0 || V <= 0)
        return 0;
    rl_cuda_rank_device(r);
    int *dt = (int *)tmp_from_host(r, targets, rows * 4, err, len);
    double *rl = dt ? (double *)tmp_alloc(r, rows * 8, err, len) : NULL;
    double *h = (double *)malloc((size_t)rows * 8);
    int rc = -1;
    if (!h)
        snprintf(err, (size_t)len, "out of host memory for %lld row losses", (long long)rows);
    if (rl && h) {
        xent_kernel<<<(unsigned)rows, NT, 0, cs(r)>>>(logits, l_dt, dt, g, dlogits, dl_dt, rl, V);
        rc = launched("cross_entropy kernel", err, len);
        if (!rc && cudaMemcpyAsync(h, rl, (size_t)rows * 8, cudaMemcpyDeviceToHost, cs(r)) != cudaSuccess)
            rc = launched("cross_entropy copy", err, len);
        if (!rc)
            rc = wait_stream(r, "cross_entropy", err, len);
        for (int64_t i = 0; !rc && i < rows; i++) /* row order, as the CPU */
            *total += h[i];
    }
    free(h);
    tmp_free(r, dt);
    tmp_free(r, rl);
    return rc;
}

#define RB 1024 /* blocks of the partial sums */

/* Partial sums per block (double): mode 0 Σx, 1 Σx², 2 Σ(p−t)² with dp = g·(p−t). */
__global__ void partial_kernel(const void *x, int xdt, const void *t, int tdt, void *dp, int dpdt, float g, int mode,
                               int64_t n, double *part)
{
    __shared__ double sh[NT];
    double s = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float v = ldf(x, xdt, i);
        if (mode == 2) {
            float d = __fsub_rn(v, ldf(t, tdt, i));
            s += (double)d * d;
            if (dp)
                stf(dp, dpdt, i, __fmul_rn(g, d));
        } else {
            s += mode ? (double)v * v : (double)v;
        }
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* Runs partial_kernel and adds the partials on the host, in block order. */
static int partial_sum(rl_cuda_rank *r, const void *x, int xdt, const void *t, int tdt, void *dp, int dpdt, float g,
                       int mode, int64_t n, double *out, char *err, int len)
{
    *out = 0;
    if (n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    unsigned nb = nblocks(n, NT) < RB ? nblocks(n, NT) : RB;
    double *part = (double *)tmp_alloc(r, (int64_t)nb * 8, err, len), h[RB];
    if (!part)
        return -1;
    partial_kernel<<<nb, NT, 0, cs(r)>>>(x, xdt, t, tdt, dp, dpdt, g, mode, n, part);
    int rc = launched(mode == 2 ? "mse kernel" : "sum kernel", err, len);
    if (!rc && cudaMemcpyAsync(h, part, nb * 8, cudaMemcpyDeviceToHost, cs(r)) != cudaSuccess)
        rc = launched("sum copy", err, len);
    if (!rc)
        rc = wait_stream(r, "sum", err, len);
    for (unsigned b = 0; !rc && b < nb; b++)
        *out += h[b];
    tmp_free(r, part);
    return rc;
}

extern "C" int rl_cuda_sum(rl_cuda_rank *r, const void *x, int x_dt, int64_t n, int squares, double *out, char *err,
                           int len)
{
    return partial_sum(r, x, x_dt, NULL, 0, NULL, 0, 0.0f, squares ? 1 : 0, n, out, err, len);
}

extern "C" int rl_cuda_mse(rl_cuda_rank *r, const void *pred, int p_dt, const void *target, int t_dt, float g,
                           void *dpred, int dp_dt, int64_t n, double *total, char *err, int len)
{
    return partial_sum(r, pred, p_dt, target, t_dt, dpred, dp_dt, g, 2, n, total, err, len);
}

/* ------------------------------------------------------------------ SGD */

/* w ← w − lr·g on the master (or the f32 param); param ← w. */
__global__ void sgd_kernel(float lr, void *param, int pdt, const void *grad, int gdt, float *master, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float w = master ? master[i] : ((float *)param)[i];
    w = __fsub_rn(w, __fmul_rn(lr, ldf(grad, gdt, i)));
    if (master)
        master[i] = w;
    stf(param, pdt, i, w);
}

extern "C" int rl_cuda_sgd(rl_cuda_rank *r, float lr, void *param, int param_dt, const void *grad, int grad_dt,
                           float *master, int64_t n, char *err, int len)
{
    if (!master && param_dt) {
        snprintf(err, (size_t)len, "sgd on the GPU: a bf16 param needs an f32 master copy");
        return -1;
    }
    if (n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    sgd_kernel<<<nblocks(n, NT), NT, 0, cs(r)>>>(lr, param, param_dt, grad, grad_dt, master, n);
    return launched("sgd kernel", err, len);
}
