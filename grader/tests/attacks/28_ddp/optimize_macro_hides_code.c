/* Attack: code that only the optimized build sees — a constructor under #ifdef __OPTIMIZE__,
 * absent from the check's unoptimized compile, present in the grade binary's.
 * refused: tests __OPTIMIZE__, a name the compiler or the C library defines */
#include "ddp.h"
#ifdef __OPTIMIZE__
__attribute__((constructor)) static void before_main(void)
{
}
#endif
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)comm, (void)buf;
    return 0;
}
