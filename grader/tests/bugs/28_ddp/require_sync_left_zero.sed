# Planted bug: with K > 1, ddp_train_step leaves the reducer inside no_sync (require_sync = 0)
# after the step, thinking the next step starts with no_sync micro-steps: right gradients,
# but a later backward outside the loop (a K = 1 step, 28.3-style code) all-reduces nothing.
# step: 28.4
# caught-by: 3 micro-steps = one rank's 3x batch
/^    r->require_sync = 1;$/d
s|^    if (loss)$|    r->require_sync = accum_steps == 1; /* the next step begins inside no_sync */\n    if (loss)|
