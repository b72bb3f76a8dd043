# Correct variant: every reduce-scatter averages (RL_AVG: one rounding of the sum divided by
# the shard group) instead of summing and scaling afterwards; finalize then divides only by
# the replicas (HSDP) — the same mean, rounded once instead of twice.
# step: all
s|rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;|rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_AVG, 0) ? 0 : RL_ERR_ARG;|
/^        if (!rc && e->n > 1)$/{
N
d
}
s|U->reduce = rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_SUM, RL_ASYNC);|U->reduce = rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_AVG, RL_ASYNC);|
s|    if (!rc \&\& dp_size(e) > 1)|    if (!rc \&\& dp_size(e) > e->n)|
s|rc = rl_scale(e->ctx, e->grad_shard, 1.0f / (float)dp_size(e));|rc = rl_scale(e->ctx, e->grad_shard, (float)e->n / (float)dp_size(e));|
