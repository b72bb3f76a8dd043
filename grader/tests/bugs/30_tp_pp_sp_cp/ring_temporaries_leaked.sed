# Planted bug: ring attention never frees its temporaries (lse, lse_b, out_b and the two K/V
# block buffers): every call leaks them.
# step: 30.5
# caught-by: ring attention leaves nothing allocated
/^int cp_ring_attention(/,/^}/{
/^        rl_tensor_free(kv\[j\]\[0\]), rl_tensor_free(kv\[j\]\[1\]);$/d
/^    for (int j = 0; j < 2; j++)$/{
N
/rl_tensor_free/d
}
/^    rl_tensor_free(lse);$/d
/^    rl_tensor_free(lse_b);$/d
/^    rl_tensor_free(out_b);$/d
}
