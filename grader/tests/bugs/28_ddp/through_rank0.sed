# Planted bug: the all-reduce gathers every rank's whole buffer on rank 0, sums there and
# sends the result back — right sums, but rank 0 sends (n-1)·S bytes instead of 2(n-1)/n·S.
# step: 28.1
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
/^    if (n == 1 || count == 0)$/{
n
a\
    {\
        rl_tensor *all = rl_tensor_new_1d(ctx, "gather", buf->dtype, RL_MEM_COMM, count);\
        int st = 0;\
        if (r == 0) {\
            for (int q = 1; q < n && !st; q++) {\
                st = rl_recv(comm, all, q, 0) ? 0 : RL_ERR_ARG;\
                if (!st)\
                    st = rl_axpy(ctx, 1.0f, all, buf);\
            }\
            for (int q = 1; q < n && !st; q++)\
                st = rl_send(comm, buf, q, 0) ? 0 : RL_ERR_ARG;\
        } else {\
            st = rl_send(comm, buf, 0, 0) ? 0 : RL_ERR_ARG;\
            if (!st)\
                st = rl_recv(comm, buf, 0, 0) ? 0 : RL_ERR_ARG;\
        }\
        rl_tensor_free(all);\
        return st;\
    }
}
