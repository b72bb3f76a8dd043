/* Attack: 28.1 handed to the runtime's own all-reduce.
 * refused: ddp_ring_all_reduce (step 28.1) may not use rl_all_reduce */
#include "ddp.h"
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    return rl_all_reduce(comm, buf, buf, RL_SUM, 0) ? 0 : rl_error(rl_comm_ctx(comm), RL_ERR_ARG, "failed");
}
