# Planted bug: ddp_train_step reports the loss of the last micro-step instead of the mean of
# the K micro-steps' losses.
# step: 28.4
# caught-by: random ranks, micro-steps, micro-batch: gradients and reported loss
# caught-by: 3 micro-steps = one rank's 3x batch
s|^        sum += l;$|        sum = l;|
s|\*loss = (float)(sum / accum_steps);|*loss = (float)sum;|
