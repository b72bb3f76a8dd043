# Planted bug: with MAD = 0 the robust z-score is taken as 0, so no rank can be an outlier (the header:
# "MAD = 0: any x above the median" passes the scaled test).
# step: 31.4
# caught-by: straggler rules apart: cv, max/min, outlier, even count, MAD = 0, ties
s|double z = scale > 0 ? (x\[i\] - o->median) / scale : (x\[i\] > o->median ? INFINITY : 0);|double z = scale > 0 ? (x[i] - o->median) / scale : 0;|
