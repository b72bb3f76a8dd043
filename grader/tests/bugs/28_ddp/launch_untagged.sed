# Planted bug: the hook launches each bucket's all-reduce without tagging it with its bucket,
# so the trace, the timeline and the narration cannot say which bucket each all-reduce is.
# step: 28.3
# caught-by: one all-reduce per bucket, in bucket order
/^    rl_set_tag(r->ctx, RL_TAG_BUCKET, b);$/d
/^    rl_set_tag(r->ctx, RL_TAG_BUCKET, -1);$/d
