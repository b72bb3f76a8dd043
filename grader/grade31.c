/* grade31.c — the grader of Lab 31 (3D parallelism, MoE and failure debugging). One Check
 * test per graded behaviour, grouped by step (31.1–31.5), run by grade.c. References come
 * from common/: mesh.h (rl_mesh_*) for the layouts, a one-rank f32 rl_model + AdamW run for
 * the 3D step, a one-rank MoE computed here from ops.h / moe.h (rl_moe_plan_make,
 * rl_moe_aux_loss) for 31.3, diagnose.h's analyses over real fault runs and over dumps built
 * here for 31.4, and calc.h (rl_calc_plan, rl_calc_moe, rl_calc_zero) for 31.5 and the
 * answers — never the solution. How data moves (which group each collective runs on, the
 * peers of every send/recv, the bytes per peer of the MoE all-to-alls, where each expert is
 * computed) is read from the run's trace, the runtime's own record. Randomized cases come
 * from rl_grade_rng (the run's seed); each randomized test prints one "cases:" line. */
#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "apiwatch.h"
#include "grade.h"
#include "lab31.h"
#include "moe.h"
#include "rng.h"
#include "trace.h"

/* ck_assert_msg without its per-call mark (Check records every passing assertion through a pipe:
 * slow inside loops over trace events and elements). */
#define CHECK(cond, ...)                                                                               \
    do {                                                                                             \
        if (!(cond))                                                                                 \
            ck_abort_msg(__VA_ARGS__);                                                               \
    } while (0)

static rl_opts gopts(int n)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.timeout_s = 4.0 * rl_grade_time_scale();
    return o;
}

/* ------------------------------------------------------------------ helpers */

/* A field that may be empty, as printed in a message. */
static const char *nz(const char *s) { return s && s[0] ? s : "(none)"; }

/* Copies a text the code under test left in a char array of ssize bytes (in the record, where
 * it may not end) into dst, ended. */
static void take_str(char *dst, size_t dsize, const char *src, size_t ssize)
{
    size_t n = strnlen(src, ssize);
    if (n >= dsize)
        n = dsize - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* v clamped to lo..hi. */
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER;

/* Remembers an error the code under test reported on a rank (a crash that follows names it). */
static void note_err(const char *what, int rank, int rc, const char *msg)
{
    pthread_mutex_lock(&note_mu);
    rl_grade_note("%s on rank %d returned %s: %s", what, rank, rl_status_name(rc), nz(msg));
    pthread_mutex_unlock(&note_mu);
}

/* 1 if the decimal number v stands alone in s (not as part of a longer number). */
static int has_number(const char *s, long long v)
{
    for (const char *p = s; p && *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > s && isdigit((unsigned char)p[-1])))
            continue;
        char *end;
        long long x = strtoll(p, &end, 10);
        int neg = p > s && p[-1] == '-' && (p - 1 == s || !isdigit((unsigned char)p[-2]));
        if ((neg ? -x : x) == v || (v >= 0 && x == v))
            return 1;
        p = end - 1;
    }
    return 0;
}

/* ================================================================== 31.1 device mesh */

static const char *order_name(rl_mesh_order o)
{
    return o == RL_MESH_ORDER_TP_CP_DP_PP ? "order tp-cp-dp-pp" : "order tp-cp-pp-dp";
}

/* A profile with gpn GPUs per node (h100-2node-ib otherwise). */
static rl_hw hw_nodes(int gpn)
{
    rl_hw h = *rl_hw_find("h100-2node-ib");
    h.gpus_per_node = gpn;
    return h;
}

/* The shape as text, for messages. */
static void shape_text(char *buf, size_t size, const rl_mesh_shape *s, int gpn)
{
    snprintf(buf, size, "dp=%d pp=%d tp=%d cp=%d ep=%d (%s) on %d-GPU nodes", s->dp, s->pp, s->tp, s->cp, s->ep,
             order_name(s->order), gpn);
}

/* What mesh_layout_make left in the child's record: its status, its message and the layout. */
typedef struct layout_res {
    int rc;
    char err[4096];
    mesh_layout lay;
} layout_res;

/* A call of mesh_layout_make: its arguments. */
typedef struct layout_job {
    const rl_mesh_shape *s;
    int world;
    const rl_hw *hw;
} layout_job;

/* In the child: calls mesh_layout_make into the record. */
static void layout_produce(void *out, void *arg)
{
    const layout_job *j = arg;
    layout_res *o = out;
    o->rc = mesh_layout_make(j->s, j->world, j->hw, &o->lay, o->err, sizeof o->err);
}

/* Runs mesh_layout_make(s, world, hw) in the child; *L gets the layout and err (4096 bytes) the
 * message, both from the record (their texts ended); returns its status. */
static int layout_run(const rl_mesh_shape *s, int world, const rl_hw *hw, mesh_layout *L, char *err)
{
    layout_job j = { s, world, hw };
    const layout_res *o = rl_grade_run("mesh_layout_make", sizeof *o, layout_produce, &j);
    *L = o->lay;
    L->warning[sizeof L->warning - 1] = 0;
    take_str(err, 4096, o->err, sizeof o->err);
    return o->rc;
}

/* mesh_layout_make for one shape against mesh.h: coordinates, nodes, groups, sizes, warning. */
static void check_layout(int dp, int pp, int tp, int cp, int ep, rl_mesh_order order, const rl_hw *hw)
{
    rl_mesh_shape s = { dp, pp, tp, cp, ep, order };
    int W = dp * pp * tp * cp;
    rl_mesh ref;
    char e1[256];
    CHECK(rl_mesh_init(&ref, &s, W, hw, e1, sizeof e1) == 0, "grader: bad reference shape: %s", e1);
    char sh[200];
    shape_text(sh, sizeof sh, &s, ref.gpus_per_node);
    mesh_layout *L = calloc(1, sizeof *L);
    char *err = calloc(1, 4096);
    int rc = layout_run(&s, W, hw, L, err);
    if (!rl_grade_judging()) { /* the child: the comparisons are the judge's */
        free(err);
        free(L);
        return;
    }
    CHECK(rc == 0, "mesh_layout_make(%s, world %d) returned %s: %s", sh, W, rl_status_name(rc), nz(err));
    CHECK(L->world == W && L->gpus_per_node == ref.gpus_per_node && L->shape.dp == dp && L->shape.pp == pp &&
          L->shape.tp == tp && L->shape.cp == cp && L->shape.ep == ep && L->shape.order == order,
          "%s: the layout says world %d, %d GPUs per node, shape dp=%d pp=%d tp=%d cp=%d ep=%d order %d; expected "
          "world %d, %d GPUs per node (the profile's; hw NULL: the default profile) and the shape given", sh,
          L->world, L->gpus_per_node, L->shape.dp, L->shape.pp, L->shape.tp, L->shape.cp, L->shape.ep,
          (int)L->shape.order, W, ref.gpus_per_node);
    int *grp = malloc(sizeof(int) * RL_MESH_MAX_RANKS);
    for (int r = 0; r < W; r++) {
        rl_mesh_coord c;
        rl_mesh_coord_of(&ref, r, &c);
        const rl_mesh_coord *g = &L->coord[r];
        CHECK(g->tp == c.tp && g->cp == c.cp && g->pp == c.pp && g->dp == c.dp && g->ep == c.ep &&
                      g->edp == c.edp,
                      "%s: rank %d has tp=%d cp=%d pp=%d dp=%d ep=%d edp=%d; expected tp=%d cp=%d pp=%d dp=%d ep=%d "
                      "edp=%d (TP innermost; dp = ep + EP·edp)", sh, r, g->tp, g->cp, g->pp, g->dp, g->ep, g->edp,
                      c.tp, c.cp, c.pp, c.dp, c.ep, c.edp);
        CHECK(L->node[r] == rl_mesh_node_of(&ref, r), "%s: rank %d on node %d, expected %d (rank / %d GPUs "
                      "per node of the profile)", sh, r, L->node[r], rl_mesh_node_of(&ref, r), ref.gpus_per_node);
        for (int d = 0; d < MESH_NDIMS; d++) {
            int n = rl_mesh_group(&ref, mesh_dim_bits((mesh_dim)d), r, grp, NULL);
            int pos = -1, cnt = 0;
            for (int q = 0; q < W; q++)
                cnt += L->group[d][q] == L->group[d][r];
            for (int i = 0; i < n; i++) {
                if (grp[i] == r)
                    pos = i;
                CHECK(L->group[d][grp[i]] == L->group[d][r],
                              "%s: ranks %d and %d belong to one %s group but have group ids %d and %d", sh, r,
                              grp[i], mesh_dim_name((mesh_dim)d), L->group[d][r], L->group[d][grp[i]]);
            }
            CHECK(L->group[d][r] == grp[0], "%s: rank %d's %s group id is %d; the id is the group's smallest "
                          "rank, %d", sh, r, mesh_dim_name((mesh_dim)d), L->group[d][r], grp[0]);
            CHECK(cnt == n && L->index[d][r] == pos && L->size[d] == n,
                          "%s: rank %d's %s group has %d ranks (size %d) at index %d; expected %d ranks, index %d", sh,
                          r, mesh_dim_name((mesh_dim)d), cnt, L->size[d], L->index[d][r], n, pos);
        }
    }
    /* the first TP group that spans two nodes (TP is innermost: groups of consecutive ranks) */
    int first = -1, last = -1;
    for (int r = 0; r < W && first < 0; r++) {
        int n = rl_mesh_group(&ref, RL_MESH_TP, r, grp, NULL);
        if (rl_mesh_node_of(&ref, grp[0]) != rl_mesh_node_of(&ref, grp[n - 1]))
            first = grp[0], last = grp[n - 1];
    }
    if (first >= 0)
        CHECK(L->tp_crosses_node == 1 && L->warning[0] && has_number(L->warning, first) &&
                      has_number(L->warning, last),
                      "%s: the TP group of ranks %d..%d is the first that spans two nodes; tp_crosses_node = %d and "
                      "warning «%s»; expected 1 and a warning naming that group by its first and last rank "
                      "(lab31.h: \"a warning naming the first such TP group\"). A TP group crosses a node whenever "
                      "its first and last rank sit on different nodes — also when tp is smaller than the GPUs per "
                      "node but does not divide them", sh, first, last, L->tp_crosses_node, nz(L->warning));
    else
        CHECK(L->tp_crosses_node == 0 && !L->warning[0], "%s: every TP group sits inside one node; "
                      "tp_crosses_node = %d and warning «%s»; expected 0 and an empty warning", sh, L->tp_crosses_node,
                      nz(L->warning));
    free(grp);
    free(err);
    free(L);
}

/* A random shape with about W <= max ranks: tp, pp, dp (and cp, ep when cp_ep). */
static rl_mesh_shape random_shape(rl_rng *g, int max, int cp_ep)
{
    rl_mesh_shape s = { 1, 1, 1, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP };
    s.tp = rl_grade_pick(g, 1, 8);
    s.pp = rl_grade_pick(g, 1, 6);
    if (cp_ep) {
        s.cp = rl_grade_pick(g, 1, 3);
        s.ep = rl_grade_pick(g, 1, 3);
        s.dp = s.ep * rl_grade_pick(g, 1, 3);
        s.order = rl_grade_pick(g, 0, 1) ? RL_MESH_ORDER_TP_CP_DP_PP : RL_MESH_ORDER_TP_CP_PP_DP;
    } else {
        s.dp = rl_grade_pick(g, 1, 12);
    }
    while (s.dp * s.pp * s.tp * s.cp > max) {
        if (s.pp > 1)
            s.pp--;
        else if (s.tp > 1)
            s.tp--;
        else if (s.cp > 1)
            s.cp--;
        else
            s.dp = s.ep;
    }
    return s;
}

START_TEST(t_mesh_3d)
{
    int shapes[][3] = { { 2, 2, 2 }, { 1, 1, 1 }, { 4, 1, 2 }, { 1, 4, 2 }, { 2, 4, 1 }, { 8, 8, 8 }, { 3, 5, 2 },
                        { 16, 2, 4 }, { 2, 2, 16 } };
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    rl_rng g = rl_grade_rng(1);
    static const int gpns[] = { 8, 4, 6, 2 };
    rl_mesh_shape rs[6];
    int rg[6];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 6; i++) {
        rs[i] = random_shape(&g, 512, 0);
        rg[i] = gpns[rl_grade_pick(&g, 0, 3)];
        rl_grade_text_add(&cs, "%sdp=%d pp=%d tp=%d on %d-GPU nodes", i ? "; " : "", rs[i].dp, rs[i].pp, rs[i].tp, rg[i]);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_layout(shapes[i][0], shapes[i][1], shapes[i][2], 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, hw);
        if (!rl_grade_quick())
            check_layout(shapes[i][0], shapes[i][1], shapes[i][2], 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, NULL);
    }
    rl_hw h4 = hw_nodes(4), h6 = hw_nodes(6);
    check_layout(2, 2, 4, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, &h4); /* nodes of 4 and 6 GPUs */
    check_layout(3, 2, 2, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, &h6);
    for (int i = 0; i < 6; i++) {
        rl_hw h = hw_nodes(rg[i]);
        check_layout(rs[i].dp, rs[i].pp, rs[i].tp, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, &h);
    }
}
END_TEST

START_TEST(t_mesh_cp_ep_order)
{
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    int shapes[][5] = { { 4, 2, 2, 1, 2 }, { 8, 1, 2, 2, 4 }, { 2, 2, 2, 2, 1 }, { 6, 2, 1, 1, 3 }, { 4, 4, 8, 2, 2 } };
    rl_rng g = rl_grade_rng(2);
    static const int gpns[] = { 8, 4, 6 };
    rl_mesh_shape rs[8];
    int rg[8];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 8; i++) {
        rs[i] = random_shape(&g, 256, 1);
        rg[i] = gpns[rl_grade_pick(&g, 0, 2)];
        rl_grade_text_add(&cs, "%sdp=%d (ep=%d) pp=%d cp=%d tp=%d %s on %d-GPU nodes", i ? "; " : "", rs[i].dp, rs[i].ep,
               rs[i].pp, rs[i].cp, rs[i].tp, order_name(rs[i].order), rg[i]);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int *s = shapes[i];
        check_layout(s[0], s[1], s[2], s[3], s[4], RL_MESH_ORDER_TP_CP_PP_DP, hw);
        check_layout(s[0], s[1], s[2], s[3], s[4], RL_MESH_ORDER_TP_CP_DP_PP, hw);
    }
    for (int i = 0; i < 8; i++) {
        rl_hw h = hw_nodes(rg[i]);
        check_layout(rs[i].dp, rs[i].pp, rs[i].tp, rs[i].cp, rs[i].ep, rs[i].order, &h);
    }
}
END_TEST

/* One invalid shape: RL_ERR_ARG with a message that names what is wrong. */
typedef struct bad_shape {
    int dp, pp, tp, cp, ep, order, world;
    const char *what;
    const char *word;      /* a word the message must contain (NULL: none) */
    long long num1, num2;  /* a number it must contain: num1, or num2 when given (NO_NUM: none) */
} bad_shape;

#define NO_NUM (-999999999LL)

static void check_bad_shape(const bad_shape *b)
{
    mesh_layout *L = calloc(1, sizeof *L);
    rl_mesh_shape s = { b->dp, b->pp, b->tp, b->cp, b->ep, (rl_mesh_order)b->order };
    char *err = calloc(1, 4096);
    int rc = layout_run(&s, b->world, NULL, L, err);
    CHECK(rc == RL_ERR_ARG && strlen(err) >= 10,
                  "%s (dp=%d pp=%d tp=%d cp=%d ep=%d, order %d, world %d) must be refused with RL_ERR_ARG and a "
                  "message saying what to change; got %s and «%s»", b->what, b->dp, b->pp, b->tp, b->cp, b->ep,
                  b->order, b->world, rl_status_name(rc), nz(err));
    CHECK((!b->word || strstr(err, b->word)) &&
                  (b->num1 == NO_NUM || has_number(err, b->num1) || (b->num2 != NO_NUM && has_number(err, b->num2))),
                  "%s: the message «%s» must name what is wrong (%s%s%s%s): the learner reading it has to know what "
                  "to change", b->what, err, b->word ? "the word '" : "", b->word ? b->word : "", b->word ? "' " : "",
                  "and the offending values");
    free(err);
    free(L);
}

START_TEST(t_mesh_bad)
{
    bad_shape fixed[] = {
        { 2, 2, 2, 1, 1, 0, 6, "dp=2 pp=2 tp=2 on 6 ranks", NULL, 6, NO_NUM },
        { 0, 2, 2, 1, 1, 0, 0, "dp=0", NULL, NO_NUM, NO_NUM },
        { 2, -1, 2, 1, 1, 0, -4, "pp=-1", NULL, NO_NUM, NO_NUM },
        { 4, 1, 2, 1, 3, 0, 8, "ep=3 with dp=4", "ep", 3, NO_NUM },
        { 2, 2, 2, 0, 1, 0, 0, "cp=0", NULL, NO_NUM, NO_NUM },
        { 8192, 1, 1, 1, 1, 0, 8192, "8192 ranks", NULL, 8192, NO_NUM },
        { 2, 2, 2, 1, 1, 2, 8, "an unknown rank order (2)", "order", NO_NUM, NO_NUM },
        { 2, 2, 2, 1, 1, -1, 8, "an unknown rank order (-1)", "order", NO_NUM, NO_NUM },
        { 4, 1, 1, 1, -2, 0, 4, "ep=-2 (dp % ep == 0 but a size < 1)", "ep", -2, NO_NUM },
        { -2, -2, 2, 1, 1, 0, 8, "dp=-2 pp=-2 (product 8 = world, sizes < 1)", NULL, -2, NO_NUM },
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_bad_shape(&fixed[i]);
    /* randomized: product off by some ranks, ep not dividing dp, two negative sizes whose product
     * is the world, a negative ep that divides dp, a world beyond the limit */
    rl_rng g = rl_grade_rng(3);
    bad_shape rb[5];
    char what[5][96];
    rl_grade_text cs = { 0 };
    {
        int dp = rl_grade_pick(&g, 1, 9), pp = rl_grade_pick(&g, 1, 5), tp = rl_grade_pick(&g, 1, 8);
        int W = dp * pp * tp + rl_grade_pick(&g, 1, 7) * (rl_grade_pick(&g, 0, 1) ? 1 : -1);
        if (W < 1 || W == dp * pp * tp)
            W = dp * pp * tp + 1;
        snprintf(what[0], sizeof what[0], "dp=%d x pp=%d x tp=%d on %d ranks", dp, pp, tp, W);
        rb[0] = (bad_shape){ dp, pp, tp, 1, 1, 0, W, what[0], NULL, W, NO_NUM };
    }
    {
        int dp = rl_grade_pick(&g, 2, 12), ep;
        do
            ep = rl_grade_pick(&g, 2, 13);
        while (dp % ep == 0);
        snprintf(what[1], sizeof what[1], "ep=%d with dp=%d", ep, dp);
        rb[1] = (bad_shape){ dp, 1, 2, 1, ep, 0, 2 * dp, what[1], "ep", ep, NO_NUM };
    }
    {
        int v[3] = { rl_grade_pick(&g, 1, 4), rl_grade_pick(&g, 1, 4), rl_grade_pick(&g, 1, 4) };
        int keep = rl_grade_pick(&g, 0, 2), neg[2], k = 0;
        for (int j = 0; j < 3; j++)
            if (j != keep)
                v[j] = -v[j], neg[k++] = v[j];
        snprintf(what[2], sizeof what[2], "dp=%d pp=%d tp=%d (product %d = the world, but sizes < 1)", v[0], v[1],
                 v[2], v[0] * v[1] * v[2]);
        rb[2] = (bad_shape){ v[0], v[1], v[2], 1, 1, 0, v[0] * v[1] * v[2], what[2], NULL, neg[0], neg[1] };
    }
    {
        int ep = -rl_grade_pick(&g, 1, 4), dp = -ep * rl_grade_pick(&g, 1, 3);
        snprintf(what[3], sizeof what[3], "ep=%d with dp=%d (dp %% ep == 0, but ep < 1)", ep, dp);
        rb[3] = (bad_shape){ dp, 1, 1, 1, ep, 0, dp, what[3], "ep", ep, NO_NUM };
    }
    {
        int W = RL_MESH_MAX_RANKS + rl_grade_pick(&g, 1, 300);
        snprintf(what[4], sizeof what[4], "dp=%d on %d ranks (more than %d)", W, W, RL_MESH_MAX_RANKS);
        rb[4] = (bad_shape){ W, 1, 1, 1, 1, 0, W, what[4], NULL, W, NO_NUM };
    }
    for (int i = 0; i < 5; i++)
        rl_grade_text_add(&cs, "%s%s", i ? "; " : "", rb[i].what);
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < 5; i++)
        check_bad_shape(&rb[i]);
}
END_TEST

START_TEST(t_mesh_warning)
{
    const rl_hw *hw = rl_hw_find("h100-2node-ib");
    mesh_layout *L = calloc(1, sizeof *L);
    char *err = calloc(1, 4096);
    rl_mesh_shape s = { 1, 1, 16, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP };
    int rc = layout_run(&s, 16, hw, L, err);
    CHECK(rc == 0, "mesh_layout_make(tp=16 on 16 ranks) returned %s: %s", rl_status_name(rc), nz(err));
    CHECK(L->tp_crosses_node && strlen(L->warning) > 10 && L->node[15] == 1,
                  "tp=16 on two nodes of 8 GPUs: tp_crosses_node = %d, warning «%s», rank 15 on node %d; the TP group "
                  "spans nodes 0 and 1 and must be warned about", L->tp_crosses_node, nz(L->warning), L->node[15]);
    rl_mesh_shape s2 = { 2, 1, 8, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP };
    rc = layout_run(&s2, 16, hw, L, err);
    CHECK(rc == 0 && !L->tp_crosses_node && !L->warning[0],
                  "dp=2 x tp=8 on two nodes of 8: every TP group is one node; no warning expected (got rc %s, "
                  "tp_crosses_node %d, «%s»)", rl_status_name(rc), L->tp_crosses_node, nz(L->warning));
    free(err);
    free(L);
    /* tp = 3 on 8-GPU nodes: ranks 0..2 and 3..5 fit, 6..8 spans nodes 0 and 1 — in both orders */
    check_layout(2, 2, 3, 1, 1, RL_MESH_ORDER_TP_CP_PP_DP, hw);
    check_layout(2, 2, 3, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP, hw);
    /* randomized: tp that does not divide the GPUs per node, or exceeds them, both orders */
    rl_rng g = rl_grade_rng(4);
    static const int gpns[] = { 4, 6, 8 };
    rl_mesh_shape rs[6];
    int rg[6];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 6; i++) {
        int gpn = gpns[rl_grade_pick(&g, 0, 2)], tp;
        do
            tp = rl_grade_pick(&g, 2, 12);
        while (i < 5 && gpn % tp == 0); /* the last case: a divisor, no warning */
        if (i == 5)
            tp = gpn / 2;
        int rest = (2 * gpn + tp - 1) / tp; /* enough groups to reach the second node */
        rs[i] = (rl_mesh_shape){ 1, 1, tp, 1, 1, rl_grade_pick(&g, 0, 1) ? RL_MESH_ORDER_TP_CP_DP_PP
                                                                         : RL_MESH_ORDER_TP_CP_PP_DP };
        rs[i].pp = rl_grade_pick(&g, 1, 3);
        rs[i].dp = (rest + rs[i].pp - 1) / rs[i].pp + rl_grade_pick(&g, 0, 1);
        rg[i] = gpn;
        rl_grade_text_add(&cs, "%sdp=%d pp=%d tp=%d %s on %d-GPU nodes", i ? "; " : "", rs[i].dp, rs[i].pp, tp,
               order_name(rs[i].order), gpn);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < 6; i++) {
        rl_hw h = hw_nodes(rg[i]);
        check_layout(rs[i].dp, rs[i].pp, rs[i].tp, 1, 1, rs[i].order, &h);
    }
}
END_TEST

/* What a run of mesh_build_comms leaves in the child's record. */
typedef struct comms_res {
    int lay_rc;                  /* mesh_layout_make's status (the ranks run only when it is 0) */
    char lay_err[4096];
    mesh_layout lay;
    int rc;                      /* rl_launch's status */
    int members[LAB31_MAX_RANKS][MESH_NDIMS][LAB31_MAX_RANKS];
    int size[LAB31_MAX_RANKS][MESH_NDIMS];
    char name[LAB31_MAX_RANKS][MESH_NDIMS][64];
    char role[LAB31_MAX_RANKS][MESH_NDIMS][8];
    int rank_rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][1400];
    rl_grade_blob trace;
} comms_res;

typedef struct comms_case {
    comms_res res;               /* the run, from the child's record */
} comms_case;

/* A run of mesh_build_comms in the child: the shape, where its results go, and the trace kept. */
typedef struct comms_job {
    const rl_mesh_shape *sh;
    int W, keep_trace;
    comms_res *o;
} comms_job;

static int comms_rank(rl_ctx *ctx, void *arg)
{
    const comms_job *j = arg;
    comms_res *o = j->o;
    int w = rl_rank(ctx);
    mesh_comms mc;
    memset(&mc, 0, sizeof mc);
    rl_clear_error(ctx);
    int rc = mesh_build_comms(ctx, &o->lay, &mc);
    o->rank_rc[w] = rc;
    if (rc) {
        snprintf(o->err[w], sizeof o->err[w], "%s", rl_last_error(ctx));
        note_err("mesh_build_comms", w, rc, o->err[w]);
        return 0; /* the communicators made so far are released when the run ends */
    }
    for (int d = 0; d < MESH_NDIMS; d++) {
        o->size[w][d] = mc.c[d] ? rl_comm_size(mc.c[d]) : 0;
        snprintf(o->name[w][d], sizeof o->name[w][d], "%s", mc.c[d] ? rl_comm_name(mc.c[d]) : "");
        snprintf(o->role[w][d], sizeof o->role[w][d], "%s", mc.c[d] ? rl_comm_role(mc.c[d]) : "");
        for (int i = 0; i < o->size[w][d] && i < LAB31_MAX_RANKS; i++)
            o->members[w][d][i] = rl_comm_global_rank(mc.c[d], i);
    }
    mesh_comms_free(&mc);
    return 0;
}

/* In the child: lays the shape out with mesh_layout_make, then (when it succeeded) runs
 * mesh_build_comms on every rank. */
static void comms_produce(void *out, void *arg)
{
    comms_job *j = arg;
    comms_res *o = j->o = out;
    o->lay_rc = mesh_layout_make(j->sh, j->W, NULL, &o->lay, o->lay_err, sizeof o->lay_err);
    if (o->lay_rc)
        return;
    rl_opts op = gopts(j->W);
    if (j->W > 8)
        op.hw = rl_hw_find("h100-2node-ib");
    rl_trace *t = NULL;
    o->rc = rl_launch(&op, comms_rank, j, j->keep_trace ? &t : NULL);
    o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Builds the layout and runs mesh_build_comms on every rank, in the child; returns the case and
 * the trace, from the record (the judge ends the test when the layout or a rank failed). */
static comms_case *comms_run(const rl_mesh_shape *sh, rl_trace **trace)
{
    int W = sh->dp * sh->pp * sh->tp * sh->cp;
    comms_case *c = calloc(1, sizeof *c);
    char st[200];
    shape_text(st, sizeof st, sh, 8);
    comms_job j = { sh, W, trace != NULL, NULL };
    const comms_res *o = rl_grade_run("mesh_build_comms", sizeof *o, comms_produce, &j);
    comms_res *res = &c->res;
    *res = *o;
    res->lay_err[sizeof res->lay_err - 1] = 0;
    res->lay.warning[sizeof res->lay.warning - 1] = 0;
    for (int w = 0; w < LAB31_MAX_RANKS; w++) {
        res->err[w][sizeof res->err[w] - 1] = 0;
        for (int d = 0; d < MESH_NDIMS; d++) {
            res->name[w][d][sizeof res->name[w][d] - 1] = 0;
            res->role[w][d][sizeof res->role[w][d] - 1] = 0;
            res->size[w][d] = clampi(res->size[w][d], 0, LAB31_MAX_RANKS);
        }
    }
    CHECK(res->lay_rc == 0, "mesh_layout_make(%s) failed (%s): %s", st, rl_status_name(res->lay_rc),
          nz(res->lay_err));
    for (int w = 0; w < W; w++)
        CHECK(res->rank_rc[w] == 0, "%s: mesh_build_comms on rank %d returned %s: %s", st, w,
                      rl_status_name(res->rank_rc[w]), nz(res->err[w]));
    CHECK(res->rc == 0, "%s: mesh_build_comms: the run failed (%s): the ranks made different calls (a split "
                  "missing on some rank, or in another order)", st, rl_status_name(res->rc));
    if (trace)
        *trace = rl_grade_trace(res->trace);
    return c;
}

static void comms_free(comms_case *c) { free(c); }

/* Fixed and randomized shapes (≤ 16 ranks) for the communicator tests. */
static int comm_shapes(rl_rng *g, rl_mesh_shape *out)
{
    const rl_mesh_order def = RL_MESH_ORDER_TP_CP_DP_PP; /* pp outermost */
    rl_mesh_shape fixed[] = { { 2, 2, 2, 1, 1, def }, { 4, 2, 1, 1, 2, def }, { 2, 1, 2, 2, 2, def },
                              { 2, 2, 2, 1, 1, RL_MESH_ORDER_TP_CP_PP_DP } /* dp outermost */ };
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        out[n++] = fixed[i];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 3; i++) {
        rl_mesh_shape s = random_shape(g, LAB31_MAX_RANKS, 1);
        out[n++] = s;
        rl_grade_text_add(&cs, "%sdp=%d (ep=%d) pp=%d cp=%d tp=%d %s", i ? "; " : "", s.dp, s.ep, s.pp, s.cp, s.tp,
               order_name(s.order));
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    return n;
}

START_TEST(t_mesh_comms)
{
    rl_rng g = rl_grade_rng(5);
    rl_mesh_shape sh[8];
    int ns = comm_shapes(&g, sh);
    for (int i = 0; i < ns; i++) {
        const rl_mesh_shape *s = &sh[i];
        int W = s->dp * s->pp * s->tp * s->cp;
        rl_mesh ref;
        ck_assert(rl_mesh_init(&ref, s, W, NULL, NULL, 0) == 0);
        comms_case *c = comms_run(s, NULL);
        char st[200];
        shape_text(st, sizeof st, s, 8);
        int grp[64];
        for (int w = 0; w < W; w++)
            for (int d = 0; d < MESH_NDIMS; d++) {
                int n = rl_mesh_group(&ref, mesh_dim_bits((mesh_dim)d), w, grp, NULL);
                CHECK(c->res.size[w][d] == n, "%s: rank %d's %s communicator has %d ranks, expected %d", st, w,
                              mesh_dim_name((mesh_dim)d), c->res.size[w][d], n);
                CHECK(!strcmp(c->res.role[w][d], mesh_dim_name((mesh_dim)d)), "%s: rank %d's %s communicator has "
                      "the role \"%s\", expected \"%s\" (rl_comm_set_role: traces and the timeline name its traffic "
                      "by it)", st, w, mesh_dim_name((mesh_dim)d), c->res.role[w][d], mesh_dim_name((mesh_dim)d));
                for (int k = 0; k < n; k++)
                    CHECK(c->res.members[w][d][k] == grp[k], "%s: rank %d's %s communicator: member %d is world "
                                  "rank %d, expected %d (members in ascending rank order: key = the index in the "
                                  "group)", st, w, mesh_dim_name((mesh_dim)d), k, c->res.members[w][d][k], grp[k]);
            }
        comms_free(c);
    }
}
END_TEST

/* The recorded mesh view must describe the shape (names outermost first; lab31.h). */
static void check_mesh_record(const rl_trace *t, const rl_mesh_shape *s, const char *st)
{
    int W = s->dp * s->pp * s->tp * s->cp, prod = 1, seen_dp = 0, seen_ep = 0, seen_edp = 0, seen_cp = 0;
    rl_grade_text got = { 0 };
    for (int i = 0; i < t->mesh_ndims; i++)
        rl_grade_text_add(&got, "%s%s=%d", i ? " " : "", t->mesh_names[i], t->mesh_sizes[i]);
    CHECK(t->mesh_ndims > 0, "%s: no mesh was recorded for the mesh view: rank 0 must call "
                  "rl_ctx_set_mesh (lab31.h: \"rank 0 records the mesh for the TUI's mesh view\")", st);
    for (int i = 0; i < t->mesh_ndims; i++) {
        const char *n = t->mesh_names[i];
        int want = strcmp(n, "tp") == 0 ? s->tp : strcmp(n, "cp") == 0 ? s->cp : strcmp(n, "pp") == 0 ? s->pp
                 : strcmp(n, "dp") == 0 ? s->dp : strcmp(n, "ep") == 0 ? s->ep : strcmp(n, "edp") == 0 ? s->dp / s->ep
                 : -1;
        CHECK(want == t->mesh_sizes[i], "%s: the recorded mesh is «%s»; dimension '%s' has size %d, "
                      "expected %d (names tp, cp, pp, dp or edp and ep)", st, nz(rl_grade_text_str(&got)), n, t->mesh_sizes[i],
                      want);
        prod *= t->mesh_sizes[i];
        seen_dp += strcmp(n, "dp") == 0, seen_ep += strcmp(n, "ep") == 0, seen_edp += strcmp(n, "edp") == 0;
        seen_cp += strcmp(n, "cp") == 0;
    }
    CHECK(prod == W && seen_cp == (s->cp > 1) && (s->ep > 1 ? seen_ep == 1 && seen_edp == 1 && !seen_dp
                                                                     : !seen_ep && !seen_edp && seen_dp <= 1),
                  "%s: the recorded mesh is «%s»; expected the sizes to multiply to the %d ranks, cp only when > 1 "
                  "and dp as {edp, ep} when ep > 1", st, nz(rl_grade_text_str(&got)), W);
    /* the order: outermost first (the mesh view places rank r's cell from the sizes in this
     * order); dimensions of size 1 may be left out or put anywhere */
    const char *exp_n[5];
    int exp_s[5], ne = 0, pp_outer = s->order == RL_MESH_ORDER_TP_CP_DP_PP;
    if (pp_outer)
        exp_n[ne] = "pp", exp_s[ne++] = s->pp;
    if (s->ep > 1)
        exp_n[ne] = "edp", exp_s[ne++] = s->dp / s->ep, exp_n[ne] = "ep", exp_s[ne++] = s->ep;
    else
        exp_n[ne] = "dp", exp_s[ne++] = s->dp;
    if (!pp_outer)
        exp_n[ne] = "pp", exp_s[ne++] = s->pp;
    exp_n[ne] = "cp", exp_s[ne++] = s->cp;
    exp_n[ne] = "tp", exp_s[ne++] = s->tp;
    rl_grade_text want = { 0 };
    int same = 1, k = 0;
    for (int i = 0; i < ne; i++) {
        if (exp_s[i] == 1)
            continue;
        rl_grade_text_add(&want, "%s%s=%d", want.len ? " " : "", exp_n[i], exp_s[i]);
        while (k < t->mesh_ndims && t->mesh_sizes[k] == 1)
            k++;
        same &= k < t->mesh_ndims && strcmp(t->mesh_names[k], exp_n[i]) == 0;
        k++;
    }
    CHECK(same, "%s: the recorded mesh is «%s»; the mesh view reads the dimensions outermost first (lab31.c: "
                "\"names outermost first, e.g. {\"pp\", \"dp\", \"tp\"}\"; mesh.h's rl_mesh_record does the same): "
                "expected «%s» (dimensions of size 1 may be left out). %s", st, nz(rl_grade_text_str(&got)),
          nz(rl_grade_text_str(&want)),
          pp_outer ? "In the default order (tp-cp-dp-pp, Megatron-LM's) PP is the outermost dimension (rank = tp "
                     "+ TP·(cp + CP·(dp + DP·pp))) and TP the innermost, so pp comes first and tp last"
                   : "In the order tp-cp-pp-dp DP is the outermost dimension (rank = tp + TP·(cp + CP·(pp + "
                     "PP·dp))), so dp comes first");
    rl_grade_text_free(&want);
    rl_grade_text_free(&got);
}

START_TEST(t_mesh_split_order)
{
    rl_rng g = rl_grade_rng(6);
    rl_mesh_shape sh[8];
    int ns = comm_shapes(&g, sh);
    for (int i = 0; i < ns; i++) {
        const rl_mesh_shape *s = &sh[i];
        int W = s->dp * s->pp * s->tp * s->cp;
        rl_trace *t = NULL;
        comms_case *c = comms_run(s, &t);
        if (!rl_grade_judging()) { /* the child: the trace's checks are the judge's */
            rl_trace_free(t);
            comms_free(c);
            continue;
        }
        char st[200];
        shape_text(st, sizeof st, s, 8);
        ck_assert(t);
        for (int w = 0; w < W; w++) {
            int nsplit = 0;
            for (size_t k = 0; k < t->n; k++)
                nsplit += t->ev[k].rank == w && strcmp(t->ev[k].name, "comm_split") == 0;
            CHECK(nsplit == MESH_NDIMS, "%s: rank %d made %d rl_comm_split calls; lab31.h: \"one "
                          "rl_comm_split per kind, in mesh_dim order\" (%d)", st, w, nsplit, MESH_NDIMS);
            long long prev = -1;
            for (int d = 0; d < MESH_NDIMS; d++) {
                long long seq = -1;
                int color = -1, used = 0;
                const char *nm = c->res.name[w][d];
                int ok = sscanf(nm, "world/%lld.%d%n", &seq, &color, &used) == 2 && nm[used] == 0;
                CHECK(ok && seq > prev && color == c->res.lay.group[d][w],
                              "%s: rank %d's %s communicator is «%s» (split #%lld of the world with color %d); "
                              "expected a split of the world made after the %s one, with color = the group id %d "
                              "(lab31.h: \"one rl_comm_split per kind, in mesh_dim order, color = the group id\")",
                              st, w, mesh_dim_name((mesh_dim)d), nz(nm), seq, color,
                              d ? mesh_dim_name((mesh_dim)(d - 1)) : "(first)", c->res.lay.group[d][w]);
                prev = seq;
            }
        }
        check_mesh_record(t, s, st);
        rl_trace_free(t);
        comms_free(c);
    }
}
END_TEST

/* ================================================================== 31.2 a 3D training step */

#define TD_SEED 5
#define TD_MAX_STEPS 4

/* One 3D shape: sizes, micro-batches m of b samples, the MLP's width h, ffn f and layers. */
typedef struct td_shape {
    int dp, pp, tp, m, b, h, f, layers, out, steps;
} td_shape;

static td_config td_cfg_of(const td_shape *s)
{
    td_config c;
    memset(&c, 0, sizeof c);
    c.dp = s->dp, c.pp = s->pp, c.tp = s->tp, c.micro_batches = s->m, c.micro_batch = s->b;
    c.model = rl_model_config_default(RL_MODEL_MLP);
    c.model.hidden = s->h;
    c.model.layers = s->layers;
    c.model.out_dim = s->out;
    c.model.ffn = s->f;
    c.model.param_dtype = c.model.grad_dtype = RL_F32;
    c.adamw = rl_adamw_defaults();
    c.adamw.lr = 1e-2f;
    c.data_seed = TD_SEED;
    return c;
}

/* The course's small shape: h = 32, f = 4h, 4 layers, b = 4. */
static td_shape td_fixed(int dp, int pp, int tp, int m, int steps)
{
    td_shape s = { dp, pp, tp, m, 4, 32, 128, 4, 8, steps };
    return s;
}

/* A random shape on at most 16 ranks: dp, pp, tp in 1..4 (odd sizes too), m from 1 to 2p+1
 * (m < p and m = p−1 included), odd widths, f a multiple of tp, layers a multiple of pp. */
static td_shape td_random(rl_rng *g)
{
    td_shape s;
    do {
        s.dp = rl_grade_pick(g, 1, 4), s.pp = rl_grade_pick(g, 1, 4), s.tp = rl_grade_pick(g, 1, 4);
    } while (s.dp * s.pp * s.tp > LAB31_MAX_RANKS || s.dp * s.pp * s.tp < 2);
    s.m = rl_grade_pick(g, 0, 2) == 0 ? rl_grade_pick(g, 1, s.pp) : rl_grade_pick(g, 1, 2 * s.pp + 1);
    s.b = rl_grade_pick(g, 1, 3);
    s.h = rl_grade_pick(g, 6, 20);
    s.f = s.tp * rl_grade_pick(g, 3, 9);
    s.layers = s.pp * rl_grade_pick(g, 1, 2);
    s.out = rl_grade_pick(g, 1, 5);
    s.steps = 2;
    return s;
}

static void td_text(char *buf, size_t size, const td_shape *s)
{
    snprintf(buf, size, "dp=%d x pp=%d x tp=%d, m=%d micro-batch%s of b=%d, h=%d ffn=%d, layers=%d, %d step%s", s->dp,
             s->pp, s->tp, s->m, s->m == 1 ? "" : "es", s->b, s->h, s->f, s->layers, s->steps, s->steps == 1 ? "" : "s");
}

/* What a 3D run leaves in the child's record. */
typedef struct td_res {
    int rc;                        /* rl_launch's status */
    char verdict[1024];            /* the watchdog's or the mismatch check's verdict line ("": none) */
    rl_grade_blob params[LAB31_MAX_RANKS]; /* f32 [steps][psi]: the parameters after each step (NaN: not held) */
    rl_grade_blob grad[LAB31_MAX_RANKS];   /* f32 [psi]: the gradient each DP piece was updated with at step 0 */
    float loss[LAB31_MAX_RANKS][TD_MAX_STEPS];
    int rank_rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][1400];
    char tp_name[LAB31_MAX_RANKS][64], pp_name[LAB31_MAX_RANKS][64], dp_name[LAB31_MAX_RANKS][64];
    int stage[LAB31_MAX_RANKS], dp_rank[LAB31_MAX_RANKS], prev[LAB31_MAX_RANKS], next[LAB31_MAX_RANKS];
    int64_t padded[LAB31_MAX_RANKS];
    rl_grade_blob trace;
} td_res;

typedef struct td_case {
    td_config cfg;
    int steps, want_loss;    /* want_loss 0: td_train_step gets loss = NULL (allowed) */
    int want_grad;           /* 1: after step 0 read back the reduced gradient (Adam's m ÷ (1 − β1)) */
    int64_t psi;
    td_res res;              /* the run, from the child's record */
} td_case;

/* A 3D run in the child: the case, where its results go, the ranks' host copies of their
 * parameters and gradients, and whether the trace is kept. */
typedef struct td_job {
    const td_case *c;
    td_res *o;
    int W, keep_trace;
    float *params[LAB31_MAX_RANKS]; /* [steps][psi] */
    float *grad[LAB31_MAX_RANKS];   /* [psi] */
} td_job;

/* Writes the gradient this DP rank's piece was updated with in its first step — Adam's first
 * moment e->exp_avg ÷ (1 − β1) (lab31.h: "Adam m and v of this DP rank's piece") — into out in
 * the one-rank model's order (NaN where this rank holds nothing of the piece), through
 * td_export_params on a scratch copy of the flat parameters (restored after). */
static void td_grab_grad(td_engine *e, float *out, int64_t psi)
{
    int64_t P = e->padded, sh = e->shard, off = (int64_t)e->dp_rank * e->shard;
    float *save = malloc(sizeof(float) * (size_t)P), *tmp = malloc(sizeof(float) * (size_t)P);
    float *m = malloc(sizeof(float) * (size_t)(sh + 1));
    for (int64_t k = 0; k < psi; k++)
        out[k] = NAN;
    if (save && tmp && m && rl_tensor_to_f32(e->flat_param, save, P) == 0 && rl_tensor_to_f32(e->exp_avg, m, sh) == 0) {
        for (int64_t i = 0; i < P; i++)
            tmp[i] = NAN;
        for (int64_t i = 0; i < sh && off + i < P; i++)
            tmp[off + i] = m[i] / (1.0f - e->cfg.adamw.beta1);
        if (rl_tensor_from_f32(e->flat_param, tmp, P) == 0) {
            td_export_params(e, out);
            rl_tensor_from_f32(e->flat_param, save, P);
        }
    }
    free(save), free(tmp), free(m);
}

static int td_rank(rl_ctx *ctx, void *arg)
{
    const td_job *j = arg;
    const td_case *c = j->c;
    td_res *o = j->o;
    int w = rl_rank(ctx);
    rl_data *data = rl_data_regression(ctx, c->cfg.model.hidden, c->cfg.model.out_dim, c->cfg.data_seed);
    td_engine *e = data ? td_engine_new(ctx, &c->cfg, data) : NULL;
    if (!e) {
        o->rank_rc[w] = RL_ERR_ARG;
        snprintf(o->err[w], sizeof o->err[w], "%s", rl_last_error(ctx));
        rl_data_free(data);
        return 0;
    }
    snprintf(o->tp_name[w], sizeof o->tp_name[w], "%s", rl_comm_name(e->comms.tp));
    snprintf(o->pp_name[w], sizeof o->pp_name[w], "%s", rl_comm_name(e->comms.pp));
    snprintf(o->dp_name[w], sizeof o->dp_name[w], "%s", rl_comm_name(e->comms.dp));
    o->stage[w] = e->stage;
    o->dp_rank[w] = e->dp_rank;
    o->prev[w] = e->stage > 0 ? rl_comm_global_rank(e->comms.pp, e->stage - 1) : -1;
    o->next[w] = e->stage < c->cfg.pp - 1 ? rl_comm_global_rank(e->comms.pp, e->stage + 1) : -1;
    o->padded[w] = e->padded;
    for (int s = 0; s < c->steps && !o->rank_rc[w]; s++) {
        rl_clear_error(ctx);
        rl_step_begin(ctx, s);
        float l = NAN;
        int rc = td_train_step(e, s, c->want_loss ? &l : NULL);
        rl_step_end(ctx);
        o->loss[w][s] = l;
        if (rc) {
            o->rank_rc[w] = rc;
            snprintf(o->err[w], sizeof o->err[w], "%s", rl_last_error(ctx));
            note_err("td_train_step", w, rc, o->err[w]);
            break;
        }
        if (s == 0 && c->want_grad)
            td_grab_grad(e, j->grad[w], c->psi);
        float *p = j->params[w] + (int64_t)s * c->psi;
        for (int64_t k = 0; k < c->psi; k++)
            p[k] = NAN;
        td_export_params(e, p);
    }
    if (!o->rank_rc[w])
        td_engine_free(e); /* only after a clean step: on an error, collectives may be in flight */
    rl_data_free(data);
    return 0;
}

/* In the child: runs the 3D step on every rank, its stderr through a temporary file (copied
 * back after: a watchdog that fires, or a mismatch, leaves its verdict line there for the
 * message); keeps each rank's parameters (and gradients) and the trace. */
static void td_produce(void *out, void *arg)
{
    td_job *j = arg;
    const td_case *c = j->c;
    td_res *o = j->o = out;
    int64_t n = c->psi * c->steps;
    for (int r = 0; r < j->W; r++) {
        j->params[r] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        j->grad[r] = malloc(sizeof(float) * (size_t)(c->psi ? c->psi : 1));
        for (int64_t k = 0; k < n; k++)
            j->params[r][k] = NAN;
        for (int64_t k = 0; k < c->psi; k++)
            j->grad[r][k] = NAN;
    }
    rl_opts op = gopts(j->W);
    if (j->W > 8)
        op.hw = rl_hw_find("h100-2node-ib");
    fflush(stderr);
    FILE *cap = rl_grade_tmpfile();
    int saved = cap ? dup(2) : -1;
    if (cap)
        dup2(fileno(cap), 2);
    rl_trace *t = NULL;
    o->rc = rl_launch(&op, td_rank, j, j->keep_trace ? &t : NULL);
    if (cap) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        rewind(cap);
        char *line = NULL;
        size_t len = 0;
        while (getline(&line, &len, cap) >= 0) {
            fputs(line, stderr);
            if (!o->verdict[0] && strncmp(line, "verdict: ", 9) == 0)
                snprintf(o->verdict, sizeof o->verdict, "%.*s", (int)strcspn(line + 9, "\n"), line + 9);
        }
        free(line);
        fclose(cap);
    }
    for (int r = 0; r < j->W; r++) {
        o->params[r] = rl_grade_keep(j->params[r], (size_t)n * sizeof(float));
        if (c->want_grad)
            o->grad[r] = rl_grade_keep(j->grad[r], (size_t)c->psi * sizeof(float));
        free(j->params[r]);
        free(j->grad[r]);
    }
    o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* The one-rank run on the whole global batch: the parameters after each step (out: [steps][psi]),
 * the gradient of step 0 (grad0, may be NULL), and per step the mean loss of each DP replica's
 * m·b samples (before that step's update). */
static void td_reference(const td_config *cfg, int steps, float *out, float *grad0, int64_t psi,
                         double loss[][LAB31_MAX_RANKS])
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, &cfg->model);
    rl_data *data = rl_data_regression(ctx, cfg->model.hidden, cfg->model.out_dim, cfg->data_seed);
    rl_model_optim *opt = rl_model_adamw_new(m, cfg->adamw);
    ck_assert(m && data && opt);
    rl_batch b, rb;
    memset(&b, 0, sizeof b);
    memset(&rb, 0, sizeof rb);
    int64_t per = (int64_t)cfg->micro_batches * cfg->micro_batch, B = (int64_t)cfg->dp * per;
    for (int s = 0; s < steps; s++) {
        for (int d = 0; d < cfg->dp; d++) {
            float l = 0;
            ck_assert(rl_data_get(data, ctx, s, d * per, per, &rb) == 0);
            ck_assert(rl_model_forward(m, &rb, &l) == 0);
            loss[s][d] = l;
        }
        ck_assert(rl_model_zero_grad(m) == 0);
        ck_assert(rl_data_get(data, ctx, s, 0, B, &b) == 0);
        ck_assert(rl_model_forward(m, &b, NULL) == 0);
        ck_assert(rl_model_backward(m, 1.0f) == 0);
        int64_t off = 0;
        for (int i = 0; i < m->nparams && s == 0 && grad0; i++) {
            rl_tensor_to_f32(m->params[i].grad, grad0 + off, m->params[i].numel);
            off += m->params[i].numel;
        }
        ck_assert(rl_model_adamw_step(opt) == 0);
        off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_tensor_to_f32(m->params[i].value, out + (int64_t)s * psi + off, m->params[i].numel);
            off += m->params[i].numel;
        }
        ck_assert(off == psi);
    }
    rl_batch_free(&b);
    rl_batch_free(&rb);
    rl_model_optim_free(opt);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

enum { TD_PARAMS = 1, TD_LOSS = 2, TD_DP = 4, TD_TPPP = 8, TD_GRAD = 16, TD_ORDER = 32 };

/* The events of rank w on comm in step s (name NULL: any collective or send/recv but splits). */
static int td_count(const rl_trace *t, int w, int s, const char *comm, const char *name, double bytes)
{
    int n = 0;
    for (size_t k = 0; k < t->n; k++) {
        const rl_trace_event *e = &t->ev[k];
        if (e->rank != w || e->tags[RL_TAG_STEP] != s || (e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P))
            continue;
        if (strcmp(e->name, "comm_split") == 0 || (comm && strcmp(e->comm, comm)) || (name && strcmp(e->name, name)))
            continue;
        if (bytes >= 0 && fabs(e->bytes - bytes) > 0.5)
            continue;
        n++;
    }
    return n;
}

/* The first rank whose error is its own (not a stop because another rank failed), else the
 * first that failed at all; -1 when every rank returned 0. */
static int td_failed_rank(const td_case *c, int W)
{
    const td_res *o = &c->res;
    for (int r = 0; r < W; r++)
        if (o->rank_rc[r] && o->rank_rc[r] != RL_ERR_ABORTED && o->rank_rc[r] != RL_ERR_HANG && o->err[r][0])
            return r;
    for (int r = 0; r < W; r++)
        if (o->rank_rc[r])
            return r;
    return -1;
}

/* A failed 3D run explained: the learner's own error if a rank reported one, else what the
 * watchdog or the mismatch check saw (their verdict, from the flight dump), with the usual
 * causes of that kind of stop. */
static void td_explain_failure(const char *st, const td_case *c, int W, int rc, const char *verdict)
{
    int r = td_failed_rank(c, W);
    const td_res *o = &c->res;
    if (r >= 0 && o->rank_rc[r] != RL_ERR_ABORTED && o->rank_rc[r] != RL_ERR_HANG)
        CHECK(0, "%s: rank %d (stage %d): td_train_step returned %s: %s", st, r, o->stage[r],
              rl_status_name(o->rank_rc[r]), nz(o->err[r]));
    int p2p = strstr(verdict, " send") || strstr(verdict, " recv");
    if (rc == RL_ERR_HANG)
        CHECK(0, "%s: the run hung: the watchdog stopped it after %g s without progress in a %s. %s. The "
              "watchdog's verdict: %s", st, gopts(1).timeout_s, p2p ? "send or receive" : "collective",
              p2p ? "A send or receive whose partner never made the matching call: an output that never left (README "
                    "31.2: every send and receive of a step happens before ZeRO-1 begins), or two stages each "
                    "waiting in a call the other makes only later"
                  : "A collective that some ranks of its group never called: every rank of a TP group must run the "
                    "same ops (each block's all-reduce), every rank of a DP group ZeRO-1's reduce-scatter and "
                    "all-gather, each on its own group's communicator",
              nz(verdict));
    CHECK(rc == 0, "%s: the run failed (%s)%s%s: a collective on the wrong group, or the ranks of a group calling "
                   "different collectives", st, rl_status_name(rc), verdict[0] ? ": " : "", verdict);
    CHECK(r < 0, "%s: rank %d: %s (%s)", st, r, rl_status_name(o->rank_rc[r]), nz(o->err[r]));
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of got / want over the elements whose reference is at least a tenth of the
 * largest (the factor a scale error multiplies the gradient by). */
static double td_ratio(const float *got, const float *want, int64_t n)
{
    double mx = 0;
    for (int64_t k = 0; k < n; k++)
        mx = fmax(mx, fabs(want[k]));
    double *q = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t nq = 0;
    for (int64_t k = 0; k < n; k++)
        if (!isnan(got[k]) && fabs(want[k]) >= 0.1 * mx && mx > 0)
            q[nq++] = got[k] / want[k];
    qsort(q, (size_t)nq, sizeof *q, cmp_dbl);
    double r = nq ? q[nq / 2] : NAN;
    free(q);
    return r;
}

/* Runs one shape; checks what `what` asks (TD_* bits). */
static void td_check(const td_shape *sh, int what)
{
    char st[240];
    td_text(st, sizeof st, sh);
    td_case *c = calloc(1, sizeof *c);
    c->cfg = td_cfg_of(sh);
    c->steps = sh->steps;
    c->want_loss = (what & TD_LOSS) != 0;
    c->want_grad = (what & TD_GRAD) != 0;
    rl_ctx *sctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *mm = rl_model_new(sctx, &c->cfg.model);
    CHECK(mm, "grader: the one-rank model of %s cannot be built", st);
    c->psi = rl_model_numel(mm);
    rl_model_free(mm);
    rl_ctx_free_standalone(sctx);
    int W = sh->dp * sh->pp * sh->tp;
    td_job job = { c, NULL, W, (what & (TD_DP | TD_TPPP | TD_ORDER)) != 0, { 0 }, { 0 } };
    const td_res *o = rl_grade_run("td_train_step", sizeof *o, td_produce, &job);
    td_res *res = &c->res;
    *res = *o;
    res->verdict[sizeof res->verdict - 1] = 0;
    for (int r = 0; r < LAB31_MAX_RANKS; r++) {
        res->err[r][sizeof res->err[r] - 1] = 0;
        res->tp_name[r][sizeof res->tp_name[r] - 1] = 0;
        res->pp_name[r][sizeof res->pp_name[r] - 1] = 0;
        res->dp_name[r][sizeof res->dp_name[r] - 1] = 0;
        res->dp_rank[r] = clampi(res->dp_rank[r], 0, sh->dp - 1);
    }
    if (!rl_grade_judging()) { /* the child: the one-rank reference and the comparisons are the judge's */
        free(c);
        return;
    }
    td_explain_failure(st, c, W, res->rc, res->verdict);
    rl_trace *t = job.keep_trace ? rl_grade_trace(res->trace) : NULL;
    const float *params[LAB31_MAX_RANKS] = { 0 }, *grad[LAB31_MAX_RANKS] = { 0 };
    for (int r = 0; r < W; r++) {
        params[r] = rl_grade_blob_get(res->params[r], sizeof(float), (size_t)(c->psi * sh->steps));
        if (c->want_grad)
            grad[r] = rl_grade_blob_get(res->grad[r], sizeof(float), (size_t)c->psi);
    }
    if (what & (TD_PARAMS | TD_LOSS | TD_GRAD)) {
        float *ref = malloc(sizeof(float) * (size_t)(c->psi * sh->steps)), *g0 = malloc(sizeof(float) * (size_t)c->psi);
        double lref[TD_MAX_STEPS][LAB31_MAX_RANKS];
        td_reference(&c->cfg, sh->steps, ref, g0, c->psi, lref);
        if (what & TD_GRAD) {
            /* the gradient each DP piece was updated with, against the one-rank gradient of the
             * mean loss over the whole global batch */
            float *got = malloc(sizeof(float) * (size_t)c->psi);
            double mx = 0;
            for (int64_t k = 0; k < c->psi; k++) {
                got[k] = NAN;
                mx = fmax(mx, fabs(g0[k]));
                for (int r = 0; r < W && isnan(got[k]); r++)
                    got[k] = grad[r][k];
            }
            int64_t nbad = 0, kbad = -1, nmiss = 0;
            for (int64_t k = 0; k < c->psi; k++) {
                if (isnan(got[k]))
                    nmiss++;
                else if (!(fabs(got[k] - g0[k]) <= 1e-3 * fabs(g0[k]) + 1e-5 * mx) && !nbad++)
                    kbad = k;
            }
            double ratio = td_ratio(got, g0, c->psi);
            const char *why = "";
            if (fabs(ratio - sh->dp) < 0.01 * sh->dp && sh->dp > 1)
                why = "that factor is dp: the sum over DP, not the mean (lab31.h: \"the mean over DP of "
                      "e->flat_grad\")";
            else if (fabs(ratio - 1.0 / sh->dp) < 0.01 / sh->dp && sh->dp > 1)
                why = "that factor is 1/dp: divided by dp twice (RL_AVG already takes the mean)";
            else if (fabs(ratio) < 1e-6)
                why = "Adam's first moment is zero: AdamW did not run on e->exp_avg / e->exp_avg_sq (lab31.h: \"Adam m "
                      "and v of this DP rank's piece\")";
            else if (fabs(ratio - 1.0) > 0.01)
                why = "a factor that is neither dp nor 1/dp: a micro-batch's gradient lost or counted twice, or the "
                      "wrong slice reduced";
            else
                why = "the bulk is right: some elements are off — the wrong slice of the flat vector reduced "
                      "(e->dp_rank · e->shard), a micro-batch's gradient lost, or the padding ignored";
            CHECK(nbad == 0 && nmiss == 0,
                  "%s: after step 0, the gradient each DP rank's piece was updated with (Adam's first moment "
                  "e->exp_avg ÷ (1 − β1)) differs from the one-rank gradient of the mean loss over the global batch "
                  "in %lld of %lld elements%s%s; first: element %lld (registration order) = %.7g, expected %.7g. "
                  "Over the large elements it is %.4g× the expected gradient: %s", st, (long long)nbad,
                  (long long)c->psi, nmiss ? " and " : "", nmiss ? "some elements are in no rank's piece" : "",
                  (long long)kbad, kbad >= 0 ? got[kbad] : NAN, kbad >= 0 ? g0[kbad] : NAN, ratio, why);
            free(got);
        }
        if (what & TD_PARAMS) {
            /* judged after the last step (as the handout says); the steps before only say where
             * it went wrong (after one AdamW step an element whose gradient is near 0 moves by an
             * amount its rounding decides: single elements may differ there) */
            int64_t nbad[TD_MAX_STEPS] = { 0 }, kbad = -1;
            int rbad = -1, S = sh->steps, first = S - 1;
            for (int s = 0; s < S; s++) {
                const float *rs = ref + (int64_t)s * c->psi;
                nbad[s] = 0;
                for (int64_t k = 0; k < c->psi; k++) {
                    int held = 0, bad = 0, rb = -1;
                    for (int r = 0; r < W; r++) {
                        float v = params[r][(int64_t)s * c->psi + k];
                        if (isnan(v))
                            continue;
                        held = 1;
                        if (!(fabs(v - rs[k]) <= 2e-4 * fabs(rs[k]) + 2e-5) && !bad)
                            bad = 1, rb = r;
                    }
                    if (bad || !held) {
                        if (s == S - 1 && !nbad[s])
                            kbad = k, rbad = rb;
                        nbad[s]++;
                    }
                }
            }
            for (int s = S - 1; s >= 0; s--)
                if (nbad[s] * 10 >= nbad[S - 1] && nbad[s] > 0)
                    first = s;
            const float *rl = ref + (int64_t)(S - 1) * c->psi;
            if (nbad[S - 1]) {
                rl_grade_text why = { 0 };
                if (first == 0)
                    rl_grade_text_add(&why, "They differ already after step 0. Causes: a ZeRO-1 collective on the "
                                      "wrong group, a skipped all-gather (the other DP ranks' pieces stay old), the "
                                      "mean over DP taken wrong, a micro-batch's gradient lost or counted twice, the "
                                      "padding of the flat vector ignored");
                else
                    rl_grade_text_add(&why, "After step 0 they still matched; they part from step %d on. Causes of an "
                                      "error that appears only after the first step: the gradients not zeroed at the "
                                      "start of each step (backward accumulates into e->flat_grad), Adam's step count "
                                      "not advanced exactly once per step (e->step frozen or advanced twice), the "
                                      "data of step 0 used again (the step number not passed on to "
                                      "td_stage_forward), or other state of the previous step carried over", first);
                CHECK(0, "%s: after the last step (%d), %lld parameter values differ from the one-rank run on the "
                      "whole global batch; first: element %lld (registration order) on rank %d = %.7g, one-rank "
                      "%.7g. %s", st, S - 1, (long long)nbad[S - 1], (long long)kbad, rbad,
                      rbad >= 0 ? params[rbad][(int64_t)(S - 1) * c->psi + kbad] : NAN, kbad >= 0 ? rl[kbad] : NAN,
                      rl_grade_text_str(&why));
            }
        }
        if (what & TD_LOSS)
            for (int s = 0; s < sh->steps; s++)
                for (int r = 0; r < W; r++) {
                    int last = res->stage[r] == sh->pp - 1;
                    double want = last ? lref[s][res->dp_rank[r]] : 0.0, got = res->loss[r][s];
                    CHECK(last ? fabs(got - want) <= 1e-4 * fabs(want) + 1e-6 : got == 0.0,
                                  "%s: step %d, rank %d (stage %d of %d, DP replica %d): *loss = %.7g, expected %.7g "
                                  "(lab31.h: \"*loss (may be NULL) gets the mean micro-batch loss on the last stage, 0 elsewhere\": "
                                  "the sum of the m losses divided by m, reset every step)", st, s, r, res->stage[r],
                                  sh->pp, res->dp_rank[r], got, want);
                }
        free(ref);
        free(g0);
    }
    if (what & TD_DP) {
        for (int r = 0; r < W; r++)
            for (int s = 0; s < sh->steps; s++) {
                double full = 4.0 * (double)res->padded[r];
                int rs = td_count(t, r, s, res->dp_name[r], "reduce_scatter", full);
                int ag = td_count(t, r, s, res->dp_name[r], "all_gather", full);
                int all = td_count(t, r, s, res->dp_name[r], NULL, -1);
                CHECK(sh->dp == 1 ? all == rs + ag && rs <= 1 && ag <= 1 : rs == 1 && ag == 1 && all == 2,
                              "%s: step %d, rank %d made %d reduce-scatter(s) and %d all-gather(s) of its whole flat "
                              "vector (%lld f32 = %.0f bytes) on its DP group, and %d collectives there in all; ZeRO-1 "
                              "is one reduce-scatter of the gradients and one all-gather of the updated pieces per "
                              "step on e->comms.dp (lab31.h: \"one reduce-scatter and one all-gather of the whole "
                              "padded vector per\")", st, s, r, rs, ag,
                              (long long)res->padded[r], full, all);
                for (size_t k = 0; k < t->n; k++) {
                    const rl_trace_event *e = &t->ev[k];
                    int zero1 = strcmp(e->name, "reduce_scatter") == 0 || strcmp(e->name, "all_gather") == 0;
                    CHECK(!(e->rank == r && e->tags[RL_TAG_STEP] == s && zero1 && strcmp(e->comm, res->dp_name[r])),
                                  "%s: step %d, rank %d ran a %s on «%s», not on its DP group «%s»: ZeRO-1 runs over "
                                  "the data-parallel group (e->comms.dp)", st, s, r, e->name, nz(e->comm),
                                  res->dp_name[r]);
                }
            }
    }
    if (what & TD_TPPP) {
        int blocks = sh->layers / sh->pp;
        double act = 4.0 * sh->b * sh->h;
        for (int r = 0; r < W; r++)
            for (int s = 0; s < sh->steps; s++) {
                int ar = td_count(t, r, s, res->tp_name[r], "all_reduce", -1);
                int want_ar = sh->tp > 1 ? 2 * blocks * sh->m : 0;
                CHECK(ar == want_ar || (sh->tp == 1 && ar <= want_ar),
                              "%s: step %d, rank %d made %d all-reduces on its TP group; the m=%d micro-batches "
                              "through %d blocks make %d (one forward, one backward per block): run every op of "
                              "this stage's 1F1B list once, with e->comms.tp", st, s, r, ar, sh->m, blocks, want_ar);
                int sends = 0, recvs = 0;
                for (size_t k = 0; k < t->n; k++) {
                    const rl_trace_event *e = &t->ev[k];
                    if (e->rank != r || e->tags[RL_TAG_STEP] != s || (e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P) ||
                        strcmp(e->name, "comm_split") == 0)
                        continue;
                    int p2p = strcmp(e->name, "send") == 0 || strcmp(e->name, "recv") == 0;
                    if (strcmp(e->name, "all_reduce") == 0)
                        CHECK(strcmp(e->comm, res->tp_name[r]) == 0, "%s: step %d, rank %d ran an all-reduce "
                                      "on «%s», not on its TP group «%s»: the blocks' all-reduces run on e->comms.tp",
                                      st, s, r, nz(e->comm), res->tp_name[r]);
                    else if (p2p) {
                        CHECK(strcmp(e->comm, res->pp_name[r]) == 0 &&
                                      (e->peer == res->prev[r] || e->peer == res->next[r]) &&
                                      fabs(e->bytes - act) < 0.5,
                                      "%s: step %d, rank %d (stage %d) made a %s of %.0f bytes with world rank %d on "
                                      "«%s»; pipeline traffic is one b·h activation or gradient (%.0f bytes) with the "
                                      "stage before (rank %d) or after (rank %d) on the PP group «%s» (td_p2p on "
                                      "e->comms.pp)", st, s, r, res->stage[r], e->name, e->bytes, e->peer, nz(e->comm),
                                      act, res->prev[r], res->next[r], res->pp_name[r]);
                        sends += strcmp(e->name, "send") == 0, recvs += strcmp(e->name, "recv") == 0;
                    } else if (strcmp(e->name, "reduce_scatter") && strcmp(e->name, "all_gather") &&
                               strcmp(e->name, "barrier"))
                        CHECK(0, "%s: step %d, rank %d ran a %s on «%s»: a 3D step makes only the blocks' TP "
                                      "all-reduces, the PP send/recv of td_p2p and ZeRO-1's reduce-scatter and "
                                      "all-gather", st, s, r, e->name, nz(e->comm));
                }
                int nb = (res->prev[r] >= 0) + (res->next[r] >= 0);
                CHECK(sends == nb * sh->m && recvs == nb * sh->m,
                              "%s: step %d, rank %d (stage %d of %d) made %d sends and %d receives; 1F1B with m=%d "
                              "makes %d of each (an activation forward and a gradient back per micro-batch and "
                              "neighbour): the last op's output is still pending after the loop?", st, s, r,
                              res->stage[r], sh->pp, sends, recvs, sh->m, nb * sh->m);
            }
    }
    if (what & TD_ORDER) {
        /* the order inside a step, from the trace: every send/recv of the step before ZeRO-1's
         * reduce-scatter (the last op's output flushed first), every op's compute tagged by
         * rl_pp_mark with its stage and micro-batch, ZeRO-1 after rl_pp_unmark */
        for (int r = 0; r < W; r++)
            for (int s = 0; s < sh->steps; s++) {
                double last_p2p = -INFINITY, first_rs = INFINITY;
                const rl_trace_event *lp = NULL, *bad_tag = NULL, *tagged_dp = NULL;
                char seen[2 * 64];
                memset(seen, 0, sizeof seen);
                for (size_t k = 0; k < t->n; k++) {
                    const rl_trace_event *e = &t->ev[k];
                    if (e->rank != r || e->tags[RL_TAG_STEP] != s)
                        continue;
                    if ((strcmp(e->name, "send") == 0 || strcmp(e->name, "recv") == 0) && e->vstart > last_p2p)
                        last_p2p = e->vstart, lp = e;
                    if (strcmp(e->name, "reduce_scatter") == 0 || strcmp(e->name, "all_gather") == 0) {
                        if (strcmp(e->name, "reduce_scatter") == 0)
                            first_rs = fmin(first_rs, e->vstart);
                        if (e->tags[RL_TAG_MICROBATCH] >= 0 && !tagged_dp)
                            tagged_dp = e;
                    }
                    if (e->cat == RL_CAT_COMPUTE && e->tags[RL_TAG_LAYER] >= 0) {
                        int mb = e->tags[RL_TAG_MICROBATCH], ph = e->phase == 'F' ? 0 : e->phase == 'B' ? 1 : -1;
                        if (e->tags[RL_TAG_STAGE] != res->stage[r] || mb < 0 || mb >= sh->m || mb >= 64 || ph < 0) {
                            if (!bad_tag)
                                bad_tag = e;
                        } else {
                            seen[2 * mb + ph] = 1;
                        }
                    }
                }
                CHECK(!(lp && first_rs < INFINITY && last_p2p > first_rs),
                      "%s: step %d, rank %d (stage %d of %d): its %s with world rank %d starts at t=%.6f s, after "
                      "ZeRO-1's reduce-scatter on the DP group (t=%.6f s): the README's order is \"flush the last "
                      "send; then td_zero1_update\" — the last op's output leaves before the optimizer step, else the "
                      "neighbouring stage waits for this stage's whole ZeRO-1 update", st, s, r, res->stage[r], sh->pp,
                      lp ? lp->name : "send", lp ? lp->peer : -1, last_p2p, first_rs);
                CHECK(!bad_tag, "%s: step %d, rank %d (stage %d): the compute «%s» of layer %d carries stage %d, "
                      "micro-batch %d and phase '%c'; expected stage %d, a micro-batch 0..%d and F or B: each op runs "
                      "between rl_pp_mark(ctx, stage, op) and rl_pp_unmark (lab31.c: \"each between rl_pp_mark and "
                      "rl_pp_unmark\"), which tag what it records for the timeline's pipeline view", st, s, r,
                      res->stage[r], bad_tag ? bad_tag->name : "", bad_tag ? bad_tag->tags[RL_TAG_LAYER] : -1,
                      bad_tag ? bad_tag->tags[RL_TAG_STAGE] : -1, bad_tag ? bad_tag->tags[RL_TAG_MICROBATCH] : -1,
                      bad_tag && bad_tag->phase ? bad_tag->phase : '-', res->stage[r], sh->m - 1);
                for (int mb = 0; mb < sh->m && mb < 64; mb++)
                    CHECK(seen[2 * mb] && seen[2 * mb + 1], "%s: step %d, rank %d (stage %d): no compute tagged as "
                          "the %s of micro-batch %d: every op of the 1F1B list runs once, marked with rl_pp_mark",
                          st, s, r, res->stage[r], seen[2 * mb] ? "backward" : "forward", mb);
                CHECK(!tagged_dp, "%s: step %d, rank %d: ZeRO-1's %s carries micro-batch %d: it runs after the "
                      "loop, once rl_pp_unmark has cleared the tags of the last op", st, s, r,
                      tagged_dp ? tagged_dp->name : "", tagged_dp ? tagged_dp->tags[RL_TAG_MICROBATCH] : -1);
            }
    }
    rl_trace_free(t);
    free(c);
}

/* Draws n random shapes and prints them. */
static void td_draw(uint64_t stream, td_shape *out, int n)
{
    rl_rng g = rl_grade_rng(stream);
    rl_grade_text cs = { 0 };
    for (int i = 0; i < n; i++) {
        char st[240];
        out[i] = td_random(&g);
        td_text(st, sizeof st, &out[i]);
        rl_grade_text_add(&cs, "%s%s", i ? "; " : "", st);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
}

START_TEST(t_3d_full)
{
    td_shape s = td_fixed(2, 2, 2, 4, 3);
    td_check(&s, TD_PARAMS);
}
END_TEST

START_TEST(t_3d_shapes)
{
    td_shape r[3];
    td_draw(10, r, rl_grade_quick() ? 1 : 3);
    td_shape f[] = { td_fixed(1, 4, 1, 4, 2), td_fixed(4, 1, 2, 2, 2), td_fixed(2, 4, 2, 8, 2),
                     td_fixed(1, 4, 2, 3, 2), { 3, 1, 1, 2, 2, 7, 28, 4, 8, 2 } /* 1828 parameters: padded */ };
    for (size_t i = 0; i < (rl_grade_quick() ? 2u : sizeof f / sizeof f[0]); i++)
        td_check(&f[i], TD_PARAMS);
    for (int i = 0; i < (rl_grade_quick() ? 1 : 3); i++)
        td_check(&r[i], TD_PARAMS);
}
END_TEST

START_TEST(t_3d_loss)
{
    td_shape r[2];
    td_draw(11, r, 2);
    td_shape f = td_fixed(2, 2, 2, 4, 3);
    td_check(&f, TD_LOSS);
    for (int i = 0; i < 2; i++)
        td_check(&r[i], TD_LOSS);
}
END_TEST

START_TEST(t_3d_dp_traffic)
{
    td_shape r[2];
    td_draw(12, r, 2);
    td_shape f[] = { td_fixed(2, 2, 2, 4, 1), td_fixed(4, 1, 2, 2, 1) };
    for (int i = 0; i < 2; i++)
        td_check(&f[i], TD_DP);
    for (int i = 0; i < 2; i++)
        td_check(&r[i], TD_DP);
}
END_TEST

START_TEST(t_3d_pattern)
{
    td_shape r[2];
    td_draw(13, r, 2);
    td_shape f = td_fixed(2, 2, 2, 3, 1);
    td_check(&f, TD_TPPP);
    for (int i = 0; i < 2; i++)
        td_check(&r[i], TD_TPPP);
}
END_TEST

/* Draws a random shape whose sizes are at least min_dp and min_pp. */
static td_shape td_random_min(rl_rng *g, int min_dp, int min_pp)
{
    td_shape s;
    do
        s = td_random(g);
    while (s.dp < min_dp || s.pp < min_pp);
    return s;
}

START_TEST(t_3d_grad)
{
    rl_rng g = rl_grade_rng(14);
    td_shape r = td_random_min(&g, 2, 1);
    char rt[240];
    r.steps = 1;
    td_text(rt, sizeof rt, &r);
    printf("cases: %s\n", rt);
    td_shape f[] = { td_fixed(2, 2, 2, 4, 1), td_fixed(4, 1, 2, 2, 1), { 3, 1, 1, 2, 2, 7, 28, 4, 8, 1 } };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        td_check(&f[i], TD_GRAD);
    td_check(&r, TD_GRAD);
}
END_TEST

START_TEST(t_3d_order)
{
    rl_rng g = rl_grade_rng(15);
    td_shape r = td_random_min(&g, 2, 2);
    char rt[240];
    td_text(rt, sizeof rt, &r);
    printf("cases: %s\n", rt);
    td_shape f[] = { td_fixed(2, 2, 1, 4, 1), td_fixed(2, 4, 1, 3, 1) /* m < p */ };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        td_check(&f[i], TD_ORDER);
    td_check(&r, TD_ORDER);
}
END_TEST

/* ================================================================== 31.3 MoE */

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

/* The router of the handout: softmax over all E, the k most probable (ties → lower id), their
 * probabilities renormalised. Returns the smallest gap between the logits that decide the
 * order of the first k+1 choices of a token (a near-tie there would make rounding matter). */
RL_API_WATCHED
static double ref_route(const float *z, int64_t T, int E, int k, float *p, int *ids, float *w)
{
    RL_API_ENTRY(); /* a reference: a lab file reaching it fails the test (grader/allow/) */
    double gap = INFINITY;
    for (int64_t t = 0; t < T; t++) {
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < E; i++)
            mx = fmax(mx, z[t * E + i]);
        for (int i = 0; i < E; i++)
            s += exp(z[t * E + i] - mx);
        for (int i = 0; i < E; i++)
            p[t * E + i] = (float)(exp(z[t * E + i] - mx) / s);
        double tot = 0;
        int prev = -1;
        for (int j = 0; j < k + 1 && j < E; j++) {
            int best = -1;
            for (int i = 0; i < E; i++) {
                int used = 0;
                for (int q = 0; q < j && q < k; q++)
                    used |= ids[t * k + q] == i;
                if (!used && (best < 0 || p[t * E + i] > p[t * E + best]))
                    best = i;
            }
            if (prev >= 0 && z[t * E + prev] != z[t * E + best])
                gap = fmin(gap, fabs((double)z[t * E + prev] - z[t * E + best]));
            prev = best;
            if (j < k) {
                ids[t * k + j] = best;
                tot += p[t * E + best];
            }
        }
        for (int j = 0; j < k; j++)
            w[t * k + j] = (float)(p[t * E + ids[t * k + j]] / tot);
    }
    return gap;
}

/* The reference of one source rank's tokens. */
typedef struct moe_ref {
    int64_t dropped, capacity, kept[64], routed[64];
    double aux, gap;
    int redirected;
    float *y;
} moe_ref;

/* The one-rank reference for one source rank's tokens x [T, h] (y allocated here). */
RL_API_WATCHED
static void moe_reference(const moe_config *cfg, const float *x, int64_t T, const rl_fault *hot, moe_ref *out)
{
    RL_API_ENTRY(); /* a reference: a lab file reaching it fails the test (grader/allow/) */
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
    memset(out, 0, sizeof *out);
    out->gap = ref_route(z, T, E, k, p, ids, w);
    if (hot) {
        /* rl_fault_skew_routing reads the fault from the ctx's options: apply the same rule here */
        for (int64_t t = 0; t < T; t++) {
            if (floor((double)(t + 1) * hot->frac + 1e-9) <= floor((double)t * hot->frac + 1e-9))
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
            out->redirected++;
        }
    }
    rl_moe_plan plan;
    ck_assert(rl_moe_plan_make(NULL, ids, T, k, E, 1, cfg->capacity_factor, &plan) == 0);
    out->dropped = plan.dropped;
    out->capacity = plan.capacity;
    for (int e = 0; e < E; e++)
        out->kept[e] = plan.kept[e], out->routed[e] = plan.routed[e];
    ck_assert(rl_moe_aux_loss(NULL, p, ids, T, E, k, cfg->moe_aux_loss_coeff, &out->aux, NULL, NULL, NULL) == 0);
    out->y = malloc(sizeof(float) * (size_t)(T * h));
    memcpy(out->y, x, sizeof(float) * (size_t)(T * h));
    rl_tensor *row = rl_tensor_new(ctx, "row", RL_F32, RL_MEM_ACTIVATION, 2, s1, NULL);
    rl_tensor *o = rl_tensor_new(ctx, "o", RL_F32, RL_MEM_ACTIVATION, 2, s1, NULL);
    for (int64_t s = 0; s < T * k; s++) {
        if (plan.position[s] < 0)
            continue;
        int64_t t = s / k;
        rl_tensor_from_f32(row, x + t * h, h);
        ck_assert(moe_expert_forward(l, ids[s], row, o) == 0);
        for (int i = 0; i < h; i++)
            out->y[t * h + i] += w[s] * rl_tensor_get(o, i);
    }
    rl_moe_plan_free(&plan);
    rl_tensor_free(row), rl_tensor_free(o), rl_tensor_free(xt), rl_tensor_free(lg);
    free(z), free(p), free(ids), free(w);
    moe_layer_free(l);
    rl_ctx_free_standalone(ctx);
}

/* What a MoE run leaves in the child's record. */
typedef struct moe_res {
    int rc;                        /* rl_launch's status */
    rl_grade_blob y[LAB31_MAX_RANKS]; /* f32 [T, h] per rank (zeros where moe_forward failed) */
    moe_stats st[LAB31_MAX_RANKS];
    int rank_rc[LAB31_MAX_RANKS];
    char err[LAB31_MAX_RANKS][1400];
    char ep_name[LAB31_MAX_RANKS][64];
    rl_grade_blob trace;
} moe_res;

/* One MoE run: ranks = groups·ep (EP groups of consecutive ranks), tokens per rank. */
typedef struct moe_case {
    moe_config cfg;
    int groups;
    int64_t T[LAB31_MAX_RANKS];
    uint64_t xseed;
    moe_res res;                   /* the run, from the child's record */
} moe_case;

/* A MoE run in the child: the case, where its results go, the ranks' outputs, the trace kept. */
typedef struct moe_job {
    const moe_case *c;
    moe_res *o;
    int W, keep_trace;
    const rl_fault *hot;           /* NULL: none */
    float *y[LAB31_MAX_RANKS];
} moe_job;

static int moe_rank(rl_ctx *ctx, void *arg)
{
    const moe_job *j = arg;
    const moe_case *c = j->c;
    moe_res *o = j->o;
    int w = rl_rank(ctx), epr = w % c->cfg.ep;
    rl_comm *ep = rl_comm_split(rl_comm_world(ctx), w / c->cfg.ep, w);
    moe_layer *l = ep ? moe_layer_new(ctx, &c->cfg, epr) : NULL;
    int64_t T = c->T[w], sh[2] = { T, c->cfg.hidden };
    snprintf(o->ep_name[w], sizeof o->ep_name[w], "%s", ep ? rl_comm_name(ep) : "");
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tokens,h");
    float *xs = malloc(sizeof(float) * (size_t)(T * c->cfg.hidden));
    moe_input(xs, w, T, c->cfg.hidden, c->xseed);
    rl_tensor_from_f32(x, xs, T * c->cfg.hidden);
    rl_clear_error(ctx);
    memset(&o->st[w], 0, sizeof o->st[w]);
    int rc = l ? moe_forward(l, ep, x, y, &o->st[w]) : RL_ERR_ARG;
    o->rank_rc[w] = rc;
    if (rc) {
        snprintf(o->err[w], sizeof o->err[w], "%s", rl_last_error(ctx));
        note_err("moe_forward", w, rc, o->err[w]);
    } else {
        rl_tensor_to_f32(y, j->y[w], T * c->cfg.hidden);
    }
    free(xs);
    if (!rc) { /* after an error a dispatch may still be in flight: keep the buffers */
        rl_tensor_free(x), rl_tensor_free(y);
        moe_layer_free(l);
    }
    return 0;
}

/* In the child: runs moe_forward on every rank (the hot-expert fault when the case has one);
 * keeps each rank's output and the trace. */
static void moe_produce(void *out, void *arg)
{
    moe_job *j = arg;
    const moe_case *c = j->c;
    moe_res *o = j->o = out;
    int h = c->cfg.hidden;
    for (int r = 0; r < j->W; r++)
        j->y[r] = calloc((size_t)(c->T[r] * h + 1), sizeof(float));
    rl_opts op = gopts(j->W);
    if (j->hot)
        op.faults[op.nfaults++] = *j->hot;
    rl_trace *t = NULL;
    o->rc = rl_launch(&op, moe_rank, j, j->keep_trace ? &t : NULL);
    for (int r = 0; r < j->W; r++) {
        o->y[r] = rl_grade_keep(j->y[r], (size_t)(c->T[r] * h) * sizeof(float));
        free(j->y[r]);
    }
    o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

enum { MOE_Y = 1, MOE_DROP = 2, MOE_AUX = 4, MOE_PATTERN = 8 };

/* One MoE case: E experts, top-k, ep ranks per group, capacity factor, tokens per rank. */
typedef struct moe_spec {
    int E, k, ep, groups;
    double cf;
    int64_t T[LAB31_MAX_RANKS];
    const char *hot;   /* "hot-expert:expert=E:frac=F" or NULL */
    char hot_buf[64];
} moe_spec;

static void moe_text(rl_grade_text *b, const moe_spec *s)
{
    int W = s->ep * s->groups;
    rl_grade_text_add(b, "E=%d k=%d ep=%d cf=%g%s%s, tokens per rank", s->E, s->k, s->ep, s->cf, s->hot ? ", " : "",
           s->hot ? s->hot : "");
    for (int r = 0; r < W; r++)
        rl_grade_text_add(b, "%s%lld", r ? "," : " ", (long long)s->T[r]);
    if (s->groups > 1)
        rl_grade_text_add(b, " (%d EP groups)", s->groups);
}

/* Runs the case and checks what `what` asks (MOE_* bits) against the one-rank reference. */
static void moe_check(const moe_spec *sp, int what)
{
    moe_case *c = calloc(1, sizeof *c);
    int E = sp->E, k = sp->k, ep = sp->ep, W = ep * (sp->groups > 0 ? sp->groups : 1);
    double cf = sp->cf;
    c->cfg = moe_cfg(E, k, ep, cf);
    c->groups = W / ep;
    int h = c->cfg.hidden, f = c->cfg.ffn;
    rl_grade_text dsc = { 0 };
    moe_text(&dsc, sp);
    const char *st = rl_grade_text_str(&dsc);
    rl_fault hot;
    memset(&hot, 0, sizeof hot);
    if (sp->hot) {
        char err[256];
        CHECK(rl_fault_parse(sp->hot, &hot, err, sizeof err) == 0, "grader: %s", err);
    }
    /* references first; inputs whose routing has a near-tie are replaced (rounding must not decide) */
    moe_ref *ref = calloc((size_t)W, sizeof *ref);
    for (uint64_t seed = 3;; seed++) {
        double gap = INFINITY;
        for (int r = 0; r < W; r++) {
            float *x = malloc(sizeof(float) * (size_t)(sp->T[r] * h));
            moe_input(x, r, sp->T[r], h, seed);
            free(ref[r].y);
            moe_reference(&c->cfg, x, sp->T[r], sp->hot ? &hot : NULL, &ref[r]);
            gap = fmin(gap, ref[r].gap);
            free(x);
        }
        c->xseed = seed;
        if (gap > 1e-4 || seed > 40)
            break;
    }
    for (int r = 0; r < W; r++)
        c->T[r] = sp->T[r];
    moe_job job = { c, NULL, W, (what & MOE_PATTERN) != 0, sp->hot ? &hot : NULL, { 0 } };
    const moe_res *o = rl_grade_run("moe_forward", sizeof *o, moe_produce, &job);
    moe_res *res = &c->res;
    *res = *o;
    for (int r = 0; r < LAB31_MAX_RANKS; r++) {
        res->err[r][sizeof res->err[r] - 1] = 0;
        res->ep_name[r][sizeof res->ep_name[r] - 1] = 0;
    }
    rl_trace *t = NULL;
    const float *y[LAB31_MAX_RANKS] = { 0 };
    if (!rl_grade_judging()) /* the child: the comparisons are the judge's */
        goto out;
    for (int r = 0; r < W; r++)
        CHECK(!res->rank_rc[r], "%s: rank %d: moe_forward returned %s: %s", st, r, rl_status_name(res->rank_rc[r]),
                      nz(res->err[r]));
    CHECK(res->rc == 0, "%s: the run failed (%s)", st, rl_status_name(res->rc));
    if (what & MOE_PATTERN)
        t = rl_grade_trace(res->trace);
    for (int r = 0; r < W; r++)
        y[r] = rl_grade_blob_get(res->y[r], sizeof(float), (size_t)(sp->T[r] * h));
    int epr = E / ep;
    for (int r = 0; r < W; r++) {
        const moe_stats *s = &res->st[r];
        const moe_ref *R = &ref[r];
        int g0 = r / ep * ep;
        if (what & MOE_DROP) {
            CHECK(s->tokens == sp->T[r] && s->capacity == R->capacity && s->dropped == R->dropped,
                          "%s: rank %d (%lld tokens): stats say tokens %lld, capacity %lld, %lld slots dropped; the "
                          "capacity rule (C = ceil(T·k/E·cf) per expert and rank, slots kept in arrival order while "
                          "their expert has < C) gives capacity %lld and %lld dropped", st, r, (long long)sp->T[r],
                          (long long)s->tokens, (long long)s->capacity, (long long)s->dropped,
                          (long long)R->capacity, (long long)R->dropped);
            int64_t sent = 0, recvd = 0;
            for (int e = 0; e < E; e++) {
                CHECK(s->routed[e] == R->routed[e] && s->kept[e] == R->kept[e],
                              "%s: rank %d: expert %d has %lld slots routed and %lld kept; expected %lld routed "
                              "(before dropping) and %lld kept", st, r, e, (long long)s->routed[e],
                              (long long)s->kept[e], (long long)R->routed[e], (long long)R->kept[e]);
                sent += R->kept[e];
            }
            for (int q = g0; q < g0 + ep; q++)
                for (int le = 0; le < epr; le++)
                    recvd += ref[q].kept[(r - g0) * epr + le];
            CHECK(s->rows_sent == sent && s->rows_received == recvd && s->hot_redirected == R->redirected,
                          "%s: rank %d: stats say %lld rows sent, %lld received, %d tokens redirected by the hot "
                          "expert; expected %lld sent (its kept slots), %lld received (the kept slots of every rank "
                          "of its EP group for its experts %d..%d) and %d redirected", st, r,
                          (long long)s->rows_sent, (long long)s->rows_received, s->hot_redirected, (long long)sent,
                          (long long)recvd, (r - g0) * epr, (r - g0) * epr + epr - 1, R->redirected);
        }
        if (what & MOE_Y)
            for (int64_t i = 0; i < sp->T[r] * h; i++)
                CHECK(fabs(y[r][i] - R->y[i]) <= 1e-4 * fabs(R->y[i]) + 1e-5,
                              "%s: rank %d, token %lld, element %lld: y = %.7g, the one-rank MoE gives %.7g (dropped "
                              "slots add nothing; kept ones weight·expert(x); plus x)", st, r, (long long)(i / h),
                              (long long)(i % h), y[r][i], R->y[i]);
        if (what & MOE_AUX)
            CHECK(fabs(s->aux_loss - R->aux) <= 1e-6 * fabs(R->aux) + 1e-9,
                          "%s: rank %d's aux loss %.8g; α·E·Σ fᵢ·Pᵢ = %.8g (α = %g; fᵢ: share of the T·k routed slots "
                          "before dropping, after the hot-expert fault)", st, r, s->aux_loss, R->aux,
                          c->cfg.moe_aux_loss_coeff);
    }
    if (what & MOE_PATTERN) {
        rl_trace_sort(t);
        for (int r = 0; r < W; r++) {
            int g0 = r / ep * ep, me = r - g0, na = 0;
            const rl_trace_event *a2a[2] = { NULL, NULL };
            double other = 0;
            for (size_t i = 0; i < t->n; i++) {
                const rl_trace_event *e = &t->ev[i];
                if (e->rank != r || (e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P) || strcmp(e->name, "comm_split") == 0)
                    continue;
                if (strcmp(e->name, "all_to_allv") == 0 && strcmp(e->comm, res->ep_name[r]) == 0) {
                    if (na < 2)
                        a2a[na] = e;
                    na++;
                } else {
                    other += e->bytes;
                }
            }
            CHECK(na == 2, "%s: rank %d made %d all-to-all(v) calls on its EP group «%s»; the handout's "
                          "forward makes two: dispatch (\"dispatch with all-to-all(v)\") and combine back", st, r, na,
                          res->ep_name[r]);
            for (int j = 0; j < 2; j++) {
                rl_grade_text gotb = { 0 }, wantb = { 0 };
                int ok = a2a[j]->npeers == ep && a2a[j]->peer_bytes;
                for (int q = 0; q < ep; q++) {
                    int64_t rows = 0;
                    for (int le = 0; le < epr; le++)
                        rows += j == 0 ? ref[r].kept[q * epr + le] : ref[g0 + q].kept[me * epr + le];
                    int64_t want = rows * h * 4, got = ok ? a2a[j]->peer_bytes[q] : -1;
                    ok = ok && got == want;
                    rl_grade_text_add(&wantb, "%s%lld", q ? ", " : "", (long long)want);
                    rl_grade_text_add(&gotb, "%s%lld", q ? ", " : "", (long long)got);
                }
                CHECK(ok, "%s: rank %d's %s all-to-all(v) sent [%s] bytes to the ranks of its EP group; "
                              "expected [%s]: %s", st, r, j ? "combine" : "dispatch", rl_grade_text_str(&gotb), rl_grade_text_str(&wantb),
                              j ? "each expert's output rows go back to the rank their token came from (h f32 per "
                                  "kept slot)"
                                : "each kept slot's h-vector (f32) goes once to the rank that owns its expert "
                                  "(expert e on EP rank e / (E/ep)); dropped slots are not sent");
                rl_grade_text_free(&gotb);
                rl_grade_text_free(&wantb);
            }
            double limit = 8.0 * E * ep + 64;
            CHECK(other <= limit, "%s: rank %d moved %.0f bytes in collectives other than the two "
                          "all-to-all(v) on its EP group (at most %.0f are needed for the per-expert counts): token "
                          "rows move only in dispatch and combine", st, r, other, limit);
        }
        /* where each expert was computed: the expert-tagged matmuls (2·n·h·f FLOPs each, two per call) */
        double *flops = calloc((size_t)W * 64, sizeof(double));
        for (size_t i = 0; i < t->n; i++) {
            const rl_trace_event *e = &t->ev[i];
            int x = e->tags[RL_TAG_EXPERT];
            if (e->cat == RL_CAT_COMPUTE && x >= 0 && x < 64 && e->rank >= 0 && e->rank < W &&
                strcmp(e->name, "matmul") == 0)
                flops[e->rank * 64 + x] += e->flops;
        }
        for (int r = 0; r < W; r++) {
            int g0 = r / ep * ep;
            for (int x = 0; x < E; x++) {
                double rows = flops[r * 64 + x] / (4.0 * h * f);
                int64_t want = 0;
                if (x / epr == r - g0)
                    for (int q = g0; q < g0 + ep; q++)
                        want += ref[q].kept[x];
                CHECK(fabs(rows - (double)want) < 0.5 || (want == 0 && rows < 1.5),
                              "%s: rank %d computed expert %d on %.0f rows; expected %lld: %s", st, r, x, rows,
                              (long long)want,
                              x / epr == r - g0 ? "a rank runs each of its experts once on the rows every rank of its "
                                                  "EP group dispatched to it"
                                                : "the expert lives on another rank (expert e on EP rank e / (E/ep)): "
                                                  "a rank computes only its local experts' rows");
            }
        }
        free(flops);
    }
out:
    rl_trace_free(t);
    for (int r = 0; r < W; r++)
        free(ref[r].y);
    free(ref);
    rl_grade_text_free(&dsc);
    free(c);
}

/* A fixed case with T tokens on every rank. */
static moe_spec moe_fixed(int E, int k, int ep, double cf, const char *hot)
{
    moe_spec s;
    memset(&s, 0, sizeof s);
    s.E = E, s.k = k, s.ep = ep, s.groups = 1, s.cf = cf, s.hot = hot;
    for (int r = 0; r < ep; r++)
        s.T[r] = 24;
    return s;
}

static const int cf_quarters[] = { 2, 3, 4, 5, 6, 8 }; /* cf = q/4: 0.5 ... 2 */

/* A random case: E experts over ep ranks (ep divides E), k <= 4, tokens per rank not multiples
 * of E, a capacity factor that binds, sometimes a hot expert. Capacities that are whole
 * numbers only when T·k divides by E (no rounding knife edge in ceil). */
static moe_spec moe_random(rl_rng *g, int min_ep, int groups)
{
    moe_spec s;
    memset(&s, 0, sizeof s);
    do {
        s.ep = rl_grade_pick(g, min_ep, 4);
        s.E = s.ep * rl_grade_pick(g, 1, 4);
    } while (s.E < 2);
    s.k = rl_grade_pick(g, 1, s.E < 4 ? s.E : 4);
    int q = cf_quarters[rl_grade_pick(g, 0, 5)];
    s.cf = q / 4.0;
    s.groups = groups;
    for (int r = 0; r < s.ep * groups; r++) {
        int64_t T;
        do
            T = rl_grade_pick(g, 1, 40);
        while ((T * s.k * q) % (4 * s.E) == 0 && (T * s.k) % s.E != 0);
        s.T[r] = T;
    }
    if (rl_grade_pick(g, 0, 2) == 0) {
        snprintf(s.hot_buf, sizeof s.hot_buf, "hot-expert:expert=%d:frac=%.2f", rl_grade_pick(g, 0, s.E - 1),
                 rl_grade_pick(g, 20, 80) / 100.0);
        s.hot = s.hot_buf;
    }
    return s;
}

/* Draws n random cases and prints them. */
static void moe_draw(uint64_t stream, moe_spec *out, int n, int min_ep, int groups)
{
    rl_rng g = rl_grade_rng(stream);
    rl_grade_text cs = { 0 };
    rl_grade_text_add(&cs, "cases: ");
    for (int i = 0; i < n; i++) {
        out[i] = moe_random(&g, min_ep, groups);
        if (out[i].hot) /* the struct moved: point at its own buffer */
            out[i].hot = out[i].hot_buf;
        if (i)
            rl_grade_text_add(&cs, "; ");
        moe_text(&cs, &out[i]);
    }
    printf("%s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
}

/* What moe_route left in the child's record: its status, the last error and its outputs. */
typedef struct route_res {
    int rc;
    char err[1400];
    rl_grade_blob probs, expert, weight; /* f32 [T·E], int [T·k], f32 [T·k] */
} route_res;

/* A call of moe_route: its logits and sizes. */
typedef struct route_job {
    const float *z;
    int64_t T;
    int E, k;
} route_job;

/* In the child: calls moe_route on outputs filled with NaN and -1. */
static void route_produce(void *out, void *arg)
{
    const route_job *j = arg;
    route_res *o = out;
    int64_t T = j->T;
    float *gp = malloc(sizeof(float) * (size_t)(T * j->E + 1)), *gw = malloc(sizeof(float) * (size_t)(T * j->k + 1));
    int *gids = malloc(sizeof(int) * (size_t)(T * j->k + 1));
    for (int64_t i = 0; i < T * j->E; i++)
        gp[i] = NAN;
    for (int64_t i = 0; i < T * j->k; i++)
        gids[i] = -1, gw[i] = NAN;
    o->rc = moe_route(NULL, j->z, T, j->E, j->k, gp, gids, gw);
    snprintf(o->err, sizeof o->err, "%s", rl_last_error(NULL));
    o->probs = rl_grade_keep(gp, (size_t)(T * j->E) * sizeof *gp);
    o->expert = rl_grade_keep(gids, (size_t)(T * j->k) * sizeof *gids);
    o->weight = rl_grade_keep(gw, (size_t)(T * j->k) * sizeof *gw);
    free(gp), free(gw), free(gids);
}

START_TEST(t_moe_route)
{
    rl_rng g = rl_grade_rng(20);
    rl_grade_text cs = { 0 };
    int n = 8;
    struct { int64_t T; int E, k, ties; } cs_[8];
    for (int i = 0; i < n; i++) {
        cs_[i].T = rl_grade_pick(&g, 1, 30);
        cs_[i].E = rl_grade_pick(&g, 1, 16);
        cs_[i].k = rl_grade_pick(&g, 1, cs_[i].E < 4 ? cs_[i].E : 4);
        cs_[i].ties = i < 6; /* logits from a few integers: exact ties */
        if (i == 0)
            cs_[i].k = cs_[i].E; /* every expert chosen */
        rl_grade_text_add(&cs, "%sT=%lld E=%d k=%d%s", i ? "; " : "", (long long)cs_[i].T, cs_[i].E, cs_[i].k,
               cs_[i].ties ? " (tied logits)" : "");
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < n; i++) {
        int64_t T = cs_[i].T;
        int E = cs_[i].E, k = cs_[i].k;
        float *z = malloc(sizeof(float) * (size_t)(T * E)), *p = malloc(sizeof(float) * (size_t)(T * E));
        float *w = malloc(sizeof(float) * (size_t)(T * k));
        int *ids = malloc(sizeof(int) * (size_t)(T * k));
        for (;;) {
            for (int64_t j = 0; j < T * E; j++)
                z[j] = cs_[i].ties ? (float)rl_grade_pick(&g, -2, 1) : (float)(2 * rl_rng_normal(&g));
            if (ref_route(z, T, E, k, p, ids, w) > 1e-3) /* distinct logits: far apart */
                break;
        }
        route_job job = { z, T, E, k };
        const route_res *o = rl_grade_run("moe_route", sizeof *o, route_produce, &job);
        const float *gp = rl_grade_blob_get(o->probs, sizeof(float), (size_t)(T * E));
        const float *gw = rl_grade_blob_get(o->weight, sizeof(float), (size_t)(T * k));
        const int *gids = rl_grade_blob_get(o->expert, sizeof(int), (size_t)(T * k));
        if (!rl_grade_judging()) { /* the child: the comparisons are the judge's */
            free(z), free(p), free(w), free(ids);
            continue;
        }
        CHECK(o->rc == 0, "moe_route(T=%lld, E=%d, k=%d) returned %s: %.*s", (long long)T, E, k,
                      rl_status_name(o->rc), (int)sizeof o->err, nz(o->err));
        for (int64_t t = 0; t < T; t++) {
            rl_grade_text zl = { 0 }, gl = { 0 }, wl = { 0 };
            for (int e = 0; e < E; e++)
                rl_grade_text_add(&zl, "%s%g", e ? ", " : "", z[t * E + e]);
            for (int j = 0; j < k; j++) {
                rl_grade_text_add(&gl, "%s%d", j ? ", " : "", gids[t * k + j]);
                rl_grade_text_add(&wl, "%s%d", j ? ", " : "", ids[t * k + j]);
            }
            for (int j = 0; j < k; j++)
                CHECK(gids[t * k + j] == ids[t * k + j],
                              "T=%lld E=%d k=%d, token %lld, logits [%s]: experts [%s], expected [%s] (the k most "
                              "probable, best first; lab31.h: \"ties → lower id\")", (long long)T, E, k, (long long)t,
                              rl_grade_text_str(&zl), rl_grade_text_str(&gl), rl_grade_text_str(&wl));
            for (int e = 0; e < E; e++)
                CHECK(fabs(gp[t * E + e] - p[t * E + e]) <= 1e-6 * p[t * E + e] + 1e-9,
                              "T=%lld E=%d k=%d, token %lld, logits [%s]: probs[%d] = %.8g, softmax over all E gives "
                              "%.8g", (long long)T, E, k, (long long)t, rl_grade_text_str(&zl), e, gp[t * E + e], p[t * E + e]);
            for (int j = 0; j < k; j++)
                CHECK(fabs(gw[t * k + j] - w[t * k + j]) <= 1e-5 * w[t * k + j] + 1e-9,
                              "T=%lld E=%d k=%d, token %lld, logits [%s]: weight[%d] = %.8g, expected %.8g (pᵢ / Σ of "
                              "the chosen p)", (long long)T, E, k, (long long)t, rl_grade_text_str(&zl), j, gw[t * k + j],
                              w[t * k + j]);
            rl_grade_text_free(&zl), rl_grade_text_free(&gl), rl_grade_text_free(&wl);
        }
        free(z), free(p), free(w), free(ids);
    }
}
END_TEST

/* What moe_plan_make left in the child's record: its status, the last error and the plan (its
 * arrays in the sizes moe_plan_alloc gave them). */
typedef struct mplan_res {
    int rc;
    char err[1400];
    int64_t capacity, dropped, nsend;
    rl_grade_blob routed, kept, expert_counts; /* int64 [E] each */
    rl_grade_blob send_slot;                   /* int64 [T·k] */
    rl_grade_blob send_counts, send_displs;    /* int64 [ep] each */
} mplan_res;

/* A call of moe_plan_make: its arguments. */
typedef struct mplan_job {
    const int *ids;
    int64_t T;
    int E, k, ep;
    double cf;
} mplan_job;

/* In the child: calls moe_plan_make on a plan from moe_plan_alloc and keeps it. */
static void mplan_produce(void *out, void *arg)
{
    const mplan_job *j = arg;
    mplan_res *o = out;
    moe_plan p;
    o->rc = moe_plan_alloc(&p, j->T, j->E, j->k, j->ep);
    if (o->rc) {
        snprintf(o->err, sizeof o->err, "the grader's moe_plan_alloc failed");
        return;
    }
    o->rc = moe_plan_make(NULL, j->ids, j->T, j->E, j->k, j->ep, j->cf, &p);
    snprintf(o->err, sizeof o->err, "%s", rl_last_error(NULL));
    o->capacity = p.capacity, o->dropped = p.dropped, o->nsend = p.nsend;
    size_t E = (size_t)j->E * sizeof(int64_t), ep = (size_t)j->ep * sizeof(int64_t);
    o->routed = rl_grade_keep(p.routed, E);
    o->kept = rl_grade_keep(p.kept, E);
    o->expert_counts = rl_grade_keep(p.expert_counts, E);
    o->send_slot = rl_grade_keep(p.send_slot, (size_t)(j->T * j->k) * sizeof(int64_t));
    o->send_counts = rl_grade_keep(p.send_counts, ep);
    o->send_displs = rl_grade_keep(p.send_displs, ep);
    moe_plan_free(&p);
}

/* The plan a run kept, as a plan to read (its arrays point into the record). */
static moe_plan mplan_of(const mplan_res *o, int64_t T, int E, int k, int ep)
{
    moe_plan p;
    memset(&p, 0, sizeof p);
    p.tokens = T, p.experts = E, p.top_k = k, p.ep = ep;
    p.capacity = o->capacity, p.dropped = o->dropped, p.nsend = o->nsend;
    p.routed = (int64_t *)rl_grade_blob_get(o->routed, sizeof(int64_t), (size_t)E);
    p.kept = (int64_t *)rl_grade_blob_get(o->kept, sizeof(int64_t), (size_t)E);
    p.expert_counts = (int64_t *)rl_grade_blob_get(o->expert_counts, sizeof(int64_t), (size_t)E);
    p.send_slot = (int64_t *)rl_grade_blob_get(o->send_slot, sizeof(int64_t), (size_t)(T * k));
    p.send_counts = (int64_t *)rl_grade_blob_get(o->send_counts, sizeof(int64_t), (size_t)ep);
    p.send_displs = (int64_t *)rl_grade_blob_get(o->send_displs, sizeof(int64_t), (size_t)ep);
    return p;
}

START_TEST(t_moe_plan)
{
    rl_rng g = rl_grade_rng(21);
    rl_grade_text cs = { 0 };
    enum { NP = 10 };
    struct { int64_t T; int E, k, ep, hot; double cf; } pc[NP];
    for (int i = 0; i < NP; i++) {
        do {
            pc[i].ep = rl_grade_pick(&g, 1, 4);
            pc[i].E = pc[i].ep * rl_grade_pick(&g, 1, 4);
        } while (pc[i].E < 2);
        pc[i].k = rl_grade_pick(&g, 1, pc[i].E < 4 ? pc[i].E : 4);
        int q = cf_quarters[rl_grade_pick(&g, 0, 5)];
        pc[i].cf = i == NP - 1 ? 0.0 : q / 4.0; /* the last: cf 0 means 1 */
        if (i == NP - 1)
            q = 4;
        do
            pc[i].T = rl_grade_pick(&g, 1, 60);
        while ((pc[i].T * pc[i].k * q) % (4 * pc[i].E) == 0 && (pc[i].T * pc[i].k) % pc[i].E != 0);
        pc[i].hot = rl_grade_pick(&g, 0, 1) ? rl_grade_pick(&g, 0, pc[i].E - 1) : -1;
        if (i == 0) /* C = ceil(2.25) = 3, a hot expert beyond it */
            pc[i].T = 9, pc[i].E = 4, pc[i].k = 1, pc[i].ep = 2, pc[i].cf = 1.0, pc[i].hot = 0;
        rl_grade_text_add(&cs, "%sT=%lld E=%d k=%d ep=%d cf=%g%s", i ? "; " : "", (long long)pc[i].T, pc[i].E, pc[i].k,
               pc[i].ep, pc[i].cf, pc[i].hot >= 0 ? " hot" : "");
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < NP; i++) {
        int64_t T = pc[i].T;
        int E = pc[i].E, k = pc[i].k, ep = pc[i].ep;
        int *ids = malloc(sizeof(int) * (size_t)(T * k));
        for (int64_t t = 0; t < T; t++) { /* k distinct experts per token, a hot one often first */
            int perm[64];
            rl_grade_shuffle(&g, perm, E);
            if (pc[i].hot >= 0 && (rl_grade_pick(&g, 0, 1) || (i == 0 && t % 3)))
                for (int j = 0; j < E; j++)
                    if (perm[j] == pc[i].hot) {
                        perm[j] = perm[0];
                        perm[0] = pc[i].hot;
                    }
            for (int j = 0; j < k; j++)
                ids[t * k + j] = perm[j];
        }
        mplan_job job = { ids, T, E, k, ep, pc[i].cf };
        const mplan_res *o = rl_grade_run("moe_plan_make", sizeof *o, mplan_produce, &job);
        if (!rl_grade_judging()) { /* the child: the reference and the comparisons are the judge's */
            free(ids);
            continue;
        }
        rl_moe_plan ref;
        ck_assert(rl_moe_plan_make(NULL, ids, T, k, E, ep, pc[i].cf, &ref) == 0);
        char ct[160];
        snprintf(ct, sizeof ct, "T=%lld tokens, E=%d, k=%d, ep=%d, cf=%g", (long long)T, E, k, ep, pc[i].cf);
        CHECK(o->rc == 0, "moe_plan_make(%s) returned %s: %.*s", ct, rl_status_name(o->rc), (int)sizeof o->err,
              nz(o->err));
        moe_plan p = mplan_of(o, T, E, k, ep);
        CHECK(p.capacity == ref.capacity && p.dropped == ref.dropped && p.nsend == ref.nsend,
                      "%s: capacity %lld, %lld dropped, %lld rows to send; expected C = ceil(T·k/E·cf) = %lld%s, %lld "
                      "dropped, %lld rows", ct, (long long)p.capacity, (long long)p.dropped, (long long)p.nsend,
                      (long long)ref.capacity, pc[i].cf == 0 ? " (cf 0 means 1)" : "", (long long)ref.dropped,
                      (long long)ref.nsend);
        for (int e = 0; e < E; e++)
            CHECK(p.routed[e] == ref.routed[e] && p.kept[e] == ref.kept[e] &&
                          p.expert_counts[e] == ref.kept[e],
                          "%s: expert %d: routed %lld, kept %lld, expert_counts %lld; expected %lld routed (before "
                          "dropping), %lld kept and expert_counts = kept", ct, e, (long long)p.routed[e],
                          (long long)p.kept[e], (long long)p.expert_counts[e], (long long)ref.routed[e],
                          (long long)ref.kept[e]);
        /* which slots were kept, before the order they are sent in: equal counts per expert can
         * hide slots dropped in the wrong order */
        int64_t S = T * k;
        char *kg = calloc((size_t)S + 1, 1);
        for (int64_t j = 0; j < p.nsend && j < S; j++)
            if (p.send_slot[j] >= 0 && p.send_slot[j] < S)
                kg[p.send_slot[j]] = 1;
        for (int64_t x = 0; x < S; x++) {
            if (!kg[x] == !(ref.position[x] >= 0))
                continue;
            int e = ids[x];
            rl_grade_text ks = { 0 };
            for (int64_t y = 0, n = 0; y < S && n < ref.capacity; y++)
                if (ids[y] == e)
                    rl_grade_text_add(&ks, "%s%lld", n++ ? ", " : "", (long long)y);
            CHECK(0, "%s: slot %lld (token %lld, choice %lld, expert %d) is %s, but the capacity rule %s it: slots "
                  "are visited in arrival order (slot t·k + j for t = 0..T−1, j = 0..k−1) and a slot is kept while its "
                  "expert has fewer than C = %lld kept, so expert %d keeps its first %lld slots [%s]. The counts per "
                  "expert are right: the slots were visited in another order (e.g. every token's first choice "
                  "before any second choice)", ct, (long long)x, (long long)(x / k), (long long)(x % k), e,
                  kg[x] ? "in the dispatch" : "dropped", kg[x] ? "drops" : "keeps", (long long)ref.capacity, e,
                  (long long)ref.capacity, rl_grade_text_str(&ks));
        }
        free(kg);
        for (int q = 0; q < ep; q++)
            CHECK(p.send_counts[q] == ref.send_counts[q] && p.send_displs[q] == ref.send_displs[q],
                          "%s: EP rank %d gets %lld rows from offset %lld; expected %lld from %lld (the kept slots of "
                          "its experts %d..%d, prefix sums)", ct, q, (long long)p.send_counts[q],
                          (long long)p.send_displs[q], (long long)ref.send_counts[q], (long long)ref.send_displs[q],
                          q * (E / ep), q * (E / ep) + E / ep - 1);
        for (int64_t j = 0; j < ref.nsend; j++)
            CHECK(p.send_slot[j] == ref.send_slot[j],
                          "%s: row %lld of the dispatch is slot %lld, expected slot %lld (kept slots grouped by "
                          "expert ascending, arrival order t·k + j inside an expert)", ct, (long long)j,
                          (long long)p.send_slot[j], (long long)ref.send_slot[j]);
        rl_moe_plan_free(&ref);
        free(ids);
    }
}
END_TEST

START_TEST(t_moe_equal)
{
    moe_spec r[3];
    moe_draw(22, r, 3, 1, 1);
    moe_spec f[] = { moe_fixed(8, 2, 4, 1.25, NULL), moe_fixed(4, 1, 2, 2.0, NULL), moe_fixed(8, 2, 1, 1.25, NULL) };
    for (int i = 0; i < 3; i++)
        moe_check(&f[i], MOE_Y);
    for (int i = 0; i < 3; i++)
        moe_check(&r[i], MOE_Y);
}
END_TEST

START_TEST(t_moe_drops)
{
    moe_spec r[3];
    moe_draw(23, r, 3, 1, 1);
    moe_spec f[] = { moe_fixed(8, 2, 4, 1.0, NULL), moe_fixed(8, 2, 4, 0.5, NULL),
                     moe_fixed(4, 2, 2, 1.25, "hot-expert:expert=3:frac=0.6"),
                     moe_fixed(4, 1, 2, 1.0, "hot-expert:expert=0:frac=1") /* rank 1 receives no row */ };
    moe_check(&f[0], MOE_DROP);
    moe_check(&f[1], MOE_DROP | MOE_Y | MOE_AUX);
    moe_check(&f[2], MOE_DROP | MOE_Y | MOE_AUX);
    moe_check(&f[3], MOE_DROP | MOE_Y | MOE_AUX);
    for (int i = 0; i < 3; i++)
        moe_check(&r[i], MOE_DROP | MOE_Y);
}
END_TEST

/* A call of moe_aux_loss: its arguments. */
typedef struct aux_job {
    const float *probs;
    const int *ids;
    int64_t T;
    int E, k;
    double alpha;
} aux_job;

/* In the child: calls moe_aux_loss; the record holds what it returned. */
static void aux_produce(void *out, void *arg)
{
    const aux_job *j = arg;
    *(double *)out = moe_aux_loss(j->probs, j->ids, j->T, j->E, j->k, j->alpha);
}

/* Runs moe_aux_loss in the child; returns what it returned, from the record. */
static double aux_run(const float *probs, const int *ids, int64_t T, int E, int k, double alpha)
{
    aux_job j = { probs, ids, T, E, k, alpha };
    return *(const double *)rl_grade_run("moe_aux_loss", sizeof(double), aux_produce, &j);
}

START_TEST(t_moe_aux)
{
    moe_spec r[2];
    moe_draw(24, r, 2, 1, 1);
    moe_spec f = moe_fixed(8, 2, 2, 1.25, NULL);
    moe_check(&f, MOE_AUX);
    for (int i = 0; i < 2; i++)
        moe_check(&r[i], MOE_AUX);
    /* uniform routing gives exactly α */
    int E = 4, k = 1;
    int64_t T = 8;
    float probs[32];
    int ids[8];
    for (int i = 0; i < 32; i++)
        probs[i] = 0.25f;
    for (int t = 0; t < 8; t++)
        ids[t] = t % 4;
    double a = aux_run(probs, ids, T, E, k, 0.02);
    CHECK(fabs(a - 0.02) < 1e-9, "uniform routing (8 tokens over 4 experts, probabilities 1/4): aux loss %.8g, "
                  "expected α = 0.02", a);
    /* random probabilities and routings, k > 1, a hot expert */
    rl_rng g = rl_grade_rng(25);
    for (int i = 0; i < 4; i++) {
        int EE = rl_grade_pick(&g, 2, 12), kk = rl_grade_pick(&g, 1, EE < 3 ? EE : 3);
        int64_t TT = rl_grade_pick(&g, 1, 50);
        float *p = malloc(sizeof(float) * (size_t)(TT * EE)), *z = malloc(sizeof(float) * (size_t)(TT * EE));
        float *w = malloc(sizeof(float) * (size_t)(TT * kk));
        int *id = malloc(sizeof(int) * (size_t)(TT * kk));
        for (int64_t j = 0; j < TT * EE; j++)
            z[j] = (float)(1.5 * rl_rng_normal(&g)) + (j % EE == 0 ? 1.0f : 0.0f);
        ref_route(z, TT, EE, kk, p, id, w);
        double want;
        ck_assert(rl_moe_aux_loss(NULL, p, id, TT, EE, kk, 0.03, &want, NULL, NULL, NULL) == 0);
        double got = aux_run(p, id, TT, EE, kk, 0.03);
        CHECK(fabs(got - want) <= 1e-9 * fabs(want) + 1e-12,
                      "moe_aux_loss over %lld tokens, E=%d, k=%d, α = 0.03: %.10g; α·E·Σ fᵢ·Pᵢ = %.10g (fᵢ = slots "
                      "routed to i / (T·k), Pᵢ = mean over tokens of probs[t·E + i])", (long long)TT, EE, kk, got,
                      want);
        free(p), free(z), free(w), free(id);
    }
}
END_TEST

START_TEST(t_moe_pattern)
{
    moe_spec r[3];
    moe_draw(26, r, 3, 2, 2);
    moe_spec f = moe_fixed(8, 2, 4, 1.25, "hot-expert:expert=3:frac=0.6");
    moe_check(&f, MOE_PATTERN);
    f = moe_fixed(4, 1, 2, 1.0, "hot-expert:expert=0:frac=1"); /* rank 1 receives no row */
    moe_check(&f, MOE_PATTERN);
    for (int i = 0; i < 3; i++)
        moe_check(&r[i], MOE_PATTERN);
}
END_TEST

/* ================================================================== 31.4 diagnose failures */

/* Sends stderr to /dev/null (returns the saved descriptor): the grader's own fault scenarios
 * hang or mismatch on purpose, and their watchdog reports must not read as a deadlock of the
 * code under test when a later failure shows the test's output. */
static int stderr_off(void)
{
    fflush(stderr);
    int saved = dup(2), nul = open("/dev/null", O_WRONLY);
    if (nul >= 0) {
        dup2(nul, 2);
        close(nul);
    }
    return saved;
}

/* Restores stderr saved by stderr_off. */
static void stderr_on(int saved)
{
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* What a run of one of the grader's own fault scenarios leaves in the child's record: the flight
 * dump the watchdog or the mismatch check wrote, as loaded. The scenarios run no code under test,
 * but their dumps are files of the child's scratch folder: the judge takes them from here. */
typedef struct flight_res {
    int rc;                        /* fault_run's status, or rl_launch's (the p2p deadlock) */
    int load_rc;                   /* rl_diag_flight_load's */
    char err[256];
    int nranks;
    char verdict[512];
    rl_grade_blob rec;             /* rl_diag_rec [nrec] */
} flight_res;

/* In a run (the child only): loads the dump written beside path into o, then removes both files. */
static void keep_flight(flight_res *o, const char *path)
{
    char dump[300];
    snprintf(dump, sizeof dump, "%s.flight.json", path);
    rl_diag_flight fl;
    memset(&fl, 0, sizeof fl);
    o->load_rc = rl_diag_flight_load(dump, &fl, o->err, sizeof o->err);
    o->nranks = fl.nranks;
    snprintf(o->verdict, sizeof o->verdict, "%s", fl.verdict);
    o->rec = rl_grade_keep(fl.rec, (size_t)(fl.nrec > 0 ? fl.nrec : 0) * sizeof *fl.rec);
    rl_diag_flight_free(&fl);
    unlink(dump);
    unlink(path);
}

/* The dump a run kept, as a dump to analyse: its texts ended, at most 2048 records, ranks within
 * 0..LAB31_MAX_RANKS−1 (nranks above every rank) and seqs within −1..1023, as a real run of the
 * grader's scenarios makes them. The caller frees it (rl_diag_flight_free). */
static void take_flight(const flight_res *o, rl_diag_flight *fl)
{
    memset(fl, 0, sizeof *fl);
    size_t n = rl_grade_blob_count(o->rec, sizeof(rl_diag_rec));
    const rl_diag_rec *src = rl_grade_blob_get(o->rec, sizeof(rl_diag_rec), n);
    if (n > 2048)
        n = 2048;
    fl->rec = calloc(n + 1, sizeof *fl->rec);
    fl->nrec = (int)n;
    fl->nranks = clampi(o->nranks, 0, LAB31_MAX_RANKS);
    take_str(fl->verdict, sizeof fl->verdict, o->verdict, sizeof o->verdict);
    for (size_t i = 0; i < n; i++) {
        rl_diag_rec *d = &fl->rec[i];
        *d = src[i];
        d->op[sizeof d->op - 1] = 0, d->dtype[sizeof d->dtype - 1] = 0;
        d->comm[sizeof d->comm - 1] = 0, d->state[sizeof d->state - 1] = 0;
        d->rank = clampi(d->rank, 0, LAB31_MAX_RANKS - 1);
        if (d->rank + 1 > fl->nranks)
            fl->nranks = d->rank + 1;
        d->seq = d->seq < -1 ? -1 : d->seq > 1023 ? 1023 : d->seq;
    }
}

/* A fault scenario: fault_run on `ranks` ranks with the fault spec, its trace (and so its flight
 * dump) in the scratch folder under the name tag. */
typedef struct scenario_job {
    const char *spec, *tag;
    int ranks;
} scenario_job;

/* In the child: runs the scenario (its watchdog reports kept off stderr) and keeps its dump. */
static void scenario_produce(void *out, void *arg)
{
    const scenario_job *j = arg;
    flight_res *o = out;
    fault_run_config fc = fault_run_config_default();
    fc.opts = gopts(j->ranks);
    fc.opts.timeout_s = 0.4;
    fc.steps = 4;
    char path[256], err[256];
    snprintf(path, sizeof path, "rl31_%s.json", j->tag); /* in the test's scratch folder */
    fc.opts.trace_path = path;
    if (rl_fault_parse(j->spec, &fc.opts.faults[0], err, sizeof err) == 0)
        fc.opts.nfaults = 1;
    fault_run_log log;
    memset(&log, 0, sizeof log);
    int saved = stderr_off();
    o->rc = fault_run(&fc, &log);
    stderr_on(saved);
    free(log.norms);
    keep_flight(o, path);
}

/* Runs the scenario `spec` on `ranks` ranks in the child; fl gets its flight dump, from the
 * record. */
static void fault_scenario(const char *spec, int ranks, const char *tag, rl_diag_flight *fl)
{
    rl_fault f;
    char err[256];
    ck_assert(rl_fault_parse(spec, &f, err, sizeof err) == 0);
    scenario_job j = { spec, tag, ranks };
    const flight_res *o = rl_grade_run("fault scenario", sizeof *o, scenario_produce, &j);
    ck_assert_msg(o->rc == 0, "Assertion '%s' failed", "frc == 0");
    CHECK(o->load_rc == 0, "scenario %s: no flight dump (%.*s)", spec, (int)sizeof o->err, o->err);
    take_flight(o, fl);
}

/* What diagnose() left in the child's record. */
typedef struct diag_res {
    int rc;
    diag_result got;
} diag_res;

/* In the child: calls diagnose() on the dump (rank and seq start at -7). */
static void diag_produce(void *out, void *arg)
{
    diag_res *o = out;
    o->got.rank = -7, o->got.seq = -7;
    o->rc = diagnose(arg, &o->got);
}

/* diagnose() on one dump against the reference analysis (and, when given, the designed
 * answer the scenario was built to have). */
static void diag_expect(const rl_diag_flight *fl, const char *scenario, const rl_diag_result *designed,
                        const char *rule)
{
    const diag_res *o = rl_grade_run("diagnose", sizeof *o, diag_produce, (void *)fl);
    if (!rl_grade_judging()) /* the child: the reference and the comparisons are the judge's */
        return;
    int rc = o->rc;
    diag_result got = o->got;
    got.comm[sizeof got.comm - 1] = 0;
    got.message[sizeof got.message - 1] = 0;
    rl_diag_result ref;
    ck_assert(rl_diag_flight_analyze(fl, &ref) == 0);
    if (designed)
        CHECK(ref.kind == designed->kind && ref.rank == designed->rank && ref.seq == designed->seq &&
                      strcmp(ref.comm, designed->comm) == 0,
                      "grader: the reference analysis says %s rank %d seq %lld on %s for «%s», built to be %s rank %d "
                      "seq %lld on %s", rl_diag_kind_name(ref.kind), ref.rank, (long long)ref.seq, ref.comm, scenario,
                      rl_diag_kind_name(designed->kind), designed->rank, (long long)designed->seq, designed->comm);
    CHECK(rc == 0, "diagnose() returned %s on %s", rl_status_name(rc), scenario);
    int same = got.kind == ref.kind && got.rank == ref.rank && got.seq == ref.seq &&
               (ref.kind == RL_DIAG_NONE || strcmp(got.comm, ref.comm) == 0);
    CHECK(same, "%s: diagnose() says %s, rank %d, seq %lld on %s («%s»); expected %s, rank %d, seq %lld on %s "
                  "(%s). %s", scenario, rl_diag_kind_name(got.kind), got.rank, (long long)got.seq, nz(got.comm),
                  nz(got.message), rl_diag_kind_name(ref.kind), ref.rank, (long long)ref.seq, nz(ref.comm),
                  ref.message, rule);
    CHECK(got.message[0], "%s: diagnose() found the right answer but left the message empty", scenario);
}

static void diag_real(int mismatch, int n, uint64_t stream)
{
    rl_rng r = rl_grade_rng(stream);
    int ranks[4], culprit[4], seq[4];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < n; i++) {
        ranks[i] = rl_grade_pick(&r, 3, 6);
        culprit[i] = rl_grade_pick(&r, 0, ranks[i] - 1);
        seq[i] = rl_grade_pick(&r, 1, 9);
        if (!mismatch && i == 0)
            seq[i] = 0; /* the culprit never calls anything on the world: no record there at all */
        rl_grade_text_add(&cs, "%s%s:rank=%d:seq=%d on %d ranks", i ? "; " : "", mismatch ? "mismatch" : "hang", culprit[i],
               seq[i], ranks[i]);
    }
    printf("cases (real runs): %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < n; i++) {
        char spec[96], tag[32], what[160];
        snprintf(spec, sizeof spec, "%s:rank=%d:seq=%d", mismatch ? "mismatch" : "hang", culprit[i], seq[i]);
        snprintf(tag, sizeof tag, "%c%d", mismatch ? 'm' : 'h', i);
        snprintf(what, sizeof what, "a real run of %d ranks with --fault %s", ranks[i], spec);
        rl_diag_flight fl;
        fault_scenario(spec, ranks[i], tag, &fl);
        diag_expect(&fl, what, NULL, mismatch ? "Usually: a rank named whose call is the majority's" :
                                                "Usually: a rank named that was waiting inside the collective: who "
                                                "left it waiting?");
        rl_diag_flight_free(&fl);
    }
}

/* ------------------------------------------------------------------ synthetic dumps */

/* A dump under construction and the story it tells (for messages). */
typedef struct dump {
    rl_diag_flight fl;
    int cap;
    rl_grade_text desc;
} dump;

static rl_diag_rec *d_add(dump *d, int rank, const char *comm, int64_t seq, const char *op, int64_t count,
                          const char *dtype, const char *state, double t)
{
    if (d->fl.nrec == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 256;
        d->fl.rec = realloc(d->fl.rec, sizeof *d->fl.rec * (size_t)d->cap);
        ck_assert(d->fl.rec);
    }
    rl_diag_rec *r = &d->fl.rec[d->fl.nrec++];
    memset(r, 0, sizeof *r);
    r->rank = rank, r->seq = seq, r->p2p_seq = -1, r->count = count, r->peer = -1, r->t_enqueued = t;
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    snprintf(r->comm, sizeof r->comm, "%s", comm);
    snprintf(r->state, sizeof r->state, "%s", state);
    if (rank + 1 > d->fl.nranks)
        d->fl.nranks = rank + 1;
    return r;
}

/* A communicator of a scenario: its members, how far each got, its clock. */
typedef struct scomm {
    const char *name;
    int n, mem[16];
    int64_t last[16];       /* per member: the highest seq it called (-1: none) */
    int64_t stuck;          /* the first seq that did not complete (records from it on are in flight) */
    double t0, dt;          /* seq s of member i enqueued at t0 + s·dt + i·1e-6 */
    int64_t tie_seq;        /* this seq's records all enqueued at tie_t (-1: none) */
    double tie_t;
    int64_t odd_seq;        /* at this seq, the members in odd_mask call odd_op/odd_count/odd_dtype */
    int odd_mask;
    const char *odd_op, *odd_dtype;
    int64_t odd_count;
} scomm;

static scomm sc_make(const char *name, const int *mem, int n, int64_t seqs, double t0)
{
    scomm c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.n = n;
    for (int i = 0; i < n; i++)
        c.mem[i] = mem[i], c.last[i] = seqs - 1;
    c.stuck = seqs;
    c.t0 = t0, c.dt = 0.01;
    c.tie_seq = c.odd_seq = -1;
    return c;
}

/* Appends the communicator's records. */
static void sc_emit(dump *d, const scomm *c)
{
    for (int i = 0; i < c->n; i++)
        for (int64_t s = 0; s <= c->last[i]; s++) {
            int odd = s == c->odd_seq && (c->odd_mask >> i & 1);
            double t = s == c->tie_seq ? c->tie_t : c->t0 + (double)s * c->dt + i * 1e-6;
            d_add(d, c->mem[i], c->name, s, odd && c->odd_op ? c->odd_op : "all_reduce",
                  odd && c->odd_count ? c->odd_count : 4096, odd && c->odd_dtype ? c->odd_dtype : "f32",
                  s < c->stuck ? "completed" : s == c->stuck ? "started" : "enqueued", t);
        }
}

/* Keeps each rank's last `keep` records (by enqueue time), as a flight recorder does. */
static void d_roll(dump *d, int keep)
{
    for (int r = 0; r < d->fl.nranks; r++) {
        int n = 0;
        for (int i = 0; i < d->fl.nrec; i++)
            n += d->fl.rec[i].rank == r;
        while (n > keep) { /* drop the oldest */
            int old = -1;
            for (int i = 0; i < d->fl.nrec; i++)
                if (d->fl.rec[i].rank == r && (old < 0 || d->fl.rec[i].t_enqueued < d->fl.rec[old].t_enqueued))
                    old = i;
            d->fl.rec[old] = d->fl.rec[--d->fl.nrec];
            n--;
        }
    }
}

/* Shuffles the records (the order of a dump's records is not part of the contract). */
static void d_shuffle(dump *d, rl_rng *g)
{
    int n = d->fl.nrec;
    int *perm = malloc(sizeof(int) * (size_t)(n + 1));
    rl_diag_rec *cp = malloc(sizeof *cp * (size_t)(n + 1));
    rl_grade_shuffle(g, perm, n);
    for (int i = 0; i < n; i++)
        cp[i] = d->fl.rec[perm[i]];
    memcpy(d->fl.rec, cp, sizeof *cp * (size_t)n);
    free(cp);
    free(perm);
}

static void d_free(dump *d)
{
    free(d->fl.rec);
    rl_grade_text_free(&d->desc);
    memset(d, 0, sizeof *d);
}

static rl_diag_result designed(rl_diag_kind kind, int rank, int64_t seq, const char *comm)
{
    rl_diag_result r;
    memset(&r, 0, sizeof r);
    r.kind = kind, r.rank = rank, r.seq = seq;
    snprintf(r.comm, sizeof r.comm, "%s", comm);
    return r;
}

/* Picks k distinct members of 0..n-1 (not `avoid`, -1: none) into out; returns the lowest. */
static int pick_set(rl_rng *g, int n, int k, int avoid, int *mask)
{
    int perm[16], low = n;
    rl_grade_shuffle(g, perm, n);
    *mask = 0;
    for (int i = 0, got = 0; i < n && got < k; i++)
        if (perm[i] != avoid) {
            *mask |= 1 << perm[i], got++;
            low = perm[i] < low ? perm[i] : low;
        }
    return low;
}

/* Hang on c at seq S: members in `missing` (a mask of member indices) never called it; the
 * others entered it and enqueued `extra` more seqs (asynchronous calls). */
static void sc_hang(scomm *c, int64_t S, int missing, int extra)
{
    c->stuck = S;
    for (int i = 0; i < c->n; i++)
        c->last[i] = (missing >> i & 1) ? S - 1 : S + extra;
}

static const char *odd_kinds[] = { "count", "dtype", "op" };

/* Mismatch on c at seq S by the members in mask: another count, dtype or op (kind 0..2). */
static void sc_mismatch(scomm *c, int64_t S, int mask, int kind, int extra)
{
    c->stuck = S;
    for (int i = 0; i < c->n; i++)
        c->last[i] = S + extra;
    c->odd_seq = S, c->odd_mask = mask;
    c->odd_count = kind == 0 ? 4096 + 1024 : 0;
    c->odd_dtype = kind == 1 ? "bf16" : NULL;
    c->odd_op = kind == 2 ? "all_gather" : NULL;
}

/* The culprit of a mismatch designed with mask on a communicator of n members (member index):
 * the majority call is the most common one, a tie going to the call of the lowest member. */
static int mismatch_culprit(int n, int mask)
{
    int odd = 0;
    for (int i = 0; i < n; i++)
        odd += mask >> i & 1;
    int odd_major = odd > n - odd || (odd == n - odd && (mask & 1));
    for (int i = 0; i < n; i++)
        if (((mask >> i & 1) != 0) != odd_major)
            return i;
    return -1;
}

static void mask_text(rl_grade_text *b, const scomm *c, int mask)
{
    int first = 1;
    for (int i = 0; i < c->n; i++)
        if (mask >> i & 1) {
            rl_grade_text_add(b, "%s%d", first ? "" : ",", c->mem[i]);
            first = 0;
        }
}

static const int all16[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/* A hang scenario on the world: several missing ranks, long histories (rolled recorders),
 * asynchronous calls queued after the stuck one, a completed sub-communicator beside. */
static void synth_hang(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    int R = rl_grade_pick(g, 3, 8), nmiss = idx == 0 ? 2 : rl_grade_pick(g, 1, R > 4 ? 3 : 2), mask;
    int64_t S = idx == 1 || rl_grade_pick(g, 0, 2) ? rl_grade_pick(g, 66, 110) : rl_grade_pick(g, 2, 20);
    int low = pick_set(g, R, nmiss, -1, &mask), extra = rl_grade_pick(g, 0, 2);
    scomm w = sc_make("world", all16, R, S, 0.0);
    sc_hang(&w, S, mask, extra);
    sc_emit(d, &w);
    int pair[2] = { 0, 1 };
    scomm sub = sc_make("world/0.0", pair, 2, rl_grade_pick(g, 1, 8), 0.003);
    if (rl_grade_pick(g, 0, 1))
        sc_emit(d, &sub);
    d->fl.nranks = R;
    d_roll(d, 64);
    rl_grade_text_add(&d->desc, "%d ranks, world: all_reduce seq 0..%lld completed, then seq %lld: rank(s) ", R,
           (long long)S - 1, (long long)S);
    mask_text(&d->desc, &w, mask);
    rl_grade_text_add(&d->desc, " never called it, the others entered it%s%s", extra ? " and queued more" : "",
           S >= 64 ? "; recorders keep the last 64 calls (the ranks' oldest seqs differ)" : "");
    *ex = designed(RL_DIAG_HANG, low, S, "world");
}

/* A hang on a sub-communicator (its members: the ranks with records on it). */
static void synth_hang_sub(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    (void)idx;
    int R = rl_grade_pick(g, 4, 8), m = rl_grade_pick(g, 2, R - 1), mem[16] = { 0 }, perm[16];
    rl_grade_shuffle(g, perm, R);
    for (int i = 0; i < m; i++)
        mem[i] = perm[i];
    for (int i = 0; i < m; i++) /* members ascending */
        for (int j = i + 1; j < m; j++)
            if (mem[j] < mem[i]) {
                int x = mem[i];
                mem[i] = mem[j], mem[j] = x;
            }
    int64_t S = rl_grade_pick(g, 1, 30);
    scomm w = sc_make("world", all16, R, rl_grade_pick(g, 2, 12), 0.0);
    sc_emit(d, &w);
    scomm c = sc_make("world/3.1", mem, m, S, 0.0005);
    int mask, low = pick_set(g, m, 1, -1, &mask);
    sc_hang(&c, S, mask, 0);
    sc_emit(d, &c);
    d->fl.nranks = R;
    rl_grade_text_add(&d->desc, "%d ranks; world: every call completed; world/3.1 (members ", R);
    mask_text(&d->desc, &c, (1 << m) - 1);
    rl_grade_text_add(&d->desc, "): seq %lld never called by rank %d, the others wait in it", (long long)S, mem[low]);
    *ex = designed(RL_DIAG_HANG, mem[low], S, "world/3.1");
}

/* A mismatch: one or several ranks call another count, dtype or op (majority ties too). */
static void synth_mismatch(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    int R = rl_grade_pick(g, 3, 8), kind = idx < 3 ? idx : rl_grade_pick(g, 0, 2);
    int nodd = rl_grade_pick(g, 0, 2) == 0 && R % 2 == 0 ? R / 2 : rl_grade_pick(g, 1, (R - 1) / 2);
    int mask;
    pick_set(g, R, nodd, -1, &mask);
    int64_t S = rl_grade_pick(g, 0, 2) ? rl_grade_pick(g, 66, 100) : rl_grade_pick(g, 1, 20);
    scomm w = sc_make("world", all16, R, S, 0.0);
    sc_mismatch(&w, S, mask, kind, rl_grade_pick(g, 0, 1));
    sc_emit(d, &w);
    d->fl.nranks = R;
    d_roll(d, 64);
    int cul = mismatch_culprit(R, mask);
    rl_grade_text_add(&d->desc, "%d ranks, world: at seq %lld rank(s) ", R, (long long)S);
    mask_text(&d->desc, &w, mask);
    rl_grade_text_add(&d->desc, " call all_reduce with another %s than the other %d%s", odd_kinds[kind], R - nodd,
           2 * nodd == R ? " (as many on each side: the majority is the call of the lowest rank)" : "");
    *ex = designed(RL_DIAG_MISMATCH, cul, S, "world");
}

/* Several anomalies in one dump (variant 0..10); the rules decide which one is reported. Each
 * variant fixes the orientation that tells a rule apart from its usual mistakes (lowest seq
 * instead of earliest, a communicator's first record instead of its anomaly's, kind or name
 * before time), so every run covers both communicators' orders. */
static void synth_multi(rl_rng *g, int variant, dump *d, rl_diag_result *ex)
{
    int R = rl_grade_pick(g, 4, 8), mask, mask2;
    if (variant == 11) /* at least two records at each anomalous seq: a first and a last enqueue */
        R = rl_grade_pick(g, 6, 8);
    int64_t S1 = rl_grade_pick(g, 2, 30), S2 = S1 + rl_grade_pick(g, 1, 3);
    int lo[8], hi[8], nlo = R / 2, nhi = R - R / 2;
    for (int i = 0; i < nlo; i++)
        lo[i] = i;
    for (int i = 0; i < nhi; i++)
        hi[i] = nlo + i;
    /* two sub-communicators; which one sorts first and which one is earlier are drawn apart */
    int a_first = rl_grade_pick(g, 0, 1);
    if (variant == 5 || variant == 10) /* equal times: the name that sorts first is b's (5) or a's (10) */
        a_first = variant == 10;
    const char *na = a_first ? "world/4.0" : "world/4.5", *nb = a_first ? "world/4.5" : "world/4.0";
    switch (variant) {
    case 0: { /* one communicator: a hang, then (queued asynchronously) a mismatch at a later seq */
        scomm w = sc_make("world", all16, R, S1, 0.0);
        int low = pick_set(g, R, 1, -1, &mask);
        sc_hang(&w, S1, mask, (int)(S2 - S1));
        int odd = (low + 1 + rl_grade_pick(g, 0, R - 2)) % R;
        w.odd_seq = S2, w.odd_mask = 1 << odd, w.odd_count = 1000;
        sc_emit(d, &w);
        rl_grade_text_add(&d->desc, "%d ranks, world: rank %d never called seq %lld; the others queued up to seq %lld, where "
               "rank %d calls another count", R, low, (long long)S1, (long long)S2, odd);
        *ex = designed(RL_DIAG_HANG, low, S1, "world");
        break;
    }
    case 1: { /* one communicator: a mismatch, then a rank missing at a later seq */
        scomm w = sc_make("world", all16, R, S1, 0.0);
        int odd = rl_grade_pick(g, 0, R - 1), late;
        sc_mismatch(&w, S1, 1 << odd, rl_grade_pick(g, 0, 2), (int)(S2 - S1));
        pick_set(g, R, 1, odd, &mask2);
        for (late = 0; !(mask2 >> late & 1); late++)
            ;
        w.last[late] = S2 - 1;
        sc_emit(d, &w);
        rl_grade_text_add(&d->desc, "%d ranks, world: rank %d's call at seq %lld differs; later rank %d never called seq %lld",
               R, odd, (long long)S1, late, (long long)S2);
        *ex = designed(RL_DIAG_MISMATCH, odd, S1, "world");
        break;
    }
    case 2:   /* hangs on two communicators: the earlier wins, though its seq is higher and its name sorts last */
    case 3: { /* a mismatch on one, an earlier hang on the other: time before kind */
        double ta = variant == 3 ? 0.0 : 0.5, tb = 0.25;
        if (variant == 2) { /* the earlier communicator's name sorts after the other's */
            na = ta == 0.0 ? "world/4.5" : "world/4.0";
            nb = ta == 0.0 ? "world/4.0" : "world/4.5";
        }
        scomm a = sc_make(na, lo, nlo, S1, ta), b = sc_make(nb, hi, nhi, S2, tb);
        int la = pick_set(g, nlo, 1, -1, &mask), lb = pick_set(g, nhi, 1, -1, &mask2);
        sc_hang(&a, S1, mask, 0);
        if (variant == 2)
            sc_hang(&b, S2, mask2, 0);
        else
            sc_mismatch(&b, S2, mask2, rl_grade_pick(g, 0, 2), 0), lb = mismatch_culprit(nhi, mask2);
        sc_emit(d, &a);
        sc_emit(d, &b);
        double whena = ta + (double)S1 * 0.01, whenb = tb + (double)S2 * 0.01;
        rl_grade_text_add(&d->desc, "%d ranks; %s (ranks 0..%d): a hang at seq %lld (rank %d missing), its seq first enqueued "
               "at t=%.3f; %s (ranks %d..%d): a %s at seq %lld (rank %d), first enqueued at t=%.3f", R, na, nlo - 1,
               (long long)S1, lo[la], whena, nb, nlo, R - 1, variant == 2 ? "hang" : "mismatch", (long long)S2,
               hi[lb], whenb);
        *ex = whena < whenb ? designed(RL_DIAG_HANG, lo[la], S1, na)
                            : designed(variant == 2 ? RL_DIAG_HANG : RL_DIAG_MISMATCH, hi[lb], S2, nb);
        break;
    }
    case 4:    /* a mismatch (on a) and a hang first enqueued at the same time: the mismatch */
    case 9:    /* the same with the mismatch on b (whose first records are the later ones) */
    case 5:    /* two hangs first enqueued at the same time: the name that sorts first (b's) */
    case 10: { /* the same with a's name first */
        scomm a = sc_make(na, lo, nlo, S1, 0.0), b = sc_make(nb, hi, nhi, S2, 0.1);
        int la = pick_set(g, nlo, 1, -1, &mask), lb = pick_set(g, nhi, 1, -1, &mask2);
        int mism = variant == 4 || variant == 9, mis_on_a = variant == 4;
        if (mis_on_a)
            sc_mismatch(&a, S1, mask, rl_grade_pick(g, 0, 2), 0), la = mismatch_culprit(nlo, mask);
        else
            sc_hang(&a, S1, mask, 0);
        if (mism && !mis_on_a)
            sc_mismatch(&b, S2, mask2, rl_grade_pick(g, 0, 2), 0), lb = mismatch_culprit(nhi, mask2);
        else
            sc_hang(&b, S2, mask2, 0);
        a.tie_seq = S1, b.tie_seq = S2, a.tie_t = b.tie_t = 1.0;
        sc_emit(d, &a);
        sc_emit(d, &b);
        rl_grade_text_add(&d->desc, "%d ranks; %s (ranks 0..%d): a %s at seq %lld (rank %d); %s (ranks %d..%d): a %s at seq %lld "
               "(rank %d); both seqs first enqueued at the same time t=1.000", R, na, nlo - 1,
               mis_on_a ? "mismatch" : "hang", (long long)S1, lo[la], nb, nlo, R - 1,
               mism && !mis_on_a ? "mismatch" : "hang", (long long)S2, hi[lb]);
        if (mism)
            *ex = mis_on_a ? designed(RL_DIAG_MISMATCH, lo[la], S1, na) : designed(RL_DIAG_MISMATCH, hi[lb], S2, nb);
        else
            *ex = strcmp(na, nb) < 0 ? designed(RL_DIAG_HANG, lo[la], S1, na) : designed(RL_DIAG_HANG, hi[lb], S2, nb);
        break;
    }
    case 6: { /* every rank entered the stuck seq: a hang with no rank to name (states other than started too) */
        scomm w = sc_make("world", all16, R, S1, 0.0);
        w.stuck = S1;
        for (int i = 0; i < R; i++)
            w.last[i] = S1;
        sc_emit(d, &w);
        for (int i = 0; i < d->fl.nrec; i++) /* none "started": any state but "completed" is stuck */
            if (d->fl.rec[i].seq == S1)
                snprintf(d->fl.rec[i].state, sizeof d->fl.rec[i].state, "%s", rl_grade_pick(g, 0, 1) ? "enqueued" : "failed");
        rl_grade_text_add(&d->desc, "%d ranks, world: every rank has a record at seq %lld, none completed (states "
                          "\"enqueued\" and \"failed\", none \"started\"; no rank missing)", R, (long long)S1);
        *ex = designed(RL_DIAG_HANG, -1, S1, "world");
        break;
    }
    case 8: { /* a's calls start first but come slowly: its anomaly (lower seq) is enqueued after b's */
        int64_t A = S1 < 5 ? 5 : S1, B = A + rl_grade_pick(g, 1, 3);
        scomm a = sc_make(na, lo, nlo, A, 0.0), b = sc_make(nb, hi, nhi, B, 0.1);
        a.dt = 0.05; /* a's seq s at 0.05·s, b's at 0.1 + 0.01·s: b's anomaly first */
        int la = pick_set(g, nlo, 1, -1, &mask), lb = pick_set(g, nhi, 1, -1, &mask2);
        int mis_b = rl_grade_pick(g, 0, 1);
        sc_hang(&a, A, mask, 0);
        if (mis_b)
            sc_mismatch(&b, B, mask2, rl_grade_pick(g, 0, 2), 0), lb = mismatch_culprit(nhi, mask2);
        else
            sc_hang(&b, B, mask2, 0);
        sc_emit(d, &a);
        sc_emit(d, &b);
        rl_grade_text_add(&d->desc, "%d ranks; %s (ranks 0..%d): calls from t=0.000 every 0.05 s, a hang at seq %lld "
                          "(rank %d missing), that seq first enqueued at t=%.3f; %s (ranks %d..%d): calls from t=0.100 "
                          "every 0.01 s, a %s at seq %lld (rank %d), first enqueued at t=%.3f — the communicator whose "
                          "calls began first is not the one whose anomaly came first", R, na, nlo - 1, (long long)A,
                          lo[la], 0.05 * (double)A, nb, nlo, R - 1, mis_b ? "mismatch" : "hang", (long long)B, hi[lb],
                          0.1 + 0.01 * (double)B);
        *ex = designed(mis_b ? RL_DIAG_MISMATCH : RL_DIAG_HANG, hi[lb], B, nb);
        break;
    }
    case 11: { /* two hangs: a's seq first enqueued earlier, though its last record there is the latest */
        int64_t A = S1, B = S1 + rl_grade_pick(g, 0, 2);
        scomm a = sc_make(na, lo, nlo, A, 0.0), b = sc_make(nb, hi, nhi, B, 0.0);
        int la = pick_set(g, nlo, 1, -1, &mask), lb = pick_set(g, nhi, 1, -1, &mask2);
        sc_hang(&a, A, mask, 0);
        sc_hang(&b, B, mask2, 0);
        sc_emit(d, &a);
        sc_emit(d, &b);
        double ta0 = 1.0, ta1 = 3.0, tb0 = 2.0, tb1 = 2.1;
        for (int i = 0, ka = 0, kb = 0; i < d->fl.nrec; i++) {
            rl_diag_rec *x = &d->fl.rec[i];
            if (x->seq == A && strcmp(x->comm, na) == 0)
                x->t_enqueued = ka++ ? ta1 : ta0;
            else if (x->seq == B && strcmp(x->comm, nb) == 0)
                x->t_enqueued = kb++ ? tb1 : tb0;
            else
                x->t_enqueued = 0.001 * (double)x->seq;
        }
        rl_grade_text_add(&d->desc, "%d ranks; %s (ranks 0..%d): a hang at seq %lld (rank %d missing), its records there "
                          "enqueued at t=%.1f and t=%.1f%s; %s (ranks %d..%d): a hang at seq %lld (rank %d missing), "
                          "its records there at t=%.1f and t=%.1f%s — the first enqueue decides, not the last", R, na,
                          nlo - 1, (long long)A, lo[la], ta0, ta1, nlo > 3 ? " (and more at t=3.0)" : "", nb, nlo, R - 1,
                          (long long)B, hi[lb], tb0, tb1, nhi > 3 ? " (and more at t=2.1)" : "");
        *ex = designed(RL_DIAG_HANG, lo[la], A, na);
        break;
    }
    case 12: { /* at one seq a mismatch and a missing rank: the mismatch */
        scomm w = sc_make("world", all16, R, S1, 0.0);
        int perm[16];
        rl_grade_shuffle(g, perm, R);
        int odd = perm[0], miss = perm[1];
        sc_mismatch(&w, S1, 1 << odd, rl_grade_pick(g, 0, 2), 0);
        w.last[miss] = S1 - 1;
        sc_emit(d, &w);
        rl_grade_text_add(&d->desc, "%d ranks, world: at seq %lld rank %d calls another count, dtype or op than the "
                          "others, and rank %d never called seq %lld (README: \"at one seq a mismatch is reported "
                          "before a hang\")", R, (long long)S1, odd, miss, (long long)S1);
        *ex = designed(RL_DIAG_MISMATCH, odd, S1, "world");
        break;
    }
    default: { /* nothing wrong */
        scomm w = sc_make("world", all16, R, S1, 0.0), a = sc_make(na, lo, nlo, S2, 0.001);
        sc_emit(d, &w);
        sc_emit(d, &a);
        rl_grade_text_add(&d->desc, "%d ranks; every call on world and %s completed", R, na);
        *ex = designed(RL_DIAG_NONE, -1, -1, "");
        break;
    }
    }
    d->fl.nranks = R;
}

/* Send/recv stuck, no collective anomaly: the lowest blocked rank, its oldest call. */
static void synth_p2p(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    int R = rl_grade_pick(g, 3, 7), mask;
    int64_t H = rl_grade_pick(g, 1, 10);
    scomm w = sc_make("world", all16, R, H, 0.0);
    sc_emit(d, &w);
    int nb = rl_grade_pick(g, 1, R - 1), low = pick_set(g, R, nb, rl_grade_pick(g, 0, 1) ? 0 : -1, &mask);
    const char *comm = rl_grade_pick(g, 0, 1) ? "world" : "world/1.0";
    int64_t best_seq = -1;
    double best_t = INFINITY;
    for (int r = 0; r < R; r++) {
        int blocked = mask >> r & 1;
        /* sends and receives are numbered apart (each kind has its own p2p counter, as in a real dump) */
        int64_t qs = rl_grade_pick(g, 0, 5), qr = rl_grade_pick(g, 0, 5);
        double t = 1.0 + rl_grade_pick(g, 0, 50) * 0.001;
        rl_diag_rec *x = d_add(d, r, comm, -1, "send", 64, "f32", "completed", 0.5 + r * 1e-3);
        x->p2p_seq = qs, x->peer = (r + 1) % R;
        x = d_add(d, r, comm, -1, "recv", 64, "f32", "completed", 0.6 + r * 1e-3);
        x->p2p_seq = qr, x->peer = (r + R - 1) % R;
        if (!blocked)
            continue;
        /* dump 0: the lowest blocked rank's older call is a send whose p2p seq is the higher one */
        int first = idx == 0 && r == low;
        int calls = first ? 2 : rl_grade_pick(g, 1, 2), send_first = first || rl_grade_pick(g, 0, 1);
        if (first)
            qs = qr + rl_grade_pick(g, 2, 4);
        for (int k = 0; k < calls; k++) {
            int send = (k == 0) == (send_first != 0);
            double tk = t + k * 0.002;
            x = d_add(d, r, comm, -1, send ? "send" : "recv", 64, "f32", "started", tk);
            x->p2p_seq = send ? qs + 1 : qr + 1, x->peer = send ? (r + 1) % R : (r + R - 1) % R;
            if (r == low && tk < best_t)
                best_t = tk, best_seq = x->p2p_seq;
        }
    }
    d->fl.nranks = R;
    rl_grade_text_add(&d->desc, "%d ranks; every collective completed; on %s rank(s) ", R, comm);
    mask_text(&d->desc, &w, mask);
    rl_grade_text_add(&d->desc, " are blocked in a send or recv whose peer never posted the matching call%s",
                      idx == 0 ? " (rank's sends and receives numbered apart: its oldest blocked call, a send, has "
                                 "the higher p2p seq)" : "");
    *ex = designed(RL_DIAG_P2P, low, best_seq, comm);
}

/* A collective anomaly beside blocked send/recv calls: the collective one is reported (README:
 * RL_DIAG_P2P "only when no collective is anomalous"). */
static void synth_p2p_and_hang(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    (void)idx;
    int R = rl_grade_pick(g, 3, 6), mask;
    int64_t S = rl_grade_pick(g, 1, 9);
    scomm w = sc_make("world", all16, R, S, 0.0);
    int miss = pick_set(g, R, 1, -1, &mask);
    sc_hang(&w, S, mask, 0);
    sc_emit(d, &w);
    int p = rl_grade_pick(g, 0, R - 1);
    rl_diag_rec *x = d_add(d, p, "world/1.0", -1, rl_grade_pick(g, 0, 1) ? "send" : "recv", 64, "f32", "started",
                           0.001); /* enqueued before the collective seq */
    x->p2p_seq = rl_grade_pick(g, 0, 3), x->peer = (p + 1) % R;
    d->fl.nranks = R;
    rl_grade_text_add(&d->desc, "%d ranks; world: seq %lld never called by rank %d, the others wait in it; rank %d "
                      "is also blocked in a %s on world/1.0, enqueued earlier", R, (long long)S, miss, p, x->op);
    *ex = designed(RL_DIAG_HANG, miss, S, "world");
}

/* A hang at seq 0 on the world: the missing rank has no record on the world at all (members of
 * "world" are every rank, not only the ranks with records there). */
static void synth_hang_seq0(rl_rng *g, int idx, dump *d, rl_diag_result *ex)
{
    (void)idx;
    int R = rl_grade_pick(g, 3, 6), mask;
    scomm w = sc_make("world", all16, R, 0, 0.0);
    int miss = pick_set(g, R, 1, -1, &mask);
    sc_hang(&w, 0, mask, 0);
    sc_emit(d, &w);
    rl_diag_rec *x = d_add(d, miss, "world/1.0", -1, "send", 64, "f32", "completed", 0.0005);
    x->p2p_seq = 0, x->peer = (miss + 1) % R;
    d->fl.nranks = R;
    rl_grade_text_add(&d->desc, "%d ranks; world: every rank but %d entered all_reduce seq 0; rank %d has no record on "
                      "world (only a completed send on world/1.0)", R, miss, miss);
    *ex = designed(RL_DIAG_HANG, miss, 0, "world");
}

typedef void (*synth_fn)(rl_rng *g, int idx, dump *d, rl_diag_result *ex);

/* n synthetic scenarios from fn (shuffled records), each against its designed answer. */
static void diag_synth(uint64_t stream, synth_fn fn, int n, const char *rule)
{
    rl_rng g = rl_grade_rng(stream);
    dump *ds = calloc((size_t)n, sizeof *ds);
    rl_diag_result *ex = calloc((size_t)n, sizeof *ex);
    rl_grade_text cs = { 0 };
    for (int i = 0; i < n; i++) {
        fn(&g, i, &ds[i], &ex[i]);
        d_shuffle(&ds[i], &g);
        rl_grade_text_add(&cs, "%s[%s]", i ? "; " : "", rl_grade_text_str(&ds[i].desc));
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "dump %d", i);
        rl_grade_text sc = { 0 };
        rl_grade_text_add(&sc, "dump %d (%s)", i, rl_grade_text_str(&ds[i].desc));
        diag_expect(&ds[i].fl, rl_grade_text_str(&sc), &ex[i], rule);
        rl_grade_text_free(&sc);
        d_free(&ds[i]);
    }
    free(ds);
    free(ex);
}

static const char *hang_rule = "Usually: a rank named that was waiting inside the stuck seq, a rank counted missing "
                               "whose recorder rolled out its older calls, or a member of world left out because it "
                               "has no record there (look at the expected rank's records)";
static const char *mismatch_rule = "A mismatch: the culprit is the lowest rank whose (op, count, dtype) differs from "
                                   "the majority call (most ranks; on a tie the call of the lowest rank)";

START_TEST(t_diag_hang)
{
    diag_real(0, rl_grade_quick() ? 1 : 2, 30);
    diag_synth(31, synth_hang, 5, hang_rule);
    diag_synth(32, synth_hang_sub, 3, hang_rule);
    diag_synth(38, synth_hang_seq0, 1, hang_rule);
}
END_TEST

START_TEST(t_diag_mismatch)
{
    diag_real(1, rl_grade_quick() ? 1 : 2, 33);
    diag_synth(34, synth_mismatch, 6, mismatch_rule);
}
END_TEST


START_TEST(t_diag_multi)
{
    /* every variant once, then a few drawn at random */
    rl_rng g = rl_grade_rng(35);
    enum { NV = 13, ND = NV + 3 };
    dump ds[ND];
    rl_diag_result ex[ND];
    memset(ds, 0, sizeof ds);
    rl_grade_text cs = { 0 };
    for (int i = 0; i < ND; i++) {
        synth_multi(&g, i < NV ? i : rl_grade_pick(&g, 0, NV - 1), &ds[i], &ex[i]);
        d_shuffle(&ds[i], &g);
        rl_grade_text_add(&cs, "%s[%s]", i ? "; " : "", rl_grade_text_str(&ds[i].desc));
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < ND; i++) {
        rl_grade_text sc = { 0 };
        rl_grade_text_add(&sc, "dump %d (%s)", i, rl_grade_text_str(&ds[i].desc));
        diag_expect(&ds[i].fl, rl_grade_text_str(&sc), &ex[i],
                    "Usually: an anomaly that is not its communicator's first, or not the one that began first "
                    "over the communicators (a seq begins at its earliest enqueue), or a convention for ties "
                    "missed (README, step 31.4)");
        rl_grade_text_free(&sc);
        d_free(&ds[i]);
    }
}
END_TEST

static int p2p_ring_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_rank(ctx), n = rl_world_size(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 8);
    rl_wait(rl_all_reduce(w, a, a, RL_SUM, 0));
    rl_send(w, a, (r + 1) % n, 0); /* ungrouped: every rank blocks in its send */
    rl_recv(w, a, (r + n - 1) % n, 0);
    return 0;
}

/* In the child: runs the ungrouped send/recv ring on *arg ranks (its watchdog report kept off
 * stderr) and keeps its dump. */
static void p2p_produce(void *out, void *arg)
{
    flight_res *o = out;
    rl_opts op = gopts(*(const int *)arg);
    op.timeout_s = 0.4;
    char path[128];
    snprintf(path, sizeof path, "rl31_p2p.json"); /* in the test's scratch folder */
    op.trace_path = path;
    int saved = stderr_off();
    o->rc = rl_launch(&op, p2p_ring_rank, NULL, NULL);
    stderr_on(saved);
    keep_flight(o, path);
}

START_TEST(t_diag_p2p)
{
    /* a real run: an ungrouped ring of sends deadlocks */
    rl_rng g = rl_grade_rng(36);
    int n = rl_grade_pick(&g, 3, 5);
    printf("cases (real run): an ungrouped send/recv ring on %d ranks\n", n);
    const flight_res *o = rl_grade_run("p2p deadlock", sizeof *o, p2p_produce, &n);
    CHECK(o->rc == RL_ERR_HANG, "grader: the p2p deadlock run ended with %s", rl_status_name(o->rc));
    CHECK(o->load_rc == 0, "grader: no flight dump: %.*s", (int)sizeof o->err, o->err);
    rl_diag_flight fl;
    take_flight(o, &fl);
    char what[96];
    snprintf(what, sizeof what, "a real run of %d ranks whose ungrouped send/recv ring deadlocked", n);
    const char *rule = "Usually: the blocked rank or its call chosen other than by README's conventions (the "
                       "lowest rank; its oldest blocked call)";
    diag_expect(&fl, what, NULL, rule);
    rl_diag_flight_free(&fl);
    diag_synth(37, synth_p2p, 5, "Usually: the oldest blocked call taken as the lowest p2p seq (sends and "
               "receives are numbered apart), or not the lowest blocked rank");
    diag_synth(39, synth_p2p_and_hang, 2, "Usually: a blocked send/recv reported though a collective is "
               "anomalous (README: \"Only when no collective is anomalous\")");
}
END_TEST

/* ------------------------------------------------------------------ stragglers */

/* What fault_run left in the child's record: its status, the run's, each rank's step time and
 * (when asked for) the norms [(step·ranks + rank)·layers + layer]. */
typedef struct frun_res {
    int rc, status;
    double step_ms[LAB31_MAX_RANKS];
    rl_grade_blob norms;
} frun_res;

/* In the child: runs the grader's fault run (no code under test) and keeps its log. */
static void frun_produce(void *out, void *arg)
{
    const fault_run_config *fc = arg;
    frun_res *o = out;
    fault_run_log log;
    memset(&log, 0, sizeof log);
    o->rc = fault_run(fc, &log);
    o->status = log.status;
    memcpy(o->step_ms, log.step_ms, sizeof o->step_ms);
    if (!o->rc)
        o->norms = rl_grade_keep(log.norms, (size_t)(fc->steps * fc->opts.ranks * fc->layers) * sizeof(double));
    free(log.norms);
}

/* Runs fault_run(fc) in the child; its log from the record (norms: NULL when it failed). */
static const frun_res *frun_run(const fault_run_config *fc, const double **norms)
{
    const frun_res *o = rl_grade_run("fault_run", sizeof *o, frun_produce, (void *)fc);
    *norms = o->norms.len ? rl_grade_blob_get(o->norms, sizeof(double), (size_t)(fc->steps * fc->opts.ranks *
                                                                                  fc->layers))
                          : NULL;
    return o;
}

/* What detect_straggler left in the child's record. */
typedef struct straggler_res {
    int rc;
    straggler_result got;
} straggler_res;

/* A call of detect_straggler: its step times. */
typedef struct straggler_job {
    const double *ms;
    int n;
} straggler_job;

/* In the child: calls detect_straggler (culprit starts at -7). */
static void straggler_produce(void *out, void *arg)
{
    const straggler_job *j = arg;
    straggler_res *o = out;
    o->got.culprit = -7;
    o->rc = detect_straggler(j->ms, j->n, &o->got);
}

static void straggler_case(const double *ms, int n, const char *what)
{
    straggler_job j = { ms, n };
    const straggler_res *o = rl_grade_run("detect_straggler", sizeof *o, straggler_produce, &j);
    if (!rl_grade_judging()) /* the child: the reference and the comparisons are the judge's */
        return;
    int rc = o->rc;
    straggler_result got = o->got;
    got.message[sizeof got.message - 1] = 0;
    rl_diag_spread ref;
    ck_assert(rl_diag_straggler(ms, n, NULL, &ref, NULL, 0) == 0);
    CHECK(rc == 0, "%s: detect_straggler returned %s", what, rl_status_name(rc));
    double tol = 1e-9 * ref.median + 1e-12;
    CHECK(got.culprit == ref.culprit && got.imbalanced == ref.imbalanced &&
                  fabs(got.cv - ref.cv) <= 1e-9 + 1e-6 * ref.cv && fabs(got.median - ref.median) <= tol &&
                  fabs(got.mean - ref.mean) <= 1e-9 * ref.mean + 1e-12 && fabs(got.mad - ref.mad) <= tol &&
                  (fabs(got.ratio - ref.ratio) <= 1e-9 * ref.ratio || got.ratio == ref.ratio),
                  "%s (%d ranks): culprit %d, imbalanced %d, mean %.6g, cv %.5f, max/min %.5g, median %.6g, MAD %.5g; "
                  "expected culprit %d, imbalanced %d, mean %.6g, cv %.5f, max/min %.5g, median %.6g, MAD %.5g (%s). "
                  "lab31.h: population stddev; imbalanced = cv > 0.4 OR max/min > 3; outlier: x > 1.2·median AND "
                  "(x − median)/(1.4826·MAD) > 3.5 (MAD 0: any x above the median passes the second test); the "
                  "median of an even count is the mean of the two middle values; culprit the outlier furthest above "
                  "the median, else the slowest rank when imbalanced (ties: the lower rank), else -1", what, n,
                  got.culprit, got.imbalanced, got.mean, got.cv, got.ratio, got.median, got.mad, ref.culprit,
                  ref.imbalanced, ref.mean, ref.cv, ref.ratio, ref.median, ref.mad, ref.message);
}

START_TEST(t_diag_straggler)
{
    /* the course's data: 32 ranks near 2200 ms, one at 3150 ms */
    double ms[33];
    rl_rng r = rl_grade_rng(40);
    for (int i = 0; i < 33; i++)
        ms[i] = 2200 + 20 * (rl_rng_uniform(&r) - 0.5);
    int slow = rl_grade_pick(&r, 0, 32);
    ms[slow] = 3150;
    /* real runs with an injected straggler (randomized) and one without */
    int ranks[3], culprit[3], extra[3];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 3; i++) {
        ranks[i] = rl_grade_pick(&r, 3, 8);
        culprit[i] = rl_grade_pick(&r, 0, ranks[i] - 1);
        extra[i] = rl_grade_pick(&r, 500, 1500);
        rl_grade_text_add(&cs, "%s%d ranks%s", i ? "; " : "", ranks[i], i < 2 ? "" : " without a straggler");
        if (i < 2)
            rl_grade_text_add(&cs, " straggler:rank=%d:ms=%d", culprit[i], extra[i]);
    }
    printf("cases: the course's 33 ranks with rank %d at 3150 ms; real runs: %s\n", slow, rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    straggler_case(ms, 33, "the course's 33 ranks, one at 3150 ms");
    double hits[8] = { 950, 1020, 890, 3200, 450, 910, 880, 520 };
    straggler_case(hits, 8, "expert hits [950, 1020, 890, 3200, 450, 910, 880, 520]");
    for (int i = 0; i < 3; i++) {
        fault_run_config fc = fault_run_config_default();
        fc.opts = gopts(ranks[i]);
        fc.steps = 2;
        char spec[64], err[128];
        snprintf(spec, sizeof spec, "straggler:rank=%d:ms=%d", culprit[i], extra[i]);
        if (i < 2) {
            ck_assert(rl_fault_parse(spec, &fc.opts.faults[0], err, sizeof err) == 0);
            fc.opts.nfaults = 1;
        }
        const double *norms;
        const frun_res *o = frun_run(&fc, &norms);
        ck_assert_msg(o->rc == 0 && o->status == 0, "Assertion '%s' failed",
                      "fault_run(&fc, &log) == 0 && log.status == 0");
        double step_ms[LAB31_MAX_RANKS];
        memcpy(step_ms, o->step_ms, sizeof step_ms);
        char what[96];
        snprintf(what, sizeof what, "a real run of %d ranks %s", fc.opts.ranks, i < 2 ? spec : "without a straggler");
        straggler_case(step_ms, fc.opts.ranks, what);
    }
}
END_TEST

/* Per-rank times near base (±1%, distinct). */
static void near(rl_rng *g, double *x, int n, double base)
{
    for (int i = 0; i < n; i++)
        x[i] = base * (1 + 0.02 * (rl_rng_uniform(g) - 0.5));
}

START_TEST(t_diag_straggler_cases)
{
    rl_rng g = rl_grade_rng(41);
    enum { NC = 11 };
    double x[NC][24];
    int n[NC];
    const char *what[NC] = {
        "two halves ~2.75x apart (cv > 0.4, max/min < 3, no outlier; even count)",
        "all near the median but one fast rank (max/min > 3, cv < 0.4, no outlier)",
        "one rank 1.3-1.6x slower (only the outlier test fires)",
        "one rank 1.1x slower (robust z large, but not > 1.2 x median: no straggler)",
        "most ranks exactly equal, one 1.5x slower (MAD = 0: an outlier)",
        "most ranks exactly equal, one 1.1x slower (MAD = 0, but not > 1.2 x median)",
        "two outliers with the same time (the lower rank)",
        "max/min > 3 with two slowest ranks equal (the lower rank)",
        "an even count whose two middle values differ (median = their mean)",
        "the slowest 1.6x the median, robust z 3.37 with the 1.4826 factor (5.0 without it): no straggler",
        "two outliers, the lower rank the nearer one (the culprit: the one furthest above the median)",
    };
    rl_grade_text cs = { 0 };
    for (int c = 0; c < NC; c++) {
        double base = rl_grade_pick(&g, 500, 3000);
        switch (c) {
        case 0: {
            n[c] = 2 * rl_grade_pick(&g, 2, 8);
            near(&g, x[c], n[c], base);
            int perm[24];
            rl_grade_shuffle(&g, perm, n[c]);
            for (int i = 0; i < n[c] / 2; i++)
                x[c][perm[i]] *= 2.75;
            break;
        }
        case 1:
            n[c] = rl_grade_pick(&g, 8, 20);
            near(&g, x[c], n[c], base);
            x[c][rl_grade_pick(&g, 0, n[c] - 1)] = base / (3.4 + rl_rng_uniform(&g));
            break;
        case 2:
        case 3:
            n[c] = rl_grade_pick(&g, 6, 20);
            near(&g, x[c], n[c], base);
            x[c][rl_grade_pick(&g, 0, n[c] - 1)] = base * (c == 2 ? 1.3 + 0.3 * rl_rng_uniform(&g) : 1.1);
            break;
        case 4:
        case 5: {
            n[c] = rl_grade_pick(&g, 5, 16);
            for (int i = 0; i < n[c]; i++)
                x[c][i] = base;
            for (int i = 0; i < (n[c] - 1) / 2 - 1; i++) /* fewer than half differ: MAD stays 0 */
                x[c][rl_grade_pick(&g, 0, n[c] - 1)] = base * (1 - 0.01 * rl_grade_pick(&g, 1, 5));
            int s = rl_grade_pick(&g, 0, n[c] - 1);
            x[c][s] = base * (c == 4 ? 1.5 : 1.1);
            break;
        }
        case 6: {
            n[c] = rl_grade_pick(&g, 7, 20);
            near(&g, x[c], n[c], base);
            int a = rl_grade_pick(&g, 0, n[c] - 2), b = rl_grade_pick(&g, a + 1, n[c] - 1);
            x[c][a] = x[c][b] = base * 1.5;
            break;
        }
        case 7: {
            n[c] = rl_grade_pick(&g, 8, 20);
            near(&g, x[c], n[c], base);
            int a = rl_grade_pick(&g, 0, n[c] - 2), b = rl_grade_pick(&g, a + 1, n[c] - 1);
            double top = 0;
            for (int i = 0; i < n[c]; i++)
                top = fmax(top, x[c][i]);
            x[c][a] = x[c][b] = top * 1.001; /* equal slowest, within 1.2 x median */
            int f = (b + 1) % n[c] == a ? (b + 2) % n[c] : (b + 1) % n[c];
            x[c][f] = base / 3.5;
            break;
        }
        case 9: { /* [100, 110, 120, 130, 140, 200] × base/100, in a random order: median 125, MAD 15 */
            static const double v[6] = { 100, 110, 120, 130, 140, 200 };
            int perm[6];
            n[c] = 6;
            rl_grade_shuffle(&g, perm, 6);
            for (int i = 0; i < 6; i++)
                x[c][perm[i]] = v[i] * base / 100;
            break;
        }
        case 10: { /* around base: one rank at 1.4x, a higher one at 1.6x */
            n[c] = rl_grade_pick(&g, 6, 16);
            near(&g, x[c], n[c], base);
            int a = rl_grade_pick(&g, 0, n[c] - 2), b = rl_grade_pick(&g, a + 1, n[c] - 1);
            x[c][a] = base * 1.4, x[c][b] = base * 1.6;
            break;
        }
        default:
            n[c] = 2 * rl_grade_pick(&g, 3, 9);
            near(&g, x[c], n[c], base);
            x[c][rl_grade_pick(&g, 0, n[c] - 1)] = base * 1.8;
            break;
        }
        rl_grade_text_add(&cs, "%s%s on %d ranks", c ? "; " : "", what[c], n[c]);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int c = 0; c < NC; c++) {
        rl_diag_spread ref;
        ck_assert(rl_diag_straggler(x[c], n[c], NULL, &ref, NULL, 0) == 0);
        static const int want_cul[NC] = { 1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1 }; /* 1: a culprit, 0: none */
        CHECK((ref.culprit >= 0) == want_cul[c], "grader: case «%s» came out with culprit %d (%s)", what[c],
                      ref.culprit, ref.message);
        rl_grade_text v = { 0 };
        rl_grade_text_add(&v, "%s: [", what[c]);
        for (int i = 0; i < n[c]; i++)
            rl_grade_text_add(&v, "%s%.6g", i ? ", " : "", x[c][i]);
        rl_grade_text_add(&v, "] ms");
        straggler_case(x[c], n[c], rl_grade_text_str(&v));
        rl_grade_text_free(&v);
    }
}
END_TEST

/* ------------------------------------------------------------------ spikes */

/* What detect_spike left in the child's record. */
typedef struct spike_res {
    int rc;
    spike_result got;
} spike_res;

/* A call of detect_spike: its norms and sizes. */
typedef struct spike_job {
    const double *norms;
    int steps, ranks, layers;
} spike_job;

/* In the child: calls detect_spike (step, rank and layer start at -7). */
static void spike_produce(void *out, void *arg)
{
    const spike_job *j = arg;
    spike_res *o = out;
    o->got.step = o->got.rank = o->got.layer = -7;
    o->rc = detect_spike(j->norms, j->steps, j->ranks, j->layers, &o->got);
}

static void spike_case(const double *norms, int steps, int ranks, int layers, const char *what)
{
    spike_job j = { norms, steps, ranks, layers };
    const spike_res *o = rl_grade_run("detect_spike", sizeof *o, spike_produce, &j);
    if (!rl_grade_judging()) /* the child: the reference and the comparisons are the judge's */
        return;
    int rc = o->rc;
    spike_result got = o->got;
    rl_diag_spike ref;
    ck_assert(rl_diag_spike_find(norms, steps, ranks, layers, NULL, &ref, NULL, 0) == 0);
    CHECK(rc == 0, "%s: detect_spike returned %s", what, rl_status_name(rc));
    int same_v = (isnan(got.value) && isnan(ref.value)) || got.value == ref.value;
    /* for a non-finite norm recent_mean is informative only (lab31.h: any value) */
    int same_mean = ref.nonfinite || fabs(got.recent_mean - ref.recent_mean) <= 1e-9 * fabs(ref.recent_mean) + 1e-12;
    CHECK(got.found == ref.found && (!ref.found || (got.step == ref.step && got.rank == ref.rank &&
                                                            got.layer == ref.layer && got.nonfinite == ref.nonfinite &&
                                                            same_v && same_mean)),
                  "%s: detect_spike says found %d, step %d, rank %d, layer %d, non-finite %d, value %.6g, recent mean "
                  "%.6g; expected found %d, step %d, rank %d, layer %d, non-finite %d, value %.6g, recent mean %.6g "
                  "(%s). lab31.h: the first norm in the order step, then layer 0..L−1, then rank, that is NaN/Inf or "
                  "above 5x the mean of the same (rank, layer)'s last <= 5 finite earlier values (at least 1); "
                  "value = that norm, recent_mean = that mean (for a non-finite norm any recent_mean is accepted)", what,
                  got.found, got.step, got.rank, got.layer, got.nonfinite, got.value, got.recent_mean, ref.found,
                  ref.step, ref.rank, ref.layer, ref.nonfinite, ref.value, ref.recent_mean, ref.message);
}

START_TEST(t_diag_spike)
{
    rl_rng r = rl_grade_rng(42);
    int n = rl_grade_quick() ? 2 : 4, rank[4], step[4], layer[4];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < n; i++) {
        rank[i] = rl_grade_pick(&r, 0, 3), step[i] = rl_grade_pick(&r, 1, 5), layer[i] = rl_grade_pick(&r, 0, 3);
        rl_grade_text_add(&cs, "%s%s at rank %d, step %d, layer %d", i ? "; " : "", i % 2 == 0 ? "NaN" : "spike x40", rank[i],
               step[i], layer[i]);
    }
    printf("cases (real runs): %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < n; i++) {
        fault_run_config fc = fault_run_config_default();
        fc.opts = gopts(4);
        fc.steps = 6;
        fc.layers = 4;
        char spec[96], err[128];
        if (i % 2 == 0) {
            snprintf(spec, sizeof spec, "nan:rank=%d:step=%d:layer=%d", rank[i], step[i], layer[i]);
            ck_assert(rl_fault_parse(spec, &fc.opts.faults[0], err, sizeof err) == 0);
            fc.opts.nfaults = 1;
        } else {
            fc.spike_rank = rank[i], fc.spike_step = step[i], fc.spike_layer = layer[i];
            snprintf(spec, sizeof spec, "spike x%g at rank %d, step %d, layer %d", fc.spike_factor, rank[i], step[i],
                     layer[i]);
        }
        const double *norms;
        const frun_res *o = frun_run(&fc, &norms);
        ck_assert_msg(o->rc == 0, "Assertion '%s' failed", "fault_run(&fc, &log) == 0");
        char what[160];
        snprintf(what, sizeof what, "a real run (%s)", spec);
        if (!norms) /* only when the run failed (the child: the judge's check above says so) */
            continue;
        size_t nn = (size_t)(fc.steps * 4 * fc.layers);
        double *v = malloc(nn * sizeof *v); /* the grader's own copy: detect_spike gets no pointer into the record */
        memcpy(v, norms, nn * sizeof *v);
        spike_case(v, fc.steps, 4, fc.layers, what);
        free(v);
    }
}
END_TEST

START_TEST(t_diag_spike_cases)
{
    rl_rng g = rl_grade_rng(43);
    enum { NS = 7 };
    const char *what[NS] = {
        ("two anomalies at one step: a NaN on a lower rank in a later layer, a spike on a higher rank in an earlier "
         "layer (layer before rank)"),
        "a long history: high values, then at least 5 low ones, then 6x the low ones (only the last <= 5 count)",
        "large norms at step 0 (no history: not a spike) and a spike later",
        "a NaN at step 0 (no history needed for a non-finite norm)",
        "exactly 5x the recent mean (not above it), then a real spike",
        "no anomaly",
        "+Inf (not NaN) in a later step, a spike on the same step's next layer",
    };
    rl_grade_text cs = { 0 };
    int S[NS], R[NS], L[NS];
    double *nv[NS];
    for (int c = 0; c < NS; c++) {
        S[c] = rl_grade_pick(&g, 8, 14), R[c] = rl_grade_pick(&g, 2, 5), L[c] = rl_grade_pick(&g, 2, 5);
        int s = S[c], rk = R[c], ly = L[c];
        double *v = nv[c] = malloc(sizeof(double) * (size_t)(s * rk * ly));
#define AT(a, b, c2) v[((a) * rk + (b)) * ly + (c2)]
        for (int a = 0; a < s; a++)
            for (int b = 0; b < rk; b++)
                for (int l = 0; l < ly; l++)
                    AT(a, b, l) = 1.0 + 0.5 * (b + 1) / rk + 0.25 * l + 0.05 * rl_rng_uniform(&g);
        int at = rl_grade_pick(&g, 6, s - 1);
        switch (c) {
        case 0: {
            int r1 = rl_grade_pick(&g, 0, rk - 2), r2 = rl_grade_pick(&g, r1 + 1, rk - 1);
            int l2 = rl_grade_pick(&g, 0, ly - 2), l1 = rl_grade_pick(&g, l2 + 1, ly - 1);
            AT(at, r1, l1) = NAN;
            AT(at, r2, l2) *= 40;
            break;
        }
        case 1: {
            int b = rl_grade_pick(&g, 0, rk - 1), l = rl_grade_pick(&g, 0, ly - 1);
            for (int a = 0; a < at - 5; a++)
                AT(a, b, l) = 10.0 + 0.1 * a;
            for (int a = at - 5; a < at; a++)
                AT(a, b, l) = 1.0;
            AT(at, b, l) = 6.0;
            break;
        }
        case 2: {
            for (int b = 0; b < rk; b++)
                AT(0, b, 0) = 1000.0 * (b + 1);
            AT(at, rl_grade_pick(&g, 0, rk - 1), rl_grade_pick(&g, 0, ly - 1)) *= 30;
            break;
        }
        case 3:
            AT(0, rl_grade_pick(&g, 0, rk - 1), rl_grade_pick(&g, 0, ly - 1)) = NAN;
            break;
        case 6: {
            int l = rl_grade_pick(&g, 0, ly - 2);
            AT(at, rl_grade_pick(&g, 0, rk - 1), l) = INFINITY;
            AT(at, rl_grade_pick(&g, 0, rk - 1), l + 1) *= 40;
            break;
        }
        case 4: {
            int b = rl_grade_pick(&g, 0, rk - 1), l = rl_grade_pick(&g, 0, ly - 1);
            for (int a = 0; a < at; a++)
                AT(a, b, l) = 2.0;
            AT(at, b, l) = 10.0; /* exactly 5 x 2 */
            if (at + 1 < s)
                AT(at + 1, (b + 1) % rk, l) *= 50;
            break;
        }
        default:
            break;
        }
#undef AT
        rl_grade_text_add(&cs, "%s%s (%d steps x %d ranks x %d layers)", c ? "; " : "", what[c], s, rk, ly);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int c = 0; c < NS; c++) {
        spike_case(nv[c], S[c], R[c], L[c], what[c]);
        free(nv[c]);
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
    case 3: /* a small model on 4 GPUs */
        in = (rl_calc_plan_in){ 1.3e9, 24, 16, 2048, 2048, 32, 4, rl_hw_find("h100-nvlink"), 16 };
        break;
    default: /* 13B on 24 GPUs: TP 3, 6, 12, 24 divide G and the heads but are no powers of two; PP 3, 6, 12 too */
        in = (rl_calc_plan_in){ 13e9, 24, 24, 3072, 2048, 96, 24, rl_hw_find("h100-2node-ib"), 0 };
        break;
    }
    return in;
}

static int near_rel(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15; }

/* The warning bits as words. */
static void warn_text(char *buf, size_t size, int w)
{
    snprintf(buf, size, "%s%s%s%s", w & RL_CALC_WARN_TP_NODES ? "TP-across-nodes " : "",
             w & RL_CALC_WARN_FEW_MB ? "m<4p " : "", w & RL_CALC_WARN_OOM ? "out-of-memory " : "",
             w & ~7 ? "unknown-bits" : "");
    if (!buf[0])
        snprintf(buf, size, "(none)");
}

static void in_text(char *buf, size_t size, const rl_calc_plan_in *in)
{
    snprintf(buf, size, "Ψ=%g, L=%d, heads %d, h=%g, S=%g, gbs %d on %d GPUs of %s (%d per node), K=%g", in->params,
             in->layers, in->heads, in->hidden, in->seq, in->gbs, in->gpus, in->hw->name, in->hw->gpus_per_node, in->k);
}

/* A random model and cluster: sizes the divisibility rules leave several layouts for. */
static rl_calc_plan_in plan_random(rl_rng *g, rl_hw *hw)
{
    static const char *const profiles[] = { "h100-nvlink", "a100-pcie", "h100-2node-ib" };
    static const int layers[] = { 12, 16, 24, 30, 32, 40, 48, 60, 64, 80, 96 };
    static const int heads[] = { 8, 12, 16, 24, 32, 40, 48, 64, 96 };
    static const int gpus[] = { 4, 8, 12, 16, 24, 32, 48, 64, 96, 128 };
    *hw = *rl_hw_find(profiles[rl_grade_pick(g, 0, 2)]);
    if (rl_grade_pick(g, 0, 2) == 0)
        hw->gpus_per_node = 4;
    rl_calc_plan_in in;
    memset(&in, 0, sizeof in);
    in.params = rl_grade_pick(g, 5, 2000) * 1e8;
    in.layers = layers[rl_grade_pick(g, 0, 10)];
    in.heads = heads[rl_grade_pick(g, 0, 8)];
    in.hidden = in.heads * (rl_grade_pick(g, 0, 1) ? 128.0 : 64.0);
    in.seq = 1024.0 * (1 << rl_grade_pick(g, 0, 3));
    in.gpus = gpus[rl_grade_pick(g, 0, 9)];
    in.gbs = in.gpus * rl_grade_pick(g, 1, 8) * (rl_grade_pick(g, 0, 1) ? 1 : 3);
    in.hw = hw;
    in.k = rl_grade_pick(g, 0, 1) ? 0 : 16;
    return in;
}

/* 1 when a must sort after b by the learner's own values (fitting first, step time, memory, tp,
 * pp, b, zero, recompute): candidates whose times differ only in the arithmetic's noise may come
 * in either order against the reference, but the list must be sorted by its own figures, and
 * rows whose figures tie exactly follow the tie-breaks. */
static int row_after(const rl_calc_plan_row *a, const rl_calc_plan_row *b)
{
    int fa = !(a->warnings & RL_CALC_WARN_OOM), fb = !(b->warnings & RL_CALC_WARN_OOM);
    if (fa != fb)
        return fb > fa;
    if (a->step_time != b->step_time)
        return a->step_time > b->step_time;
    if (a->mem_total != b->mem_total)
        return a->mem_total > b->mem_total;
    if (a->tp != b->tp)
        return a->tp > b->tp;
    if (a->pp != b->pp)
        return a->pp > b->pp;
    if (a->b != b->b)
        return a->b > b->b;
    if (a->zero != b->zero)
        return a->zero > b->zero;
    return a->recompute > b->recompute;
}

static void row_text(char *buf, size_t size, const rl_calc_plan_row *r)
{
    char w[64];
    warn_text(w, sizeof w, r->warnings);
    snprintf(buf, size, "tp=%d pp=%d dp=%d b=%d m=%d zero=%d recompute=%s: step %.9g s, memory %.9g B, MFU %.5g, "
             "warnings %s", r->tp, r->pp, r->dp, r->b, r->m, r->zero, rl_calc_recompute_name(r->recompute),
             r->step_time, r->mem_total, r->mfu, w);
}

#define PLAN_MAX_ROWS 65536 /* rows of plan_enumerate kept in the record */

/* What plan_enumerate left in the child's record: its status, its message and its rows (kept
 * when it returned some and at most PLAN_MAX_ROWS of them). */
typedef struct enum_res {
    int rc;
    char err[4096];
    int nrows, has_rows;           /* *nrows as it set it; has_rows: *rows was not NULL */
    rl_grade_blob rows;            /* rl_calc_plan_row [nrows] when kept */
} enum_res;

/* In the child: calls plan_enumerate, keeps its rows and frees them. */
static void enum_produce(void *out, void *arg)
{
    enum_res *o = out;
    rl_calc_plan_row *rows = NULL;
    o->nrows = -1;
    o->rc = plan_enumerate(arg, &rows, &o->nrows, o->err, sizeof o->err);
    o->has_rows = rows != NULL;
    if (rows && o->nrows > 0 && o->nrows <= PLAN_MAX_ROWS)
        o->rows = rl_grade_keep(rows, (size_t)o->nrows * sizeof *rows);
    if (o->rc == 0)
        free(rows);
}

/* Runs plan_enumerate(in) in the child; *rows gets its rows from the record (NULL when it gave
 * none, or more than the record keeps), *n their number as it set it, err (4096 bytes) its
 * message; returns its status. */
static int enum_run(const rl_calc_plan_in *in, const rl_calc_plan_row **rows, int *n, char *err)
{
    const enum_res *o = rl_grade_run("plan_enumerate", sizeof *o, enum_produce, (void *)in);
    take_str(err, 4096, o->err, sizeof o->err);
    *n = o->nrows;
    size_t kept = rl_grade_blob_count(o->rows, sizeof(rl_calc_plan_row));
    *rows = o->has_rows && o->nrows > 0 && (size_t)o->nrows == kept
                ? rl_grade_blob_get(o->rows, sizeof(rl_calc_plan_row), kept) : NULL;
    return o->rc;
}

/* The whole list of plan_enumerate against rl_calc_plan; exact: in the same order. */
static void plan_compare(const rl_calc_plan_in *in, int exact)
{
    char it[320];
    in_text(it, sizeof it, in);
    rl_calc_plan_row *ref = NULL;
    const rl_calc_plan_row *got = NULL;
    int nref = 0, ngot = -1;
    char *err = calloc(1, 4096);
    int rc = enum_run(in, &got, &ngot, err);
    if (!rl_grade_judging()) { /* the child: the reference and the comparisons are the judge's */
        free(err);
        return;
    }
    char *rerr = calloc(1, 4096);
    CHECK(rl_calc_plan(in, &ref, &nref, rerr, 4096) == 0, "grader: %s", rerr);
    free(rerr);
    CHECK(rc == 0, "plan_enumerate (%s) returned %s: %s", it, rl_status_name(rc), nz(err));
    CHECK(ngot == nref && got, "%s: %d candidates; calc.h's planner enumerates %d (TP a power of two dividing "
                  "G, the heads and h; PP dividing G/TP and L; DP dividing the global batch; b a power of two dividing "
                  "B/DP; ZeRO 0..3, only 0 at DP = 1; three recompute modes)", it, ngot, nref);
    char a[320], b[320];
    for (int i = 0; i < nref; i++) {
        const rl_calc_plan_row *x = &got[i], *y = &ref[i];
        if (!exact) { /* the same candidate, wherever it is */
            y = NULL;
            for (int j = 0; j < nref && !y; j++)
                if (ref[j].tp == x->tp && ref[j].pp == x->pp && ref[j].b == x->b && ref[j].zero == x->zero &&
                    ref[j].recompute == x->recompute)
                    y = &ref[j];
            row_text(a, sizeof a, x);
            CHECK(y, "%s: row %d (%s) is not a candidate of calc.h's planner", it, i, a);
        }
        row_text(a, sizeof a, x);
        row_text(b, sizeof b, y);
        CHECK(x->tp == y->tp && x->pp == y->pp && x->dp == y->dp && x->b == y->b && x->m == y->m &&
                      x->zero == y->zero && x->recompute == y->recompute && x->warnings == y->warnings &&
                      near_rel(x->step_time, y->step_time) && near_rel(x->mem_total, y->mem_total) &&
                      near_rel(x->mfu, y->mfu),
                      "%s: row %d is %s; expected %s", it, i, a, b);
        if (!exact && i + 1 < nref && row_after(&got[i], &got[i + 1])) {
            row_text(b, sizeof b, &got[i + 1]);
            CHECK(0, "%s: row %d (%s) comes before row %d (%s); the list is sorted by its rows' own figures "
                          "(lab31.h): fitting ones first, then by step time, memory, and where both are equal by "
                          "tp, pp, b, zero, recompute (each ascending)", it, i, a, i + 1, b);
        }
    }
    free(ref);
    free(err);
}

START_TEST(t_plan_rank)
{
    for (int w = 0; w < 5; w++) {
        rl_calc_plan_in in = plan_in(w);
        plan_compare(&in, 1);
    }
}
END_TEST

START_TEST(t_plan_ties)
{
    /* a model whose DP collectives dwarf every other term: Ψ = 1e30 parameters, optimizer
     * states of 1e-20 bytes per parameter, GPUs of 1e200 FLOP/s. Compute, TP, PP and the
     * activations vanish in the rounding, ZeRO-0 and ZeRO-1 hold the same bytes, so step times
     * and memories tie exactly between layouts and the tie-breaks alone decide the order */
    rl_rng g = rl_grade_rng(53);
    static const int gpus[] = { 8, 16 }, gbss[] = { 16, 32, 48 };
    rl_hw hw = *rl_hw_find("h100-2node-ib");
    hw.peak_flops_bf16 = 1e200;
    rl_calc_plan_in in = { 1e30, 8, 8, 512, 64, gbss[rl_grade_pick(&g, 0, 2)], gpus[rl_grade_pick(&g, 0, 1)], &hw,
                           1e-20 };
    char it[320];
    in_text(it, sizeof it, &in);
    printf("cases: %s (peak 1e200 FLOP/s)\n", it);
    plan_compare(&in, 0);
}
END_TEST

/* Draws random inputs, avoiding memory totals within noise of the HBM size. */
static rl_calc_plan_in plan_draw(rl_rng *g, rl_hw *hw)
{
    for (;;) {
        rl_calc_plan_in in = plan_random(g, hw);
        rl_calc_plan_row *ref = NULL;
        int n = 0, edge = 0;
        if (rl_calc_plan(&in, &ref, &n, NULL, 0) != 0 || n < 4) {
            free(ref);
            continue;
        }
        for (int i = 0; i < n; i++)
            edge |= fabs(ref[i].mem_total - hw->hbm_bytes) < 1e-6 * hw->hbm_bytes;
        free(ref);
        if (!edge)
            return in;
    }
}

START_TEST(t_plan_rank_random)
{
    rl_rng g = rl_grade_rng(50);
    rl_hw hw[4];
    rl_calc_plan_in in[4];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 4; i++) {
        char it[320];
        in[i] = plan_draw(&g, &hw[i]);
        in_text(it, sizeof it, &in[i]);
        rl_grade_text_add(&cs, "%s%s", i ? "; " : "", it);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < 4; i++)
        plan_compare(&in[i], 0);
}
END_TEST

/* One call of plan_candidate: the layout asked for. */
typedef struct cand_point {
    int tp, pp, b, zero;
    rl_calc_recompute recompute;
} cand_point;

/* What the calls of plan_candidate left in the child's record: per call its status and row. */
typedef struct cand_res {
    rl_grade_blob rc, row;         /* int [n], rl_calc_plan_row [n] */
} cand_res;

/* Calls of plan_candidate on one input (NULL allowed). */
typedef struct cand_job {
    const rl_calc_plan_in *in;
    const cand_point *pts;
    int n;
} cand_job;

/* In the child: calls plan_candidate on every point, each on a zeroed row. */
static void cand_produce(void *out, void *arg)
{
    const cand_job *j = arg;
    cand_res *o = out;
    int *rc = calloc((size_t)j->n + 1, sizeof *rc);
    rl_calc_plan_row *row = calloc((size_t)j->n + 1, sizeof *row);
    for (int i = 0; i < j->n; i++) {
        const cand_point *p = &j->pts[i];
        rc[i] = plan_candidate(j->in, p->tp, p->pp, p->b, p->recompute, p->zero, &row[i]);
    }
    o->rc = rl_grade_keep(rc, (size_t)j->n * sizeof *rc);
    o->row = rl_grade_keep(row, (size_t)j->n * sizeof *row);
    free(rc);
    free(row);
}

/* Calls plan_candidate(in, ...) on every point in the child; the judge gets each call's status
 * in *rc and row in *row (arrays of n in the record). */
static void cand_run(const rl_calc_plan_in *in, const cand_point *pts, int n, const int **rc,
                     const rl_calc_plan_row **row)
{
    cand_job j = { in, pts, n };
    const cand_res *o = rl_grade_run("plan_candidate", sizeof *o, cand_produce, &j);
    *rc = rl_grade_blob_get(o->rc, sizeof **rc, (size_t)n);
    *row = rl_grade_blob_get(o->row, sizeof **row, (size_t)n);
}

/* One call of plan_candidate(in, tp, pp, b, recompute, zero) in the child; *row gets its row,
 * from the record; returns its status. */
static int cand_one(const rl_calc_plan_in *in, int tp, int pp, int b, rl_calc_recompute recompute, int zero,
                    rl_calc_plan_row *row)
{
    cand_point p = { tp, pp, b, zero, recompute };
    const int *rc;
    const rl_calc_plan_row *r;
    cand_run(in, &p, 1, &rc, &r);
    *row = r[0];
    return rc[0];
}

/* The point of a row of rl_calc_plan. */
static cand_point cand_of(const rl_calc_plan_row *b)
{
    cand_point p = { b->tp, b->pp, b->b, b->zero, b->recompute };
    return p;
}

/* One candidate's terms (plan_candidate's status rc and row got) against the row rl_calc_plan
 * computed for it. */
static void candidate_check(const rl_calc_plan_in *in, const rl_calc_plan_row *b, int rc,
                            const rl_calc_plan_row *gotp)
{
    char it[320];
    in_text(it, sizeof it, in);
    rl_calc_plan_row got = *gotp;
    CHECK(rc == 0, "%s: plan_candidate(tp=%d, pp=%d, b=%d, %s, zero=%d) returned %s", it, b->tp, b->pp, b->b,
                  rl_calc_recompute_name(b->recompute), b->zero, rl_status_name(rc));
    char wg[64], wb[64];
    warn_text(wg, sizeof wg, got.warnings);
    warn_text(wb, sizeof wb, b->warnings);
    CHECK(got.dp == b->dp && got.m == b->m && near_rel(got.compute_time, b->compute_time) &&
                  near_rel(got.tp_time, b->tp_time) && near_rel(got.pp_time, b->pp_time) &&
                  near_rel(got.dp_time, b->dp_time) && near_rel(got.bubble_time, b->bubble_time) &&
                  near_rel(got.step_time, b->step_time) && near_rel(got.mem_states, b->mem_states) &&
                  near_rel(got.mem_act, b->mem_act) && near_rel(got.mem_total, b->mem_total) &&
                  near_rel(got.mfu, b->mfu) && got.warnings == b->warnings,
                  "%s, tp=%d pp=%d b=%d zero=%d recompute=%s: dp %d, m %d; compute/tp/pp/dp/bubble/step = "
                  "%.5g/%.5g/%.5g/%.5g/%.5g/%.5g s, states %.5g B, activations %.5g B, total %.5g B, MFU %.5f, "
                  "warnings %s; expected dp %d, m %d; %.5g/%.5g/%.5g/%.5g/%.5g/%.5g s, %.5g B, %.5g B, %.5g B, "
                  "%.5f, %s", it, b->tp, b->pp, b->b, b->zero, rl_calc_recompute_name(b->recompute), got.dp, got.m,
                  got.compute_time, got.tp_time, got.pp_time, got.dp_time, got.bubble_time, got.step_time,
                  got.mem_states, got.mem_act, got.mem_total, got.mfu, wg, b->dp, b->m, b->compute_time, b->tp_time,
                  b->pp_time, b->dp_time, b->bubble_time, b->step_time, b->mem_states, b->mem_act, b->mem_total,
                  b->mfu, wb);
}

START_TEST(t_plan_candidate)
{
    rl_calc_plan_in in = plan_in(1);
    rl_calc_plan_row *ref = NULL;
    int nref = 0;
    ck_assert(rl_calc_plan(&in, &ref, &nref, NULL, 0) == 0);
    cand_point *pts = calloc((size_t)nref + 12, sizeof *pts);
    const rl_calc_plan_row **want = calloc((size_t)nref + 12, sizeof *want);
    const int *rc;
    const rl_calc_plan_row *got;
    int np = 0;
    for (int i = 0; i < nref; i += 7)
        want[np] = &ref[i], pts[np++] = cand_of(&ref[i]);
    cand_run(&in, pts, np, &rc, &got);
    for (int i = 0; i < np && rl_grade_judging(); i++)
        candidate_check(&in, want[i], rc[i], &got[i]);
    free(ref);
    rl_rng g = rl_grade_rng(51);
    rl_hw hw[3];
    rl_calc_plan_in ri[3];
    rl_grade_text cs = { 0 };
    for (int i = 0; i < 3; i++) {
        char it[320];
        ri[i] = plan_draw(&g, &hw[i]);
        in_text(it, sizeof it, &ri[i]);
        rl_grade_text_add(&cs, "%s%s", i ? "; " : "", it);
    }
    printf("cases: %s\n", rl_grade_text_str(&cs));
    rl_grade_text_free(&cs);
    for (int i = 0; i < 3; i++) {
        ck_assert(rl_calc_plan(&ri[i], &ref, &nref, NULL, 0) == 0);
        for (int j = 0; j < 12; j++) {
            want[j] = &ref[rl_grade_pick(&g, 0, nref - 1)];
            pts[j] = cand_of(want[j]);
        }
        cand_run(&ri[i], pts, 12, &rc, &got);
        for (int j = 0; j < 12 && rl_grade_judging(); j++)
            candidate_check(&ri[i], want[j], rc[j], &got[j]);
        free(ref);
    }
    free(pts);
    free(want);
}
END_TEST

START_TEST(t_plan_warnings)
{
    rl_calc_plan_in in = plan_in(1);
    rl_calc_plan_row r;
    char w[64];
    memset(&r, 0, sizeof r);
    int rc = cand_one(&in, 16, 2, 1, RL_CALC_RECOMPUTE_NONE, 1, &r);
    warn_text(w, sizeof w, r.warnings);
    CHECK(rc == 0 && (r.warnings & RL_CALC_WARN_TP_NODES),
                  "tp=16 on 8-GPU nodes must warn that TP crosses nodes (rc %s, warnings %s)", rl_status_name(rc), w);
    memset(&r, 0, sizeof r);
    rc = cand_one(&in, 8, 8, 16, RL_CALC_RECOMPUTE_NONE, 0, &r);
    warn_text(w, sizeof w, r.warnings);
    CHECK(rc == 0 && r.m < 32 && (r.warnings & RL_CALC_WARN_FEW_MB),
                  "pp=8 with m=%d micro-batches must warn m < 4p = 32 (rc %s, warnings %s)", r.m, rl_status_name(rc), w);
    memset(&r, 0, sizeof r);
    rc = cand_one(&in, 1, 1, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
    warn_text(w, sizeof w, r.warnings);
    CHECK(rc == 0 && (r.warnings & RL_CALC_WARN_OOM), "70B with tp=pp=1 and ZeRO-0 must not fit in 80 GB "
                  "(rc %s, warnings %s)", rl_status_name(rc), w);
    /* the boundaries: m = 4p is enough, m = 4p − 1 is not; pp = 1 never warns about m */
    rl_calc_plan_in small = { 1e9, 16, 16, 2048, 1024, 0, 8, rl_hw_find("h100-nvlink"), 0 };
    struct { int pp, gbs, warn; } mb[] = { { 2, 8 * 4 * 1, 0 }, { 2, 7 * 4 * 1, 1 }, { 4, 16 * 2, 0 },
                                           { 4, 15 * 2, 1 }, { 1, 1 * 8, 0 } };
    for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++) {
        small.gbs = mb[i].gbs;
        int dp = 8 / mb[i].pp;
        memset(&r, 0, sizeof r);
        rc = cand_one(&small, 1, mb[i].pp, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
        warn_text(w, sizeof w, r.warnings);
        CHECK(rc == 0 && r.m == mb[i].gbs / dp && !!(r.warnings & RL_CALC_WARN_FEW_MB) == mb[i].warn,
                      "pp=%d, dp=%d, global batch %d, b=1: m = %d (rc %s, warnings %s); the m < 4p warning is %s "
                      "(calc.h: \"m < 4·PP (PP > 1)\")", mb[i].pp, dp, mb[i].gbs, r.m, rl_status_name(rc), w,
                      mb[i].warn ? "expected" : "not expected");
    }
    /* nodes of another size: TP across nodes is tp > the profile's GPUs per node */
    rl_hw hw4 = *rl_hw_find("h100-2node-ib");
    hw4.gpus_per_node = 4;
    rl_calc_plan_in in4 = plan_in(1);
    in4.hw = &hw4;
    int tps[] = { 4, 8 };
    for (int i = 0; i < 2; i++) {
        memset(&r, 0, sizeof r);
        rc = cand_one(&in4, tps[i], 2, 1, RL_CALC_RECOMPUTE_NONE, 1, &r);
        warn_text(w, sizeof w, r.warnings);
        CHECK(rc == 0 && !!(r.warnings & RL_CALC_WARN_TP_NODES) == (i == 1),
                      "tp=%d on nodes of 4 GPUs: warnings %s (rc %s); TP crosses nodes exactly when tp > the "
                      "profile's gpus_per_node", tps[i], w, rl_status_name(rc));
    }
}
END_TEST

START_TEST(t_plan_invalid)
{
    rl_rng g = rl_grade_rng(52);
    rl_hw hw;
    rl_calc_plan_in in = plan_draw(&g, &hw);
    char it[320];
    in_text(it, sizeof it, &in);
    printf("cases: %s\n", it);
    int G = in.gpus;
    /* a valid candidate to vary: tp = pp = 1 */
    int d = G, per = in.gbs / d, bad_b = 0;
    for (int b = 2; b <= per + 1 && !bad_b; b++)
        if (per % b)
            bad_b = b;
    int bad_tp = 0;
    for (int t = 2; t <= G + 1 && !bad_tp; t++)
        if (G % t)
            bad_tp = t;
    struct { int tp, pp, b, zero; const char *what; } bad[] = {
        { bad_tp, 1, 1, 0, "tp does not divide the GPUs" },
        { 1, G + 1, 1, 0, "pp does not divide G/tp" },
        { 1, 1, bad_b ? bad_b : per + 1, 0, "b does not divide the batch per DP replica" },
        { 1, 1, 1, 4, "zero stage 4" },
        { 1, 1, 1, -1, "zero stage -1" },
        { 0, 1, 1, 0, "tp = 0" },
        { 1, 1, 0, 0, "b = 0" },
        { 1, G, 1, 1, "ZeRO-1 at dp = 1 (tp·pp = G)" },
        { 1, G, 1, 3, "ZeRO-3 at dp = 1 (tp·pp = G)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl_calc_plan_row r;
        memset(&r, 0, sizeof r);
        int rc = cand_one(&in, bad[i].tp, bad[i].pp, bad[i].b, RL_CALC_RECOMPUTE_NONE, bad[i].zero, &r);
        CHECK(rc == RL_ERR_ARG, "%s: plan_candidate(tp=%d, pp=%d, b=%d, zero=%d) — %s — returned %s; "
                      "expected RL_ERR_ARG (lab31.h: \"RL_ERR_ARG if the candidate is not a valid layout\"%s)", it,
                      bad[i].tp, bad[i].pp, bad[i].b, bad[i].zero, bad[i].what, rl_status_name(rc),
                      i >= 7 ? "; ZeRO stages 1–3 shard over DP, so at dp = 1 only zero = 0 is a candidate" : "");
    }
    /* ZeRO-0 at dp = 1 is a candidate when the batch allows it */
    rl_calc_plan_in one = plan_in(0);
    rl_calc_plan_row r;
    memset(&r, 0, sizeof r);
    int rc = cand_one(&one, 8, 1, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
    CHECK(rc == 0 && r.dp == 1, "7B on 8 GPUs: plan_candidate(tp=8, pp=1, b=1, zero=0) (dp = 1) returned %s, "
                  "dp %d; it is a valid candidate", rl_status_name(rc), r.dp);
    rc = cand_one(NULL, 1, 1, 1, RL_CALC_RECOMPUTE_NONE, 0, &r);
    CHECK(rc == RL_ERR_ARG, "plan_candidate(NULL input) returned %s, expected RL_ERR_ARG", rl_status_name(rc));
    /* plan_enumerate's refusals carry a message */
    struct { rl_calc_plan_in in; const char *what; } bi[] = {
        { { 0, 32, 32, 4096, 4096, 64, 8, rl_hw_find("h100-nvlink"), 0 }, "Ψ = 0" },
        { { 7e9, 32, 32, 4096, 4096, 64, 0, rl_hw_find("h100-nvlink"), 0 }, "0 GPUs" },
        { { 7e9, 32, 32, 4096, 4096, 64, 8, NULL, 0 }, "no hardware profile" },
        { { 7e9, 3, 3, 4096, 4096, 1, 4, rl_hw_find("h100-nvlink"), 0 }, "no layout fits (3 layers and heads, 4 "
                                                                          "GPUs, a global batch of 1)" },
    };
    for (size_t i = 0; i < sizeof bi / sizeof bi[0]; i++) {
        const rl_calc_plan_row *rows = NULL;
        int n = -1;
        char *err = calloc(1, 4096);
        rc = enum_run(&bi[i].in, &rows, &n, err);
        CHECK(rc == RL_ERR_ARG && strlen(err) >= 10, "plan_enumerate with %s returned %s and «%s»; expected "
                      "RL_ERR_ARG and a message saying what is wrong", bi[i].what, rl_status_name(rc), nz(err));
        free(err);
    }
}
END_TEST

/* ------------------------------------------------------------------ answers */

/* This learner's numbers for the hand derivations (rl_grade_learner_pick): H1 a model on a 3D
 * layout, H2 an MoE layer, H3 the hits of 8 experts, H4 a flight dump to read and one step's
 * times with a straggler, H5 a model, a cluster and a layout for the planner. */
typedef struct h_numbers {
    double h1_psi;
    int h1_tp, h1_pp, h1_dp;
    double h2_tokens, h2_cf, h2_hidden, h2_hot;
    int h2_experts, h2_topk;
    double h3_hits[8];
    /* H4's dump: R ranks on world stuck at seq s; rank miss never got there, rank rolled's
     * recorder kept only calls past s; ranks a < b disagree at seq u of "dp", whose calls began
     * dp_dt ms before (< 0) or after (> 0) world's seq s */
    int h4_ranks, h4_miss, h4_rolled, h4_a, h4_b;
    int64_t h4_s, h4_u;
    double h4_dp_dt;
    /* H4's step times: n_lo ranks at base − d_lo, n_mid at base, n_hi at base + d_hi, one at slow */
    int h4_n_lo, h4_n_mid, h4_n_hi;
    double h4_base, h4_d_lo, h4_d_hi, h4_slow;
    /* H5: a model (Ψ, L, h, a; S = 4096) on G GPUs of h100-2node-ib, global batch B, layout TP 8 × PP pp */
    double h5_psi, h5_hidden;
    int h5_layers, h5_heads, h5_gpus, h5_gbs, h5_pp;
} h_numbers;

static h_numbers my_numbers(void)
{
    static const double psi[] = { 30e9, 70e9, 175e9, 405e9 }, tp[] = { 4, 8 }, pp[] = { 4, 8, 16 },
                        dp[] = { 4, 8, 16, 32 };
    static const double tok[] = { 2048, 4096, 8192 }, ex[] = { 8, 16, 64 }, k[] = { 1, 2, 4 }, cf[] = { 1.0, 1.25, 1.5 },
                        hid[] = { 2048, 4096, 7168 }, hot64[] = { 12, 20, 28 };
    static const double cold[] = { 450, 520, 610, 700, 880, 890, 910, 950, 1020, 1100 }, hot[] = { 2400, 3200, 4100 },
                        pos[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    h_numbers n;
    n.h1_psi = rl_grade_learner_pick("31/H1/psi", psi, 4);
    n.h1_tp = (int)rl_grade_learner_pick("31/H1/tp", tp, 2);
    n.h1_pp = (int)rl_grade_learner_pick("31/H1/pp", pp, 3);
    n.h1_dp = (int)rl_grade_learner_pick("31/H1/dp", dp, 4);
    n.h2_tokens = rl_grade_learner_pick("31/H2/tokens", tok, 3);
    n.h2_experts = (int)rl_grade_learner_pick("31/H2/experts", ex, 3);
    n.h2_topk = (int)rl_grade_learner_pick("31/H2/k", k, 3);
    n.h2_cf = rl_grade_learner_pick("31/H2/cf", cf, 3);
    n.h2_hidden = rl_grade_learner_pick("31/H2/h", hid, 3);
    /* the busiest expert's copies: 12/64, 20/64 or 28/64 of the T·k routed copies (above 1/E for every E) */
    n.h2_hot = n.h2_tokens * n.h2_topk * rl_grade_learner_pick("31/H2/hot", hot64, 3) / 64;
    int at = (int)rl_grade_learner_pick("31/H3/hot", pos, 8);
    for (int i = 0; i < 8; i++) {
        char q[32];
        snprintf(q, sizeof q, "31/H3/hits%d", i);
        n.h3_hits[i] = i == at ? rl_grade_learner_pick(q, hot, 3) : rl_grade_learner_pick(q, cold, 10);
    }
    static const double ranks[] = { 4, 5, 6 }, seqs[] = { 5, 6, 7, 8, 9, 11, 13 }, dts[] = { -0.8, -0.3, 0.4, 0.9 };
    n.h4_ranks = (int)rl_grade_learner_pick("31/H4/ranks", ranks, 3);
    n.h4_s = (int64_t)rl_grade_learner_pick("31/H4/s", seqs, 7);
    n.h4_u = (int64_t)rl_grade_learner_pick("31/H4/u", seqs, 4) - 3;
    n.h4_dp_dt = rl_grade_learner_pick("31/H4/dt", dts, 4);
    n.h4_miss = 2 + (int)rl_grade_learner_pick("31/H4/miss", pos, n.h4_ranks - 2); /* a lower rank waits */
    n.h4_rolled = (int)rl_grade_learner_pick("31/H4/rolled", pos, n.h4_miss);      /* below the missing one */
    int rest[8], nrest = 0;
    for (int r = 0; r < n.h4_ranks; r++)
        if (r != n.h4_miss && r != n.h4_rolled)
            rest[nrest++] = r;
    int ia = (int)rl_grade_learner_pick("31/H4/a", pos, nrest - 1);
    int ib = ia + 1 + (int)rl_grade_learner_pick("31/H4/b", pos, nrest - 1 - ia);
    n.h4_a = rest[ia], n.h4_b = rest[ib];
    static const double nlo[] = { 4, 5, 6 }, nmid[] = { 3, 4, 5 }, base[] = { 1800, 2200, 2600 },
                        dlo[] = { 40, 70, 100 }, dhi[] = { 50, 80, 110 }, slow[] = { 1.3, 1.45, 1.6 };
    n.h4_n_lo = (int)rl_grade_learner_pick("31/H4/nlo", nlo, 3);
    n.h4_n_mid = (int)rl_grade_learner_pick("31/H4/nmid", nmid, 3);
    n.h4_n_hi = (int)rl_grade_learner_pick("31/H4/nhi", nlo, 3);
    n.h4_base = rl_grade_learner_pick("31/H4/base", base, 3);
    n.h4_d_lo = rl_grade_learner_pick("31/H4/dlo", dlo, 3);
    n.h4_d_hi = rl_grade_learner_pick("31/H4/dhi", dhi, 3);
    n.h4_slow = n.h4_base * rl_grade_learner_pick("31/H4/slow", slow, 3);
    /* models whose heads and hidden size TP 8 divides, with L divisible by 2 and 4 */
    static const double mpsi[] = { 13e9, 30e9, 70e9 }, ml[] = { 40, 48, 80 }, mh[] = { 5120, 7168, 8192 },
                        ma[] = { 40, 56, 64 }, gpus[] = { 64, 128, 256 }, gbs[] = { 512, 1024 }, pps[] = { 2, 4 };
    int model = (int)rl_grade_learner_pick("31/H5/model", pos, 3);
    n.h5_psi = mpsi[model], n.h5_layers = (int)ml[model], n.h5_hidden = mh[model], n.h5_heads = (int)ma[model];
    n.h5_gpus = (int)rl_grade_learner_pick("31/H5/gpus", gpus, 3);
    n.h5_gbs = (int)rl_grade_learner_pick("31/H5/gbs", gbs, 2);
    n.h5_pp = (int)rl_grade_learner_pick("31/H5/pp", pps, 2);
    return n;
}

/* H4's dump (the story of h_numbers): every rank's last two records on world, the missing rank's
 * end one seq early, the rolled-out rank's start past seq s; ranks a and b's last two on "dp". */
static void h4_dump(const h_numbers *n, dump *d)
{
    const double t0 = 0.040, dt = 0.002; /* world's seq s first enqueued at 40 ms; 2 ms a seq */
    for (int r = 0; r < n->h4_ranks; r++) {
        int64_t from = r == n->h4_miss ? n->h4_s - 2 : r == n->h4_rolled ? n->h4_s + 1 : n->h4_s - 1;
        for (int64_t q = from; q < from + 2; q++) {
            const char *state = q < n->h4_s ? "completed" : q == n->h4_s ? "started" : "enqueued";
            d_add(d, r, "world", q, "all_reduce", 4096, "f32", state, t0 + (double)(q - n->h4_s) * dt + r * 1e-5);
        }
    }
    int ab[2] = { n->h4_a, n->h4_b };
    for (int i = 0; i < 2; i++)
        for (int64_t q = n->h4_u - 1; q <= n->h4_u; q++) {
            int odd = i == 1 && q == n->h4_u; /* b's call at seq u: half the count */
            d_add(d, ab[i], "dp", q, "all_reduce", odd ? 512 : 1024, "f32", q < n->h4_u ? "completed" : "started",
                  t0 + n->h4_dp_dt * 1e-3 + (double)(q - n->h4_u) * dt + i * 1e-5);
        }
}

/* H4's step times: the lows, the middles, the highs, then the slow rank last. */
static int h4_times(const h_numbers *n, double *x)
{
    int k = 0;
    for (int i = 0; i < n->h4_n_lo; i++)
        x[k++] = n->h4_base - n->h4_d_lo;
    for (int i = 0; i < n->h4_n_mid; i++)
        x[k++] = n->h4_base;
    for (int i = 0; i < n->h4_n_hi; i++)
        x[k++] = n->h4_base + n->h4_d_hi;
    x[k++] = n->h4_slow;
    return k;
}

/* H5's planner input and its two rows: TP 8, PP pp, b = 1, no recompute, ZeRO-1 and ZeRO-3. */
static void h5_rows(const h_numbers *n, rl_calc_plan_row *z1, rl_calc_plan_row *z3)
{
    rl_calc_plan_in in = { .params = n->h5_psi, .layers = n->h5_layers, .heads = n->h5_heads, .hidden = n->h5_hidden,
                           .seq = 4096, .gbs = n->h5_gbs, .gpus = n->h5_gpus, .hw = rl_hw_find("h100-2node-ib") };
    rl_calc_plan_row *rows;
    int nrows, found = 0;
    char err[256];
    ck_assert_msg(rl_calc_plan(&in, &rows, &nrows, err, sizeof err) == 0, "grader: %s", err);
    for (int i = 0; i < nrows; i++) {
        const rl_calc_plan_row *r = &rows[i];
        if (r->tp == 8 && r->pp == n->h5_pp && r->b == 1 && r->recompute == RL_CALC_RECOMPUTE_NONE &&
            (r->zero == 1 || r->zero == 3)) {
            *(r->zero == 1 ? z1 : z3) = *r;
            found++;
        }
    }
    free(rows);
    ck_assert_msg(found == 2, "grader: H5's layout is not a candidate");
}

/* make questions LAB=31: this learner's numbers. */
static void questions31(FILE *out)
{
    h_numbers n = my_numbers();
    fprintf(out, "  H1: a model of %g·10⁹ parameters on TP%d × PP%d × DP%d, K = 12.\n", n.h1_psi / 1e9, n.h1_tp,
            n.h1_pp, n.h1_dp);
    fprintf(out, "  H2: T = %g tokens, E = %d experts, top-%d, capacity factor %g, h = %g, bf16; the busiest expert "
                 "gets %g of the routed token copies.\n", n.h2_tokens, n.h2_experts, n.h2_topk, n.h2_cf, n.h2_hidden,
            n.h2_hot);
    fprintf(out, "  H3: expert hits [");
    for (int i = 0; i < 8; i++)
        fprintf(out, i ? ", %g" : "%g", n.h3_hits[i]);
    fprintf(out, "].\n");
    dump d;
    memset(&d, 0, sizeof d);
    h4_dump(&n, &d);
    fprintf(out, "  H4: a flight dump, each rank's last records (t: when the call was enqueued):\n");
    for (int r = 0; r < n.h4_ranks; r++)
        for (int i = 0; i < d.fl.nrec; i++) {
            const rl_diag_rec *x = &d.fl.rec[i];
            if (x->rank == r)
                fprintf(out, "      rank %d  %-5s seq %2lld  %s %4lld %s  %-9s  t = %.2f ms\n", x->rank, x->comm,
                        (long long)x->seq, x->op, (long long)x->count, x->dtype, x->state, x->t_enqueued * 1e3);
        }
    free(d.fl.rec);
    fprintf(out, "      and one step's times: %d ranks at %g ms, %d at %g ms, %d at %g ms and one at %g ms.\n",
            n.h4_n_lo, n.h4_base - n.h4_d_lo, n.h4_n_mid, n.h4_base, n.h4_n_hi, n.h4_base + n.h4_d_hi, n.h4_slow);
    fprintf(out, "  H5: Ψ = %g·10⁹, L = %d, h = %g, a = %d, S = 4096, global batch %d, %d GPUs, TP 8 × PP %d "
                 "(micro-batch size 1, no recompute; the profile h100-2node-ib).\n",
            n.h5_psi / 1e9, n.h5_layers, n.h5_hidden, n.h5_heads, n.h5_gbs, n.h5_gpus, n.h5_pp);
}

START_TEST(t_ans_memory)
{
    h_numbers n = my_numbers();
    double per_gpu = n.h1_psi / (n.h1_tp * n.h1_pp);
    rl_calc_zero_in zi = { .params = per_gpu, .dp = n.h1_dp, .k = 12 };
    rl_calc_zero_out zo;
    ck_assert(rl_calc_zero(&zi, &zo, NULL, 0) == 0);
    CHECK_NUM("h1_params_per_gpu", per_gpu, 0.005);
    CHECK_NUM("h1_zero1_gb", zo.bytes[RL_CALC_ZERO1] / 1e9, 0.005);
    CHECK_NUM("h1_zero3_gb", zo.bytes[RL_CALC_ZERO3] / 1e9, 0.005);
    /* the largest model (10⁹ parameters) this layout trains with ZeRO-1 over DP in 80 GB per GPU:
     * Ψ/(tp·pp)·(2 + 2 + K/dp) <= 80 GB */
    CHECK_NUM("h1_max_zero1_b", 80e9 * n.h1_tp * n.h1_pp / (4 + 12.0 / n.h1_dp) / 1e9, 0.005);
}
END_TEST

START_TEST(t_ans_moe)
{
    h_numbers n = my_numbers();
    rl_calc_moe_in mi = { .tokens = n.h2_tokens, .experts = n.h2_experts, .topk = n.h2_topk, .cf = n.h2_cf,
                          .hidden = n.h2_hidden, .dtype_bytes = 2 };
    rl_calc_moe_out mo;
    ck_assert(rl_calc_moe(&mi, &mo, NULL, 0) == 0);
    CHECK_NUM("h2_capacity", mo.capacity, 0.001);
    CHECK_NUM("h2_dispatch_bytes_per_token", mo.dispatch_bytes / mi.tokens, 0.005);
    CHECK_NUM("h2_total_bytes_per_token", mo.per_token_bytes, 0.005);
    /* the smallest capacity factor that drops none of the busiest expert's copies:
     * C·T·k/E >= hot  ⇔  C >= hot·E/(T·k) */
    CHECK_NUM("h2_min_cf", n.h2_hot * n.h2_experts / (n.h2_tokens * n.h2_topk), 0.005);
}
END_TEST

START_TEST(t_ans_hits)
{
    h_numbers n = my_numbers();
    rl_diag_spread s;
    ck_assert(rl_diag_spread_of(n.h3_hits, 8, NULL, &s, NULL, 0) == 0);
    CHECK_NUM("h3_hits_cv", s.cv, 0.01);
    CHECK_NUM("h3_hits_max_min", s.ratio, 0.01);
}
END_TEST

START_TEST(t_ans_dump)
{
    h_numbers n = my_numbers();
    dump d;
    memset(&d, 0, sizeof d);
    h4_dump(&n, &d);
    rl_diag_result res;
    ck_assert(rl_diag_flight_analyze(&d.fl, &res) == 0);
    free(d.fl.rec);
    /* the story the numbers tell: the anomaly that began first */
    int dp_first = n.h4_dp_dt < 0;
    ck_assert_msg(res.rank == (dp_first ? n.h4_b : n.h4_miss) && res.seq == (dp_first ? n.h4_u : n.h4_s),
                  "grader: H4's dump reads as rank %d seq %lld", res.rank, (long long)res.seq);
    CHECK_NUM("h4_culprit_rank", res.rank, 0);
    CHECK_NUM("h4_culprit_seq", (double)res.seq, 0);
    double x[32];
    int k = h4_times(&n, x);
    rl_diag_spread sp;
    ck_assert(rl_diag_spread_of(x, k, NULL, &sp, NULL, 0) == 0);
    /* every other rank waits (slow − median) each step: GPU-seconds per 1000 steps */
    CHECK_NUM("h4_lost_gpu_s", (k - 1) * (n.h4_slow - sp.median), 0.005);
    /* the slow rank stays the largest time and deviation, so the median and MAD do not move with
     * it: flagged above max(1.2·median, median + 3.5·1.4826·MAD) */
    double robust = sp.median + 3.5 * 1.4826 * sp.mad;
    CHECK_NUM("h4_flag_above_ms", robust > 1.2 * sp.median ? robust : 1.2 * sp.median, 0.005);
}
END_TEST

START_TEST(t_ans_plan)
{
    h_numbers n = my_numbers();
    rl_calc_plan_row z1, z3;
    h5_rows(&n, &z1, &z3);
    CHECK_NUM("h5_m", z1.m, 0);
    CHECK_NUM("h5_bubble_pct", 100 * z1.bubble_time / z1.step_time, 0.005);
    CHECK_NUM("h5_zero3_extra_s", z3.step_time - z1.step_time, 0.005);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_INTERVIEW();
}
END_TEST

/* the interview questions' answer keys, in the handout's order */
static const char *const interview31[] = { "i1_hang_procedure", "i2_rollback", "i3_zero_with_pp", NULL };

/* ================================================================== the table */

static const rl_grade_step steps31[] = {
    { "31.1", "device mesh" },
    { "31.2", "3D training step" },
    { "31.3", "MoE with expert parallelism" },
    { "31.4", "diagnose failures" },
    { "31.5", "parallelism planner" },
};

static const rl_grade_test tests31[] = {
    { "31.1", "3D layouts = mesh.h (coords, groups, nodes)", 6, 20, &t_mesh_3d, 0 },
    { "31.1", "CP, EP and both rank orders", 4, 20, &t_mesh_cp_ep_order, 0 },
    { "31.1", "invalid shapes refused with a message", 3, 10, &t_mesh_bad, 0 },
    { "31.1", "TP group across nodes: warning", 3, 10, &t_mesh_warning, 0 },
    { "31.1", "communicators from rl_comm_split, named by role", 5, 20, &t_mesh_comms, 0 },
    { "31.1", "one split per kind in mesh_dim order; the mesh view recorded", 2, 20, &t_mesh_split_order, 0 },
    { "31.2", "dp2 x pp2 x tp2 = one-rank run after 3 steps", 10, 30, &t_3d_full, 0 },
    { "31.2", "other shapes, fixed and randomized (m < pp, odd sizes)", 6, 40, &t_3d_shapes, 0 },
    { "31.2", "reported loss = the mean micro-batch loss", 3, 30, &t_3d_loss, 0 },
    { "31.2", "ZeRO-1 traffic on the DP group", 3, 30, &t_3d_dp_traffic, 0 },
    { "31.2", "TP all-reduces on the TP group, send/recv between stage neighbours", 3, 30, &t_3d_pattern, 0 },
    { "31.2", "the reduced gradient = the mean over the global batch (Adam's m after step 0)", 3, 30, &t_3d_grad, 0 },
    { "31.2", "order in a step: the last send before ZeRO-1; ops tagged with rl_pp_mark", 2, 30, &t_3d_order, 0 },
    { "31.2", "answers: per-GPU memory under 3D", 2, 10, &t_ans_memory, RL_GRADE_NO_CHILD },
    { "31.3", "router: softmax, top-k, ties to the lower id", 3, 20, &t_moe_route, 0 },
    { "31.3", "capacity, dropping and dispatch order = moe.h's plan", 4, 20, &t_moe_plan, 0 },
    { "31.3", "output = one-rank MoE reference", 8, 30, &t_moe_equal, 0 },
    { "31.3", "dropped tokens follow the capacity rule", 6, 30, &t_moe_drops, 0 },
    { "31.3", "Switch aux loss", 3, 30, &t_moe_aux, 0 },
    { "31.3", "dispatch and combine: all-to-all(v) bytes per peer; experts computed where they live", 4, 30,
      &t_moe_pattern, 0 },
    { "31.3", "answers: capacity and all-to-all bytes per token (H2)", 2, 10, &t_ans_moe, RL_GRADE_NO_CHILD },
    { "31.3", "answers: expert-hit cv and max/min (H3)", 1, 10, &t_ans_hits, RL_GRADE_NO_CHILD },
    { "31.4", "hidden hang scenarios: culprit rank and seq", 6, 30, &t_diag_hang, 0 },
    { "31.4", "hidden mismatch scenarios", 4, 30, &t_diag_mismatch, 0 },
    { "31.4", "several anomalies per dump: lowest seq, earliest across communicators", 4, 30, &t_diag_multi, 0 },
    { "31.4", "send/recv never matched: RL_DIAG_P2P", 2, 30, &t_diag_p2p, 0 },
    { "31.4", "straggler detector", 4, 30, &t_diag_straggler, 0 },
    { "31.4", "straggler rules apart: cv, max/min, outlier, even count, MAD = 0, ties", 3, 30,
      &t_diag_straggler_cases, 0 },
    { "31.4", "loss-spike / NaN detector", 4, 30, &t_diag_spike, 0 },
    { "31.4", "spike rules: scan order, the last 5 values, no history at step 0", 2, 30, &t_diag_spike_cases, 0 },
    { "31.4", "answers: a flight dump read by hand; a straggler's cost and threshold (H4)", 2, 10, &t_ans_dump,
      RL_GRADE_NO_CHILD },
    { "31.4", "answers: interview questions", 3, 10, &t_ans_interview, RL_GRADE_NO_CHILD },
    { "31.5", "ranked plans = calc.h planner on 5 model/cluster pairs", 7, 30, &t_plan_rank, 0 },
    { "31.5", "ranked plans on randomized models and clusters", 4, 30, &t_plan_rank_random, 0 },
    { "31.5", "one candidate's cost terms", 4, 30, &t_plan_candidate, 0 },
    { "31.5", "exact ties in step time and memory: ordered by tp, pp, b, zero, recompute", 2, 10, &t_plan_ties, 0 },
    { "31.5", "warnings: TP across nodes, m < 4p, out of memory", 3, 10, &t_plan_warnings, 0 },
    { "31.5", "invalid candidates refused (ZeRO > 0 at dp = 1 too)", 2, 10, &t_plan_invalid, 0 },
    { "31.5", "answers: your layout's micro-batches, bubble and ZeRO-3's cost (H5)", 2, 10, &t_ans_plan,
      RL_GRADE_NO_CHILD },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "31", "3D parallelism, MoE and failure debugging", "labs/31_3d_moe_debug/README.md",
        "labs/31_3d_moe_debug/answers.txt", steps31, (int)(sizeof steps31 / sizeof steps31[0]), tests31,
        (int)(sizeof tests31 / sizeof tests31[0]), questions31, interview31,
    };
    return rl_grade_main(&lab, argc, argv);
}
