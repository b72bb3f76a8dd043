# Planted bug: the gradient bucket is allocated as a communication buffer (RL_MEM_COMM)
# instead of gradient memory (RL_MEM_GRAD): the memory account no longer shows the buckets.
# step: 29.3 29.4
# caught-by: gradient memory 2psi/N + buckets, no full buffer
# caught-by: memory: shard + two units, all freed after the step
s|U->grad = rl_tensor_new_1d(e->ctx, name, RL_BF16, RL_MEM_GRAD, U->padded);|U->grad = rl_tensor_new_1d(e->ctx, name, RL_BF16, RL_MEM_COMM, U->padded);|
