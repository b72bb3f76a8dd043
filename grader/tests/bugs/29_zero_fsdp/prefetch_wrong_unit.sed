# Planted bug: backward prefetch in forward order — it gathers unit u+1 (whose backward is
# already done) instead of u-1, the unit backward needs next.
# step: 29.4
# caught-by: prefetch hides comm (exposed comm drops)
# caught-by: prefetch order from the trace: each gather for the unit needed next
s|if (!rc \&\& e->cfg.backward_prefetch \&\& u - 1 >= 0)|if (!rc \&\& e->cfg.backward_prefetch \&\& u + 1 < e->nunits)|
s|        rc = zero3_gather(e, u - 1);|        rc = zero3_gather(e, u + 1);|
