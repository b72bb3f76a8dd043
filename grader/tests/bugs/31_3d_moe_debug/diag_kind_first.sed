# Planted bug: over communicators a mismatch always wins over a hang, even one enqueued later (kind
# before time).
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/(out->kind == RL_DIAG_NONE || when < best ||/(out->kind == RL_DIAG_NONE || (when < best \&\& !(out->kind == RL_DIAG_MISMATCH \&\& r.kind != RL_DIAG_MISMATCH)) ||/
s/(when == best \&\& r.kind == RL_DIAG_MISMATCH \&\& out->kind != RL_DIAG_MISMATCH)/(r.kind == RL_DIAG_MISMATCH \&\& out->kind != RL_DIAG_MISMATCH)/
