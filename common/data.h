/* data.h — synthetic, seeded, learnable training data: a fixed random teacher network for
 * regression (the MLP and MoE models) and a fixed random second-order Markov token task for
 * the transformer. Sample k of global step s is a pure function of (seed, s, k), so ranks
 * shard a global batch by index: n ranks with batch b (rank r takes samples r·b .. r·b+b−1)
 * see exactly the samples one rank sees with batch n·b. */
#ifndef RL_DATA_H
#define RL_DATA_H
#include <stdint.h>
#include "tensor.h"

typedef struct rl_ctx rl_ctx;

/* One batch of samples (either regression or tokens is filled). */
typedef struct rl_batch {
    int64_t size;          /* samples */
    int64_t seq;           /* tokens per sample (token task); 0 for regression */
    rl_tensor *x, *y;      /* regression: inputs [b, in] and targets [b, out], f32 */
    int *tokens;           /* token task: [b·seq] inputs ... */
    int *targets;          /* ... and [b·seq] next tokens to predict */
} rl_batch;

typedef struct rl_data rl_data;

/* A regression task y = teacher(x), x ~ N(0, 1)^in_dim, teacher a fixed random one-hidden-
 * layer tanh network from seed. NULL (with a message on ctx) on bad sizes. */
rl_data *rl_data_regression(rl_ctx *ctx, int in_dim, int out_dim, uint64_t seed);
/* A token task over vocab tokens, seq tokens per sample: token i+1 = table[token i−1, token i]
 * (a fixed random table) with probability 0.9, else uniform: predicting it needs the previous two
 * tokens (attention). Loss floor ≈ 0.7 nats at vocab 16, seq 16 (ln 16 = 2.77 at the start). */
rl_data *rl_data_tokens(rl_ctx *ctx, int vocab, int seq, uint64_t seed);
/* Frees a data set. */
void rl_data_free(rl_data *d);
/* Input and output widths (regression) or vocab and seq (tokens). */
int rl_data_in_dim(const rl_data *d);
int rl_data_out_dim(const rl_data *d);
/* Fills out with samples first .. first+count−1 of global step `step`. out starts zeroed
 * ({0}); its buffers are reused when the size matches. Tensors are charged to ctx (activation). */
int rl_data_get(rl_data *d, rl_ctx *ctx, int64_t step, int64_t first, int64_t count, rl_batch *out);
/* This rank's shard of global step `step`: samples rank·local_batch .. +local_batch−1. */
int rl_data_shard(rl_data *d, rl_ctx *ctx, int64_t step, int rank, int64_t local_batch, rl_batch *out);
/* Frees a batch's buffers (the struct itself is the caller's). */
void rl_batch_free(rl_batch *b);

#endif
