/* calc.c — the course's cost formulas (see calc.h; `ringlab calc TOPIC --help` prints each). */
#include "apiwatch.h"
#include "calc.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return RL_ERR_ARG;
}

static int positive(double x) { return isfinite(x) && x > 0; }

/* ------------------------------------------------------------------ ZeRO */
static const char *const zero_names[RL_CALC_ZERO_NKINDS] = { "ddp", "zero1", "zero2", "zero3", "hsdp" };

RL_API_WATCHED
const char *rl_calc_zero_name(rl_calc_zero_kind k)
{
    RL_API_ENTRY();
    return (k >= 0 && k < RL_CALC_ZERO_NKINDS) ? zero_names[k] : "?";
}

RL_API_WATCHED
int rl_calc_zero(const rl_calc_zero_in *in, rl_calc_zero_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_zero: in and out must not be NULL");
    if (!positive(in->params))
        return fail(err, errlen, "the parameter count must be > 0 (e.g. --params 7.5B), got %g", in->params);
    if (in->dp < 1)
        return fail(err, errlen, "the data-parallel degree Nd must be >= 1 (e.g. --dp 64), got %d", in->dp);
    if (!isfinite(in->k) || in->k < 0)
        return fail(err, errlen, "K (optimizer bytes per parameter) must be >= 0 (Adam in mixed precision: 12), got %g", in->k);
    if (!isfinite(in->comm_bytes) || in->comm_bytes < 0)
        return fail(err, errlen, "bytes per communicated element must be >= 0 (bf16: 2), got %g", in->comm_bytes);
    int nd = in->dp, g = in->group;
    if (g == 0)
        for (g = nd < 8 ? nd : 8; nd % g; g--)
            ;
    if (g < 1 || g > nd || nd % g)
        return fail(err, errlen, "the hsdp group size G must divide Nd = %d (1 <= G <= Nd), got %d", nd, in->group);
    double psi = in->params, k = in->k > 0 ? in->k : 12.0, cb = in->comm_bytes > 0 ? in->comm_bytes : 2.0;
    double r = (double)nd / g;
    memset(out, 0, sizeof *out);
    out->group = g;
    out->k = k;
    out->comm_bytes = cb;
    out->bytes[RL_CALC_DDP] = (4 + k) * psi;
    out->bytes[RL_CALC_ZERO1] = 4 * psi + k * psi / nd;
    out->bytes[RL_CALC_ZERO2] = 2 * psi + (2 + k) * psi / nd;
    out->bytes[RL_CALC_ZERO3] = (4 + k) * psi / nd;
    out->bytes[RL_CALC_HSDP] = (4 + k) * psi / g;
    double ring = (double)(nd - 1) / nd;
    out->traffic_elems[RL_CALC_DDP] = 2 * ring * psi;   /* all-reduce of gradients */
    out->traffic_elems[RL_CALC_ZERO1] = 2 * ring * psi; /* reduce-scatter grads + all-gather params */
    out->traffic_elems[RL_CALC_ZERO2] = 2 * ring * psi;
    out->traffic_elems[RL_CALC_ZERO3] = 3 * ring * psi; /* all-gather fwd, all-gather bwd, reduce-scatter */
    out->traffic_elems[RL_CALC_HSDP] = 3.0 * (g - 1) / g * psi + 2.0 * (r - 1) / r * psi / g;
    out->traffic_paper[RL_CALC_DDP] = 2 * psi;
    out->traffic_paper[RL_CALC_ZERO1] = 2 * psi;
    out->traffic_paper[RL_CALC_ZERO2] = 2 * psi;
    out->traffic_paper[RL_CALC_ZERO3] = 3 * psi;
    out->traffic_paper[RL_CALC_HSDP] = 3 * psi + (r > 1 ? 2 * psi / g : 0);
    for (int i = 0; i < RL_CALC_ZERO_NKINDS; i++)
        out->traffic_bytes[i] = out->traffic_elems[i] * cb;
    return RL_OK;
}

/* ------------------------------------------------------------------ collectives */
RL_API_WATCHED
int rl_calc_coll(const rl_calc_coll_in *in, rl_calc_coll_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_coll: in and out must not be NULL");
    rl_coll_kind k = in->kind;
    if (k != RL_COLL_ALL_REDUCE && k != RL_COLL_REDUCE_SCATTER && k != RL_COLL_ALL_GATHER &&
        k != RL_COLL_ALL_TO_ALL && k != RL_COLL_BROADCAST && k != RL_COLL_REDUCE)
        return fail(err, errlen, "collective '%s' is not modelled here: use all_reduce, reduce_scatter, "
                    "all_gather, all_to_all, broadcast or reduce", rl_coll_name(k));
    if (in->algo != RL_ALGO_RING && in->algo != RL_ALGO_TREE)
        return fail(err, errlen, "unknown algorithm %d: use ring or tree", (int)in->algo);
    if (in->algo == RL_ALGO_TREE && k != RL_COLL_ALL_REDUCE)
        return fail(err, errlen, "the tree algorithm is modelled for all_reduce only; use --algo ring for %s",
                    rl_coll_name(k));
    if (in->ranks < 2)
        return fail(err, errlen, "a collective needs at least 2 ranks (--ranks N, N >= 2), got %d", in->ranks);
    if (!positive(in->bytes))
        return fail(err, errlen, "the buffer size must be > 0 bytes (e.g. --bytes 128M), got %g", in->bytes);
    if (!in->link && !in->hw)
        return fail(err, errlen, "name a hardware profile (--hw h100-nvlink, a100-pcie or h100-2node-ib)");
    int n = in->ranks;
    memset(out, 0, sizeof *out);
    out->crosses_nodes = in->hw && n > in->hw->gpus_per_node;
    out->link = in->link ? in->link : (out->crosses_nodes ? &in->hw->inter : &in->hw->intra);
    if (!positive(out->link->bw) || !isfinite(out->link->alpha) || out->link->alpha < 0)
        return fail(err, errlen, "link '%s' has no bandwidth: fix the profile", out->link->name ? out->link->name : "?");
    out->time = rl_ab_time(k, in->algo, n, in->bytes, out->link);
    out->factor = rl_busbw_factor(k, n);
    out->algbw = in->bytes / out->time;
    out->busbw = out->algbw * out->factor;
    if (in->algo == RL_ALGO_TREE) {
        out->latency_steps = 2 * log2((double)n);
        out->bytes_per_rank = 2 * in->bytes;
    } else {
        out->latency_steps = k == RL_COLL_ALL_REDUCE ? 2.0 * (n - 1) : (double)(n - 1);
        out->bytes_per_rank = rl_ring_bytes_per_rank(k, n, in->bytes);
    }
    return RL_OK;
}

/* ------------------------------------------------------------------ TP */
RL_API_WATCHED
int rl_calc_tp(const rl_calc_tp_in *in, rl_calc_tp_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_tp: in and out must not be NULL");
    if (!positive(in->b) || !positive(in->s) || !positive(in->h))
        return fail(err, errlen, "b, s and h must be > 0 (e.g. --b 2 --s 4096 --h 8192)");
    if (in->t < 1)
        return fail(err, errlen, "the TP size t must be >= 1 (e.g. --t 8), got %d", in->t);
    if (!isfinite(in->dtype_bytes) || in->dtype_bytes < 0)
        return fail(err, errlen, "bytes per element must be >= 0 (bf16: 2)");
    double db = in->dtype_bytes > 0 ? in->dtype_bytes : 2.0, bsh = in->b * in->s * in->h;
    int t = in->t;
    memset(out, 0, sizeof *out);
    out->allreduce_elems = bsh;
    out->fwd_elems = 4 * bsh; /* 2 all-reduces × ≈2·bsh sent per rank */
    out->bwd_elems = 4 * bsh;
    out->layer_elems = 8 * bsh;
    out->layer_bytes = 8 * bsh * db;
    double ring = 2.0 * (t - 1) / t * bsh;
    out->fwd_elems_ring = 2 * ring;
    out->bwd_elems_ring = 2 * ring;
    out->layer_bytes_ring = 4 * ring * db;
    if (in->hw) {
        out->crosses_nodes = t > in->hw->gpus_per_node;
        out->link = out->crosses_nodes ? &in->hw->inter : &in->hw->intra;
        double ar = rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, t, bsh * db, out->link);
        out->fwd_time = 2 * ar;
        out->bwd_time = 2 * ar;
        out->layer_time = 4 * ar;
    }
    return RL_OK;
}

/* ------------------------------------------------------------------ activations */
static const char *const recompute_names[] = { "none", "selective", "full" };

RL_API_WATCHED
const char *rl_calc_recompute_name(rl_calc_recompute r)
{
    RL_API_ENTRY();
    return ((int)r >= 0 && (int)r < 3) ? recompute_names[r] : "?";
}

RL_API_WATCHED
int rl_calc_recompute_parse(const char *s)
{
    RL_API_ENTRY();
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, recompute_names[i]) == 0)
            return i;
    return -1;
}

RL_API_WATCHED
int rl_calc_activation(const rl_calc_act_in *in, rl_calc_act_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_activation: in and out must not be NULL");
    if (!positive(in->s) || !positive(in->b) || !positive(in->h) || !positive(in->a))
        return fail(err, errlen, "s, b, h and a must be > 0 (e.g. --s 2048 --b 1 --h 12288 --a 96)");
    int t = in->t ? in->t : 1, layers = in->layers ? in->layers : 1;
    if (t < 1)
        return fail(err, errlen, "the TP size t must be >= 1, got %d", in->t);
    if (layers < 1)
        return fail(err, errlen, "the number of layers L must be >= 1, got %d", in->layers);
    if (in->recompute < RL_CALC_RECOMPUTE_NONE || in->recompute > RL_CALC_RECOMPUTE_FULL)
        return fail(err, errlen, "unknown recompute mode %d: use none, selective or full", (int)in->recompute);
    if (fmod(in->h, in->a) != 0)
        return fail(err, errlen, "the heads a = %.0f do not divide the hidden size h = %.0f: each head has h/a "
                    "dimensions", in->a, in->h);
    if (fmod(in->a, t) != 0)
        return fail(err, errlen, "the TP size t = %d does not divide the heads a = %.0f: TP gives each rank a/t whole "
                    "heads", t, in->a);
    double s = in->s, b = in->b, h = in->h, a = in->a;
    double attn = 5 * a * s / (h * t); /* the attention scores, softmax and dropout: 5as/(ht) */
    int sp = in->sp && t > 1;
    memset(out, 0, sizeof *out);
    switch (in->recompute) {
    case RL_CALC_RECOMPUTE_FULL:
        out->coeff = 2;
        out->formula = "2sbh (only each layer's input is kept)";
        break;
    case RL_CALC_RECOMPUTE_SELECTIVE:
        out->coeff = sp ? 34.0 / t : 10 + 24.0 / t;
        out->formula = t == 1 ? "34sbh" : (sp ? "34sbh/t" : "sbh(10 + 24/t)");
        break;
    default:
        out->coeff = sp ? 34.0 / t + attn : 10 + 24.0 / t + attn;
        out->formula = t == 1 ? "sbh(34 + 5as/h)" : (sp ? "(sbh/t)(34 + 5as/h)" : "sbh(10 + 24/t + 5as/(ht))");
        break;
    }
    out->per_layer = s * b * h * out->coeff;
    out->total = out->per_layer * layers;
    return RL_OK;
}

/* ------------------------------------------------------------------ pipeline bubble */
static const char *const sched_names[] = { "naive", "gpipe", "1f1b", "interleaved", "zb-h1" };

RL_API_WATCHED
const char *rl_calc_schedule_name(rl_calc_schedule s)
{
    RL_API_ENTRY();
    return ((int)s >= 0 && (int)s < 5) ? sched_names[s] : "?";
}

RL_API_WATCHED
int rl_calc_schedule_parse(const char *s)
{
    RL_API_ENTRY();
    for (int i = 0; s && i < 5; i++)
        if (strcmp(s, sched_names[i]) == 0)
            return i;
    if (s && (strcmp(s, "zbh1") == 0 || strcmp(s, "zb_h1") == 0))
        return RL_CALC_SCHED_ZB_H1;
    return -1;
}

RL_API_WATCHED
int rl_calc_bubble(const rl_calc_bubble_in *in, rl_calc_bubble_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_bubble: in and out must not be NULL");
    if (in->sched < RL_CALC_SCHED_NAIVE || in->sched > RL_CALC_SCHED_ZB_H1)
        return fail(err, errlen, "unknown schedule %d: use naive, gpipe, 1f1b, interleaved or zb-h1", (int)in->sched);
    if (in->p < 1)
        return fail(err, errlen, "the number of pipeline stages p must be >= 1 (e.g. --pp 4), got %d", in->p);
    int naive = in->sched == RL_CALC_SCHED_NAIVE, inter = in->sched == RL_CALC_SCHED_INTERLEAVED;
    int m = naive ? 1 : in->m, v = in->v ? in->v : (inter ? 2 : 1), p = in->p;
    if (m < 1)
        return fail(err, errlen, "the number of micro-batches m must be >= 1 (e.g. --mb 16), got %d", in->m);
    if (v < 1)
        return fail(err, errlen, "the virtual stages per rank v must be >= 1, got %d", in->v);
    if (v > 1 && !inter)
        return fail(err, errlen, "v = %d virtual stages apply to the interleaved schedule only (--schedule interleaved)", v);
    if (inter && (v < 2 || p < 2))
        return fail(err, errlen, "interleaved 1F1B needs v >= 2 virtual stages per rank and p >= 2 stages (got v = %d, "
                    "p = %d; with v = 1 it is plain 1F1B: --schedule 1f1b)", v, p);
    if (inter && m % p)
        return fail(err, errlen, "interleaved 1F1B needs m a multiple of p (Megatron-LM): m = %d, p = %d; try m = %d",
                    m, p, (m / p + 1) * p);
    memset(out, 0, sizeof *out);
    out->m = m;
    out->v = v;
    double pm1 = p - 1, work = m; /* ideal time in units of one micro-batch on one stage */
    switch (in->sched) {
    case RL_CALC_SCHED_NAIVE:
    case RL_CALC_SCHED_GPIPE:
        out->bubble_slots = pm1;
        out->peak_inflight = m;
        break;
    case RL_CALC_SCHED_1F1B:
        out->bubble_slots = pm1;
        out->peak_inflight = m < p ? m : p;
        break;
    case RL_CALC_SCHED_INTERLEAVED: {
        /* chunks of 1/v of a stage's layers; warm-up on rank 0: 2(p−1) + (v−1)p, then one more */
        double chunks = 2.0 * (p - 1) + (double)(v - 1) * p + 1, all = (double)m * v;
        out->bubble_slots = pm1 / v;
        out->peak_inflight = (chunks < all ? chunks : all) / v;
        break;
    }
    case RL_CALC_SCHED_ZB_H1:
        /* T_F = T_B = T_W = T: bubble (p−1)(T_F + T_B − T_W) = (p−1)T, a micro-batch is 3T */
        out->bubble_slots = pm1 / 3;
        out->peak_inflight = m < p ? m : p;
        break;
    }
    out->frac_ideal = out->bubble_slots / work;
    out->frac_total = out->bubble_slots / (work + out->bubble_slots);
    return RL_OK;
}

/* ------------------------------------------------------------------ FLOPs and MFU */
RL_API_WATCHED
int rl_calc_flops(const rl_calc_flops_in *in, rl_calc_flops_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_flops: in and out must not be NULL");
    if (!positive(in->params) || !positive(in->tokens))
        return fail(err, errlen, "the parameter count N and tokens D must be > 0 (e.g. --params 70B --tokens 2T)");
    memset(out, 0, sizeof *out);
    out->per_token_6n = 6 * in->params;
    if (in->layers) {
        if (in->layers < 0 || in->heads < 1 || !positive(in->hidden) || !positive(in->seq))
            return fail(err, errlen, "the attention term needs --layers, --hidden, --heads and --seq, all > 0");
        if (fmod(in->hidden, in->heads) != 0)
            return fail(err, errlen, "the heads H = %d do not divide the hidden size h = %.0f: h = H·Q with Q the "
                        "head dimension", in->heads, in->hidden);
        out->head_dim = in->hidden / in->heads;
        out->per_token_attn = 12.0 * in->layers * in->heads * out->head_dim * in->seq;
    }
    out->flops_6nd = out->per_token_6n * in->tokens;
    out->flops_attn = out->per_token_attn * in->tokens;
    out->total = out->flops_6nd + out->flops_attn;
    return RL_OK;
}

RL_API_WATCHED
int rl_calc_mfu(const rl_calc_mfu_in *in, rl_calc_mfu_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_mfu: in and out must not be NULL");
    if (!positive(in->flops) || !positive(in->time))
        return fail(err, errlen, "FLOPs and time must be > 0 (e.g. --flops 4.2e15 --time 1.5)");
    if (in->gpus < 0)
        return fail(err, errlen, "the number of GPUs must be >= 1, got %d", in->gpus);
    if (!in->hw)
        return fail(err, errlen, "name a hardware profile (--hw h100-nvlink, a100-pcie or h100-2node-ib)");
    int g = in->gpus ? in->gpus : 1;
    out->achieved = in->flops / in->time;
    out->peak = g * in->hw->peak_flops_bf16;
    out->mfu = out->achieved / out->peak;
    return RL_OK;
}

/* ------------------------------------------------------------------ MoE */
RL_API_WATCHED
int rl_calc_moe(const rl_calc_moe_in *in, rl_calc_moe_out *out, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !out)
        return fail(err, errlen, "rl_calc_moe: in and out must not be NULL");
    if (!positive(in->tokens) || !positive(in->hidden))
        return fail(err, errlen, "tokens and hidden size must be > 0 (e.g. --tokens 4096 --hidden 4096)");
    if (in->experts < 1)
        return fail(err, errlen, "the number of experts E must be >= 1, got %d", in->experts);
    if (in->topk < 1 || in->topk > in->experts)
        return fail(err, errlen, "top-k must be between 1 and E = %d, got %d", in->experts, in->topk);
    if (!isfinite(in->cf) || in->cf < 0 || !isfinite(in->dtype_bytes) || in->dtype_bytes < 0)
        return fail(err, errlen, "the capacity factor and bytes per element must be > 0 (e.g. --cf 1.25)");
    double cf = in->cf > 0 ? in->cf : 1.0, db = in->dtype_bytes > 0 ? in->dtype_bytes : 2.0;
    memset(out, 0, sizeof *out);
    /* ceil, forgiving the rounding of e.g. 1.1 in binary */
    out->capacity = ceil(in->tokens * in->topk / in->experts * cf - 1e-9);
    out->routed = in->tokens * in->topk;
    out->dispatch_elems = out->routed * in->hidden;
    out->dispatch_bytes = out->dispatch_elems * db;
    out->combine_bytes = out->dispatch_bytes;
    out->total_bytes = out->dispatch_bytes + out->combine_bytes;
    out->per_token_bytes = 2.0 * in->topk * in->hidden * db;
    return RL_OK;
}

/* ------------------------------------------------------------------ planner */
/* The link a group of n ranks 0, stride, 2·stride, ... crosses (TP innermost layout). */
static const rl_link *group_link(const rl_hw *hw, int stride, int n)
{
    int r[2] = { 0, stride * (n - 1) };
    return rl_hw_group_link(hw, r, n > 1 ? 2 : 1);
}

static double ab(rl_coll_kind k, int n, double bytes, const rl_link *l)
{
    return n > 1 ? rl_ab_time(k, RL_ALGO_RING, n, bytes, l) : 0.0;
}

static int plan_cmp(const void *pa, const void *pb)
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

RL_API_WATCHED
int rl_calc_plan(const rl_calc_plan_in *in, rl_calc_plan_row **rows, int *nrows, char *err, size_t errlen)
{
    RL_API_ENTRY();
    if (!in || !rows || !nrows)
        return fail(err, errlen, "rl_calc_plan: in, rows and nrows must not be NULL");
    *rows = NULL;
    *nrows = 0;
    if (!positive(in->params))
        return fail(err, errlen, "the parameter count must be > 0 (e.g. --params 70B)");
    if (in->layers < 1 || in->heads < 1 || !positive(in->hidden) || !positive(in->seq))
        return fail(err, errlen, "--layers, --hidden, --heads and --seq must all be > 0");
    if (in->gbs < 1 || in->gpus < 1)
        return fail(err, errlen, "the global batch (--gbs, sequences) and --gpus must be >= 1");
    if (!in->hw)
        return fail(err, errlen, "name a hardware profile (--hw h100-nvlink, a100-pcie or h100-2node-ib)");
    if (!isfinite(in->k) || in->k < 0)
        return fail(err, errlen, "K must be >= 0 (default 12)");
    const rl_hw *hw = in->hw;
    double peak = hw->peak_flops_bf16, S = in->seq, h = in->hidden, L = in->layers, psi = in->params;
    double attn_tok = 12.0 * L * h * S, f_tok = 6 * psi + attn_tok;
    int cap = 0, n = 0, G = in->gpus;
    rl_calc_plan_row *out = NULL;
    for (int t = 1; t <= G; t *= 2) {
        if (G % t || in->heads % t || fmod(h, t) != 0)
            continue;
        for (int p = 1; p <= G / t; p++) {
            if ((G / t) % p || in->layers % p)
                continue;
            int d = G / (t * p);
            if (in->gbs % d)
                continue;
            int per_dp = in->gbs / d;
            const rl_link *l_tp = group_link(hw, 1, t), *l_pp = group_link(hw, t, p), *l_dp = group_link(hw, t * p, d);
            for (int b = 1; b <= per_dp; b *= 2) {
                if (per_dp % b)
                    continue;
                int m = per_dp / b;
                double act_bytes = b * S * h * 2, psi_r = psi / (t * p);
                double tp_mb = t > 1 ? (L / p) * 4 * ab(RL_COLL_ALL_REDUCE, t, act_bytes, l_tp) : 0;
                double pp_mb = p > 1 ? 2 * (l_pp->alpha + act_bytes / l_pp->bw) : 0;
                for (int rc = 0; rc < 3; rc++) {
                    double extra = rc == RL_CALC_RECOMPUTE_SELECTIVE ? 4.0 * L * h * S
                                 : rc == RL_CALC_RECOMPUTE_FULL ? 2 * psi + 4.0 * L * h * S : 0;
                    double comp_mb = (f_tok + extra) * b * S / (t * p) / peak;
                    rl_calc_act_in ai = { .s = S, .b = b, .h = h, .a = in->heads, .t = t, .sp = t > 1,
                                          .recompute = (rl_calc_recompute)rc, .layers = 1 };
                    rl_calc_act_out ao;
                    if (rl_calc_activation(&ai, &ao, err, errlen))
                        goto bad;
                    rl_calc_zero_in zi = { .params = psi_r, .dp = d, .k = in->k, .group = 1 };
                    rl_calc_zero_out zo;
                    if (rl_calc_zero(&zi, &zo, err, errlen))
                        goto bad;
                    for (int z = 0; z < (d > 1 ? 4 : 1); z++) { /* ZeRO is a no-op at DP = 1 */
                        if (n == cap) {
                            cap = cap ? 2 * cap : 256;
                            rl_calc_plan_row *nr = realloc(out, (size_t)cap * sizeof *out);
                            if (!nr) {
                                fail(err, errlen, "out of memory while enumerating plans");
                                free(out);
                                return RL_ERR_NOMEM;
                            }
                            out = nr;
                        }
                        rl_calc_plan_row *r = &out[n++];
                        memset(r, 0, sizeof *r);
                        r->tp = t, r->pp = p, r->dp = d, r->m = m, r->b = b, r->zero = z;
                        r->recompute = (rl_calc_recompute)rc;
                        double t_mb = comp_mb + tp_mb + pp_mb, g2 = 2 * psi_r;
                        r->compute_time = m * comp_mb;
                        r->tp_time = m * tp_mb;
                        r->pp_time = m * pp_mb;
                        r->bubble_time = (p - 1) * t_mb;
                        if (z <= 1)
                            r->dp_time = ab(RL_COLL_ALL_REDUCE, d, g2, l_dp);
                        else if (z == 2)
                            r->dp_time = m * ab(RL_COLL_REDUCE_SCATTER, d, g2, l_dp) + ab(RL_COLL_ALL_GATHER, d, g2, l_dp);
                        else
                            r->dp_time = m * (2 * ab(RL_COLL_ALL_GATHER, d, g2, l_dp) + ab(RL_COLL_REDUCE_SCATTER, d, g2, l_dp));
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
                    }
                }
            }
        }
    }
    if (n == 0)
        return fail(err, errlen, "no layout fits: TP (power of two) must divide G = %d, the heads (%d) and h; PP must "
                    "divide G/TP and L = %d; DP = G/(TP·PP) must divide the global batch %d", G, in->heads,
                    in->layers, in->gbs);
    qsort(out, (size_t)n, sizeof *out, plan_cmp);
    *rows = out;
    *nrows = n;
    return RL_OK;
bad:
    free(out);
    return RL_ERR_ARG;
}

/* ------------------------------------------------------------------ parsing */
static int parse_number(const char *s, double *v, const char **rest)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    /* starts with a digit or '.': no sign, "inf", "nan" */
    if (!isdigit((unsigned char)s[0]) && s[0] != '.')
        return -1;
    char *end;
    double x = strtod(s, &end);
    if (end == s || !isfinite(x) || x < 0)
        return -1;
    if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
        return -1;
    *v = x;
    *rest = end;
    return 0;
}

RL_API_WATCHED
int rl_calc_parse_count(const char *s, double *out)
{
    RL_API_ENTRY();
    double v;
    const char *r;
    if (parse_number(s, &v, &r))
        return -1;
    double mul = 1;
    if (*r) {
        switch (toupper((unsigned char)*r)) {
        case 'K': mul = 1e3; break;
        case 'M': mul = 1e6; break;
        case 'B':
        case 'G': mul = 1e9; break;
        case 'T': mul = 1e12; break;
        default: return -1;
        }
        if (r[1])
            return -1;
    }
    *out = v * mul;
    return 0;
}

RL_API_WATCHED
int rl_calc_parse_bytes(const char *s, double *out)
{
    RL_API_ENTRY();
    double v;
    const char *r;
    if (parse_number(s, &v, &r))
        return -1;
    double mul = 1;
    if (*r) {
        int e;
        switch (toupper((unsigned char)*r)) {
        case 'B': e = 0; break;
        case 'K': e = 1; break;
        case 'M': e = 2; break;
        case 'G': e = 3; break;
        case 'T': e = 4; break;
        default: return -1;
        }
        const char *u = r + 1;
        if (e == 0) {
            if (*u)
                return -1;
        } else if (!*u) {
            mul = pow(1024.0, e); /* 128M = 128 MiB, as nccl-tests and bench */
        } else if ((u[0] == 'B' || u[0] == 'b') && !u[1]) {
            mul = pow(1000.0, e);
        } else if ((u[0] == 'i' || u[0] == 'I') && (u[1] == 'B' || u[1] == 'b') && !u[2]) {
            mul = pow(1024.0, e);
        } else {
            return -1;
        }
    }
    *out = v * mul;
    return 0;
}
