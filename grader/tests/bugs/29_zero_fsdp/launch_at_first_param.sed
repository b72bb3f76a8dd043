# Planted bug: the hook launches a unit's reduce-scatter when the unit's FIRST registered
# parameter is announced (the last one in reverse registration order) instead of when its
# count of ready gradients reaches its number of parameters.
# step: 29.3
# caught-by: the hook: launch at a unit's last gradient, release the bucket launched before
s|^    if (++ready\[u\] < U->nparams)$|    ++ready[u];\n    if (p->index != U->first_param)|
