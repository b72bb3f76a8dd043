# Planted bug: tp_mlp_init takes t and its shard index from the world context (rl_world_size,
# rl_rank) instead of the TP group (rl_comm_size, rl_comm_rank): the same numbers while TP
# spans every rank, the wrong slices of A and B inside a TP group of a larger world.
# step: 30.1
# caught-by: on a sub-communicator: two TP groups, collectives on the group (trace)
s|^    m->t = rl_comm_size(tp);$|    m->t = rl_world_size(ctx);|
s|^    m->rank = rl_comm_rank(tp);$|    m->rank = rl_rank(ctx);|
