# Correct variant: the prefetch of the next unit is issued before waiting for the current
# unit's gather (both all-gathers in flight, then the wait), in forward and in backward.
# step: 29.4
/^int zero3_pre_forward/,/^}/{
s|^        rc = zero3_wait(e, u);$|        rc = e->cfg.forward_prefetch \&\& u + 1 < e->nunits ? zero3_gather(e, u + 1) : 0;|
s|^    if (!rc \&\& e->cfg.forward_prefetch \&\& u + 1 < e->nunits)$|    if (!rc)|
s|^        rc = zero3_gather(e, u + 1);$|        rc = zero3_wait(e, u);|
}
/^int zero3_pre_backward/,/^}/{
s|^        rc = zero3_wait(e, u);$|        rc = e->cfg.backward_prefetch \&\& u - 1 >= 0 ? zero3_gather(e, u - 1) : 0;|
s|^    if (!rc \&\& e->cfg.backward_prefetch \&\& u - 1 >= 0)$|    if (!rc)|
s|^        rc = zero3_gather(e, u - 1);$|        rc = zero3_wait(e, u);|
}
