# Correct variant: the buckets are all-reduced with RL_AVG (the mean in the collective) instead
# of RL_SUM followed by a 1/n scale in ddp_finalize_backward.
# step: 28.3 28.4
s|rl_all_reduce(r->comm, r->bucket_buf\[b\], r->bucket_buf\[b\], RL_SUM, RL_ASYNC)|rl_all_reduce(r->comm, r->bucket_buf[b], r->bucket_buf[b], RL_AVG, RL_ASYNC)|
/^        if (!rc && n > 1)$/d
/rc = rl_scale(r->ctx, r->bucket_buf\[b\], 1.0f \/ (float)n);/d
s|int n = rl_comm_size(r->comm), rc = 0;|int rc = 0;|
