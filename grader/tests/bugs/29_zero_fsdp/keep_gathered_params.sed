# Planted bug: ZeRO-3 never frees a gathered unit after its forward or backward (it only
# waits for the gather): the whole model ends up on every rank, and the next step runs on
# the stale gathered copies.
# step: 29.4
# caught-by: memory: shard + two units, all freed after the step
s|    return zero3_free(e, u);|    return zero3_wait(e, u);|
