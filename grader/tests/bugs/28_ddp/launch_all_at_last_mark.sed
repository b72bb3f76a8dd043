# Planted bug: the hook launches nothing until every parameter of the model has been marked,
# then every bucket at once — in bucket order, each with RL_ASYNC. The last gradient comes
# before backward's very end, so the first all-reduce still starts "before backward ends",
# yet no bucket overlaps the backward of the layers before it.
# step: 28.3
# caught-by: each bucket launched by the hook call that lets it go
s|^    while (\*k.next < r->plan.nbuckets && complete(r, k, \*k.next)) {$|    while (*k.next < r->plan.nbuckets \&\& complete(r, k, r->plan.nbuckets - 1) \&\& complete(r, k, 0) \&\& complete(r, k, *k.next)) {|
