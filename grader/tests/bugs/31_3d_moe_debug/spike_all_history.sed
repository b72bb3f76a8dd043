# Planted bug: the recent mean is over every earlier value of the (rank, layer), not the last 5.
# step: 31.4
# caught-by: spike rules: scan order, the last 5 values, no history at step 0
s/for (int p = s - 1; p >= 0 \&\& have < 5; p--)/for (int p = s - 1; p >= 0; p--)/
