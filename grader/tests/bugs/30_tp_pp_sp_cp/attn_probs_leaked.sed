# Planted bug: tp_attn_forward never frees its attention probabilities [b, a/t, s, s]: every
# forward leaks the largest tensor of the step.
# step: 30.2
# caught-by: heads r*a/t.. on rank r: shards, temporaries freed
/^int tp_attn_forward(/,/^}/{
/^    rl_tensor_free(probs);$/d
}
