# Planted bug: each ring step's send and receive views (rl_tensor_slice) are never freed; only
# the scratch tensor is. Right sums, but a live view keeps its whole buffer allocated after
# the buffer itself is freed.
# step: 28.1
# caught-by: world sizes 1-8, repeated calls
/^    rl_tensor_free(s);$/d
/^    rl_tensor_free(d);$/d
