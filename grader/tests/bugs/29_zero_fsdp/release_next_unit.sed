# Planted bug: the hook frees the bucket of unit u+1, assuming backward completes the units
# in reverse order, instead of the unit launched last (e->last_reduced): when gradients
# become ready out of order it frees a bucket that is still being filled.
# step: 29.3
# caught-by: parameters = baseline, gradients ready out of order
s|    int rc = \*last ? release_bucket(e, \*last - 1) : 0;|    int rc = u + 1 < e->nunits ? release_bucket(e, u + 1) : 0;|
