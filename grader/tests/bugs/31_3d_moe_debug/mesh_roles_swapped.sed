# Planted bug: the roles are named by position in another order (tp, pp, cp ... instead of
# mesh_dim's tp, cp, pp ...), so the CP and PP groups carry each other's names.
# step: 31.1
# caught-by: communicators from rl_comm_split, named by role
s/^        rl_comm_set_role(out->c\[d\], mesh_dim_name((mesh_dim)d));$/        rl_comm_set_role(out->c[d], mesh_dim_name((mesh_dim)(d == 1 ? 2 : d == 2 ? 1 : d)));/
