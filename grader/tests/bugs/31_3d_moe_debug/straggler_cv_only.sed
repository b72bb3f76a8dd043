# Planted bug: the imbalance flag uses only cv > 0.4 and forgets max/min > 3.
# step: 31.4
# caught-by: straggler rules apart: cv, max/min, outlier, even count, MAD = 0, ties
s/o->imbalanced = o->cv > 0.4 || o->ratio > 3;/o->imbalanced = o->cv > 0.4;/
