/* grade30.c — the grader of Lab 30 (model parallelism: TP, SP, PP, CP). One Check test per
 * graded behaviour, grouped by step (30.1–30.5), run by grade.c. Learner code runs on
 * simulated ranks through mp_run (mp_support.c), which compares every result with a one-rank
 * dense computation built from common/ ops (never from the solution file); schedules are
 * checked with rl_pp_validate, bubbles measured from the trace (rl_pp_bubble_from_trace) and
 * compared with rl_calc_bubble; hand derivations with calc.h. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "grade.h"
#include "mp.h"

static const char *part_name[5] = { "30.1 TP MLP", "30.2 TP attention", "30.3 SP block", "30.4 pipeline",
                                    "30.5 ring attention" };

static mp_config gcfg(int t)
{
    mp_config c = mp_config_default();
    c.opts.ranks = t;
    c.opts.quiet = 1;
    c.opts.timeout_s = 3.0 * rl_grade_time_scale();
    if (rl_grade_quick())
        c.s = 16, c.h = 32, c.heads = 4, c.pp_rows = 4;
    return c;
}

/* Runs parts and fails the test with the part's message when it did not finish. */
static void run_parts(const mp_config *c, int parts, mp_stats *s)
{
    rl_trace *tr = NULL;
    mp_run(c, parts, s, &tr);
    rl_trace_free(tr);
    for (int i = 0; i < 5; i++)
        if ((parts & (1 << i)) && s->rc[i])
            ck_abort_msg("%s (t = %d): %s", part_name[i], c->opts.ranks, s->err[i]);
}

#define TOL 1e-4

/* ================================================================== 30.1 */

START_TEST(t_tp_shapes)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_TP, &s);
    ck_assert_msg(s.shapes_ok, "the shards must be ColumnParallelLinear w1 [h, 4h/t] (dims \"h,4h/t\", columns "
                  "rank*4h/t..) and RowParallelLinear w2 [4h/t, h] (dims \"4h/t,h\", rows rank*4h/t..), b1 [4h/t], b2 "
                  "[h], gradients of the same shapes; rank 0 has w1 %s, w2 %s", s.w1_shape, s.w2_shape);
    printf("rank 0: %s, %s, hpre %s\n", s.w1_shape, s.w2_shape, s.hpre_shape);
}
END_TEST

START_TEST(t_tp_forward)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_TP, &s);
    ck_assert_msg(s.mlp_y_err < TOL, "TP MLP output differs from the dense layer by %.3g (relative): sum the "
                  "row-parallel partial outputs with one all-reduce, then add c once", s.mlp_y_err);
}
END_TEST

START_TEST(t_tp_backward)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_TP, &s);
    ck_assert_msg(s.mlp_dx_err < TOL, "TP MLP input gradient dx differs from the dense one by %.3g (relative): f "
                  "is an all-reduce in backward — each rank's dx covers only its 4h/t columns of A", s.mlp_dx_err);
    ck_assert_msg(s.mlp_dw_err < TOL, "TP MLP gradient shards (dw1, db1, dw2, db2) differ from the slices of the "
                  "dense gradients by %.3g (relative)", s.mlp_dw_err);
}
END_TEST

START_TEST(t_tp_counts)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_TP, &s);
    ck_assert_msg(s.ar_fwd == 1 && s.ar_bwd == 1 && s.other_fwd == 0 && s.other_bwd == 0,
                  "Megatron's MLP issues exactly one all-reduce in forward (g) and one in backward (f); counted %lld "
                  "and %lld (other collectives: %lld, %lld)", (long long)s.ar_fwd, (long long)s.ar_bwd,
                  (long long)s.other_fwd, (long long)s.other_bwd);
}
END_TEST

START_TEST(t_tp_sizes)
{
    int ts[] = { 1, 2, 8 };
    for (int i = 0; i < 3; i++) {
        mp_config c = gcfg(ts[i]);
        mp_stats s;
        run_parts(&c, MP_PART_TP, &s);
        ck_assert_msg(s.shapes_ok && s.mlp_y_err < TOL && s.mlp_dx_err < TOL && s.mlp_dw_err < TOL,
                      "t = %d: shapes %s, errors y %.3g dx %.3g grads %.3g", ts[i], s.shapes_ok ? "ok" : "wrong",
                      s.mlp_y_err, s.mlp_dx_err, s.mlp_dw_err);
    }
}
END_TEST

START_TEST(t_ans_tp)
{
    rl_calc_tp_in in = { 2, 4096, 8192, 8, 2, NULL };
    rl_calc_tp_out o;
    ck_assert(rl_calc_tp(&in, &o, NULL, 0) == 0);
    CHECK_NUM("h1_fwd_elems", o.fwd_elems, 0.01);
    CHECK_NUM("h1_layer_gb", o.layer_bytes / 1e9, 0.01);
}
END_TEST

/* ================================================================== 30.2 */

START_TEST(t_attn)
{
    int ts[] = { 4, 2 };
    for (int i = 0; i < 2; i++) {
        mp_config c = gcfg(ts[i]);
        mp_stats s;
        run_parts(&c, MP_PART_ATTN, &s);
        ck_assert_msg(s.attn_err < TOL, "t = %d: TP attention differs from dense attention by %.3g (relative)", ts[i],
                      s.attn_err);
    }
}
END_TEST

typedef struct bad_heads { int rc[MP_MAX_RANKS]; char msg[MP_MAX_RANKS][400]; } bad_heads;

static int bad_heads_rank(rl_ctx *ctx, void *arg)
{
    bad_heads *b = arg;
    int r = rl_rank(ctx);
    rl_tensor *w = rl_tensor_new_1d(ctx, "w", RL_F32, RL_MEM_OTHER, 48 * 48);
    int64_t sh[2] = { 48, 48 };
    rl_tensor *W = rl_tensor_view(w, "W", 0, 2, sh, "h,h");
    tp_attn a;
    memset(&a, 0, sizeof a);
    rl_clear_error(ctx);
    b->rc[r] = tp_attn_init(&a, rl_comm_world(ctx), 6, W, W, W, W);
    snprintf(b->msg[r], sizeof b->msg[r], "%s", rl_last_error(ctx));
    if (!b->rc[r])
        tp_attn_free(&a);
    rl_tensor_free(W);
    rl_tensor_free(w);
    return 0;
}

START_TEST(t_attn_bad_heads)
{
    bad_heads *b = calloc(1, sizeof *b);
    mp_config c = gcfg(4);
    rl_launch(&c.opts, bad_heads_rank, b, NULL);
    ck_assert_msg(b->rc[0] == RL_ERR_ARG, "tp_attn_init with a = 6 heads on t = 4 ranks must return RL_ERR_ARG "
                  "(got %d, %s): %s", b->rc[0], rl_status_name(b->rc[0]), b->msg[0]);
    ck_assert_msg(strstr(b->msg[0], "6") && strstr(b->msg[0], "4"),
                  "the message must name the head count (6) and t (4): '%s'", b->msg[0]);
    free(b);
}
END_TEST

/* ================================================================== 30.3 */

START_TEST(t_sp_outputs)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_SP, &s);
    ck_assert_msg(s.sp_y_err < TOL, "SP block output (this rank's s/t positions) differs from the dense block "
                  "x + MLP(LayerNorm(x)) by %.3g", s.sp_y_err);
    ck_assert_msg(s.sp_dx_err < TOL, "SP block input gradient differs from the TP block's rows by %.3g", s.sp_dx_err);
}
END_TEST

START_TEST(t_sp_volume)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_SP, &s);
    printf("block fwd+bwd: TP %lld bytes, SP %lld bytes\n", (long long)s.tp_bytes, (long long)s.sp_bytes);
    ck_assert_msg(s.sp_calls[RL_COLL_ALL_REDUCE] == 0 && s.sp_calls[RL_COLL_ALL_GATHER] == 2 &&
                  s.sp_calls[RL_COLL_REDUCE_SCATTER] == 2,
                  "under sequence_parallel the block issues %lld all-reduce, %lld all-gather and %lld reduce-scatter "
                  "calls in forward+backward; expected 0, 2 (f forward, g backward) and 2 (g forward, f backward)",
                  (long long)s.sp_calls[RL_COLL_ALL_REDUCE], (long long)s.sp_calls[RL_COLL_ALL_GATHER],
                  (long long)s.sp_calls[RL_COLL_REDUCE_SCATTER]);
    ck_assert_msg(s.sp_bytes == s.tp_bytes, "SP sent %lld bytes, TP alone %lld: an all-reduce is a reduce-scatter "
                  "plus an all-gather, so SP must move the same volume", (long long)s.sp_bytes, (long long)s.tp_bytes);
}
END_TEST

START_TEST(t_sp_memory)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_SP, &s);
    printf("activation bytes after the block forward: TP %lld, SP %lld\n", (long long)s.tp_act, (long long)s.sp_act);
    double ln = 2.0 * (double)(c.s * c.b * c.h) * 4 * (1 - 1.0 / 4); /* block x and LayerNorm out, sharded */
    ck_assert_msg((double)s.sp_act <= (double)s.tp_act - 0.9 * ln,
                  "activation memory after the block forward: %lld bytes under SP, %lld under TP; sharding the "
                  "LayerNorm region along s should save at least %.0f bytes per rank", (long long)s.sp_act,
                  (long long)s.tp_act, 0.9 * ln);
}
END_TEST

START_TEST(t_ans_act)
{
    rl_calc_act_in in = { 4096, 1, 8192, 64, 8, 0, RL_CALC_RECOMPUTE_NONE, 1 };
    rl_calc_act_out o, osp;
    ck_assert(rl_calc_activation(&in, &o, NULL, 0) == 0);
    in.sp = 1;
    ck_assert(rl_calc_activation(&in, &osp, NULL, 0) == 0);
    CHECK_NUM("h4_tp_gb", o.per_layer / 1e9, 0.01);
    CHECK_NUM("h4_tp_sp_gb", osp.per_layer / 1e9, 0.01);
}
END_TEST

/* ================================================================== 30.4 */

START_TEST(t_pp_validate)
{
    int cases[][4] = { { RL_PP_GPIPE, 4, 8, 1 }, { RL_PP_1F1B, 4, 8, 1 }, { RL_PP_1F1B, 4, 3, 1 }, { RL_PP_1F1B, 2, 5, 1 },
                       { RL_PP_INTERLEAVED, 4, 8, 2 }, { RL_PP_INTERLEAVED, 2, 4, 3 }, { RL_PP_GPIPE, 1, 3, 1 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512], l0[200];
        rl_pp_schedule *s = pp_build_schedule((rl_pp_kind)cases[i][0], cases[i][1], cases[i][2], cases[i][3], err,
                                              sizeof err);
        ck_assert_msg(s != NULL, "pp_build_schedule(%s, p = %d, m = %d, v = %d): %s", rl_pp_kind_name(cases[i][0]),
                      cases[i][1], cases[i][2], cases[i][3], err);
        int rc = rl_pp_validate(s, err, sizeof err);
        ck_assert_msg(rc == 0, "%s, p = %d, m = %d, v = %d: rl_pp_validate: %s (stage 0: %s)",
                      rl_pp_kind_name(cases[i][0]), cases[i][1], cases[i][2], cases[i][3], err,
                      rl_pp_stage_string(s, 0, l0, sizeof l0));
        rl_pp_schedule_free(s);
    }
    char err[256];
    rl_pp_schedule *bad = pp_build_schedule(RL_PP_INTERLEAVED, 4, 6, 2, err, sizeof err);
    ck_assert_msg(!bad, "interleaved with m = 6 not a multiple of p = 4 must be refused (NULL and a message)");
}
END_TEST

static void pp_case(rl_pp_kind k, mp_stats *s)
{
    mp_config c = gcfg(4);
    c.schedule = k;
    run_parts(&c, MP_PART_PP, s);
}

START_TEST(t_pp_grads)
{
    rl_pp_kind ks[] = { RL_PP_GPIPE, RL_PP_1F1B, RL_PP_INTERLEAVED };
    for (int i = 0; i < 3; i++) {
        mp_stats s;
        pp_case(ks[i], &s);
        ck_assert_msg(s.pp_grad_err < TOL, "%s: the stage weight gradients differ from the unpipelined model by %.3g "
                      "(relative)", rl_pp_kind_name(ks[i]), s.pp_grad_err);
        ck_assert_msg(fabs(s.pp_loss - s.pp_ref_loss) <= 1e-5 * fabs(s.pp_ref_loss) + 1e-7,
                      "%s: loss %.7g, unpipelined %.7g", rl_pp_kind_name(ks[i]), s.pp_loss, s.pp_ref_loss);
    }
}
END_TEST

static double formula(rl_calc_schedule k, int p, int m, int v)
{
    rl_calc_bubble_in in = { p, m, v, k };
    rl_calc_bubble_out o;
    ck_assert(rl_calc_bubble(&in, &o, NULL, 0) == 0);
    return o.frac_total;
}

START_TEST(t_pp_bubble)
{
    rl_pp_kind ks[] = { RL_PP_GPIPE, RL_PP_1F1B };
    rl_calc_schedule cs[] = { RL_CALC_SCHED_GPIPE, RL_CALC_SCHED_1F1B };
    for (int i = 0; i < 2; i++) {
        mp_stats s;
        pp_case(ks[i], &s);
        double want = formula(cs[i], 4, 8, 1);
        printf("%s: bubble measured %.4f, formula %.4f\n", rl_pp_kind_name(ks[i]), s.pp.bubble_frac, want);
        ck_assert_msg(fabs(s.pp.bubble_frac - want) <= 0.02 * want,
                      "%s, p = 4, m = 8: measured bubble %.4f, (p-1)/(m+p-1) = %.4f (tolerance 2%%): a stage waits "
                      "longer than the schedule requires (an unpaired send? a receive posted too late?)",
                      rl_pp_kind_name(ks[i]), s.pp.bubble_frac, want);
    }
}
END_TEST

START_TEST(t_pp_interleaved)
{
    mp_stats s, o;
    pp_case(RL_PP_INTERLEAVED, &s);
    pp_case(RL_PP_1F1B, &o);
    double want = formula(RL_CALC_SCHED_INTERLEAVED, 4, 8, 2);
    printf("interleaved v = 2: bubble measured %.4f, formula %.4f (1F1B measured %.4f)\n", s.pp.bubble_frac, want,
           o.pp.bubble_frac);
    ck_assert_msg(fabs(s.pp.bubble_frac - want) <= 0.05 * want && s.pp.bubble_frac < o.pp.bubble_frac,
                  "interleaved 1F1B, p = 4, m = 8, v = 2: measured bubble %.4f, (p-1)/(vm+p-1) = %.4f (tolerance 5%%), "
                  "1F1B %.4f", s.pp.bubble_frac, want, o.pp.bubble_frac);
}
END_TEST

START_TEST(t_pp_inflight)
{
    mp_stats g, f;
    pp_case(RL_PP_GPIPE, &g);
    pp_case(RL_PP_1F1B, &f);
    ck_assert_msg(fabs(g.pp.peak_inflight[0] - 8) < 1e-9, "GPipe holds all m = 8 micro-batches on stage 0 at its "
                  "peak; measured %.2f", g.pp.peak_inflight[0]);
    for (int r = 0; r < 4; r++)
        ck_assert_msg(f.pp.peak_inflight[r] <= 4 - r + 1e-9, "1F1B: stage %d holds %.2f micro-batches at its peak; at "
                      "most p - r = %d (warm-up p-r-1 forwards + 1)", r, f.pp.peak_inflight[r], 4 - r);
}
END_TEST

START_TEST(t_ans_bubble)
{
    CHECK_NUM("h3_naive", formula(RL_CALC_SCHED_NAIVE, 4, 16, 1), 0.01);
    CHECK_NUM("h3_1f1b", formula(RL_CALC_SCHED_1F1B, 4, 16, 1), 0.01);
    CHECK_NUM("h3_interleaved", formula(RL_CALC_SCHED_INTERLEAVED, 4, 16, 2), 0.01);
}
END_TEST

/* ================================================================== 30.5 */

START_TEST(t_cp_merge)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int64_t os[3] = { 2, 5, 12 }, ls[3] = { 2, 3, 5 };
    rl_tensor *o = rl_tensor_new(ctx, "o", RL_F32, RL_MEM_OTHER, 3, os, NULL);
    rl_tensor *ob = rl_tensor_new(ctx, "ob", RL_F32, RL_MEM_OTHER, 3, os, NULL);
    rl_tensor *l = rl_tensor_new(ctx, "l", RL_F32, RL_MEM_OTHER, 3, ls, NULL);
    rl_tensor *lb = rl_tensor_new(ctx, "lb", RL_F32, RL_MEM_OTHER, 3, ls, NULL);
    mp_fill(o, 1, 1), mp_fill(ob, 2, 1), mp_fill(l, 3, 3), mp_fill(lb, 4, 3);
    rl_tensor_set(lb, 0, -INFINITY);
    rl_tensor_set(l, 1, -INFINITY);
    /* the reference: rl_attn_merge of common/ on copies */
    rl_tensor *o2 = rl_tensor_new(ctx, "o2", RL_F32, RL_MEM_OTHER, 3, os, NULL);
    rl_tensor *l2 = rl_tensor_new(ctx, "l2", RL_F32, RL_MEM_OTHER, 3, ls, NULL);
    rl_tensor_copy(o2, o), rl_tensor_copy(l2, l);
    ck_assert(rl_attn_merge(ctx, o2, l2, ob, lb, 3) == 0);
    int rc = cp_lse_merge(ctx, o, l, ob, lb, 3);
    ck_assert_msg(rc == 0, "cp_lse_merge returned %d (%s): %s", rc, rl_status_name(rc), rl_last_error(ctx));
    double eo = rl_tensor_max_rel_diff(o, o2, 1e-3), el = rl_tensor_max_rel_diff(l, l2, 1e-3);
    ck_assert_msg(eo < 1e-5 && el < 1e-5, "cp_lse_merge differs from the log-sum-exp rule by %.3g (out) and %.3g "
                  "(lse): out' = exp(lse - lse')*out + exp(lse_b - lse')*out_b — both parts rescaled", eo, el);
    rl_tensor_free(o), rl_tensor_free(ob), rl_tensor_free(l), rl_tensor_free(lb), rl_tensor_free(o2), rl_tensor_free(l2);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(t_cp_equal)
{
    int ts[] = { 4, 2 };
    for (int i = 0; i < 2; i++) {
        mp_config c = gcfg(ts[i]);
        mp_stats s;
        run_parts(&c, MP_PART_CP, &s);
        ck_assert_msg(s.cp_err < TOL && s.cp_err_contig < TOL, "cp = %d: ring attention differs from full causal "
                      "attention by %.3g (zig-zag) and %.3g (contiguous)", ts[i], s.cp_err, s.cp_err_contig);
    }
}
END_TEST

START_TEST(t_cp_balance)
{
    mp_config c = gcfg(4);
    mp_stats s;
    run_parts(&c, MP_PART_CP, &s);
    int64_t mn = INT64_MAX, mx = 0, sum = 0;
    for (int r = 0; r < 4; r++) {
        mn = s.cp_work[r] < mn ? s.cp_work[r] : mn;
        mx = s.cp_work[r] > mx ? s.cp_work[r] : mx;
        sum += s.cp_work[r];
    }
    int64_t want = c.s * (c.s + 1) / 2;
    ck_assert_msg(sum == want, "the ranks computed %lld unmasked score entries in all; the causal mask leaves "
                  "s(s+1)/2 = %lld", (long long)sum, (long long)want);
    ck_assert_msg(mx == mn, "zig-zag chunks: per-rank causal work %lld..%lld; chunks r and 2cp-r-1 balance it "
                  "exactly", (long long)mn, (long long)mx);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_CHOICE("i1_tp_in_node", 'b');
    CHECK_CHOICE("i2_interleave_cost", 'c');
    CHECK_CHOICE("i3_ring_vs_ulysses", 'a');
}
END_TEST

/* ================================================================== the table */

static const rl_grade_step steps30[] = {
    { "30.1", "tensor-parallel MLP" },
    { "30.2", "tensor-parallel attention" },
    { "30.3", "sequence parallelism" },
    { "30.4", "pipeline schedules" },
    { "30.5", "context parallelism" },
};

static const rl_grade_test tests30[] = {
    { "30.1", "weight shard shapes [h,4h/t] and [4h/t,h]", 3, 20, &t_tp_shapes },
    { "30.1", "forward = dense MLP", 4, 20, &t_tp_forward },
    { "30.1", "backward: dx and gradient shards = dense", 4, 20, &t_tp_backward },
    { "30.1", "one all-reduce forward, one backward", 4, 20, &t_tp_counts },
    { "30.1", "t = 1, 2, 8: same results", 3, 30, &t_tp_sizes },
    { "30.1", "answers: TP traffic per layer (4bsh, 70B layer)", 2, 10, &t_ans_tp },
    { "30.2", "= dense attention (t = 4, 2)", 5, 20, &t_attn },
    { "30.2", "heads not divisible by t: clear error", 3, 20, &t_attn_bad_heads },
    { "30.3", "outputs = dense block", 4, 20, &t_sp_outputs },
    { "30.3", "same comm volume as TP alone", 4, 20, &t_sp_volume },
    { "30.3", "activation bytes per rank reduced", 4, 20, &t_sp_memory },
    { "30.3", "answers: activation memory with and without SP", 2, 10, &t_ans_act },
    { "30.4", "schedules validate (dependencies, no deadlock)", 5, 20, &t_pp_validate },
    { "30.4", "gradients = unpipelined model", 6, 30, &t_pp_grads },
    { "30.4", "bubble (p-1)/(m+p-1): gpipe, 1f1b", 4, 30, &t_pp_bubble },
    { "30.4", "interleaved bubble (p-1)/(vm+p-1)", 3, 30, &t_pp_interleaved },
    { "30.4", "peak in-flight: gpipe m, 1f1b <= p", 3, 30, &t_pp_inflight },
    { "30.4", "answers: bubbles for p=4, m=16", 2, 10, &t_ans_bubble },
    { "30.5", "log-sum-exp merge", 3, 10, &t_cp_merge },
    { "30.5", "ring attention = full attention", 5, 30, &t_cp_equal },
    { "30.5", "causal work balanced (zig-zag)", 3, 20, &t_cp_balance },
    { "30.5", "answers: interview questions", 3, 10, &t_ans_interview },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "30", "model parallelism: TP, SP, PP, CP", "labs/30_tp_pp_sp_cp/README.md", "labs/30_tp_pp_sp_cp/answers.txt",
        steps30, (int)(sizeof steps30 / sizeof steps30[0]), tests30, (int)(sizeof tests30 / sizeof tests30[0]),
    };
    return rl_grade_main(&lab, argc, argv);
}
