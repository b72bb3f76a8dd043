# Planted bug: the hook releases the bucket of unit u+1 when that one has been launched,
# assuming backward completes the units in reverse order, instead of the unit launched
# last (e->last_reduced): when gradients become ready out of order, launched buckets pile
# up until finalize (no wrong value, but more than two buckets alive).
# step: 29.3
# caught-by: the hook: launch at a unit's last gradient, release the bucket launched before
s|    int rc = \*last ? release_bucket(e, \*last - 1) : 0;|    int rc = u + 1 < e->nunits \&\& e->units[u + 1].reduce ? release_bucket(e, u + 1) : 0;|
