/* Attack: a denied collective reached by arithmetic on the address of an allowed function of
 * the same object file (a fixed distance in a given build), then called through the pointer.
 * refused: takes the address of rl_comm_ctx */
#include <stdint.h>
#include "ddp.h"
typedef rl_work *(*coll_fn)(rl_comm *, const rl_tensor *, rl_tensor *, rl_redop, int);
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    coll_fn f = (coll_fn)((uintptr_t)rl_comm_ctx + 0x540);
    rl_work *w = f(comm, buf, buf, RL_SUM, 0);
    return w ? 0 : -1;
}
