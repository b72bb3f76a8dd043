/* cuda_common.cuh — helpers shared by the .cu files only: error checks that write a
 * one-line message and return -1, bf16 conversions identical to bf16.h, the rank's
 * cuBLAS handle and streams. */
#ifndef RL_CUDA_COMMON_CUH
#define RL_CUDA_COMMON_CUH
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "cuda_backend.h"

/* On a CUDA error: message "what: reason" into err (a char *, with int len in scope), return -1. */
#define RL_CU(call, what)                                                                      \
    do {                                                                                       \
        cudaError_t rl_e_ = (call);                                                            \
        if (rl_e_ != cudaSuccess) {                                                            \
            if (err)                                                                           \
                snprintf(err, (size_t)len, "%s: %s", what, cudaGetErrorString(rl_e_));         \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* f32 → bf16, round to nearest even, NaN stays a quiet NaN (as rl_f32_to_bf16). */
__host__ __device__ static inline uint16_t rl_dev_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bf16 → f32 (exact). */
__host__ __device__ static inline float rl_dev_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The rank's cuBLAS handle and streams (cuda_backend.cu). */
cublasHandle_t rl_cuda_rank_blas(rl_cuda_rank *r);
/* cuBLAS's GemmEx (the library is opened at the first rank's creation: rl_cuda_blas_open). */
typedef cublasStatus_t (*rl_gemm_ex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void *, const void *, cudaDataType, int, const void *, cudaDataType,
                                        int, const void *, void *, cudaDataType, int, cublasComputeType_t,
                                        cublasGemmAlgo_t);
rl_gemm_ex_fn rl_cuda_blas_gemm_ex(void);
cudaStream_t rl_cuda_rank_cstream(rl_cuda_rank *r, int which);

#endif
