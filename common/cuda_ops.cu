/* cuda_ops.cu — the first GPU kernels behind the ops API (ops.h): GEMM through cublasGemmEx
 * with f32 accumulation (f32 and bf16), elementwise ops, GeLU, AdamW. Row-major as ops.h;
 * every call runs on the rank's compute stream and returns when the kernel has been queued
 * (errors of the launch are reported; execution errors show at the next synchronisation).
 * Entry points rl_cuda_* are declared in cuda_backend.h. Has not run on a GPU yet. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include "cuda_backend.h"
#include "cuda_common.cuh"

#define RL_BLAS(call, what)                                                                    \
    do {                                                                                       \
        cublasStatus_t rl_s_ = (call);                                                         \
        if (rl_s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
            snprintf(err, (size_t)len, "%s: cuBLAS status %d", what, (int)rl_s_);              \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

static inline unsigned blocks_for(int64_t n) { return (unsigned)((n + 255) / 256); }

__device__ static inline float ld(const void *p, int dt, int64_t i)
{
    return dt ? rl_dev_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

__device__ static inline void st(void *p, int dt, int64_t i, float v)
{
    if (dt)
        ((uint16_t *)p)[i] = rl_dev_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* ------------------------------------------------------------------ GEMM */

__global__ void mm_convert_kernel(void *dst, int dd, const void *src, int sd, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        st(dst, dd, i, ld(src, sd, i));
}

/* An f32 copy of n elements of x (dtype dt) in stream-ordered scratch (left unset unless
 * load); NULL on failure. */
static void *f32_copy(cudaStream_t s, const void *x, int dt, int64_t n, int load = 1)
{
    void *p = NULL;
    if (cudaMallocAsync(&p, (size_t)(n > 0 ? n : 1) * 4, s) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    if (n > 0 && load)
        mm_convert_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, 0, x, dt, n);
    return p;
}

extern "C" int rl_cuda_matmul(rl_cuda_rank *r, const void *a, int a_dtype, int trans_a, const void *b, int b_dtype,
                              int trans_b, void *c, int c_dtype, int64_t m, int64_t n, int64_t k, float beta,
                              char *err, int len)
{
    if (m <= 0 || n <= 0)
        return 0;
    rl_cuda_rank_device(r);
    cudaStream_t s = rl_cuda_rank_cstream(r, 0);
    if (k <= 0) { /* an empty product: c ← beta·c, as the CPU */
        if (beta == 0.0f)
            RL_CU(cudaMemsetAsync(c, 0, (size_t)(m * n) * (c_dtype ? 2 : 4), s), "cudaMemsetAsync");
        else
            return rl_cuda_scale(r, c, c_dtype, beta, m * n, err, len);
        return 0;
    }
    /* cublasGemmEx takes a and b of one type, and an f32 product into f32 only: a bf16 operand
     * beside an f32 one is widened to f32, and an f32 product into bf16 goes through f32. */
    const void *A = a, *B = b;
    void *C = c, *ta_ = NULL, *tb_ = NULL, *tc_ = NULL;
    int dt = a_dtype, cdt = c_dtype;
    if (a_dtype != b_dtype) {
        if (a_dtype)
            A = ta_ = f32_copy(s, a, 1, m * k);
        else
            B = tb_ = f32_copy(s, b, 1, k * n);
        dt = 0;
    }
    if (dt == 0 && c_dtype == 1) {
        C = tc_ = f32_copy(s, c, 1, m * n, beta != 0.0f);
        cdt = 0;
    }
    int rc = 0;
    if (!A || !B || !C) {
        snprintf(err, (size_t)len, "matmul on the GPU: no memory for an f32 copy of a bf16 operand");
        rc = -1;
    }
    if (!rc) {
        cublasHandle_t h = rl_cuda_rank_blas(r);
        float alpha = 1.0f;
        /* Row-major C[m,n] = op(A)·op(B) is column-major Cᵀ[n,m] = op(B)ᵀ·op(A)ᵀ: swap the
         * operands and keep the transpose flags. Leading dims are the row lengths. */
        int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
        cudaDataType_t tab = dt ? CUDA_R_16BF : CUDA_R_32F, tc = cdt ? CUDA_R_16BF : CUDA_R_32F;
        cublasStatus_t bs = rl_cuda_blas_gemm_ex()(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         (int)n, (int)m, (int)k, &alpha, B, tab, (int)ldb, A, tab, (int)lda, &beta, C,
                                         tc, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            snprintf(err, (size_t)len, "cublasGemmEx (m=%lld n=%lld k=%lld): cuBLAS status %d", (long long)m,
                     (long long)n, (long long)k, (int)bs);
            rc = -1;
        }
    }
    if (!rc && tc_)
        mm_convert_kernel<<<(unsigned)((m * n + 255) / 256), 256, 0, s>>>(c, 1, tc_, 0, m * n);
    if (ta_)
        cudaFreeAsync(ta_, s);
    if (tb_)
        cudaFreeAsync(tb_, s);
    if (tc_)
        cudaFreeAsync(tc_, s);
    return rc;
}

/* x[i] = a value in [-1, 1) hashed from (seed, i): GEMM timing inputs (zeros run faster than real data). */
__global__ void fill_random_kernel(void *x, int dt, int64_t n, uint32_t seed)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 2246822519u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    st(x, dt, i, (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

extern "C" double rl_cuda_gemm_tflops(rl_cuda_rank *r, int dtype, int64_t n, int iters, char *err, int len)
{
    size_t es = dtype ? 2 : 4;
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0, e1;
    rl_cuda_rank_device(r);
    if (cudaMalloc(&a, (size_t)(n * n) * es) != cudaSuccess || cudaMalloc(&b, (size_t)(n * n) * es) != cudaSuccess ||
        cudaMalloc(&c, (size_t)(n * n) * es) != cudaSuccess) {
        snprintf(err, (size_t)len, "GEMM benchmark: cudaMalloc of 3 x %lld x %lld failed", (long long)n, (long long)n);
        cudaFree(a);
        cudaFree(b);
        return -1;
    }
    cudaStream_t s = rl_cuda_rank_cstream(r, 0);
    unsigned blocks = (unsigned)((n * n + 255) / 256);
    fill_random_kernel<<<blocks, 256, 0, s>>>(a, dtype, n * n, 1u);
    fill_random_kernel<<<blocks, 256, 0, s>>>(b, dtype, n * n, 2u);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double tflops = -1;
    if (rl_cuda_matmul(r, a, dtype, 0, b, dtype, 0, c, dtype, n, n, n, 0.0f, err, len) == 0) { /* warm-up */
        cudaEventRecord(e0, s);
        int ok = 1;
        for (int i = 0; i < iters && ok; i++)
            ok = rl_cuda_matmul(r, a, dtype, 0, b, dtype, 0, c, dtype, n, n, n, 0.0f, err, len) == 0;
        cudaEventRecord(e1, s);
        float ms = 0;
        if (ok && cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms > 0)
            tflops = 2.0 * (double)n * (double)n * (double)n * iters / (ms * 1e-3) / 1e12;
        else if (ok)
            snprintf(err, (size_t)len, "GEMM benchmark: timing failed (%s)", cudaGetErrorString(cudaGetLastError()));
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return tflops;
}

/* ------------------------------------------------------------------ elementwise */

__global__ void add_kernel(const void *a, int adt, const void *b, int bdt, void *o, int odt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        st(o, odt, i, ld(a, adt, i) + ld(b, bdt, i));
}

__global__ void axpy_kernel(float alpha, const void *x, int xdt, void *y, int ydt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        st(y, ydt, i, __fadd_rn(ld(y, ydt, i), __fmul_rn(alpha, ld(x, xdt, i))));
}

__global__ void scale_kernel(void *x, int xdt, float alpha, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        st(x, xdt, i, __fmul_rn(alpha, ld(x, xdt, i)));
}

/* tanh as the CPU computes it (ops_nn.c fast_tanh): 1 − 2/(e^{2u} + 1), clamped at |u| > 15. */
__device__ static inline float cpu_tanh(float u)
{
    return u > 15.0f ? 1.0f : (u < -15.0f ? -1.0f : 1.0f - 2.0f / (expf(2.0f * u) + 1.0f));
}

/* GeLU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
__global__ void gelu_fwd_kernel(const void *x, int xdt, void *y, int ydt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = ld(x, xdt, i);
    float u = 0.7978845608f * (v + 0.044715f * v * v * v);
    st(y, ydt, i, 0.5f * v * (1.0f + cpu_tanh(u)));
}

__global__ void gelu_bwd_kernel(const void *x, int xdt, const void *dy, int dydt, void *dx, int dxdt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = ld(x, xdt, i);
    float u = 0.7978845608f * (v + 0.044715f * v * v * v);
    float t = cpu_tanh(u);
    float du = 0.7978845608f * (1.0f + 3.0f * 0.044715f * v * v);
    float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
    st(dx, dxdt, i, ld(dy, dydt, i) * g);
}

#define LAUNCH(kernel, n, ...)                                                                 \
    do {                                                                                       \
        if ((n) <= 0)                                                                          \
            return 0;                                                                          \
        rl_cuda_rank_device(r);                                                                \
        kernel<<<blocks_for(n), 256, 0, rl_cuda_rank_cstream(r, 0)>>>(__VA_ARGS__);            \
        RL_CU(cudaGetLastError(), #kernel);                                                    \
        return 0;                                                                              \
    } while (0)

extern "C" int rl_cuda_add(rl_cuda_rank *r, const void *a, int a_dt, const void *b, int b_dt, void *out, int out_dt,
                           int64_t n, char *err, int len)
{
    LAUNCH(add_kernel, n, a, a_dt, b, b_dt, out, out_dt, n);
}

extern "C" int rl_cuda_axpy(rl_cuda_rank *r, float alpha, const void *x, int x_dt, void *y, int y_dt, int64_t n,
                            char *err, int len)
{
    LAUNCH(axpy_kernel, n, alpha, x, x_dt, y, y_dt, n);
}

extern "C" int rl_cuda_scale(rl_cuda_rank *r, void *x, int x_dt, float alpha, int64_t n, char *err, int len)
{
    LAUNCH(scale_kernel, n, x, x_dt, alpha, n);
}

extern "C" int rl_cuda_gelu_forward(rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t n,
                                    char *err, int len)
{
    LAUNCH(gelu_fwd_kernel, n, x, x_dt, y, y_dt, n);
}

extern "C" int rl_cuda_gelu_backward(rl_cuda_rank *r, const void *x, int x_dt, const void *dy, int dy_dt, void *dx,
                                     int dx_dt, int64_t n, char *err, int len)
{
    LAUNCH(gelu_bwd_kernel, n, x, x_dt, dy, dy_dt, dx, dx_dt, n);
}

/* ------------------------------------------------------------------ AdamW */

/* w ← w − lr·(m̂/(√v̂+eps) + wd·w) on the master (or the f32 param), as rl_adamw_step: the same
 * f32 operations in the same order (no fused multiply-add) and m̂, v̂ divided in double by the
 * bias corrections, so the update is bitwise the CPU's. */
__global__ void adamw_kernel(float lr, float b1, float b2, float eps, float wd, double bc1, double bc2, void *param,
                             int pdt, const void *grad, int gdt, float *master, float *m, float *v, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float g = ld(grad, gdt, i);
    float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(__fsub_rn(1.0f, b1), g));
    float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, b2), g), g));
    m[i] = mi;
    v[i] = vi;
    float w = master ? master[i] : ((float *)param)[i];
    float mhat = __double2float_rn(__ddiv_rn((double)mi, bc1)), vhat = __double2float_rn(__ddiv_rn((double)vi, bc2));
    float upd = __fadd_rn(__fdiv_rn(mhat, __fadd_rn(__fsqrt_rn(vhat), eps)), __fmul_rn(wd, w));
    w = __fsub_rn(w, __fmul_rn(lr, upd));
    if (master)
        master[i] = w;
    st(param, pdt, i, w);
}

extern "C" int rl_cuda_adamw(rl_cuda_rank *r, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
                             void *param, int param_dt, const void *grad, int grad_dt, float *master, float *m,
                             float *v, int64_t n, char *err, int len)
{
    if (step < 1) {
        snprintf(err, (size_t)len, "adamw on the GPU: step %lld; steps count from 1", (long long)step);
        return -1;
    }
    if (!master && param_dt) {
        snprintf(err, (size_t)len, "adamw on the GPU: a bf16 param needs an f32 master copy");
        return -1;
    }
    double bc1 = 1.0 - pow((double)beta1, (double)step), bc2 = 1.0 - pow((double)beta2, (double)step);
    LAUNCH(adamw_kernel, n, lr, beta1, beta2, eps, wd, bc1, bc2, param, param_dt, grad, grad_dt, master, m, v, n);
}
