/* backend.h — which backend a run uses (sim or cuda), and the runtime's side of the GPU
 * backend: probing for GPUs, per-world and per-rank GPU state, device memory for tensors,
 * and collectives through NCCL (one GPU per rank) or the device-memory transport (ranks
 * share GPUs). Everything here works in a build without CUDA: the probe then says so and
 * the rest is never reached. CUDA itself is only touched in the .cu files (cuda_backend.h). */
#ifndef RL_BACKEND_H
#define RL_BACKEND_H
#include <stdint.h>
#include "launch.h"
#include "tensor.h"

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

/* Sets up the GPU backend on a new world (device per rank, streams, NCCL communicators or
 * the device-memory transport) and prints which transport the ranks use. Returns 0 or an
 * error code with the message printed. */
int rl_backend_world_init(rl_world *w, int ngpus);
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
/* NCCL mode: 1 if the work must take the host rendezvous path instead (comm_split, barrier). */
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

#endif
