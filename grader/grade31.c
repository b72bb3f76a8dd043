/* grade31.c — the grader of Lab 31 (3D parallelism, MoE and failure debugging). One Check
 * test per graded behaviour, grouped by step (31.1–31.5), run by grade.c. References come
 * from common/: mesh.h (rl_mesh_*) for the layouts, a one-rank f32 rl_model + AdamW run for
 * the 3D step, a one-rank MoE computed here from ops.h / moe.h (rl_moe_plan_make,
 * rl_moe_aux_loss) for 31.3, diagnose.h's analyses over real fault runs for 31.4 and calc.h
 * (rl_calc_plan, rl_calc_moe, rl_calc_zero) for 31.5 and the answers — never the solution. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "grade.h"
#include "lab31.h"
#include "moe.h"
#include "rng.h"

static rl_opts gopts(int n)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.timeout_s = 4.0 * rl_grade_time_scale();
    return o;
}

/* ================================================================== 31.1 device mesh */

static void check_layout(int dp, int pp, int tp, int cp, int ep, rl_mesh_order order, const rl_hw *hw)
{
    rl_mesh_shape s = { dp, pp, tp, cp, ep, order };
    int W = dp * pp * tp * cp;
    rl_mesh ref;
    char e1[256], e2[256];
    ck_assert(rl_mesh_init(&ref, &s, W, hw, e1, sizeof e1) == 0);
    mesh_layout *L = calloc(1, sizeof *L);
    int rc = mesh_layout_make(&s, W, hw, L, e2, sizeof e2);
    ck_assert_msg(rc == 0, "mesh_layout_make(dp=%d pp=%d tp=%d cp=%d ep=%d, order %d) returned %d: %s", dp, pp, tp, cp,
                  ep, (int)order, rc, e2);
    int *grp = malloc(sizeof(int) * RL_MESH_MAX_RANKS);
    for (int r = 0; r < W; r++) {
        rl_mesh_coord c;
        rl_mesh_coord_of(&ref, r, &c);
        const rl_mesh_coord *g = &L->coord[r];
        ck_assert_msg(g->tp == c.tp && g->cp == c.cp && g->pp == c.pp && g->dp == c.dp && g->ep == c.ep &&
                      g->edp == c.edp,
                      "dp=%d pp=%d tp=%d cp=%d ep=%d (order %d): rank %d has tp=%d cp=%d pp=%d dp=%d ep=%d edp=%d; "
                      "expected tp=%d cp=%d pp=%d dp=%d ep=%d edp=%d (TP innermost)", dp, pp, tp, cp, ep, (int)order,
                      r, g->tp, g->cp, g->pp, g->dp, g->ep, g->edp, c.tp, c.cp, c.pp, c.dp, c.ep, c.edp);
        ck_assert_msg(L->node[r] == rl_mesh_node_of(&ref, r), "rank %d: node %d, expected %d", r, L->node[r],
                      rl_mesh_node_of(&ref, r));
        for (int d = 0; d < MESH_NDIMS; d++) {
            int n = rl_mesh_group(&ref, mesh_dim_bits((mesh_dim)d), r, grp, NULL);
            int pos = -1, cnt = 0;
            for (int q = 0; q < W; q++)
                cnt += L->group[d][q] == L->group[d][r];
            for (int i = 0; i < n; i++) {
                if (grp[i] == r)
                    pos = i;
                ck_assert_msg(L->group[d][grp[i]] == L->group[d][r],
                              "dp=%d pp=%d tp=%d cp=%d ep=%d: ranks %d and %d belong to one %s group but have group "
                              "ids %d and %d", dp, pp, tp, cp, ep, r, grp[i], mesh_dim_name((mesh_dim)d),
                              L->group[d][r], L->group[d][grp[i]]);
            }
            ck_assert_msg(cnt == n && L->index[d][r] == pos && L->size[d] == n,
                          "dp=%d pp=%d tp=%d cp=%d ep=%d: rank %d's %s group has %d ranks (size %d) at index %d; "
                          "expected %d ranks, index %d", dp, pp, tp, cp, ep, r, mesh_dim_name((mesh_dim)d), cnt,
                          L->size[d], L->index[d][r], n, pos);
        }
    }
    ck_assert_msg(L->tp_crosses_node == ref.tp_crosses_node && (!ref.tp_crosses_node || L->warning[0]),
                  "dp=%d pp=%d tp=%d on %d GPUs per node: tp_crosses_node = %d (warning '%s'); expected %d", dp, pp, tp,
                  ref.gpus_per_node, L->tp_crosses_node, L->warning, ref.tp_crosses_node);
    free(grp);
    free(L);
}

START_TEST(t_mesh_3d)
{
    int shapes[][3] = { { 2, 2, 2 }, { 1, 1, 1 }, { 4, 1, 2 }, { 1, 4, 2 }, { 2, 4, 1 }, { 8, 8, 8 }, { 3, 5, 2 },
                        { 16, 2, 4 }, { 2, 2, 16 } };
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_layout(shapes[i][0], shapes[i][1], shapes[i][2], 1, 1, RL_MESH_ORDER_TP_CP_PP_DP, hw);
        if (!rl_grade_quick())
            check_layout(shapes[i][0], shapes[i][1], shapes[i][2], 1, 1, RL_MESH_ORDER_TP_CP_PP_DP, NULL);
    }
}
END_TEST

START_TEST(t_mesh_cp_ep_order)
{
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    int shapes[][5] = { { 4, 2, 2, 1, 2 }, { 8, 1, 2, 2, 4 }, { 2, 2, 2, 2, 1 }, { 6, 2, 1, 1, 3 }, { 4, 4, 8, 2, 2 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int *s = shapes[i];
        check_layout(s[0], s[1], s[2], s[3], s[4], RL_MESH_ORDER_TP_CP_PP_DP, hw);
        check_layout(s[0], s[1], s[2], s[3], s[4], RL_MESH_ORDER_TP_CP_DP_PP, hw);
    }
}
END_TEST

START_TEST(t_mesh_bad)
{
    struct { int dp, pp, tp, cp, ep, world; const char *what; } bad[] = {
        { 2, 2, 2, 1, 1, 6, "dp=2 pp=2 tp=2 on 6 ranks" }, { 0, 2, 2, 1, 1, 0, "dp=0" },
        { 2, -1, 2, 1, 1, -4, "pp=-1" },                   { 4, 1, 2, 1, 3, 8, "ep=3 with dp=4" },
        { 2, 2, 2, 0, 1, 0, "cp=0" },                      { 8192, 1, 1, 1, 1, 8192, "8192 ranks" },
    };
    mesh_layout *L = calloc(1, sizeof *L);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl_mesh_shape s = { bad[i].dp, bad[i].pp, bad[i].tp, bad[i].cp, bad[i].ep, RL_MESH_ORDER_TP_CP_PP_DP };
        char err[256] = "";
        int rc = mesh_layout_make(&s, bad[i].world, NULL, L, err, sizeof err);
        ck_assert_msg(rc == RL_ERR_ARG && strlen(err) > 10, "%s must be refused with RL_ERR_ARG and a message (got %d, "
                      "'%s')", bad[i].what, rc, err);
    }
    free(L);
}
END_TEST

START_TEST(t_mesh_warning)
{
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    mesh_layout *L = calloc(1, sizeof *L);
    char err[256] = "";
    rl_mesh_shape s = { 1, 1, 16, 1, 1, RL_MESH_ORDER_TP_CP_PP_DP };
    int rc = mesh_layout_make(&s, 16, hw, L, err, sizeof err);
    ck_assert_msg(rc == 0, "mesh_layout_make(tp=16 on 16 ranks) returned %d: %s", rc, err);
    ck_assert_msg(L->tp_crosses_node && strlen(L->warning) > 10 && L->node[15] == 1,
                  "tp=16 on two nodes of 8 GPUs: tp_crosses_node = %d, warning '%s', rank 15 on node %d; the TP group "
                  "spans nodes 0 and 1 and must be warned about", L->tp_crosses_node, L->warning, L->node[15]);
    rl_mesh_shape s2 = { 2, 1, 8, 1, 1, RL_MESH_ORDER_TP_CP_PP_DP };
    rc = mesh_layout_make(&s2, 16, hw, L, err, sizeof err);
    ck_assert_msg(rc == 0 && !L->tp_crosses_node && !L->warning[0],
                  "dp=2 x tp=8 on two nodes of 8: every TP group is one node; no warning expected (got %d, '%s')",
                  L->tp_crosses_node, L->warning);
    free(L);
}
END_TEST

typedef struct comms_case {
    mesh_layout *lay;
    int members[LAB31_MAX_RANKS][MESH_NDIMS][LAB31_MAX_RANKS];
    int size[LAB31_MAX_RANKS][MESH_NDIMS];
    int rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][256];
} comms_case;

static int comms_rank(rl_ctx *ctx, void *arg)
{
    comms_case *c = arg;
    int w = rl_rank(ctx);
    mesh_comms mc;
    memset(&mc, 0, sizeof mc);
    int rc = mesh_build_comms(ctx, c->lay, &mc);
    c->rc[w] = rc;
    if (rc) {
        snprintf(c->err[w], sizeof c->err[w], "%s", rl_last_error(ctx));
        return 0;
    }
    for (int d = 0; d < MESH_NDIMS; d++) {
        c->size[w][d] = mc.c[d] ? rl_comm_size(mc.c[d]) : 0;
        for (int i = 0; i < c->size[w][d] && i < LAB31_MAX_RANKS; i++)
            c->members[w][d][i] = rl_comm_global_rank(mc.c[d], i);
    }
    mesh_comms_free(&mc);
    return 0;
}

START_TEST(t_mesh_comms)
{
    int shapes[][5] = { { 2, 2, 2, 1, 1 }, { 4, 2, 1, 1, 2 }, { 2, 1, 2, 2, 2 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int *s = shapes[i];
        rl_mesh_shape sh = { s[0], s[1], s[2], s[3], s[4], RL_MESH_ORDER_TP_CP_PP_DP };
        int W = s[0] * s[1] * s[2] * s[3];
        rl_mesh ref;
        ck_assert(rl_mesh_init(&ref, &sh, W, NULL, NULL, 0) == 0);
        comms_case *c = calloc(1, sizeof *c);
        c->lay = calloc(1, sizeof *c->lay);
        char err[256];
        int rc = mesh_layout_make(&sh, W, NULL, c->lay, err, sizeof err);
        ck_assert_msg(rc == 0, "mesh_layout_make failed: %s", err);
        rl_opts o = gopts(W);
        rc = rl_launch(&o, comms_rank, c, NULL);
        for (int w = 0; w < W; w++)
            ck_assert_msg(c->rc[w] == 0, "mesh_build_comms on rank %d: %s", w, c->err[w]);
        ck_assert_msg(rc == 0, "mesh_build_comms: the run failed (%s)", rl_status_name(rc));
        int grp[64];
        for (int w = 0; w < W; w++)
            for (int d = 0; d < MESH_NDIMS; d++) {
                int n = rl_mesh_group(&ref, mesh_dim_bits((mesh_dim)d), w, grp, NULL);
                ck_assert_msg(c->size[w][d] == n, "dp=%d pp=%d tp=%d cp=%d ep=%d: rank %d's %s communicator has %d "
                              "ranks, expected %d", s[0], s[1], s[2], s[3], s[4], w, mesh_dim_name((mesh_dim)d),
                              c->size[w][d], n);
                for (int k = 0; k < n; k++)
                    ck_assert_msg(c->members[w][d][k] == grp[k], "rank %d's %s communicator: member %d is world rank "
                                  "%d, expected %d", w, mesh_dim_name((mesh_dim)d), k, c->members[w][d][k], grp[k]);
            }
        free(c->lay);
        free(c);
    }
}
END_TEST

/* ================================================================== 31.2 a 3D training step */

#define TD_SEED 5

static td_config td_cfg(int dp, int pp, int tp, int m)
{
    td_config c;
    memset(&c, 0, sizeof c);
    c.dp = dp, c.pp = pp, c.tp = tp, c.micro_batches = m, c.micro_batch = 4;
    c.model = rl_model_config_default(RL_MODEL_MLP);
    c.model.hidden = 32;
    c.model.layers = 4;
    c.model.out_dim = 8;
    c.model.param_dtype = c.model.grad_dtype = RL_F32;
    c.adamw = rl_adamw_defaults();
    c.adamw.lr = 1e-2f;
    c.data_seed = TD_SEED;
    return c;
}

typedef struct td_case {
    td_config cfg;
    int steps;
    int64_t psi;
    float *params[LAB31_MAX_RANKS];
    int rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][300];
    int64_t dp_sent[LAB31_MAX_RANKS], tp_calls[LAB31_MAX_RANKS];
} td_case;

static int td_rank(rl_ctx *ctx, void *arg)
{
    td_case *c = arg;
    int w = rl_rank(ctx);
    rl_data *data = rl_data_regression(ctx, c->cfg.model.hidden, c->cfg.model.out_dim, c->cfg.data_seed);
    td_engine *e = data ? td_engine_new(ctx, &c->cfg, data) : NULL;
    if (!e) {
        c->rc[w] = RL_ERR_ARG;
        snprintf(c->err[w], sizeof c->err[w], "td_engine_new: %s", rl_last_error(ctx));
        rl_data_free(data);
        return 0;
    }
    for (int s = 0; s < c->steps && !c->rc[w]; s++) {
        rl_clear_error(ctx);
        rl_step_begin(ctx, s);
        int rc = td_train_step(e, s, NULL);
        rl_step_end(ctx);
        if (rc) {
            c->rc[w] = rc;
            snprintf(c->err[w], sizeof c->err[w], "td_train_step: %s (%s)", rl_status_name(rc), rl_last_error(ctx));
        }
    }
    if (!c->rc[w]) {
        for (int64_t k = 0; k < c->psi; k++)
            c->params[w][k] = NAN;
        td_export_params(e, c->params[w]);
        c->dp_sent[w] = rl_comm_get_counters(e->comms.dp)->bytes_sent;
    }
    td_engine_free(e);
    rl_data_free(data);
    return 0;
}

static void td_reference(const td_config *cfg, int steps, float *out, int64_t psi)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, &cfg->model);
    rl_data *data = rl_data_regression(ctx, cfg->model.hidden, cfg->model.out_dim, cfg->data_seed);
    rl_model_optim *opt = rl_model_adamw_new(m, cfg->adamw);
    ck_assert(m && data && opt);
    rl_batch b;
    memset(&b, 0, sizeof b);
    int64_t B = (int64_t)cfg->dp * cfg->micro_batches * cfg->micro_batch;
    for (int s = 0; s < steps; s++) {
        ck_assert(rl_model_zero_grad(m) == 0);
        ck_assert(rl_data_get(data, ctx, s, 0, B, &b) == 0);
        ck_assert(rl_model_forward(m, &b, NULL) == 0);
        ck_assert(rl_model_backward(m, 1.0f) == 0);
        ck_assert(rl_model_adamw_step(opt) == 0);
    }
    int64_t off = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].value, out + off, m->params[i].numel);
        off += m->params[i].numel;
    }
    ck_assert(off == psi);
    rl_batch_free(&b);
    rl_model_optim_free(opt);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

static void td_check(int dp, int pp, int tp, int m, int steps)
{
    td_case *c = calloc(1, sizeof *c);
    c->cfg = td_cfg(dp, pp, tp, m);
    c->steps = steps;
    rl_ctx *sctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *mm = rl_model_new(sctx, &c->cfg.model);
    c->psi = rl_model_numel(mm);
    rl_model_free(mm);
    rl_ctx_free_standalone(sctx);
    int W = dp * pp * tp;
    for (int r = 0; r < W; r++)
        c->params[r] = malloc(sizeof(float) * (size_t)c->psi);
    rl_opts o = gopts(W);
    if (W > 8)
        o.hw = rl_hw_find("h100-2node-ib");
    int rc = rl_launch(&o, td_rank, c, NULL);
    for (int r = 0; r < W; r++)
        ck_assert_msg(!c->rc[r], "dp=%d pp=%d tp=%d, m=%d: rank %d: %s", dp, pp, tp, m, r, c->err[r]);
    ck_assert_msg(rc == 0, "dp=%d pp=%d tp=%d: the run failed (%s): a collective on the wrong group, or the ranks of "
                  "a group calling different collectives", dp, pp, tp, rl_status_name(rc));
    float *ref = malloc(sizeof(float) * (size_t)c->psi);
    td_reference(&c->cfg, steps, ref, c->psi);
    int64_t nbad = 0, kbad = -1;
    int rbad = -1;
    for (int64_t k = 0; k < c->psi; k++) {
        int held = 0;
        for (int r = 0; r < W; r++) {
            float v = c->params[r][k];
            if (isnan(v))
                continue;
            held = 1;
            if (!(fabs(v - ref[k]) <= 2e-4 * fabs(ref[k]) + 2e-5) && !nbad++)
                kbad = k, rbad = r;
        }
        if (!held && !nbad++)
            kbad = k, rbad = -1;
    }
    ck_assert_msg(nbad == 0, "dp=%d x pp=%d x tp=%d (m=%d, b=4), %d steps: %lld parameter values differ from the "
                  "one-rank run; first: element %lld (registration order) on rank %d = %.7g, one-rank %.7g. Causes: a "
                  "ZeRO-1 collective on the wrong group, no ÷dp, a skipped all-gather, a micro-batch's "
                  "gradient lost", dp, pp, tp, m, steps, (long long)nbad, (long long)kbad, rbad,
                  rbad >= 0 ? c->params[rbad][kbad] : NAN, ref[kbad]);
    free(ref);
    for (int r = 0; r < W; r++)
        free(c->params[r]);
    free(c);
}

START_TEST(t_3d_full) { td_check(2, 2, 2, 4, 3); }
END_TEST

START_TEST(t_3d_shapes)
{
    td_check(1, 4, 1, 4, 2);
    td_check(4, 1, 2, 2, 2);
    if (!rl_grade_quick())
        td_check(2, 4, 2, 8, 2);
}
END_TEST

START_TEST(t_3d_dp_traffic)
{
    td_case *c = calloc(1, sizeof *c);
    c->cfg = td_cfg(2, 2, 2, 4);
    c->steps = 1;
    c->psi = 100000;
    for (int r = 0; r < 8; r++)
        c->params[r] = malloc(sizeof(float) * (size_t)c->psi);
    rl_opts o = gopts(8);
    int rc = rl_launch(&o, td_rank, c, NULL);
    for (int r = 0; r < 8; r++)
        ck_assert_msg(!c->rc[r], "rank %d: %s", r, c->err[r]);
    ck_assert_msg(rc == 0, "the run failed (%s)", rl_status_name(rc));
    /* rank 0 (stage 0, tp 0) holds its blocks' pieces: ZeRO-1 sends a reduce-scatter and an
     * all-gather of its flat vector over DP = 2: 2·(1/2)·padded·4 bytes */
    rl_ctx *sctx = rl_ctx_new_standalone(NULL, 1);
    int h = 32, f = 128, tp = 2, blocks = 2;
    int64_t numel = (int64_t)blocks * (2 * h + h * f / tp + f / tp + f / tp * h + h);
    int64_t padded = (numel + 1) / 2 * 2;
    double want = 2.0 * rl_ring_bytes_per_rank(RL_COLL_ALL_GATHER, 2, 4.0 * padded);
    rl_ctx_free_standalone(sctx);
    ck_assert_msg(fabs((double)c->dp_sent[0] - want) <= 8,
                  "rank 0 sent %lld bytes on its DP group in one step; ZeRO-1 (reduce-scatter + all-gather of its "
                  "%lld f32 elements over dp=2) sends %.0f", (long long)c->dp_sent[0], (long long)padded, want);
    for (int r = 0; r < 8; r++)
        free(c->params[r]);
    free(c);
}
END_TEST

/* ================================================================== 31.3 MoE */

#define MOE_T 24

static moe_config moe_cfg(int E, int k, int ep, double cf)
{
    moe_config c = { .hidden = 16, .ffn = 32, .num_experts = E, .top_k = k, .ep = ep, .capacity_factor = cf,
                     .moe_aux_loss_coeff = 0.01, .seed = 9 };
    return c;
}

static void moe_input(float *x, int rank, int64_t T, int h, uint64_t seed)
{
    rl_rng r = rl_rng_make(seed, (uint64_t)rank + 100);
    for (int64_t i = 0; i < T * h; i++)
        x[i] = (float)rl_rng_normal(&r);
}

/* The one-rank reference for one source rank's tokens: returns y, dropped, aux. */
static void moe_reference(const moe_config *cfg, const float *x, int64_t T, const rl_fault *hot, float *y,
                          int64_t *dropped, double *aux, int64_t *kept)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    moe_config c1 = *cfg;
    c1.ep = 1;
    moe_layer *l = moe_layer_new(ctx, &c1, 0);
    ck_assert(l);
    int E = cfg->num_experts, k = cfg->top_k, h = cfg->hidden;
    int64_t sh[2] = { T, h }, shl[2] = { T, E }, s1[2] = { 1, h };
    rl_tensor *xt = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 2, sh, NULL);
    rl_tensor *lg = rl_tensor_new(ctx, "lg", RL_F32, RL_MEM_ACTIVATION, 2, shl, NULL);
    rl_tensor_from_f32(xt, x, T * h);
    ck_assert(rl_matmul(ctx, xt, 0, l->router_w, 0, lg, 0.0f) == 0);
    float *z = malloc(sizeof(float) * (size_t)(T * E)), *p = malloc(sizeof(float) * (size_t)(T * E));
    int *ids = malloc(sizeof(int) * (size_t)(T * k));
    float *w = malloc(sizeof(float) * (size_t)(T * k));
    rl_tensor_to_f32(lg, z, T * E);
    for (int64_t t = 0; t < T; t++) {
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < E; i++)
            mx = fmax(mx, z[t * E + i]);
        for (int i = 0; i < E; i++)
            s += exp(z[t * E + i] - mx);
        for (int i = 0; i < E; i++)
            p[t * E + i] = (float)(exp(z[t * E + i] - mx) / s);
        double tot = 0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int i = 0; i < E; i++) {
                int used = 0;
                for (int q = 0; q < j; q++)
                    used |= ids[t * k + q] == i;
                if (!used && (best < 0 || p[t * E + i] > p[t * E + best]))
                    best = i;
            }
            ids[t * k + j] = best;
            tot += p[t * E + best];
        }
        for (int j = 0; j < k; j++)
            w[t * k + j] = (float)(p[t * E + ids[t * k + j]] / tot);
    }
    if (hot) {
        /* rl_fault_skew_routing reads the fault from the ctx's options: apply the same rule here */
        for (int64_t t = 0; t < T; t++) {
            if ((int64_t)floor((t + 1) * hot->frac) <= (int64_t)floor(t * hot->frac))
                continue;
            int at = -1;
            for (int j = 0; j < k; j++)
                if (ids[t * k + j] == hot->expert)
                    at = j;
            if (at > 0) {
                int tmp = ids[t * k]; /* weights stay with their slots */
                ids[t * k] = ids[t * k + at];
                ids[t * k + at] = tmp;
            } else if (at < 0) {
                ids[t * k] = hot->expert;
            }
        }
    }
    rl_moe_plan plan;
    ck_assert(rl_moe_plan_make(NULL, ids, T, k, E, 1, cfg->capacity_factor, &plan) == 0);
    *dropped = plan.dropped;
    for (int e = 0; e < E; e++)
        kept[e] = plan.kept[e];
    ck_assert(rl_moe_aux_loss(NULL, p, ids, T, E, k, cfg->moe_aux_loss_coeff, aux, NULL, NULL, NULL) == 0);
    memcpy(y, x, sizeof(float) * (size_t)(T * h));
    rl_tensor *row = rl_tensor_new(ctx, "row", RL_F32, RL_MEM_ACTIVATION, 2, s1, NULL);
    rl_tensor *o = rl_tensor_new(ctx, "o", RL_F32, RL_MEM_ACTIVATION, 2, s1, NULL);
    for (int64_t s = 0; s < T * k; s++) {
        if (plan.position[s] < 0)
            continue;
        int64_t t = s / k;
        rl_tensor_from_f32(row, x + t * h, h);
        ck_assert(moe_expert_forward(l, ids[s], row, o) == 0);
        for (int i = 0; i < h; i++)
            y[t * h + i] += w[s] * rl_tensor_get(o, i);
    }
    rl_moe_plan_free(&plan);
    rl_tensor_free(row), rl_tensor_free(o), rl_tensor_free(xt), rl_tensor_free(lg);
    free(z), free(p), free(ids), free(w);
    moe_layer_free(l);
    rl_ctx_free_standalone(ctx);
}

typedef struct moe_case {
    moe_config cfg;
    int64_t T;
    float *y[LAB31_MAX_RANKS];
    moe_stats st[LAB31_MAX_RANKS];
    int rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][300];
} moe_case;

static int moe_rank(rl_ctx *ctx, void *arg)
{
    moe_case *c = arg;
    int w = rl_rank(ctx);
    rl_comm *ep = rl_comm_split(rl_comm_world(ctx), 0, w);
    moe_layer *l = ep ? moe_layer_new(ctx, &c->cfg, w) : NULL;
    int64_t sh[2] = { c->T, c->cfg.hidden };
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    float *xs = malloc(sizeof(float) * (size_t)(c->T * c->cfg.hidden));
    moe_input(xs, w, c->T, c->cfg.hidden, 3);
    rl_tensor_from_f32(x, xs, c->T * c->cfg.hidden);
    rl_clear_error(ctx);
    int rc = l ? moe_forward(l, ep, x, y, &c->st[w]) : RL_ERR_ARG;
    c->rc[w] = rc;
    if (rc)
        snprintf(c->err[w], sizeof c->err[w], "moe_forward: %s (%s)", rl_status_name(rc), rl_last_error(ctx));
    else
        rl_tensor_to_f32(y, c->y[w], c->T * c->cfg.hidden);
    free(xs);
    rl_tensor_free(x), rl_tensor_free(y);
    moe_layer_free(l);
    if (ep)
        rl_comm_free(ep);
    return 0;
}

/* Runs the MoE case on ep ranks and checks y, dropped, kept and aux against the reference. */
static void moe_check(int E, int k, int ep, double cf, const char *hot_spec, int what)
{
    moe_case *c = calloc(1, sizeof *c);
    c->cfg = moe_cfg(E, k, ep, cf);
    c->T = MOE_T;
    int h = c->cfg.hidden;
    for (int r = 0; r < ep; r++)
        c->y[r] = malloc(sizeof(float) * (size_t)(c->T * h));
    rl_opts o = gopts(ep);
    rl_fault hot;
    memset(&hot, 0, sizeof hot);
    if (hot_spec) {
        char err[128];
        ck_assert(rl_fault_parse(hot_spec, &hot, err, sizeof err) == 0);
        o.faults[o.nfaults++] = hot;
    }
    int rc = rl_launch(&o, moe_rank, c, NULL);
    for (int r = 0; r < ep; r++)
        ck_assert_msg(!c->rc[r], "E=%d k=%d ep=%d cf=%g: rank %d: %s", E, k, ep, cf, r, c->err[r]);
    ck_assert_msg(rc == 0, "E=%d k=%d ep=%d: the run failed (%s)", E, k, ep, rl_status_name(rc));
    float *x = malloc(sizeof(float) * (size_t)(c->T * h)), *y = malloc(sizeof(float) * (size_t)(c->T * h));
    for (int r = 0; r < ep; r++) {
        int64_t dropped, kept[64];
        double aux;
        moe_input(x, r, c->T, h, 3);
        moe_reference(&c->cfg, x, c->T, hot_spec ? &hot : NULL, y, &dropped, &aux, kept);
        const moe_stats *s = &c->st[r];
        int64_t C = rl_moe_capacity(c->T, E, k, cf);
        if (what == 0 || what == 1) {
            ck_assert_msg(s->capacity == C && s->dropped == dropped,
                          "E=%d k=%d cf=%g, %lld tokens on rank %d%s: capacity %lld, dropped %lld slots; the capacity "
                          "rule (ceil(T·k/E·cf), drop in arrival order) gives capacity %lld, %lld dropped", E, k, cf,
                          (long long)c->T, r, hot_spec ? " (hot expert)" : "", (long long)s->capacity,
                          (long long)s->dropped, (long long)C, (long long)dropped);
            for (int e = 0; e < E; e++)
                ck_assert_msg(s->kept[e] == kept[e], "rank %d: expert %d keeps %lld slots, expected %lld", r, e,
                              (long long)s->kept[e], (long long)kept[e]);
        }
        if (what == 0 || what == 2)
            for (int64_t i = 0; i < c->T * h; i++)
                ck_assert_msg(fabs(c->y[r][i] - y[i]) <= 1e-4 * fabs(y[i]) + 1e-5,
                              "E=%d k=%d ep=%d cf=%g: rank %d, token %lld, element %lld: y = %.7g, the one-rank MoE "
                              "gives %.7g (dropped slots add nothing; kept ones weight·expert(x); plus x)", E, k, ep,
                              cf, r, (long long)(i / h), (long long)(i % h), c->y[r][i], y[i]);
        if (what == 0 || what == 3)
            ck_assert_msg(fabs(s->aux_loss - aux) <= 1e-6 * fabs(aux) + 1e-9,
                          "E=%d k=%d: rank %d's aux loss %.8g; α·E·Σ fᵢ·Pᵢ = %.8g (α = %g)", E, k, r, s->aux_loss,
                          aux, c->cfg.moe_aux_loss_coeff);
    }
    free(x), free(y);
    for (int r = 0; r < ep; r++)
        free(c->y[r]);
    free(c);
}

START_TEST(t_moe_equal)
{
    moe_check(8, 2, 4, 1.25, NULL, 2);
    moe_check(4, 1, 2, 2.0, NULL, 2);
    moe_check(8, 2, 1, 1.25, NULL, 2);
}
END_TEST

START_TEST(t_moe_drops)
{
    moe_check(8, 2, 4, 1.0, NULL, 1);
    moe_check(8, 2, 4, 0.5, NULL, 0);
    moe_check(4, 2, 2, 1.25, "hot-expert:expert=3:frac=0.6", 0);
}
END_TEST

START_TEST(t_moe_aux)
{
    moe_check(8, 2, 2, 1.25, NULL, 3);
    /* uniform routing gives exactly α */
    int E = 4, k = 1;
    int64_t T = 8;
    float probs[32];
    int ids[8];
    for (int i = 0; i < 32; i++)
        probs[i] = 0.25f;
    for (int t = 0; t < 8; t++)
        ids[t] = t % 4;
    double a = moe_aux_loss(probs, ids, T, E, k, 0.02);
    ck_assert_msg(fabs(a - 0.02) < 1e-9, "uniform routing (8 tokens over 4 experts, probabilities 1/4): aux loss %.8g, "
                  "expected α = 0.02", a);
}
END_TEST

/* ================================================================== 31.4 diagnose failures */

static int fault_scenario(const char *spec, int ranks, const char *tag, rl_diag_flight *fl)
{
    fault_run_config fc = fault_run_config_default();
    fc.opts = gopts(ranks);
    fc.opts.timeout_s = 0.4;
    fc.steps = 4;
    char path[256], err[256];
    snprintf(path, sizeof path, "/tmp/rl31_%d_%s.json", (int)getpid(), tag);
    fc.opts.trace_path = path;
    ck_assert(rl_fault_parse(spec, &fc.opts.faults[0], err, sizeof err) == 0);
    fc.opts.nfaults = 1;
    fault_run_log log;
    ck_assert(fault_run(&fc, &log) == 0);
    free(log.norms);
    char dump[300];
    snprintf(dump, sizeof dump, "%s.flight.json", path);
    memset(fl, 0, sizeof *fl);
    int rc = rl_diag_flight_load(dump, fl, err, sizeof err);
    ck_assert_msg(rc == 0, "scenario %s: no flight dump (%s)", spec, err);
    unlink(dump);
    unlink(path);
    return log.status;
}

static void diag_scenarios(int mismatch, int n)
{
    rl_rng r = rl_rng_make(31, (uint64_t)mismatch);
    for (int i = 0; i < n; i++) {
        int ranks = 3 + (int)rl_rng_below(&r, 4);
        int culprit = (int)rl_rng_below(&r, (uint64_t)ranks);
        int seq = 1 + (int)rl_rng_below(&r, 9);
        char spec[96], tag[32];
        snprintf(spec, sizeof spec, "%s:rank=%d:seq=%d", mismatch ? "mismatch" : "hang", culprit, seq);
        snprintf(tag, sizeof tag, "%c%d", mismatch ? 'm' : 'h', i);
        rl_diag_flight fl;
        fault_scenario(spec, ranks, tag, &fl);
        rl_diag_result ref;
        ck_assert(rl_diag_flight_analyze(&fl, &ref) == 0);
        diag_result got;
        int rc = diagnose(&fl, &got);
        ck_assert_msg(rc == 0, "diagnose() returned %d on a real dump (%s on %d ranks)", rc, spec, ranks);
        ck_assert_msg(got.kind == ref.kind && got.rank == ref.rank && got.seq == ref.seq,
                      "hidden scenario %d (%d ranks, injected: %s): diagnose() says %s, rank %d, seq %lld; the "
                      "reference analysis says %s, rank %d, seq %lld (%s)", i, ranks, spec, rl_diag_kind_name(got.kind),
                      got.rank, (long long)got.seq, rl_diag_kind_name(ref.kind), ref.rank, (long long)ref.seq,
                      ref.message);
        rl_diag_flight_free(&fl);
    }
}

START_TEST(t_diag_hang) { diag_scenarios(0, rl_grade_quick() ? 1 : 3); }
END_TEST

START_TEST(t_diag_mismatch) { diag_scenarios(1, rl_grade_quick() ? 1 : 3); }
END_TEST

static void straggler_case(const double *ms, int n, const char *what)
{
    rl_diag_spread ref;
    ck_assert(rl_diag_straggler(ms, n, NULL, &ref, NULL, 0) == 0);
    straggler_result got;
    int rc = detect_straggler(ms, n, &got);
    ck_assert_msg(rc == 0, "%s: detect_straggler returned %d", what, rc);
    ck_assert_msg(got.culprit == ref.culprit && got.imbalanced == ref.imbalanced &&
                  fabs(got.cv - ref.cv) <= 1e-9 + 1e-6 * ref.cv && fabs(got.median - ref.median) <= 1e-9 * ref.median,
                  "%s (%d ranks): culprit %d, imbalanced %d, cv %.5f, median %.5g; expected culprit %d, imbalanced %d, "
                  "cv %.5f, median %.5g (%s)", what, n, got.culprit, got.imbalanced, got.cv, got.median, ref.culprit,
                  ref.imbalanced, ref.cv, ref.median, ref.message);
}

START_TEST(t_diag_straggler)
{
    /* the course's data: 32 ranks near 2200 ms, one at 3150 ms */
    double ms[33];
    rl_rng r = rl_rng_make(7, 1);
    for (int i = 0; i < 33; i++)
        ms[i] = 2200 + 20 * (rl_rng_uniform(&r) - 0.5);
    ms[17] = 3150;
    straggler_case(ms, 33, "the course's 33 ranks, one at 3150 ms");
    /* the expert hits of the course: a hot expert */
    double hits[8] = { 950, 1020, 890, 3200, 450, 910, 880, 520 };
    straggler_case(hits, 8, "expert hits [950, 1020, 890, 3200, 450, 910, 880, 520]");
    /* real runs with an injected straggler (randomized) and one without */
    for (int i = 0; i < 3; i++) {
        fault_run_config fc = fault_run_config_default();
        fc.opts = gopts(4 + 2 * i);
        fc.steps = 2;
        int culprit = (int)rl_rng_below(&r, (uint64_t)fc.opts.ranks);
        char spec[64], err[128];
        snprintf(spec, sizeof spec, "straggler:rank=%d:ms=%d", culprit, 600 + 300 * i);
        if (i < 2) {
            ck_assert(rl_fault_parse(spec, &fc.opts.faults[0], err, sizeof err) == 0);
            fc.opts.nfaults = 1;
        }
        fault_run_log log;
        ck_assert(fault_run(&fc, &log) == 0 && log.status == 0);
        char what[96];
        snprintf(what, sizeof what, "a real run of %d ranks %s", fc.opts.ranks, i < 2 ? spec : "without a straggler");
        straggler_case(log.step_ms, fc.opts.ranks, what);
        free(log.norms);
    }
}
END_TEST

START_TEST(t_diag_spike)
{
    rl_rng r = rl_rng_make(99, 2);
    for (int i = 0; i < (rl_grade_quick() ? 2 : 4); i++) {
        fault_run_config fc = fault_run_config_default();
        fc.opts = gopts(4);
        fc.steps = 6;
        fc.layers = 4;
        char spec[96], err[128];
        int rank = (int)rl_rng_below(&r, 4), step = 1 + (int)rl_rng_below(&r, 5), layer = (int)rl_rng_below(&r, 4);
        if (i % 2 == 0) {
            snprintf(spec, sizeof spec, "nan:rank=%d:step=%d:layer=%d", rank, step, layer);
            ck_assert(rl_fault_parse(spec, &fc.opts.faults[0], err, sizeof err) == 0);
            fc.opts.nfaults = 1;
        } else {
            fc.spike_rank = rank, fc.spike_step = step, fc.spike_layer = layer;
            snprintf(spec, sizeof spec, "spike x%g at rank %d, step %d, layer %d", fc.spike_factor, rank, step, layer);
        }
        fault_run_log log;
        ck_assert(fault_run(&fc, &log) == 0);
        rl_diag_spike ref;
        ck_assert(rl_diag_spike_find(log.norms, fc.steps, 4, fc.layers, NULL, &ref, NULL, 0) == 0);
        spike_result got;
        int rc = detect_spike(log.norms, fc.steps, 4, fc.layers, &got);
        ck_assert_msg(rc == 0, "detect_spike returned %d", rc);
        ck_assert_msg(got.found == ref.found && got.step == ref.step && got.rank == ref.rank &&
                      got.layer == ref.layer && got.nonfinite == ref.nonfinite,
                      "hidden scenario %d (%s): detect_spike says found %d, step %d, rank %d, layer %d, non-finite %d; "
                      "expected %d, step %d, rank %d, layer %d, non-finite %d (%s)", i, spec, got.found, got.step,
                      got.rank, got.layer, got.nonfinite, ref.found, ref.step, ref.rank, ref.layer, ref.nonfinite,
                      ref.message);
        free(log.norms);
    }
}
END_TEST

/* ================================================================== 31.5 planner */

static rl_calc_plan_in plan_in(int which)
{
    rl_calc_plan_in in;
    memset(&in, 0, sizeof in);
    switch (which) {
    case 0: /* 7B-class on one node */
        in = (rl_calc_plan_in){ 7e9, 32, 32, 4096, 4096, 64, 8, rl_hw_find("h100-nvlink"), 0 };
        break;
    case 1: /* 70B-class on 64 GPUs */
        in = (rl_calc_plan_in){ 70e9, 80, 64, 8192, 4096, 256, 64, rl_hw_find("h100-2node-ib"), 0 };
        break;
    case 2: /* 13B on PCIe A100s */
        in = (rl_calc_plan_in){ 13e9, 40, 40, 5120, 2048, 128, 16, rl_hw_find("a100-pcie"), 0 };
        break;
    default: /* a small model on 4 GPUs */
        in = (rl_calc_plan_in){ 1.3e9, 24, 16, 2048, 2048, 32, 4, rl_hw_find("h100-nvlink"), 16 };
        break;
    }
    return in;
}

static int near_rel(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15; }

START_TEST(t_plan_rank)
{
    for (int w = 0; w < 4; w++) {
        rl_calc_plan_in in = plan_in(w);
        rl_calc_plan_row *ref = NULL, *got = NULL;
        int nref = 0, ngot = 0;
        char err[256] = "";
        ck_assert(rl_calc_plan(&in, &ref, &nref, NULL, 0) == 0);
        int rc = plan_enumerate(&in, &got, &ngot, err, sizeof err);
        ck_assert_msg(rc == 0, "plan_enumerate (Ψ=%g on %d GPUs of %s) returned %d: %s", in.params, in.gpus,
                      in.hw->name, rc, err);
        ck_assert_msg(ngot == nref, "Ψ=%g on %d GPUs of %s: %d candidates; calc.h's planner enumerates %d", in.params,
                      in.gpus, in.hw->name, ngot, nref);
        for (int i = 0; i < nref; i++) {
            const rl_calc_plan_row *a = &got[i], *b = &ref[i];
            ck_assert_msg(a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->b == b->b && a->m == b->m &&
                          a->zero == b->zero && a->recompute == b->recompute && a->warnings == b->warnings,
                          "Ψ=%g on %d GPUs: row %d is tp=%d pp=%d dp=%d b=%d m=%d zero=%d rc=%d warn=%d; expected "
                          "tp=%d pp=%d dp=%d b=%d m=%d zero=%d rc=%d warn=%d", in.params, in.gpus, i, a->tp, a->pp,
                          a->dp, a->b, a->m, a->zero, (int)a->recompute, a->warnings, b->tp, b->pp, b->dp, b->b, b->m,
                          b->zero, (int)b->recompute, b->warnings);
            ck_assert_msg(near_rel(a->step_time, b->step_time) && near_rel(a->mem_total, b->mem_total) &&
                          near_rel(a->mfu, b->mfu),
                          "Ψ=%g on %d GPUs, row %d (tp=%d pp=%d): step %.6g s, memory %.6g B, MFU %.5f; the cost model "
                          "gives %.6g s, %.6g B, %.5f", in.params, in.gpus, i, a->tp, a->pp, a->step_time,
                          a->mem_total, a->mfu, b->step_time, b->mem_total, b->mfu);
        }
        free(ref);
        free(got);
    }
}
END_TEST

START_TEST(t_plan_candidate)
{
    rl_calc_plan_in in = plan_in(1);
    rl_calc_plan_row *ref = NULL;
    int nref = 0;
    ck_assert(rl_calc_plan(&in, &ref, &nref, NULL, 0) == 0);
    for (int i = 0; i < nref; i += 7) {
        rl_calc_plan_row got, *b = &ref[i];
        int rc = plan_candidate(&in, b->tp, b->pp, b->b, b->recompute, b->zero, &got);
        ck_assert_msg(rc == 0, "plan_candidate(tp=%d, pp=%d, b=%d) returned %d", b->tp, b->pp, b->b, rc);
        ck_assert_msg(near_rel(got.compute_time, b->compute_time) && near_rel(got.tp_time, b->tp_time) &&
                      near_rel(got.pp_time, b->pp_time) && near_rel(got.dp_time, b->dp_time) &&
                      near_rel(got.bubble_time, b->bubble_time) && near_rel(got.mem_states, b->mem_states) &&
                      near_rel(got.mem_act, b->mem_act) && got.warnings == b->warnings,
                      "70B on 64 GPUs, tp=%d pp=%d dp=%d b=%d zero=%d recompute=%s: compute/tp/pp/dp/bubble = "
                      "%.5g/%.5g/%.5g/%.5g/%.5g s, states %.5g B, act %.5g B, warnings %d; expected "
                      "%.5g/%.5g/%.5g/%.5g/%.5g s, %.5g B, %.5g B, %d", b->tp, b->pp, b->dp, b->b, b->zero,
                      rl_calc_recompute_name(b->recompute), got.compute_time, got.tp_time, got.pp_time, got.dp_time,
                      got.bubble_time, got.mem_states, got.mem_act, got.warnings, b->compute_time, b->tp_time,
                      b->pp_time, b->dp_time, b->bubble_time, b->mem_states, b->mem_act, b->warnings);
    }
    free(ref);
}
END_TEST

START_TEST(t_plan_warnings)
{
    rl_calc_plan_in in = plan_in(1);
    rl_calc_plan_row r;
    int rc = plan_candidate(&in, 16, 4, 1, RL_CALC_RECOMPUTE_NONE, 1, &r);
    ck_assert_msg(rc == 0 && (r.warnings & RL_CALC_WARN_TP_NODES),
                  "tp=16 on 8-GPU nodes must warn that TP crosses nodes (rc %d, warnings %d)", rc, r.warnings);
    rc = plan_candidate(&in, 8, 8, 16, RL_CALC_RECOMPUTE_NONE, 1, &r);
    ck_assert_msg(rc == 0 && r.m < 32 && (r.warnings & RL_CALC_WARN_FEW_MB),
                  "pp=8 with m=%d micro-batches must warn m < 4p = 32 (warnings %d)", r.m, r.warnings);
    rc = plan_candidate(&in, 1, 1, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
    ck_assert_msg(rc == 0 && (r.warnings & RL_CALC_WARN_OOM), "70B with tp=pp=1 and ZeRO-0 must not fit in 80 GB "
                  "(warnings %d)", r.warnings);
    rc = plan_candidate(&in, 3, 1, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
    ck_assert_msg(rc == RL_ERR_ARG, "tp=3 does not divide 64 GPUs: plan_candidate must return RL_ERR_ARG (got %d)", rc);
}
END_TEST

/* ------------------------------------------------------------------ answers */

START_TEST(t_ans_memory)
{
    rl_calc_zero_in zi = { .params = 70e9 / 64, .dp = 8, .k = 12 };
    rl_calc_zero_out zo;
    ck_assert(rl_calc_zero(&zi, &zo, NULL, 0) == 0);
    CHECK_NUM("h1_params_per_gpu", 70e9 / 64, 0.005);
    CHECK_NUM("h1_zero1_gb", zo.bytes[RL_CALC_ZERO1] / 1e9, 0.005);
    CHECK_NUM("h1_zero3_gb", zo.bytes[RL_CALC_ZERO3] / 1e9, 0.005);
}
END_TEST

START_TEST(t_ans_moe)
{
    rl_calc_moe_in mi = { .tokens = 4096, .experts = 8, .topk = 2, .cf = 1.25, .hidden = 4096, .dtype_bytes = 2 };
    rl_calc_moe_out mo;
    ck_assert(rl_calc_moe(&mi, &mo, NULL, 0) == 0);
    CHECK_NUM("h2_capacity", mo.capacity, 0.001);
    CHECK_NUM("h2_dispatch_bytes_per_token", mo.dispatch_bytes / mi.tokens, 0.005);
    CHECK_NUM("h2_total_bytes_per_token", mo.per_token_bytes, 0.005);
    double hits[8] = { 950, 1020, 890, 3200, 450, 910, 880, 520 };
    rl_diag_spread s;
    ck_assert(rl_diag_spread_of(hits, 8, NULL, &s, NULL, 0) == 0);
    CHECK_NUM("h3_hits_cv", s.cv, 0.01);
    CHECK_NUM("h3_hits_max_min", s.ratio, 0.01);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_CHOICE("i1_hang_procedure", 'b');
    CHECK_CHOICE("i2_rollback", 'c');
    CHECK_CHOICE("i3_zero_with_pp", 'a');
}
END_TEST

/* ================================================================== the table */

static const rl_grade_step steps31[] = {
    { "31.1", "device mesh" },
    { "31.2", "3D training step" },
    { "31.3", "MoE with expert parallelism" },
    { "31.4", "diagnose failures" },
    { "31.5", "parallelism planner" },
};

static const rl_grade_test tests31[] = {
    { "31.1", "3D layouts = mesh.h (coords, groups, nodes)", 6, 20, &t_mesh_3d },
    { "31.1", "CP, EP and both rank orders", 4, 20, &t_mesh_cp_ep_order },
    { "31.1", "invalid shapes refused with a message", 2, 10, &t_mesh_bad },
    { "31.1", "TP group across nodes: warning", 2, 10, &t_mesh_warning },
    { "31.1", "communicators from rl_comm_split", 5, 20, &t_mesh_comms },
    { "31.2", "dp2 x pp2 x tp2 = one-rank run after 3 steps", 10, 30, &t_3d_full },
    { "31.2", "other shapes (pp only, dp x tp, 2x4x2)", 6, 40, &t_3d_shapes },
    { "31.2", "ZeRO-1 traffic on the DP group", 3, 30, &t_3d_dp_traffic },
    { "31.2", "answers: per-GPU memory under 3D", 2, 10, &t_ans_memory },
    { "31.3", "output = one-rank MoE reference", 8, 30, &t_moe_equal },
    { "31.3", "dropped tokens follow the capacity rule", 6, 30, &t_moe_drops },
    { "31.3", "Switch aux loss", 3, 30, &t_moe_aux },
    { "31.3", "answers: capacity and all-to-all bytes per token", 3, 10, &t_ans_moe },
    { "31.4", "hidden hang scenarios: culprit rank and seq", 6, 30, &t_diag_hang },
    { "31.4", "hidden mismatch scenarios", 4, 30, &t_diag_mismatch },
    { "31.4", "straggler detector", 4, 30, &t_diag_straggler },
    { "31.4", "loss-spike / NaN detector", 4, 30, &t_diag_spike },
    { "31.4", "answers: interview questions", 3, 10, &t_ans_interview },
    { "31.5", "ranked plans = calc.h planner on 4 model/cluster pairs", 7, 30, &t_plan_rank },
    { "31.5", "one candidate's cost terms", 4, 30, &t_plan_candidate },
    { "31.5", "warnings: TP across nodes, m < 4p, out of memory", 3, 10, &t_plan_warnings },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "31", "3D parallelism, MoE and failure debugging", "labs/31_3d_moe_debug/README.md",
        "labs/31_3d_moe_debug/answers.txt", steps31, (int)(sizeof steps31 / sizeof steps31[0]), tests31,
        (int)(sizeof tests31 / sizeof tests31[0]),
    };
    return rl_grade_main(&lab, argc, argv);
}
