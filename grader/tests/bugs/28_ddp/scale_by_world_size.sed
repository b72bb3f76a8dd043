# Planted bug: finalize averages by the world's size (rl_world_size) instead of the size of
# the reducer's communicator: right as long as the data-parallel group is the world.
# step: 28.3 28.4
# caught-by: two data-parallel groups of a split world
# caught-by: two data-parallel groups of a split world, K micro-steps
s|int n = rl_comm_size(r->comm), rc = 0;|int n = rl_world_size(r->ctx), rc = 0;|
