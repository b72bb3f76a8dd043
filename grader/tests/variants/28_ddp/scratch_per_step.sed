# Correct variant: the reduce-scatter allocates a scratch tensor of the incoming chunk's size in
# each step and frees it at the end of the step, instead of one of ceil(count/n) elements for
# the whole call (at most ceil(count/n) elements at a time either way).
# step: 28.1
/^    rl_tensor \*tmp = rl_tensor_new_1d(ctx, "ring_recv"/,/^        return RL_ERR_NOMEM;$/d
s|^        rc = ring_step(comm, buf, sc, tmp, 0, rcv);$|        rl_tensor *tmp = rl_tensor_new_1d(ctx, "ring_recv", buf->dtype, RL_MEM_COMM, chunk_len(count, n, rcv));\n        rc = tmp ? ring_step(comm, buf, sc, tmp, 0, rcv) : RL_ERR_NOMEM;|
/^            rl_tensor_free(acc);$/{
n
a\
        rl_tensor_free(tmp); /* this step's scratch */
}
/^    rl_tensor_free(tmp);$/d
