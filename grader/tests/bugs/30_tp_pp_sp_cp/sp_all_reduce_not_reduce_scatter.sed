# Planted bug: under sequence parallelism the row-parallel output is all-reduced (then this
# rank's rows copied out) instead of reduce-scattered: the same numbers, twice the bytes.
# step: 30.3
# caught-by: all-gather and reduce-scatter of b*s*h, no all-reduce (trace)
s|        rc = rl_reduce_scatter(m->tp, z, y, RL_SUM, 0) ? 0 : RL_ERR_ARG;|        rc = rl_all_reduce(m->tp, z, z, RL_SUM, 0) ? 0 : RL_ERR_ARG;\n    if (!rc) {\n        rl_tensor *mine = rl_tensor_slice(z, (int64_t)m->rank * y->numel, y->numel);\n        rc = rl_copy(m->ctx, y, mine);\n        rl_tensor_free(mine);\n    }|
