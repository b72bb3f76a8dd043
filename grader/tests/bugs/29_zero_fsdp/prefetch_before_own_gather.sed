# Planted bug: the prefetch of the next unit is issued BEFORE the current unit's own gather
# (forward and backward): where both are issued in one callback the unit needed now queues
# behind the prefetch and its compute waits for both.
# step: 29.4
# caught-by: prefetch order from the trace: each gather for the unit needed next
/^int zero3_pre_forward/,/^}/{
s|^    int rc = zero3_gather(e, u);$|    int rc = e->cfg.forward_prefetch \&\& u + 1 < e->nunits ? zero3_gather(e, u + 1) : 0;\n    if (!rc)\n        rc = zero3_gather(e, u);|
}
/^int zero3_pre_backward/,/^}/{
s|^    int rc = zero3_gather(e, u);$|    int rc = e->cfg.backward_prefetch \&\& u - 1 >= 0 ? zero3_gather(e, u - 1) : 0;\n    if (!rc)\n        rc = zero3_gather(e, u);|
}
