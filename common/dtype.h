/* dtype.h — element types and devices shared by tensors, ops and the cost model. */
#ifndef RL_DTYPE_H
#define RL_DTYPE_H
#include <stddef.h>

typedef enum { RL_F32 = 0, RL_BF16 = 1 } rl_dtype;
typedef enum { RL_CPU = 0, RL_CUDA = 1 } rl_device;

/* Bytes per element (4 for f32, 2 for bf16). */
static inline size_t rl_dtype_size(rl_dtype t) { return t == RL_BF16 ? 2 : 4; }
/* "f32" / "bf16" (nccl-tests prints "float" / "bfloat16": see rl_dtype_nccl_name). */
static inline const char *rl_dtype_name(rl_dtype t) { return t == RL_BF16 ? "bf16" : "f32"; }
/* The type name nccl-tests prints in its tables. */
static inline const char *rl_dtype_nccl_name(rl_dtype t) { return t == RL_BF16 ? "bfloat16" : "float"; }

#endif
