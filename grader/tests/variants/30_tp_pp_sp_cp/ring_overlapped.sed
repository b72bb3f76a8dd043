# Correct variant: ring attention overlaps the transfer with the compute — each step's
# exchange is posted (grouped, RL_ASYNC) before the block that just arrived is computed, and
# waited for at the start of the next step (every handle is waited for before the buffers
# are freed).
# step: 30.5
/^    int cur = 0;$/,/^            rc = cp_lse_merge(ctx, out, lse, out_b, lse_b, n_heads);$/c\
    rl_work *wk[4] = { NULL, NULL, NULL, NULL };\
    int cur = 0;\
    if (!rc && n > 1) { /* the first exchange: our own block to r+1, r-1's into kv[1] */\
        rl_group_start(ctx);\
        wk[0] = rl_send(cp, kv[0][0], (r + 1) % n, RL_ASYNC);\
        wk[1] = rl_send(cp, kv[0][1], (r + 1) % n, RL_ASYNC);\
        wk[2] = rl_recv(cp, kv[1][0], (r + n - 1) % n, RL_ASYNC);\
        wk[3] = rl_recv(cp, kv[1][1], (r + n - 1) % n, RL_ASYNC);\
        rc = rl_group_end(ctx);\
    }\
    for (int step = 1; step < n && !rc; step++) {\
        for (int i = 0; i < 4; i++) {\
            int e = wk[i] ? rl_wait(wk[i]) : RL_ERR_ARG;\
            rc = rc ? rc : e;\
            wk[i] = NULL;\
        }\
        cur = 1 - cur; /* kv[cur] holds the block that arrived */\
        if (!rc && step + 1 < n) { /* pass it on while computing with it */\
            rl_group_start(ctx);\
            wk[0] = rl_send(cp, kv[cur][0], (r + 1) % n, RL_ASYNC);\
            wk[1] = rl_send(cp, kv[cur][1], (r + 1) % n, RL_ASYNC);\
            wk[2] = rl_recv(cp, kv[1 - cur][0], (r + n - 1) % n, RL_ASYNC);\
            wk[3] = rl_recv(cp, kv[1 - cur][1], (r + n - 1) % n, RL_ASYNC);\
            rc = rl_group_end(ctx);\
        }\
        int src = (r - step + n) % n; /* whose block arrived */\
        if (!rc)\
            rc = cp_positions(seq, n, src, zigzag, kpos, err, sizeof err) ? rl_error(ctx, RL_ERR_ARG, "%s", err) : 0;\
        if (!rc)\
            rc = rl_attn_block_forward_pos(ctx, q, kv[cur][0], kv[cur][1], n_heads, pos, kpos, out_b, lse_b);\
        if (!rc && work)\
            *work += rl_cp_causal_work(pos, sl, kpos, sl);\
        if (!rc)\
            rc = cp_lse_merge(ctx, out, lse, out_b, lse_b, n_heads);
/^    free(kpos);$/i\
    for (int i = 0; i < 4; i++) /* nothing in flight when the buffers go */\
        if (wk[i])\
            rl_wait(wk[i]);
