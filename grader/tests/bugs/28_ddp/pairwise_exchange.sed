# Planted bug: not a ring — every rank sends each chunk straight to the rank that owns it
# (direct reduce-scatter, then all-gather): right sums, the same bytes and number of sends,
# but most messages go to ranks that are not ring neighbours.
# step: 28.1
# caught-by: ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes
/^    if (n == 1 || count == 0)$/{
n
a\
    {\
        rl_tensor *in = rl_tensor_new_1d(ctx, "pair_recv", buf->dtype, RL_MEM_COMM, (count + n - 1) / n);\
        int st = in ? 0 : RL_ERR_NOMEM;\
        int64_t mylo = chunk_lo(count, n, r), mylen = chunk_len(count, n, r);\
        for (int s = 1; s < n && !st; s++) { /* my contribution to chunk `to` goes to its owner */\
            int to = (r + s) % n, from = (r - s + n) % n;\
            int64_t tlen = chunk_len(count, n, to);\
            rl_tensor *sv = tlen ? rl_tensor_slice(buf, chunk_lo(count, n, to), tlen) : NULL;\
            rl_tensor *rv = mylen ? rl_tensor_slice(in, 0, mylen) : NULL;\
            rl_group_start(ctx);\
            if (sv && !rl_send(comm, sv, to, 0))\
                st = RL_ERR_ARG;\
            if (rv && !rl_recv(comm, rv, from, 0))\
                st = RL_ERR_ARG;\
            int ge = rl_group_end(ctx);\
            if (!st)\
                st = ge;\
            if (!st && rv) {\
                rl_tensor *acc = rl_tensor_slice(buf, mylo, mylen);\
                st = rl_axpy(ctx, 1.0f, rv, acc);\
                rl_tensor_free(acc);\
            }\
            rl_tensor_free(sv);\
            rl_tensor_free(rv);\
        }\
        for (int s = 1; s < n && !st; s++) { /* my finished chunk goes to everyone */\
            int to = (r + s) % n, from = (r - s + n) % n;\
            int64_t flen = chunk_len(count, n, from);\
            rl_tensor *sv = mylen ? rl_tensor_slice(buf, mylo, mylen) : NULL;\
            rl_tensor *rv = flen ? rl_tensor_slice(buf, chunk_lo(count, n, from), flen) : NULL;\
            rl_group_start(ctx);\
            if (sv && !rl_send(comm, sv, to, 0))\
                st = RL_ERR_ARG;\
            if (rv && !rl_recv(comm, rv, from, 0))\
                st = RL_ERR_ARG;\
            int ge = rl_group_end(ctx);\
            if (!st)\
                st = ge;\
            rl_tensor_free(sv);\
            rl_tensor_free(rv);\
        }\
        rl_tensor_free(in);\
        return st;\
    }
}
