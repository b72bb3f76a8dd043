# Planted bug: the node of a rank is rank / 8 (the handout's example) instead of rank / the profile's
# GPUs per node.
# step: 31.1
# caught-by: 3D layouts = mesh.h (coords, groups, nodes)
s|        out->node\[r\] = r / out->gpus_per_node;|        out->node[r] = r / 8;|
