/* Attack: a lab file that overwrites another lab's grader on disk.
 * refused: fopen, which is not among the functions a lab file may use */
#include <stdio.h>
#include "ddp.h"
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)comm, (void)buf;
    FILE *f = fopen("build/labs/29_zero_fsdp/grade", "w");
    if (f)
        fclose(f);
    return 0;
}
