# Correct variant: HSDP's finalize all-reduces each unit's piece of grad_shard across the
# replicas separately (one all-reduce per unit) instead of the whole grad_shard at once:
# the same bytes and the same sums.
# step: 29.5
s|^        rc = rl_all_reduce(e->replica_comm, e->grad_shard, e->grad_shard, RL_SUM, 0) ? 0 : RL_ERR_ARG;$|        for (int u = 0; u < e->nunits \&\& !rc; u++) {\n            rl_tensor *piece = rl_tensor_slice(e->grad_shard, e->units[u].shard_off, e->units[u].shard);\n            rc = piece \&\& rl_all_reduce(e->replica_comm, piece, piece, RL_SUM, 0) ? 0 : RL_ERR_ARG;\n            rl_tensor_free(piece);\n        }|
