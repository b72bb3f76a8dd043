# Planted bug: the layout always puts DP outermost (tp-cp-pp-dp), whatever the shape's order:
# wrong in the default order, Megatron-LM's tp-cp-ep-dp-pp, where PP is outermost.
# step: 31.1
# caught-by: 3D layouts = mesh.h (coords, groups, nodes)
s|        if (s->order == RL_MESH_ORDER_TP_CP_PP_DP) {|        if (1) {|
s|            int dd = s->order == RL_MESH_ORDER_TP_CP_PP_DP ? z.pp + PP \* z.dp : z.dp + DP \* z.pp;|            int dd = z.pp + PP * z.dp;|
