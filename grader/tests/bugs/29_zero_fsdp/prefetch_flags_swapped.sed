# Planted bug: forward prefetch is switched by backward_prefetch and backward prefetch by
# forward_prefetch (the flags swapped): with both on nothing shows.
# step: 29.4
# caught-by: prefetch order from the trace: each gather for the unit needed next
s|if (!rc \&\& e->cfg.forward_prefetch \&\& u + 1 < e->nunits)|if (!rc \&\& e->cfg.backward_prefetch \&\& u + 1 < e->nunits)|
s|if (!rc \&\& e->cfg.backward_prefetch \&\& u - 1 >= 0)|if (!rc \&\& e->cfg.forward_prefetch \&\& u - 1 >= 0)|
