# Planted bug: the planner warns only when m < p instead of m < 4p.
# step: 31.5
# caught-by: warnings: TP across nodes, m < 4p, out of memory
s|    if (p > 1 \&\& m < 4 \* p)|    if (p > 1 \&\& m < p)|
