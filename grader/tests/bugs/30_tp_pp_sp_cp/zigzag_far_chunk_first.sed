# Planted bug: zig-zag positions list chunk 2cp-r-1 before chunk r: the same set of rows, in
# the other local order (ring attention stays self-consistent, but rows no longer match the
# layout the header fixes).
# step: 30.5
# caught-by: positions: contiguous, zig-zag in local order
s|^            pos\[i\] = (int64_t)rank \* c + i;$|            pos[i] = (int64_t)(2 * cp - 1 - rank) * c + i;|
s|^            pos\[c + i\] = (int64_t)(2 \* cp - 1 - rank) \* c + i;$|            pos[c + i] = (int64_t)rank * c + i;|
