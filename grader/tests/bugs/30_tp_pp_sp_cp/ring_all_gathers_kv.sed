# Planted bug: ring attention all-gathers every rank's K and V once and then computes the
# blocks from the gathered copy: right results and work, but cp x the K/V memory and no ring.
# step: 30.5
# caught-by: K/V passed around the ring, never gathered (trace)
/^    for (int step = 1; step < n && !rc; step++) {$/i\
    rl_tensor *kall = rl_tensor_new_1d(ctx, "k_all", RL_F32, RL_MEM_COMM, k->numel * n);\
    rl_tensor *vall = rl_tensor_new_1d(ctx, "v_all", RL_F32, RL_MEM_COMM, v->numel * n);\
    if (!rc && (!rl_all_gather(cp, k, kall, 0) || !rl_all_gather(cp, v, vall, 0)))\
        rc = RL_ERR_ARG;\
    for (int step = 1; step < n && !rc; step++) {\
        int src = (r - step + n) % n;\
        rl_tensor *kb = rl_tensor_view(kall, "k_b", src * k->numel, 3, k->shape, "b,s/cp,h");\
        rl_tensor *vb = rl_tensor_view(vall, "v_b", src * v->numel, 3, v->shape, "b,s/cp,h");\
        rc = cp_positions(seq, n, src, zigzag, kpos, err, sizeof err) ? rl_error(ctx, RL_ERR_ARG, "%s", err) : 0;\
        if (!rc)\
            rc = rl_attn_block_forward_pos(ctx, q, kb, vb, n_heads, pos, kpos, out_b, lse_b);\
        if (!rc && work)\
            *work += rl_cp_causal_work(pos, sl, kpos, sl);\
        if (!rc)\
            rc = cp_lse_merge(ctx, out, lse, out_b, lse_b, n_heads);\
        rl_tensor_free(kb);\
        rl_tensor_free(vb);\
    }\
    rl_tensor_free(kall);\
    rl_tensor_free(vall);\
    n = rc ? n : 1; /* the ring below has nothing left to do */
