# Planted bug: at one seq a missing rank is reported before a mismatch (lab31.h: "at one seq a
# mismatch is reported before a missing rank").
# step: 31.4
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
s/^        if (odd >= 0) {$/        if (odd >= 0 \&\& absent < 0) {/
