# Planted bug: the buckets are all-reduced on the world communicator instead of the reducer's
# communicator (its data-parallel group): right as long as the group is the world.
# step: 28.3 28.4
# caught-by: two data-parallel groups of a split world
# caught-by: two data-parallel groups of a split world, K micro-steps
s|rl_all_reduce(r->comm, r->bucket_buf\[b\], r->bucket_buf\[b\]|rl_all_reduce(rl_comm_world(r->ctx), r->bucket_buf[b], r->bucket_buf[b]|
