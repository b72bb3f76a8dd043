# Planted bug: the merge computes lse' = log(exp(lse) + exp(lse_b)) in double without the
# max shift: exact while |lse| < ~700, inf/inf = NaN above (the header: 'exact for any
# finite lse').
# step: 30.5
# caught-by: log-sum-exp merge
/^                double mx = l > lb ? l : lb;$/d
s|^                double lnew = mx + log(exp(l - mx) + exp(lb - mx));$|                double lnew = log(exp(l) + exp(lb));|
