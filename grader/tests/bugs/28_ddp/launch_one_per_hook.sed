# Planted bug: the hook launches at most one bucket per call ("if" instead of "while"): right
# while gradients become ready in reverse registration order (each call completes one bucket),
# but when one gradient completes a bucket with complete buckets waiting behind it, those are
# never launched and finalize reports a bucket that never became ready.
# step: 28.3
# caught-by: one all-reduce per bucket, in bucket order
s|^    while (r->next_bucket < r->plan.nbuckets && r->pending\[r->next_bucket\] == 0) {$|    if (r->next_bucket < r->plan.nbuckets \&\& r->pending[r->next_bucket] == 0) {|
