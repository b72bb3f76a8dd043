# Planted bug: the forward allocates the saved activations hpre and hact under RL_MEM_OTHER
# instead of RL_MEM_ACTIVATION (the results are right; the memory view and every activation
# budget miss them).
# step: 30.1
# caught-by: memory: every tensor's category, saved activations freed
s|^\(    m->hpre = like(m->ctx, m->x_in, "hpre", m->f / m->t, "4h/t", \)RL_MEM_ACTIVATION);|\1RL_MEM_OTHER);|
s|^\(    m->hact = like(m->ctx, m->x_in, "hact", m->f / m->t, "4h/t", \)RL_MEM_ACTIVATION);|\1RL_MEM_OTHER);|
