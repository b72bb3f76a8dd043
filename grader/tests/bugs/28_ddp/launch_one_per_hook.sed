# Planted bug: the hook launches at most one bucket per call ("if" instead of "while"): right
# while gradients become ready in reverse registration order (each call completes one bucket),
# but when one gradient completes a bucket with complete buckets waiting behind it, those are
# never launched and finalize reports a bucket that never became ready.
# step: 28.3
# caught-by: one all-reduce per bucket, in bucket order
s|^    while (\*k.next < r->plan.nbuckets && complete(r, k, \*k.next)) {$|    if (*k.next < r->plan.nbuckets \&\& complete(r, k, *k.next)) {|
