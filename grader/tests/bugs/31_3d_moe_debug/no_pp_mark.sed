# Planted bug: td_train_step runs the ops without rl_pp_mark / rl_pp_unmark: the results are
# right, but nothing in the trace says which stage, micro-batch and phase an op belongs to.
# step: 31.2
# caught-by: order in a step: the last send before ZeRO-1; ops tagged with rl_pp_mark
/^        rl_pp_mark(ctx, s, op);$/d
/^        rl_pp_unmark(ctx);$/d
