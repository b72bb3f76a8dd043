# Correct variant: the population stddev in one pass, sqrt(E[x²] − mean²) (clamped at 0),
# instead of a second pass over the squared deviations.
# step: 31.4
s/^    double mn = x\[0\], mx = x\[0\], sum = 0;$/    double mn = x[0], mx = x[0], sum = 0, sumsq = 0;/
s/^        sum += x\[i\];$/        sum += x[i], sumsq += x[i] * x[i];/
/^    double ss = 0;$/,/^        ss += /d
s|    o->cv = o->mean > 0 ? sqrt(ss / n) / o->mean : 0;|    o->cv = o->mean > 0 ? sqrt(fmax(0.0, sumsq / n - o->mean * o->mean)) / o->mean : 0;|
