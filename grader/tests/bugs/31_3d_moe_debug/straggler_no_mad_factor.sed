# Planted bug: the robust z-score divides by the MAD without the 1.4826 factor, so a rank 3.4 scaled
# MADs above the median is taken for an outlier.
# step: 31.4
# caught-by: straggler rules apart: cv, max/min, outlier, even count, MAD = 0, ties
s/double worst = 0, scale = 1.4826 \* o->mad;/double worst = 0, scale = o->mad;/
