/* tensor.h — tensors: f32/bf16 storage, up to 4 named dims, views into a flat buffer, a
 * device field, and a memory-account charge per allocation. Learner code reads and writes
 * elements through these functions, never through raw pointers, so the same code runs on
 * host and device memory. */
#ifndef RL_TENSOR_H
#define RL_TENSOR_H
#include <stdint.h>
#include "dtype.h"
#include "mem.h"

#define RL_MAX_DIMS 4
#define RL_DIM_NAME 12

typedef struct rl_ctx rl_ctx;
typedef struct rl_storage rl_storage;

typedef struct rl_tensor {
    rl_ctx *ctx;            /* owning rank (NULL: not charged to any account) */
    rl_dtype dtype;
    rl_device device;
    rl_mem_cat cat;
    int ndim;
    int64_t shape[RL_MAX_DIMS];
    char dims[RL_MAX_DIMS][RL_DIM_NAME]; /* dim names for the shapes view: "b", "s", "4h/t" */
    int64_t numel;
    int64_t offset;         /* in elements, into the storage */
    rl_storage *storage;
    char name[32];
} rl_tensor;

/* New zero-filled tensor of ndim dims; dims is "b,s,h" (or NULL); charged to ctx under cat. */
rl_tensor *rl_tensor_new(rl_ctx *ctx, const char *name, rl_dtype dtype, rl_mem_cat cat,
                         int ndim, const int64_t *shape, const char *dims);
/* Shorthand for a 1-D tensor of n elements. */
rl_tensor *rl_tensor_new_1d(rl_ctx *ctx, const char *name, rl_dtype dtype, rl_mem_cat cat, int64_t n);
/* A 1-D tensor in host memory even on --backend cuda (a staging buffer the host reads and
 * writes); owned by ctx like any tensor, so an aborted run frees it; not charged. */
rl_tensor *rl_tensor_new_host(rl_ctx *ctx, const char *name, rl_dtype dtype, int64_t n);
/* A view of numel(shape) elements starting at element offset of base (shares storage, no charge). */
rl_tensor *rl_tensor_view(rl_tensor *base, const char *name, int64_t offset, int ndim,
                          const int64_t *shape, const char *dims);
/* A flat 1-D view of n elements at offset (a bucket slice, a shard). */
rl_tensor *rl_tensor_slice(rl_tensor *base, int64_t offset, int64_t n);
/* Frees a tensor or view; the storage is freed (and uncharged) with its last user. */
void rl_tensor_free(rl_tensor *t);
/* Sets the dim names from "b,s,h". */
void rl_tensor_set_dims(rl_tensor *t, const char *dims);
/* Bytes of the tensor's elements. */
int64_t rl_tensor_bytes(const rl_tensor *t);
/* Formats "name[b=8,s=16,h=64]" into buf (shapes view and error messages); returns buf. */
char *rl_tensor_describe(const rl_tensor *t, char *buf, int size);
/* Same dtype, ndim and shape? */
int rl_tensor_same_shape(const rl_tensor *a, const rl_tensor *b);

/* Element i (flat index) as f32. */
float rl_tensor_get(const rl_tensor *t, int64_t i);
/* Sets element i from an f32 value (rounded to bf16 when the tensor is bf16). */
void rl_tensor_set(rl_tensor *t, int64_t i, float v);
/* Copies n f32 values from host memory into the tensor (converting); returns 0 or an error. */
int rl_tensor_from_f32(rl_tensor *t, const float *src, int64_t n);
/* Copies the tensor out as n f32 values into host memory; returns 0 or an error. */
int rl_tensor_to_f32(const rl_tensor *t, float *dst, int64_t n);
/* dst ← src element by element, converting dtype; same numel required. */
int rl_tensor_copy(rl_tensor *dst, const rl_tensor *src);
/* Every element ← v. */
void rl_tensor_fill(rl_tensor *t, float v);
/* Every element ← 0. */
void rl_tensor_zero(rl_tensor *t);
/* Bitwise equality of two tensors' elements (same dtype and numel). */
int rl_tensor_equal(const rl_tensor *a, const rl_tensor *b);
/* Largest |a−b| / max(|b|, floor) over elements (compares as f32). */
double rl_tensor_max_rel_diff(const rl_tensor *a, const rl_tensor *b, double floor);

/* Host pointer to the first element, for kernels and the runtime (NULL for device memory).
 * Learner code never needs it. */
void *rl_tensor_host_data(const rl_tensor *t);
/* The data pointer, whatever the device (for backend code only). */
void *rl_tensor_data(const rl_tensor *t);

#endif
