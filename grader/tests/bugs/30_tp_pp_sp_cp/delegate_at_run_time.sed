# Planted bug (an attack the object check cannot see): the merge reaches the runtime's own merge
# through a pointer the compiler cannot follow. The runtime watches its denied functions as they
# are called, and the judge fails every test that ran it.
# step: 30.5
# caught-by: log-sum-exp merge
# caught-by: ring attention = full attention
/^int cp_lse_merge(rl_ctx \*ctx, rl_tensor \*out, rl_tensor \*lse, const rl_tensor \*out_b, const rl_tensor \*lse_b,$/,/^{$/ {
  /^{$/ a\
    {\
        int (*volatile merge)(rl_ctx *, rl_tensor *, rl_tensor *, const rl_tensor *, const rl_tensor *, int) =\
            rl_attn_merge;\
        (void)merge(ctx, NULL, NULL, NULL, NULL, n_heads);\
    }
}
