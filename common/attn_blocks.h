/* attn_blocks.h — building blocks of context parallelism (ring attention): attention of a
 * query block against one key/value block that also returns each row's log-sum-exp, the
 * online-softmax merge of two partial results, and the zig-zag sequence partition that
 * balances causal work over the CP ranks.
 *
 * Layout as rl_attention_forward (ops.h): q [b, sq, nh·hd], k and v [b, sk, nh·hd], out
 * [b, sq, nh·hd]; lse [b, nh, sq] f32 (natural log of Σ_j exp(score_ij), scores scaled by
 * 1/√hd). A row with every key masked has lse = −∞ and out = 0, and merges as "nothing".
 * Ring attention on rank r: out, lse ← block(q_r, k_r, v_r); then for each K/V block
 * received around the ring: (o_b, lse_b) ← block(q_r, k_b, v_b) and merge. A block skips the
 * scores its mask hides, and its trace event ("attn_block") counts the FLOPs of those it
 * computes: 4·b·h per unmasked (query, key) pair — the block's causal work, measured. */
#ifndef RL_ATTN_BLOCKS_H
#define RL_ATTN_BLOCKS_H
#include <stdint.h>
#include "tensor.h"

typedef struct rl_ctx rl_ctx;

/* Attention of a query block against a key/value block, with the causal mask of global
 * positions q_offset + i >= k_offset + j when causal (else no mask). */
int rl_attn_block_forward(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                          int causal, int64_t q_offset, int64_t k_offset, rl_tensor *out, rl_tensor *lse);
/* Same with explicit global positions per row (q_pos [sq], k_pos [sk]; the mask keeps
 * q_pos[i] >= k_pos[j]); NULL positions: no mask. For zig-zag chunks. */
int rl_attn_block_forward_pos(rl_ctx *ctx, const rl_tensor *q, const rl_tensor *k, const rl_tensor *v, int n_heads,
                              const int64_t *q_pos, const int64_t *k_pos, rl_tensor *out, rl_tensor *lse);

/* The merge on rows of d values: (out, lse) becomes the attention output and log-sum-exp over
 * the union of the two key sets that (out, lse) and (out_b, lse_b) each cover — exact, and
 * stable for large |lse|; a −∞ row is an empty key set. out/lse are updated in place. (Lab
 * 30.5 asks for this rule: it may not call these two.) */
void rl_attn_merge_rows(float *out, float *lse, const float *out_b, const float *lse_b, int64_t rows, int64_t d);
/* The merge rule on attention tensors (layouts above): (out, lse) ← merge with (out_b, lse_b). */
int rl_attn_merge(rl_ctx *ctx, rl_tensor *out, rl_tensor *lse, const rl_tensor *out_b, const rl_tensor *lse_b,
                  int n_heads);

/* Zig-zag partition: the sequence is cut into 2·cp chunks; rank r keeps chunks r and
 * 2·cp − r − 1. Fills the two chunk indices; RL_ERR_ARG for a bad cp or rank. */
int rl_cp_zigzag_chunks(int cp, int rank, int *first, int *second);
/* The global positions of rank r's 2·seq/(2cp) rows, in local order (chunk r, then chunk
 * 2cp−r−1) into pos; RL_ERR_ARG (message in err) unless seq is divisible by 2·cp. */
int rl_cp_zigzag_positions(int64_t seq, int cp, int rank, int64_t *pos, char *err, size_t errlen);
/* Unmasked causal score entries (q_pos[i] >= k_pos[j]) of a query set against a key set. */
int64_t rl_cp_causal_work(const int64_t *q_pos, int64_t nq, const int64_t *k_pos, int64_t nk);

#endif
