# Planted bug: buckets are filled in registration order instead of reverse order.
# Caught by 28.2 (every bucket-order test).
s|for (int i = nparams - 1; i >= 0; i--) {|for (int i = 0; i < nparams; i++) {|
