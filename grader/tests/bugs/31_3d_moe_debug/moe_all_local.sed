# Planted bug: moe_forward builds a layer holding every expert and computes each kept slot locally:
# the right y, but no dispatch or combine all-to-all and experts computed away from their rank.
# step: 31.3
# caught-by: dispatch and combine: all-to-all(v) bytes per peer; experts computed where they live
/^    stats->aux_loss = moe_aux_loss(probs, ids, T, E, k, c->moe_aux_loss_coeff);$/a\
    {\
        moe_config c1 = *c; /* every expert on this rank: no all-to-all needed */\
        c1.ep = 1;\
        moe_layer *full = moe_layer_new(ctx, &c1, 0);\
        int64_t s1[2] = { 1, h };\
        rl_tensor *row = rl_tensor_new(ctx, "row", RL_F32, RL_MEM_ACTIVATION, 2, s1, "tokens,h");\
        rl_tensor *o1 = rl_tensor_new(ctx, "o", RL_F32, RL_MEM_ACTIVATION, 2, s1, "tokens,h");\
        rc = full && row && o1 ? rl_copy(ctx, y, x) : RL_ERR_NOMEM;\
        for (int64_t i = 0; i < plan.nsend && !rc; i++) {\
            int64_t sl = plan.send_slot[i], tok = sl / k;\
            float wv = w[sl];\
            rc = rl_gather_rows(ctx, x, &tok, NULL, row);\
            if (!rc)\
                rc = moe_expert_forward(full, ids[sl], row, o1);\
            if (!rc)\
                rc = rl_scatter_add_rows(ctx, o1, &tok, &wv, y);\
        }\
        stats->rows_sent = plan.nsend;\
        for (int e = 0; e < epr; e++)\
            stats->rows_received += plan.kept[l->ep_rank * epr + e];\
        rl_tensor_free(row);\
        rl_tensor_free(o1);\
        moe_layer_free(full);\
        goto out;\
    }
