# Correct variant: each rank divides its gradients by the shard group size BEFORE the
# reduce-scatter (as DDP's and FSDP's pre-divide do) and finalize divides only by the
# replicas: the summed pieces are the mean.
# step: all
s|^        rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;$|        rc = e->n > 1 ? rl_scale(e->ctx, all, 1.0f / (float)e->n) : 0;\n        if (!rc)\n            rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;|
/^        if (!rc && e->n > 1)$/{
N
d
}
/^    rl_tensor \*mine = rl_tensor_slice(e->grad_shard, U->shard_off, U->shard);$/i\
    if (e->n > 1 && rl_scale(e->ctx, U->grad, 1.0f / (float)e->n))\
        return RL_ERR_ARG;
s|    if (!rc \&\& dp_size(e) > 1)|    if (!rc \&\& dp_size(e) > e->n)|
s|rc = rl_scale(e->ctx, e->grad_shard, 1.0f / (float)dp_size(e));|rc = rl_scale(e->ctx, e->grad_shard, (float)e->n / (float)dp_size(e));|
