# Planted bug: tp_attn_init deals the heads round-robin (rank r keeps heads r, r+t, r+2t ...)
# instead of the block r*a/t .. (r+1)*a/t-1; the output is still right (heads are
# independent), but the shards are not Megatron's and do not match a checkpoint's layout.
# step: 30.2
# caught-by: heads r*a/t.. on rank r: shards, temporaries freed
/^    copy_block(a->wq, wq, h, 0, a->rank \* hl);/,/^    copy_block(a->wo, wo, h, a->rank \* hl, 0);$/c\
    for (int j = 0; j < a->local_heads; j++) /* local head j is global head j*t + rank */\
        for (int64_t i = 0; i < h; i++)\
            for (int64_t d = 0; d < a->head_dim; d++) {\
                int64_t lc = j * a->head_dim + d, gc = ((int64_t)j * a->t + a->rank) * a->head_dim + d;\
                rl_tensor_set(a->wq, i * hl + lc, rl_tensor_get(wq, i * h + gc));\
                rl_tensor_set(a->wk, i * hl + lc, rl_tensor_get(wk, i * h + gc));\
                rl_tensor_set(a->wv, i * hl + lc, rl_tensor_get(wv, i * h + gc));\
                rl_tensor_set(a->wo, lc * h + i, rl_tensor_get(wo, gc * h + i));\
            }
