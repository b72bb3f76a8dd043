# Correct variant: ddp_finalize_backward waits for (and scales) the buckets from the last to
# the first instead of in bucket order.
# step: 28.3 28.4
s|for (int b = 0; b < r->plan.nbuckets; b++) {|for (int b = r->plan.nbuckets - 1; b >= 0; b--) {|
