/* cuda_backend.h — the plain-C face of the CUDA code (common/cuda_backend.cu,
 * common/nccl_comm.cu, common/cuda_ops.cu). C files include this header, never a CUDA
 * header; it is only used when RL_HAVE_CUDA is defined. Functions return 0 (or a value)
 * on success and -1 with a one-line message in err on failure; none aborts. */
#ifndef RL_CUDA_BACKEND_H
#define RL_CUDA_BACKEND_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ devices */
/* Number of CUDA devices, or 0 with the reason in why (no driver, no device ...). */
int rl_cuda_device_count(char *why, int len);
/* "NVIDIA H200 (sm_90, 139.8 GiB)" for device dev into buf; returns buf. */
char *rl_cuda_device_name(int dev, char *buf, int len);
/* Enables peer access between every pair of the first n devices; -1 if a pair cannot. */
int rl_cuda_enable_peers(int n, char *err, int len);

/* ------------------------------------------------------------------ per-rank state */
/* One rank's GPU: its device, compute and comm streams, a cuBLAS handle, scratch events. */
typedef struct rl_cuda_rank rl_cuda_rank;
/* Creates the state of a rank on device dev (streams, cuBLAS). */
rl_cuda_rank *rl_cuda_rank_new(int dev, char *err, int len);
/* Opens cuBLAS (once per process; rl_cuda_rank_new calls it): 0, or -1 with the reason in err.
 * Not linked: loading it costs every process about 80 ms at start, GPU or not. */
int rl_cuda_blas_open(char *err, int len);
/* Frees it (streams synchronized first). */
void rl_cuda_rank_free(rl_cuda_rank *r);
/* The rank's device (and makes it current on the calling thread). */
int rl_cuda_rank_device(rl_cuda_rank *r);
/* Opaque stream handles (cudaStream_t) for the NCCL wrappers: 0 compute, 1 comm. */
void *rl_cuda_rank_stream(rl_cuda_rank *r, int which);
/* The comm stream waits for everything issued so far on the compute stream. */
int rl_cuda_comm_after_compute(rl_cuda_rank *r, char *err, int len);
/* Blocks until the stream (0 compute, 1 comm) has finished its work. */
int rl_cuda_stream_sync(rl_cuda_rank *r, int which, char *err, int len);
/* 1 if the stream's work is done, 0 if still running, -1 with a message on a CUDA error. */
int rl_cuda_stream_query(rl_cuda_rank *r, int which, char *err, int len);

/* ------------------------------------------------------------------ memory */
/* cudaMalloc on the rank's device (zero-filled). */
void *rl_cuda_malloc(rl_cuda_rank *r, int64_t bytes, char *err, int len);
/* cudaFree (any device). */
void rl_cuda_free(void *p);
/* Copies bytes between host and/or device pointers (unified addressing) on stream
 * `which` of r (r may be NULL: the legacy default stream) and waits for it. */
int rl_cuda_memcpy(rl_cuda_rank *r, int which, void *dst, const void *src, int64_t bytes, char *err, int len);

/* ------------------------------------------------------------------ small kernels */
/* dst[lo..hi) = srcs[0] op srcs[1] op ... op srcs[n-1] over [lo..hi), in rank order, with an
 * f32 accumulator, then ÷n for avg (dtype 0 f32, 1 bf16; op 0 sum, 1 avg, 2 max, 3 min):
 * bitwise the same results as the sim backend's host reduction. n ≤ 64. On stream `which`. */
int rl_cuda_reduce(rl_cuda_rank *r, int which, int dtype, int op, int n, const void *const *srcs, void *dst,
                   int64_t lo, int64_t hi, char *err, int len);

/* ------------------------------------------------------------------ NCCL (nccl_comm.cu) */
/* 1 if built with NCCL. */
int rl_nccl_built(void);
/* Size of a unique id in bytes (128), and a fresh one into id (rank 0 makes it). */
int rl_nccl_id_bytes(void);
int rl_nccl_get_unique_id(void *id, char *err, int len);
/* Every rank of one process: initialises the communicators of ranks [0, n) on devices
 * devs[] at once (ncclCommInitAll-style through a group of ncclCommInitRank). */
int rl_nccl_init_local(int n, const int *devs, const void *id, void **comms, char *err, int len);
/* One rank of many (one process per rank): ncclCommInitRank. */
int rl_nccl_init_rank(int nranks, int rank, int dev, const void *id, void **comm, char *err, int len);
/* ncclCommSplit of parent (color -1 = not in any new communicator: *out NULL). */
int rl_nccl_split(void *parent, int color, int key, void **out, char *err, int len);
/* ncclCommDestroy (abort = 1: ncclCommAbort, for a run stopped by the watchdog). */
void rl_nccl_free(void *comm, int abort);
/* ncclGroupStart / ncclGroupEnd. */
int rl_nccl_group_start(char *err, int len);
int rl_nccl_group_end(char *err, int len);
/* One call on stream (cudaStream_t). kind is an rl_coll_kind; dtype/op as rl_cuda_reduce;
 * peer is the root (broadcast, reduce) or the peer (send, recv). counts (all_to_allv): 4
 * arrays of n as in comm.c. n is the communicator size, me this rank. */
int rl_nccl_call(void *comm, void *stream, int kind, const void *send, void *recv, int64_t send_numel,
                 int64_t recv_numel, int dtype, int op, int peer, const int64_t *counts, int n, int me,
                 char *err, int len);

/* ------------------------------------------------------------------ ops (cuda_ops.cu) */
/* c[m,n] = op(a)·op(b) + beta·c on the rank's compute stream through cublasGemmEx with f32
 * accumulation; a, b, c f32 or bf16 (a and b the same dtype); row-major as ops.h. */
int rl_cuda_matmul(rl_cuda_rank *r, const void *a, int a_dtype, int trans_a, const void *b, int b_dtype,
                   int trans_b, void *c, int c_dtype, int64_t m, int64_t n, int64_t k, float beta,
                   char *err, int len);
/* Elementwise: out = a + b; y += alpha·x; x *= alpha; y = GeLU(x) (tanh); dx = dy·GeLU'(x). */
int rl_cuda_add(rl_cuda_rank *r, const void *a, int a_dt, const void *b, int b_dt, void *out, int out_dt,
                int64_t n, char *err, int len);
int rl_cuda_axpy(rl_cuda_rank *r, float alpha, const void *x, int x_dt, void *y, int y_dt, int64_t n,
                 char *err, int len);
int rl_cuda_scale(rl_cuda_rank *r, void *x, int x_dt, float alpha, int64_t n, char *err, int len);
int rl_cuda_gelu_forward(rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t n, char *err,
                         int len);
int rl_cuda_gelu_backward(rl_cuda_rank *r, const void *x, int x_dt, const void *dy, int dy_dt, void *dx,
                          int dx_dt, int64_t n, char *err, int len);
/* One AdamW step as rl_adamw_step (master, m, v f32; master may be NULL: param f32). */
int rl_cuda_adamw(rl_cuda_rank *r, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
                  void *param, int param_dt, const void *grad, int grad_dt, float *master, float *m, float *v,
                  int64_t n, char *err, int len);
/* ------------------------------------------------------------------ ops (cuda_nn.cu)
 * Pointers are device memory, dtypes 0 f32 / 1 bf16; host arrays (ids, rows, scales,
 * targets) are copied to the device by the call. Each mirrors the CPU kernel of ops.c /
 * ops_nn.c (see cuda_nn.cu for the numerics); all run on the compute stream. */
/* out[i] = constant + ca·a[i] + cb·b[i] (a, b may be NULL): add, axpy, scale, copy, fill, zero. */
int rl_cuda_lincomb(rl_cuda_rank *r, void *out, int out_dt, int64_t n, float constant, float ca, const void *a,
                    int a_dt, float cb, const void *b, int b_dt, char *err, int len);
/* y[rows,n] += bias[n]; dbias[n] += Σ_rows dy. */
int rl_cuda_bias_add(rl_cuda_rank *r, void *y, int y_dt, const void *bias, int b_dt, int64_t rows, int64_t n,
                     char *err, int len);
int rl_cuda_bias_backward(rl_cuda_rank *r, const void *dy, int dy_dt, void *dbias, int db_dt, int64_t rows,
                          int64_t n, char *err, int len);
/* LayerNorm over rows of n (beta may be NULL; mean, rstd f32 per row). */
int rl_cuda_layernorm_forward(rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
                              const void *beta, int b_dt, float eps, void *y, int y_dt, float *mean, float *rstd,
                              int64_t rows, int64_t n, char *err, int len);
/* dx overwritten; dgamma, dbeta (may be NULL) accumulated. */
int rl_cuda_layernorm_backward(rl_cuda_rank *r, const void *x, int x_dt, const void *gamma, int g_dt,
                               const float *mean, const float *rstd, const void *dy, int dy_dt, void *dx, int dx_dt,
                               void *dgamma, int dg_dt, void *dbeta, int db_dt, int64_t rows, int64_t n, char *err,
                               int len);
/* Row softmax (y may alias x) and its backward. */
int rl_cuda_softmax_forward(rl_cuda_rank *r, const void *x, int x_dt, void *y, int y_dt, int64_t rows, int64_t n,
                            char *err, int len);
int rl_cuda_softmax_backward(rl_cuda_rank *r, const void *y, int y_dt, const void *dy, int dy_dt, void *dx,
                             int dx_dt, int64_t rows, int64_t n, char *err, int len);
/* Causal attention over [B, S, H] tensors with n_heads heads; probs f32 [B, n_heads, S, S]. */
int rl_cuda_attention_forward(rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt, const void *v,
                              int v_dt, float *probs, void *out, int out_dt, int64_t B, int64_t S, int64_t H,
                              int n_heads, char *err, int len);
int rl_cuda_attention_backward(rl_cuda_rank *r, const void *q, int q_dt, const void *k, int k_dt, const void *v,
                               int v_dt, const float *probs, const void *dout, int do_dt, void *dq, int dq_dt,
                               void *dk, int dk_dt, void *dv, int dv_dt, int64_t B, int64_t S, int64_t H,
                               int n_heads, char *err, int len);
/* dst[i,:] = (accumulate ? dst[i,:] : 0) + scale[i]·src[rows[i],:] for i < n (rows, scale host). */
int rl_cuda_gather_rows(rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows, const float *scale,
                        int accumulate, void *dst, int dst_dt, int64_t n, int64_t h, char *err, int len);
/* dst[rows[i],:] += scale[i]·src[i,:] for i < n, in order (dst has dst_numel elements). */
int rl_cuda_scatter_add_rows(rl_cuda_rank *r, const void *src, int src_dt, const int64_t *rows, const float *scale,
                             void *dst, int dst_dt, int64_t dst_numel, int64_t n, int64_t h, char *err, int len);
/* Σ_rows (logsumexp − logit of the target) into *total (waits); dlogits (may be NULL) ← g·(softmax − onehot). */
int rl_cuda_cross_entropy(rl_cuda_rank *r, const void *logits, int l_dt, const int *targets, float g,
                          void *dlogits, int dl_dt, int64_t rows, int64_t V, double *total, char *err, int len);
/* Σ (pred − target)² into *total (waits); dpred (may be NULL) ← g·(pred − target). */
int rl_cuda_mse(rl_cuda_rank *r, const void *pred, int p_dt, const void *target, int t_dt, float g, void *dpred,
                int dp_dt, int64_t n, double *total, char *err, int len);
/* Σ x (or Σ x² when squares) in double into *out (waits). */
int rl_cuda_sum(rl_cuda_rank *r, const void *x, int x_dt, int64_t n, int squares, double *out, char *err, int len);
/* param ← param − lr·grad through the f32 master (may be NULL: param f32). */
int rl_cuda_sgd(rl_cuda_rank *r, float lr, void *param, int param_dt, const void *grad, int grad_dt, float *master,
                int64_t n, char *err, int len);

/* ------------------------------------------------------------------ timeline (cuda_backend.cu)
 * Trace times from CUDA events: a timer is a start/stop event pair on a stream; a trace
 * event attached to a timer gets the timer's measured times when the timeline is resolved
 * (which waits for the events). Times are seconds on the run's wall clock. */
/* Sets the rank's time base: now_s (the run's wall clock) is the moment of this call. */
int rl_cuda_timer_base(rl_cuda_rank *r, double now_s, char *err, int len);
/* Starts a timer on stream which (0 compute, 1 comm); its id, or -1 (no base, or CUDA refused). */
int rl_cuda_timer_start(rl_cuda_rank *r, int which);
/* Records the timer's stop on stream which. */
void rl_cuda_timer_stop(rl_cuda_rank *r, int which, int id);
/* Attaches the trace event at index to the timer (a timer may carry several); 0 or -1. */
int rl_cuda_timer_attach(rl_cuda_rank *r, int id, int64_t index);
/* Frees a timer nothing was attached to. */
void rl_cuda_timer_drop(rl_cuda_rank *r, int id);
/* Waits for the attached timers, calls fn(arg, index, start, end) for each and frees them;
 * returns how many were resolved, or -1. */
int rl_cuda_timeline_resolve(rl_cuda_rank *r, void (*fn)(void *arg, int64_t index, double start_s, double end_s),
                             void *arg);
/* How many trace events wait for their timers. */
int rl_cuda_timeline_pending(rl_cuda_rank *r);
/* When stream which finishes the work queued so far (waits for it), on the run's clock; -1 on error. */
double rl_cuda_stream_now(rl_cuda_rank *r, int which);
/* An op's bracket on the compute stream: begin pushes an NVTX range and starts a timer; end
 * stops it, pops the range and returns the timer (-1 if none). */
void rl_cuda_op_begin(rl_cuda_rank *r, const char *name);
int rl_cuda_op_end(rl_cuda_rank *r);
/* NVTX ranges (Nsight Systems) on the calling thread. */
void rl_cuda_nvtx_push(const char *name);
void rl_cuda_nvtx_pop(void);

/* Measured GEMM peak: TFLOP/s of an n×n×n bf16 (dtype 1) or f32 GEMM, averaged over iters. */
double rl_cuda_gemm_tflops(rl_cuda_rank *r, int dtype, int64_t n, int iters, char *err, int len);

#ifdef __cplusplus
}
#endif
#endif
