# Planted bug: ZeRO-1 cuts the flat vector into numel / dp pieces, ignoring its padding to a multiple
# of dp: fine while numel divides by dp, wrong (a size error) when it does not.
# step: 31.2
# caught-by: other shapes, fixed and randomized (m < pp, odd sizes)
s/rl_tensor_slice(e->flat_grad, (int64_t)e->dp_rank \* e->shard, e->shard)/rl_tensor_slice(e->flat_grad, (int64_t)e->dp_rank * (e->numel \/ D), e->numel \/ D)/
s/rl_tensor_slice(e->flat_param, (int64_t)e->dp_rank \* e->shard, e->shard)/rl_tensor_slice(e->flat_param, (int64_t)e->dp_rank * (e->numel \/ D), e->numel \/ D)/
