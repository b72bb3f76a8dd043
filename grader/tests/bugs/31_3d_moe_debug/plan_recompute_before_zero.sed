# Planted bug: the planner's tie-breaks compare the recompute mode before the ZeRO stage.
# step: 31.5
# caught-by: exact ties in step time and memory: ordered by tp, pp, b, zero, recompute
s/^    if (a->zero != b->zero)$/    if (a->recompute != b->recompute)/
s/^        return a->zero - b->zero;$/        return (int)a->recompute - (int)b->recompute;/
s/^    return (int)a->recompute - (int)b->recompute;$/    return a->zero - b->zero;/
