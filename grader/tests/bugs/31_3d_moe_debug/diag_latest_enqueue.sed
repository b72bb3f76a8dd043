# Planted bug: over communicators diagnose() times an anomaly by the LATEST enqueue of its seq's
# records instead of the first (lab31.h: "the lowest t_enqueued of its records").
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/if (recs\[r\] \&\& recs\[r\]->t_enqueued < \*when)/if (recs[r] \&\& (*when == INFINITY || recs[r]->t_enqueued > *when))/
