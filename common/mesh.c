/* mesh.c — the device mesh: rank order, coordinates, groups, communicators, nodes. */
#include <stdio.h>
#include <string.h>
#include "apiwatch.h"
#include "err.h"
#include "launch.h"
#include "mesh.h"

enum { D_TP = 0, D_CP, D_PP, D_EP, D_EDP, ND };
static const char *const dim_names[ND] = { "tp", "cp", "pp", "ep", "edp" };

/* The digits of the rank, innermost first. */
static void digit_order(const rl_mesh *m, int *order)
{
    static const int meg[ND] = { D_TP, D_CP, D_EP, D_EDP, D_PP }; /* the default */
    static const int dp_outer[ND] = { D_TP, D_CP, D_PP, D_EP, D_EDP };
    memcpy(order, m->shape.order == RL_MESH_ORDER_TP_CP_PP_DP ? dp_outer : meg, sizeof meg);
}

static void dim_sizes(const rl_mesh *m, int *size)
{
    size[D_TP] = m->shape.tp;
    size[D_CP] = m->shape.cp;
    size[D_PP] = m->shape.pp;
    size[D_EP] = m->shape.ep;
    size[D_EDP] = m->shape.dp / m->shape.ep;
}

static void digits_of(const rl_mesh *m, int rank, int *dig)
{
    int order[ND], size[ND];
    digit_order(m, order);
    dim_sizes(m, size);
    for (int i = 0; i < ND; i++) {
        dig[order[i]] = rank % size[order[i]];
        rank /= size[order[i]];
    }
}

static int rank_of_digits(const rl_mesh *m, const int *dig)
{
    int order[ND], size[ND], r = 0;
    digit_order(m, order);
    dim_sizes(m, size);
    for (int i = ND - 1; i >= 0; i--) {
        if (dig[order[i]] < 0 || dig[order[i]] >= size[order[i]])
            return -1;
        r = r * size[order[i]] + dig[order[i]];
    }
    return r;
}

/* RL_MESH_* bits → digit mask. */
static int bit_of(int d)
{
    static const int bits[ND] = { RL_MESH_TP, RL_MESH_CP, RL_MESH_PP, RL_MESH_EP, RL_MESH_EDP };
    return bits[d];
}

RL_API_WATCHED
rl_mesh_shape rl_mesh_shape_make(int dp, int pp, int tp)
{
    RL_API_ENTRY();
    rl_mesh_shape s = { .dp = dp, .pp = pp, .tp = tp, .cp = 1, .ep = 1, .order = RL_MESH_ORDER_TP_CP_DP_PP };
    return s;
}

RL_API_WATCHED
int rl_mesh_init(rl_mesh *m, const rl_mesh_shape *s, int world, const rl_hw *hw, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (err && errlen)
        err[0] = 0;
#define FAIL(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return RL_ERR_ARG; } while (0)
    if (!m || !s)
        FAIL("mesh: the mesh and the shape must not be NULL");
    memset(m, 0, sizeof *m);
    if (world < 1 || world > RL_MESH_MAX_RANKS)
        FAIL("mesh: a world of %d ranks is not supported (1 to %d)", world, RL_MESH_MAX_RANKS);
    const char *names[] = { "dp", "pp", "tp", "cp", "ep" };
    const int vals[] = { s->dp, s->pp, s->tp, s->cp, s->ep };
    for (int i = 0; i < 5; i++)
        if (vals[i] < 1)
            FAIL("mesh: %s=%d: every size must be >= 1 (use 1 for a dimension you do not use)", names[i], vals[i]);
    if (s->order != RL_MESH_ORDER_TP_CP_PP_DP && s->order != RL_MESH_ORDER_TP_CP_DP_PP)
        FAIL("mesh: unknown rank order %d (use RL_MESH_ORDER_TP_CP_PP_DP or RL_MESH_ORDER_TP_CP_DP_PP)",
             (int)s->order);
    long long prod = (long long)s->dp * s->pp * s->cp * s->tp;
    if (prod != world) {
        long long rest = (long long)s->pp * s->cp * s->tp;
        char hint[96] = "";
        if (world % rest == 0)
            snprintf(hint, sizeof hint, " (e.g. dp=%lld with these pp, cp, tp)", world / rest);
        else
            snprintf(hint, sizeof hint, " (pp·cp·tp = %lld does not divide %d: change pp, cp or tp)", rest, world);
        FAIL("mesh: dp=%d x pp=%d x cp=%d x tp=%d = %lld ranks, but the world has %d: the product of the "
             "sizes must equal the number of ranks%s",
             s->dp, s->pp, s->cp, s->tp, prod, world, hint);
    }
    if (s->dp % s->ep != 0)
        FAIL("mesh: ep=%d does not divide dp=%d: the experts are spread over EP of the DP ranks, so EP must "
             "divide DP (e.g. ep=1 or ep=%d)",
             s->ep, s->dp, s->dp);
    m->shape = *s;
    m->world = world;
    if (!hw)
        hw = rl_hw_default();
    m->gpus_per_node = hw->gpus_per_node > 0 ? hw->gpus_per_node : world;
    /* the first TP group that crosses a node, if any */
    int grp[RL_MESH_MAX_RANKS];
    for (int r = 0; r < world && !m->tp_crosses_node; r++) {
        int n = rl_mesh_group(m, RL_MESH_TP, r, grp, NULL);
        int n0 = rl_mesh_node_of(m, grp[0]), n1 = rl_mesh_node_of(m, grp[n - 1]);
        if (n0 != n1) {
            m->tp_crosses_node = 1;
            snprintf(m->warning, sizeof m->warning,
                     "warning: TP group of ranks %d..%d spans nodes %d-%d (%d GPUs per node on %s): every layer's "
                     "TP all-reduce crosses the slow %s link; keep tp <= %d%s",
                     grp[0], grp[n - 1], n0, n1, m->gpus_per_node, hw->name, hw->inter.name, m->gpus_per_node,
                     m->gpus_per_node % s->tp ? " and a divisor of the GPUs per node" : "");
        }
    }
    return RL_OK;
#undef FAIL
}

RL_API_WATCHED
int rl_mesh_coord_of(const rl_mesh *m, int rank, rl_mesh_coord *c)
{
    RL_API_ENTRY();
    if (!m || !c || rank < 0 || rank >= m->world)
        return RL_ERR_ARG;
    int d[ND];
    digits_of(m, rank, d);
    c->tp = d[D_TP];
    c->cp = d[D_CP];
    c->pp = d[D_PP];
    c->ep = d[D_EP];
    c->edp = d[D_EDP];
    c->dp = c->ep + m->shape.ep * c->edp;
    return RL_OK;
}

RL_API_WATCHED
int rl_mesh_rank_of(const rl_mesh *m, const rl_mesh_coord *c)
{
    RL_API_ENTRY();
    if (!m || !c || m->world < 1)
        return -1;
    int d[ND] = { c->tp, c->cp, c->pp, c->ep, c->edp };
    return rank_of_digits(m, d);
}

RL_API_WATCHED
int rl_mesh_group(const rl_mesh *m, int dims, int rank, int *ranks, int *index)
{
    RL_API_ENTRY();
    if (!m || rank < 0 || rank >= m->world)
        return 0;
    int me[ND], size[ND], order[ND], d[ND], n = 0;
    digits_of(m, rank, me);
    dim_sizes(m, size);
    digit_order(m, order);
    for (int r = 0; r < m->world; r++) {
        digits_of(m, r, d);
        int same = 1;
        for (int k = 0; k < ND && same; k++)
            same = (dims & bit_of(k)) || d[k] == me[k];
        if (same) {
            if (ranks)
                ranks[n] = r;
            n++;
        }
    }
    if (index) { /* mixed-radix number of the coordinates outside the group, outermost most significant */
        int idx = 0;
        for (int i = ND - 1; i >= 0; i--)
            if (!(dims & bit_of(order[i])))
                idx = idx * size[order[i]] + me[order[i]];
        *index = idx;
    }
    return n;
}

RL_API_WATCHED
int rl_mesh_node_of(const rl_mesh *m, int rank)
{
    RL_API_ENTRY();
    return m && m->gpus_per_node > 0 ? rank / m->gpus_per_node : 0;
}

RL_API_WATCHED
int rl_mesh_group_crosses_node(const rl_mesh *m, int dims, int rank)
{
    RL_API_ENTRY();
    int grp[RL_MESH_MAX_RANKS];
    int n = rl_mesh_group(m, dims, rank, grp, NULL);
    return n > 0 && rl_mesh_node_of(m, grp[0]) != rl_mesh_node_of(m, grp[n - 1]);
}

RL_API_WATCHED
const char *rl_mesh_dims_name(int dims, char *buf, size_t size)
{
    RL_API_ENTRY();
    size_t k = 0;
    if (!buf || !size)
        return "";
    buf[0] = 0;
    if ((dims & RL_MESH_DP) == RL_MESH_DP) {
        k += (size_t)snprintf(buf, size, "dp");
        dims &= ~RL_MESH_DP;
    }
    for (int d = 0; d < ND && k < size; d++)
        if (dims & bit_of(d))
            k += (size_t)snprintf(buf + k, size - k, "%s%s", k ? "+" : "", dim_names[d]);
    if (!buf[0])
        snprintf(buf, size, "self");
    return buf;
}

RL_API_WATCHED
const char *rl_mesh_describe(const rl_mesh *m, char *buf, size_t size)
{
    RL_API_ENTRY();
    if (!buf || !size)
        return "";
    if (!m || m->world < 1) {
        snprintf(buf, size, "(no mesh)");
        return buf;
    }
    const rl_mesh_shape *s = &m->shape;
    size_t k = (size_t)snprintf(buf, size, "mesh dp=%d (ep=%d x edp=%d) x pp=%d x cp=%d x tp=%d = %d ranks, order %s\n",
                                s->dp, s->ep, s->dp / s->ep, s->pp, s->cp, s->tp, m->world,
                                s->order == RL_MESH_ORDER_TP_CP_DP_PP ? "tp-cp-ep-dp-pp (Megatron-LM's default)"
                                                                      : "tp-cp-pp-dp (TP innermost, DP outermost)");
    for (int r = 0; r < m->world && k < size; r++) {
        rl_mesh_coord c;
        rl_mesh_coord_of(m, r, &c);
        k += (size_t)snprintf(buf + k, size - k, "  rank %3d: dp=%d (ep=%d edp=%d) pp=%d cp=%d tp=%d node %d\n", r,
                              c.dp, c.ep, c.edp, c.pp, c.cp, c.tp, rl_mesh_node_of(m, r));
    }
    if (m->warning[0] && k < size)
        snprintf(buf + k, size - k, "%s\n", m->warning);
    return buf;
}

RL_API_WATCHED
void rl_mesh_record(rl_ctx *ctx, const rl_mesh *m)
{
    RL_API_ENTRY();
    if (!ctx || !m || m->world < 1)
        return;
    int order[ND], size[ND], nd = 0, sizes[RL_MESH_MAX];
    const char *names[RL_MESH_MAX];
    digit_order(m, order);
    dim_sizes(m, size);
    for (int i = ND - 1; i >= 0 && nd < RL_MESH_MAX; i--) {
        int d = order[i];
        if (size[d] == 1)
            continue;
        names[nd] = m->shape.ep == 1 && d == D_EDP ? "dp" : dim_names[d];
        sizes[nd++] = size[d];
    }
    if (nd == 0) {
        names[nd] = "tp";
        sizes[nd++] = 1;
    }
    rl_ctx_set_mesh(ctx, nd, names, sizes);
}

RL_API_WATCHED
int rl_mesh_build_comms(rl_ctx *ctx, const rl_mesh *m, rl_mesh_comms *out)
{
    RL_API_ENTRY();
    if (!ctx || !m || !out)
        return rl_error(ctx, RL_ERR_ARG, "rl_mesh_build_comms: ctx, mesh and out must not be NULL");
    if (m->world != rl_world_size(ctx))
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_mesh_build_comms: the mesh has %d ranks but the world has %d (build it with "
                        "rl_mesh_init(..., rl_world_size(ctx), ...))",
                        m->world, rl_world_size(ctx));
    memset(out, 0, sizeof *out);
    int rank = rl_rank(ctx);
    rl_mesh_coord_of(m, rank, &out->coord);
    struct { int dims; rl_comm **slot; const char *role; } kinds[] = {
        { RL_MESH_TP, &out->tp, "tp" }, { RL_MESH_CP, &out->cp, "cp" }, { RL_MESH_PP, &out->pp, "pp" },
        { RL_MESH_DP, &out->dp, "dp" }, { RL_MESH_EP, &out->ep, "ep" }, { RL_MESH_EDP, &out->edp, "edp" },
        { RL_MESH_DP | RL_MESH_CP, &out->dp_cp, "dp-cp" }, { RL_MESH_TP | RL_MESH_CP | RL_MESH_PP, &out->mp, "mp" },
    };
    rl_comm *world = rl_comm_world(ctx);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int color;
        rl_mesh_group(m, kinds[i].dims, rank, NULL, &color);
        rl_comm *c = rl_comm_split(world, color, rank);
        if (!c) {
            char nm[32];
            const char *why = rl_last_error(ctx);
            return rl_error(ctx, RL_ERR_ARG, "rl_mesh_build_comms: splitting the %s groups failed: %s",
                            rl_mesh_dims_name(kinds[i].dims, nm, sizeof nm), why[0] ? why : "the run stopped");
        }
        rl_comm_set_role(c, kinds[i].role);
        *kinds[i].slot = c;
    }
    rl_mesh_record(ctx, m);
    return RL_OK;
}
