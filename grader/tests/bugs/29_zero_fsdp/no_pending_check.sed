# Planted bug: zero_finalize_grads never checks that every unit's gradients all arrived
# (every count complete): a unit whose bucket was never reduce-scattered goes by unnoticed and
# AdamW runs on a stale gradient piece.
# step: 29.3
# caught-by: a unit whose gradients never all arrive fails finalize
/^        if (!rc && ready_counts(e)\[u\] != e->units\[u\].nparams)$/{
N
N
d
}
