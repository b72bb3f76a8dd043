# Planted bug: diagnose() names the blocked rank's NEWEST send/recv instead of its oldest.
# step: 31.4
# caught-by: send/recv never matched: RL_DIAG_P2P
s/(d->rank == p2p->rank \&\& (d->t_enqueued < p2p->t_enqueued ||/(d->rank == p2p->rank \&\& (d->t_enqueued > p2p->t_enqueued ||/
