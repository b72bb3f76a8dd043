# Planted bug: a seq counts as stuck only when a record is "started": records "enqueued" or "failed"
# are taken for done (lab31.h: a record not "completed").
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/incomplete |= strcmp(recs\[r\]->state, "completed") != 0;/incomplete |= strcmp(recs[r]->state, "started") == 0;/
