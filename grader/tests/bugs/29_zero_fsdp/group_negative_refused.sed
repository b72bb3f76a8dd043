# Planted bug: a negative group is refused for every stage, although only HSDP reads the
# group (zero.h: "ignored by the other stages").
# step: 29.1
# caught-by: bad input refused, group ignored outside hsdp
/^    switch (stage) {$/i\
    if (group < 0)\
        return rl_error(ctx, RL_ERR_ARG, "zero_bytes_per_rank: the group %d is negative", group);
