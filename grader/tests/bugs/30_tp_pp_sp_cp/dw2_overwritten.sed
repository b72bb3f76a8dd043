# Planted bug: the row-parallel backward overwrites dw2 (beta 0) instead of accumulating into
# it: one backward is right, gradient accumulation over micro-batches is not.
# step: 30.1
# caught-by: backward: dx and gradient shards = dense
s|rl_matmul_backward(m->ctx, m->hact, 0, m->w2, 0, dy, dh, 0, m->dw2, 1);|rl_matmul_backward(m->ctx, m->hact, 0, m->w2, 0, dy, dh, 0, m->dw2, 0);|
