# Planted bug: zig-zag positions list chunk 2cp-r-1 in descending order (chunk r ascending,
# then the far chunk backwards): the same rows, not the local order the header fixes; with
# one position per chunk the two orders agree.
# step: 30.5
# caught-by: positions: contiguous, zig-zag in local order
/^    if (zigzag)$/{
N
c\
    if (zigzag) {\
        if (seq % (2 * cp)) {\
            snprintf(err, errlen, "cp_positions: zig-zag needs seq (%lld) divisible by 2cp = %d", (long long)seq,\
                     2 * cp);\
            return RL_ERR_ARG;\
        }\
        int64_t c = seq / (2 * cp);\
        for (int64_t i = 0; i < c; i++) {\
            pos[i] = (int64_t)rank * c + i;\
            pos[c + i] = (int64_t)(2 * cp - rank - 1) * c + (c - 1 - i);\
        }\
        return 0;\
    }
}
