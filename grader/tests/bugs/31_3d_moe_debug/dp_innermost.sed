# Planted bug: the mesh order with DP innermost and TP outermost (TP swapped with DP): TP
# groups become strided across nodes, DP groups consecutive ranks.
# step: 31.1
# caught-by: 3D layouts = mesh.h (coords, groups, nodes)
s|        c->tp = r % TP;|        c->tp = r / (CP * PP * DP);|
s|            c->dp = r / (TP \* CP \* PP);|            c->dp = r % DP;|
