# Planted bug: mesh_build_comms makes the right communicators but never names their roles, so
# traces carry no role and the timeline cannot tell TP, PP and DP traffic apart.
# step: 31.1
# caught-by: communicators from rl_comm_split, named by role
/^        rl_comm_set_role(out->c\[d\], mesh_dim_name((mesh_dim)d));$/d
