/* grade29.c — the grader of Lab 29 (ZeRO-1/2/3 and FSDP). One Check test per graded
 * behaviour, grouped by step (29.1–29.5), run by grade.c. Learner code runs on simulated
 * ranks (rl_launch); references come from common/ — the memory and traffic formulas of
 * calc.h (rl_calc_zero), and a one-rank DDP+AdamW baseline computed here with the model and
 * optimizer of common/: one rank plays every rank's micro-batch in turn, sums the
 * gradients in rank order in fp32 as the collectives do (rounding to bf16 where a
 * collective's output is bf16) and takes rl_model_adamw_step — never the solution file.
 * Built twice: against labs/29_zero_fsdp/zero.c and against solutions/29_zero_fsdp/zero.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bf16.h"
#include "calc.h"
#include "grade.h"
#include "zero.h"

#define MAXR 16

/* ================================================================== shared helpers */

typedef struct rank_res {
    int rc;
    char err[600];
} rank_res;

static void note_err(rank_res *rr, rl_ctx *ctx, int rc, const char *what)
{
    rr->rc = rc;
    const char *m = rl_last_error(ctx);
    snprintf(rr->err, sizeof rr->err, "%s returned %d (%s)%s%s", what, rc, rl_status_name(rc), m[0] ? ": " : "", m);
}

/* Options of a quiet sim run with a watchdog well inside the test's time limit. */
static rl_opts grade_opts(int n, const rl_hw *hw)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.hw = hw;
    o.timeout_s = 4.0 * rl_grade_time_scale();
    return o;
}

/* A profile of 2 nodes with 2 GPUs each (h100-2node-ib's links): 4 ranks whose HSDP
 * replica groups cross nodes. */
static rl_hw hw_2x2;
static const rl_hw *grade_hw_2x2(void)
{
    hw_2x2 = *rl_hw_find("h100-2node-ib");
    hw_2x2.name = "2x2-ib";
    hw_2x2.gpus_per_node = 2;
    hw_2x2.nodes = 2;
    return &hw_2x2;
}

/* The grading model: an MLP of 4 blocks, hidden 128, bf16 params and grads. */
static rl_model_config grade_model(void)
{
    rl_model_config mc = rl_model_config_default(RL_MODEL_MLP);
    mc.hidden = 128;
    mc.layers = 4;
    mc.out_dim = 16;
    mc.param_dtype = RL_BF16;
    mc.grad_dtype = RL_BF16;
    return mc;
}

static zero_config grade_zero(zero_stage st)
{
    zero_config z;
    memset(&z, 0, sizeof z);
    z.stage = st;
    z.wrap_per_block = 1;
    z.forward_prefetch = z.backward_prefetch = 1;
    z.group = 2;
    z.adamw = rl_adamw_defaults();
    z.adamw.lr = 1e-3f;
    return z;
}

#define MB 8       /* samples per rank per step */
#define SEED 11    /* data seed */

/* ------------------------------------------------------------------ the baseline */

/* One rank replays a DDP+AdamW run of W ranks in groups of G (G = W: plain data parallel):
 * every step, each rank's gradients (bf16, its own micro-batch) are summed in fp32 in rank
 * order inside each group and rounded to bf16 (a reduce-scatter), the group sums summed in
 * group order and rounded (the all-reduce across groups), scaled by 1/W, and AdamW steps.
 * out receives the parameters (registration order, Ψ floats). */
static void baseline(const rl_model_config *mc, int W, int G, int steps, float lr, float *out, int64_t psi)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, mc);
    rl_data *data = rl_data_regression(ctx, mc->hidden, mc->out_dim, SEED);
    ck_assert(m && data);
    rl_adamw_cfg ac = rl_adamw_defaults();
    ac.lr = lr;
    rl_model_optim *opt = rl_model_adamw_new(m, ac);
    float *grp = calloc((size_t)psi, sizeof *grp), *tot = calloc((size_t)psi, sizeof *tot);
    float *g = calloc((size_t)psi, sizeof *g);
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    for (int s = 0; s < steps; s++) {
        memset(tot, 0, (size_t)psi * sizeof *tot);
        for (int q = 0; q < W / G; q++) {
            for (int j = 0; j < G; j++) {
                int r = q * G + j;
                ck_assert(rl_model_zero_grad(m) == 0);
                ck_assert(rl_data_get(data, ctx, s, (int64_t)r * MB, MB, &batch) == 0);
                ck_assert(rl_model_forward(m, &batch, NULL) == 0);
                ck_assert(rl_model_backward(m, 1.0f) == 0);
                int64_t off = 0;
                for (int i = 0; i < m->nparams; i++) {
                    rl_tensor_to_f32(m->params[i].grad, g + off, m->params[i].numel);
                    off += m->params[i].numel;
                }
                for (int64_t k = 0; k < psi; k++)
                    grp[k] = j ? grp[k] + g[k] : g[k];
            }
            for (int64_t k = 0; k < psi; k++) {
                float v = rl_round_bf16(grp[k]);
                tot[k] = q ? tot[k] + v : v;
            }
        }
        int64_t off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_tensor_from_f32(m->params[i].grad, tot + off, m->params[i].numel); /* rounds to bf16 */
            if (W > 1)
                rl_scale(ctx, m->params[i].grad, 1.0f / (float)W);
            off += m->params[i].numel;
        }
        ck_assert(rl_model_adamw_step(opt) == 0);
    }
    int64_t off = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].value, out + off, m->params[i].numel);
        off += m->params[i].numel;
    }
    free(grp);
    free(tot);
    free(g);
    rl_batch_free(&batch);
    rl_model_optim_free(opt);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

/* ------------------------------------------------------------------ a distributed run */

typedef struct train_case {
    rl_model_config mc;
    zero_config zc;
    int ranks, steps;
    const rl_hw *hw;
    int64_t psi;
    float *params[MAXR];            /* per rank, Ψ floats; NaN where the rank holds no copy */
    rank_res r[MAXR];
    int nunits;
    double backward_end[MAXR];      /* compute-stream time when the last backward ended */
    rl_unit_hook engine_post_backward;
    rl_trace *trace;                /* with want_trace: the run's trace */
    int want_trace;
} train_case;

static train_case *cur_case; /* the case running (tests run forked, one at a time) */

/* Wraps the engine's post-backward callback: after model unit 0 (the end of backward) it
 * notes the time. */
static int spy_post_backward(rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    train_case *c = cur_case;
    int rc = c->engine_post_backward ? c->engine_post_backward(mu, arg) : 0;
    if (mu->index == 0)
        c->backward_end[rl_rank(e->ctx)] = rl_stream_time(e->ctx, RL_STREAM_COMPUTE);
    return rc;
}

static int train_rank(rl_ctx *ctx, void *arg)
{
    train_case *c = arg;
    int w = rl_rank(ctx);
    rank_res *rr = &c->r[w];
    rl_model *m = rl_model_new(ctx, &c->mc);
    rl_data *data = m ? rl_data_regression(ctx, c->mc.hidden, c->mc.out_dim, SEED) : NULL;
    if (!m || !data) {
        note_err(rr, ctx, RL_ERR_ARG, "the grader's model");
        rl_data_free(data);
        rl_model_free(m);
        return 0;
    }
    rl_clear_error(ctx);
    zero_engine *e = zero_engine_new(m, rl_comm_world(ctx), &c->zc);
    if (!e) {
        note_err(rr, ctx, strstr(rl_last_error(ctx), "not implemented") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG,
                 "zero_engine_new");
        rl_data_free(data);
        rl_model_free(m);
        return 0;
    }
    c->nunits = e->nunits;
    c->engine_post_backward = m->post_backward;
    m->post_backward = spy_post_backward;
    m->unit_arg = e;
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    for (int s = 0; s < c->steps && !rr->rc; s++) {
        rl_clear_error(ctx);
        rl_step_begin(ctx, s);
        int rc = zero_train_step(e, data, s, MB, &batch, NULL);
        rl_step_end(ctx);
        if (rc)
            note_err(rr, ctx, rc, "zero_train_step");
    }
    /* this rank's copy of the parameters */
    float *out = c->params[w];
    for (int64_t k = 0; k < c->psi; k++)
        out[k] = NAN;
    if (!rr->rc) {
        int64_t off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_param *p = &m->params[i];
            zero_unit *U = &e->units[e->unit_of_param[i]];
            if (e->flat_param) {
                rl_tensor_to_f32(p->value, out + off, p->numel);
            } else {
                /* stage 3 / HSDP: the elements of this rank's piece of p's unit */
                int64_t lo = (int64_t)e->rank * U->shard, pos = e->offset_in_unit[i];
                for (int64_t k = 0; k < p->numel; k++)
                    if (pos + k >= lo && pos + k < lo + U->shard)
                        out[off + k] = rl_tensor_get(e->param_shard, U->shard_off + pos + k - lo);
            }
            off += p->numel;
        }
    }
    m->post_backward = c->engine_post_backward;
    rl_batch_free(&batch);
    zero_engine_free(e);
    rl_data_free(data);
    rl_model_free(m);
    return 0;
}

static void case_init(train_case *c, zero_stage st, int ranks, int steps)
{
    memset(c, 0, sizeof *c);
    c->mc = grade_model();
    c->zc = grade_zero(st);
    c->ranks = ranks;
    c->steps = steps;
    c->hw = rl_hw_find("h100-nvlink");
}

static void case_free(train_case *c)
{
    for (int r = 0; r < MAXR; r++)
        free(c->params[r]);
    rl_trace_free(c->trace);
}

/* Runs the case on its ranks; ends the test with the most useful message on a failure. */
static void case_run(train_case *c, const char *what)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, &c->mc);
    c->psi = rl_model_numel(m);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
    for (int r = 0; r < c->ranks; r++)
        c->params[r] = malloc((size_t)c->psi * sizeof(float));
    cur_case = c;
    rl_opts o = grade_opts(c->ranks, c->hw);
    int rc = rl_launch(&o, train_rank, c, c->want_trace ? &c->trace : NULL);
    for (int r = 0; r < c->ranks; r++)
        if (c->r[r].rc)
            ck_abort_msg("%s on %d ranks, rank %d: %s", what, c->ranks, r, c->r[r].err);
    if (rc == RL_ERR_HANG)
        ck_abort_msg("%s on %d ranks never finished: the watchdog found a collective that never completed (every "
                     "rank must issue the same collectives in the same order). The report is below.", what, c->ranks);
    if (rc)
        ck_abort_msg("%s on %d ranks failed: %s (the runtime's report is below)", what, c->ranks, rl_status_name(rc));
}

/* Compares every rank's parameters with the baseline: within one bf16 step (2^-8 relative)
 * plus 5% of the learning rate; every element must be held by some rank. */
static void check_params(const train_case *c, int group, const char *what)
{
    float *ref = malloc((size_t)c->psi * sizeof *ref);
    baseline(&c->mc, c->ranks, group, c->steps, c->zc.adamw.lr, ref, c->psi);
    double lr = c->zc.adamw.lr;
    int64_t held = 0, k_bad = -1, nbad = 0;
    int r_bad = -1;
    for (int64_t k = 0; k < c->psi; k++) {
        int any = 0;
        for (int r = 0; r < c->ranks; r++) {
            float v = c->params[r][k];
            if (isnan(v))
                continue;
            any = 1;
            double tol = fabs(ref[k]) / 256.0 + 0.05 * lr;
            if (!(fabs(v - ref[k]) <= tol) && !nbad++)
                k_bad = k, r_bad = r;
        }
        held += any;
    }
    if (nbad) {
        ck_abort_msg("%s: after %d steps %lld parameter values (counting every rank's copy) differ from the DDP+AdamW baseline; first: element %lld "
                     "(registration order) on rank %d = %.6g, baseline %.6g (lr %g). Common causes: the gradients "
                     "not averaged (÷ data-parallel size), a skipped all-gather of the updated parameters, a wrong "
                     "piece offset, a stale gathered unit", what, c->steps, (long long)nbad, (long long)k_bad, r_bad,
                     c->params[r_bad][k_bad], ref[k_bad], lr);
    }
    ck_assert_msg(held == c->psi, "%s: only %lld of the %lld parameters are held by any rank after the run", what,
                  (long long)held, (long long)c->psi);
    free(ref);
}

/* ------------------------------------------------------------------ whole runs (support) */

static zero_run_config run_config(zero_stage st, int ranks, const rl_hw *hw)
{
    zero_run_config rc = zero_run_config_default();
    rc.opts = grade_opts(ranks, hw);
    rc.model = grade_model();
    rc.zero = grade_zero(st);
    rc.micro_batch = MB;
    rc.steps = 2;
    rc.data_seed = SEED;
    return rc;
}

static void run_or_fail(const zero_run_config *rc, zero_run_stats *s, const char *what)
{
    int st = zero_run(rc, s);
    ck_assert_msg(st == 0, "%s on %d ranks failed: %s; see the output below", what, rc->opts.ranks,
                  rl_status_name(st));
}

/* Runs stage st on 4 ranks with the default profile (run_config) and returns what it measured. */
static zero_run_stats run_stage4(zero_stage st, const char *what)
{
    zero_run_config rc = run_config(st, 4, NULL);
    zero_run_stats s;
    run_or_fail(&rc, &s, what);
    return s;
}

/* The formula's per-rank bytes, written out here: bf16 params and grads, fp32 master, m, v. */
static void formula(double psi, int n, zero_stage st, double *p, double *g, double *o)
{
    *p = 2 * psi, *g = 2 * psi, *o = 12 * psi;
    if (st >= ZERO_STAGE1)
        *o /= n;
    if (st >= ZERO_STAGE2)
        *g /= n;
    if (st >= ZERO_STAGE3)
        *p /= n;
}

/* Bytes within 1% (padding of each unit to a multiple of n) of the expected value. */
static int near(double got, double want) { return fabs(got - want) <= 0.01 * want + 64; }

static void check_states(const zero_run_stats *s, zero_stage st, int n, const char *what)
{
    double p, g, o;
    formula((double)s->params, n, st, &p, &g, &o);
    const char *names[3] = { "param", "grad", "optim" };
    double want[3] = { p, g, o };
    int cat[3] = { RL_MEM_PARAM, RL_MEM_GRAD, RL_MEM_OPTIM };
    for (int i = 0; i < 3; i++)
        ck_assert_msg(near((double)s->mem_current[cat[i]], want[i]),
                      "%s: rank 0 holds %lld bytes of %s after the step (memory account); the formula gives %.0f "
                      "(Ψ = %lld, N = %d)", what, (long long)s->mem_current[cat[i]], names[i], want[i],
                      (long long)s->params, n);
}

static double calc_traffic(double psi, int W, int G, rl_calc_zero_kind k)
{
    rl_calc_zero_in in = { psi, W, 0, G, 2 };
    rl_calc_zero_out out;
    ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
    return out.traffic_bytes[k];
}

/* ================================================================== 29.1 memory model */

static void check_mem(double psi, int n, zero_stage st, double k, int group)
{
    zero_mem got;
    memset(&got, 0, sizeof got);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int rc = zero_bytes_per_rank(ctx, psi, n, st, k, group, &got);
    if (rc)
        ck_abort_msg("zero_bytes_per_rank(psi=%g, n=%d, %s, k=%g, group=%d) returned %d (%s): %s", psi, n,
                     zero_stage_name(st), k, group, rc, rl_status_name(rc), rl_last_error(ctx));
    rl_ctx_free_standalone(ctx);
    rl_calc_zero_in in = { psi, n, k, group, 2 };
    rl_calc_zero_out out;
    ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
    double want = out.bytes[st == ZERO_HSDP ? RL_CALC_HSDP : (int)st];
    double kk = k > 0 ? k : 12, G = st == ZERO_HSDP ? out.group : n;
    double p = 2 * psi, g = 2 * psi, o = kk * psi;
    if (st == ZERO_HSDP)
        p /= G, g /= G, o /= G;
    else
        formula(psi, n, st, &p, &g, &o), o = o / 12 * kk;
    double tol = 1e-9 * want + 1e-6;
    ck_assert_msg(fabs(got.total - want) <= tol,
                  "Ψ = %g parameters, N = %d, %s, K = %g%s: total %.6g bytes; the cost model (calc.h) says %.6g bytes "
                  "(%.4g GB)", psi, n, zero_stage_name(st), kk, st == ZERO_HSDP ? " (hsdp group)" : "", got.total,
                  want, want / 1e9);
    ck_assert_msg(fabs(got.param - p) <= tol && fabs(got.grad - g) <= tol && fabs(got.optim - o) <= tol,
                  "Ψ = %g, N = %d, %s, K = %g: param/grad/optim = %.6g / %.6g / %.6g bytes; expected %.6g / %.6g / "
                  "%.6g", psi, n, zero_stage_name(st), kk, got.param, got.grad, got.optim, p, g, o);
    ck_assert_msg(fabs(got.gb - want / 1e9) <= 1e-9 * want / 1e9 + 1e-12 &&
                  fabs(got.gib - want / 1073741824.0) <= 1e-9 * want / 1073741824.0 + 1e-12,
                  "Ψ = %g, N = %d, %s: gb = %.6g and gib = %.6g; %.6g bytes are %.6g GB (1e9 bytes) and %.6g GiB "
                  "(2^30 bytes)", psi, n, zero_stage_name(st), got.gb, got.gib, want, want / 1e9,
                  want / 1073741824.0);
}

START_TEST(t_mem_paper)
{
    /* the ZeRO paper's example: Ψ = 7.5B on Nd = 64 (120, 31.4, 16.6, 1.9 GB) */
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
        check_mem(7.5e9, 64, (zero_stage)st, 12, 0);
}
END_TEST

START_TEST(t_mem_7b)
{
    /* the course's example: 7B on 8 GPUs (112, 38.5, 26.25, 14 GB), K left at its default */
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
        check_mem(7e9, 8, (zero_stage)st, 0, 0);
}
END_TEST

START_TEST(t_mem_sizes)
{
    double psis[] = { 1e6, 1.3e9, 13e9, 70e9, 175e9, 1e12 };
    int ns[] = { 1, 2, 3, 16, 1024 };
    double ks[] = { 12, 16, 8 };
    for (size_t i = 0; i < sizeof psis / sizeof psis[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
                for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
                    check_mem(psis[i], ns[j], (zero_stage)st, ks[q], 0);
    zero_mem z;
    int rc = zero_bytes_per_rank(NULL, 0, 8, ZERO_STAGE3, 12, 0, &z);
    ck_assert_msg(rc == 0 && z.total == 0 && z.gb == 0, "Ψ = 0 parameters: expected 0 bytes (got rc %d, %g bytes)", rc,
                  z.total);
}
END_TEST

START_TEST(t_mem_hsdp)
{
    int cases[][2] = { { 16, 8 }, { 64, 8 }, { 8, 8 }, { 8, 1 }, { 12, 4 }, { 1024, 8 }, { 6, 3 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_mem(70e9, cases[i][0], ZERO_HSDP, 12, cases[i][1]);
        check_mem(7.5e9, cases[i][0], ZERO_HSDP, 16, cases[i][1]);
    }
}
END_TEST

START_TEST(t_mem_bad_input)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    zero_mem out;
    struct { double psi; int n; int st; int group; const char *what; } bad[] = {
        { -1, 8, ZERO_STAGE1, 0, "psi = -1" },           { NAN, 8, ZERO_STAGE1, 0, "psi = NaN" },
        { 7e9, 0, ZERO_STAGE2, 0, "n = 0" },             { 7e9, 8, 9, 0, "stage 9" },
        { 7e9, 8, -1, 0, "stage -1" },                   { 7e9, 8, ZERO_HSDP, 3, "hsdp group 3 of 8 ranks" },
        { 7e9, 8, ZERO_HSDP, 0, "hsdp group 0" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = zero_bytes_per_rank(ctx, bad[i].psi, bad[i].n, (zero_stage)bad[i].st, 12, bad[i].group, &out);
        ck_assert_msg(rc == RL_ERR_ARG, "%s must be refused with RL_ERR_ARG (got %d, %s)", bad[i].what, rc,
                      rl_status_name(rc));
    }
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ================================================================== 29.2 ZeRO-1 */

static void params_case(zero_stage st, int ranks, int group, int wrap, int prefetch, const rl_hw *hw, const char *what)
{
    train_case *c = malloc(sizeof *c);
    case_init(c, st, ranks, 3);
    c->zc.wrap_per_block = wrap;
    c->zc.forward_prefetch = c->zc.backward_prefetch = prefetch;
    c->zc.group = group;
    if (hw)
        c->hw = hw;
    case_run(c, what);
    check_params(c, st == ZERO_HSDP ? group : ranks, what);
    case_free(c);
    free(c);
}

START_TEST(t_z1_params) { params_case(ZERO_STAGE1, 4, 4, 1, 1, NULL, "ZeRO-1, 4 ranks, 3 steps"); }
END_TEST

START_TEST(t_z1_params_odd) { params_case(ZERO_STAGE1, 3, 3, 1, 1, NULL, "ZeRO-1, 3 ranks (padded units), 3 steps"); }
END_TEST

START_TEST(t_z1_memory)
{
    zero_run_stats s = run_stage4(ZERO_STAGE1, "ZeRO-1");
    check_states(&s, ZERO_STAGE1, 4, "ZeRO-1 on 4 ranks");
    double p, g, o;
    formula((double)s.params, 4, ZERO_STAGE1, &p, &g, &o);
    ck_assert_msg(near((double)s.mem_peak[RL_MEM_GRAD], g) && near((double)s.mem_peak[RL_MEM_OPTIM], o),
                  "ZeRO-1: gradient / optimizer peaks in the step are %lld / %lld bytes; expected %.0f / %.0f (no "
                  "extra gradient or optimizer buffers)", (long long)s.mem_peak[RL_MEM_GRAD],
                  (long long)s.mem_peak[RL_MEM_OPTIM], g, o);
}
END_TEST

START_TEST(t_z1_traffic)
{
    zero_run_stats s = run_stage4(ZERO_STAGE1, "ZeRO-1");
    double want = calc_traffic((double)s.params, 4, 4, RL_CALC_ZERO1);
    ck_assert_msg(near((double)s.shard_sent, want),
                  "ZeRO-1 on 4 ranks: rank 0 sent %lld bytes in one step; a reduce-scatter of the gradients and an "
                  "all-gather of the parameters send 2(N-1)/N x Ψ x 2 bytes = %.0f (Ψ = %lld)", (long long)s.shard_sent,
                  want, (long long)s.params);
    ck_assert_msg(s.all_reduces == 0 && s.reduce_scatters == s.nunits && s.all_gathers == s.nunits,
                  "ZeRO-1: %lld reduce-scatter, %lld all-gather and %lld all-reduce calls per step; expected one "
                  "reduce-scatter and one all-gather per unit (%d units), no all-reduce", (long long)s.reduce_scatters,
                  (long long)s.all_gathers, (long long)s.all_reduces, s.nunits);
}
END_TEST

/* ================================================================== 29.3 ZeRO-2 */

START_TEST(t_z2_params) { params_case(ZERO_STAGE2, 4, 4, 1, 1, NULL, "ZeRO-2, 4 ranks, 3 steps"); }
END_TEST

START_TEST(t_z2_grad_memory)
{
    zero_run_stats s = run_stage4(ZERO_STAGE2, "ZeRO-2");
    check_states(&s, ZERO_STAGE2, 4, "ZeRO-2 on 4 ranks");
    double shard = 2.0 * (double)s.params / 4, bound = shard + 2.0 * 2 * (double)s.max_unit_padded;
    ck_assert_msg((double)s.mem_peak[RL_MEM_GRAD] <= 1.01 * bound,
                  "ZeRO-2: gradient memory peaked at %lld bytes in the step; the gradient shard is %.0f bytes "
                  "(2Ψ/N) and at most two unit buckets (%lld bytes each) may be alive: %.0f. A full gradient buffer "
                  "(2Ψ = %.0f bytes) defeats ZeRO-2: free each bucket once its reduce-scatter is done",
                  (long long)s.mem_peak[RL_MEM_GRAD], shard, (long long)(2 * s.max_unit_padded), bound,
                  2.0 * (double)s.params);
}
END_TEST

START_TEST(t_z2_traffic)
{
    zero_run_stats s = run_stage4(ZERO_STAGE2, "ZeRO-2");
    double want = calc_traffic((double)s.params, 4, 4, RL_CALC_ZERO2);
    ck_assert_msg(near((double)s.shard_sent, want),
                  "ZeRO-2 on 4 ranks: rank 0 sent %lld bytes in one step; expected 2(N-1)/N x Ψ x 2 bytes = %.0f, the "
                  "same as DDP", (long long)s.shard_sent, want);
    ck_assert_msg(s.all_reduces == 0 && s.reduce_scatters == s.nunits,
                  "ZeRO-2: %lld reduce-scatter and %lld all-reduce calls per step; expected one reduce-scatter per "
                  "bucket (%d units) and no all-reduce", (long long)s.reduce_scatters, (long long)s.all_reduces,
                  s.nunits);
}
END_TEST

START_TEST(t_z2_in_backward)
{
    train_case *c = malloc(sizeof *c);
    case_init(c, ZERO_STAGE2, 4, 2);
    c->want_trace = 1;
    case_run(c, "ZeRO-2, 4 ranks");
    for (int r = 0; r < c->ranks; r++) {
        int total = 0, early = 0;
        for (size_t i = 0; i < c->trace->n; i++) {
            const rl_trace_event *ev = &c->trace->ev[i];
            if (ev->rank != r || ev->tags[RL_TAG_STEP] != c->steps - 1 || ev->stream != RL_STREAM_COMM ||
                ev->cat != RL_CAT_COMM || !strstr(ev->name, "reduce_scatter"))
                continue;
            total++;
            early += ev->vstart < c->backward_end[r];
        }
        ck_assert_msg(total == c->nunits && 2 * early >= total,
                      "ZeRO-2: rank %d ran %d reduce-scatter(s) in the step (%d units), %d of them started before "
                      "backward ended; the grad-ready hook launches each bucket's reduce-scatter (RL_ASYNC) the "
                      "moment its last gradient is ready, so most of them travel while backward goes on", r, total,
                      c->nunits, early);
    }
    case_free(c);
    free(c);
}
END_TEST

/* ================================================================== 29.4 ZeRO-3 / FSDP */

START_TEST(t_z3_params) { params_case(ZERO_STAGE3, 4, 4, 1, 1, NULL, "ZeRO-3, per-block units, prefetch, 4 ranks"); }
END_TEST

START_TEST(t_z3_params_variants)
{
    params_case(ZERO_STAGE3, 4, 4, 0, 0, NULL, "ZeRO-3, one unit for the whole model, no prefetch, 4 ranks");
    params_case(ZERO_STAGE3, 3, 3, 1, 0, NULL, "ZeRO-3, per-block units, no prefetch, 3 ranks");
}
END_TEST

START_TEST(t_z3_memory)
{
    zero_run_stats s = run_stage4(ZERO_STAGE3, "ZeRO-3");
    check_states(&s, ZERO_STAGE3, 4, "ZeRO-3 on 4 ranks (every gathered unit must be freed after use)");
    double shard = 2.0 * (double)s.params / 4, bound = shard + 2.0 * (double)s.max_pair_padded;
    ck_assert_msg((double)s.mem_peak[RL_MEM_PARAM] <= 1.01 * bound,
                  "ZeRO-3: parameter memory peaked at %lld bytes; the shard (2Ψ/N = %.0f bytes) plus two gathered "
                  "units (the largest pair: %lld bytes) is %.0f. Free each unit after its forward and after its "
                  "backward", (long long)s.mem_peak[RL_MEM_PARAM], shard, (long long)(2 * s.max_pair_padded), bound);
    ck_assert_msg((double)s.mem_peak[RL_MEM_GRAD] <= 1.01 * (shard + 4.0 * (double)s.max_unit_padded),
                  "ZeRO-3: gradient memory peaked at %lld bytes; expected at most the shard (%.0f) + two buckets",
                  (long long)s.mem_peak[RL_MEM_GRAD], shard);
}
END_TEST

START_TEST(t_z3_wrap)
{
    zero_run_config rc = run_config(ZERO_STAGE3, 4, NULL);
    zero_run_stats per, whole;
    run_or_fail(&rc, &per, "ZeRO-3, per-block units");
    rc.zero.wrap_per_block = 0;
    run_or_fail(&rc, &whole, "ZeRO-3, one unit for the whole model");
    double full = 2.0 * (double)per.params, shard = full / 4;
    ck_assert_msg(whole.nunits == 1 && (double)whole.mem_peak[RL_MEM_PARAM] >= shard + full,
                  "ZeRO-3 without a wrap policy (%d unit): parameter peak %lld bytes; gathering the whole model "
                  "holds the shard + 2Ψ = %.0f bytes", whole.nunits, (long long)whole.mem_peak[RL_MEM_PARAM],
                  shard + full);
    ck_assert_msg((double)per.mem_peak[RL_MEM_PARAM] < 0.75 * (double)whole.mem_peak[RL_MEM_PARAM],
                  "ZeRO-3: per-block units peak at %lld bytes of parameters, one unit for the whole model at %lld; "
                  "per-block units should hold far less (shard + two units)", (long long)per.mem_peak[RL_MEM_PARAM],
                  (long long)whole.mem_peak[RL_MEM_PARAM]);
    printf("parameter peak: per-block units %lld bytes, whole model %lld bytes\n", (long long)per.mem_peak[RL_MEM_PARAM],
           (long long)whole.mem_peak[RL_MEM_PARAM]);
}
END_TEST

START_TEST(t_z3_traffic)
{
    zero_run_stats s = run_stage4(ZERO_STAGE3, "ZeRO-3");
    double want = calc_traffic((double)s.params, 4, 4, RL_CALC_ZERO3);
    double ddp = calc_traffic((double)s.params, 4, 4, RL_CALC_DDP);
    ck_assert_msg(near((double)s.shard_sent, want),
                  "ZeRO-3 on 4 ranks: rank 0 sent %lld bytes in one step (%.2fx DDP); expected 3(N-1)/N x Ψ x 2 bytes "
                  "= %.0f = 1.5x DDP: an all-gather in forward, another in backward, a reduce-scatter of the "
                  "gradients", (long long)s.shard_sent, (double)s.shard_sent / ddp, want);
    ck_assert_msg(s.all_gathers == 2 * s.nunits && s.reduce_scatters == s.nunits && s.all_reduces == 0,
                  "ZeRO-3: %lld all-gather and %lld reduce-scatter calls per step with %d units; expected 2 per unit "
                  "(forward, backward) and 1 per unit. Prefetching a unit that is not needed next costs extra "
                  "gathers", (long long)s.all_gathers, (long long)s.reduce_scatters, s.nunits);
}
END_TEST

START_TEST(t_z3_prefetch)
{
    const rl_hw *hw = rl_hw_find("a100-pcie");
    zero_run_config rc = run_config(ZERO_STAGE3, 4, hw);
    zero_run_stats pf, none;
    run_or_fail(&rc, &pf, "ZeRO-3 with prefetch");
    rc.zero.forward_prefetch = rc.zero.backward_prefetch = 0;
    run_or_fail(&rc, &none, "ZeRO-3 without prefetch");
    printf("exposed comm on a100-pcie: with prefetch %.1f us, without %.1f us\n", pf.exposed_comm * 1e6,
           none.exposed_comm * 1e6);
    ck_assert_msg(none.exposed_comm > 0 && pf.exposed_comm <= 0.6 * none.exposed_comm,
                  "ZeRO-3 on a100-pcie: exposed comm %.1f us with prefetch, %.1f us without; prefetching the unit "
                  "needed next (forward u+1, backward u-1) while the current one computes should hide at least 40%% "
                  "of it", pf.exposed_comm * 1e6, none.exposed_comm * 1e6);
    ck_assert_msg(pf.all_gathers == 2 * pf.nunits,
                  "ZeRO-3 with prefetch: %lld all-gathers per step for %d units; expected %d (each unit once in "
                  "forward, once in backward)", (long long)pf.all_gathers, pf.nunits, 2 * pf.nunits);
    zero_run_config fo = run_config(ZERO_STAGE3, 4, hw);
    fo.zero.backward_prefetch = 0;
    zero_run_stats fwd;
    run_or_fail(&fo, &fwd, "ZeRO-3 with forward prefetch only");
    ck_assert_msg(fwd.exposed_comm < none.exposed_comm && pf.exposed_comm < fwd.exposed_comm,
                  "ZeRO-3: exposed comm without prefetch %.1f us, forward_prefetch only %.1f us, both %.1f us; each "
                  "prefetch should hide part of it", none.exposed_comm * 1e6, fwd.exposed_comm * 1e6,
                  pf.exposed_comm * 1e6);
}
END_TEST

/* ================================================================== 29.5 hybrid sharding */

typedef struct mesh_case {
    int group;
    rank_res r[MAXR];
    int shard_size[MAXR], shard_rank[MAXR], rep_size[MAXR], rep_rank[MAXR];
    int shard_g[MAXR][MAXR], rep_g[MAXR][MAXR];
    int refused[MAXR];
} mesh_case;

static int mesh_rank(rl_ctx *ctx, void *arg)
{
    mesh_case *c = arg;
    int w = rl_rank(ctx);
    rl_comm *sh = NULL, *rep = NULL;
    rl_clear_error(ctx);
    int rc = hsdp_make_mesh(rl_comm_world(ctx), c->group, &sh, &rep);
    if (rc) {
        if (rc == RL_ERR_ARG)
            c->refused[w] = 1;
        else
            note_err(&c->r[w], ctx, rc, "hsdp_make_mesh");
        return 0;
    }
    if (!sh || !rep) {
        note_err(&c->r[w], ctx, RL_ERR_ARG, "hsdp_make_mesh (a NULL communicator)");
        return 0;
    }
    c->shard_size[w] = rl_comm_size(sh);
    c->shard_rank[w] = rl_comm_rank(sh);
    c->rep_size[w] = rl_comm_size(rep);
    c->rep_rank[w] = rl_comm_rank(rep);
    for (int i = 0; i < c->shard_size[w] && i < MAXR; i++)
        c->shard_g[w][i] = rl_comm_global_rank(sh, i);
    for (int i = 0; i < c->rep_size[w] && i < MAXR; i++)
        c->rep_g[w][i] = rl_comm_global_rank(rep, i);
    rl_comm_free(sh);
    rl_comm_free(rep);
    return 0;
}

START_TEST(t_hsdp_mesh)
{
    int cases[][2] = { { 4, 2 }, { 8, 4 }, { 8, 2 }, { 6, 3 }, { 16, 8 }, { 4, 4 }, { 4, 1 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int W = cases[i][0], G = cases[i][1];
        mesh_case *c = calloc(1, sizeof *c);
        c->group = G;
        rl_opts o = grade_opts(W, W > 8 ? rl_hw_find("h100-2node-ib") : NULL);
        int rc = rl_launch(&o, mesh_rank, c, NULL);
        for (int w = 0; w < W; w++)
            if (c->r[w].rc)
                ck_abort_msg("hsdp_make_mesh(world %d, group %d), rank %d: %s", W, G, w, c->r[w].err);
        ck_assert_msg(rc == 0, "hsdp_make_mesh(world %d, group %d): the run failed (%s)", W, G, rl_status_name(rc));
        for (int w = 0; w < W; w++) {
            ck_assert_msg(!c->refused[w], "hsdp_make_mesh refused world %d, group %d (a valid mesh)", W, G);
            ck_assert_msg(c->shard_size[w] == G && c->shard_rank[w] == w % G && c->rep_size[w] == W / G &&
                          c->rep_rank[w] == w / G,
                          "world %d, group %d, rank %d: shard group %d ranks (index %d), replica group %d ranks "
                          "(index %d); expected %d (index %d) and %d (index %d)", W, G, w, c->shard_size[w],
                          c->shard_rank[w], c->rep_size[w], c->rep_rank[w], G, w % G, W / G, w / G);
            for (int k = 0; k < G; k++)
                ck_assert_msg(c->shard_g[w][k] == w - w % G + k,
                              "world %d, group %d: rank %d's shard group member %d is world rank %d; expected %d "
                              "(consecutive ranks, one node)", W, G, w, k, c->shard_g[w][k], w - w % G + k);
            for (int k = 0; k < W / G; k++)
                ck_assert_msg(c->rep_g[w][k] == k * G + w % G,
                              "world %d, group %d: rank %d's replica group member %d is world rank %d; expected %d",
                              W, G, w, k, c->rep_g[w][k], k * G + w % G);
        }
        free(c);
    }
    mesh_case *c = calloc(1, sizeof *c);
    c->group = 3;
    rl_opts o = grade_opts(4, NULL);
    rl_launch(&o, mesh_rank, c, NULL);
    for (int w = 0; w < 4; w++)
        ck_assert_msg(c->refused[w], "hsdp_make_mesh(world 4, group 3) must be refused with RL_ERR_ARG on every rank "
                      "(3 does not divide 4)");
    free(c);
}
END_TEST

START_TEST(t_hsdp_params)
{
    params_case(ZERO_HSDP, 4, 2, 1, 1, grade_hw_2x2(), "HSDP, 4 ranks in 2 groups of 2 (2 nodes of 2 GPUs)");
}
END_TEST

static void hsdp_traffic(int W, int G, const rl_hw *hw)
{
    zero_run_config rc = run_config(ZERO_HSDP, W, hw);
    rc.zero.group = G;
    if (W > 8)
        rc.model.layers = 2, rc.model.hidden = 64;
    zero_run_stats s;
    char what[96];
    snprintf(what, sizeof what, "HSDP on %d ranks (%s), groups of %d", W, hw->name, G);
    run_or_fail(&rc, &s, what);
    double psi = (double)s.params, R = (double)W / G;
    double intra = rl_ring_bytes_per_rank(RL_COLL_ALL_GATHER, G, 2 * psi) * 3;
    double inter = rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, (int)R, 2 * psi / G);
    ck_assert_msg(s.n == G, "%s: the shard group has %d ranks; expected %d", what, s.n, G);
    ck_assert_msg(near((double)s.shard_sent, intra),
                  "%s: rank 0 sent %lld bytes inside its shard group in one step; FULL_SHARD inside a group of G "
                  "sends 3(G-1)/G x Ψ x 2 bytes = %.0f", what, (long long)s.shard_sent, intra);
    ck_assert_msg(near((double)s.replica_sent, inter),
                  "%s: rank 0 sent %lld bytes across groups in one step; the all-reduce of its gradient piece "
                  "(Ψ/G elements) over R = %.0f replicas sends 2(R-1)/R x Ψ/G x 2 bytes = %.0f", what,
                  (long long)s.replica_sent, R, inter);
    double total = calc_traffic(psi, W, G, RL_CALC_HSDP);
    ck_assert_msg(near((double)(s.shard_sent + s.replica_sent), total),
                  "%s: %lld bytes in all; the cost model (calc.h hsdp) says %.0f", what,
                  (long long)(s.shard_sent + s.replica_sent), total);
    double per = 16.0 * psi / G;
    double states = (double)(s.mem_current[RL_MEM_PARAM] + s.mem_current[RL_MEM_GRAD] + s.mem_current[RL_MEM_OPTIM]);
    ck_assert_msg(near(states, per), "%s: %.0f bytes of model states on rank 0; (2+2+12)Ψ/G = %.0f", what, states,
                  per);
    printf("%s: inside the group %lld bytes, across groups %lld bytes per rank per step\n", what,
           (long long)s.shard_sent, (long long)s.replica_sent);
}

START_TEST(t_hsdp_traffic)
{
    hsdp_traffic(4, 2, grade_hw_2x2());
    if (!rl_grade_quick())
        hsdp_traffic(16, 8, rl_hw_find("h100-2node-ib"));
}
END_TEST

/* ------------------------------------------------------------------ answers file */

static rl_calc_zero_out zero_calc(double psi, int n)
{
    rl_calc_zero_in in = { psi, n, 12, 0, 2 };
    rl_calc_zero_out out;
    ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
    return out;
}

/* H1: 7B on 8 GPUs under 16Ψ accounting (GB), and ZeRO-1 in GiB. */
START_TEST(t_ans_7b)
{
    rl_calc_zero_out z = zero_calc(7e9, 8);
    CHECK_NUM("h1_ddp_gb", z.bytes[RL_CALC_DDP] / 1e9, 0.005);
    CHECK_NUM("h1_zero1_gb", z.bytes[RL_CALC_ZERO1] / 1e9, 0.005);
    CHECK_NUM("h1_zero2_gb", z.bytes[RL_CALC_ZERO2] / 1e9, 0.005);
    CHECK_NUM("h1_zero3_gb", z.bytes[RL_CALC_ZERO3] / 1e9, 0.005);
    CHECK_NUM("h1_zero1_gib", z.bytes[RL_CALC_ZERO1] / 1073741824.0, 0.005);
}
END_TEST

/* H2: the paper's Ψ = 7.5B, Nd = 64 (GB). */
START_TEST(t_ans_paper)
{
    rl_calc_zero_out z = zero_calc(7.5e9, 64);
    CHECK_NUM("h2_ddp_gb", z.bytes[RL_CALC_DDP] / 1e9, 0.01);
    CHECK_NUM("h2_zero1_gb", z.bytes[RL_CALC_ZERO1] / 1e9, 0.01);
    CHECK_NUM("h2_zero2_gb", z.bytes[RL_CALC_ZERO2] / 1e9, 0.01);
    CHECK_NUM("h2_zero3_gb", z.bytes[RL_CALC_ZERO3] / 1e9, 0.03);
}
END_TEST

/* H3: FSDP's extra traffic over DDP for a 70B model (paper's large-N figures, bf16) and its
 * time on 450 GB/s (NVLink4 each way, h100-nvlink). */
START_TEST(t_ans_70b)
{
    rl_calc_zero_out z = zero_calc(70e9, 1024);
    double extra = (z.traffic_paper[RL_CALC_ZERO3] - z.traffic_paper[RL_CALC_DDP]) * 2;
    CHECK_NUM("h3_extra_gb", extra / 1e9, 0.01);
    CHECK_NUM("h3_extra_s", extra / rl_hw_find("h100-nvlink")->intra.bw, 0.02);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_CHOICE("i1_three_psi", 'c');
    CHECK_CHOICE("i2_no_wrap", 'a');
    CHECK_CHOICE("i3_zero2_vs_zero3", 'd');
}
END_TEST

/* ================================================================== the table */

static const rl_grade_step steps29[] = {
    { "29.1", "memory model" },
    { "29.2", "ZeRO-1" },
    { "29.3", "ZeRO-2" },
    { "29.4", "ZeRO-3 / FSDP" },
    { "29.5", "hybrid sharding" },
};

static const rl_grade_test tests29[] = {
    { "29.1", "the paper's example: 7.5B on 64 GPUs", 4, 10, &t_mem_paper },
    { "29.1", "7B on 8 GPUs (16 psi accounting)", 3, 10, &t_mem_7b },
    { "29.1", "other model and cluster sizes, K = 8, 12, 16", 4, 10, &t_mem_sizes },
    { "29.1", "hybrid sharding groups", 3, 10, &t_mem_hsdp },
    { "29.1", "bad input refused", 2, 10, &t_mem_bad_input },
    { "29.1", "answers: 7B on 8 GPUs in GB and GiB", 3, 10, &t_ans_7b },
    { "29.1", "answers: the paper's 7.5B / 64 example", 2, 10, &t_ans_paper },
    { "29.2", "parameters after 3 steps = DDP+AdamW baseline", 8, 40, &t_z1_params },
    { "29.2", "3 ranks (padded units): same result", 3, 40, &t_z1_params_odd },
    { "29.2", "memory account: optimizer 12psi/N, params and grads 2psi", 5, 40, &t_z1_memory },
    { "29.2", "traffic per step 2psi (reduce-scatter + all-gather)", 4, 40, &t_z1_traffic },
    { "29.3", "parameters after 3 steps = DDP+AdamW baseline", 6, 40, &t_z2_params },
    { "29.3", "gradient memory 2psi/N + buckets, no full buffer", 7, 40, &t_z2_grad_memory },
    { "29.3", "traffic per step 2psi, one reduce-scatter per bucket", 4, 40, &t_z2_traffic },
    { "29.3", "reduce-scatters launched during backward", 4, 40, &t_z2_in_backward },
    { "29.4", "parameters after 3 steps = DDP+AdamW baseline", 7, 40, &t_z3_params },
    { "29.4", "whole-model unit, no prefetch, 3 ranks: same result", 4, 60, &t_z3_params_variants },
    { "29.4", "memory: shard + two units, all freed after the step", 6, 40, &t_z3_memory },
    { "29.4", "per-block units vs one unit: parameter peak", 4, 40, &t_z3_wrap },
    { "29.4", "traffic per step 3psi = 1.5x DDP, 2 gathers per unit", 5, 40, &t_z3_traffic },
    { "29.4", "prefetch hides comm (exposed comm drops)", 6, 60, &t_z3_prefetch },
    { "29.4", "answers: FSDP's extra traffic for 70B", 2, 10, &t_ans_70b },
    { "29.5", "2-D mesh from rl_comm_split", 5, 30, &t_hsdp_mesh },
    { "29.5", "parameters after 3 steps = baseline (2 nodes x 2)", 6, 40, &t_hsdp_params },
    { "29.5", "intra- vs inter-group traffic, memory (16psi/G)", 6, 60, &t_hsdp_traffic },
    { "29.5", "answers: interview questions", 3, 10, &t_ans_interview },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "29", "ZeRO-1/2/3 and FSDP", "labs/29_zero_fsdp/README.md", "labs/29_zero_fsdp/answers.txt",
        steps29, (int)(sizeof steps29 / sizeof steps29[0]), tests29, (int)(sizeof tests29 / sizeof tests29[0]),
    };
    return rl_grade_main(&lab, argc, argv);
}
