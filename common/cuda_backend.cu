/* cuda_backend.cu — devices, per-rank streams, device memory and the small kernels of the
 * device-memory transport (reduction in rank order, fill, dtype conversion). Plain-C API in
 * cuda_backend.h. Has not run on a GPU yet: see docs/gpu-runs.md. */
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_backend.h"
#include "cuda_common.cuh"

/* cuBLAS, opened when the first rank needs it instead of linked: loading the library costs
 * every process that links it about 80 ms at start (its relocations), GPU or not. */
static struct {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    rl_gemm_ex_fn gemm_ex;
    char err[300];
} blas_lib;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_load(void)
{
    char name[32];
    snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(blas_lib.err, sizeof blas_lib.err, "cannot open cuBLAS (%s): %s", name, dlerror());
        return;
    }
    static const char *const names[] = { "cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasGemmEx" };
    void *fn[4];
    for (int i = 0; i < 4; i++)
        if (!(fn[i] = dlsym(h, names[i]))) {
            snprintf(blas_lib.err, sizeof blas_lib.err, "%s has no %s", name, names[i]);
            return;
        }
    blas_lib.create = (decltype(blas_lib.create))fn[0];
    blas_lib.destroy = (decltype(blas_lib.destroy))fn[1];
    blas_lib.set_stream = (decltype(blas_lib.set_stream))fn[2];
    blas_lib.gemm_ex = (decltype(blas_lib.gemm_ex))fn[3];
}

extern "C" int rl_cuda_blas_open(char *err, int len)
{
    pthread_once(&blas_once, blas_load);
    if (blas_lib.err[0]) {
        snprintf(err, (size_t)len, "%s", blas_lib.err);
        return -1;
    }
    return 0;
}

rl_gemm_ex_fn rl_cuda_blas_gemm_ex(void) { return blas_lib.gemm_ex; }

/* A pair of timing events: where a span starts and stops on a stream. */
typedef struct rl_timer {
    cudaEvent_t ev[2];
    int used, stopped, refs;     /* refs: trace events attached */
} rl_timer;

/* A trace event (index in the rank's trace) waiting for its timer. */
typedef struct rl_attach {
    int64_t index;
    int timer;
} rl_attach;

struct rl_cuda_rank {
    int dev;
    cudaStream_t stream[2];      /* 0 compute, 1 comm */
    cudaEvent_t ready;           /* compute → comm ordering */
    cublasHandle_t blas;
    /* timeline: timers are started by the rank thread (ops) and the comm worker (calls) */
    pthread_mutex_t tmu;
    int tmu_ok;
    cudaEvent_t base;            /* time 0 of this rank's GPU times ... */
    double base_s;               /* ... which is base_s on the run's wall clock */
    int has_base;
    rl_timer *timers;
    int ntimers;
    rl_attach *att;
    int natt, capatt;
    int open_timer;              /* the op between rl_cuda_op_begin and rl_cuda_op_end, or -1 */
};

/* ------------------------------------------------------------------ devices */

extern "C" int rl_cuda_device_count(char *why, int len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        if (why)
            snprintf(why, (size_t)len, "no CUDA driver/GPU found (cudaGetDeviceCount: %s)",
                     e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        cudaGetLastError(); /* clear the sticky-free error state */
        return 0;
    }
    return n;
}

extern "C" char *rl_cuda_device_name(int dev, char *buf, int len)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        snprintf(buf, (size_t)len, "device %d (properties unavailable)", dev);
        return buf;
    }
    snprintf(buf, (size_t)len, "%s (sm_%d%d, %.1f GiB)", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

extern "C" int rl_cuda_enable_peers(int n, char *err, int len)
{
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            int ok = 0;
            RL_CU(cudaDeviceCanAccessPeer(&ok, a, b), "cudaDeviceCanAccessPeer");
            if (!ok) {
                snprintf(err, (size_t)len,
                         "GPU %d cannot access GPU %d directly (no peer access), which the device-memory "
                         "transport needs; run with --ranks <= the number of GPUs (NCCL), or "
                         "CUDA_VISIBLE_DEVICES=0",
                         a, b);
                return -1;
            }
            RL_CU(cudaSetDevice(a), "cudaSetDevice");
            cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                cudaGetLastError();
            else
                RL_CU(e, "cudaDeviceEnablePeerAccess");
        }
    return 0;
}

/* ------------------------------------------------------------------ per-rank state */

extern "C" rl_cuda_rank *rl_cuda_rank_new(int dev, char *err, int len)
{
    rl_cuda_rank *r = (rl_cuda_rank *)calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, (size_t)len, "out of host memory");
        return NULL;
    }
    r->dev = dev;
    r->open_timer = -1;
    r->tmu_ok = pthread_mutex_init(&r->tmu, NULL) == 0;
    cudaError_t e = cudaSetDevice(dev);
    for (int i = 0; i < 2 && e == cudaSuccess; i++)
        e = cudaStreamCreateWithFlags(&r->stream[i], cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&r->ready, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        snprintf(err, (size_t)len, "GPU %d: could not create streams/events: %s", dev, cudaGetErrorString(e));
        rl_cuda_rank_free(r);
        return NULL;
    }
    if (rl_cuda_blas_open(err, len)) {
        rl_cuda_rank_free(r);
        return NULL;
    }
    cublasStatus_t b = blas_lib.create(&r->blas);
    if (b != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, (size_t)len, "GPU %d: cublasCreate failed (status %d)", dev, (int)b);
        r->blas = NULL;
        rl_cuda_rank_free(r);
        return NULL;
    }
    blas_lib.set_stream(r->blas, r->stream[0]);
    return r;
}

extern "C" void rl_cuda_rank_free(rl_cuda_rank *r)
{
    if (!r)
        return;
    cudaSetDevice(r->dev);
    if (r->blas)
        blas_lib.destroy(r->blas);
    for (int i = 0; i < 2; i++) {
        if (r->stream[i]) {
            cudaStreamSynchronize(r->stream[i]);
            cudaStreamDestroy(r->stream[i]);
        }
    }
    if (r->ready)
        cudaEventDestroy(r->ready);
    if (r->open_timer != -1)
        nvtxRangePop();
    for (int i = 0; i < r->ntimers; i++)
        for (int k = 0; k < 2; k++)
            if (r->timers[i].ev[k])
                cudaEventDestroy(r->timers[i].ev[k]);
    if (r->has_base)
        cudaEventDestroy(r->base);
    free(r->timers);
    free(r->att);
    if (r->tmu_ok)
        pthread_mutex_destroy(&r->tmu);
    free(r);
}

extern "C" int rl_cuda_rank_device(rl_cuda_rank *r)
{
    cudaSetDevice(r->dev);
    return r->dev;
}

extern "C" void *rl_cuda_rank_stream(rl_cuda_rank *r, int which) { return (void *)r->stream[which ? 1 : 0]; }

/* The cuBLAS handle (for cuda_ops.cu). */
cublasHandle_t rl_cuda_rank_blas(rl_cuda_rank *r) { return r->blas; }
cudaStream_t rl_cuda_rank_cstream(rl_cuda_rank *r, int which) { return r->stream[which ? 1 : 0]; }

extern "C" int rl_cuda_comm_after_compute(rl_cuda_rank *r, char *err, int len)
{
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    RL_CU(cudaEventRecord(r->ready, r->stream[0]), "cudaEventRecord");
    RL_CU(cudaStreamWaitEvent(r->stream[1], r->ready, 0), "cudaStreamWaitEvent");
    return 0;
}

extern "C" int rl_cuda_stream_sync(rl_cuda_rank *r, int which, char *err, int len)
{
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    RL_CU(cudaStreamSynchronize(r->stream[which ? 1 : 0]), "cudaStreamSynchronize");
    return 0;
}

extern "C" int rl_cuda_stream_query(rl_cuda_rank *r, int which, char *err, int len)
{
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    cudaError_t e = cudaStreamQuery(r->stream[which ? 1 : 0]);
    if (e == cudaErrorNotReady)
        return 0;
    RL_CU(e, "cudaStreamQuery");
    return 1;
}

/* ------------------------------------------------------------------ memory */

extern "C" void *rl_cuda_malloc(rl_cuda_rank *r, int64_t bytes, char *err, int len)
{
    void *p = NULL;
    if (r && cudaSetDevice(r->dev) != cudaSuccess) {
        snprintf(err, (size_t)len, "cudaSetDevice(%d) failed", r->dev);
        return NULL;
    }
    cudaError_t e = cudaMalloc(&p, bytes > 0 ? (size_t)bytes : 1);
    if (e == cudaSuccess)
        e = cudaMemset(p, 0, bytes > 0 ? (size_t)bytes : 1);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        snprintf(err, (size_t)len, "cudaMalloc of %lld bytes on GPU %d failed (%s; %.2f of %.2f GiB free)",
                 (long long)bytes, r ? r->dev : -1, cudaGetErrorString(e), fr / 1073741824.0, tot / 1073741824.0);
        if (p)
            cudaFree(p);
        return NULL;
    }
    return p;
}

extern "C" void rl_cuda_free(void *p)
{
    if (p)
        cudaFree(p);
}

extern "C" int rl_cuda_memcpy(rl_cuda_rank *r, int which, void *dst, const void *src, int64_t bytes, char *err,
                              int len)
{
    if (bytes <= 0 || dst == src)
        return 0;
    if (!r) {
        RL_CU(cudaMemcpy(dst, src, (size_t)bytes, cudaMemcpyDefault), "cudaMemcpy");
        return 0;
    }
    cudaStream_t s = r->stream[which ? 1 : 0];
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    RL_CU(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    RL_CU(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return 0;
}

/* ------------------------------------------------------------------ kernels */

#define RL_MAX_SRCS 64
struct rl_srcs { const void *p[RL_MAX_SRCS]; };

/* One thread per element; the sources are read in rank order so sums match the host's. */
__global__ void reduce_kernel(rl_srcs s, int n, int dtype, int op, void *dst, int64_t lo, int64_t hi)
{
    int64_t i = lo + (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= hi)
        return;
    float acc = 0;
    for (int q = 0; q < n; q++) {
        float v = dtype ? rl_dev_bf16_to_f32(((const uint16_t *)s.p[q])[i]) : ((const float *)s.p[q])[i];
        if (q == 0)
            acc = v;
        else if (op == 2)
            acc = v > acc ? v : acc;
        else if (op == 3)
            acc = v < acc ? v : acc;
        else
            acc = __fadd_rn(acc, v);
    }
    if (op == 1)
        acc = __fdiv_rn(acc, (float)n);
    if (dtype)
        ((uint16_t *)dst)[i] = rl_dev_f32_to_bf16(acc);
    else
        ((float *)dst)[i] = acc;
}

extern "C" int rl_cuda_reduce(rl_cuda_rank *r, int which, int dtype, int op, int n, const void *const *srcs,
                              void *dst, int64_t lo, int64_t hi, char *err, int len)
{
    if (n < 1 || n > RL_MAX_SRCS) {
        snprintf(err, (size_t)len, "device transport: a reduction over %d ranks; it supports 1 to %d", n,
                 RL_MAX_SRCS);
        return -1;
    }
    if (hi <= lo)
        return 0;
    rl_srcs s;
    memset(&s, 0, sizeof s);
    for (int q = 0; q < n; q++)
        s.p[q] = srcs[q];
    cudaStream_t st = r->stream[which ? 1 : 0];
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    int64_t blocks = (hi - lo + 255) / 256;
    reduce_kernel<<<(unsigned)blocks, 256, 0, st>>>(s, n, dtype, op, dst, lo, hi);
    RL_CU(cudaGetLastError(), "reduce kernel launch");
    RL_CU(cudaStreamSynchronize(st), "reduce kernel");
    return 0;
}

/* ------------------------------------------------------------------ timeline: events and NVTX */

extern "C" void rl_cuda_nvtx_push(const char *name) { nvtxRangePushA(name ? name : "?"); }
extern "C" void rl_cuda_nvtx_pop(void) { nvtxRangePop(); }

extern "C" int rl_cuda_timer_base(rl_cuda_rank *r, double now_s, char *err, int len)
{
    RL_CU(cudaSetDevice(r->dev), "cudaSetDevice");
    if (!r->has_base)
        RL_CU(cudaEventCreate(&r->base), "cudaEventCreate");
    r->has_base = 1;
    RL_CU(cudaEventRecord(r->base, r->stream[0]), "cudaEventRecord");
    RL_CU(cudaEventSynchronize(r->base), "cudaEventSynchronize");
    r->base_s = now_s;
    return 0;
}

/* A free timer slot with its two events (grows the pool); -1 when CUDA refuses. Under tmu. */
static int timer_alloc(rl_cuda_rank *r)
{
    for (int i = 0; i < r->ntimers; i++)
        if (!r->timers[i].used) {
            r->timers[i].used = 1;
            r->timers[i].stopped = 0;
            r->timers[i].refs = 0;
            return i;
        }
    int n = r->ntimers ? r->ntimers * 2 : 64;
    rl_timer *t = (rl_timer *)realloc(r->timers, (size_t)n * sizeof *t);
    if (!t)
        return -1;
    memset(t + r->ntimers, 0, (size_t)(n - r->ntimers) * sizeof *t);
    r->timers = t;
    int id = r->ntimers;
    for (int i = id; i < n; i++)
        for (int k = 0; k < 2; k++)
            if (cudaEventCreate(&t[i].ev[k]) != cudaSuccess) {
                cudaGetLastError();
                t[i].ev[k] = NULL;
            }
    r->ntimers = n;
    if (!t[id].ev[0] || !t[id].ev[1])
        return -1;
    t[id].used = 1;
    return id;
}

extern "C" int rl_cuda_timer_start(rl_cuda_rank *r, int which)
{
    if (!r->has_base || !r->tmu_ok)
        return -1;
    pthread_mutex_lock(&r->tmu);
    int id = timer_alloc(r);
    cudaEvent_t ev = id >= 0 ? r->timers[id].ev[0] : NULL;
    pthread_mutex_unlock(&r->tmu);
    if (id >= 0) {
        cudaSetDevice(r->dev);
        if (cudaEventRecord(ev, r->stream[which ? 1 : 0]) != cudaSuccess) {
            cudaGetLastError();
            rl_cuda_timer_drop(r, id);
            return -1;
        }
    }
    return id;
}

extern "C" void rl_cuda_timer_stop(rl_cuda_rank *r, int which, int id)
{
    if (id < 0 || id >= r->ntimers)
        return;
    pthread_mutex_lock(&r->tmu);
    cudaEvent_t ev = r->timers[id].ev[1];
    pthread_mutex_unlock(&r->tmu);
    cudaSetDevice(r->dev);
    int ok = cudaEventRecord(ev, r->stream[which ? 1 : 0]) == cudaSuccess;
    if (!ok)
        cudaGetLastError();
    pthread_mutex_lock(&r->tmu);
    r->timers[id].stopped = ok;
    pthread_mutex_unlock(&r->tmu);
}

extern "C" void rl_cuda_timer_drop(rl_cuda_rank *r, int id)
{
    if (id < 0)
        return;
    pthread_mutex_lock(&r->tmu);
    if (id < r->ntimers && r->timers[id].refs == 0)
        r->timers[id].used = 0;
    pthread_mutex_unlock(&r->tmu);
}

extern "C" int rl_cuda_timer_attach(rl_cuda_rank *r, int id, int64_t index)
{
    if (id < 0)
        return -1;
    pthread_mutex_lock(&r->tmu);
    int rc = -1;
    if (r->natt == r->capatt) {
        int n = r->capatt ? r->capatt * 2 : 256;
        rl_attach *a = (rl_attach *)realloc(r->att, (size_t)n * sizeof *a);
        if (a) {
            r->att = a;
            r->capatt = n;
        }
    }
    if (id < r->ntimers && r->natt < r->capatt) {
        r->att[r->natt].index = index;
        r->att[r->natt].timer = id;
        r->natt++;
        r->timers[id].refs++;
        rc = 0;
    }
    pthread_mutex_unlock(&r->tmu);
    return rc;
}

/* Seconds on the run's wall clock at which event ev completed (waits for it); -1 on error. */
static double event_time(rl_cuda_rank *r, cudaEvent_t ev)
{
    float ms = 0;
    if (cudaEventSynchronize(ev) != cudaSuccess || cudaEventElapsedTime(&ms, r->base, ev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return r->base_s + ms * 1e-3;
}

extern "C" int rl_cuda_timeline_resolve(rl_cuda_rank *r, void (*fn)(void *arg, int64_t index, double start_s,
                                                                     double end_s),
                                        void *arg)
{
    if (!r->tmu_ok || !r->has_base)
        return 0;
    cudaSetDevice(r->dev);
    /* take the attachments made so far; the worker may attach more meanwhile */
    pthread_mutex_lock(&r->tmu);
    int n = r->natt;
    rl_attach *a = (rl_attach *)malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    if (!a) {
        pthread_mutex_unlock(&r->tmu);
        return -1;
    }
    memcpy(a, r->att, (size_t)n * sizeof *a);
    r->natt = 0;
    pthread_mutex_unlock(&r->tmu);
    int done = 0;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&r->tmu); /* the pool may grow (realloc) under the comm worker */
        cudaEvent_t e0 = r->timers[a[i].timer].ev[0], e1 = r->timers[a[i].timer].ev[1];
        int stopped = r->timers[a[i].timer].stopped;
        if (!stopped && r->natt < r->capatt) { /* still running (a call in flight): keep it for later */
            r->att[r->natt++] = a[i];
            pthread_mutex_unlock(&r->tmu);
            continue;
        }
        pthread_mutex_unlock(&r->tmu);
        double s = event_time(r, e0);
        float dur = 0;
        if (s >= 0 && stopped && (cudaEventSynchronize(e1) != cudaSuccess ||
                                  cudaEventElapsedTime(&dur, e0, e1) != cudaSuccess)) {
            cudaGetLastError();
            dur = 0;
        }
        if (s >= 0) {
            fn(arg, a[i].index, s, s + (dur > 0 ? dur * 1e-3 : 0.0));
            done++;
        }
        pthread_mutex_lock(&r->tmu);
        if (--r->timers[a[i].timer].refs <= 0)
            r->timers[a[i].timer].used = 0;
        pthread_mutex_unlock(&r->tmu);
    }
    free(a);
    return done;
}

extern "C" int rl_cuda_timeline_pending(rl_cuda_rank *r)
{
    if (!r->tmu_ok)
        return 0;
    pthread_mutex_lock(&r->tmu);
    int n = r->natt;
    pthread_mutex_unlock(&r->tmu);
    return n;
}

extern "C" double rl_cuda_stream_now(rl_cuda_rank *r, int which)
{
    cudaEvent_t ev;
    if (!r->has_base)
        return -1;
    cudaSetDevice(r->dev);
    if (cudaEventCreate(&ev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    double t = -1;
    if (cudaEventRecord(ev, r->stream[which ? 1 : 0]) == cudaSuccess)
        t = event_time(r, ev);
    else
        cudaGetLastError();
    cudaEventDestroy(ev);
    return t;
}

extern "C" void rl_cuda_op_begin(rl_cuda_rank *r, const char *name)
{
    if (r->open_timer != -1) { /* the previous op failed after its begin: close it */
        rl_cuda_timer_drop(r, r->open_timer);
        nvtxRangePop();
    }
    nvtxRangePushA(name ? name : "op");
    r->open_timer = rl_cuda_timer_start(r, 0);
    if (r->open_timer < 0)
        r->open_timer = -2; /* open, untimed */
}

extern "C" int rl_cuda_op_end(rl_cuda_rank *r)
{
    int id = r->open_timer;
    if (id == -1)
        return -1;
    r->open_timer = -1;
    nvtxRangePop();
    if (id < 0)
        return -1;
    rl_cuda_timer_stop(r, 0, id);
    return id;
}
