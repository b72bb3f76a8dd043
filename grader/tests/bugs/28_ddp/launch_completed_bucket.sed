# Planted bug: the hook launches the bucket that has just become complete, instead of
# launching buckets strictly in bucket order (a complete bucket must wait for earlier ones).
# Right while gradients become ready in reverse registration order; wrong as soon as they
# become ready in another order (branches, reused modules), differently on each rank.
# step: 28.3
# caught-by: one all-reduce per bucket, in bucket order
s|^    while (\*k.next < r->plan.nbuckets && complete(r, k, \*k.next)) {$|    if (complete(r, k, b)) { /* this bucket is complete: launch it */|
s|int rc = launch_bucket(r, \*k.next);|int rc = launch_bucket(r, b);|
