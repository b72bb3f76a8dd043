# Planted bug: the SP backward never frees the gathered dy [s, b, h]: every backward leaks a
# whole-sequence activation, which is what SP was meant to save.
# step: 30.3
# caught-by: activation bytes per rank reduced
/^int sp_mlp_backward(/,/^}/{
/^    rl_tensor_free(dyg);$/d
}
