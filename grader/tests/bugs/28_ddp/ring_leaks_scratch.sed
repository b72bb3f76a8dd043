# Planted bug: the ring never frees its scratch tensor: right sums, but every call leaves
# ceil(count/n) elements allocated (per bucket per step in a training run).
# step: 28.1
# caught-by: world sizes 1-8, repeated calls
/^    rl_tensor_free(tmp);$/d
