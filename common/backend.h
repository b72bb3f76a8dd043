/* backend.h — which backend a run uses (sim or cuda), and the runtime's side of the GPU
 * backend: probing for GPUs, per-world and per-rank GPU state, device memory for tensors,
 * and collectives through NCCL (one GPU per rank) or the device-memory transport (ranks
 * share GPUs). Everything here works in a build without CUDA: the probe then says so and
 * the rest is never reached. CUDA itself is only touched in the .cu files (cuda_backend.h). */
#ifndef RL_BACKEND_H
#define RL_BACKEND_H
#include <stdint.h>
#include "bootstrap.h"
#include "launch.h"
#include "tensor.h"
#include "trace.h"

typedef struct rl_world rl_world;
typedef struct rl_work rl_work;
typedef struct rl_op_desc rl_op_desc;

/* How a world's collectives move data. */
typedef enum {
    RL_GPU_OFF = 0,   /* sim backend: host memory, virtual time */
    RL_GPU_NCCL,      /* cuda backend, one GPU per rank: NCCL communicators */
    RL_GPU_DEVMEM     /* cuda backend, ranks share GPUs: device-memory transport */
} rl_gpu_mode;

/* What this build contains: 1 if built with CUDA / NCCL / MPI. */
int rl_backend_built_cuda(void);
int rl_backend_built_nccl(void);
int rl_backend_built_mpi(void);

/* Probes for CUDA GPUs: returns how many there are (>= 1), or 0 with a one-line reason in
 * why ("no CUDA driver/GPU found (cudaGetDeviceCount: ...)", or "this build has no CUDA
 * backend ..."). */
int rl_backend_probe(char *why, int len);

/* Resolves --backend: sim stays sim; cuda needs a GPU (else a one-line message and
 * RL_ERR_UNSUPPORTED); auto picks cuda when a GPU is found, else sim, and says which
 * unless quiet. Returns 0 and sets *use_cuda (0/1) and *ngpus, or an error code. */
int rl_backend_resolve(const rl_opts *o, int *use_cuda, int *ngpus);

/* What the launcher knows when it decides how this process takes part in a run. */
typedef struct rl_dist_facts {
    rl_backend backend;     /* --backend as given */
    int use_cuda, ngpus;    /* rl_backend_resolve's answer */
    int env_found;          /* rl_dist_env_read: 1 launcher variables, 0 none, -1 bad (env_err says why) */
    rl_dist_env env;
    const char *env_err;
    int under_mpi;          /* rl_bootstrap_under_mpi() */
    int built_mpi, built_nccl;
} rl_dist_facts;

/* How this process takes part in a run. */
typedef struct rl_dist_plan {
    int dist;               /* 1: this process runs one rank, env.rank of env.world_size, on GPU env.local_rank */
    int by_mpi;             /* dist: the NCCL unique id goes by MPI_Bcast (else by TCP from rank 0) */
    rl_dist_env env;
} rl_dist_plan;

/* Decides (no I/O) whether this process runs every rank as a thread (plan->dist 0) or one
 * rank of a multi-process launch (plan->dist 1: launcher variables and the cuda backend).
 * Returns 0, or RL_ERR_ARG / RL_ERR_UNSUPPORTED with a one-line message (no "ringlab: ")
 * in msg: sim with WORLD_SIZE > 1, LOCAL_RANK beyond the visible GPUs, no NCCL, a bad
 * variable, mpirun without MPI in the build and without RANK/WORLD_SIZE. */
int rl_dist_decide(const rl_dist_facts *f, rl_dist_plan *plan, char *msg, int len);

/* Sets up the GPU backend on a new world (device per rank, streams, NCCL communicators or
 * the device-memory transport) and prints which transport the ranks use. Returns 0 or an
 * error code with the message printed. */
int rl_backend_world_init(rl_world *w, int ngpus);
/* Dist mode: sets up this process's rank (its GPU, the NCCL unique id from rank 0 by TCP or
 * MPI_Bcast, ncclCommInitRank) and prints one line. Returns 0 or an error code, printed. */
int rl_backend_dist_init(rl_world *w, const rl_dist_plan *plan);
/* Dist mode, watchdog: aborts this process's NCCL communicators so that it can exit. */
void rl_backend_abort_nccl(rl_world *w);
/* Releases the world's GPU state (NCCL communicators, streams); tensors are freed apart. */
void rl_backend_world_free(rl_world *w);

/* Device memory for a tensor of the rank (NULL with a message in err when it fails). */
void *rl_backend_alloc(rl_ctx *ctx, int64_t bytes, char *err, int errlen);
/* Frees device memory from rl_backend_alloc. */
void rl_backend_free(void *p);
/* Copies bytes between any host/device pointers (ordered after the rank's compute stream
 * when ctx is given; blocks until done). Returns 0 or -1 with a message in err. */
int rl_backend_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen);

/* Comm-stream hooks called by comm.c when the world is on the GPU. */
/* Rank thread, when a call is issued: the comm stream waits for the compute work so far. */
void rl_backend_comm_after_compute(rl_ctx *ctx);
/* Comm worker, before a work item: waits until the comm stream is ready; 0 or an error. */
int rl_backend_comm_ready(rl_ctx *ctx);
/* Comm worker: copies bytes (host/device, any GPU) on the rank's comm stream and waits. */
int rl_backend_comm_copy(rl_ctx *ctx, void *dst, const void *src, int64_t bytes, char *err, int errlen);
/* NCCL mode: runs a whole work item (group or single call) through NCCL; 0 or an error. */
int rl_backend_nccl_execute(rl_ctx *ctx, rl_work *w);
/* NCCL mode: 1 if the work must take the host rendezvous path instead (comm_split, barrier
 * among the ranks of one process; never in dist mode, where NCCL does them too). */
int rl_backend_work_on_host(const rl_work *w);
/* NCCL mode: after the host rendezvous of a comm_split, splits the NCCL communicator too. */
int rl_backend_nccl_split(rl_ctx *ctx, rl_op_desc *d);
/* Device transport: dst[lo..hi) = reduction of srcs[0..n)[lo..hi) in rank order (as sim). */
int rl_backend_reduce(rl_ctx *ctx, int dtype, int op, int n, const void *const *srcs, void *dst,
                      int64_t lo, int64_t hi);
/* Device transport: scratch of the rendezvous slots in device memory. */
void *rl_backend_scratch_alloc(rl_world *w, int64_t bytes);
void rl_backend_scratch_free(rl_world *w, void *p);

/* GPU kernels on device tensors, for the ops API's dispatch (ops.c checks the arguments and
 * records the cost as for the CPU kernels; these only run the math on the rank's compute
 * stream). Each returns 0 or an error code with a message; RL_ERR_UNSUPPORTED without CUDA. */
int rl_backend_matmul(rl_ctx *ctx, const rl_tensor *a, int trans_a, const rl_tensor *b, int trans_b,
                      rl_tensor *c, float beta);
int rl_backend_add(rl_ctx *ctx, const rl_tensor *a, const rl_tensor *b, rl_tensor *out);
int rl_backend_axpy(rl_ctx *ctx, float alpha, const rl_tensor *x, rl_tensor *y);
int rl_backend_scale(rl_ctx *ctx, rl_tensor *x, float alpha);
int rl_backend_gelu_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y);
int rl_backend_gelu_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *dy, rl_tensor *dx);
int rl_backend_adamw_step(rl_ctx *ctx, float lr, float beta1, float beta2, float eps, float weight_decay,
                          int64_t step, rl_tensor *param, const rl_tensor *grad, rl_tensor *master, rl_tensor *m,
                          rl_tensor *v);

/* The rest of the ops on device tensors (issue 6): ops.c has checked the arguments as for
 * the CPU; out = constant + ca·a + cb·b (a, b may be NULL) serves add, residual_add, axpy,
 * scale, copy, fill and zero. Losses and sums return their double total to the host. */
int rl_backend_lincomb(rl_ctx *ctx, float constant, float ca, const rl_tensor *a, float cb, const rl_tensor *b,
                       rl_tensor *out);
int rl_backend_bias_add(rl_ctx *ctx, rl_tensor *y, const rl_tensor *bias);
int rl_backend_bias_backward(rl_ctx *ctx, const rl_tensor *dy, rl_tensor *dbias);
int rl_backend_layernorm_forward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *beta,
                                 float eps, rl_tensor *y, rl_tensor *mean, rl_tensor *rstd);
int rl_backend_layernorm_backward(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *gamma, const rl_tensor *mean,
                                  const rl_tensor *rstd, const rl_tensor *dy, rl_tensor *dx, rl_tensor *dgamma,
                                  rl_tensor *dbeta);
int rl_backend_softmax_forward(rl_ctx *ctx, const rl_tensor *x, rl_tensor *y);
int rl_backend_softmax_backward(rl_ctx *ctx, const rl_tensor *y, const rl_tensor *dy, rl_tensor *dx);
int rl_backend_attention_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                 int n_heads, rl_tensor *probs, rl_tensor *out);
int rl_backend_attention_backward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v,
                                  const rl_tensor *probs, const rl_tensor *dout, int n_heads, rl_tensor *dq,
                                  rl_tensor *dk, rl_tensor *dv);
int rl_backend_embedding_forward(rl_ctx *ctx, const rl_tensor *table, const int *ids, int accumulate,
                                 rl_tensor *out);
int rl_backend_embedding_backward(rl_ctx *ctx, const int *ids, const rl_tensor *dout, rl_tensor *dtable);
int rl_backend_gather_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                           rl_tensor *dst);
int rl_backend_scatter_add_rows(rl_ctx *ctx, const rl_tensor *src, const int64_t *rows, const float *scale,
                                rl_tensor *dst);
int rl_backend_cross_entropy(rl_ctx *ctx, const rl_tensor *logits, const int *targets, float grad_scale,
                             rl_tensor *dlogits, double *total);
int rl_backend_mse_loss(rl_ctx *ctx, const rl_tensor *pred, const rl_tensor *target, float grad_scale,
                        rl_tensor *dpred, double *total);
int rl_backend_sum(rl_ctx *ctx, const rl_tensor *x, int squares, double *out);
int rl_backend_sgd_step(rl_ctx *ctx, float lr, rl_tensor *param, const rl_tensor *grad, rl_tensor *master);
/* Device-side rl_tensor_copy (converting dtype) and rl_tensor_fill; 0 or an error code. */
int rl_backend_tensor_copy(rl_tensor *dst, const rl_tensor *src);
int rl_backend_tensor_fill(rl_tensor *t, float v);

/* 1 if ctx runs on a GPU (--backend cuda); 0 on sim, for NULL, and in a build without CUDA. */
int rl_backend_has_gpu(const rl_ctx *ctx);
/* Why a tensor on the GPU cannot be used by an op on ctx, into msg (for ops_check). */
void rl_backend_no_gpu_reason(const rl_ctx *ctx, char *msg, int len);

/* The measured timeline on the GPU (issue 6). All are no-ops (or -1) on sim. */
/* Opens an op on the rank thread: an NVTX range named name and a timer on the compute stream. */
void rl_backend_op_begin(rl_ctx *ctx, const char *name);
/* Closes the open op: its timer id, or -1 when none is open. */
int rl_backend_op_end(rl_ctx *ctx);
/* A timer on stream s (0 compute, 1 comm): start returns its id or -1; stop records its end;
 * drop frees one that no trace event was attached to. */
int rl_backend_timer_start(rl_ctx *ctx, int s);
void rl_backend_timer_stop(rl_ctx *ctx, int s, int timer);
void rl_backend_timer_drop(rl_ctx *ctx, int timer);
/* Adds e to the rank's trace like rl_ctx_trace_event, its vstart/vend to be replaced by the
 * timer's measured times when the timeline is resolved (timer -1: added as it is). */
void rl_backend_trace_timed(rl_ctx *ctx, rl_trace_event *e, const int *tags, char phase, int timer);
/* Waits for the rank's timers and writes their measured times into its trace events. */
void rl_backend_timeline_resolve(rl_ctx *ctx);
/* The measured time (run's wall clock) at which stream s finishes its queued work (waits);
 * -1 on sim. */
double rl_backend_stream_now(rl_ctx *ctx, int s);
/* NVTX ranges on the calling thread (collectives on the comm worker). */
void rl_backend_nvtx_push(rl_ctx *ctx, const char *name);
void rl_backend_nvtx_pop(rl_ctx *ctx);
/* Host sleep of seconds bracketed by a timer on the compute stream (a straggler on the GPU):
 * returns the timer, or -1. */
int rl_backend_delay(rl_ctx *ctx, const char *name, double seconds);

#endif
