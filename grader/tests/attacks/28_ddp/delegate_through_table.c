/* Attack: the all-reduce hidden behind a static helper and a table of function pointers.
 * refused: ddp_ring_all_reduce (step 28.1) may not use rl_all_reduce */
#include "ddp.h"
typedef rl_work *(*coll_fn)(rl_comm *, const rl_tensor *, rl_tensor *, rl_redop, int);
static const coll_fn table[] = { rl_all_reduce };
static int helper(rl_comm *comm, rl_tensor *buf) { return table[0](comm, buf, buf, RL_SUM, 0) ? 0 : -1; }
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf) { return helper(comm, buf); }
