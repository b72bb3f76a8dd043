# Planted bug: K defaults to 12 only when k is exactly 0; a negative k (zero.h: "k <= 0
# means 12") is used as it is, so the optimizer bytes come out negative.
# step: 29.1
# caught-by: random model and cluster sizes, K defaulted or 8..16
s|    if (!(k > 0))|    if (k == 0)|
