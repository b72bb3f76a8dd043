# Planted bug (an attack the object check cannot see, here written plainly): the ring ends the
# test's process with status 0 before any check could fail — with Check's fork mode that counted
# as a pass. A test passes only when the judge passes it and the child finished its record.
# step: 28.1
# caught-by: world sizes 1-8, repeated calls
# caught-by: odd counts (not divisible by n)
# caught-by: count < n and count 0
# caught-by: bf16 buffers
# caught-by: sub-communicators of random membership
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
# caught-by: send and recv of a step run together (alpha-beta time)
# caught-by: scratch: one RL_MEM_COMM tensor of ceil(count/n) elements
1i\
#include <unistd.h>
/^int ddp_ring_all_reduce(rl_comm \*comm, rl_tensor \*buf)$/,/^{$/ {
  /^{$/ a\
    (void)comm, (void)buf;\
    _exit(0);
}
