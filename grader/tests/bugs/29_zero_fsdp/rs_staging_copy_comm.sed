# Planted bug: ZeRO-1 copies each unit's gradients into a staging buffer charged to
# communication memory (RL_MEM_COMM) and reduce-scatters from the copy: the right mean, but
# an extra buffer of a whole unit at the step's peak.
# step: 29.2
# caught-by: memory account after each step and at its peak
s|^        rc = rl_reduce_scatter(e->shard_comm, all, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;$|        rl_tensor *tmp = rl_tensor_new_1d(e->ctx, "rs_staging", RL_BF16, RL_MEM_COMM, U->padded);\n        rc = tmp ? rl_copy(e->ctx, tmp, all) : RL_ERR_NOMEM;\n        if (!rc)\n            rc = rl_reduce_scatter(e->shard_comm, tmp, mine, RL_SUM, 0) ? 0 : RL_ERR_ARG;\n        rl_tensor_free(tmp);|
