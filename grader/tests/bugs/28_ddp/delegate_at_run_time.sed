# Planted bug (an attack the object check cannot see): the ring hands the work to the runtime's
# own all-reduce through a pointer the compiler cannot follow — a lab file that hid the pointer
# better (computed from another function's address) would pass the object check. The runtime
# watches its denied functions as they are called, and the judge fails every test that ran it.
# step: 28.1
# caught-by: world sizes 1-8, repeated calls
# caught-by: odd counts (not divisible by n)
# caught-by: count < n and count 0
# caught-by: bf16 buffers
# caught-by: sub-communicators of random membership
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
# caught-by: send and recv of a step run together (alpha-beta time)
# caught-by: scratch: one RL_MEM_COMM tensor of ceil(count/n) elements
/^int ddp_ring_all_reduce(rl_comm \*comm, rl_tensor \*buf)$/,/^{$/ {
  /^{$/ a\
    rl_work *(*volatile delegate)(rl_comm *, const rl_tensor *, rl_tensor *, rl_redop, int) = rl_all_reduce;\
    if (rl_comm_size(comm) > 1 && buf->numel > 0)\
        return delegate(comm, buf, buf, RL_SUM, 0) ? 0 : rl_error(rl_comm_ctx(comm), RL_ERR_ARG, "all_reduce failed");
}
