/* Attack: the ranks (threads of one process) share their buffers through a static variable and
 * each sums the others' directly, with no ring at all.
 * refused: is a variable of the file's own */
#include "ddp.h"
int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    static rl_tensor *bufs[64];
    int r = rl_comm_rank(comm), n = rl_comm_size(comm);
    bufs[r] = buf;
    for (int q = 0; q < n; q++)
        if (q != r && bufs[q])
            for (int64_t i = 0; i < buf->numel; i++)
                rl_tensor_set(buf, i, rl_tensor_get(buf, i) + rl_tensor_get(bufs[q], i));
    return 0;
}
