# Planted bug: ZeRO-2 keeps every unit's gradient bucket until the end of backward (a full
# gradient buffer, 2Ψ bytes) instead of freeing each once its reduce-scatter is done.
# step: 29.3
# caught-by: gradient memory 2psi/N + buckets, no full buffer
s|int rc = \*last ? release_bucket(e, \*last - 1) : 0;|int rc = 0;|
