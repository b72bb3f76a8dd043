# Planted bug: the interleaved executor posts the look-ahead receive at every change of kind,
# also on a stage that runs all its F before its first B (m = p): that receive waits for a
# gradient which needs this stage's last F output first — a deadlock (m >= 2p works).
# On ef12d4d this line is the reference solution's own (it scored full marks there).
# step: 30.4
# caught-by: executor: interleaved gradients = unpipelined model
s|^        if (s->v > 1 .*i + 1 < n \&\& s->ops\[r\]\[i + 1\].kind != o->kind) {$|        if (((void)mixed, s->v > 1) \&\& i + 1 < n \&\& s->ops[r][i + 1].kind != o->kind) { /* at every change of kind */|
