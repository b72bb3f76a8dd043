# Planted bug: the hook tags each bucket's all-reduce but never untags: every later kernel of
# backward carries the bucket tag in the trace and the timeline.
# step: 28.3
# caught-by: one all-reduce per bucket, in bucket order
/^    rl_set_tag(r->ctx, RL_TAG_BUCKET, -1);$/d
