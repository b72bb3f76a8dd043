# Planted bug: the column-parallel layer's f operator skips its all-reduce in backward: each
# rank's dx covers only its 4h/t columns of A.
# step: 30.1
# caught-by: backward: dx and gradient shards = dense
# caught-by: one all-reduce of b*s*h forward, one backward (trace)
s|        rc = rl_all_reduce(m->tp, dx, dx, RL_SUM, 0) ? 0 : RL_ERR_ARG;|        rc = 0;|
