/* lab31.c — Lab 31: 3D parallelism, MoE and failure debugging. Reference solution. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lab31.h"

/* ================================================================== 31.1 device mesh */

int mesh_layout_make(const rl_mesh_shape *shape, int world, const rl_hw *hw, mesh_layout *out, char *err,
                     size_t errlen)
{
#define BAD(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return RL_ERR_ARG; } while (0)
    if (err && errlen)
        err[0] = 0;
    if (!shape || !out)
        BAD("mesh: the shape and the layout must not be NULL");
    if (world < 1 || world > RL_MESH_MAX_RANKS)
        BAD("mesh: a world of %d ranks is not supported (1 to %d)", world, RL_MESH_MAX_RANKS);
    const rl_mesh_shape *s = shape;
    if (s->dp < 1 || s->pp < 1 || s->tp < 1 || s->cp < 1 || s->ep < 1)
        BAD("mesh: dp=%d pp=%d tp=%d cp=%d ep=%d: every size must be >= 1 (1 for a dimension you do not use)", s->dp,
            s->pp, s->tp, s->cp, s->ep);
    if (s->order != RL_MESH_ORDER_TP_CP_PP_DP && s->order != RL_MESH_ORDER_TP_CP_DP_PP)
        BAD("mesh: unknown rank order %d", (int)s->order);
    long long prod = (long long)s->dp * s->pp * s->cp * s->tp;
    if (prod != world)
        BAD("mesh: dp=%d x pp=%d x cp=%d x tp=%d = %lld ranks, but the world has %d: the product must equal the "
            "number of ranks", s->dp, s->pp, s->cp, s->tp, prod, world);
    if (s->dp % s->ep)
        BAD("mesh: ep=%d does not divide dp=%d (expert parallelism is carved out of the DP ranks)", s->ep, s->dp);
#undef BAD
    memset(out, 0, sizeof *out);
    out->shape = *s;
    out->world = world;
    if (!hw)
        hw = rl_hw_default();
    out->gpus_per_node = hw->gpus_per_node > 0 ? hw->gpus_per_node : world;
    int TP = s->tp, CP = s->cp, PP = s->pp, DP = s->dp, EP = s->ep;
    for (int r = 0; r < world; r++) {
        rl_mesh_coord *c = &out->coord[r];
        c->tp = r % TP;
        c->cp = r / TP % CP;
        if (s->order == RL_MESH_ORDER_TP_CP_PP_DP) {
            c->pp = r / (TP * CP) % PP;
            c->dp = r / (TP * CP * PP);
        } else {
            c->dp = r / (TP * CP) % DP;
            c->pp = r / (TP * CP * DP);
        }
        c->ep = c->dp % EP;
        c->edp = c->dp / EP;
        out->node[r] = r / out->gpus_per_node;
    }
    /* rank of coordinates (tp, cp, pp, dp) */
    for (int r = 0; r < world; r++) {
        const rl_mesh_coord *c = &out->coord[r];
        int key[MESH_NDIMS] = { c->tp, c->cp, c->pp, c->dp, c->ep, c->edp };
        for (int d = 0; d < MESH_NDIMS; d++) {
            rl_mesh_coord z = *c; /* the group's first member: this dimension's coordinate at 0 */
            if (d == MESH_TP) z.tp = 0;
            if (d == MESH_CP) z.cp = 0;
            if (d == MESH_PP) z.pp = 0;
            if (d == MESH_DP) z.dp = 0;
            if (d == MESH_EP) z.dp = c->dp - c->ep;
            if (d == MESH_EDP) z.dp = c->ep;
            int dd = s->order == RL_MESH_ORDER_TP_CP_PP_DP ? z.pp + PP * z.dp : z.dp + DP * z.pp;
            out->group[d][r] = z.tp + TP * (z.cp + CP * dd);
            out->index[d][r] = key[d];
        }
    }
    int sizes[MESH_NDIMS] = { TP, CP, PP, DP, EP, DP / EP };
    memcpy(out->size, sizes, sizeof sizes);
    for (int r = 0; r < world; r += TP) {
        int a = out->node[r], b = out->node[r + TP - 1];
        if (a != b) {
            out->tp_crosses_node = 1;
            snprintf(out->warning, sizeof out->warning,
                     "warning: TP group of ranks %d..%d spans nodes %d and %d (%d GPUs per node): every layer's "
                     "all-reduces cross the slow inter-node link; keep tp <= %d", r, r + TP - 1, a, b,
                     out->gpus_per_node, out->gpus_per_node);
            break;
        }
    }
    return 0;
}

int mesh_build_comms(rl_ctx *ctx, const mesh_layout *lay, mesh_comms *out)
{
    if (!lay || !out || lay->world != rl_world_size(ctx))
        return rl_error(ctx, RL_ERR_ARG, "mesh_build_comms: the layout is for %d ranks, the world has %d",
                        lay ? lay->world : 0, rl_world_size(ctx));
    memset(out, 0, sizeof *out);
    int r = rl_rank(ctx);
    for (int d = 0; d < MESH_NDIMS; d++) {
        out->c[d] = rl_comm_split(rl_comm_world(ctx), lay->group[d][r], lay->index[d][r]);
        if (!out->c[d])
            return rl_error(ctx, RL_ERR_ARG, "mesh_build_comms: splitting the %s groups failed: %s",
                            mesh_dim_name((mesh_dim)d), rl_last_error(ctx));
        rl_comm_set_role(out->c[d], mesh_dim_name((mesh_dim)d));
    }
    if (r == 0) {
        const rl_mesh_shape *s = &lay->shape;
        const char *names[5];
        int sizes[5], n = 0, pp_outer = s->order == RL_MESH_ORDER_TP_CP_DP_PP; /* outermost first */
        if (pp_outer)
            names[n] = "pp", sizes[n++] = s->pp;
        if (s->ep > 1) {
            names[n] = "edp", sizes[n++] = s->dp / s->ep;
            names[n] = "ep", sizes[n++] = s->ep;
        } else {
            names[n] = "dp", sizes[n++] = s->dp;
        }
        if (!pp_outer)
            names[n] = "pp", sizes[n++] = s->pp;
        if (s->cp > 1)
            names[n] = "cp", sizes[n++] = s->cp;
        names[n] = "tp", sizes[n++] = s->tp;
        rl_ctx_set_mesh(ctx, n, names, sizes);
    }
    return 0;
}

/* ================================================================== 31.2 a 3D training step */

int td_train_step(td_engine *e, int64_t step, float *loss)
{
    rl_ctx *ctx = e->ctx;
    int rc = rl_zero(ctx, e->flat_grad);
    e->loss_sum = 0;
    int s = e->stage, n = e->sched->nops[s];
    const rl_pp_op *ops = e->sched->ops[s], *pending = NULL;
    for (int i = 0; i < n && !rc; i++) {
        const rl_pp_op *op = &ops[i];
        rc = td_p2p(e, e->comms.pp, pending, op); /* the last op's output out, this op's input in */
        if (rc)
            break;
        rl_pp_mark(ctx, s, op);
        rc = op->kind == 'F' ? td_stage_forward(e, e->comms.tp, step, op->mb) : td_stage_backward(e, e->comms.tp, op->mb);
        rl_pp_unmark(ctx);
        pending = op;
    }
    if (!rc)
        rc = td_p2p(e, e->comms.pp, pending, NULL);
    if (!rc)
        rc = td_zero1_update(e);
    if (loss)
        *loss = s == e->cfg.pp - 1 ? (float)(e->loss_sum / e->cfg.micro_batches) : 0.0f;
    return rc;
}

int td_zero1_update(td_engine *e)
{
    rl_ctx *ctx = e->ctx;
    rl_comm *dp = e->comms.dp;
    int D = e->cfg.dp;
    rl_tensor *g = rl_tensor_slice(e->flat_grad, (int64_t)e->dp_rank * e->shard, e->shard);
    rl_tensor *p = rl_tensor_slice(e->flat_param, (int64_t)e->dp_rank * e->shard, e->shard);
    int rc = g && p ? 0 : RL_ERR_NOMEM;
    if (!rc && D > 1)
        rc = rl_reduce_scatter(dp, e->flat_grad, g, RL_SUM, 0) ? 0 : RL_ERR_ARG;
    if (!rc && D > 1)
        rc = rl_scale(ctx, g, 1.0f / (float)D);
    if (!rc) {
        e->step++;
        rc = rl_adamw_step(ctx, &e->cfg.adamw, e->step, p, g, NULL, e->exp_avg, e->exp_avg_sq);
    }
    if (!rc && D > 1)
        rc = rl_all_gather(dp, p, e->flat_param, 0) ? 0 : RL_ERR_ARG;
    rl_tensor_free(g);
    rl_tensor_free(p);
    return rc;
}

/* ================================================================== 31.3 MoE */

int moe_route(rl_ctx *ctx, const float *logits, int64_t tokens, int experts, int top_k, float *probs, int *expert,
              float *weight)
{
    if (!logits || !probs || !expert || !weight || tokens < 0 || experts < 1 || top_k < 1 || top_k > experts)
        return rl_error(ctx, RL_ERR_ARG, "moe_route: need 1 <= top_k (%d) <= experts (%d) and non-NULL arrays", top_k,
                        experts);
    for (int64_t t = 0; t < tokens; t++) {
        const float *z = logits + t * experts;
        float *p = probs + t * experts;
        double mx = z[0], sum = 0;
        for (int i = 1; i < experts; i++)
            mx = z[i] > mx ? z[i] : mx;
        for (int i = 0; i < experts; i++)
            sum += exp(z[i] - mx);
        for (int i = 0; i < experts; i++)
            p[i] = (float)(exp(z[i] - mx) / sum);
        double chosen = 0;
        for (int j = 0; j < top_k; j++) {
            int best = -1;
            for (int i = 0; i < experts; i++) {
                int used = 0;
                for (int q = 0; q < j; q++)
                    used |= expert[t * top_k + q] == i;
                if (!used && (best < 0 || p[i] > p[best]))
                    best = i;
            }
            expert[t * top_k + j] = best;
            chosen += p[best];
        }
        for (int j = 0; j < top_k; j++)
            weight[t * top_k + j] = (float)(p[expert[t * top_k + j]] / chosen);
    }
    return 0;
}

int moe_plan_make(rl_ctx *ctx, const int *expert, int64_t tokens, int experts, int top_k, int ep, double cf,
                  moe_plan *p)
{
    if (!expert || !p || ep < 1 || experts % ep || p->experts != experts || p->ep != ep || p->tokens != tokens ||
        p->top_k != top_k)
        return rl_error(ctx, RL_ERR_ARG, "moe_plan_make: allocate the plan with moe_plan_alloc(T, E, k, ep) first; ep "
                        "must divide E");
    p->capacity = (int64_t)ceil((double)tokens * top_k / experts * (cf > 0 ? cf : 1.0));
    int64_t S = tokens * top_k;
    memset(p->routed, 0, sizeof(int64_t) * (size_t)experts);
    memset(p->kept, 0, sizeof(int64_t) * (size_t)experts);
    p->dropped = 0;
    for (int64_t s = 0; s < S; s++) {
        int e = expert[s];
        if (e < 0 || e >= experts)
            return rl_error(ctx, RL_ERR_ARG, "moe_plan_make: slot %lld routes to expert %d (0..%d)", (long long)s, e,
                            experts - 1);
        p->routed[e]++;
        if (p->kept[e] < p->capacity)
            p->kept[e]++;
        else
            p->dropped++;
    }
    /* dispatch order: by expert, arrival order inside */
    int64_t *seen = calloc((size_t)experts, sizeof *seen), n = 0;
    if (!seen)
        return RL_ERR_NOMEM;
    for (int e = 0; e < experts; e++) {
        for (int64_t s = 0; s < S; s++)
            if (expert[s] == e && seen[e] < p->kept[e])
                p->send_slot[n++] = s, seen[e]++;
        p->expert_counts[e] = p->kept[e];
    }
    free(seen);
    p->nsend = n;
    int epr = experts / ep;
    for (int q = 0; q < ep; q++) {
        p->send_counts[q] = 0;
        for (int l = 0; l < epr; l++)
            p->send_counts[q] += p->kept[q * epr + l];
        p->send_displs[q] = q ? p->send_displs[q - 1] + p->send_counts[q - 1] : 0;
    }
    return 0;
}

double moe_aux_loss(const float *probs, const int *expert, int64_t tokens, int experts, int top_k, double alpha)
{
    if (!probs || !expert || tokens < 1 || experts < 1 || top_k < 1)
        return 0;
    double sum = 0;
    for (int i = 0; i < experts; i++) {
        int64_t cnt = 0;
        double P = 0;
        for (int64_t s = 0; s < tokens * top_k; s++)
            cnt += expert[s] == i;
        for (int64_t t = 0; t < tokens; t++)
            P += probs[t * experts + i];
        sum += (double)cnt / (double)(tokens * top_k) * (P / (double)tokens);
    }
    return alpha * experts * sum;
}

static rl_tensor *rows_tensor(rl_ctx *ctx, const char *name, int64_t n, int64_t h)
{
    int64_t sh[2] = { n > 0 ? n : 1, h };
    return rl_tensor_new(ctx, name, RL_F32, RL_MEM_COMM, 2, sh, "tokens,h");
}

int moe_forward(moe_layer *l, rl_comm *ep, const rl_tensor *x, rl_tensor *y, moe_stats *stats)
{
    rl_ctx *ctx = l->ctx;
    const moe_config *c = &l->cfg;
    if (!ep || rl_comm_size(ep) != c->ep || !x || !y || x->ndim != 2 || x->shape[1] != c->hidden ||
        !rl_tensor_same_shape(x, y) || !stats)
        return rl_error(ctx, RL_ERR_ARG, "moe_forward: x and y must be [T, %d] and ep a communicator of %d ranks",
                        c->hidden, c->ep);
    int64_t T = x->shape[0], h = c->hidden;
    int E = c->num_experts, k = c->top_k, EP = c->ep, epr = l->local_experts;
    memset(stats, 0, sizeof *stats);
    stats->tokens = T;
    int64_t lsh[2] = { T, E };
    rl_tensor *lg = rl_tensor_new(ctx, "router.logits", RL_F32, RL_MEM_ACTIVATION, 2, lsh, "tokens,e");
    float *logits = malloc(sizeof(float) * (size_t)(T * E + 1)), *probs = malloc(sizeof(float) * (size_t)(T * E + 1));
    int *ids = malloc(sizeof(int) * (size_t)(T * k + 1));
    float *w = malloc(sizeof(float) * (size_t)(T * k + 1));
    moe_plan plan;
    memset(&plan, 0, sizeof plan);
    rl_tensor *cnt_s = NULL, *cnt_r = NULL, *sendb = NULL, *recvb = NULL, *outb = NULL, *back = NULL;
    int64_t *rows = NULL, *sc = NULL, *sd = NULL, *rcn = NULL, *rd = NULL, *recv_ec = NULL;
    float *scale = NULL;
    int rc = lg && logits && probs && ids && w ? 0 : RL_ERR_NOMEM;
    if (!rc)
        rc = rl_matmul(ctx, x, 0, l->router_w, 0, lg, 0.0f);
    if (!rc)
        rc = rl_tensor_to_f32(lg, logits, T * E);
    if (!rc)
        rc = moe_route(ctx, logits, T, E, k, probs, ids, w);
    if (!rc) {
        int red = rl_fault_skew_routing(ctx, T, k, E, ids);
        rc = red < 0 ? red : 0;
        stats->hot_redirected = red > 0 ? red : 0;
    }
    if (!rc)
        rc = moe_plan_alloc(&plan, T, E, k, EP);
    if (!rc)
        rc = moe_plan_make(ctx, ids, T, E, k, EP, c->capacity_factor, &plan);
    if (rc)
        goto out;
    stats->capacity = plan.capacity;
    stats->dropped = plan.dropped;
    for (int e = 0; e < E; e++)
        stats->routed[e] = plan.routed[e], stats->kept[e] = plan.kept[e];
    stats->aux_loss = moe_aux_loss(probs, ids, T, E, k, c->moe_aux_loss_coeff);
    /* exchange the per-expert counts: to rank q go the counts of its experts */
    cnt_s = rl_tensor_new_1d(ctx, "moe.counts", RL_F32, RL_MEM_COMM, E);
    cnt_r = rl_tensor_new_1d(ctx, "moe.counts_in", RL_F32, RL_MEM_COMM, E);
    sc = calloc((size_t)EP, sizeof *sc), sd = calloc((size_t)EP, sizeof *sd);
    rcn = calloc((size_t)EP, sizeof *rcn), rd = calloc((size_t)EP, sizeof *rd);
    recv_ec = calloc((size_t)E, sizeof *recv_ec);
    if (!cnt_s || !cnt_r || !sc || !sd || !rcn || !rd || !recv_ec) {
        rc = RL_ERR_NOMEM;
        goto out;
    }
    for (int e = 0; e < E; e++)
        rl_tensor_set(cnt_s, e, (float)plan.expert_counts[e]);
    if (!rl_all_to_all(ep, cnt_s, cnt_r, 0)) {
        rc = RL_ERR_ARG;
        goto out;
    }
    int64_t nrecv = 0;
    for (int q = 0; q < EP; q++) {
        rcn[q] = 0;
        for (int le = 0; le < epr; le++) {
            recv_ec[q * epr + le] = (int64_t)rl_tensor_get(cnt_r, q * epr + le);
            rcn[q] += recv_ec[q * epr + le];
        }
        rd[q] = q ? rd[q - 1] + rcn[q - 1] : 0;
        nrecv += rcn[q];
    }
    /* dispatch */
    rows = malloc(sizeof(int64_t) * (size_t)(plan.nsend + nrecv + 1));
    scale = malloc(sizeof(float) * (size_t)(plan.nsend + 1));
    sendb = rows_tensor(ctx, "moe.dispatch", plan.nsend, h);
    recvb = rows_tensor(ctx, "moe.received", nrecv, h);
    outb = rows_tensor(ctx, "moe.expert_out", nrecv, h);
    back = rows_tensor(ctx, "moe.combined", plan.nsend, h);
    if (!rows || !scale || !sendb || !recvb || !outb || !back) {
        rc = RL_ERR_NOMEM;
        goto out;
    }
    for (int64_t i = 0; i < plan.nsend; i++) {
        rows[i] = plan.send_slot[i] / k;
        scale[i] = w[plan.send_slot[i]];
    }
    if (plan.nsend > 0) {
        int64_t s2[2] = { plan.nsend, h };
        rl_tensor *sv2 = rl_tensor_view(sendb, "moe.dispatch", 0, 2, s2, "tokens,h");
        rc = rl_gather_rows(ctx, x, rows, NULL, sv2);
        rl_tensor_free(sv2);
        if (rc)
            goto out;
    }
    rl_moe_rows_to_elems(plan.send_counts, EP, h, sc);
    rl_moe_rows_to_elems(plan.send_displs, EP, h, sd);
    int64_t rce[64], rde[64];
    rl_moe_rows_to_elems(rcn, EP, h, rce);
    rl_moe_rows_to_elems(rd, EP, h, rde);
    if (!rl_all_to_allv(ep, sendb, sc, sd, recvb, rce, rde, 0)) {
        rc = RL_ERR_ARG;
        goto out;
    }
    stats->rows_sent = plan.nsend;
    stats->rows_received = nrecv;
    /* the local experts: rows of local expert le from every source q */
    for (int le = 0; le < epr && !rc; le++) {
        int64_t n = 0;
        for (int q = 0; q < EP; q++) {
            int64_t start = rd[q];
            for (int j = 0; j < le; j++)
                start += recv_ec[q * epr + j];
            for (int64_t i = 0; i < recv_ec[q * epr + le]; i++)
                rows[n++] = start + i;
        }
        if (!n)
            continue;
        int64_t s2[2] = { n, h };
        rl_tensor *in = rl_tensor_new(ctx, "expert.in", RL_F32, RL_MEM_ACTIVATION, 2, s2, "tokens,h");
        rl_tensor *o = rl_tensor_new(ctx, "expert.out", RL_F32, RL_MEM_ACTIVATION, 2, s2, "tokens,h");
        rc = in && o ? 0 : RL_ERR_NOMEM;
        if (!rc)
            rc = rl_gather_rows(ctx, recvb, rows, NULL, in);
        if (!rc)
            rc = moe_expert_forward(l, le, in, o);
        if (!rc)
            rc = rl_scatter_add_rows(ctx, o, rows, NULL, outb);
        rl_tensor_free(in);
        rl_tensor_free(o);
    }
    if (rc)
        goto out;
    /* combine: the outputs go back the way they came */
    if (!rl_all_to_allv(ep, outb, rce, rde, back, sc, sd, 0)) {
        rc = RL_ERR_ARG;
        goto out;
    }
    rc = rl_copy(ctx, y, x);
    for (int64_t i = 0; i < plan.nsend; i++)
        rows[i] = plan.send_slot[i] / k;
    if (!rc && plan.nsend > 0) {
        int64_t s2[2] = { plan.nsend, h };
        rl_tensor *bv = rl_tensor_view(back, "moe.combined", 0, 2, s2, "tokens,h");
        rc = rl_scatter_add_rows(ctx, bv, rows, scale, y);
        rl_tensor_free(bv);
    }
out:
    moe_plan_free(&plan);
    rl_tensor_free(lg), rl_tensor_free(cnt_s), rl_tensor_free(cnt_r), rl_tensor_free(sendb);
    rl_tensor_free(recvb), rl_tensor_free(outb), rl_tensor_free(back);
    free(logits), free(probs), free(ids), free(w), free(rows), free(scale), free(sc), free(sd), free(rcn), free(rd);
    free(recv_ec);
    return rc;
}

/* ================================================================== 31.4 diagnose failures */

static const rl_diag_rec *rec_at(const rl_diag_flight *fl, const char *comm, int r, int64_t seq)
{
    for (int i = 0; i < fl->nrec; i++)
        if (fl->rec[i].rank == r && fl->rec[i].seq == seq && strcmp(fl->rec[i].comm, comm) == 0)
            return &fl->rec[i];
    return NULL;
}

static int same_call(const rl_diag_rec *a, const rl_diag_rec *b)
{
    return strcmp(a->op, b->op) == 0 && a->count == b->count && strcmp(a->dtype, b->dtype) == 0;
}

/* The first anomaly on one communicator; 1 if found. */
static int check_comm(const rl_diag_flight *fl, const char *comm, diag_result *res, double *when)
{
    int n = fl->nranks, found = 0;
    int64_t *hi = malloc(sizeof(int64_t) * (size_t)n);
    char *member = calloc((size_t)n, 1);
    const rl_diag_rec **recs = calloc((size_t)n, sizeof *recs);
    if (!hi || !member || !recs)
        goto out;
    int64_t smin = INT64_MAX, smax = -1;
    for (int r = 0; r < n; r++)
        hi[r] = -1, member[r] = strcmp(comm, "world") == 0;
    for (int i = 0; i < fl->nrec; i++) {
        const rl_diag_rec *d = &fl->rec[i];
        if (d->seq < 0 || strcmp(d->comm, comm) || d->rank < 0 || d->rank >= n)
            continue;
        member[d->rank] = 1;
        hi[d->rank] = d->seq > hi[d->rank] ? d->seq : hi[d->rank];
        smin = d->seq < smin ? d->seq : smin;
        smax = d->seq > smax ? d->seq : smax;
    }
    for (int64_t s = smin; s <= smax && !found; s++) {
        int present = 0, absent = -1, incomplete = 0;
        for (int r = 0; r < n; r++) {
            recs[r] = member[r] ? rec_at(fl, comm, r, s) : NULL;
            if (recs[r]) {
                present++;
                incomplete |= strcmp(recs[r]->state, "completed") != 0;
            } else if (member[r] && hi[r] < s && absent < 0) {
                absent = r; /* the missing rank: it never got this far */
            }
        }
        if (!present)
            continue;
        int best = -1, best_agree = 0;
        for (int r = 0; r < n; r++) {
            if (!recs[r])
                continue;
            int agree = 0;
            for (int q = 0; q < n; q++)
                agree += recs[q] && same_call(recs[r], recs[q]);
            if (agree > best_agree)
                best_agree = agree, best = r;
        }
        int odd = -1;
        for (int r = 0; r < n && odd < 0; r++)
            if (recs[r] && !same_call(recs[r], recs[best]))
                odd = r;
        *when = INFINITY;
        for (int r = 0; r < n; r++)
            if (recs[r] && recs[r]->t_enqueued < *when)
                *when = recs[r]->t_enqueued;
        res->seq = s;
        snprintf(res->comm, sizeof res->comm, "%s", comm);
        if (odd >= 0) {
            res->kind = RL_DIAG_MISMATCH;
            res->rank = odd;
            snprintf(res->message, sizeof res->message, "mismatch at seq %lld on %s: rank %d called %s(count=%lld, "
                     "%s) but %d ranks called %s(count=%lld, %s)", (long long)s, comm, odd, recs[odd]->op,
                     (long long)recs[odd]->count, recs[odd]->dtype, best_agree, recs[best]->op,
                     (long long)recs[best]->count, recs[best]->dtype);
            found = 1;
        } else if (absent >= 0) {
            res->kind = RL_DIAG_HANG;
            res->rank = absent;
            snprintf(res->message, sizeof res->message, "hang at seq %lld on %s: rank %d never called %s while %d "
                     "ranks wait in it", (long long)s, comm, absent, recs[best]->op, present);
            found = 1;
        } else if (incomplete) {
            res->kind = RL_DIAG_HANG;
            res->rank = -1;
            snprintf(res->message, sizeof res->message, "hang at seq %lld on %s: every rank entered %s, it never "
                     "completed", (long long)s, comm, recs[best]->op);
            found = 1;
        }
    }
out:
    free(hi);
    free(member);
    free(recs);
    return found;
}

int diagnose(const rl_diag_flight *fl, diag_result *out)
{
    if (!fl || !out)
        return RL_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->rank = -1;
    out->seq = -1;
    double best = INFINITY;
    for (int i = 0; i < fl->nrec; i++) {
        const char *c = fl->rec[i].comm;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(fl->rec[j].comm, c) == 0;
        if (seen || fl->rec[i].seq < 0)
            continue;
        diag_result r;
        memset(&r, 0, sizeof r);
        double when = INFINITY;
        if (check_comm(fl, c, &r, &when) &&
            (out->kind == RL_DIAG_NONE || when < best ||
             (when == best && r.kind == RL_DIAG_MISMATCH && out->kind != RL_DIAG_MISMATCH) ||
             (when == best && r.kind == out->kind && strcmp(r.comm, out->comm) < 0))) {
            *out = r;
            best = when;
        }
    }
    /* no collective anomaly: a send/recv that never completed (lowest rank, its oldest call) */
    const rl_diag_rec *p2p = NULL;
    for (int i = 0; i < fl->nrec && out->kind == RL_DIAG_NONE; i++) {
        const rl_diag_rec *d = &fl->rec[i];
        if (d->seq >= 0 || strcmp(d->state, "completed") == 0)
            continue;
        if (!p2p || d->rank < p2p->rank ||
            (d->rank == p2p->rank && (d->t_enqueued < p2p->t_enqueued ||
                                      (d->t_enqueued == p2p->t_enqueued && d->p2p_seq < p2p->p2p_seq))))
            p2p = d;
    }
    if (p2p) {
        out->kind = RL_DIAG_P2P;
        out->rank = p2p->rank;
        out->seq = p2p->p2p_seq;
        snprintf(out->comm, sizeof out->comm, "%s", p2p->comm);
        snprintf(out->message, sizeof out->message, "p2p: rank %d is blocked in %s (peer %d, p2p #%lld on %s): the "
                 "peer never posted the matching call", p2p->rank, p2p->op, p2p->peer, (long long)p2p->p2p_seq,
                 p2p->comm);
    }
    if (out->kind == RL_DIAG_NONE)
        snprintf(out->message, sizeof out->message, "no collective is stuck or inconsistent in the dump");
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int detect_straggler(const double *x, int n, straggler_result *o)
{
    if (!x || !o || n < 1)
        return RL_ERR_ARG;
    memset(o, 0, sizeof *o);
    double mn = x[0], mx = x[0], sum = 0;
    int argmax = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || x[i] < 0)
            return RL_ERR_ARG;
        sum += x[i];
        mn = x[i] < mn ? x[i] : mn;
        if (x[i] > mx)
            mx = x[i], argmax = i;
    }
    o->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (x[i] - o->mean) * (x[i] - o->mean);
    o->cv = o->mean > 0 ? sqrt(ss / n) / o->mean : 0;
    o->ratio = mn > 0 ? mx / mn : (mx > 0 ? INFINITY : 1);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v)
        return RL_ERR_NOMEM;
    memcpy(v, x, sizeof(double) * (size_t)n);
    o->median = median(v, n);
    for (int i = 0; i < n; i++)
        v[i] = fabs(x[i] - o->median);
    o->mad = median(v, n);
    free(v);
    o->imbalanced = o->cv > 0.4 || o->ratio > 3;
    int outlier = -1;
    double worst = 0, scale = 1.4826 * o->mad;
    for (int i = 0; i < n; i++) {
        double z = scale > 0 ? (x[i] - o->median) / scale : (x[i] > o->median ? INFINITY : 0);
        if (z > 3.5 && x[i] > 1.2 * o->median && x[i] - o->median > worst)
            worst = x[i] - o->median, outlier = i;
    }
    o->culprit = outlier >= 0 ? outlier : o->imbalanced ? argmax : -1;
    if (o->culprit >= 0)
        snprintf(o->message, sizeof o->message, "straggler: rank %d at %.4g ms vs median %.4g ms; the others wait "
                 "%.4g ms per step", o->culprit, x[o->culprit], o->median, x[o->culprit] - o->median);
    else
        snprintf(o->message, sizeof o->message, "no straggler (cv %.3f, max/min %.3g)", o->cv, o->ratio);
    return 0;
}

int detect_spike(const double *norms, int steps, int ranks, int layers, spike_result *o)
{
    if (!norms || !o || steps < 1 || ranks < 1 || layers < 1)
        return RL_ERR_ARG;
    memset(o, 0, sizeof *o);
    o->step = o->rank = o->layer = -1;
#define AT(s, r, l) norms[((int64_t)(s) * ranks + (r)) * layers + (l)]
    for (int s = 0; s < steps; s++)
        for (int l = 0; l < layers; l++)
            for (int r = 0; r < ranks; r++) {
                double v = AT(s, r, l), sum = 0;
                int have = 0;
                for (int p = s - 1; p >= 0 && have < 5; p--)
                    if (isfinite(AT(p, r, l)))
                        sum += AT(p, r, l), have++;
                double mean = have ? sum / have : 0;
                if (isfinite(v) && !(have >= 1 && mean > 0 && v > 5 * mean))
                    continue;
                o->found = 1, o->step = s, o->rank = r, o->layer = l, o->value = v, o->recent_mean = mean;
                o->nonfinite = !isfinite(v);
                return 0;
            }
#undef AT
    return 0;
}

/* ================================================================== 31.5 parallelism planner */

int plan_candidate(const rl_calc_plan_in *in, int t, int p, int b, rl_calc_recompute rc, int z, rl_calc_plan_row *r)
{
    if (!in || !r || !in->hw || t < 1 || p < 1 || b < 1 || in->gpus % (t * p) || z < 0 || z > 3)
        return RL_ERR_ARG;
    const rl_hw *hw = in->hw;
    int G = in->gpus, d = G / (t * p);
    if (in->gbs % d || (in->gbs / d) % b)
        return RL_ERR_ARG;
    if (d == 1 && z > 0)
        return RL_ERR_ARG; /* ZeRO shards over DP: at dp = 1 there is nothing to shard */
    int m = in->gbs / d / b;
    double peak = hw->peak_flops_bf16, S = in->seq, h = in->hidden, L = in->layers, psi = in->params;
    double attn_tok = 12.0 * L * h * S, f_tok = 6 * psi + attn_tok;
    const rl_link *l_tp = plan_group_link(hw, 1, t), *l_pp = plan_group_link(hw, t, p), *l_dp = plan_group_link(hw, t * p, d);
    double act = b * S * h * 2, psi_r = psi / (t * p), g2 = 2 * psi_r;
    double tp_mb = t > 1 ? (L / p) * 4 * plan_ring_time(RL_COLL_ALL_REDUCE, t, act, l_tp) : 0;
    double pp_mb = p > 1 ? 2 * (l_pp->alpha + act / l_pp->bw) : 0;
    double extra = rc == RL_CALC_RECOMPUTE_SELECTIVE ? 4.0 * L * h * S : rc == RL_CALC_RECOMPUTE_FULL ? 2 * psi + 4.0 * L * h * S : 0;
    double comp_mb = (f_tok + extra) * b * S / (t * p) / peak;
    rl_calc_act_in ai = { .s = S, .b = b, .h = h, .a = in->heads, .t = t, .sp = t > 1, .recompute = rc, .layers = 1 };
    rl_calc_act_out ao;
    rl_calc_zero_in zi = { .params = psi_r, .dp = d, .k = in->k, .group = 1 };
    rl_calc_zero_out zo;
    if (rl_calc_activation(&ai, &ao, NULL, 0) || rl_calc_zero(&zi, &zo, NULL, 0))
        return RL_ERR_ARG;
    memset(r, 0, sizeof *r);
    r->tp = t, r->pp = p, r->dp = d, r->m = m, r->b = b, r->zero = z, r->recompute = rc;
    double t_mb = comp_mb + tp_mb + pp_mb;
    r->compute_time = m * comp_mb;
    r->tp_time = m * tp_mb;
    r->pp_time = m * pp_mb;
    r->bubble_time = (p - 1) * t_mb;
    if (z <= 1)
        r->dp_time = plan_ring_time(RL_COLL_ALL_REDUCE, d, g2, l_dp);
    else if (z == 2)
        r->dp_time = m * plan_ring_time(RL_COLL_REDUCE_SCATTER, d, g2, l_dp) + plan_ring_time(RL_COLL_ALL_GATHER, d, g2, l_dp);
    else
        r->dp_time = m * (2 * plan_ring_time(RL_COLL_ALL_GATHER, d, g2, l_dp) + plan_ring_time(RL_COLL_REDUCE_SCATTER, d, g2, l_dp));
    r->step_time = (m + p - 1) * t_mb + r->dp_time;
    r->mem_states = zo.bytes[z];
    r->mem_act = ao.per_layer * (L / p) * (m < p ? m : p);
    r->mem_total = r->mem_states + r->mem_act;
    r->mfu = f_tok * in->gbs * S / (r->step_time * G * peak);
    if (t > hw->gpus_per_node)
        r->warnings |= RL_CALC_WARN_TP_NODES;
    if (p > 1 && m < 4 * p)
        r->warnings |= RL_CALC_WARN_FEW_MB;
    if (r->mem_total > hw->hbm_bytes)
        r->warnings |= RL_CALC_WARN_OOM;
    return 0;
}

static int row_cmp(const void *pa, const void *pb)
{
    const rl_calc_plan_row *a = pa, *b = pb;
    int fa = !(a->warnings & RL_CALC_WARN_OOM), fb = !(b->warnings & RL_CALC_WARN_OOM);
    if (fa != fb)
        return fb - fa;
    if (a->step_time != b->step_time)
        return a->step_time < b->step_time ? -1 : 1;
    if (a->mem_total != b->mem_total)
        return a->mem_total < b->mem_total ? -1 : 1;
    if (a->tp != b->tp)
        return a->tp - b->tp;
    if (a->pp != b->pp)
        return a->pp - b->pp;
    if (a->b != b->b)
        return a->b - b->b;
    if (a->zero != b->zero)
        return a->zero - b->zero;
    return (int)a->recompute - (int)b->recompute;
}

int plan_enumerate(const rl_calc_plan_in *in, rl_calc_plan_row **rows, int *nrows, char *err, size_t errlen)
{
    if (!in || !rows || !nrows)
        return RL_ERR_ARG;
    *rows = NULL;
    *nrows = 0;
    if (!(in->params > 0) || in->layers < 1 || in->heads < 1 || !(in->hidden > 0) || !(in->seq > 0) || in->gbs < 1 ||
        in->gpus < 1 || !in->hw) {
        if (err && errlen)
            snprintf(err, errlen, "planner: params, layers, heads, hidden, seq, gbs, gpus must be > 0 and a profile given");
        return RL_ERR_ARG;
    }
    int G = in->gpus, n = 0, cap = 0;
    rl_calc_plan_row *out = NULL;
    for (int t = 1; t <= G; t *= 2) {
        if (G % t || in->heads % t || fmod(in->hidden, t) != 0)
            continue;
        for (int p = 1; p <= G / t; p++) {
            if ((G / t) % p || in->layers % p)
                continue;
            int d = G / (t * p);
            if (in->gbs % d)
                continue;
            for (int b = 1; b <= in->gbs / d; b *= 2) {
                if ((in->gbs / d) % b)
                    continue;
                for (int rc = 0; rc < 3; rc++)
                    for (int z = 0; z < (d > 1 ? 4 : 1); z++) {
                        if (n == cap) {
                            cap = cap ? 2 * cap : 256;
                            rl_calc_plan_row *nr = realloc(out, (size_t)cap * sizeof *out);
                            if (!nr) {
                                free(out);
                                return RL_ERR_NOMEM;
                            }
                            out = nr;
                        }
                        if (plan_candidate(in, t, p, b, (rl_calc_recompute)rc, z, &out[n]) == 0)
                            n++;
                    }
            }
        }
    }
    if (n == 0) {
        free(out);
        if (err && errlen)
            snprintf(err, errlen, "planner: no layout fits the divisibility rules for %d GPUs", G);
        return RL_ERR_ARG;
    }
    qsort(out, (size_t)n, sizeof *out, row_cmp);
    *rows = out;
    *nrows = n;
    return 0;
}
