# Planted bug: the all-reduces average (RL_AVG, no scaling kernel after them), and finalize
# waits for them with the comm stream current, so the waits hold the comm stream, not the
# compute stream: no exposed comm is recorded, and the optimizer that follows starts while
# the last all-reduce still runs.
# step: 28.3
# caught-by: exposed comm below the bound
s|r->bucket_buf\[b\], r->bucket_buf\[b\], RL_SUM, RL_ASYNC);|r->bucket_buf[b], r->bucket_buf[b], RL_AVG, RL_ASYNC);|
s|^        int st = rl_wait(r->work\[b\]);$|        rl_set_stream(r->ctx, RL_STREAM_COMM);\n        int st = rl_wait(r->work[b]);\n        rl_set_stream(r->ctx, RL_STREAM_COMPUTE);|
/^        if (!rc && n > 1)$/,+1d
s|^    int n = rl_comm_size(r->comm), rc = 0;$|    int rc = 0;|
