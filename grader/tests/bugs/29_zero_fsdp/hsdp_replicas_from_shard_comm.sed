# Planted bug: the data-parallel size is computed as the shard group size times the size of
# the SHARD communicator (instead of the replica communicator): n x n, the right divisor only
# when there are as many replicas as shards (2 x 2), R/n times the mean otherwise.
# step: 29.5
# caught-by: HSDP reduced gradient = the mean over every replica
s|return e->n \* (e->replica_comm ? rl_comm_size(e->replica_comm) : 1);|return e->n * (e->replica_comm ? rl_comm_size(e->shard_comm) : 1);|
