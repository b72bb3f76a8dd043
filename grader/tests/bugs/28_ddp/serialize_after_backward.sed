# Planted bug: the hook only marks; every bucket is launched after backward, in finalize.
# step: 28.3
# caught-by: first bucket's all-reduce starts before backward ends
# caught-by: exposed comm below the bound
s|while (r->next_bucket < r->plan.nbuckets && r->pending\[r->next_bucket\] == 0) {|while (0) {|
s|^    if (r->next_bucket < r->plan.nbuckets) {$|    while (r->next_bucket < r->plan.nbuckets \&\& r->pending[r->next_bucket] == 0)\n        launch_bucket(r, r->next_bucket++);\n&|
