# Planted bug: the sharded FFN dim of hpre and hact is named "f" (the struct's field) instead
# of "4h/t": the shapes view no longer marks it as sharded.
# step: 30.1
# caught-by: shard shapes, dim names and slices
s|^\(    m->hpre = like(m->ctx, m->x_in, "hpre", m->f / m->t, \)"4h/t"|\1"f"|
s|^\(    m->hact = like(m->ctx, m->x_in, "hact", m->f / m->t, \)"4h/t"|\1"f"|
