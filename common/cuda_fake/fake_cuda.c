/* fake_cuda.c — an emulation of cuda_backend.h on the host, for tests only (make CUDA_FAKE=1,
 * built by make test into build/fakegpu). It is not a GPU: it lets the GPU backend's host side
 * run where there is no GPU — device tensors, the device-memory transport of every collective,
 * --backend cuda's world set-up and messages, the labs on device tensors — so that code which
 * treats device memory as host memory fails in CI, not on a GPU. "Device" memory is host
 * memory here, but tensors on it are RL_CUDA tensors: rl_tensor_host_data() returns NULL for
 * them, as on a GPU. In this build the ops run their CPU kernels on that memory (ops_gpu() is
 * 0), so the op entry points below are never called; CUDA-event timing is absent (trace
 * times stay the modelled ones). The comm stream runs its work on a thread of its own;
 * fake_nccl.c emulates NCCL on it (RL_FAKE_GPUS=N emulates N GPUs, one rank each). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_backend.h"
#include "internal.h"
#include "fake_cuda.h"
#include "optnum.h"

#pragma GCC diagnostic ignored "-Wunused-parameter" /* most emulated calls ignore their arguments */

/* ------------------------------------------------------------------ streams */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fake_task *head, *tail;
    int busy;    /* a task is running */
    int started; /* the thread exists */
    int stop;
    char err[300]; /* the first failed task's message (a CUDA error stays on a stream too) */
    pthread_t thread;
} fake_stream;

struct rl_cuda_rank {
    int dev;
    fake_stream stream[2]; /* 0 compute (ops run on the calling thread: always idle), 1 comm */
    int op_open;           /* an op's NVTX range is open (cuda_backend.cu: its open timer) */
};

static void *stream_main(void *arg)
{
    fake_stream *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head)
            break;
        fake_task *t = s->head;
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        s->busy = 1;
        int failed = s->err[0] != 0; /* after an error the stream runs nothing more */
        pthread_mutex_unlock(&s->mu);
        char err[sizeof s->err] = "";
        if (!failed && t->run(t, err, (int)sizeof err) && !err[0])
            snprintf(err, sizeof err, "an emulated stream task failed");
        t->free(t);
        pthread_mutex_lock(&s->mu);
        if (!failed && err[0])
            snprintf(s->err, sizeof s->err, "%s", err);
        s->busy = 0;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void fake_stream_enqueue(void *handle, fake_task *t)
{
    fake_stream *s = handle;
    t->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (!s->started && pthread_create(&s->thread, NULL, stream_main, s) == 0)
        s->started = 1;
    if (!s->started) { /* no thread: run it here, as a synchronous stream would */
        pthread_mutex_unlock(&s->mu);
        char err[sizeof s->err] = "";
        if (t->run(t, err, (int)sizeof err))
            snprintf(s->err, sizeof s->err, "%s", err[0] ? err : "an emulated stream task failed");
        t->free(t);
        return;
    }
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* 1 if the stream is idle, 0 if it has work; -1 with its error. wait: block until idle. */
static int stream_state(fake_stream *s, int wait, char *err, int len)
{
    pthread_mutex_lock(&s->mu);
    while (wait && (s->head || s->busy))
        pthread_cond_wait(&s->cv, &s->mu);
    int st = s->err[0] ? -1 : !(s->head || s->busy);
    if (st < 0)
        snprintf(err, (size_t)len, "%s", s->err);
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* ------------------------------------------------------------------ devices and ranks */

/* RL_FAKE_GPUS=N emulates N GPUs (default 1), so one rank per GPU takes the NCCL path. */
int rl_cuda_device_count(char *why, int len)
{
    const char *v = getenv("RL_FAKE_GPUS");
    double n = 1;
    if (v && rl_optnum("RL_FAKE_GPUS", v, 1, 64, 1, &n, why, (size_t)len))
        return 0; /* the probe says why: "RL_FAKE_GPUS: 'abc' is not a whole number from 1 to 64" */
    return (int)n;
}

char *rl_cuda_device_name(int dev, char *buf, int len)
{
    snprintf(buf, (size_t)len, "emulated GPU %d (host memory, CUDA_FAKE build)", dev);
    return buf;
}

int rl_cuda_enable_peers(int n, char *err, int len) { return 0; }

rl_cuda_rank *rl_cuda_rank_new(int dev, char *err, int len)
{
    rl_cuda_rank *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, (size_t)len, "out of host memory");
        return NULL;
    }
    r->dev = dev;
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&r->stream[i].mu, NULL);
        pthread_cond_init(&r->stream[i].cv, NULL);
    }
    return r;
}

/* Frees r after its streams have run what they hold (an aborted NCCL call ends at once). */
void rl_cuda_rank_free(rl_cuda_rank *r)
{
    if (!r)
        return;
    for (int i = 0; i < 2; i++) {
        fake_stream *s = &r->stream[i];
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (s->started)
            pthread_join(s->thread, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    free(r);
}

int rl_cuda_rank_device(rl_cuda_rank *r) { return r->dev; }
void *rl_cuda_rank_stream(rl_cuda_rank *r, int which) { return &r->stream[which ? 1 : 0]; }

/* The compute stream is always idle (ops run on the calling thread), so there is nothing to wait for. */
int rl_cuda_comm_after_compute(rl_cuda_rank *r, char *err, int len) { return 0; }

int rl_cuda_stream_sync(rl_cuda_rank *r, int which, char *err, int len)
{
    return stream_state(&r->stream[which ? 1 : 0], 1, err, len) < 0 ? -1 : 0;
}

int rl_cuda_stream_query(rl_cuda_rank *r, int which, char *err, int len)
{
    return stream_state(&r->stream[which ? 1 : 0], 0, err, len);
}

/* ------------------------------------------------------------------ memory and the transport */

void *rl_cuda_malloc(rl_cuda_rank *r, int64_t bytes, char *err, int len)
{
    void *p = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (!p)
        snprintf(err, (size_t)len, "out of (emulated device) memory for %lld bytes", (long long)bytes);
    return p;
}

void rl_cuda_free(void *p) { free(p); }

int rl_cuda_memcpy(rl_cuda_rank *r, int which, void *dst, const void *src, int64_t bytes, char *err, int len)
{
    if (r && rl_cuda_stream_sync(r, which, err, len)) /* a copy on a stream runs after what it holds */
        return -1;
    if (bytes > 0 && dst != src)
        memmove(dst, src, (size_t)bytes);
    return 0;
}

int rl_cuda_reduce(rl_cuda_rank *r, int which, int dtype, int op, int n, const void *const *srcs, void *dst,
                   int64_t lo, int64_t hi, char *err, int len)
{
    if (n < 1 || n > 64) {
        snprintf(err, (size_t)len, "device transport: a reduction over %d ranks; it supports 1 to 64", n);
        return -1;
    }
    rl_host_reduce((rl_dtype)dtype, (rl_redop)op, n, srcs, dst, lo, hi);
    return 0;
}

static int not_emulated(char *err, int len, const char *what)
{
    snprintf(err, (size_t)len, "%s is not emulated (a CUDA_FAKE build runs tensors and collectives only)", what);
    return -1;
}

/* ------------------------------------------------------------------ op kernels: not used
 * (ops run their CPU kernels in this build). Each takes (..., char *err, int len) last. */
#define NOT_EMULATED(fn, ...)                                                                                  \
    int fn(__VA_ARGS__, char *err, int len) { return not_emulated(err, len, #fn); }
NOT_EMULATED(rl_cuda_matmul, rl_cuda_rank *r, const void *a, int a_dtype, int trans_a, const void *b, int b_dtype,
             int trans_b, void *c, int c_dtype, int64_t m, int64_t n, int64_t k, float beta)
NOT_EMULATED(rl_cuda_add, rl_cuda_rank *r, const void *a, int a_dt, const void *b, int b_dt, void *out, int out_dt,
             int64_t n)
NOT_EMULATED(rl_cuda_axpy, rl_cuda_rank *r, float alpha, const void *x, int x_dt, void *y, int y_dt, int64_t n)
NOT_EMULATED(rl_cuda_scale, rl_cuda_rank *r, void *x, int x_dt, float alpha, int64_t n)
NOT_EMULATED(rl_cuda_gelu_forward, rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t n)
NOT_EMULATED(rl_cuda_gelu_backward, rl_cuda_rank *r, const void *x, int x_dt, const void *dy, int dy_dt, void *dx,
             int dx_dt, int64_t n)
NOT_EMULATED(rl_cuda_adamw, rl_cuda_rank *r, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
             void *param, int param_dt, const void *grad, int grad_dt, float *master, float *m, float *v, int64_t n)
NOT_EMULATED(rl_cuda_lincomb, rl_cuda_rank *r, void *out, int out_dt, int64_t n, float constant, float ca,
             const void *a, int a_dt, float cb, const void *b, int b_dt)
NOT_EMULATED(rl_cuda_bias_add, rl_cuda_rank *r, void *y, int y_dt, const void *bias, int b_dt, int64_t rows,
             int64_t n)
NOT_EMULATED(rl_cuda_bias_backward, rl_cuda_rank *r, const void *dy, int dy_dt, void *dbias, int db_dt,
             int64_t rows, int64_t n)
NOT_EMULATED(rl_cuda_layernorm_forward, rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
             const void *beta, int b_dt, float eps, void *y, int y_dt, float *mean, float *rstd, int64_t rows,
             int64_t n)
NOT_EMULATED(rl_cuda_layernorm_backward, rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
             const float *mean, const float *rstd, const void *dy, int dy_dt, void *dx, int dx_dt, void *dgamma,
             int dg_dt, void *dbeta, int db_dt, int64_t rows, int64_t n)
NOT_EMULATED(rl_cuda_softmax_forward, rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t rows,
             int64_t n)
NOT_EMULATED(rl_cuda_softmax_backward, rl_cuda_rank *r, const void *y, int y_dt, const void *dy, int dy_dt,
             void *dx, int dx_dt, int64_t rows, int64_t n)
NOT_EMULATED(rl_cuda_attention_forward, rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt,
             const void *v, int v_dt, float *probs, void *out, int out_dt, int64_t B, int64_t S, int64_t H,
             int n_heads)
NOT_EMULATED(rl_cuda_attention_backward, rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt,
             const void *v, int v_dt, const float *probs, const void *dout, int do_dt, void *dq, int dq_dt, void *dk,
             int dk_dt, void *dv, int dv_dt, int64_t B, int64_t S, int64_t H, int n_heads)
NOT_EMULATED(rl_cuda_gather_rows, rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows,
             const float *scale, int accumulate, void *dst, int dst_dt, int64_t n, int64_t h)
NOT_EMULATED(rl_cuda_scatter_add_rows, rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows,
             const float *scale, void *dst, int dst_dt, int64_t dst_numel, int64_t n, int64_t h)
NOT_EMULATED(rl_cuda_cross_entropy, rl_cuda_rank *r, const void *logits, int l_dt, const int *targets, float g,
             void *dlogits, int dl_dt, int64_t rows, int64_t V, double *total)
NOT_EMULATED(rl_cuda_mse, rl_cuda_rank *r, const void *pred, int p_dt, const void *target, int t_dt, float g,
             void *dpred, int dp_dt, int64_t n, double *total)
NOT_EMULATED(rl_cuda_sum, rl_cuda_rank *r, const void *x, int x_dt, int64_t n, int squares, double *out)
NOT_EMULATED(rl_cuda_sgd, rl_cuda_rank *r, float lr, void *param, int param_dt, const void *grad, int grad_dt,
             float *master, int64_t n)

double rl_cuda_gemm_tflops(rl_cuda_rank *r, int dtype, int64_t n, int iters, char *err, int len)
{
    return not_emulated(err, len, "the GEMM benchmark");
}

/* ------------------------------------------------------------------ timeline: no CUDA events
 * Timers are never started (-1), so trace events keep the modelled times of the sim clock. */

int rl_cuda_timer_base(rl_cuda_rank *r, double now_s, char *err, int len) { return 0; }
int rl_cuda_timer_start(rl_cuda_rank *r, int which) { return -1; }
void rl_cuda_timer_stop(rl_cuda_rank *r, int which, int id) {}
int rl_cuda_timer_attach(rl_cuda_rank *r, int id, int64_t index) { return -1; }
void rl_cuda_timer_drop(rl_cuda_rank *r, int id) {}
int rl_cuda_timeline_resolve(rl_cuda_rank *r, void (*fn)(void *arg, int64_t index, double start_s, double end_s),
                             void *arg)
{
    return 0;
}
int rl_cuda_timeline_pending(rl_cuda_rank *r) { return 0; }
double rl_cuda_stream_now(rl_cuda_rank *r, int which) { return -1; }

/* ------------------------------------------------------------------ NVTX
 * Built with the NVTX header (RL_HAVE_NVTX), the ranges are real NVTX calls, as in
 * cuda_backend.cu, so that an NVTX injection (build/nvtx_probe.so) sees the ranges a GPU run
 * opens and closes; without it they are no-ops. */
#ifdef RL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

void rl_cuda_op_begin(rl_cuda_rank *r, const char *name)
{
    if (r->op_open) /* the previous op failed after its begin: close it */
        nvtxRangePop();
    nvtxRangePushA(name ? name : "op");
    r->op_open = 1;
}

int rl_cuda_op_end(rl_cuda_rank *r)
{
    if (r->op_open)
        nvtxRangePop();
    r->op_open = 0;
    return -1; /* no timer */
}

void rl_cuda_nvtx_push(const char *name) { nvtxRangePushA(name ? name : "?"); }
void rl_cuda_nvtx_pop(void) { nvtxRangePop(); }
#else
void rl_cuda_op_begin(rl_cuda_rank *r, const char *name) {}
int rl_cuda_op_end(rl_cuda_rank *r) { return -1; }
void rl_cuda_nvtx_push(const char *name) {}
void rl_cuda_nvtx_pop(void) {}
#endif

int rl_cuda_blas_open(char *err, int len)
{
    (void)err, (void)len;
    return 0; /* the emulated GEMM needs no library */
}
