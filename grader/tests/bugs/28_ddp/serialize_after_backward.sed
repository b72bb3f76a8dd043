# Planted bug: the hook only marks; every bucket is launched after backward, in finalize.
# step: 28.3
# caught-by: each bucket launched by the hook call that lets it go
# caught-by: exposed comm below the bound
s|while (\*k.next < r->plan.nbuckets && complete(r, k, \*k.next)) {|while (0) {|
s|^    if (\*k.next < r->plan.nbuckets) {$|    while (*k.next < r->plan.nbuckets \&\& complete(r, k, *k.next))\n        launch_bucket(r, (*k.next)++);\n&|
