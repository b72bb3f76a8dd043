# Planted bug (an attack the object check cannot see): no ring at all. The ranks are threads of
# one process, so each sends the others the address of its buffer (a 2-element message), sums
# every rank's buffer straight out of memory, waits at a barrier and writes its own. The sums
# are right; every 28.1 test holds the traffic to the ring's (the trace), which this is not.
# step: 28.1
# caught-by: world sizes 1-8, repeated calls
# caught-by: odd counts (not divisible by n)
# caught-by: count < n and count 0
# caught-by: bf16 buffers
# caught-by: sub-communicators of random membership
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
# caught-by: send and recv of a step run together (alpha-beta time)
# caught-by: scratch: one RL_MEM_COMM tensor of ceil(count/n) elements
/^#include <string.h>$/ a\
#include <stdlib.h>
/^int ddp_ring_all_reduce(rl_comm \*comm, rl_tensor \*buf)$/,/^{$/ {
  /^{$/ a\
    {\
        rl_ctx *sm_ctx = rl_comm_ctx(comm);\
        int sm_n = rl_comm_size(comm), sm_me = rl_comm_rank(comm);\
        if (sm_n > 1 && buf->numel > 0) {\
            rl_tensor *sm_box = rl_tensor_new_host(sm_ctx, "ptr", RL_F32, 2), *sm_in[8] = { 0 }, *sm_peer[8];\
            rl_work *sm_w[16] = { 0 };\
            memcpy(rl_tensor_host_data(sm_box), &buf, sizeof buf);\
            rl_group_start(sm_ctx);\
            for (int q = 0; q < sm_n; q++)\
                if (q != sm_me) {\
                    sm_in[q] = rl_tensor_new_host(sm_ctx, "ptr_in", RL_F32, 2);\
                    sm_w[q] = rl_send(comm, sm_box, q, RL_ASYNC);\
                    sm_w[8 + q] = rl_recv(comm, sm_in[q], q, RL_ASYNC);\
                }\
            rl_group_end(sm_ctx);\
            for (int q = 0; q < 16; q++)\
                if (sm_w[q])\
                    rl_wait(sm_w[q]);\
            for (int q = 0; q < sm_n; q++) {\
                sm_peer[q] = buf;\
                if (q != sm_me)\
                    memcpy(&sm_peer[q], rl_tensor_host_data(sm_in[q]), sizeof sm_peer[q]);\
            }\
            float *sm_acc = malloc(sizeof(float) * (size_t)buf->numel);\
            for (int64_t i = 0; i < buf->numel; i++) {\
                float s = 0;\
                for (int q = 0; q < sm_n; q++)\
                    s += rl_tensor_get(sm_peer[q], i);\
                sm_acc[i] = s;\
            }\
            rl_wait(rl_barrier(comm, 0));\
            for (int64_t i = 0; i < buf->numel; i++)\
                rl_tensor_set(buf, i, sm_acc[i]);\
            rl_wait(rl_barrier(comm, 0));\
            free(sm_acc);\
            rl_tensor_free(sm_box);\
            for (int q = 0; q < sm_n; q++)\
                if (sm_in[q])\
                    rl_tensor_free(sm_in[q]);\
        }\
        return 0;\
    }
}
