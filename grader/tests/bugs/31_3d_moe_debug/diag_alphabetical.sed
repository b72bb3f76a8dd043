# Planted bug: over communicators diagnose() keeps the anomaly of the communicator whose name sorts first,
# whatever the times.
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/(out->kind == RL_DIAG_NONE || when < best ||/(out->kind == RL_DIAG_NONE || strcmp(r.comm, out->comm) < 0 ||/
s/^    double best = INFINITY;$/    double best = INFINITY;\n    (void)best;/
