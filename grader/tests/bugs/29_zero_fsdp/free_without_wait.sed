# Planted bug: zero3_free drops the unit's gather handle instead of waiting for it, and
# frees `full` while the all-gather may still be writing it (harmless only as long as every
# caller waited before).
# step: 29.4
# caught-by: memory: shard + two units, all freed after the step
/^int zero3_free/,/^}/{
s|^    int rc = zero3_wait(e, u);$|    int rc = 0;\n    U->gather = NULL;|
}
