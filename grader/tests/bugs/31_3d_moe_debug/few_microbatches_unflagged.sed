# Planted bug: the planner warns only when m < p instead of m < 4p.
# Caught by 31.5 "warnings: TP across nodes, m < 4p, out of memory" and the ranked plans.
s|    if (p > 1 \&\& m < 4 \* p)|    if (p > 1 \&\& m < p)|
