# Planted bug: the grad-ready hook's reduce-scatter is issued without RL_ASYNC, so backward
# stops at every unit until its bucket is reduced: nothing overlaps (82 us of comm exposed
# instead of 43 on the lab's model).
# step: 29.3 29.4
# caught-by: reduce-scatters overlap backward (exposed comm bounded)
# caught-by: ZeRO-3 reduce-scatters overlap backward
s|U->reduce = rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_SUM, RL_ASYNC);|U->reduce = rl_reduce_scatter(e->shard_comm, U->grad, mine, RL_SUM, 0);|
