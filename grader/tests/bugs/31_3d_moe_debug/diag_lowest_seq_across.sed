# Planted bug: over communicators the anomaly with the lowest seq wins (time only on equal seqs)
# instead of the one whose seq was first enqueued.
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/(out->kind == RL_DIAG_NONE || when < best ||/(out->kind == RL_DIAG_NONE || r.seq < out->seq || (r.seq == out->seq \&\& when < best) ||/
