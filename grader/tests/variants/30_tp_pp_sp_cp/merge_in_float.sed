# Correct variant: the merge computes in float, as common/attn_blocks.c does (max-shifted,
# lse' = max + log1pf(expf(-|lse - lse_b|))): exact to float precision for any finite lse.
# step: 30.5
s|^                double mx = l > lb ? l : lb;$|                float mx = (float)(l > lb ? l : lb); /* in float, as common/ does */|
s|^                double lnew = mx + log(exp(l - mx) + exp(lb - mx));$|                float lnew = mx + log1pf(expf(-fabsf((float)l - (float)lb)));|
s|^                double a = exp(l - lnew), c = exp(lb - lnew);$|                float a = expf((float)l - lnew), c = expf((float)lb - lnew);|
