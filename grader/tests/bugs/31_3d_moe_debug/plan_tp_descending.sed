# Planted bug: the planner breaks ties (equal step time and memory) by tp descending instead of
# ascending.
# step: 31.5
# caught-by: exact ties in step time and memory: ordered by tp, pp, b, zero, recompute
s/^        return a->tp - b->tp;$/        return b->tp - a->tp;/
