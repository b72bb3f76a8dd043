/* test_attn_blocks.c — ring-attention pieces (common/attn_blocks.c): blockwise results merged
 * over every K/V block equal full causal attention (rl_attention_forward) for several cp,
 * with contiguous and zig-zag partitions; the merge rule; zig-zag balances causal work. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "attn_blocks.h"
#include "launch.h"
#include "ops.h"
#include "testutil.h"

enum { B = 2, NH = 2, HD = 8, W = NH * HD };

static rl_tensor *t3(rl_ctx *ctx, const char *n, int64_t s)
{
    int64_t sh[] = { B, s, W };
    return rl_tensor_new(ctx, n, RL_F32, RL_MEM_ACTIVATION, 3, sh, "b,s,h");
}

static void fill(rl_tensor *t, uint64_t seed)
{
    rl_rng g = rl_rng_make(seed, 3);
    for (int64_t i = 0; i < t->numel; i++)
        rl_tensor_set(t, i, (float)rl_rng_normal(&g));
}

/* rows of a [B, S, W] tensor at positions pos → a [B, n, W] tensor */
static rl_tensor *take_rows(rl_ctx *ctx, const rl_tensor *x, const int64_t *pos, int64_t n)
{
    rl_tensor *y = t3(ctx, "part", n);
    int64_t S = x->shape[1];
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < W; d++)
                rl_tensor_set(y, (b * n + i) * W + d, rl_tensor_get(x, (b * S + pos[i]) * W + d));
    return y;
}

/* Ring attention simulated on one rank: each of cp "ranks" owns the rows at its positions,
 * visits every K/V block and merges; the result is compared row by row with full attention. */
static double ring_error(rl_ctx *ctx, int64_t S, int cp, int zigzag)
{
    rl_tensor *q = t3(ctx, "q", S), *k = t3(ctx, "k", S), *v = t3(ctx, "v", S), *full = t3(ctx, "full", S);
    fill(q, 1);
    fill(k, 2);
    fill(v, 3);
    int64_t ps[] = { B, NH, S, S };
    rl_tensor *probs = rl_tensor_new(ctx, "p", RL_F32, RL_MEM_ACTIVATION, 4, ps, NULL);
    ck_assert_int_eq(rl_attention_forward(ctx, q, k, v, NH, probs, full), RL_OK);
    int64_t n = S / cp, pos[64][64];
    char err[256];
    for (int r = 0; r < cp; r++) {
        if (zigzag)
            ck_assert_int_eq(rl_cp_zigzag_positions(S, cp, r, pos[r], err, sizeof err), RL_OK);
        else
            for (int64_t i = 0; i < n; i++)
                pos[r][i] = r * n + i;
    }
    double worst = 0;
    for (int r = 0; r < cp; r++) {
        rl_tensor *qr = take_rows(ctx, q, pos[r], n), *out = t3(ctx, "o", n), *ob = t3(ctx, "ob", n);
        rl_tensor *lse = rl_tensor_new_1d(ctx, "lse", RL_F32, RL_MEM_ACTIVATION, B * NH * n);
        rl_tensor *lb = rl_tensor_new_1d(ctx, "lb", RL_F32, RL_MEM_ACTIVATION, B * NH * n);
        for (int step = 0; step < cp; step++) {
            int src = (r - step + cp) % cp; /* the K/V block that reaches rank r at this ring step */
            rl_tensor *kb = take_rows(ctx, k, pos[src], n), *vb = take_rows(ctx, v, pos[src], n);
            rl_tensor *o = step ? ob : out, *l = step ? lb : lse;
            if (zigzag)
                ck_assert_int_eq(rl_attn_block_forward_pos(ctx, qr, kb, vb, NH, pos[r], pos[src], o, l), RL_OK);
            else
                ck_assert_int_eq(rl_attn_block_forward(ctx, qr, kb, vb, NH, 1, pos[r][0], pos[src][0], o, l), RL_OK);
            if (step)
                ck_assert_int_eq(rl_attn_merge(ctx, out, lse, ob, lb, NH), RL_OK);
            rl_tensor_free(kb);
            rl_tensor_free(vb);
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t d = 0; d < W; d++) {
                    double got = rl_tensor_get(out, (b * n + i) * W + d),
                           want = rl_tensor_get(full, (b * S + pos[r][i]) * W + d);
                    worst = fmax(worst, fabs(got - want));
                }
        rl_tensor_free(qr);
        rl_tensor_free(out);
        rl_tensor_free(ob);
        rl_tensor_free(lse);
        rl_tensor_free(lb);
    }
    rl_tensor_free(q);
    rl_tensor_free(k);
    rl_tensor_free(v);
    rl_tensor_free(full);
    rl_tensor_free(probs);
    return worst;
}

START_TEST(test_ring_equals_full_attention)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    const int cps[] = { 1, 2, 3, 4, 8 };
    for (int i = 0; i < 5; i++) {
        int cp = cps[i];
        int64_t S = 2 * cp * 3; /* divisible by 2·cp */
        double e1 = ring_error(ctx, S, cp, 0), e2 = ring_error(ctx, S, cp, 1);
        ck_assert_msg(e1 < 1e-5, "cp=%d contiguous: max error %g", cp, e1);
        ck_assert_msg(e2 < 1e-5, "cp=%d zig-zag: max error %g", cp, e2);
    }
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_merge_rule)
{
    /* REFERENCE.md's form, and the −∞ (fully masked) row */
    float o[2] = { 1, 2 }, l[1] = { 0.5f }, ob[2] = { 3, -1 }, lb[1] = { -0.25f };
    double ln = 0.5 + log(1 + exp(-0.25 - 0.5));
    double wa = exp(0.5 - ln), wb = exp(-0.25 - ln);
    rl_attn_merge_rows(o, l, ob, lb, 1, 2);
    ck_assert(fabs(l[0] - ln) < 1e-6);
    ck_assert(fabs(o[0] - (wa * 1 + wb * 3)) < 1e-6 && fabs(o[1] - (wa * 2 - wb)) < 1e-6);
    float e[2] = { 0, 0 }, le[1] = { -INFINITY };
    rl_attn_merge_rows(e, le, o, l, 1, 2);
    ck_assert(e[0] == o[0] && le[0] == l[0]);
    float keep = o[0];
    rl_attn_merge_rows(o, l, e, (float[]){ -INFINITY }, 1, 2);
    ck_assert(o[0] == keep);
    /* a fully masked block: lse −∞, out 0 */
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *q = t3(ctx, "q", 2), *k = t3(ctx, "k", 2), *v = t3(ctx, "v", 2), *out = t3(ctx, "o", 2);
    rl_tensor *lse = rl_tensor_new_1d(ctx, "l", RL_F32, RL_MEM_ACTIVATION, B * NH * 2);
    fill(q, 4);
    fill(k, 5);
    fill(v, 6);
    ck_assert_int_eq(rl_attn_block_forward(ctx, q, k, v, NH, 1, 0, 10, out, lse), RL_OK);
    ck_assert(isinf(rl_tensor_get(lse, 0)) && rl_tensor_get(lse, 0) < 0 && rl_tensor_get(out, 0) == 0);
    /* errors */
    ck_assert_int_eq(rl_attn_block_forward(ctx, q, k, v, 3, 1, 0, 0, out, lse), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "3 heads do not divide"));
    ck_assert_int_eq(rl_attn_block_forward(ctx, q, k, v, 0, 1, 0, 0, out, lse), RL_ERR_ARG);
    rl_tensor *small = rl_tensor_new_1d(ctx, "s", RL_F32, RL_MEM_ACTIVATION, 3);
    ck_assert_int_eq(rl_attn_block_forward(ctx, q, k, v, NH, 1, 0, 0, out, small), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "lse must be f32"));
    ck_assert_int_eq(rl_attn_merge(ctx, out, small, out, lse, NH), RL_ERR_ARG);
    ck_assert_int_eq(rl_attn_block_forward(ctx, NULL, k, v, NH, 1, 0, 0, out, lse), RL_ERR_ARG);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(test_zigzag_balance)
{
    char err[256];
    for (int cp = 1; cp <= 8; cp++) {
        int64_t S = 2 * cp * 4, all[256], pos[256];
        for (int64_t i = 0; i < S; i++)
            all[i] = i;
        int64_t first = -1, contiguous_min = INT64_MAX, contiguous_max = 0;
        for (int r = 0; r < cp; r++) {
            int a, b;
            ck_assert_int_eq(rl_cp_zigzag_chunks(cp, r, &a, &b), RL_OK);
            ck_assert(a == r && b == 2 * cp - r - 1);
            ck_assert_int_eq(rl_cp_zigzag_positions(S, cp, r, pos, err, sizeof err), RL_OK);
            int64_t w = rl_cp_causal_work(pos, S / cp, all, S);
            if (first < 0)
                first = w;
            ck_assert_msg(w == first, "cp=%d rank %d: %lld unmasked scores, rank 0 has %lld", cp, r, (long long)w,
                          (long long)first);
            int64_t c = rl_cp_causal_work(all + r * (S / cp), S / cp, all, S); /* contiguous split */
            contiguous_min = c < contiguous_min ? c : contiguous_min;
            contiguous_max = c > contiguous_max ? c : contiguous_max;
        }
        ck_assert_int_eq(first * cp, S * (S + 1) / 2); /* the whole causal triangle, split evenly */
        if (cp > 1)
            ck_assert_int_gt(contiguous_max, contiguous_min); /* the naive split is unbalanced */
    }
    int64_t pos[16];
    ck_assert_int_eq(rl_cp_zigzag_positions(10, 2, 0, pos, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "multiple of 2·cp = 4"));
    ck_assert_int_eq(rl_cp_zigzag_positions(8, 2, 2, pos, err, sizeof err), RL_ERR_ARG);
    ck_assert_int_eq(rl_cp_zigzag_chunks(0, 0, NULL, NULL), RL_ERR_ARG);
}
END_TEST

/* Positions of a masked block: queries 2..5 against keys 0,3,4,7 (some pairs masked). */
static const int64_t blk_q[4] = { 2, 3, 4, 5 }, blk_k[4] = { 0, 3, 4, 7 };

static int block_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_tensor *q = t3(ctx, "q", 4), *k = t3(ctx, "k", 4), *v = t3(ctx, "v", 4), *out = t3(ctx, "out", 4);
    int64_t ls[] = { B, NH, 4 };
    rl_tensor *lse = rl_tensor_new(ctx, "lse", RL_F32, RL_MEM_ACTIVATION, 3, ls, NULL);
    fill(q, 4), fill(k, 5), fill(v, 6);
    int rc = rl_attn_block_forward_pos(ctx, q, k, v, NH, blk_q, blk_k, out, lse);      /* the positions' mask */
    rc = rc ? rc : rl_attn_block_forward(ctx, q, k, v, NH, 1, 10, 12, out, lse);      /* offsets: i + 10 >= j + 12 */
    rc = rc ? rc : rl_attn_block_forward_pos(ctx, q, k, v, NH, NULL, NULL, out, lse); /* no mask */
    rl_tensor_free(q), rl_tensor_free(k), rl_tensor_free(v), rl_tensor_free(out), rl_tensor_free(lse);
    return rc;
}

/* A block's trace event counts the FLOPs of the scores it computes: 4·b·h per unmasked pair. */
START_TEST(test_block_flops_count_unmasked)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = 1;
    o.quiet = 1;
    rl_trace *tr = NULL;
    ck_assert_int_eq(rl_launch(&o, block_rank, NULL, &tr), 0);
    int64_t q_off[4] = { 10, 11, 12, 13 }, k_off[4] = { 12, 13, 14, 15 };
    double want[3] = { 4.0 * B * W * (double)rl_cp_causal_work(blk_q, 4, blk_k, 4),
                       4.0 * B * W * (double)rl_cp_causal_work(q_off, 4, k_off, 4), 4.0 * B * W * 16 };
    int n = 0;
    for (size_t i = 0; i < tr->n; i++)
        if (!strcmp(tr->ev[i].name, "attn_block")) {
            ck_assert_int_lt(n, 3);
            ck_assert_msg(fabs(tr->ev[i].flops - want[n]) < 0.5, "block %d: %g FLOPs, expected %g", n, tr->ev[i].flops,
                          want[n]);
            n++;
        }
    ck_assert_int_eq(n, 3);
    ck_assert(want[0] < want[2] && want[1] < want[2]);
    rl_trace_free(tr);
}
END_TEST

Suite *attn_blocks_suite(void)
{
    Suite *s = suite_create("attn_blocks");
    TCase *tc = tcase_create("attn_blocks");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_ring_equals_full_attention);
    tcase_add_test(tc, test_merge_rule);
    tcase_add_test(tc, test_zigzag_balance);
    tcase_add_test(tc, test_block_flops_count_unmasked);
    suite_add_tcase(s, tc);
    return s;
}
