# Planted bug: the TP-across-nodes check compares tp with the GPUs per node instead of the nodes of each
# group's first and last rank: tp = 3 on 8-GPU nodes (ranks 6..8 span two nodes) is not warned.
# step: 31.1
# caught-by: TP group across nodes: warning
s/^        if (a != b) {$/        if (TP > out->gpus_per_node) {/
