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

extern "C" int rl_cuda_matmul(rl_cuda_rank *r, const void *a, int a_dtype, int trans_a, const void *b, int b_dtype,
                              int trans_b, void *c, int c_dtype, int64_t m, int64_t n, int64_t k, float beta,
                              char *err, int len)
{
    if (a_dtype != b_dtype) {
        snprintf(err, (size_t)len, "matmul on the GPU: a is %s but b is %s; use one dtype for both",
                 a_dtype ? "bf16" : "f32", b_dtype ? "bf16" : "f32");
        return -1;
    }
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    rl_cuda_rank_device(r);
    cublasHandle_t h = rl_cuda_rank_blas(r);
    float alpha = 1.0f;
    /* Row-major C[m,n] = op(A)·op(B) is column-major Cᵀ[n,m] = op(B)ᵀ·op(A)ᵀ: swap the
     * operands and keep the transpose flags. Leading dims are the row lengths. */
    int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
    cudaDataType_t ta = a_dtype ? CUDA_R_16BF : CUDA_R_32F, tc = c_dtype ? CUDA_R_16BF : CUDA_R_32F;
    RL_BLAS(cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
                         (int)k, &alpha, b, ta, (int)ldb, a, ta, (int)lda, &beta, c, tc, (int)ldc,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    return 0;
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
    cudaMemset(a, 0, (size_t)(n * n) * es);
    cudaMemset(b, 0, (size_t)(n * n) * es);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaStream_t s = rl_cuda_rank_cstream(r, 0);
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
        st(y, ydt, i, ld(y, ydt, i) + alpha * ld(x, xdt, i));
}

__global__ void scale_kernel(void *x, int xdt, float alpha, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        st(x, xdt, i, alpha * ld(x, xdt, i));
}

/* GeLU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
__global__ void gelu_fwd_kernel(const void *x, int xdt, void *y, int ydt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = ld(x, xdt, i);
    float u = 0.7978845608f * (v + 0.044715f * v * v * v);
    st(y, ydt, i, 0.5f * v * (1.0f + tanhf(u)));
}

__global__ void gelu_bwd_kernel(const void *x, int xdt, const void *dy, int dydt, void *dx, int dxdt, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = ld(x, xdt, i);
    float u = 0.7978845608f * (v + 0.044715f * v * v * v);
    float t = tanhf(u);
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

/* w ← w − lr·(m̂/(√v̂+eps) + wd·w) on the master (or the f32 param), as rl_adamw_step. */
__global__ void adamw_kernel(float lr, float b1, float b2, float eps, float wd, float bc1, float bc2, void *param,
                             int pdt, const void *grad, int gdt, float *master, float *m, float *v, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float g = ld(grad, gdt, i);
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float w = master ? master[i] : ((float *)param)[i];
    float mhat = mi / bc1, vhat = vi / bc2;
    w = w - lr * (mhat / (sqrtf(vhat) + eps) + wd * w);
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
    float bc1 = (float)(1.0 - pow((double)beta1, (double)step)), bc2 = (float)(1.0 - pow((double)beta2, (double)step));
    LAUNCH(adamw_kernel, n, lr, beta1, beta2, eps, wd, bc1, bc2, param, param_dt, grad, grad_dt, master, m, v, n);
}
