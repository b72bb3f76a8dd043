/* test_mesh.c — the device mesh (common/mesh.c): rank order, groups for many shapes,
 * communicators built by rl_comm_split in real launches, nodes and the TP warning, errors. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "mesh.h"
#include "testutil.h"

/* Every (dp, pp, cp, tp, ep) with product n (ep dividing dp), in both orders, checked
 * against the closed-form rank formula and the group properties. */
/* Asserts only when the condition fails: the loops below check ~10^6 conditions, and each
 * passing ck_assert is a message the test runner reads. */
#define EXPECT(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

static void check_shapes_of(int n, const rl_hw *hw, int *count)
{
    for (int tp = 1; tp <= n; tp++)
        for (int cp = 1; cp <= n / tp; cp++)
            for (int pp = 1; pp <= n / (tp * cp); pp++) {
                if (n % (tp * cp * pp))
                    continue;
                int dp = n / (tp * cp * pp);
                for (int ep = 1; ep <= dp; ep++) {
                    if (dp % ep)
                        continue;
                    for (int order = 0; order < 2; order++) {
                        rl_mesh_shape s = { dp, pp, tp, cp, ep, (rl_mesh_order)order };
                        rl_mesh m;
                        char err[256];
                        EXPECT(rl_mesh_init(&m, &s, n, hw, err, sizeof err) == RL_OK, "%s", err);
                        int seen[RL_MESH_MAX_RANKS] = { 0 };
                        for (int r = 0; r < n; r++) {
                            rl_mesh_coord c;
                            EXPECT(rl_mesh_coord_of(&m, r, &c) == RL_OK, "rank %d: no coordinates", r);
                            int want = s.order == RL_MESH_ORDER_TP_CP_PP_DP
                                           ? c.tp + tp * (c.cp + cp * (c.pp + pp * c.dp))
                                           : c.tp + tp * (c.cp + cp * (c.dp + dp * c.pp));
                            EXPECT(want == r, "rank %d: coordinates give rank %d", r, want);
                            EXPECT(c.dp == c.ep + ep * c.edp, "rank %d: dp %d != ep %d + %d x edp %d", r, c.dp, c.ep, ep, c.edp);
                            EXPECT(rl_mesh_rank_of(&m, &c) == r, "rank %d: rank_of(coord_of) = %d", r, rl_mesh_rank_of(&m, &c));
                            seen[r]++;
                            /* group sizes, membership and consecutive TP ranks */
                            int g[RL_MESH_MAX_RANKS], idx;
                            const int dims[] = { RL_MESH_TP, RL_MESH_CP, RL_MESH_PP, RL_MESH_DP, RL_MESH_EP,
                                                 RL_MESH_EDP, RL_MESH_DP | RL_MESH_CP,
                                                 RL_MESH_TP | RL_MESH_CP | RL_MESH_PP };
                            const int sizes[] = { tp, cp, pp, dp, ep, dp / ep, dp * cp, tp * cp * pp };
                            for (int k = 0; k < 8; k++) {
                                int gn = rl_mesh_group(&m, dims[k], r, g, &idx);
                                EXPECT(gn == sizes[k], "rank %d, dims %d: group of %d, want %d", r, dims[k], gn, sizes[k]);
                                EXPECT(idx < n / sizes[k], "rank %d, dims %d: group number %d of %d", r, dims[k], idx, n / sizes[k]);
                                int mine = 0;
                                for (int i = 0; i < gn; i++) {
                                    mine += g[i] == r;
                                    if (i)
                                        EXPECT(g[i - 1] < g[i], "rank %d, dims %d: members not increasing", r, dims[k]);
                                    int idx2;
                                    rl_mesh_group(&m, dims[k], g[i], NULL, &idx2);
                                    EXPECT(idx2 == idx, "rank %d, dims %d: member %d has group number %d, not %d", r, dims[k], g[i], idx2, idx);
                                }
                                EXPECT(mine == 1, "rank %d, dims %d: the rank is %d times in its group", r, dims[k], mine);
                            }
                            rl_mesh_group(&m, RL_MESH_TP, r, g, NULL);
                            EXPECT(g[tp - 1] - g[0] == tp - 1, "rank %d: TP group not consecutive", r); /* TP innermost */
                        }
                        for (int r = 0; r < n; r++)
                            EXPECT(seen[r] == 1, "rank %d seen %d times", r, seen[r]);
                        ++*count;
                    }
                }
            }
}

START_TEST(test_many_shapes)
{
    int count = 0;
    for (int n = 1; n <= 16; n++)
        check_shapes_of(n, n > 8 ? rl_hw_find("h100-2node-ib") : NULL, &count);
    ck_assert_int_gt(count, 300);
}
END_TEST

START_TEST(test_known_layouts)
{
    rl_mesh m;
    char err[256];
    /* dp=2 x pp=2 x tp=2, DP outermost: TP pairs (0,1), PP (0,2), DP (0,4) */
    rl_mesh_shape s = rl_mesh_shape_make(2, 2, 2);
    ck_assert_int_eq(s.order, RL_MESH_ORDER_TP_CP_DP_PP); /* the default: Megatron-LM's */
    s.order = RL_MESH_ORDER_TP_CP_PP_DP;
    ck_assert_int_eq(rl_mesh_init(&m, &s, 8, NULL, err, sizeof err), RL_OK);
    int g[16];
    ck_assert_int_eq(rl_mesh_group(&m, RL_MESH_TP, 5, g, NULL), 2);
    ck_assert(g[0] == 4 && g[1] == 5);
    ck_assert_int_eq(rl_mesh_group(&m, RL_MESH_PP, 5, g, NULL), 2);
    ck_assert(g[0] == 5 && g[1] == 7);
    ck_assert_int_eq(rl_mesh_group(&m, RL_MESH_DP, 5, g, NULL), 2);
    ck_assert(g[0] == 1 && g[1] == 5);
    /* the default, Megatron-LM's order: PP outermost — PP pairs (r, r+4), DP (r, r+2) */
    s.order = RL_MESH_ORDER_TP_CP_DP_PP;
    ck_assert_int_eq(rl_mesh_init(&m, &s, 8, NULL, err, sizeof err), RL_OK);
    rl_mesh_group(&m, RL_MESH_PP, 1, g, NULL);
    ck_assert(g[0] == 1 && g[1] == 5);
    rl_mesh_group(&m, RL_MESH_DP, 1, g, NULL);
    ck_assert(g[0] == 1 && g[1] == 3);
    /* EP inside DP: dp=4, ep=2 → EP groups are consecutive DP indices, EDP the others */
    rl_mesh_shape e = { 4, 1, 2, 1, 2, RL_MESH_ORDER_TP_CP_DP_PP };
    ck_assert_int_eq(rl_mesh_init(&m, &e, 8, NULL, err, sizeof err), RL_OK);
    ck_assert_int_eq(rl_mesh_group(&m, RL_MESH_EP, 0, g, NULL), 2);
    ck_assert(g[0] == 0 && g[1] == 2);
    ck_assert_int_eq(rl_mesh_group(&m, RL_MESH_EDP, 0, g, NULL), 2);
    ck_assert(g[0] == 0 && g[1] == 4);
    char names[32];
    ck_assert_str_eq(rl_mesh_dims_name(RL_MESH_DP | RL_MESH_CP, names, sizeof names), "dp+cp");
    char desc[4096];
    rl_mesh_describe(&m, desc, sizeof desc);
    ck_assert_ptr_nonnull(strstr(desc, "rank   7: dp=3 (ep=1 edp=1) pp=0 cp=0 tp=1 node 0"));
}
END_TEST

START_TEST(test_nodes_and_tp_warning)
{
    const rl_hw *ib = rl_hw_find("h100-2node-ib");
    rl_mesh m;
    char err[256];
    rl_mesh_shape ok = rl_mesh_shape_make(2, 1, 8), bad = rl_mesh_shape_make(1, 1, 16);
    ck_assert_int_eq(rl_mesh_init(&m, &ok, 16, ib, err, sizeof err), RL_OK);
    ck_assert_int_eq(m.tp_crosses_node, 0);
    ck_assert_str_eq(m.warning, "");
    ck_assert_int_eq(rl_mesh_node_of(&m, 7), 0);
    ck_assert_int_eq(rl_mesh_node_of(&m, 8), 1);
    ck_assert_int_eq(rl_mesh_group_crosses_node(&m, RL_MESH_DP, 0), 1); /* DP across the two nodes */
    ck_assert_int_eq(rl_mesh_init(&m, &bad, 16, ib, err, sizeof err), RL_OK);
    ck_assert_int_eq(m.tp_crosses_node, 1);
    ck_assert_msg(strstr(m.warning, "TP group of ranks 0..15 spans nodes 0-1") && strstr(m.warning, "tp <= 8"), "%s",
                  m.warning);
    /* tp=3 on 8-GPU nodes: the group 6,7,8 straddles the boundary */
    rl_mesh_shape three = rl_mesh_shape_make(4, 1, 3);
    ck_assert_int_eq(rl_mesh_init(&m, &three, 12, ib, err, sizeof err), RL_OK);
    ck_assert_msg(m.tp_crosses_node && strstr(m.warning, "6..8") && strstr(m.warning, "divisor"), "%s", m.warning);
    /* the 8-GPU single-node profile: more ranks are assumed on further nodes */
    rl_mesh_shape pp2 = rl_mesh_shape_make(1, 2, 8);
    ck_assert_int_eq(rl_mesh_init(&m, &pp2, 16, NULL, err, sizeof err), RL_OK);
    ck_assert_int_eq(m.tp_crosses_node, 0);
    ck_assert_int_eq(rl_mesh_group_crosses_node(&m, RL_MESH_PP, 3), 1);
}
END_TEST

START_TEST(test_invalid_shapes)
{
    rl_mesh m;
    char err[256];
    struct { rl_mesh_shape s; int world; const char *msg; } cases[] = {
        { { 2, 2, 2, 1, 1, 0 }, 6, "= 8 ranks, but the world has 6" },
        { { 2, 2, 2, 1, 1, 0 }, 12, "e.g. dp=3" },
        { { 1, 1, 5, 1, 1, 0 }, 8, "does not divide 8" },
        { { 0, 1, 4, 1, 1, 0 }, 4, "dp=0: every size must be >= 1" },
        { { 2, -1, 2, 1, 1, 0 }, 4, "pp=-1" },
        { { 4, 1, 1, 1, 0, 0 }, 4, "ep=0" },
        { { 4, 1, 2, 1, 3, 0 }, 8, "ep=3 does not divide dp=4" },
        { { 2, 1, 1, 2, 1, 7 }, 4, "unknown rank order" },
        { { 1, 1, 1, 1, 1, 0 }, 0, "world of 0 ranks" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(rl_mesh_init(&m, &cases[i].s, cases[i].world, NULL, err, sizeof err), RL_ERR_ARG);
        ck_assert_msg(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err, cases[i].msg);
    }
    ck_assert_int_eq(rl_mesh_init(&m, NULL, 4, NULL, err, sizeof err), RL_ERR_ARG);
    ck_assert_int_eq(rl_mesh_init(&m, &cases[0].s, 8, NULL, NULL, 0), RL_OK); /* err may be NULL */
    rl_mesh_coord c;
    ck_assert_int_eq(rl_mesh_coord_of(&m, 8, &c), RL_ERR_ARG);
    c = (rl_mesh_coord){ .tp = 2 };
    ck_assert_int_eq(rl_mesh_rank_of(&m, &c), -1);
}
END_TEST

/* Every rank builds the mesh's communicators and checks them against the mesh's groups;
 * an all-reduce over each group sums the members' global ranks. */
typedef struct { rl_mesh mesh; } comm_arg;

static int build_rank(rl_ctx *ctx, void *p)
{
    comm_arg *a = p;
    rl_mesh_comms mc;
    if (rl_mesh_build_comms(ctx, &a->mesh, &mc) != RL_OK)
        return rl_error(ctx, RL_ERR_ARG, "build: %s", rl_last_error(ctx));
    int r = rl_rank(ctx);
    rl_comm *cs[] = { mc.tp, mc.cp, mc.pp, mc.dp, mc.ep, mc.edp, mc.dp_cp, mc.mp };
    const int dims[] = { RL_MESH_TP, RL_MESH_CP, RL_MESH_PP, RL_MESH_DP, RL_MESH_EP, RL_MESH_EDP,
                         RL_MESH_DP | RL_MESH_CP, RL_MESH_TP | RL_MESH_CP | RL_MESH_PP };
    rl_tensor *t = rl_tensor_new_1d(ctx, "x", RL_F32, RL_MEM_COMM, 1);
    for (int k = 0; k < 8; k++) {
        int g[RL_MESH_MAX_RANKS];
        int n = rl_mesh_group(&a->mesh, dims[k], r, g, NULL), sum = 0, pos = -1;
        if (rl_comm_size(cs[k]) != n)
            return rl_error(ctx, RL_ERR_ARG, "group %d: size %d, want %d", k, rl_comm_size(cs[k]), n);
        for (int i = 0; i < n; i++) {
            if (rl_comm_global_rank(cs[k], i) != g[i])
                return rl_error(ctx, RL_ERR_ARG, "group %d: member %d is %d, want %d", k, i,
                                rl_comm_global_rank(cs[k], i), g[i]);
            sum += g[i];
            if (g[i] == r)
                pos = i;
        }
        if (rl_comm_rank(cs[k]) != pos)
            return rl_error(ctx, RL_ERR_ARG, "group %d: comm rank %d, want %d", k, rl_comm_rank(cs[k]), pos);
        rl_tensor_set(t, 0, (float)r);
        rl_wait(rl_all_reduce(cs[k], t, t, RL_SUM, 0));
        if (rl_tensor_get(t, 0) != (float)sum)
            return rl_error(ctx, RL_ERR_ARG, "group %d: sum %g, want %d", k, rl_tensor_get(t, 0), sum);
    }
    rl_tensor_free(t);
    return 0;
}

START_TEST(test_build_comms)
{
    struct { rl_mesh_shape s; int n; const char *hw; const char *names; } cases[] = {
        { { 2, 2, 2, 1, 1, RL_MESH_ORDER_TP_CP_PP_DP }, 8, NULL, "dp=2 pp=2 tp=2" },
        { { 4, 1, 1, 2, 2, RL_MESH_ORDER_TP_CP_PP_DP }, 8, NULL, "edp=2 ep=2 cp=2" },
        { { 2, 2, 4, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP }, 16, "h100-2node-ib", "pp=2 dp=2 tp=4" },
        { { 1, 1, 1, 1, 1, RL_MESH_ORDER_TP_CP_DP_PP }, 1, NULL, "tp=1" },
    };
    int ncases = rl_test_quick() ? 2 : 4;
    for (int i = 0; i < ncases; i++) {
        comm_arg a;
        char err[256];
        ck_assert_int_eq(rl_mesh_init(&a.mesh, &cases[i].s, cases[i].n, rl_hw_find(cases[i].hw ? cases[i].hw : "h100-nvlink"),
                                      err, sizeof err), RL_OK);
        rl_opts o = rl_test_opts(cases[i].n, cases[i].hw);
        rl_trace *t = NULL;
        ck_assert_int_eq(rl_launch(&o, build_rank, &a, &t), 0);
        char got[128] = "";
        for (int d = 0; d < t->mesh_ndims; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s=%d", d ? " " : "", t->mesh_names[d],
                     t->mesh_sizes[d]);
        ck_assert_str_eq(got, cases[i].names);
        rl_trace_free(t);
    }
}
END_TEST

START_TEST(test_build_comms_errors)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_mesh m;
    rl_mesh_shape s = rl_mesh_shape_make(2, 1, 1);
    ck_assert_int_eq(rl_mesh_init(&m, &s, 2, NULL, NULL, 0), RL_OK);
    rl_mesh_comms mc;
    ck_assert_int_eq(rl_mesh_build_comms(ctx, &m, &mc), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "the mesh has 2 ranks but the world has 1"));
    ck_assert_int_eq(rl_mesh_build_comms(ctx, NULL, &mc), RL_ERR_ARG);
    rl_ctx_free_standalone(ctx);
}
END_TEST

Suite *mesh_suite(void)
{
    Suite *s = suite_create("mesh");
    TCase *tc = tcase_create("mesh");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_many_shapes);
    tcase_add_test(tc, test_known_layouts);
    tcase_add_test(tc, test_nodes_and_tp_warning);
    tcase_add_test(tc, test_invalid_shapes);
    tcase_add_test(tc, test_build_comms);
    tcase_add_test(tc, test_build_comms_errors);
    suite_add_tcase(s, tc);
    return s;
}
