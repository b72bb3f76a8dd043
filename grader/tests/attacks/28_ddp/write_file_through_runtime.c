/* Attack: a file written from the lab file through the runtime's own record writer (a
 * trial reached it: only the sandbox stopped the write).
 * refused: rl_file_begin, which a lab file may not use */
#include <stdio.h>
#include "ddp.h"
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    (void)comm;
    (void)buf;
    char tmp[256];
    FILE *f = rl_file_begin("build/results-28_ddp.json", tmp, sizeof tmp);
    if (f)
        rl_file_commit(f, tmp, "build/results-28_ddp.json");
    return 0;
}
