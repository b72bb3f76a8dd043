# Correct variant: ZeRO-1 scales the whole unit by 1/N after the reduce-scatter instead of
# only this rank's piece: the piece holds the mean; the rest of flat_grad (not read again)
# is divided by N, as a division before the reduce-scatter leaves it.
# step: 29.2
s|^            rc = rl_scale(e->ctx, mine, 1.0f / (float)e->n);$|            rc = rl_scale(e->ctx, all, 1.0f / (float)e->n);|
