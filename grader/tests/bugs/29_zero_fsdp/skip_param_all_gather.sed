# Planted bug: after the sharded AdamW step nobody all-gathers the updated pieces, so every
# rank trains on stale copies of the parameters it does not own.
# step: 29.2
# caught-by: parameters = DDP+AdamW baseline (random worlds and models)
s|rc = rl_all_gather(e->shard_comm, mine, all, 0) ? 0 : RL_ERR_ARG;|rc = 0;|
