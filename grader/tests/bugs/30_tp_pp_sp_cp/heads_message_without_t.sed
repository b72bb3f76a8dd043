# Planted bug: the refusal of heads that t does not divide names h and a but not t ("h = 48
# with a = 6 heads cannot be split"): the learner reading it cannot tell which t was wrong.
# step: 30.2
# caught-by: heads not divisible by t: clear error
/^        return rl_error(ctx, RL_ERR_ARG, "tp_attn_init: a = %d attention heads are not divisible by "$/,/^                        heads, a->t);$/c\
        return rl_error(ctx, RL_ERR_ARG, "tp_attn_init: h = %lld with a = %d heads cannot be split into whole "\
                        "heads per rank", (long long)h, heads);
