# Planted bug: hsdp_make_mesh checks that the group divides the world only after the two
# rl_comm_split calls: the refusal comes, but after two collective splits of the whole
# world whose communicators are left behind.
# step: 29.5
# caught-by: 2-D mesh from rl_comm_split
s|^    if (group < 1 \|\| W % group)$|    if (group < 1)|
/^    \*replica = \*shard ? rl_comm_split(world, w % group, w \/ group) : NULL;$/a\
    if (W % group)\
        return rl_error(ctx, RL_ERR_ARG, "hsdp_make_mesh: a shard group of %d ranks does not divide the world of %d",\
                        group, W);
