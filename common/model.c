/* model.c — building the models (parameter registration, units, initialisation),
 * activation buffers, forward and backward of the MLP, transformer and MoE stacks, and
 * the whole-model AdamW. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "err.h"
#include "model.h"
#include "rng.h"
#include "stream.h"

#define TRY(x)                 \
    do {                       \
        int rc_ = (x);         \
        if (rc_)               \
            return rc_;        \
    } while (0)

#define LN_EPS 1e-5f

typedef struct ln_params { rl_param *g, *b; } ln_params;
typedef struct lin_params { rl_param *w, *b; } lin_params;

/* LayerNorm activations. */
typedef struct ln_acts { rl_tensor *y, *mean, *rstd; } ln_acts;

/* One block: its parameters and the activations its forward keeps for backward. */
typedef struct block {
    int layer, unit;
    ln_params ln1, ln2;             /* ln1: attention (transformer); ln2: MLP / MoE input */
    lin_params q, k, v, o;          /* transformer attention */
    lin_params fc1, fc2;            /* MLP */
    lin_params router;              /* MoE */
    lin_params *e_fc1, *e_fc2;      /* MoE experts [E] */
    const rl_tensor *x_in;          /* input of the last forward (not owned) */
    ln_acts a1, a2;
    rl_tensor *q_a, *k_a, *v_a, *probs, *att, *mid;
    rl_tensor *pre, *act, *out;
    /* MoE */
    rl_tensor *rlogits, *rprobs;
    rl_moe_routing routing;
    int64_t *e_count;               /* tokens per expert */
    int64_t **e_rows;               /* [E][count] token row of each routed slot */
    float **e_weight;               /* [E][count] its routing weight */
    int64_t **e_slot;               /* [E][count] index into routing arrays (token·k + j) */
    rl_tensor **e_x, **e_pre, **e_act, **e_y;
} block;

struct rl_model_state {
    int nblocks;
    block *blocks;
    rl_param *wte, *wpe;
    ln_params lnf;
    lin_params head;                /* MLP/MoE: [h,out] + bias; transformer: [h,V] (NULL when tied) */
    int64_t B, S, R;                /* batch, seq (1 for regression), rows = B·S of allocated activations */
    const rl_batch *batch;          /* the batch of the last forward (caller keeps it alive) */
    int *pos_ids;
    rl_tensor *x0, *lnf_a_y, *lnf_mean, *lnf_rstd, *outp;
    rl_tensor *d_cur, *d_tmp, *d_ln, *d_ffn, *d_q, *d_k, *d_v, *d_att, *d_out;
    int have_forward;
    int64_t nparams_cap;
    /* rl_model_set_ready_order: parameters whose gradient is final, not yet announced */
    int ready_window, nready;
    uint64_t ready_seed, ready_batches;
    rl_param **ready;
};

/* ------------------------------------------------------------------ config */

rl_model_config rl_model_config_default(rl_model_kind kind)
{
    rl_model_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.param_dtype = RL_F32;
    c.grad_dtype = RL_F32;
    c.seed = 1;
    switch (kind) {
    case RL_MODEL_TRANSFORMER:
        c.hidden = 64, c.layers = 2, c.vocab = 16, c.seq = 16, c.heads = 4, c.tie_embeddings = 1;
        break;
    case RL_MODEL_MOE:
        c.hidden = 32, c.layers = 2, c.out_dim = 8, c.experts = 4, c.top_k = 2, c.ffn = 64;
        break;
    default:
        c.hidden = 64, c.layers = 2, c.out_dim = 16;
        break;
    }
    return c;
}

static const char *kind_names[] = { "mlp", "transformer", "moe" };

int rl_model_kind_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, kind_names[i]) == 0)
            return i;
    return -1;
}

const char *rl_model_kind_name(rl_model_kind kind) { return kind >= 0 && kind <= 2 ? kind_names[kind] : "?"; }

static int ffn_width(const rl_model_config *c) { return c->ffn > 0 ? c->ffn : 4 * c->hidden; }

static int check_config(rl_ctx *ctx, const rl_model_config *c)
{
    if (c->kind < RL_MODEL_MLP || c->kind > RL_MODEL_MOE)
        return rl_error(ctx, RL_ERR_ARG, "model: unknown kind %d; use RL_MODEL_MLP, _TRANSFORMER or _MOE", c->kind);
    if (c->hidden < 1 || c->layers < 0)
        return rl_error(ctx, RL_ERR_ARG, "model: hidden must be >= 1 and layers >= 0 (got %d, %d)", c->hidden, c->layers);
    if ((c->param_dtype != RL_F32 && c->param_dtype != RL_BF16) || (c->grad_dtype != RL_F32 && c->grad_dtype != RL_BF16))
        return rl_error(ctx, RL_ERR_ARG, "model: param and grad dtypes must be f32 or bf16");
    if (c->kind != RL_MODEL_TRANSFORMER && c->out_dim < 1)
        return rl_error(ctx, RL_ERR_ARG, "model: out_dim must be >= 1 for the regression head (got %d)", c->out_dim);
    if (c->kind == RL_MODEL_TRANSFORMER) {
        if (c->vocab < 2 || c->seq < 1 || c->heads < 1)
            return rl_error(ctx, RL_ERR_ARG, "model: transformer needs vocab >= 2, seq >= 1, heads >= 1");
        if (c->hidden % c->heads)
            return rl_error(ctx, RL_ERR_ARG, "model: %d heads do not divide hidden %d; pick a divisor", c->heads, c->hidden);
    }
    if (c->kind == RL_MODEL_MOE && (c->experts < 1 || c->top_k < 1 || c->top_k > c->experts))
        return rl_error(ctx, RL_ERR_ARG, "model: MoE needs experts >= 1 and 1 <= top_k <= experts (got %d, %d)",
                        c->experts, c->top_k);
    return 0;
}

/* ------------------------------------------------------------------ registration */

enum { INIT_NORMAL, INIT_ONES, INIT_ZEROS };

/* Registers the next parameter: [s0] or [s0,s1], initialised from (seed, index). */
static rl_param *reg(rl_model *m, int unit, const char *name, int64_t s0, int64_t s1, const char *dims, int init,
                     double std)
{
    if (m->nparams >= m->st->nparams_cap)
        return NULL;
    rl_param *p = &m->params[m->nparams];
    p->index = m->nparams++;
    p->unit = unit;
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->dims, sizeof p->dims, "%s", dims);
    p->ndim = s1 ? 2 : 1;
    p->shape[0] = s0;
    p->shape[1] = s1;
    p->numel = s1 ? s0 * s1 : s0;
    p->uses = 1;
    p->own_value = rl_tensor_new(m->ctx, name, m->cfg.param_dtype, RL_MEM_PARAM, p->ndim, p->shape, dims);
    p->own_grad = rl_tensor_new(m->ctx, name, m->cfg.grad_dtype, RL_MEM_GRAD, p->ndim, p->shape, dims);
    if (!p->own_value || !p->own_grad) {
        rl_tensor_free(p->own_value);
        rl_tensor_free(p->own_grad);
        p->own_value = p->own_grad = NULL;
        return NULL;
    }
    snprintf(p->own_grad->name, sizeof p->own_grad->name, "d%s", name);
    p->value = p->own_value;
    p->grad = p->own_grad;
    rl_rng r = rl_rng_make(m->cfg.seed, 1000 + (uint64_t)p->index);
    /* GPU backend (issue 6): the values are made on the host and copied once (a device tensor
     * would take one copy per rl_tensor_set) */
    float *init_vals = malloc((size_t)(p->numel > 0 ? p->numel : 1) * sizeof(float));
    if (!init_vals) {
        rl_tensor_free(p->own_value);
        rl_tensor_free(p->own_grad);
        p->own_value = p->own_grad = p->value = p->grad = NULL;
        rl_rank_out_of_memory(m->ctx, "model: initialising '%s'", name);
        return NULL;
    }
    for (int64_t i = 0; i < p->numel; i++)
        init_vals[i] = init == INIT_ONES ? 1.0f : init == INIT_ZEROS ? 0.0f : (float)(std * rl_rng_normal(&r));
    int irc = rl_tensor_from_f32(p->value, init_vals, p->numel);
    free(init_vals);
    if (irc) {
        rl_tensor_free(p->own_value);
        rl_tensor_free(p->own_grad);
        p->own_value = p->own_grad = p->value = p->grad = NULL;
        return NULL;
    }
    return p;
}

/* Registers LayerNorm gamma/beta "<prefix>.g/.b". */
static int reg_ln(rl_model *m, int unit, const char *prefix, ln_params *out)
{
    char n[40];
    int h = m->cfg.hidden;
    snprintf(n, sizeof n, "%s.g", prefix);
    out->g = reg(m, unit, n, h, 0, "h", INIT_ONES, 0);
    snprintf(n, sizeof n, "%s.b", prefix);
    out->b = out->g ? reg(m, unit, n, h, 0, "h", INIT_ZEROS, 0) : NULL;
    return out->b ? 0 : RL_ERR_NOMEM;
}

/* Registers a linear layer "<prefix>.w" [in,out] ~ N(0, std²) and "<prefix>.b" [out] = 0. */
static int reg_lin(rl_model *m, int unit, const char *prefix, int in, int out, const char *win, const char *wout,
                   double std, lin_params *lp)
{
    char n[40], dims[32];
    snprintf(n, sizeof n, "%s.w", prefix);
    snprintf(dims, sizeof dims, "%s,%s", win, wout);
    lp->w = reg(m, unit, n, in, out, dims, INIT_NORMAL, std);
    snprintf(n, sizeof n, "%s.b", prefix);
    lp->b = lp->w ? reg(m, unit, n, out, 0, wout, INIT_ZEROS, 0) : NULL;
    return lp->b ? 0 : RL_ERR_NOMEM;
}

static int64_t count_params(const rl_model_config *c)
{
    switch (c->kind) {
    case RL_MODEL_TRANSFORMER: return 2 + 16 * (int64_t)c->layers + 2 + (c->tie_embeddings ? 0 : 1);
    case RL_MODEL_MOE: return (4 + 4 * (int64_t)c->experts) * c->layers + 2;
    default: return 6 * (int64_t)c->layers + 2;
    }
}

static int build_units(rl_model *m, int nunits)
{
    m->units = calloc((size_t)nunits, sizeof *m->units);
    if (!m->units)
        return RL_ERR_NOMEM;
    m->nunits = nunits;
    for (int u = 0; u < nunits; u++) {
        rl_unit *un = &m->units[u];
        un->index = u;
        un->layer = -1;
        for (int i = 0; i < m->nparams; i++)
            un->nparams += m->params[i].unit == u;
        un->params = calloc((size_t)(un->nparams ? un->nparams : 1), sizeof *un->params);
        if (!un->params)
            return RL_ERR_NOMEM;
        int k = 0;
        for (int i = 0; i < m->nparams; i++)
            if (m->params[i].unit == u)
                un->params[k++] = &m->params[i];
    }
    for (int l = 0; l < m->st->nblocks; l++) {
        rl_unit *un = &m->units[m->st->blocks[l].unit];
        un->layer = l;
        snprintf(un->name, sizeof un->name, "block%d", l);
    }
    snprintf(m->units[nunits - 1].name, sizeof m->units[0].name, "head");
    if (m->cfg.kind == RL_MODEL_TRANSFORMER)
        snprintf(m->units[0].name, sizeof m->units[0].name, "embed");
    return 0;
}

static int build_params(rl_model *m)
{
    const rl_model_config *c = &m->cfg;
    rl_model_state *st = m->st;
    int h = c->hidden, f = ffn_width(c), L = c->layers;
    const char *fdim = f == 4 * h ? "4h" : "ffn";
    double proj_std_scale = 1.0 / sqrt(2.0 * (L > 0 ? L : 1));
    char n[40];
    int first_block_unit = c->kind == RL_MODEL_TRANSFORMER ? 1 : 0;
    if (c->kind == RL_MODEL_TRANSFORMER) {
        if (!(st->wte = reg(m, 0, "wte", c->vocab, h, "v,h", INIT_NORMAL, 0.02)) ||
            !(st->wpe = reg(m, 0, "wpe", c->seq, h, "s,h", INIT_NORMAL, 0.02)))
            return RL_ERR_NOMEM;
        if (c->tie_embeddings)
            st->wte->uses = 2;
    }
    for (int l = 0; l < L; l++) {
        block *b = &st->blocks[l];
        b->layer = l;
        b->unit = first_block_unit + l;
        int u = b->unit;
        if (c->kind == RL_MODEL_TRANSFORMER) {
            double s = 0.02;
            snprintf(n, sizeof n, "block%d.ln1", l);
            TRY(reg_ln(m, u, n, &b->ln1));
            const char *names[4] = { "q", "k", "v", "o" };
            lin_params *lins[4] = { &b->q, &b->k, &b->v, &b->o };
            for (int i = 0; i < 4; i++) {
                snprintf(n, sizeof n, "block%d.%s", l, names[i]);
                TRY(reg_lin(m, u, n, h, h, "h", "h", i == 3 ? s * proj_std_scale : s, lins[i]));
            }
            snprintf(n, sizeof n, "block%d.ln2", l);
            TRY(reg_ln(m, u, n, &b->ln2));
            snprintf(n, sizeof n, "block%d.fc1", l);
            TRY(reg_lin(m, u, n, h, f, "h", fdim, s, &b->fc1));
            snprintf(n, sizeof n, "block%d.fc2", l);
            TRY(reg_lin(m, u, n, f, h, fdim, "h", s * proj_std_scale, &b->fc2));
        } else if (c->kind == RL_MODEL_MLP) {
            snprintf(n, sizeof n, "block%d.ln", l);
            TRY(reg_ln(m, u, n, &b->ln2));
            snprintf(n, sizeof n, "block%d.fc1", l);
            TRY(reg_lin(m, u, n, h, f, "h", fdim, 1.0 / sqrt(h), &b->fc1));
            snprintf(n, sizeof n, "block%d.fc2", l);
            TRY(reg_lin(m, u, n, f, h, fdim, "h", proj_std_scale / sqrt(f), &b->fc2));
        } else {
            int E = c->experts;
            snprintf(n, sizeof n, "block%d.ln", l);
            TRY(reg_ln(m, u, n, &b->ln2));
            snprintf(n, sizeof n, "block%d.router", l);
            TRY(reg_lin(m, u, n, h, E, "h", "e", 1.0 / sqrt(h), &b->router));
            b->e_fc1 = calloc((size_t)E, sizeof *b->e_fc1);
            b->e_fc2 = calloc((size_t)E, sizeof *b->e_fc2);
            if (!b->e_fc1 || !b->e_fc2)
                return RL_ERR_NOMEM;
            for (int e = 0; e < E; e++) {
                snprintf(n, sizeof n, "block%d.expert%d.fc1", l, e);
                TRY(reg_lin(m, u, n, h, f, "h", fdim, 1.0 / sqrt(h), &b->e_fc1[e]));
                snprintf(n, sizeof n, "block%d.expert%d.fc2", l, e);
                TRY(reg_lin(m, u, n, f, h, fdim, "h", proj_std_scale / sqrt(f), &b->e_fc2[e]));
            }
        }
    }
    int head_unit = first_block_unit + L;
    if (c->kind == RL_MODEL_TRANSFORMER) {
        TRY(reg_ln(m, head_unit, "lnf", &st->lnf));
        if (!c->tie_embeddings && !(st->head.w = reg(m, head_unit, "lm_head.w", h, c->vocab, "h,v", INIT_NORMAL, 0.02)))
            return RL_ERR_NOMEM;
    } else {
        TRY(reg_lin(m, head_unit, "head", h, c->out_dim, "h", "out", 0.1 / sqrt(h), &st->head));
    }
    return build_units(m, head_unit + 1);
}

rl_model *rl_model_new(rl_ctx *ctx, const rl_model_config *cfg)
{
    if (!cfg) {
        rl_error(ctx, RL_ERR_ARG, "model: config is NULL; start from rl_model_config_default()");
        return NULL;
    }
    if (check_config(ctx, cfg))
        return NULL;
    rl_model *m = calloc(1, sizeof *m);
    if (!m) {
        rl_rank_out_of_memory(ctx, "model: no memory left");
        return NULL;
    }
    m->cfg = *cfg;
    m->ctx = ctx;
    m->st = calloc(1, sizeof *m->st);
    int64_t cap = count_params(cfg);
    m->params = calloc((size_t)cap, sizeof *m->params);
    if (m->st) {
        m->st->nparams_cap = cap;
        m->st->nblocks = cfg->layers;
        m->st->blocks = calloc((size_t)(cfg->layers ? cfg->layers : 1), sizeof *m->st->blocks);
    }
    if (!m->st || !m->params || !m->st->blocks || build_params(m) || m->nparams != cap) {
        rl_model_free(m);
        rl_rank_out_of_memory(ctx, "model: while registering parameters");
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------------ activations */

static void free_t(rl_tensor **t)
{
    rl_tensor_free(*t);
    *t = NULL;
}

static void free_ln_acts(ln_acts *a)
{
    free_t(&a->y);
    free_t(&a->mean);
    free_t(&a->rstd);
}

/* Frees the per-expert buffers of a MoE block's last forward. */
static void free_moe_acts(block *b, int E)
{
    for (int e = 0; b->e_x && e < E; e++) {
        free_t(&b->e_x[e]);
        free_t(&b->e_pre[e]);
        free_t(&b->e_act[e]);
        free_t(&b->e_y[e]);
        free(b->e_rows[e]);
        free(b->e_weight[e]);
        free(b->e_slot[e]);
        b->e_rows[e] = b->e_slot[e] = NULL;
        b->e_weight[e] = NULL;
    }
}

static void free_acts(rl_model *m)
{
    rl_model_state *st = m->st;
    for (int l = 0; l < st->nblocks; l++) {
        block *b = &st->blocks[l];
        free_ln_acts(&b->a1);
        free_ln_acts(&b->a2);
        rl_tensor **ts[] = { &b->q_a, &b->k_a, &b->v_a, &b->probs, &b->att, &b->mid, &b->pre, &b->act,
                             &b->out, &b->rlogits, &b->rprobs };
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            free_t(ts[i]);
        free_moe_acts(b, m->cfg.experts);
        free(b->routing.expert);
        free(b->routing.weight);
        free(b->routing.probs);
        b->routing.expert = NULL;
        b->routing.weight = NULL;
        b->routing.probs = NULL;
    }
    rl_tensor **ts[] = { &st->x0, &st->lnf_a_y, &st->lnf_mean, &st->lnf_rstd, &st->outp, &st->d_cur, &st->d_tmp,
                         &st->d_ln, &st->d_ffn, &st->d_q, &st->d_k, &st->d_v, &st->d_att, &st->d_out };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        free_t(ts[i]);
    free(st->pos_ids);
    st->pos_ids = NULL;
    st->B = st->S = st->R = 0;
}

/* An activation [B, (S,) last] named name with dims "b,(s,)dim". */
static rl_tensor *act_new(rl_model *m, const char *name, int64_t last, const char *dim)
{
    rl_model_state *st = m->st;
    char dims[32];
    int64_t shape[3];
    int nd;
    if (m->cfg.kind == RL_MODEL_TRANSFORMER) {
        shape[0] = st->B, shape[1] = st->S, shape[2] = last, nd = 3;
        snprintf(dims, sizeof dims, "b,s,%s", dim);
    } else {
        shape[0] = st->B, shape[1] = last, nd = 2;
        snprintf(dims, sizeof dims, "b,%s", dim);
    }
    return rl_tensor_new(m->ctx, name, RL_F32, RL_MEM_ACTIVATION, nd, shape, dims);
}

/* A per-row f32 vector [B·S] (LayerNorm statistics). */
static rl_tensor *row_stat_new(rl_model *m, const char *name)
{
    return rl_tensor_new(m->ctx, name, RL_F32, RL_MEM_ACTIVATION, 1, &m->st->R, "rows");
}

static int ln_acts_new(rl_model *m, ln_acts *a, const char *prefix)
{
    char n[32];
    snprintf(n, sizeof n, "%s", prefix);
    a->y = act_new(m, n, m->cfg.hidden, "h");
    snprintf(n, sizeof n, "%s.mean", prefix);
    a->mean = row_stat_new(m, n);
    snprintf(n, sizeof n, "%s.rstd", prefix);
    a->rstd = row_stat_new(m, n);
    return a->y && a->mean && a->rstd ? 0 : RL_ERR_NOMEM;
}

/* Makes sure the activation buffers fit a batch of B samples of S tokens. */
static int ensure_acts(rl_model *m, int64_t B, int64_t S)
{
    rl_model_state *st = m->st;
    if (st->B == B && st->S == S && st->d_cur)
        return 0;
    free_acts(m);
    st->B = B, st->S = S, st->R = B * S;
    const rl_model_config *c = &m->cfg;
    int h = c->hidden, f = ffn_width(c);
    const char *fdim = f == 4 * h ? "4h" : "ffn";
    int bad = 0;
    char n[32];
    for (int l = 0; l < st->nblocks; l++) {
        block *b = &st->blocks[l];
        if (c->kind == RL_MODEL_TRANSFORMER) {
            snprintf(n, sizeof n, "ln1_%d", l);
            bad |= ln_acts_new(m, &b->a1, n);
            snprintf(n, sizeof n, "q%d", l), b->q_a = act_new(m, n, h, "h");
            snprintf(n, sizeof n, "k%d", l), b->k_a = act_new(m, n, h, "h");
            snprintf(n, sizeof n, "v%d", l), b->v_a = act_new(m, n, h, "h");
            snprintf(n, sizeof n, "att%d", l), b->att = act_new(m, n, h, "h");
            snprintf(n, sizeof n, "mid%d", l), b->mid = act_new(m, n, h, "h");
            int64_t ps[4] = { B, c->heads, S, S };
            snprintf(n, sizeof n, "probs%d", l);
            b->probs = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_ACTIVATION, 4, ps, "b,nh,s,s");
            bad |= !b->q_a || !b->k_a || !b->v_a || !b->att || !b->mid || !b->probs;
        }
        snprintf(n, sizeof n, "ln%d", l);
        bad |= ln_acts_new(m, &b->a2, n);
        if (c->kind == RL_MODEL_MOE) {
            int64_t rs[2] = { B, c->experts };
            snprintf(n, sizeof n, "router%d", l);
            b->rlogits = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_ACTIVATION, 2, rs, "b,e");
            snprintf(n, sizeof n, "rprobs%d", l);
            b->rprobs = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_ACTIVATION, 2, rs, "b,e");
            b->routing.expert = calloc((size_t)(B * c->top_k), sizeof(int));
            b->routing.weight = calloc((size_t)(B * c->top_k), sizeof(float));
            b->routing.probs = calloc((size_t)(B * c->experts), sizeof(float));
            if (!b->e_x) {
                b->e_count = calloc((size_t)c->experts, sizeof(int64_t));
                b->e_rows = calloc((size_t)c->experts, sizeof(int64_t *));
                b->e_slot = calloc((size_t)c->experts, sizeof(int64_t *));
                b->e_weight = calloc((size_t)c->experts, sizeof(float *));
                b->e_x = calloc((size_t)c->experts, sizeof(rl_tensor *));
                b->e_pre = calloc((size_t)c->experts, sizeof(rl_tensor *));
                b->e_act = calloc((size_t)c->experts, sizeof(rl_tensor *));
                b->e_y = calloc((size_t)c->experts, sizeof(rl_tensor *));
            }
            bad |= !b->rlogits || !b->rprobs || !b->routing.expert || !b->routing.weight || !b->routing.probs ||
                   !b->e_count || !b->e_rows || !b->e_slot || !b->e_weight || !b->e_x || !b->e_pre || !b->e_act ||
                   !b->e_y;
        } else {
            snprintf(n, sizeof n, "fc1_%d", l), b->pre = act_new(m, n, f, fdim);
            snprintf(n, sizeof n, "gelu%d", l), b->act = act_new(m, n, f, fdim);
            bad |= !b->pre || !b->act;
        }
        snprintf(n, sizeof n, "out%d", l), b->out = act_new(m, n, h, "h");
        bad |= !b->out;
    }
    if (c->kind == RL_MODEL_TRANSFORMER) {
        st->x0 = act_new(m, "emb", h, "h");
        st->lnf_a_y = act_new(m, "lnf", h, "h");
        st->lnf_mean = row_stat_new(m, "lnf.mean");
        st->lnf_rstd = row_stat_new(m, "lnf.rstd");
        st->outp = act_new(m, "logits", c->vocab, "v");
        st->d_out = act_new(m, "dlogits", c->vocab, "v");
        st->d_q = act_new(m, "dq", h, "h");
        st->d_k = act_new(m, "dk", h, "h");
        st->d_v = act_new(m, "dv", h, "h");
        st->d_att = act_new(m, "datt", h, "h");
        st->pos_ids = malloc(sizeof(int) * (size_t)st->R);
        bad |= !st->x0 || !st->lnf_a_y || !st->lnf_mean || !st->lnf_rstd || !st->d_q || !st->d_k || !st->d_v ||
               !st->d_att || !st->pos_ids;
        for (int64_t r = 0; !bad && r < st->R; r++)
            st->pos_ids[r] = (int)(r % S);
    } else {
        st->outp = act_new(m, "pred", c->out_dim, "out");
        st->d_out = act_new(m, "dpred", c->out_dim, "out");
    }
    st->d_cur = act_new(m, "dx", h, "h");
    st->d_tmp = act_new(m, "dx_branch", h, "h");
    st->d_ln = act_new(m, "dln", h, "h");
    if (c->kind != RL_MODEL_MOE)
        st->d_ffn = act_new(m, "dffn", f, fdim);
    bad |= !st->outp || !st->d_out || !st->d_cur || !st->d_tmp || !st->d_ln || (c->kind != RL_MODEL_MOE && !st->d_ffn);
    if (bad) {
        free_acts(m);
        return rl_rank_out_of_memory(m->ctx, "model: no memory for the activations of a batch of %lld",
                        (long long)B);
    }
    return 0;
}

/* ------------------------------------------------------------------ building blocks */

/* Announces the held-back ready parameters to the hook in a seeded random order. */
static int fire_ready(rl_model *m)
{
    rl_model_state *st = m->st;
    rl_rng r = rl_rng_make(st->ready_seed, st->ready_batches++);
    for (int i = st->nready - 1; i > 0; i--) {
        int j = (int)rl_rng_below(&r, (uint64_t)i + 1);
        rl_param *t = st->ready[i];
        st->ready[i] = st->ready[j];
        st->ready[j] = t;
    }
    int n = st->nready, rc = 0;
    st->nready = 0;
    for (int i = 0; i < n && !rc; i++)
        rc = m->hook(st->ready[i], m->hook_arg);
    return rc;
}

/* Marks one gradient contribution of p done; fires the grad-ready hook after the last (or
 * holds p back for fire_ready under rl_model_set_ready_order). */
static int contributed(rl_model *m, rl_param *p)
{
    if (--p->pending == 0 && m->hook && m->st->ready_window > 1) {
        m->st->ready[m->st->nready++] = p;
        return m->st->nready == m->st->ready_window ? fire_ready(m) : 0;
    }
    if (p->pending == 0 && m->hook)
        return m->hook(p, m->hook_arg);
    if (p->pending < 0)
        return rl_error(m->ctx, RL_ERR_ARG, "model: parameter '%s' got more gradient contributions than "
                        "registered (%d); is backward being run twice for one forward?", p->name, p->uses);
    return 0;
}

/* y ← x·W + b. */
static int linear_fwd(rl_model *m, const rl_tensor *x, const lin_params *lp, rl_tensor *y)
{
    TRY(rl_matmul(m->ctx, x, 0, lp->w->value, 0, y, 0.0f));
    return rl_bias_add(m->ctx, y, lp->b->value);
}

/* db += Σ dy, dW += xᵀ·dy (firing b then W), dx ← dy·Wᵀ + dx_beta·dx (dx may be NULL). */
static int linear_bwd(rl_model *m, const rl_tensor *x, const lin_params *lp, const rl_tensor *dy, rl_tensor *dx,
                      float dx_beta)
{
    TRY(rl_bias_backward(m->ctx, dy, lp->b->grad));
    TRY(contributed(m, lp->b));
    TRY(rl_matmul_backward(m->ctx, x, 0, lp->w->value, 0, dy, dx, dx_beta, lp->w->grad, 1.0f));
    return contributed(m, lp->w);
}

static int ln_fwd(rl_model *m, const rl_tensor *x, const ln_params *lp, ln_acts *a)
{
    return rl_layernorm_forward(m->ctx, x, lp->g->value, lp->b->value, LN_EPS, a->y, a->mean, a->rstd);
}

static int ln_bwd(rl_model *m, const rl_tensor *x, const ln_params *lp, const ln_acts *a, const rl_tensor *dy,
                  rl_tensor *dx)
{
    TRY(rl_layernorm_backward(m->ctx, x, lp->g->value, a->mean, a->rstd, dy, dx, lp->g->grad, lp->b->grad));
    TRY(contributed(m, lp->b));
    return contributed(m, lp->g);
}

/* out ← x + fc2(GeLU(fc1(LN(x)))). */
static int mlp_fwd(rl_model *m, block *b, const rl_tensor *x)
{
    TRY(ln_fwd(m, x, &b->ln2, &b->a2));
    TRY(linear_fwd(m, b->a2.y, &b->fc1, b->pre));
    TRY(rl_gelu_forward(m->ctx, b->pre, b->act));
    TRY(linear_fwd(m, b->act, &b->fc2, b->out));
    return rl_residual_add(m->ctx, x, b->out, b->out);
}

/* d_cur: ∂/∂out on entry, ∂/∂x on return. */
static int mlp_bwd(rl_model *m, block *b, const rl_tensor *x)
{
    rl_model_state *st = m->st;
    TRY(linear_bwd(m, b->act, &b->fc2, st->d_cur, st->d_ffn, 0.0f));
    TRY(rl_gelu_backward(m->ctx, b->pre, st->d_ffn, st->d_ffn));
    TRY(linear_bwd(m, b->a2.y, &b->fc1, st->d_ffn, st->d_ln, 0.0f));
    TRY(ln_bwd(m, x, &b->ln2, &b->a2, st->d_ln, st->d_tmp));
    return rl_add(m->ctx, st->d_cur, st->d_tmp, st->d_cur);
}

/* mid ← x + o(attention(q(LN(x)), k(..), v(..))). */
static int attn_fwd(rl_model *m, block *b, const rl_tensor *x)
{
    TRY(ln_fwd(m, x, &b->ln1, &b->a1));
    TRY(linear_fwd(m, b->a1.y, &b->q, b->q_a));
    TRY(linear_fwd(m, b->a1.y, &b->k, b->k_a));
    TRY(linear_fwd(m, b->a1.y, &b->v, b->v_a));
    TRY(rl_attention_forward(m->ctx, b->q_a, b->k_a, b->v_a, m->cfg.heads, b->probs, b->att));
    TRY(linear_fwd(m, b->att, &b->o, b->mid));
    return rl_residual_add(m->ctx, x, b->mid, b->mid);
}

static int attn_bwd(rl_model *m, block *b, const rl_tensor *x)
{
    rl_model_state *st = m->st;
    TRY(linear_bwd(m, b->att, &b->o, st->d_cur, st->d_att, 0.0f));
    TRY(rl_attention_backward(m->ctx, b->q_a, b->k_a, b->v_a, b->probs, st->d_att, m->cfg.heads, st->d_q, st->d_k,
                              st->d_v));
    TRY(linear_bwd(m, b->a1.y, &b->v, st->d_v, st->d_ln, 0.0f));
    TRY(linear_bwd(m, b->a1.y, &b->k, st->d_k, st->d_ln, 1.0f));
    TRY(linear_bwd(m, b->a1.y, &b->q, st->d_q, st->d_ln, 1.0f));
    TRY(ln_bwd(m, x, &b->ln1, &b->a1, st->d_ln, st->d_tmp));
    return rl_add(m->ctx, st->d_cur, st->d_tmp, st->d_cur);
}

/* ------------------------------------------------------------------ MoE */

/* Top-k of probs rows (best first, ties to the lower id) and weights renormalised over them. */
static void route_topk(rl_moe_routing *r)
{
    int E = r->experts, k = r->top_k;
    for (int64_t t = 0; t < r->tokens; t++) {
        const float *p = r->probs + t * E;
        int *ids = r->expert + t * k;
        float *w = r->weight + t * k;
        double s = 0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int i = 0; i < j; i++)
                    taken |= ids[i] == e;
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            ids[j] = best;
            s += p[best];
        }
        for (int j = 0; j < k; j++)
            w[j] = (float)(p[ids[j]] / s);
    }
}

/* out ← x + Σ_j w_j · expert_{e_j}(LN(x)) over each token's top-k experts. */
static int moe_fwd(rl_model *m, block *b, const rl_tensor *x)
{
    const rl_model_config *c = &m->cfg;
    int E = c->experts, k = c->top_k, h = c->hidden, f = ffn_width(c);
    int64_t T = m->st->B;
    TRY(ln_fwd(m, x, &b->ln2, &b->a2));
    TRY(linear_fwd(m, b->a2.y, &b->router, b->rlogits));
    TRY(rl_softmax_forward(m->ctx, b->rlogits, b->rprobs));
    b->routing.tokens = T;
    b->routing.experts = E;
    b->routing.top_k = k;
    TRY(rl_tensor_to_f32(b->rprobs, b->routing.probs, T * E));
    route_topk(&b->routing);
    free_moe_acts(b, E);
    TRY(rl_zero(m->ctx, b->out));
    for (int e = 0; e < E; e++) {
        int64_t n = 0;
        for (int64_t s = 0; s < T * k; s++)
            n += b->routing.expert[s] == e;
        b->e_count[e] = n;
        if (!n)
            continue;
        b->e_rows[e] = malloc(sizeof(int64_t) * (size_t)n);
        b->e_slot[e] = malloc(sizeof(int64_t) * (size_t)n);
        b->e_weight[e] = malloc(sizeof(float) * (size_t)n);
        if (!b->e_rows[e] || !b->e_slot[e] || !b->e_weight[e])
            return rl_rank_out_of_memory(m->ctx, "model: routing tokens");
        int64_t i = 0;
        for (int64_t s = 0; s < T * k; s++)
            if (b->routing.expert[s] == e) {
                b->e_rows[e][i] = s / k;
                b->e_slot[e][i] = s;
                b->e_weight[e][i++] = b->routing.weight[s];
            }
        char nm[32];
        int64_t sh[2] = { n, h }, shf[2] = { n, f };
        snprintf(nm, sizeof nm, "x_e%d", e);
        b->e_x[e] = rl_tensor_new(m->ctx, nm, RL_F32, RL_MEM_ACTIVATION, 2, sh, "tok,h");
        snprintf(nm, sizeof nm, "fc1_e%d", e);
        b->e_pre[e] = rl_tensor_new(m->ctx, nm, RL_F32, RL_MEM_ACTIVATION, 2, shf, "tok,ffn");
        snprintf(nm, sizeof nm, "gelu_e%d", e);
        b->e_act[e] = rl_tensor_new(m->ctx, nm, RL_F32, RL_MEM_ACTIVATION, 2, shf, "tok,ffn");
        snprintf(nm, sizeof nm, "y_e%d", e);
        b->e_y[e] = rl_tensor_new(m->ctx, nm, RL_F32, RL_MEM_ACTIVATION, 2, sh, "tok,h");
        if (!b->e_x[e] || !b->e_pre[e] || !b->e_act[e] || !b->e_y[e])
            return rl_rank_out_of_memory(m->ctx, "model: no memory for expert %d's activations", e);
        rl_set_tag(m->ctx, RL_TAG_EXPERT, e);
        TRY(rl_gather_rows(m->ctx, b->a2.y, b->e_rows[e], NULL, b->e_x[e]));
        TRY(linear_fwd(m, b->e_x[e], &b->e_fc1[e], b->e_pre[e]));
        TRY(rl_gelu_forward(m->ctx, b->e_pre[e], b->e_act[e]));
        TRY(linear_fwd(m, b->e_act[e], &b->e_fc2[e], b->e_y[e]));
        TRY(rl_scatter_add_rows(m->ctx, b->e_y[e], b->e_rows[e], b->e_weight[e], b->out));
        rl_set_tag(m->ctx, RL_TAG_EXPERT, -1);
    }
    return rl_residual_add(m->ctx, x, b->out, b->out);
}

static int moe_bwd(rl_model *m, block *b, const rl_tensor *x)
{
    rl_model_state *st = m->st;
    const rl_model_config *c = &m->cfg;
    int E = c->experts, k = c->top_k, h = c->hidden, f = ffn_width(c);
    int64_t T = st->B;
    float *dcur = malloc(sizeof(float) * (size_t)(T * h));
    float *dw = calloc((size_t)(T * k), sizeof(float)); /* ∂loss/∂(routing weight) per slot */
    float *dprobs = calloc((size_t)(T * E), sizeof(float));
    int rc = (!dcur || !dw || !dprobs) ? rl_rank_out_of_memory(m->ctx, "model: in MoE backward") : 0;
    if (!rc)
        rc = rl_tensor_to_f32(st->d_cur, dcur, T * h);
    if (!rc)
        rc = rl_zero(m->ctx, st->d_ln);
    for (int e = E - 1; e >= 0 && !rc; e--) {
        int64_t n = b->e_count[e];
        rl_set_tag(m->ctx, RL_TAG_EXPERT, e);
        if (n > 0) {
            int64_t sh[2] = { n, h }, shf[2] = { n, f };
            rl_tensor *dy = rl_tensor_new(m->ctx, "dy_e", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tok,h");
            rl_tensor *dx = rl_tensor_new(m->ctx, "dx_e", RL_F32, RL_MEM_ACTIVATION, 2, sh, "tok,h");
            rl_tensor *dh = rl_tensor_new(m->ctx, "dffn_e", RL_F32, RL_MEM_ACTIVATION, 2, shf, "tok,ffn");
            float *y = malloc(sizeof(float) * (size_t)(n * h));
            rc = (!dy || !dx || !dh || !y) ? rl_rank_out_of_memory(m->ctx, "model: in MoE backward") : 0;
            if (!rc)
                rc = rl_tensor_to_f32(b->e_y[e], y, n * h);
            for (int64_t i = 0; !rc && i < n; i++) { /* ∂/∂w of slot = <dout[token], y_e[i]> */
                double s = 0;
                for (int j = 0; j < h; j++)
                    s += (double)dcur[b->e_rows[e][i] * h + j] * y[i * h + j];
                dw[b->e_slot[e][i]] = (float)s;
            }
            if (!rc)
                rc = rl_gather_rows(m->ctx, st->d_cur, b->e_rows[e], b->e_weight[e], dy);
            if (!rc)
                rc = linear_bwd(m, b->e_act[e], &b->e_fc2[e], dy, dh, 0.0f);
            if (!rc)
                rc = rl_gelu_backward(m->ctx, b->e_pre[e], dh, dh);
            if (!rc)
                rc = linear_bwd(m, b->e_x[e], &b->e_fc1[e], dh, dx, 0.0f);
            if (!rc)
                rc = rl_scatter_add_rows(m->ctx, dx, b->e_rows[e], NULL, st->d_ln);
            free(y);
            rl_tensor_free(dy);
            rl_tensor_free(dx);
            rl_tensor_free(dh);
        } else { /* no tokens: the gradient is final as it is */
            rc = contributed(m, b->e_fc2[e].b);
            if (!rc)
                rc = contributed(m, b->e_fc2[e].w);
            if (!rc)
                rc = contributed(m, b->e_fc1[e].b);
            if (!rc)
                rc = contributed(m, b->e_fc1[e].w);
        }
        rl_set_tag(m->ctx, RL_TAG_EXPERT, -1);
    }
    /* w_j = p_j / S over the chosen experts: ∂/∂p_j = (dw_j − Σ_l dw_l w_l) / S. */
    for (int64_t t = 0; !rc && t < T; t++) {
        const int *ids = b->routing.expert + t * k;
        const float *w = b->routing.weight + t * k;
        const float *p = b->routing.probs + t * E;
        double s = 0, dot = 0;
        for (int j = 0; j < k; j++)
            s += p[ids[j]], dot += (double)dw[t * k + j] * w[j];
        for (int j = 0; j < k; j++)
            dprobs[t * E + ids[j]] = (float)((dw[t * k + j] - dot) / s);
    }
    if (!rc) {
        int64_t rs[2] = { T, E };
        rl_tensor *dp = rl_tensor_new(m->ctx, "drprobs", RL_F32, RL_MEM_ACTIVATION, 2, rs, "b,e");
        rc = dp ? rl_tensor_from_f32(dp, dprobs, T * E) : rl_rank_out_of_memory(m->ctx, "model: no memory left");
        if (!rc)
            rc = rl_softmax_backward(m->ctx, b->rprobs, dp, dp);
        if (!rc)
            rc = linear_bwd(m, b->a2.y, &b->router, dp, st->d_ln, 1.0f);
        rl_tensor_free(dp);
    }
    free(dcur);
    free(dw);
    free(dprobs);
    if (!rc)
        rc = ln_bwd(m, x, &b->ln2, &b->a2, st->d_ln, st->d_tmp);
    if (!rc)
        rc = rl_add(m->ctx, st->d_cur, st->d_tmp, st->d_cur);
    return rc;
}

/* ------------------------------------------------------------------ whole model */

static int unit_cb(rl_model *m, rl_unit_hook fn, int unit)
{
    return fn ? fn(&m->units[unit], m->unit_arg) : 0;
}

static int block_fwd(rl_model *m, block *b, const rl_tensor *x)
{
    b->x_in = x;
    TRY(unit_cb(m, m->pre_forward, b->unit));
    rl_set_tag(m->ctx, RL_TAG_LAYER, b->layer);
    int rc = 0;
    if (m->cfg.kind == RL_MODEL_TRANSFORMER) {
        rc = attn_fwd(m, b, x);
        if (!rc)
            rc = mlp_fwd(m, b, b->mid);
    } else if (m->cfg.kind == RL_MODEL_MLP) {
        rc = mlp_fwd(m, b, x);
    } else {
        rc = moe_fwd(m, b, x);
    }
    rl_set_tag(m->ctx, RL_TAG_LAYER, -1);
    return rc ? rc : unit_cb(m, m->post_forward, b->unit);
}

static int block_bwd(rl_model *m, block *b)
{
    TRY(unit_cb(m, m->pre_backward, b->unit));
    rl_set_tag(m->ctx, RL_TAG_LAYER, b->layer);
    int rc = 0;
    if (m->cfg.kind == RL_MODEL_TRANSFORMER) {
        rc = mlp_bwd(m, b, b->mid);
        if (!rc)
            rc = attn_bwd(m, b, b->x_in);
    } else if (m->cfg.kind == RL_MODEL_MLP) {
        rc = mlp_bwd(m, b, b->x_in);
    } else {
        rc = moe_bwd(m, b, b->x_in);
    }
    rl_set_tag(m->ctx, RL_TAG_LAYER, -1);
    return rc ? rc : unit_cb(m, m->post_backward, b->unit);
}

static int check_batch(rl_model *m, const rl_batch *bt)
{
    const rl_model_config *c = &m->cfg;
    if (!bt || bt->size < 1)
        return rl_error(m->ctx, RL_ERR_ARG, "model: empty batch; fill it with rl_data_get / rl_data_shard");
    if (c->kind == RL_MODEL_TRANSFORMER) {
        if (!bt->tokens || !bt->targets || bt->seq < 1 || bt->seq > c->seq)
            return rl_error(m->ctx, RL_ERR_ARG, "model: the transformer needs a token batch with 1 <= seq <= %d "
                            "(got seq %lld%s)", c->seq, (long long)bt->seq, bt->tokens ? "" : ", no tokens");
        return 0;
    }
    char sx[128];
    if (!bt->x || !bt->y || bt->x->numel != bt->size * c->hidden || bt->y->numel != bt->size * c->out_dim)
        return rl_error(m->ctx, RL_ERR_ARG, "model: a %s model needs a regression batch x [b, %d], y [b, %d] (got x %s)",
                        rl_model_kind_name(c->kind), c->hidden, c->out_dim,
                        bt->x ? rl_tensor_describe(bt->x, sx, sizeof sx) : "none");
    return 0;
}

static int model_forward(rl_model *m, const rl_batch *bt, float *loss)
{
    rl_model_state *st = m->st;
    const rl_model_config *c = &m->cfg;
    st->have_forward = 0;
    TRY(check_batch(m, bt));
    int64_t S = c->kind == RL_MODEL_TRANSFORMER ? bt->seq : 1;
    TRY(ensure_acts(m, bt->size, S));
    st->batch = bt;
    int head_unit = m->nunits - 1;
    const rl_tensor *x = bt->x;
    if (c->kind == RL_MODEL_TRANSFORMER) {
        TRY(unit_cb(m, m->pre_forward, 0));
        TRY(rl_embedding_forward(m->ctx, st->wte->value, bt->tokens, 0, st->x0));
        TRY(rl_embedding_forward(m->ctx, st->wpe->value, st->pos_ids, 1, st->x0));
        TRY(unit_cb(m, m->post_forward, 0));
        x = st->x0;
    }
    for (int l = 0; l < st->nblocks; l++) {
        TRY(block_fwd(m, &st->blocks[l], x));
        x = st->blocks[l].out;
    }
    TRY(unit_cb(m, m->pre_forward, head_unit));
    float l = 0;
    if (c->kind == RL_MODEL_TRANSFORMER) {
        TRY(rl_layernorm_forward(m->ctx, x, st->lnf.g->value, st->lnf.b->value, LN_EPS, st->lnf_a_y, st->lnf_mean,
                                 st->lnf_rstd));
        if (c->tie_embeddings)
            TRY(rl_matmul(m->ctx, st->lnf_a_y, 0, st->wte->value, 1, st->outp, 0.0f));
        else
            TRY(rl_matmul(m->ctx, st->lnf_a_y, 0, st->head.w->value, 0, st->outp, 0.0f));
        TRY(rl_cross_entropy(m->ctx, st->outp, bt->targets, 1.0f, NULL, &l));
    } else {
        TRY(linear_fwd(m, x, &st->head, st->outp));
        TRY(rl_mse_loss(m->ctx, st->outp, bt->y, 1.0f, NULL, &l));
    }
    TRY(unit_cb(m, m->post_forward, head_unit));
    if (loss)
        *loss = l;
    st->have_forward = 1;
    return 0;
}

static int model_backward(rl_model *m, float grad_scale)
{
    rl_model_state *st = m->st;
    const rl_model_config *c = &m->cfg;
    if (!st->have_forward)
        return rl_error(m->ctx, RL_ERR_ARG, "model_backward: no forward to go back through; call rl_model_forward "
                        "first (once per backward)");
    st->have_forward = 0;
    for (int i = 0; i < m->nparams; i++)
        m->params[i].pending = m->params[i].uses;
    st->nready = 0;
    const rl_batch *bt = st->batch;
    int head_unit = m->nunits - 1;
    int L = st->nblocks;
    const rl_tensor *xl = L ? st->blocks[L - 1].out : (c->kind == RL_MODEL_TRANSFORMER ? st->x0 : bt->x);
    float l;
    TRY(unit_cb(m, m->pre_backward, head_unit));
    if (c->kind == RL_MODEL_TRANSFORMER) {
        TRY(rl_cross_entropy(m->ctx, st->outp, bt->targets, grad_scale, st->d_out, &l));
        rl_param *w = c->tie_embeddings ? st->wte : st->head.w;
        TRY(rl_matmul_backward(m->ctx, st->lnf_a_y, 0, w->value, c->tie_embeddings, st->d_out, st->d_ln, 0.0f,
                               w->grad, 1.0f));
        TRY(contributed(m, w));
        TRY(rl_layernorm_backward(m->ctx, xl, st->lnf.g->value, st->lnf_mean, st->lnf_rstd, st->d_ln, st->d_cur,
                                  st->lnf.g->grad, st->lnf.b->grad));
        TRY(contributed(m, st->lnf.b));
        TRY(contributed(m, st->lnf.g));
    } else {
        TRY(rl_mse_loss(m->ctx, st->outp, bt->y, grad_scale, st->d_out, &l));
        TRY(linear_bwd(m, xl, &st->head, st->d_out, st->d_cur, 0.0f));
    }
    TRY(unit_cb(m, m->post_backward, head_unit));
    for (int i = L - 1; i >= 0; i--)
        TRY(block_bwd(m, &st->blocks[i]));
    if (c->kind == RL_MODEL_TRANSFORMER) {
        TRY(unit_cb(m, m->pre_backward, 0));
        TRY(rl_embedding_backward(m->ctx, st->pos_ids, st->d_cur, st->wpe->grad));
        TRY(contributed(m, st->wpe));
        TRY(rl_embedding_backward(m->ctx, bt->tokens, st->d_cur, st->wte->grad));
        TRY(contributed(m, st->wte));
        TRY(unit_cb(m, m->post_backward, 0));
    }
    return st->nready ? fire_ready(m) : 0;
}

int rl_model_forward(rl_model *m, const rl_batch *bt, float *loss)
{
    if (!m)
        return rl_error(NULL, RL_ERR_ARG, "model_forward: model is NULL");
    char keep = rl_set_region(m->ctx, 'F');
    int rc = model_forward(m, bt, loss);
    rl_set_region(m->ctx, keep);
    return rc;
}

int rl_model_backward(rl_model *m, float grad_scale)
{
    if (!m)
        return rl_error(NULL, RL_ERR_ARG, "model_backward: model is NULL");
    char keep = rl_set_region(m->ctx, 'B');
    int rc = model_backward(m, grad_scale);
    rl_set_region(m->ctx, keep);
    return rc;
}

RL_API_WATCHED
int rl_model_set_ready_order(rl_model *m, uint64_t seed, int window)
{
    RL_API_ENTRY();
    if (!m)
        return rl_error(NULL, RL_ERR_ARG, "model_set_ready_order: model is NULL");
    if (window > 1 && !m->st->ready && !(m->st->ready = calloc((size_t)m->nparams, sizeof *m->st->ready)))
        return rl_rank_out_of_memory(m->ctx, "model_set_ready_order: no memory left");
    m->st->ready_window = window > m->nparams ? m->nparams : window;
    m->st->ready_seed = seed;
    m->st->ready_batches = 0;
    return 0;
}

int rl_model_zero_grad(rl_model *m)
{
    if (!m)
        return rl_error(NULL, RL_ERR_ARG, "model_zero_grad: model is NULL");
    rl_tensor **grads = malloc((size_t)(m->nparams > 0 ? m->nparams : 1) * sizeof *grads);
    if (!grads)
        return rl_rank_out_of_memory(m->ctx, "model_zero_grad: no memory for %d gradients", m->nparams);
    int n = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].grad)
            grads[n++] = m->params[i].grad;
    int rc = rl_zero_all(m->ctx, grads, n); /* one kernel for every gradient */
    free(grads);
    return rc;
}

const rl_tensor *rl_model_output(const rl_model *m) { return m && m->st ? m->st->outp : NULL; }

const rl_moe_routing *rl_model_routing(const rl_model *m, int layer)
{
    if (!m || m->cfg.kind != RL_MODEL_MOE || layer < 0 || layer >= m->st->nblocks || !m->st->blocks[layer].routing.expert)
        return NULL;
    return &m->st->blocks[layer].routing;
}

rl_param *rl_model_find_param(rl_model *m, const char *name)
{
    for (int i = 0; m && name && i < m->nparams; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return &m->params[i];
    return NULL;
}

int64_t rl_model_numel(const rl_model *m)
{
    int64_t n = 0;
    for (int i = 0; m && i < m->nparams; i++)
        n += m->params[i].numel;
    return n;
}

double rl_model_forward_flops(const rl_model *m, int64_t batch)
{
    if (!m)
        return 0;
    const rl_model_config *c = &m->cfg;
    double h = c->hidden, f = ffn_width(c), L = c->layers;
    if (c->kind == RL_MODEL_TRANSFORMER) {
        double R = (double)batch * c->seq, S = c->seq;
        return L * (4 * 2 * R * h * h + 2 * 2 * R * h * f + 2 * batch * S * S * h) + 2 * R * h * c->vocab;
    }
    double B = (double)batch;
    if (c->kind == RL_MODEL_MOE)
        return L * (2 * B * h * c->experts + c->top_k * 2 * 2 * B * h * f) + 2 * B * h * c->out_dim;
    return L * 2 * 2 * B * h * f + 2 * B * h * c->out_dim;
}

void rl_model_free(rl_model *m)
{
    if (!m)
        return;
    if (m->st) {
        free_acts(m);
        for (int l = 0; l < m->st->nblocks && m->st->blocks; l++) {
            block *b = &m->st->blocks[l];
            free(b->e_fc1);
            free(b->e_fc2);
            free(b->e_count);
            free(b->e_rows);
            free(b->e_slot);
            free(b->e_weight);
            free(b->e_x);
            free(b->e_pre);
            free(b->e_act);
            free(b->e_y);
        }
        free(m->st->blocks);
        free(m->st->ready);
    }
    for (int i = 0; m->params && i < m->nparams; i++) {
        rl_tensor_free(m->params[i].own_value);
        rl_tensor_free(m->params[i].own_grad);
    }
    for (int u = 0; m->units && u < m->nunits; u++)
        free(m->units[u].params);
    free(m->units);
    free(m->params);
    free(m->st);
    free(m);
}

/* ------------------------------------------------------------------ AdamW over a model */

rl_model_optim *rl_model_adamw_new(rl_model *m, rl_adamw_cfg cfg)
{
    if (!m) {
        rl_error(NULL, RL_ERR_ARG, "adamw: model is NULL");
        return NULL;
    }
    rl_model_optim *o = calloc(1, sizeof *o);
    if (o) {
        o->m = m;
        o->cfg = cfg;
        o->master = calloc((size_t)m->nparams, sizeof *o->master);
        o->mom = calloc((size_t)m->nparams, sizeof *o->mom);
        o->var = calloc((size_t)m->nparams, sizeof *o->var);
    }
    int bad = !o || !o->master || !o->mom || !o->var;
    for (int i = 0; !bad && i < m->nparams; i++) {
        rl_param *p = &m->params[i];
        char n[48];
        snprintf(n, sizeof n, "%s.m", p->name);
        o->mom[i] = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_OPTIM, p->ndim, p->shape, p->dims);
        snprintf(n, sizeof n, "%s.v", p->name);
        o->var[i] = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_OPTIM, p->ndim, p->shape, p->dims);
        bad = !o->mom[i] || !o->var[i];
        if (!bad && m->cfg.param_dtype != RL_F32) {
            snprintf(n, sizeof n, "%s.master", p->name);
            o->master[i] = rl_tensor_new(m->ctx, n, RL_F32, RL_MEM_OPTIM, p->ndim, p->shape, p->dims);
            bad = !o->master[i] || rl_tensor_copy(o->master[i], p->value);
        }
    }
    if (bad) {
        rl_model_optim_free(o);
        rl_rank_out_of_memory(m->ctx, "adamw: no memory for the optimizer state");
        return NULL;
    }
    return o;
}

int rl_model_adamw_step(rl_model_optim *o)
{
    if (!o)
        return rl_error(NULL, RL_ERR_ARG, "adamw: optimizer is NULL");
    o->step++;
    for (int i = 0; i < o->m->nparams; i++) {
        rl_param *p = &o->m->params[i];
        TRY(rl_adamw_step(o->m->ctx, &o->cfg, o->step, p->value, p->grad, o->master[i], o->mom[i], o->var[i]));
    }
    return 0;
}

void rl_model_optim_free(rl_model_optim *o)
{
    if (!o)
        return;
    for (int i = 0; o->m && i < o->m->nparams; i++) {
        if (o->master)
            rl_tensor_free(o->master[i]);
        if (o->mom)
            rl_tensor_free(o->mom[i]);
        if (o->var)
            rl_tensor_free(o->var[i]);
    }
    free(o->master);
    free(o->mom);
    free(o->var);
    free(o);
}
