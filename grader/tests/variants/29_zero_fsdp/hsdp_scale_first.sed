# Correct variant: HSDP's finalize divides the gradient pieces by the data-parallel size
# BEFORE the all-reduce across replicas (the same mean, rounded in another order).
# step: 29.5
s|^    if (!rc \&\& e->replica_comm \&\& rl_comm_size(e->replica_comm) > 1)$|    if (!rc \&\& dp_size(e) > 1)|;t
s|^        rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;$|        rc = rl_scale(e->ctx, e->grad_shard, 1.0f / (float)dp_size(e));|;t
s|^    if (!rc \&\& dp_size(e) > 1)$|    if (!rc \&\& e->replica_comm \&\& rl_comm_size(e->replica_comm) > 1)|;t
s|^        rc = rl_scale(e->ctx, e->grad_shard, 1.0f / (float)dp_size(e));$|        rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;|
