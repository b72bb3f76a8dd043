/* ops_internal.h — helpers shared by the CPU kernels of ops.c and ops_nn.c (never
 * included by labs): argument checks, f32 staging of bf16 tensors, cost records. */
#ifndef RL_OPS_INTERNAL_H
#define RL_OPS_INTERNAL_H
#include "ops.h"

/* An f32 pointer to a tensor's elements: the tensor's own memory when it is f32, else a
 * converted copy (owned) that ops_commit writes back and frees. */
typedef struct ops_buf {
    float *p;
    int owned;
} ops_buf;

/* The rank an op runs on: ctx, else the first tensor's ctx. */
rl_ctx *ops_ctx(rl_ctx *ctx, const rl_tensor *t);
/* Checks n tensors (NULL entries must be optional, flagged by allow_null) are present and
 * on one device, and that device tensors have a rank with a GPU; records a message naming
 * op and returns an error otherwise. */
int ops_check(rl_ctx *ctx, const char *op, int n, const rl_tensor *const *ts, int allow_null);
/* GPU backend (issue 6): 1 if t lives on the GPU (the op then runs its device branch); 0 in
 * the CUDA_FAKE test build, whose emulated device memory is host memory. */
int ops_gpu(const rl_tensor *t);
/* The elements the CPU kernels read and write: rl_tensor_host_data (in the CUDA_FAKE build,
 * also an emulated device tensor's host memory). */
void *ops_host(const rl_tensor *t);
/* Opens a device op (NVTX range, start event on the compute stream); ops_record closes it. */
void ops_gpu_begin(rl_ctx *ctx, const char *name);
/* Wall time to pass to ops_record (0 without a ctx). */
double ops_wall(rl_ctx *ctx);
/* Records the op: "in1 in2 -> out1 out2" shapes, flops, bytes; dtype of the compute. */
void ops_record(rl_ctx *ctx, const char *name, rl_dtype dtype, double flops, double bytes,
                double wall_start, int nin, const rl_tensor *const *in, int nout,
                const rl_tensor *const *out);
/* Read-only f32 elements of t (a copy when t is bf16); NULL when out of memory. */
const float *ops_in(const rl_tensor *t, ops_buf *b);
/* Writable f32 elements of t; for bf16 a scratch buffer, loaded with t's values when load. */
float *ops_out(const rl_tensor *t, ops_buf *b, int load);
/* Writes a bf16 scratch buffer back into t (rounding) and frees it; no-op for f32. */
void ops_commit(rl_tensor *t, ops_buf *b);
/* Frees a staging buffer without writing it back. */
void ops_release(ops_buf *b);
/* The staging buffers of one op, in the order staged (at most 8): ops_stage_done releases
 * the inputs and writes the outputs back; ops_stage_nomem frees them all. Start from
 * `ops_stage st = { .n = 0 };`. */
typedef struct ops_stage {
    ops_buf b[8];
    rl_tensor *out[8]; /* the tensor to write back, NULL for an input */
    int n;
    int failed; /* a non-NULL tensor could not be staged */
} ops_stage;
/* ops_in through a stage; NULL for a NULL (optional) t, which is not a failure. */
const float *ops_stage_in(ops_stage *s, const rl_tensor *t);
/* ops_out through a stage; NULL for a NULL (optional) t, which is not a failure. */
float *ops_stage_out(ops_stage *s, rl_tensor *t, int load);
/* Releases the inputs and commits the outputs. */
void ops_stage_done(ops_stage *s);
/* Frees every staged buffer without writing back; returns ops_nomem's error for op. */
int ops_stage_nomem(rl_ctx *ctx, const char *op, ops_stage *s);
/* Rows and cols of t read as a matrix (cols = last dim). */
void ops_matrix_dims(const rl_tensor *t, int64_t *rows, int64_t *cols);
/* An out-of-memory error for op. */
int ops_nomem(rl_ctx *ctx, const char *op);
/* An error saying two tensors should have the same number of elements. */
int ops_numel_mismatch(rl_ctx *ctx, const char *op, const rl_tensor *a, const rl_tensor *b);
/* Bytes of all given tensors (NULLs skipped). */
double ops_bytes(int n, const rl_tensor *const *ts);

#define OPS_T(...) ((const rl_tensor *const[]){ __VA_ARGS__ })
#define OPS_N(...) ((int)(sizeof((const rl_tensor *const[]){ __VA_ARGS__ }) / sizeof(const rl_tensor *)))
/* OPS_LIST(x, y) expands to "count, array" for ops_check / ops_record / ops_bytes. */
#define OPS_LIST(...) OPS_N(__VA_ARGS__), OPS_T(__VA_ARGS__)

#endif
