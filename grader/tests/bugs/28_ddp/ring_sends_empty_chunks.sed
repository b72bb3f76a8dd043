# Planted bug: empty chunks (count < n) are not skipped: every ring step posts its send and
# receive, 0 elements for an empty chunk. Right sums, but 0-byte messages, each paying a
# ring step's latency.
# step: 28.1
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
s|rl_tensor \*s = slen ? rl_tensor_slice(buf, chunk_lo(count, n, sc), slen) : NULL;|rl_tensor *s = rl_tensor_slice(buf, chunk_lo(count, n, sc), slen);|
s|rl_tensor \*d = rlen ? rl_tensor_slice(dst_base, dst_off, rlen) : NULL;|rl_tensor *d = rl_tensor_slice(dst_base, dst_off, rlen);|
