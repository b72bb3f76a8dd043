# Correct variant: chunks of ceil(count/n) elements each, the last one shorter (possibly
# empty), instead of [count*c/n, count*(c+1)/n); sender and receiver use the same split.
# step: 28.1
s|^static int64_t chunk_lo(int64_t count, int n, int c) { return count \* c / n; }$|static int64_t chunk_lo(int64_t count, int n, int c)\n{\n    int64_t lo = (count + n - 1) / n * c;\n    return lo < count ? lo : count;\n}|
