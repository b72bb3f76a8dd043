# Planted bug: the TP-across-nodes warning hard-codes 8 GPUs per node instead of the profile's.
# step: 31.5
# caught-by: warnings: TP across nodes, m < 4p, out of memory
s|    if (t > hw->gpus_per_node)|    if (t > 8)|
