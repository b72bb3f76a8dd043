# Planted bug: the blocked rank's oldest send/recv is taken by p2p seq alone, ignoring t_enqueued:
# sends and receives are numbered apart, so the lowest number is not the oldest call.
# step: 31.4
# caught-by: send/recv never matched: RL_DIAG_P2P
s/(d->rank == p2p->rank \&\& (d->t_enqueued < p2p->t_enqueued ||/(d->rank == p2p->rank \&\& (d->p2p_seq < p2p->p2p_seq ||/
