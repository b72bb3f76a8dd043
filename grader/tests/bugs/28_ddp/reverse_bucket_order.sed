# Planted bug: buckets are filled in registration order instead of reverse order.
# step: 28.2
# caught-by: reverse registration order
# caught-by: the lab's MLP (25 MiB, 4 MiB, 1 MiB caps)
s|for (int i = nparams - 1; i >= 0; i--) {|for (int i = 0; i < nparams; i++) {|
