# Planted bug: the sequence-parallel all-gathers and reduce-scatters run on the world
# communicator instead of the TP group m->tp (right only while TP spans every rank).
# step: 30.3
# caught-by: on a sub-communicator: two TP groups, the SP collectives on the group (trace)
/^int sp_mlp_forward(/,/^}/s|(m->tp, |(rl_comm_world(m->ctx), |g
/^int sp_mlp_backward(/,/^}/s|(m->tp, |(rl_comm_world(m->ctx), |g
