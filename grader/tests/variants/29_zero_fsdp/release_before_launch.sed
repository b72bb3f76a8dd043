# Correct variant: the grad-ready hook waits for the previously launched reduce-scatter and
# frees that bucket BEFORE launching this unit's (still at most two buckets alive).
# step: 29.3 29.4
/^    int rc = \*last ? release_bucket(e, \*last - 1) : 0;$/c\
    int rc = 0;
/^    rl_tensor \*mine = rl_tensor_slice(e->grad_shard, U->shard_off, U->shard);$/i\
    if (*last) {\
        int st = release_bucket(e, *last - 1);\
        if (st)\
            return st;\
    }
