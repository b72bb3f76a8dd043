# Planted bug: the TP forward does not free what the previous forward saved: every forward
# leaks x_in, hpre and hact (invisible with a single forward).
# step: 30.1
# caught-by: memory: every tensor's category, saved activations freed
/^int tp_mlp_forward(/,/^}/{
/^    free_saved(m);$/d
}
