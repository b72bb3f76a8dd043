# Planted bug: K defaults to 12 for every k below 1 ("k < 1" instead of "k <= 0"), so a
# small but valid k such as 0.5 optimizer bytes per parameter is replaced by 12.
# step: 29.1
# caught-by: random model and cluster sizes, K defaulted or 8..16
s|    if (!(k > 0))|    if (!(k >= 1))|
