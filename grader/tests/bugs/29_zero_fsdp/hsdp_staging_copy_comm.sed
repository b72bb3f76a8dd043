# Planted bug: HSDP's finalize keeps a copy of grad_shard (charged to RL_MEM_COMM) around the
# all-reduce across replicas: the right mean, but an extra 2Ψ/G bytes at the step's peak.
# step: 29.5
# caught-by: intra- vs inter-group traffic from the trace, memory (16psi/G)
s|^        rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;$|        {\n            rl_tensor *copy = rl_tensor_new_1d(e->ctx, "ar_staging", RL_BF16, RL_MEM_COMM, e->shard_numel);\n            rc = copy ? rl_copy(e->ctx, copy, e->grad_shard) : RL_ERR_NOMEM;\n            if (!rc)\n                rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;\n            rl_tensor_free(copy);\n        }|
