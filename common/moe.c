/* moe.c — capacity, dropping, dispatch plans, auxiliary loss and load histograms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "calc.h"
#include "err.h"
#include "moe.h"

RL_API_WATCHED
int64_t rl_moe_capacity(int64_t tokens, int experts, int top_k, double cf)
{
    RL_API_ENTRY();
    if (tokens == 0 && experts >= 1 && top_k >= 1 && top_k <= experts && cf >= 0)
        return 0;
    rl_calc_moe_in in = { .tokens = (double)tokens, .experts = experts, .topk = top_k, .cf = cf, .hidden = 1 };
    rl_calc_moe_out out;
    if (rl_calc_moe(&in, &out, NULL, 0) != RL_OK)
        return -1;
    return (int64_t)out.capacity;
}

void rl_moe_plan_free(rl_moe_plan *p)
{
    if (!p)
        return;
    free(p->routed);
    free(p->kept);
    free(p->position);
    free(p->send_slot);
    free(p->send_token);
    free(p->send_counts);
    free(p->send_displs);
    free(p->recv_counts);
    free(p->recv_displs);
    free(p->recv_expert_counts);
    memset(p, 0, sizeof *p);
}

RL_API_WATCHED
int rl_moe_plan_make(rl_ctx *ctx, const int *ids, int64_t tokens, int top_k, int experts, int ep, double cf,
                     rl_moe_plan *p)
{
    RL_API_ENTRY();
    if (!p)
        return rl_error(ctx, RL_ERR_ARG, "rl_moe_plan_make: plan must not be NULL");
    memset(p, 0, sizeof *p);
    if (tokens < 0 || experts < 1 || top_k < 1 || top_k > experts || (tokens > 0 && !ids))
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_moe_plan_make: need tokens >= 0 (%lld), 1 <= top_k (%d) <= experts (%d) and the expert ids",
                        (long long)tokens, top_k, experts);
    if (ep < 1 || experts % ep)
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_moe_plan_make: %d experts cannot be spread evenly over ep = %d ranks (EP must divide E)",
                        experts, ep);
    if (!(cf >= 0) || !isfinite(cf))
        return rl_error(ctx, RL_ERR_ARG, "rl_moe_plan_make: capacity factor %g must be >= 0 (0 → 1.0; 1.25 typical)", cf);
    int64_t n = tokens * top_k;
    for (int64_t s = 0; s < n; s++)
        if (ids[s] < 0 || ids[s] >= experts)
            return rl_error(ctx, RL_ERR_ARG, "rl_moe_plan_make: token %lld choice %d routes to expert %d, outside 0..%d",
                            (long long)(s / top_k), (int)(s % top_k), ids[s], experts - 1);
    p->tokens = tokens;
    p->experts = experts;
    p->top_k = top_k;
    p->ep = ep;
    p->experts_per_rank = experts / ep;
    p->capacity = rl_moe_capacity(tokens, experts, top_k, cf);
    p->routed = calloc((size_t)experts, sizeof(int64_t));
    p->kept = calloc((size_t)experts, sizeof(int64_t));
    p->position = malloc(sizeof(int64_t) * (size_t)(n + 1));
    p->send_slot = malloc(sizeof(int64_t) * (size_t)(n + 1));
    p->send_token = malloc(sizeof(int64_t) * (size_t)(n + 1));
    p->send_counts = calloc((size_t)ep, sizeof(int64_t));
    p->send_displs = calloc((size_t)ep, sizeof(int64_t));
    int64_t *start = calloc((size_t)experts + 1, sizeof(int64_t));
    if (!p->routed || !p->kept || !p->position || !p->send_slot || !p->send_token || !p->send_counts ||
        !p->send_displs || !start) {
        free(start);
        rl_moe_plan_free(p);
        return rl_rank_out_of_memory(ctx, "rl_moe_plan_make: no memory left");
    }
    /* arrival order: keep while the expert has room */
    for (int64_t s = 0; s < n; s++) {
        int e = ids[s];
        p->routed[e]++;
        if (p->kept[e] < p->capacity)
            p->position[s] = p->kept[e]++;
        else {
            p->position[s] = -1;
            p->dropped++;
        }
    }
    for (int e = 0; e < experts; e++) {
        start[e + 1] = start[e] + p->kept[e];
        p->send_counts[e / p->experts_per_rank] += p->kept[e];
    }
    p->nsend = start[experts];
    for (int64_t s = 0; s < n; s++)
        if (p->position[s] >= 0) {
            int64_t row = start[ids[s]] + p->position[s];
            p->send_slot[row] = s;
            p->send_token[row] = s / top_k;
        }
    for (int d = 1; d < ep; d++)
        p->send_displs[d] = p->send_displs[d - 1] + p->send_counts[d - 1];
    free(start);
    return RL_OK;
}

RL_API_WATCHED
int rl_moe_plan_from_routing(rl_ctx *ctx, const rl_moe_routing *r, int ep, double cf, rl_moe_plan *plan)
{
    RL_API_ENTRY();
    if (!r)
        return rl_error(ctx, RL_ERR_ARG, "rl_moe_plan_from_routing: routing is NULL (run the MoE forward first)");
    return rl_moe_plan_make(ctx, r->expert, r->tokens, r->top_k, r->experts, ep, cf, plan);
}

RL_API_WATCHED
int rl_moe_plan_exchange(rl_comm *comm, rl_moe_plan *p)
{
    RL_API_ENTRY();
    rl_ctx *ctx = comm ? rl_comm_ctx(comm) : NULL;
    if (!comm || !p || !p->kept)
        return rl_error(ctx, RL_ERR_ARG, "rl_moe_plan_exchange: need the EP communicator and a plan from rl_moe_plan_make");
    int ep = p->ep, epr = p->experts_per_rank;
    if (rl_comm_size(comm) != ep)
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_moe_plan_exchange: the plan spreads experts over %d ranks but the communicator has %d "
                        "(pass the EP group's communicator)", ep, rl_comm_size(comm));
    /* chunk d of send: the kept counts of rank d's experts (exact in f32 below 2^24) */
    rl_tensor *snd = rl_tensor_new_1d(ctx, "moe_counts", RL_F32, RL_MEM_COMM, (int64_t)ep * epr);
    rl_tensor *rcv = rl_tensor_new_1d(ctx, "moe_counts_in", RL_F32, RL_MEM_COMM, (int64_t)ep * epr);
    free(p->recv_counts);
    free(p->recv_displs);
    free(p->recv_expert_counts);
    p->recv_counts = calloc((size_t)ep, sizeof(int64_t));
    p->recv_displs = calloc((size_t)ep, sizeof(int64_t));
    p->recv_expert_counts = calloc((size_t)ep * epr, sizeof(int64_t));
    int rc = RL_OK;
    if (!snd || !rcv || !p->recv_counts || !p->recv_displs || !p->recv_expert_counts)
        rc = rl_rank_out_of_memory(ctx, "rl_moe_plan_exchange: no memory left");
    for (int e = 0; !rc && e < p->experts; e++)
        rl_tensor_set(snd, e, (float)p->kept[e]);
    if (!rc) {
        rl_work *w = rl_all_to_all(comm, snd, rcv, 0);
        rc = w ? rl_wait(w) : RL_ERR_ARG;
    }
    if (!rc) {
        p->nrecv = 0;
        for (int s = 0; s < ep; s++) {
            for (int l = 0; l < epr; l++) {
                int64_t c = (int64_t)rl_tensor_get(rcv, (int64_t)s * epr + l);
                p->recv_expert_counts[s * epr + l] = c;
                p->recv_counts[s] += c;
            }
            p->recv_displs[s] = p->nrecv;
            p->nrecv += p->recv_counts[s];
        }
    }
    rl_tensor_free(snd);
    rl_tensor_free(rcv);
    return rc;
}

void rl_moe_rows_to_elems(const int64_t *rows, int n, int64_t row_elems, int64_t *elems)
{
    for (int i = 0; rows && elems && i < n; i++)
        elems[i] = rows[i] * row_elems;
}

RL_API_WATCHED
int rl_moe_aux_loss(rl_ctx *ctx, const float *probs, const int *ids, int64_t tokens, int experts, int top_k,
                    double alpha, double *loss, float *dprobs, double *f, double *P)
{
    RL_API_ENTRY();
    if (!probs || !ids || !loss || tokens < 1 || experts < 1 || top_k < 1 || top_k > experts)
        return rl_error(ctx, RL_ERR_ARG,
                        "rl_moe_aux_loss: need probs [T·E], expert ids [T·k], loss, tokens >= 1 and 1 <= k <= E");
    double *fi = calloc((size_t)experts, sizeof(double)), *pi = calloc((size_t)experts, sizeof(double));
    if (!fi || !pi) {
        free(fi);
        free(pi);
        return rl_rank_out_of_memory(ctx, "rl_moe_aux_loss: no memory left");
    }
    int64_t n = tokens * top_k;
    for (int64_t s = 0; s < n; s++) {
        if (ids[s] < 0 || ids[s] >= experts) {
            free(fi);
            free(pi);
            return rl_error(ctx, RL_ERR_ARG, "rl_moe_aux_loss: slot %lld routes to expert %d, outside 0..%d",
                            (long long)s, ids[s], experts - 1);
        }
        fi[ids[s]] += 1.0 / (double)n;
    }
    for (int64_t t = 0; t < tokens; t++)
        for (int e = 0; e < experts; e++)
            pi[e] += probs[t * experts + e] / (double)tokens;
    double sum = 0;
    for (int e = 0; e < experts; e++)
        sum += fi[e] * pi[e];
    *loss = alpha * experts * sum;
    if (dprobs)
        for (int64_t t = 0; t < tokens; t++)
            for (int e = 0; e < experts; e++)
                dprobs[t * experts + e] = (float)(alpha * experts * fi[e] / (double)tokens);
    for (int e = 0; e < experts; e++) {
        if (f)
            f[e] = fi[e];
        if (P)
            P[e] = pi[e];
    }
    free(fi);
    free(pi);
    return RL_OK;
}

RL_API_WATCHED
int64_t rl_moe_expert_load(const int *ids, int64_t nslots, int experts, int64_t *hist)
{
    RL_API_ENTRY();
    if (!hist || experts < 1 || nslots < 0 || (nslots > 0 && !ids))
        return RL_ERR_ARG;
    memset(hist, 0, sizeof(int64_t) * (size_t)experts);
    int64_t n = 0;
    for (int64_t s = 0; s < nslots; s++)
        if (ids[s] >= 0 && ids[s] < experts) {
            hist[ids[s]]++;
            n++;
        }
    return n;
}

const char *rl_moe_load_chart(const int64_t *hist, int experts, int width, char *buf, size_t size)
{
    if (!buf || !size)
        return "";
    buf[0] = 0;
    if (!hist || experts < 1)
        return buf;
    if (width < 1)
        width = 40;
    int64_t max = 0, total = 0;
    for (int e = 0; e < experts; e++) {
        max = hist[e] > max ? hist[e] : max;
        total += hist[e];
    }
    double mean = (double)total / experts;
    size_t k = 0;
    for (int e = 0; e < experts && k < size; e++) {
        int bar = max > 0 ? (int)llround((double)hist[e] * width / (double)max) : 0;
        k += (size_t)snprintf(buf + k, size - k, "e%-3d ", e);
        for (int i = 0; i < bar && k + 4 < size; i++)
            k += (size_t)snprintf(buf + k, size - k, "\u2588");
        if (k < size)
            k += (size_t)snprintf(buf + k, size - k, " %lld (%.2f\u00d7 mean)\n", (long long)hist[e],
                                  mean > 0 ? (double)hist[e] / mean : 0.0);
    }
    return buf;
}
