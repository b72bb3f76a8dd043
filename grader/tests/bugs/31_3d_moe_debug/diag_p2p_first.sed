# Planted bug: diagnose() reports a blocked send/recv (RL_DIAG_P2P) whenever there is one, even
# when a collective hangs or mismatches (lab31.h: only with "no collective anomaly").
# step: 31.4
# caught-by: send/recv never matched: RL_DIAG_P2P
s/for (int i = 0; i < fl->nrec \&\& out->kind == RL_DIAG_NONE; i++) {/for (int i = 0; i < fl->nrec; i++) {/
