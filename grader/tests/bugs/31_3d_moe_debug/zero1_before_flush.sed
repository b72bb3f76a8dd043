# Planted bug: td_train_step runs ZeRO-1 before flushing the last op's pending send: the
# parameters come out right, but the neighbouring stage waits for this stage's whole update.
# step: 31.2
# caught-by: order in a step: the last send before ZeRO-1; ops tagged with rl_pp_mark
s/^        rc = td_p2p(e, e->comms.pp, pending, NULL);$/        rc = ZERO1_FIRST;/
s/^        rc = td_zero1_update(e);$/        rc = td_p2p(e, e->comms.pp, pending, NULL);/
s/^        rc = ZERO1_FIRST;$/        rc = td_zero1_update(e);/
