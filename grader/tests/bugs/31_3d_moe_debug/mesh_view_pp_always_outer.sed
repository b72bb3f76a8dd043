# Planted bug: the mesh view always names pp outermost, also for the order tp-cp-pp-dp, where
# DP is the outermost dimension.
# step: 31.1
# caught-by: one split per kind in mesh_dim order; the mesh view recorded
s/pp_outer = s->order == RL_MESH_ORDER_TP_CP_DP_PP;/pp_outer = 1;/
