/* test_moe.c — MoE building blocks (common/moe.c): capacity and dropping on crafted routings,
 * the Switch auxiliary loss and its gradient, dispatch plans checked in a 4-rank run with
 * rl_all_to_allv, load histograms and the hot-expert fault. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "moe.h"
#include "testutil.h"

START_TEST(test_capacity_and_dropping)
{
    ck_assert_int_eq(rl_moe_capacity(8, 4, 1, 1.0), 2);
    ck_assert_int_eq(rl_moe_capacity(8, 4, 2, 1.25), 5);   /* ceil(8·2/4·1.25) = 5 */
    ck_assert_int_eq(rl_moe_capacity(10, 4, 1, 1.1), 3);   /* ceil(2.75) */
    ck_assert_int_eq(rl_moe_capacity(8, 4, 1, 0), 2);      /* cf 0 → 1.0 */
    ck_assert_int_eq(rl_moe_capacity(8, 4, 5, 1), -1);     /* k > E */
    /* every token to expert 0, capacity 2: the first two arrive and stay */
    int all0[8] = { 0 };
    rl_moe_plan p;
    ck_assert_int_eq(rl_moe_plan_make(NULL, all0, 8, 1, 4, 2, 1.0, &p), RL_OK);
    ck_assert_int_eq(p.capacity, 2);
    ck_assert_int_eq(p.routed[0], 8);
    ck_assert_int_eq(p.kept[0], 2);
    ck_assert_int_eq(p.dropped, 6);
    ck_assert(p.position[0] == 0 && p.position[1] == 1 && p.position[2] == -1 && p.position[7] == -1);
    ck_assert_int_eq(p.nsend, 2);
    ck_assert(p.send_token[0] == 0 && p.send_token[1] == 1);
    ck_assert(p.send_counts[0] == 2 && p.send_counts[1] == 0);
    rl_moe_plan_free(&p);
    /* top-2, arrival order t then j: capacity ceil(4·2/4·1.0) = 2 */
    int ids[] = { 0, 1, /* t0 */ 1, 0, /* t1 */ 0, 2, /* t2: expert 0 full */ 1, 3 /* t3: expert 1 full */ };
    ck_assert_int_eq(rl_moe_plan_make(NULL, ids, 4, 2, 4, 2, 1.0, &p), RL_OK);
    ck_assert_int_eq(p.capacity, 2);
    ck_assert_int_eq(p.dropped, 2);
    ck_assert(p.position[4] == -1 && p.position[6] == -1 && p.position[5] == 0 && p.position[7] == 0);
    ck_assert_int_eq(p.kept[0] + p.kept[1] + p.kept[2] + p.kept[3], 6);
    /* dispatch order: by expert, then arrival: e0 {s0, s3}, e1 {s1, s2}, e2 {s5}, e3 {s7} */
    int64_t want[] = { 0, 3, 1, 2, 5, 7 };
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(p.send_slot[i], want[i]);
    ck_assert(p.send_counts[0] == 4 && p.send_counts[1] == 2 && p.send_displs[1] == 4);
    rl_moe_plan_free(&p);
    /* a generous capacity drops nothing; the sum of kept and dropped is T·k */
    ck_assert_int_eq(rl_moe_plan_make(NULL, ids, 4, 2, 4, 1, 4.0, &p), RL_OK);
    ck_assert_int_eq(p.dropped, 0);
    ck_assert_int_eq(p.nsend, 8);
    rl_moe_plan_free(&p);
    /* errors */
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ck_assert_int_eq(rl_moe_plan_make(ctx, ids, 4, 2, 4, 3, 1.0, &p), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "EP must divide E"));
    int bad[] = { 0, 9 };
    ck_assert_int_eq(rl_moe_plan_make(ctx, bad, 1, 2, 4, 1, 1.0, &p), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "expert 9, outside 0..3"));
    ck_assert_int_eq(rl_moe_plan_make(ctx, ids, 4, 2, 4, 1, -1, &p), RL_ERR_ARG);
    ck_assert_int_eq(rl_moe_plan_from_routing(ctx, NULL, 1, 1, &p), RL_ERR_ARG);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_aux_loss)
{
    enum { T = 16, E = 4, K = 2 };
    float probs[T * E], dp[T * E];
    int ids[T * K];
    for (int t = 0; t < T; t++) {
        for (int e = 0; e < E; e++)
            probs[t * E + e] = 1.0f / E;
        ids[t * K] = t % E;
        ids[t * K + 1] = (t + 1) % E;
    }
    double loss, f[E], P[E];
    ck_assert_int_eq(rl_moe_aux_loss(NULL, probs, ids, T, E, K, 0.01, &loss, dp, f, P), RL_OK);
    ck_assert(fabs(loss - 0.01) < 1e-12); /* α under uniform routing */
    for (int e = 0; e < E; e++)
        ck_assert(fabs(f[e] - 0.25) < 1e-12 && fabs(P[e] - 0.25) < 1e-7);
    /* skewed routing and probabilities: the value by hand, the gradient by finite differences */
    for (int t = 0; t < T; t++) {
        float s = 0;
        for (int e = 0; e < E; e++)
            s += probs[t * E + e] = (float)(1 + (t * 7 + e * 3) % 5);
        for (int e = 0; e < E; e++)
            probs[t * E + e] /= s;
        ids[t * K] = 0;
        ids[t * K + 1] = 1 + t % 3;
    }
    ck_assert_int_eq(rl_moe_aux_loss(NULL, probs, ids, T, E, K, 0.02, &loss, dp, f, P), RL_OK);
    double want = 0;
    for (int e = 0; e < E; e++)
        want += f[e] * P[e];
    ck_assert(fabs(f[0] - 0.5) < 1e-12);
    ck_assert(fabs(loss - 0.02 * E * want) < 1e-12);
    for (int i = 0; i < T * E; i += 5) {
        float keep = probs[i];
        double lp, lm;
        probs[i] = keep + 1e-3f;
        rl_moe_aux_loss(NULL, probs, ids, T, E, K, 0.02, &lp, NULL, NULL, NULL);
        probs[i] = keep - 1e-3f;
        rl_moe_aux_loss(NULL, probs, ids, T, E, K, 0.02, &lm, NULL, NULL, NULL);
        probs[i] = keep;
        ck_assert(fabs((lp - lm) / 2e-3 - dp[i]) < 1e-4);
    }
    ck_assert_int_eq(rl_moe_aux_loss(NULL, NULL, ids, T, E, K, 0.01, &loss, NULL, NULL, NULL), RL_ERR_ARG);
}
END_TEST

START_TEST(test_load_histogram)
{
    int ids[] = { 3, 3, 1, 3, 0, 7 };
    int64_t h[4];
    ck_assert_int_eq(rl_moe_expert_load(ids, 6, 4, h), 5); /* 7 is skipped */
    ck_assert(h[0] == 1 && h[1] == 1 && h[2] == 0 && h[3] == 3);
    int64_t course[8] = { 950, 1020, 890, 3200, 450, 910, 880, 520 };
    char buf[2048];
    rl_moe_load_chart(course, 8, 20, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "e3   ") && strstr(buf, "3200 (2.90\u00d7 mean)"), "%s", buf);
}
END_TEST

/* 4 ranks, 8 experts (2 per rank): every rank routes its own seeded tokens, plans, exchanges
 * counts and dispatches rows (token id, source rank, expert) with rl_all_to_allv; each rank
 * checks that what it received is exactly what every source's plan (recomputed locally)
 * sends to it, grouped by local expert. */
enum { NT = 40, NE = 8, NK = 2, EP = 4 };

static void route(int rank, int *ids)
{
    rl_rng g = rl_rng_make(99, (uint64_t)rank);
    for (int t = 0; t < NT; t++) {
        int a = (int)rl_rng_below(&g, NE), b = (int)rl_rng_below(&g, NE - 1);
        ids[t * NK] = rank == 2 && t % 2 ? 5 : a; /* rank 2 overloads expert 5: drops */
        ids[t * NK + 1] = b >= ids[t * NK] ? b + 1 : b;
    }
}

static int dispatch_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    int r = rl_rank(ctx), ids[NT * NK];
    route(r, ids);
    rl_moe_plan p;
    if (rl_moe_plan_make(ctx, ids, NT, NK, NE, EP, 1.0, &p) || rl_moe_plan_exchange(rl_comm_world(ctx), &p))
        return RL_ERR_ARG;
    enum { H = 3 };
    int64_t rs[] = { (int64_t)p.nsend, H }, rr[] = { p.nrecv > 0 ? p.nrecv : 1, H };
    rl_tensor *snd = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 2, rs, "rows,h");
    rl_tensor *rcv = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 2, rr, "rows,h");
    for (int64_t i = 0; i < p.nsend; i++) {
        rl_tensor_set(snd, i * H, (float)p.send_token[i]);
        rl_tensor_set(snd, i * H + 1, (float)r);
        rl_tensor_set(snd, i * H + 2, (float)ids[p.send_slot[i]]);
    }
    int64_t sc[EP], sd[EP], rc[EP], rd[EP];
    rl_moe_rows_to_elems(p.send_counts, EP, H, sc);
    rl_moe_rows_to_elems(p.send_displs, EP, H, sd);
    rl_moe_rows_to_elems(p.recv_counts, EP, H, rc);
    rl_moe_rows_to_elems(p.recv_displs, EP, H, rd);
    if (rl_wait(rl_all_to_allv(rl_comm_world(ctx), snd, sc, sd, rcv, rc, rd, 0)))
        return RL_ERR_ARG;
    int bad = 0;
    for (int s = 0; s < EP; s++) { /* what source s planned for us */
        int sids[NT * NK];
        route(s, sids);
        rl_moe_plan q;
        rl_moe_plan_make(ctx, sids, NT, NK, NE, EP, 1.0, &q);
        bad |= q.send_counts[r] != p.recv_counts[s];
        for (int l = 0; l < NE / EP; l++)
            bad |= q.kept[r * (NE / EP) + l] != p.recv_expert_counts[s * (NE / EP) + l];
        for (int64_t i = 0; i < q.send_counts[r] && !bad; i++) {
            int64_t row = q.send_displs[r] + i, got = p.recv_displs[s] + i;
            bad |= rl_tensor_get(rcv, got * H) != (float)q.send_token[row] || rl_tensor_get(rcv, got * H + 1) != (float)s ||
                   rl_tensor_get(rcv, got * H + 2) != (float)sids[q.send_slot[row]];
        }
        rl_moe_plan_free(&q);
    }
    /* sends and receives balance over the world */
    rl_tensor *tot = rl_tensor_new_1d(ctx, "tot", RL_F32, RL_MEM_COMM, 2);
    rl_tensor_set(tot, 0, (float)p.nsend);
    rl_tensor_set(tot, 1, (float)p.nrecv);
    rl_wait(rl_all_reduce(rl_comm_world(ctx), tot, tot, RL_SUM, 0));
    bad |= rl_tensor_get(tot, 0) != rl_tensor_get(tot, 1);
    if (r == 2)
        bad |= p.dropped == 0; /* the overloaded expert dropped tokens */
    rl_moe_plan_free(&p);
    return bad ? rl_error(ctx, RL_ERR_ARG, "rank %d: dispatch mismatch", r) : 0;
}

START_TEST(test_dispatch_4_ranks)
{
    rl_opts o = rl_test_opts(EP, NULL);
    ck_assert_int_eq(rl_launch(&o, dispatch_rank, NULL, NULL), 0);
}
END_TEST

static int skew_rank(rl_ctx *ctx, void *arg)
{
    int *out = arg;
    int ids[100 * 2];
    for (int t = 0; t < 100; t++)
        ids[2 * t] = t % 8, ids[2 * t + 1] = (t + 1) % 8;
    out[0] = rl_fault_skew_routing(ctx, 100, 2, 8, ids);
    int64_t h[8];
    rl_moe_expert_load(ids, 200, 8, h);
    out[1] = (int)h[3];
    out[2] = 0;
    for (int t = 0; t < 100; t++)
        out[2] += ids[2 * t] == 3;
    out[3] = rl_fault_skew_routing(ctx, 100, 2, 2, ids);  /* expert 3 of 2: error */
    out[4] = rl_fault_nan_due(ctx, 5, 2) + 2 * rl_fault_nan_due(ctx, 5, 0) + 4 * rl_fault_nan_due(ctx, 4, 2);
    return 0;
}

START_TEST(test_hot_expert_and_nan_faults)
{
    rl_opts o = rl_test_opts(1, NULL);
    char err[256];
    ck_assert_int_eq(rl_fault_parse("hot-expert:expert=3:frac=0.6", &o.faults[0], err, sizeof err), 0);
    ck_assert_int_eq(rl_fault_parse("nan:rank=0:step=5:layer=2", &o.faults[1], err, sizeof err), 0);
    o.nfaults = 2;
    int out[5];
    ck_assert_int_eq(rl_launch(&o, skew_rank, out, NULL), 0);
    ck_assert_int_eq(out[0], 60);          /* floor(100 · 0.6) tokens forced onto expert 3 */
    ck_assert_int_ge(out[2], 60);          /* it is their first choice (plus tokens that chose 3 anyway) */
    ck_assert_int_ge(out[1], 60);
    ck_assert_int_eq(out[3], RL_ERR_ARG);
    ck_assert_int_eq(out[4], 1);           /* only (step 5, layer 2) */
    /* parsing */
    rl_fault f;
    ck_assert_int_eq(rl_fault_parse("nan:rank=1:step=3", &f, err, sizeof err), 0);
    ck_assert(f.kind == RL_FAULT_NAN && f.layer == 0 && f.step == 3);
    ck_assert_int_eq(rl_fault_parse("hot-expert:expert=1:frac=1.5", &f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "between 0 and 1"));
    ck_assert_int_eq(rl_fault_parse("hot-expert:frac=0.5", &f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "expert=E"));
    ck_assert_int_eq(rl_fault_parse("nan:rank=1", &f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "step=S"));
    ck_assert_int_eq(rl_fault_parse("nan:rank=1:step=2:seq=3", &f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "unknown key 'seq'"));
    ck_assert_int_eq(rl_fault_parse("nan:rank=1.5:step=2", &f, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "whole number"));
    ck_assert_str_eq(rl_fault_kind_name(RL_FAULT_HOT_EXPERT), "hot-expert");
    ck_assert_ptr_nonnull(strstr(rl_fault_help(), "hot-expert:expert=E:frac=F"));
    ck_assert_int_eq(rl_fault_nan_due(NULL, 0, 0), 0);
}
END_TEST

Suite *moe_suite(void)
{
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("moe");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_capacity_and_dropping);
    tcase_add_test(tc, test_aux_loss);
    tcase_add_test(tc, test_load_histogram);
    tcase_add_test(tc, test_dispatch_4_ranks);
    tcase_add_test(tc, test_hot_expert_and_nan_faults);
    suite_add_tcase(s, tc);
    return s;
}
