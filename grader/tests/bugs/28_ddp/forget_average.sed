# Planted bug: the gradients are summed over the ranks but never divided by the world size.
# step: 28.3
# caught-by: gradients = one-rank global-batch gradients
s|rl_scale(r->ctx, r->bucket_buf\[b\], 1.0f / (float)n)|rl_scale(r->ctx, r->bucket_buf[b], 1.0f)|
