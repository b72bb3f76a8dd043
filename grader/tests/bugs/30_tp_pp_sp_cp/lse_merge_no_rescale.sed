# Planted bug: the log-sum-exp merge forgets to rescale the running output by exp(lse - lse').
# step: 30.5
# caught-by: log-sum-exp merge
# caught-by: ring attention = full attention
s|(float)(a \* rl_tensor_get(out, o0 + d) + c|(float)(rl_tensor_get(out, o0 + d) + c|
s|                double a = exp(l - lnew), c = exp(lb - lnew);|                double c = exp(lb - lnew);|
