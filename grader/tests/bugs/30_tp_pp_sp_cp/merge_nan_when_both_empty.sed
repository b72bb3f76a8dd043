# Planted bug: the merge has no "nothing to add" branch: the max-shifted formula handles one
# -inf, but a row where both lse and lse_b are -inf becomes NaN (-inf minus -inf).
# step: 30.5
# caught-by: log-sum-exp merge
/^                if (isinf(lb) \&\& lb < 0)$/,/^                    continue; \/\* nothing to add \*\/$/d
