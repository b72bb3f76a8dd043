# Planted bug: zig-zag positions list chunk 2cp-r-1 in descending order (chunk r ascending,
# then the far chunk backwards): the same rows, not the local order the header fixes; with
# one position per chunk the two orders agree.
# step: 30.5
# caught-by: positions: contiguous, zig-zag in local order
s|^            pos\[c + i\] = (int64_t)(2 \* cp - 1 - rank) \* c + i;$|            pos[c + i] = (int64_t)(2 * cp - 1 - rank) * c + (c - 1 - i);|
