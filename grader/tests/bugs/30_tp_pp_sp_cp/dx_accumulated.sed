# Planted bug: the column-parallel backward accumulates into dx (beta 1, as for the weight
# gradient next to it) instead of overwriting it: right only when dx starts at zero.
# step: 30.1
# caught-by: backward: dx and gradient shards = dense
s|rl_matmul_backward(m->ctx, m->x_in, 0, m->w1, 0, dp, dx_partial, 0, m->dw1, 1);|rl_matmul_backward(m->ctx, m->x_in, 0, m->w1, 0, dp, dx_partial, 1, m->dw1, 1);|
