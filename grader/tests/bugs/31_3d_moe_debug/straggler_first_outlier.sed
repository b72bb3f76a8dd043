# Planted bug: the culprit is the first outlier by rank instead of the one furthest above the
# median.
# step: 31.4
# caught-by: straggler rules apart: cv, max/min, outlier, even count, MAD = 0, ties
s/\&\& x\[i\] - o->median > worst)/\&\& outlier < 0 \&\& worst >= 0)/
