# Planted bug: ddp_train_step picks a rank's micro-batches by its world rank (rl_rank) instead
# of its rank in the reducer's communicator: right as long as the data-parallel group is the
# world.
# step: 28.4
# caught-by: two data-parallel groups of a split world, K micro-steps
s|int rank = rl_comm_rank(r->comm), rc = rl_model_zero_grad|int rank = rl_rank(r->ctx), rc = rl_model_zero_grad|
