# Correct variant: with t = 1 the TP MLP skips both all-reduces (there is nothing to sum: the
# all-reduce would be a copy).
# step: 30.1
s|^        rc = rl_all_reduce(m->tp, y, y, RL_SUM, 0) ? 0 : RL_ERR_ARG;|        rc = m->t == 1 ? 0 : rl_all_reduce(m->tp, y, y, RL_SUM, 0) ? 0 : RL_ERR_ARG; /* t = 1: nothing to sum */|
s|^        rc = rl_all_reduce(m->tp, dx, dx, RL_SUM, 0) ? 0 : RL_ERR_ARG;|        rc = m->t == 1 ? 0 : rl_all_reduce(m->tp, dx, dx, RL_SUM, 0) ? 0 : RL_ERR_ARG;|
