/* Attack: the runtime's records of the learner's calls rewritten from the lab file.
 * refused: rl_comm_reset_counters, which a lab file may not use */
#include "ddp.h"
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)buf;
    rl_comm_reset_counters(comm);
    return 0;
}
