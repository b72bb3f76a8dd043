# Planted bug: the TP MLP's two all-reduces (g forward, f backward) run on the world
# communicator instead of the TP group m->tp: right while TP spans every rank, wrong as soon as
# the world holds several TP groups (data or pipeline parallelism around it).
# step: 30.1
# caught-by: on a sub-communicator: two TP groups, collectives on the group (trace)
s|rl_all_reduce(m->tp, y, y, RL_SUM, 0)|rl_all_reduce(rl_comm_world(m->ctx), y, y, RL_SUM, 0)|
s|rl_all_reduce(m->tp, dx, dx, RL_SUM, 0)|rl_all_reduce(rl_comm_world(m->ctx), dx, dx, RL_SUM, 0)|
