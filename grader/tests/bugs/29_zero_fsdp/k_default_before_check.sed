# Planted bug: k <= 0 is replaced by the default 12 before the arguments are checked, so
# k = -inf becomes 12 and is accepted instead of refused (a NaN k is still refused).
# step: 29.1
# caught-by: bad input refused, group ignored outside hsdp
/^int zero_bytes_per_rank(/{
n
a\
    if (k <= 0)\
        k = ZERO_DEFAULT_K;
}
