/* test_pipeline.c — pipeline schedules (common/pipeline.c): bubbles and peak in-flight against
 * the formulas of calc.h for many (p, m, v), ZB-H1 against 1F1B, the validator on broken
 * schedules, and the bubble measured from traces (synthetic and a real 4-rank run). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "pipeline.h"
#include "testutil.h"

static rl_calc_schedule calc_kind(rl_pp_kind k)
{
    return k == RL_PP_GPIPE ? RL_CALC_SCHED_GPIPE : k == RL_PP_1F1B ? RL_CALC_SCHED_1F1B
           : k == RL_PP_INTERLEAVED ? RL_CALC_SCHED_INTERLEAVED : RL_CALC_SCHED_ZB_H1;
}

static double max_peak(const rl_pp_timeline *t)
{
    double pk = 0;
    for (int r = 0; r < t->p; r++)
        pk = fmax(pk, t->peak_inflight[r]);
    return pk;
}

/* The tick table (PyTorch's schedule dump: one tick per op, messages free): 1F1B and GPipe on
 * p = 4, m = 8 take 2(m + p - 1) = 22 ticks, stage 0's first backward runs at tick 2p - 1; in
 * every schedule each op's inputs ran at earlier ticks; the printed table of 1F1B starts as
 * PyTorch's; a schedule read back from its simulated trace is the schedule; a deadlock and an
 * empty trace are refused with a message. */
START_TEST(test_tick_table)
{
    char err[256];
    static const struct {
        rl_pp_kind kind;
        int p, m, v, ticks;
    } cases[] = { { RL_PP_1F1B, 4, 8, 1, 22 }, { RL_PP_GPIPE, 4, 8, 1, 22 }, { RL_PP_INTERLEAVED, 4, 8, 2, -1 },
                  { RL_PP_ZB_H1, 4, 8, 1, -1 }, { RL_PP_INTERLEAVED, 3, 6, 3, -1 } };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rl_pp_schedule *s = rl_pp_schedule_new(cases[c].kind, cases[c].p, cases[c].m, cases[c].v, err, sizeof err);
        ck_assert_msg(s, "%s", err);
        int *tick[8], n = 0;
        for (int r = 0; r < s->p; r++)
            tick[r] = malloc(sizeof(int) * (size_t)s->nops[r]);
        ck_assert_msg(rl_pp_ticks(s, tick, &n, err, sizeof err) == RL_OK, "%s: %s", rl_pp_kind_name(cases[c].kind), err);
        if (cases[c].ticks > 0)
            ck_assert_int_eq(n, cases[c].ticks);
        if (cases[c].kind == RL_PP_1F1B)
            for (int i = 0; i < s->nops[0]; i++)
                if (s->ops[0][i].kind == 'B' && s->ops[0][i].mb == 0)
                    ck_assert_int_eq(tick[0][i], 2 * s->p - 1);
        /* every input ran at an earlier tick (found by scanning the lists), one op per stage and tick */
        for (int r = 0; r < s->p; r++)
            for (int i = 0; i < s->nops[r]; i++) {
                const rl_pp_op *o = &s->ops[r][i];
                int vs = o->chunk * s->p + r, V = s->p * s->v;
                ck_assert(i == 0 || tick[r][i] > tick[r][i - 1]);
                for (int r2 = 0; r2 < s->p; r2++)
                    for (int j = 0; j < s->nops[r2]; j++) {
                        const rl_pp_op *q = &s->ops[r2][j];
                        int vq = q->chunk * s->p + r2;
                        int dep = q->mb == o->mb &&
                                  ((o->kind == 'F' && q->kind == 'F' && vq == vs - 1) ||
                                   (o->kind == 'B' && q->kind == 'F' && vq == vs) ||
                                   (o->kind == 'B' && q->kind == 'B' && vq == vs + 1 && vs < V - 1) ||
                                   (o->kind == 'W' && q->kind == 'B' && vq == vs));
                        ck_assert_msg(!dep || tick[r2][j] < tick[r][i], "%s: %c%d.%d on stage %d at tick %d before its "
                                      "input %c%d.%d on stage %d at tick %d", rl_pp_kind_name(cases[c].kind), o->kind,
                                      o->mb, o->chunk, r, tick[r][i], q->kind, q->mb, q->chunk, r2, tick[r2][j]);
                    }
            }
        /* the schedule read back from its own simulated trace */
        rl_pp_costs costs = { 1, 2, s->split_w ? 1 : 0, 0 };
        rl_pp_timeline *tl = rl_pp_simulate(s, &costs, err, sizeof err);
        rl_trace *t = rl_trace_new(s->p);
        ck_assert(tl && t && rl_pp_timeline_to_trace(s, tl, 0, t) == RL_OK);
        rl_pp_schedule *back = rl_pp_schedule_from_trace(t, 0, err, sizeof err);
        ck_assert_msg(back && back->p == s->p && back->m == s->m && back->v == s->v && back->split_w == s->split_w,
                      "%s read back: %s", rl_pp_kind_name(cases[c].kind), back ? "other sizes" : err);
        for (int r = 0; r < s->p; r++) {
            char a[2048], b[2048];
            ck_assert_str_eq(rl_pp_stage_string(back, r, b, sizeof b), rl_pp_stage_string(s, r, a, sizeof a));
        }
        if (cases[c].kind == RL_PP_1F1B) {
            char *buf = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&buf, &len);
            ck_assert_int_eq(rl_pp_print_ticks(s, f, err, sizeof err), RL_OK);
            fclose(f);
            const char *head = "tick  stage0   stage1   stage2   stage3\n   0  F0       .        .        .\n"
                               "   1  F1       F0       .        .\n";
            ck_assert_msg(!strncmp(buf, head, strlen(head)) &&
                          strstr(buf, "\n   7  B0       F3       B1       F2\n") && strstr(buf, "\n  21  B7       .        .        .\n"),
                          "%s", buf);
            free(buf);
        }
        rl_pp_schedule_free(back);
        rl_trace_free(t);
        rl_pp_timeline_free(tl);
        for (int r = 0; r < s->p; r++)
            free(tick[r]);
        rl_pp_schedule_free(s);
    }
    /* stage 0 waits for a backward that waits for its forward: a deadlock */
    rl_pp_schedule *d = rl_pp_schedule_empty(2, 1, 1, 0, err, sizeof err);
    ck_assert(d && !rl_pp_schedule_append(d, 0, 'B', 0, 0) && !rl_pp_schedule_append(d, 0, 'F', 0, 0) &&
              !rl_pp_schedule_append(d, 1, 'F', 0, 0) && !rl_pp_schedule_append(d, 1, 'B', 0, 0));
    int *dt[2] = { malloc(2 * sizeof(int)), malloc(2 * sizeof(int)) }, n = 0;
    ck_assert(rl_pp_ticks(d, dt, &n, err, sizeof err) == RL_ERR_ARG && strstr(err, "deadlocks at tick"));
    free(dt[0]), free(dt[1]);
    rl_pp_schedule_free(d);
    rl_trace *empty = rl_trace_new(2);
    ck_assert(!rl_pp_schedule_from_trace(empty, -1, err, sizeof err) && strstr(err, "no pipeline ops"));
    rl_trace_free(empty);
}
END_TEST

/* Simulated bubble and peak vs rl_calc_bubble; returns the number of cases. */
static int check_formula(rl_pp_kind k, int p, int m, int v, rl_pp_costs c)
{
    char err[512];
    rl_pp_schedule *s = rl_pp_schedule_new(k, p, m, v, err, sizeof err);
    ck_assert_msg(s, "%s p=%d m=%d v=%d: %s", rl_pp_kind_name(k), p, m, v, err);
    ck_assert_msg(rl_pp_validate(s, err, sizeof err) == RL_OK, "%s p=%d m=%d v=%d: %s", rl_pp_kind_name(k), p, m, v,
                  err);
    rl_pp_timeline *t = rl_pp_simulate(s, &c, err, sizeof err);
    ck_assert_msg(t, "%s", err);
    rl_calc_bubble_in in = { p, m, v, calc_kind(k) };
    rl_calc_bubble_out o;
    ck_assert_int_eq(rl_calc_bubble(&in, &o, err, sizeof err), RL_OK);
    ck_assert_msg(fabs(t->bubble_frac - o.frac_total) < 1e-9, "%s p=%d m=%d v=%d f=%g b=%g w=%g: bubble %.9f, formula %.9f",
                  rl_pp_kind_name(k), p, m, v, c.f, c.b, c.w, t->bubble_frac, o.frac_total);
    for (int r = 0; r < p; r++) /* uniform costs: every stage idles the same */
        ck_assert(fabs(t->stage_bubble[r] - o.frac_total) < 1e-9);
    ck_assert_msg(fabs(max_peak(t) - o.peak_inflight) < 1e-9, "%s p=%d m=%d v=%d: peak %.3f, formula %.3f",
                  rl_pp_kind_name(k), p, m, v, max_peak(t), o.peak_inflight);
    rl_pp_timeline_free(t);
    rl_pp_schedule_free(s);
    return 1;
}

START_TEST(test_bubble_formulas)
{
    int n = 0;
    rl_pp_costs eq = { 1, 1, 0, 0 }, uneq = { 1, 2, 0.5, 0 };
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 16; m++) {
            n += check_formula(RL_PP_GPIPE, p, m, 1, eq);
            n += check_formula(RL_PP_1F1B, p, m, 1, eq);
            n += check_formula(RL_PP_1F1B, p, m, 1, uneq);
        }
    for (int p = 2; p <= 6; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p) {
                n += check_formula(RL_PP_INTERLEAVED, p, m, v, eq);
                n += check_formula(RL_PP_INTERLEAVED, p, m, v, uneq);
            }
    ck_assert_int_gt(n, 450);
    /* the course's numbers: p=4, m=16 → 15.8%, interleaved v=2 → 8.6% */
    char err[256];
    rl_pp_schedule *s = rl_pp_schedule_new(RL_PP_INTERLEAVED, 4, 16, 2, err, sizeof err);
    rl_pp_timeline *t = rl_pp_simulate(s, &eq, err, sizeof err);
    ck_assert(fabs(t->bubble_frac - 3.0 / 35) < 1e-12);
    rl_pp_timeline_free(t);
    rl_pp_schedule_free(s);
}
END_TEST

START_TEST(test_peak_inflight)
{
    char err[256];
    rl_pp_costs c = { 1, 2, 0, 0 };
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 12; m++) {
            rl_pp_schedule *g = rl_pp_schedule_new(RL_PP_GPIPE, p, m, 1, err, sizeof err);
            rl_pp_schedule *o = rl_pp_schedule_new(RL_PP_1F1B, p, m, 1, err, sizeof err);
            rl_pp_timeline *tg = rl_pp_simulate(g, &c, err, sizeof err), *to = rl_pp_simulate(o, &c, err, sizeof err);
            for (int r = 0; r < p; r++) {
                ck_assert(tg->peak_inflight[r] == m);                      /* GPipe holds every micro-batch */
                ck_assert(to->peak_inflight[r] <= p);                      /* 1F1B at most p ... */
                ck_assert(to->peak_inflight[r] == (m < p - r ? m : p - r)); /* ... p − r on stage r */
            }
            /* warm-up of 1F1B on stage r: p − r − 1 forwards before the first B */
            for (int r = 0; r < p; r++) {
                int i = 0;
                while (o->ops[r][i].kind == 'F')
                    i++;
                ck_assert_int_eq(i, (m < p - r - 1 ? m : p - r - 1) + (m > p - r - 1 ? 1 : 0));
            }
            rl_pp_timeline_free(tg);
            rl_pp_timeline_free(to);
            rl_pp_schedule_free(g);
            rl_pp_schedule_free(o);
        }
}
END_TEST

START_TEST(test_zb_h1)
{
    char err[256];
    rl_pp_costs c = { 1, 1, 1, 0 };
    for (int p = 2; p <= 8; p++)
        for (int m = p; m <= 3 * p; m++) {
            check_formula(RL_PP_ZB_H1, p, m, 1, c);
            rl_pp_schedule *z = rl_pp_schedule_new(RL_PP_ZB_H1, p, m, 1, err, sizeof err);
            rl_pp_schedule *o = rl_pp_schedule_new(RL_PP_1F1B, p, m, 1, err, sizeof err);
            ck_assert_int_eq(z->split_w, 1);
            rl_pp_timeline *tz = rl_pp_simulate(z, &c, err, sizeof err), *to = rl_pp_simulate(o, &c, err, sizeof err);
            /* T_F = T_B = T_W: bubble time a third of 1F1B's, at 1F1B's peak memory */
            double idle_z = tz->makespan - 3 * m, idle_o = to->makespan - 3 * m;
            ck_assert_msg(fabs(idle_z - idle_o / 3) < 1e-9, "p=%d m=%d: zb idle %g, 1f1b idle %g", p, m, idle_z, idle_o);
            ck_assert(max_peak(tz) <= p);
            rl_pp_timeline_free(tz);
            rl_pp_timeline_free(to);
            rl_pp_schedule_free(z);
            rl_pp_schedule_free(o);
        }
}
END_TEST

/* A schedule from text, one string per stage ("F0 F1 B0 B1"; "F0.1" = chunk 1). */
static rl_pp_schedule *parse(int p, int m, int v, int split, const char *const *stages)
{
    rl_pp_schedule *s = rl_pp_schedule_empty(p, m, v, split, NULL, 0);
    for (int r = 0; r < p; r++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", stages[r]);
        char *save = NULL;
        for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            int mb = 0, c = 0;
            sscanf(tok + 1, "%d.%d", &mb, &c);
            ck_assert_int_eq(rl_pp_schedule_append(s, r, tok[0], mb, c), RL_OK);
        }
    }
    return s;
}

static void expect_invalid(int p, int m, int v, int split, const char *const *stages, const char *msg)
{
    char err[1024];
    rl_pp_schedule *s = parse(p, m, v, split, stages);
    ck_assert_int_eq(rl_pp_validate(s, err, sizeof err), RL_ERR_ARG);
    ck_assert_msg(strstr(err, msg), "'%s' lacks '%s'", err, msg);
    rl_pp_costs c = { 1, 1, 1, 0 };
    ck_assert_ptr_null(rl_pp_simulate(s, &c, err, sizeof err));
    rl_pp_schedule_free(s);
}

START_TEST(test_validator)
{
    char err[1024];
    const char *ok[] = { "F0 F1 B0 B1", "F0 B0 F1 B1" };
    rl_pp_schedule *s = parse(2, 2, 1, 0, ok);
    ck_assert_msg(rl_pp_validate(s, err, sizeof err) == RL_OK, "%s", err);
    char str[128];
    ck_assert_str_eq(rl_pp_stage_string(s, 1, str, sizeof str), "F0 B0 F1 B1");
    int from, to;
    rl_pp_op_peers(s, 1, &s->ops[1][1], &from, &to); /* B0 on the last stage: no recv, sends to 0 */
    ck_assert(from == -1 && to == 0);
    rl_pp_op_peers(s, 0, &s->ops[0][0], &from, &to);
    ck_assert(from == -1 && to == 1);
    rl_pp_schedule_free(s);

    const char *swapped[] = { "F0 F1 B0 B1", "B0 F0 F1 B1" };
    expect_invalid(2, 2, 1, 0, swapped, "stage 1, op 0: B0 comes before its F0");
    const char *missing[] = { "F0 F1 B0 B1", "F0 B0 F1" };
    expect_invalid(2, 2, 1, 0, missing, "stage 1: B1 is missing");
    const char *twice[] = { "F0 F1 B0 B1 B1", "F0 B0 F1 B1" };
    expect_invalid(2, 2, 1, 0, twice, "B1 appears twice");
    const char *deadlock[] = { "F0 B0 F1 B1", "F1 F0 B0 B1" };
    /* stage 1 wants F1 first: the FIFO check catches the order before the deadlock */
    expect_invalid(2, 2, 1, 0, deadlock, "rl_recv matches messages in order");
    const char *cycle[] = { "F0 B0 F1 B1", "F0 F1 B0 B1" };
    /* stage 0 waits for B0 from stage 1, which waits for F1 from stage 0: a cycle */
    expect_invalid(2, 2, 1, 0, cycle, "the schedule deadlocks: stage 0 waits at B0 for the gradient of B0 on stage 1; stage 1 waits at F1");
    const char *cyc3[] = { "F0 B0 F1 B1", "F0 F1 B0 B1", "F0 B0 F1 B1" };
    expect_invalid(3, 2, 1, 0, cyc3, "deadlocks");
    const char *w_no_split[] = { "F0 B0 W0", "F0 B0 W0" };
    expect_invalid(2, 1, 1, 0, w_no_split, "a W op in a schedule without split backward");
    const char *w_missing[] = { "F0 B0 W0", "F0 B0" };
    expect_invalid(2, 1, 1, 1, w_missing, "W0 is missing");
    const char *w_early[] = { "F0 W0 B0", "F0 B0 W0" };
    expect_invalid(2, 1, 1, 1, w_early, "W0 comes before its B0");
    const char *range[] = { "F0 F2 B0 B1", "F0 B0 F1 B1" };
    expect_invalid(2, 2, 1, 0, range, "out of range");
    const char *bad_kind[] = { "X0", "F0 B0" };
    expect_invalid(2, 1, 1, 0, bad_kind, "unknown op kind 'X'");
    /* interleaved chunks: a chunk-1 forward before the chunk-0 one it depends on, across stages */
    const char *ichunk[] = { "F0.1 F0.0 B0.1 B0.0", "F0.0 F0.1 B0.1 B0.0" };
    expect_invalid(2, 1, 2, 0, ichunk, "rl_recv matches messages in order");
    /* generators: bad arguments */
    ck_assert_ptr_null(rl_pp_schedule_new(RL_PP_INTERLEAVED, 4, 6, 2, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "m a multiple of p"));
    ck_assert_ptr_null(rl_pp_schedule_new(RL_PP_INTERLEAVED, 4, 8, 1, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "v >= 2"));
    ck_assert_ptr_null(rl_pp_schedule_new(RL_PP_1F1B, 0, 8, 1, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "p = 0"));
    ck_assert_ptr_null(rl_pp_schedule_new(RL_PP_GPIPE, 2, 0, 1, err, sizeof err));
    ck_assert_ptr_null(rl_pp_schedule_new((rl_pp_kind)9, 2, 2, 1, err, sizeof err));
    ck_assert_int_eq(rl_pp_validate(NULL, err, sizeof err), RL_ERR_ARG);
    ck_assert_int_eq(rl_pp_kind_parse("zb-h1"), RL_PP_ZB_H1);
    ck_assert_int_eq(rl_pp_kind_parse("nope"), -1);
    rl_pp_schedule *g = rl_pp_schedule_new(RL_PP_1F1B, 2, 2, 1, err, sizeof err);
    rl_pp_costs neg = { -1, 1, 0, 0 };
    ck_assert_ptr_null(rl_pp_simulate(g, &neg, err, sizeof err));
    ck_assert_ptr_null(rl_pp_simulate(g, NULL, err, sizeof err));
    rl_pp_schedule_free(g);
}
END_TEST

START_TEST(test_p2p_cost)
{
    /* p2p time lengthens the critical path: GPipe makespan (m+p−1)(f+b) + 2(p−1)·p2p */
    char err[256];
    rl_pp_costs c = { 1, 2, 0, 0.25 };
    rl_pp_schedule *s = rl_pp_schedule_new(RL_PP_GPIPE, 4, 8, 1, err, sizeof err);
    rl_pp_timeline *t = rl_pp_simulate(s, &c, err, sizeof err);
    ck_assert(fabs(t->makespan - (11 * 3 + 2 * 3 * 0.25)) < 1e-12);
    rl_pp_timeline_free(t);
    rl_pp_schedule_free(s);
}
END_TEST

START_TEST(test_bubble_from_synthetic_trace)
{
    char err[256];
    rl_pp_kind kinds[] = { RL_PP_GPIPE, RL_PP_1F1B, RL_PP_INTERLEAVED, RL_PP_ZB_H1 };
    for (int k = 0; k < 4; k++) {
        rl_pp_schedule *s = rl_pp_schedule_new(kinds[k], 4, 8, 2, err, sizeof err);
        rl_pp_costs c = { 1e-3, 2e-3, 1e-3, 0 };
        rl_pp_timeline *tl = rl_pp_simulate(s, &c, err, sizeof err);
        rl_trace *t = rl_trace_new(4);
        ck_assert_int_eq(rl_pp_timeline_to_trace(s, tl, 3, t), RL_OK);
        rl_pp_trace_stats st;
        ck_assert_int_eq(rl_pp_bubble_from_trace(t, 3, &st, err, sizeof err), RL_OK);
        ck_assert_int_eq(st.nstages, 4);
        ck_assert_int_eq(st.nranks, 4);
        ck_assert_msg(fabs(st.bubble_frac - tl->bubble_frac) < 1e-9, "%s: %g vs %g", rl_pp_kind_name(kinds[k]),
                      st.bubble_frac, tl->bubble_frac);
        for (int r = 0; r < 4; r++) {
            ck_assert(fabs(st.stage_bubble[r] - tl->stage_bubble[r]) < 1e-9);
            ck_assert_msg(fabs(st.peak_inflight[r] - tl->peak_inflight[r]) < 1e-9, "%s stage %d: %g vs %g",
                          rl_pp_kind_name(kinds[k]), r, st.peak_inflight[r], tl->peak_inflight[r]);
        }
        ck_assert_int_eq(rl_pp_bubble_from_trace(t, 7, &st, err, sizeof err), RL_ERR_ARG); /* no such step */
        ck_assert_ptr_nonnull(strstr(err, "rl_pp_mark"));
        rl_trace_free(t);
        rl_pp_timeline_free(tl);
        rl_pp_schedule_free(s);
    }
}
END_TEST

/* A real run: each rank executes its stage of a schedule with modelled compute (delays) and
 * small activation/gradient messages (async sends, blocking receives, two communicators). */
typedef struct { rl_pp_schedule *s; double tf, tb; } run_arg;

static int stage_rank(rl_ctx *ctx, void *p)
{
    run_arg *a = p;
    rl_comm *w = rl_comm_world(ctx);
    rl_comm *act = rl_comm_split(w, 0, 0), *grad = rl_comm_split(w, 0, 0);
    int r = rl_rank(ctx), pend_peer = -1;
    rl_comm *pend_comm = NULL;
    rl_tensor *out = rl_tensor_new_1d(ctx, "out", RL_F32, RL_MEM_ACTIVATION, 4);
    rl_tensor *in = rl_tensor_new_1d(ctx, "in", RL_F32, RL_MEM_ACTIVATION, 4);
    rl_step_begin(ctx, 0);
    for (int i = 0; i < a->s->nops[r]; i++) {
        const rl_pp_op *o = &a->s->ops[r][i];
        int from, to;
        rl_pp_op_peers(a->s, r, o, &from, &to);
        rl_comm *c = o->kind == 'F' ? act : grad;
        if (o->kind != 'W' && (pend_peer >= 0 || from >= 0)) { /* Megatron's send_X_recv_Y pairing */
            rl_group_start(ctx);
            if (pend_peer >= 0)
                rl_send(pend_comm, out, pend_peer, 0);
            if (from >= 0)
                rl_recv(c, in, from, 0);
            if (rl_group_end(ctx))
                return rl_error(ctx, RL_ERR_ARG, "group failed");
            pend_peer = -1;
        }
        rl_pp_mark(ctx, r, o);
        rl_compute_delay(ctx, o->kind == 'F' ? "fwd" : "bwd", o->kind == 'F' ? a->tf : a->tb);
        rl_pp_unmark(ctx);
        if (to >= 0) {
            pend_peer = to;
            pend_comm = c;
        }
    }
    if (pend_peer >= 0)
        rl_wait(rl_send(pend_comm, out, pend_peer, 0));
    rl_step_end(ctx);
    return 0;
}

START_TEST(test_bubble_from_real_run)
{
    char err[256];
    rl_pp_kind kinds[] = { RL_PP_GPIPE, RL_PP_1F1B };
    for (int k = 0; k < 2; k++) {
        run_arg a = { rl_pp_schedule_new(kinds[k], 4, 8, 1, err, sizeof err), 0.010, 0.020 };
        rl_opts o = rl_test_opts(4, NULL);
        rl_trace *t = NULL;
        ck_assert_int_eq(rl_launch(&o, stage_rank, &a, &t), 0);
        rl_pp_trace_stats st;
        ck_assert_int_eq(rl_pp_bubble_from_trace(t, 0, &st, err, sizeof err), RL_OK);
        double want = 3.0 / 11; /* (p−1)/(m+p−1); the 16-byte messages cost microseconds */
        ck_assert_msg(fabs(st.bubble_frac - want) < 2e-3, "%s: measured %g, formula %g", rl_pp_kind_name(kinds[k]),
                      st.bubble_frac, want);
        ck_assert(fabs(st.peak_inflight[0] - (k == 0 ? 8 : 4)) < 1e-9);
        rl_trace_free(t);
        rl_pp_schedule_free(a.s);
    }
}
END_TEST

Suite *pipeline_suite(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bubble_formulas);
    tcase_add_test(tc, test_peak_inflight);
    tcase_add_test(tc, test_zb_h1);
    tcase_add_test(tc, test_validator);
    tcase_add_test(tc, test_p2p_cost);
    tcase_add_test(tc, test_bubble_from_synthetic_trace);
    tcase_add_test(tc, test_bubble_from_real_run);
    tcase_add_test(tc, test_tick_table);
    suite_add_tcase(s, tc);
    return s;
}
