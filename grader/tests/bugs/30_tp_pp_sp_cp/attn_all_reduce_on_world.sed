# Planted bug: TP attention's all-reduce after the row-parallel Wo runs on the world
# communicator instead of the TP group a->tp (right only while TP spans every rank).
# step: 30.2
# caught-by: on a sub-communicator: two TP groups, the all-reduce on the group (trace)
s|rl_all_reduce(a->tp, y, y, RL_SUM, 0)|rl_all_reduce(rl_comm_world(a->ctx), y, y, RL_SUM, 0)|
