# Correct variant: both rl_comm_split calls use the world rank as the key (it increases with
# the index in the shard group and with the group in the replica communicator, so the ranks
# come out in the same order).
# step: 29.5
s|^    \*shard = rl_comm_split(world, w / group, w % group);$|    *shard = rl_comm_split(world, w / group, w);|
s|^    \*replica = \*shard ? rl_comm_split(world, w % group, w / group) : NULL;$|    *replica = *shard ? rl_comm_split(world, w % group, w) : NULL;|
