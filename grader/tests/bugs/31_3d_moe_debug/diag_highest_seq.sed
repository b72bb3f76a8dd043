# Planted bug: diagnose() walks each communicator from its HIGHEST seq down and reports the last anomaly
# instead of the lowest incomplete or inconsistent seq.
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/for (int64_t s = smin; s <= smax \&\& !found; s++) {/for (int64_t s = smax; s >= smin \&\& !found; s--) {/
