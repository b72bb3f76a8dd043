/* mp_support.c — the parts of Lab 30 you do not write: freeing, the LayerNorm half-block
 * around your MLP, the pipeline stage's compute (one GeLU layer per virtual stage, modelled
 * time, trace tags), the lab's data, one-rank dense references built from common/ ops, and
 * whole runs with their measurements (driver and grader). Not edited by learners. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "apiwatch.h"
#include "mp.h"
#include "tui.h"

/* ================================================================== data and references */

void mp_fill(rl_tensor *t, uint64_t seed, float scale)
{
    rl_rng g = rl_rng_make(seed, 30);
    for (int64_t i = 0; i < t->numel; i++)
        rl_tensor_set(t, i, (float)(2.0 * rl_rng_uniform(&g) - 1.0) * scale);
}

static rl_tensor *new2(rl_ctx *ctx, const char *name, rl_mem_cat cat, int64_t r, int64_t c, const char *dims)
{
    int64_t s[2] = { r, c };
    return rl_tensor_new(ctx, name, RL_F32, cat, 2, s, dims);
}

RL_API_WATCHED
int mp_dense_mlp(rl_ctx *ctx, const rl_tensor *x, const rl_tensor *w1, const rl_tensor *b1, const rl_tensor *w2,
                 const rl_tensor *b2, rl_tensor *y)
{
    RL_API_ENTRY();
    int64_t h = w1->shape[0], f = w1->shape[1], rows = x->numel / h;
    rl_tensor *a = new2(ctx, "dense_pre", RL_MEM_ACTIVATION, rows, f, "rows,4h");
    rl_tensor *g = new2(ctx, "dense_act", RL_MEM_ACTIVATION, rows, f, "rows,4h");
    int rc = rl_matmul(ctx, x, 0, w1, 0, a, 0);
    rc = rc ? rc : rl_bias_add(ctx, a, b1);
    rc = rc ? rc : rl_gelu_forward(ctx, a, g);
    rc = rc ? rc : rl_matmul(ctx, g, 0, w2, 0, y, 0);
    rc = rc ? rc : rl_bias_add(ctx, y, b2);
    rl_tensor_free(a);
    rl_tensor_free(g);
    return rc;
}

rl_tensor *mp_rows(rl_ctx *ctx, const rl_tensor *t, int64_t r0, int64_t n, int ndim, const int64_t *shape,
                   const char *dims)
{
    int64_t cols = t->shape[t->ndim - 1];
    rl_tensor *o = rl_tensor_new(ctx, "rows", RL_F32, RL_MEM_OTHER, ndim, shape, dims);
    if (!o)
        return NULL;
    for (int64_t i = 0; i < n * cols && i < o->numel; i++)
        rl_tensor_set(o, i, rl_tensor_get(t, r0 * cols + i));
    return o;
}

/* max |a−b| / max(|b|, floor) over the numel of b, a read from offset ao of a flat view */
static double rel_err(const rl_tensor *a, const rl_tensor *b)
{
    if (!a || !b || a->numel != b->numel)
        return INFINITY;
    return rl_tensor_max_rel_diff(a, b, 1e-2);
}

/* ================================================================== frees and the block */

void tp_mlp_free(tp_mlp *m)
{
    if (!m)
        return;
    rl_tensor *ts[] = { m->w1, m->b1, m->w2, m->b2, m->dw1, m->db1, m->dw2, m->db2, m->x_in, m->hpre, m->hact };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    memset(m, 0, sizeof *m);
}

void tp_attn_free(tp_attn *a)
{
    if (!a)
        return;
    rl_tensor_free(a->wq);
    rl_tensor_free(a->wk);
    rl_tensor_free(a->wv);
    rl_tensor_free(a->wo);
    memset(a, 0, sizeof *a);
}

static void block_free_saved(tp_block *b)
{
    rl_tensor *ts[] = { b->x, b->ln, b->mean, b->rstd, b->dln };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    b->x = b->ln = b->mean = b->rstd = b->dln = NULL;
}

int tp_block_init(tp_block *blk, rl_comm *tp, const rl_tensor *w1, const rl_tensor *b1, const rl_tensor *w2,
                  const rl_tensor *b2, int sequence_parallel, uint64_t seed)
{
    memset(blk, 0, sizeof *blk);
    int rc = tp_mlp_init(&blk->mlp, tp, w1, b1, w2, b2, sequence_parallel);
    if (rc)
        return rc;
    rl_ctx *ctx = rl_comm_ctx(tp);
    int64_t h = w1->shape[0];
    blk->gamma = rl_tensor_new(ctx, "ln_gamma", RL_F32, RL_MEM_PARAM, 1, &h, "h");
    blk->beta = rl_tensor_new(ctx, "ln_beta", RL_F32, RL_MEM_PARAM, 1, &h, "h");
    blk->dgamma = rl_tensor_new(ctx, "ln_dgamma", RL_F32, RL_MEM_GRAD, 1, &h, "h");
    blk->dbeta = rl_tensor_new(ctx, "ln_dbeta", RL_F32, RL_MEM_GRAD, 1, &h, "h");
    if (!blk->gamma || !blk->beta || !blk->dgamma || !blk->dbeta)
        return RL_ERR_NOMEM;
    mp_fill(blk->gamma, seed + 1, 0.1f);
    for (int64_t i = 0; i < h; i++)
        rl_tensor_set(blk->gamma, i, 1.0f + rl_tensor_get(blk->gamma, i));
    mp_fill(blk->beta, seed + 2, 0.1f);
    return 0;
}

int tp_block_forward(tp_block *blk, const rl_tensor *x, rl_tensor *y)
{
    rl_ctx *ctx = blk->mlp.ctx;
    block_free_saved(blk);
    int64_t rows = x->numel / blk->mlp.h;
    blk->x = rl_tensor_new(ctx, "block_x", RL_F32, RL_MEM_ACTIVATION, x->ndim, x->shape, NULL);
    blk->ln = rl_tensor_new(ctx, "ln_out", RL_F32, RL_MEM_ACTIVATION, x->ndim, x->shape, NULL);
    blk->mean = rl_tensor_new_1d(ctx, "ln_mean", RL_F32, RL_MEM_ACTIVATION, rows);
    blk->rstd = rl_tensor_new_1d(ctx, "ln_rstd", RL_F32, RL_MEM_ACTIVATION, rows);
    if (!blk->x || !blk->ln || !blk->mean || !blk->rstd)
        return RL_ERR_NOMEM;
    for (int i = 0; i < x->ndim; i++) {
        memcpy(blk->x->dims[i], x->dims[i], RL_DIM_NAME);
        memcpy(blk->ln->dims[i], x->dims[i], RL_DIM_NAME);
    }
    int rc = rl_copy(ctx, blk->x, x);
    rc = rc ? rc : rl_layernorm_forward(ctx, x, blk->gamma, blk->beta, 1e-5f, blk->ln, blk->mean, blk->rstd);
    rc = rc ? rc : tp_mlp_forward(&blk->mlp, blk->ln, y);
    rc = rc ? rc : rl_residual_add(ctx, blk->x, y, y);
    return rc;
}

int tp_block_backward(tp_block *blk, const rl_tensor *dy, rl_tensor *dx)
{
    rl_ctx *ctx = blk->mlp.ctx;
    if (!blk->x)
        return rl_error(ctx, RL_ERR_ARG, "tp_block_backward: run the forward first");
    rl_tensor_free(blk->dln);
    blk->dln = rl_tensor_new(ctx, "d_ln_out", RL_F32, RL_MEM_ACTIVATION, dy->ndim, dy->shape, NULL);
    if (!blk->dln)
        return RL_ERR_NOMEM;
    int rc = tp_mlp_backward(&blk->mlp, dy, blk->dln);
    rc = rc ? rc : rl_layernorm_backward(ctx, blk->x, blk->gamma, blk->mean, blk->rstd, blk->dln, dx, blk->dgamma,
                                         blk->dbeta);
    rc = rc ? rc : rl_axpy(ctx, 1.0f, dy, dx); /* the residual */
    return rc;
}

void tp_block_free(tp_block *blk)
{
    if (!blk)
        return;
    block_free_saved(blk);
    tp_mlp_free(&blk->mlp);
    rl_tensor_free(blk->gamma);
    rl_tensor_free(blk->beta);
    rl_tensor_free(blk->dgamma);
    rl_tensor_free(blk->dbeta);
    memset(blk, 0, sizeof *blk);
}

/* ================================================================== the pipeline stage */

void pp_weight_init(rl_tensor *w, int vs, uint64_t seed)
{
    mp_fill(w, seed * 1000 + 100 + (uint64_t)vs, 1.5f / sqrtf((float)w->shape[0]));
}
void pp_input(rl_tensor *x, int mb, uint64_t seed) { mp_fill(x, seed * 1000 + 200 + (uint64_t)mb, 1.0f); }
void pp_target(rl_tensor *y, int mb, uint64_t seed) { mp_fill(y, seed * 1000 + 500 + (uint64_t)mb, 0.5f); }

pp_stage *pp_stage_new(rl_comm *world, int m, int v, int64_t rows, int64_t h, double t_f, double t_b, uint64_t seed)
{
    rl_ctx *ctx = rl_comm_ctx(world);
    if (m < 1 || m > MP_MAX_MB || v < 1 || v > MP_MAX_CHUNKS || rows < 1 || h < 1)
        return rl_error(ctx, RL_ERR_ARG, "pp_stage_new: need 1 <= m <= %d, 1 <= v <= %d, rows, h >= 1", MP_MAX_MB,
                        MP_MAX_CHUNKS), NULL;
    pp_stage *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->ctx = ctx;
    st->p = rl_comm_size(world);
    st->rank = rl_comm_rank(world);
    st->m = m;
    st->v = v;
    st->rows = rows;
    st->h = h;
    st->t_f = t_f;
    st->t_b = t_b;
    st->seed = seed;
    st->act_comm = rl_comm_split(world, 0, 0);
    st->grad_comm = rl_comm_split(world, 0, 0);
    rl_comm_set_role(st->act_comm, "pp");
    rl_comm_set_role(st->grad_comm, "pp");
    int bad = !st->act_comm || !st->grad_comm;
    for (int c = 0; c < v && !bad; c++) {
        st->w[c] = new2(ctx, "pp_w", RL_MEM_PARAM, h, h, "h,h");
        st->dw[c] = new2(ctx, "pp_dw", RL_MEM_GRAD, h, h, "h,h");
        bad = !st->w[c] || !st->dw[c];
        if (!bad)
            pp_weight_init(st->w[c], c * st->p + st->rank, seed);
    }
    if (bad) {
        pp_stage_free(st);
        return NULL;
    }
    st->act_base = rl_ctx_mem(ctx)->current[RL_MEM_ACTIVATION];
    st->comm_base = rl_ctx_mem(ctx)->current[RL_MEM_COMM];
    st->comm_min = -1;
    return st;
}

/* Memory at the start of an op: activations beyond the saved tensors of the live (mb, chunk),
 * and, for an op that received its input, the comm bytes in use. */
static void pp_mem_seen(pp_stage *st, int received)
{
    const rl_mem_account *acc = rl_ctx_mem(st->ctx);
    int64_t extra = acc->current[RL_MEM_ACTIVATION] - st->act_base - (int64_t)st->live * 2 * st->rows * st->h * 4;
    if (extra > st->act_extra)
        st->act_extra = extra;
    int64_t comm = acc->current[RL_MEM_COMM] - st->comm_base;
    if (received && (st->comm_min < 0 || comm < st->comm_min))
        st->comm_min = comm;
}

void pp_stage_free(pp_stage *st)
{
    if (!st)
        return;
    for (int c = 0; c < MP_MAX_CHUNKS; c++) {
        rl_tensor_free(st->w[c]);
        rl_tensor_free(st->dw[c]);
        for (int k = 0; k < MP_MAX_MB; k++) {
            rl_tensor_free(st->saved_in[c][k]);
            rl_tensor_free(st->saved_pre[c][k]);
        }
    }
    rl_comm_free(st->act_comm);
    rl_comm_free(st->grad_comm);
    free(st);
}

static int pp_check(pp_stage *st, int mb, int chunk, const char *what)
{
    if (!st || mb < 0 || mb >= st->m || chunk < 0 || chunk >= st->v)
        return rl_error(st ? st->ctx : NULL, RL_ERR_ARG, "%s: micro-batch %d chunk %d is out of range (m = %d, v = %d)",
                        what, mb, chunk, st ? st->m : 0, st ? st->v : 0);
    return 0;
}

int pp_stage_forward(pp_stage *st, int mb, int chunk, const rl_tensor *in, rl_tensor *out)
{
    int rc = pp_check(st, mb, chunk, "pp_stage_forward");
    if (rc)
        return rc;
    rl_ctx *ctx = st->ctx;
    int vs = chunk * st->p + st->rank, V = st->v * st->p;
    if (st->saved_in[chunk][mb])
        return rl_error(ctx, RL_ERR_ARG, "stage %d: F of micro-batch %d chunk %d ran twice", st->rank, mb, chunk);
    if ((vs > 0) != (in != NULL) || (vs < V - 1) != (out != NULL))
        return rl_error(ctx, RL_ERR_ARG, "stage %d: F of virtual stage %d (micro-batch %d) needs %s input and %s "
                        "output tensor (rl_pp_op_peers: receive from the previous stage unless vs = 0, send unless "
                        "vs = V-1 = %d)", st->rank, vs, mb, vs > 0 ? "an" : "no", vs < V - 1 ? "an" : "no", V - 1);
    pp_mem_seen(st, in != NULL);
    rl_pp_op op = { 'F', mb, chunk };
    rl_pp_mark(ctx, st->rank, &op);
    rl_tensor *x = new2(ctx, "pp_x", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
    rl_tensor *pre = new2(ctx, "pp_pre", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
    rc = x && pre ? 0 : RL_ERR_NOMEM;
    if (!rc) {
        if (vs == 0)
            pp_input(x, mb, st->seed);
        else
            rc = rl_copy(ctx, x, in);
    }
    rc = rc ? rc : rl_matmul(ctx, x, 0, st->w[chunk], 0, pre, 0);
    if (!rc && out)
        rc = rl_gelu_forward(ctx, pre, out);
    if (!rc && !out) {
        rl_tensor *y = new2(ctx, "pp_y", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
        rl_tensor *tg = new2(ctx, "pp_target", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
        float l = 0;
        rc = y && tg ? 0 : RL_ERR_NOMEM;
        if (!rc)
            pp_target(tg, mb, st->seed);
        rc = rc ? rc : rl_gelu_forward(ctx, pre, y);
        rc = rc ? rc : rl_mse_loss(ctx, y, tg, 1.0f, NULL, &l);
        st->loss += l / (float)st->m;
        rl_tensor_free(y);
        rl_tensor_free(tg);
    }
    rl_compute_delay(ctx, "stage_forward", st->t_f / st->v);
    rl_pp_unmark(ctx);
    st->saved_in[chunk][mb] = x;
    st->saved_pre[chunk][mb] = pre;
    if (++st->live > st->peak_live)
        st->peak_live = st->live;
    return rc;
}

int pp_stage_backward(pp_stage *st, int mb, int chunk, const rl_tensor *dout, rl_tensor *din)
{
    int rc = pp_check(st, mb, chunk, "pp_stage_backward");
    if (rc)
        return rc;
    rl_ctx *ctx = st->ctx;
    int vs = chunk * st->p + st->rank, V = st->v * st->p;
    rl_tensor *x = st->saved_in[chunk][mb], *pre = st->saved_pre[chunk][mb];
    if (!x)
        return rl_error(ctx, RL_ERR_ARG, "stage %d: B of micro-batch %d chunk %d before its F (a dependency violation)",
                        st->rank, mb, chunk);
    if ((vs < V - 1) != (dout != NULL) || (vs > 0) != (din != NULL))
        return rl_error(ctx, RL_ERR_ARG, "stage %d: B of virtual stage %d (micro-batch %d) needs %s incoming gradient "
                        "and %s outgoing one", st->rank, vs, mb, vs < V - 1 ? "an" : "no", vs > 0 ? "an" : "no");
    pp_mem_seen(st, dout != NULL);
    rl_pp_op op = { 'B', mb, chunk };
    rl_pp_mark(ctx, st->rank, &op);
    rl_tensor *da = new2(ctx, "pp_dact", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
    rl_tensor *dp = new2(ctx, "pp_dpre", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
    rc = da && dp ? 0 : RL_ERR_NOMEM;
    if (!rc && !dout) {
        rl_tensor *y = new2(ctx, "pp_y", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
        rl_tensor *tg = new2(ctx, "pp_target", RL_MEM_ACTIVATION, st->rows, st->h, "b,h");
        float l = 0;
        rc = y && tg ? 0 : RL_ERR_NOMEM;
        if (!rc)
            pp_target(tg, mb, st->seed);
        rc = rc ? rc : rl_gelu_forward(ctx, pre, y);
        rc = rc ? rc : rl_mse_loss(ctx, y, tg, 1.0f / (float)st->m, da, &l);
        rl_tensor_free(y);
        rl_tensor_free(tg);
    } else if (!rc) {
        rc = rl_copy(ctx, da, dout);
    }
    rc = rc ? rc : rl_gelu_backward(ctx, pre, da, dp);
    rc = rc ? rc : rl_matmul_backward(ctx, x, 0, st->w[chunk], 0, dp, din, 0, st->dw[chunk], 1);
    rl_compute_delay(ctx, "stage_backward", st->t_b / st->v);
    rl_pp_unmark(ctx);
    rl_tensor_free(da);
    rl_tensor_free(dp);
    rl_tensor_free(x);
    rl_tensor_free(pre);
    st->saved_in[chunk][mb] = st->saved_pre[chunk][mb] = NULL;
    st->live--;
    return rc;
}

RL_API_WATCHED
int mp_pp_reference(const mp_config *cfg, int v, float *dw, double *loss)
{
    RL_API_ENTRY();
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int V = cfg->p * v, m = cfg->m;
    int64_t rows = cfg->pp_rows, h = cfg->h;
    rl_tensor **w = calloc((size_t)V, sizeof *w), **g = calloc((size_t)V, sizeof *g);
    rl_tensor **xs = calloc((size_t)V + 1, sizeof *xs), **pres = calloc((size_t)V, sizeof *pres);
    int rc = w && g && xs && pres ? 0 : RL_ERR_NOMEM;
    for (int i = 0; i < V && !rc; i++) {
        w[i] = new2(ctx, "w", RL_MEM_PARAM, h, h, "h,h");
        g[i] = new2(ctx, "g", RL_MEM_GRAD, h, h, "h,h");
        pres[i] = new2(ctx, "pre", RL_MEM_ACTIVATION, rows, h, "b,h");
        pp_weight_init(w[i], i, cfg->seed);
    }
    for (int i = 0; i <= V && !rc; i++)
        xs[i] = new2(ctx, "x", RL_MEM_ACTIVATION, rows, h, "b,h");
    rl_tensor *tg = new2(ctx, "tg", RL_MEM_OTHER, rows, h, "b,h"), *d = new2(ctx, "d", RL_MEM_OTHER, rows, h, "b,h");
    rl_tensor *dp = new2(ctx, "dp", RL_MEM_OTHER, rows, h, "b,h");
    *loss = 0;
    for (int mb = 0; mb < m && !rc; mb++) {
        pp_input(xs[0], mb, cfg->seed);
        for (int i = 0; i < V && !rc; i++) {
            rc = rl_matmul(ctx, xs[i], 0, w[i], 0, pres[i], 0);
            rc = rc ? rc : rl_gelu_forward(ctx, pres[i], xs[i + 1]);
        }
        float l = 0;
        pp_target(tg, mb, cfg->seed);
        rc = rc ? rc : rl_mse_loss(ctx, xs[V], tg, 1.0f / (float)m, d, &l);
        *loss += l / m;
        for (int i = V - 1; i >= 0 && !rc; i--) {
            rc = rl_gelu_backward(ctx, pres[i], d, dp);
            rc = rc ? rc : rl_matmul_backward(ctx, xs[i], 0, w[i], 0, dp, d, 0, g[i], 1);
        }
    }
    for (int i = 0; i < V && !rc; i++)
        rc = rl_tensor_to_f32(g[i], dw + (int64_t)i * h * h, h * h);
    for (int i = 0; i < V; i++) {
        rl_tensor_free(w[i]);
        rl_tensor_free(g[i]);
        rl_tensor_free(pres[i]);
    }
    for (int i = 0; i <= V; i++)
        rl_tensor_free(xs[i]);
    rl_tensor_free(tg);
    rl_tensor_free(d);
    rl_tensor_free(dp);
    free(w), free(g), free(xs), free(pres);
    rl_ctx_free_standalone(ctx);
    return rc;
}

/* ================================================================== runs */

mp_config mp_config_default(void)
{
    mp_config c;
    memset(&c, 0, sizeof c);
    rl_opts_init(&c.opts);
    c.b = 2;
    c.s = 32;
    c.h = 64;
    c.heads = 8;
    c.p = 4;
    c.m = 8;
    c.v = 2;
    c.pp_rows = 16;
    c.t_f = 1e-3;
    c.t_b = 2e-3;
    c.schedule = RL_PP_1F1B;
    c.seed = 30;
    return c;
}

typedef struct run_ctx {
    const mp_config *cfg;
    mp_stats *st;
    int part;                  /* index 0..4 */
    rl_pp_schedule *sched;
    float *pp_dw;              /* V·h·h gathered from the stages */
    double pp_loss;
    pthread_mutex_t lock;
} run_ctx;

static void set_err(run_ctx *rc, rl_ctx *ctx, int code, const char *what)
{
    pthread_mutex_lock(&rc->lock);
    if (!rc->st->rc[rc->part]) {
        rc->st->rc[rc->part] = code;
        const char *m = rl_last_error(ctx);
        snprintf(rc->st->err[rc->part], sizeof rc->st->err[0], "rank %d: %s returned %d (%s)%s%s", rl_rank(ctx), what,
                 code, rl_status_name(code), m[0] ? ": " : "", m);
    }
    pthread_mutex_unlock(&rc->lock);
}

static void upd(run_ctx *rc, double *dst, double v)
{
    pthread_mutex_lock(&rc->lock);
    if (!(v <= *dst))
        *dst = v;
    pthread_mutex_unlock(&rc->lock);
}

static void upd_i(run_ctx *rc, int64_t *dst, int64_t v)
{
    pthread_mutex_lock(&rc->lock);
    if (v > *dst)
        *dst = v;
    pthread_mutex_unlock(&rc->lock);
}

/* the dense MLP weights every rank builds the same way */
typedef struct dense_w { rl_tensor *w1, *b1, *w2, *b2; } dense_w;

static int dense_new(rl_ctx *ctx, const mp_config *cfg, dense_w *d)
{
    int64_t h = cfg->h, f = 4 * h;
    d->w1 = new2(ctx, "A", RL_MEM_OTHER, h, f, "h,4h");
    d->b1 = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_OTHER, f);
    d->w2 = new2(ctx, "B", RL_MEM_OTHER, f, h, "4h,h");
    d->b2 = rl_tensor_new_1d(ctx, "c", RL_F32, RL_MEM_OTHER, h);
    if (!d->w1 || !d->b1 || !d->w2 || !d->b2)
        return RL_ERR_NOMEM;
    mp_fill(d->w1, cfg->seed + 11, 1.0f / sqrtf((float)h));
    mp_fill(d->b1, cfg->seed + 12, 0.1f);
    mp_fill(d->w2, cfg->seed + 13, 1.0f / sqrtf((float)f));
    mp_fill(d->b2, cfg->seed + 14, 0.1f);
    return 0;
}

static void dense_free(dense_w *d)
{
    rl_tensor_free(d->w1), rl_tensor_free(d->b1), rl_tensor_free(d->w2), rl_tensor_free(d->b2);
}

static int64_t issued(rl_comm *c, int kind) { return rl_comm_get_counters(c).issued[kind]; }
static int64_t issued_all(rl_comm *c)
{
    int64_t s = 0;
    for (int k = 0; k < RL_COLL_NKINDS; k++)
        s += rl_comm_get_counters(c).issued[k];
    return s;
}

/* 30.1: TP MLP forward + backward vs the dense layer and its gradients */
static int part_tp(rl_ctx *ctx, run_ctx *rc)
{
    const mp_config *cfg = rc->cfg;
    rl_comm *w = rl_comm_world(ctx);
    int t = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t h = cfg->h, f = 4 * h, fl = f / t, shape[3] = { cfg->b, cfg->s, h };
    dense_w d;
    tp_mlp m;
    memset(&m, 0, sizeof m);
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    rl_tensor *dy = rl_tensor_new(ctx, "dy", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    rl_tensor *dx = rl_tensor_new(ctx, "dx", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    int e = dense_new(ctx, cfg, &d);
    if (e || !x || !y || !dy || !dx)
        return RL_ERR_NOMEM;
    mp_fill(x, cfg->seed + 21, 1.0f);
    mp_fill(dy, cfg->seed + 22, 1.0f);
    rl_clear_error(ctx);
    e = tp_mlp_init(&m, w, d.w1, d.b1, d.w2, d.b2, 0);
    if (e) {
        set_err(rc, ctx, e, "tp_mlp_init");
        goto out;
    }
    int ok = m.w1 && m.w1->ndim == 2 && m.w1->shape[0] == h && m.w1->shape[1] == fl && !strcmp(m.w1->dims[1], "4h/t") &&
             m.w2 && m.w2->ndim == 2 && m.w2->shape[0] == fl && m.w2->shape[1] == h && !strcmp(m.w2->dims[0], "4h/t") &&
             m.b1 && m.b1->numel == fl && m.b2 && m.b2->numel == h && m.dw1 && rl_tensor_same_shape(m.dw1, m.w1) &&
             m.dw2 && rl_tensor_same_shape(m.dw2, m.w2) && m.db1 && m.db1->numel == fl && m.db2 && m.db2->numel == h;
    if (ok) { /* the right slices */
        for (int64_t i = 0; i < h && ok; i++)
            for (int64_t j = 0; j < fl && ok; j++)
                ok = rl_tensor_get(m.w1, i * fl + j) == rl_tensor_get(d.w1, i * f + r * fl + j) &&
                     rl_tensor_get(m.w2, j * h + i) == rl_tensor_get(d.w2, (r * fl + j) * h + i);
    }
    if (r == 0 && m.w1 && m.w2) {
        rl_tensor_describe(m.w1, rc->st->w1_shape, sizeof rc->st->w1_shape);
        rl_tensor_describe(m.w2, rc->st->w2_shape, sizeof rc->st->w2_shape);
    }
    pthread_mutex_lock(&rc->lock);
    rc->st->shapes_ok = rc->st->shapes_ok && ok;
    pthread_mutex_unlock(&rc->lock);
    int64_t a0 = issued(w, RL_COLL_ALL_REDUCE), o0 = issued_all(w);
    rl_clear_error(ctx);
    e = tp_mlp_forward(&m, x, y);
    if (e) {
        set_err(rc, ctx, e, "tp_mlp_forward");
        return 0; /* a call of it may still be in flight: leave the tensors to the run */
    }
    int64_t a1 = issued(w, RL_COLL_ALL_REDUCE), o1 = issued_all(w);
    if (r == 0 && m.hpre)
        rl_tensor_describe(m.hpre, rc->st->hpre_shape, sizeof rc->st->hpre_shape);
    e = tp_mlp_backward(&m, dy, dx);
    if (e) {
        set_err(rc, ctx, e, "tp_mlp_backward");
        return 0; /* a call of it may still be in flight: leave the tensors to the run */
    }
    int64_t a2 = issued(w, RL_COLL_ALL_REDUCE), o2 = issued_all(w);
    upd_i(rc, &rc->st->ar_fwd, a1 - a0);
    upd_i(rc, &rc->st->ar_bwd, a2 - a1);
    upd_i(rc, &rc->st->other_fwd, (o1 - o0) - (a1 - a0));
    upd_i(rc, &rc->st->other_bwd, (o2 - o1) - (a2 - a1));
    /* the dense reference and its gradients on this rank (one rank, common/ ops) */
    {
        int64_t rows = cfg->b * cfg->s;
        rl_tensor *ry = rl_tensor_new(ctx, "ref_y", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *pre = new2(ctx, "ref_pre", RL_MEM_OTHER, rows, f, "rows,4h");
        rl_tensor *act = new2(ctx, "ref_act", RL_MEM_OTHER, rows, f, "rows,4h");
        rl_tensor *dact = new2(ctx, "ref_dact", RL_MEM_OTHER, rows, f, "rows,4h");
        rl_tensor *dpre = new2(ctx, "ref_dpre", RL_MEM_OTHER, rows, f, "rows,4h");
        rl_tensor *rdx = rl_tensor_new(ctx, "ref_dx", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *g1 = new2(ctx, "ref_dA", RL_MEM_OTHER, h, f, "h,4h"), *g2 = new2(ctx, "ref_dB", RL_MEM_OTHER, f, h, "4h,h");
        rl_tensor *gb1 = rl_tensor_new_1d(ctx, "ref_da", RL_F32, RL_MEM_OTHER, f);
        rl_tensor *gb2 = rl_tensor_new_1d(ctx, "ref_dc", RL_F32, RL_MEM_OTHER, h);
        int q = mp_dense_mlp(ctx, x, d.w1, d.b1, d.w2, d.b2, ry);
        q = q ? q : rl_matmul(ctx, x, 0, d.w1, 0, pre, 0);
        q = q ? q : rl_bias_add(ctx, pre, d.b1);
        q = q ? q : rl_gelu_forward(ctx, pre, act);
        q = q ? q : rl_matmul_backward(ctx, act, 0, d.w2, 0, dy, dact, 0, g2, 1);
        q = q ? q : rl_bias_backward(ctx, dy, gb2);
        q = q ? q : rl_gelu_backward(ctx, pre, dact, dpre);
        q = q ? q : rl_bias_backward(ctx, dpre, gb1);
        q = q ? q : rl_matmul_backward(ctx, x, 0, d.w1, 0, dpre, rdx, 0, g1, 1);
        if (!q) {
            upd(rc, &rc->st->mlp_y_err, rel_err(y, ry));
            upd(rc, &rc->st->mlp_dx_err, rel_err(dx, rdx));
            double worst = 0;
            for (int64_t i = 0; i < h; i++)
                for (int64_t j = 0; j < fl; j++) {
                    double a = rl_tensor_get(m.dw1, i * fl + j), b = rl_tensor_get(g1, i * f + r * fl + j);
                    double c = rl_tensor_get(m.dw2, j * h + i), dd = rl_tensor_get(g2, (r * fl + j) * h + i);
                    double e1 = fabs(a - b) / fmax(fabs(b), 1e-2), e2 = fabs(c - dd) / fmax(fabs(dd), 1e-2);
                    worst = fmax(worst, fmax(e1, e2));
                    if (!(e1 == e1) || !(e2 == e2))
                        worst = INFINITY;
                }
            for (int64_t j = 0; j < fl; j++) {
                double a = rl_tensor_get(m.db1, j), b = rl_tensor_get(gb1, r * fl + j);
                worst = fmax(worst, fabs(a - b) / fmax(fabs(b), 1e-2));
            }
            worst = fmax(worst, rel_err(m.db2, gb2));
            upd(rc, &rc->st->mlp_dw_err, worst);
        }
        rl_tensor *ts[] = { ry, pre, act, dact, dpre, rdx, g1, g2, gb1, gb2 };
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            rl_tensor_free(ts[i]);
    }
out:
    tp_mlp_free(&m);
    dense_free(&d);
    rl_tensor_free(x), rl_tensor_free(y), rl_tensor_free(dy), rl_tensor_free(dx);
    return 0;
}

/* 30.2: TP attention vs dense attention */
static int part_attn(rl_ctx *ctx, run_ctx *rc)
{
    const mp_config *cfg = rc->cfg;
    rl_comm *w = rl_comm_world(ctx);
    int64_t h = cfg->h, shape[3] = { cfg->b, cfg->s, h };
    rl_tensor *W[4];
    for (int i = 0; i < 4; i++) {
        W[i] = new2(ctx, "W", RL_MEM_OTHER, h, h, "h,h");
        if (!W[i])
            return RL_ERR_NOMEM;
        mp_fill(W[i], cfg->seed + 40 + (uint64_t)i, 1.0f / sqrtf((float)h));
    }
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    rl_tensor *y = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_ACTIVATION, 3, shape, "b,s,h");
    mp_fill(x, cfg->seed + 45, 1.0f);
    tp_attn a;
    memset(&a, 0, sizeof a);
    rl_clear_error(ctx);
    int e = tp_attn_init(&a, w, cfg->heads, W[0], W[1], W[2], W[3]);
    if (!e) {
        rl_clear_error(ctx);
        e = tp_attn_forward(&a, x, y);
        if (e) {
            set_err(rc, ctx, e, "tp_attn_forward");
            return 0; /* a call of it may still be in flight: leave the tensors to the run */
        }
    } else {
        set_err(rc, ctx, e, "tp_attn_init");
    }
    if (!e) {
        rl_tensor *q = rl_tensor_new(ctx, "q", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *k = rl_tensor_new(ctx, "k", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *v = rl_tensor_new(ctx, "v", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *o = rl_tensor_new(ctx, "o", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        rl_tensor *ry = rl_tensor_new(ctx, "ref", RL_F32, RL_MEM_OTHER, 3, shape, "b,s,h");
        int64_t ps[4] = { cfg->b, cfg->heads, cfg->s, cfg->s };
        rl_tensor *pr = rl_tensor_new(ctx, "probs", RL_F32, RL_MEM_OTHER, 4, ps, "b,a,s,s");
        int q_ = rl_matmul(ctx, x, 0, W[0], 0, q, 0);
        q_ = q_ ? q_ : rl_matmul(ctx, x, 0, W[1], 0, k, 0);
        q_ = q_ ? q_ : rl_matmul(ctx, x, 0, W[2], 0, v, 0);
        q_ = q_ ? q_ : rl_attention_forward(ctx, q, k, v, cfg->heads, pr, o);
        q_ = q_ ? q_ : rl_matmul(ctx, o, 0, W[3], 0, ry, 0);
        if (!q_)
            upd(rc, &rc->st->attn_err, rel_err(y, ry));
        rl_tensor_free(q), rl_tensor_free(k), rl_tensor_free(v), rl_tensor_free(o), rl_tensor_free(ry), rl_tensor_free(pr);
    }
    tp_attn_free(&a);
    for (int i = 0; i < 4; i++)
        rl_tensor_free(W[i]);
    rl_tensor_free(x), rl_tensor_free(y);
    return 0;
}

/* 30.3: the half-block under TP and under TP+SP: outputs, traffic, activation memory */
static int part_sp(rl_ctx *ctx, run_ctx *rc)
{
    const mp_config *cfg = rc->cfg;
    rl_comm *w = rl_comm_world(ctx);
    int t = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t h = cfg->h, s = cfg->s, b = cfg->b, full[3] = { s, b, h }, loc[3] = { s / t, b, h };
    int64_t rows_l = (s / t) * b;
    dense_w d;
    if (dense_new(ctx, cfg, &d))
        return RL_ERR_NOMEM;
    rl_tensor *x = rl_tensor_new(ctx, "x", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
    rl_tensor *dy = rl_tensor_new(ctx, "dy", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
    rl_tensor *y_tp = rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
    rl_tensor *dx_tp = rl_tensor_new(ctx, "dx", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
    mp_fill(x, cfg->seed + 51, 1.0f);
    mp_fill(dy, cfg->seed + 52, 1.0f);
    int e = 0;
    for (int sp = 0; sp <= 1 && !e; sp++) {
        tp_block blk;
        rl_clear_error(ctx);
        e = tp_block_init(&blk, w, d.w1, d.b1, d.w2, d.b2, sp, cfg->seed);
        if (e) {
            set_err(rc, ctx, e, "tp_block_init (tp_mlp_init)");
            tp_block_free(&blk);
            break;
        }
        rl_tensor *xi = sp ? mp_rows(ctx, x, r * rows_l, rows_l, 3, loc, "s/t,b,h") : x;
        rl_tensor *dyi = sp ? mp_rows(ctx, dy, r * rows_l, rows_l, 3, loc, "s/t,b,h") : dy;
        rl_tensor *yi = sp ? rl_tensor_new(ctx, "y", RL_F32, RL_MEM_OTHER, 3, loc, "s/t,b,h") : y_tp;
        rl_tensor *dxi = sp ? rl_tensor_new(ctx, "dx", RL_F32, RL_MEM_OTHER, 3, loc, "s/t,b,h") : dx_tp;
        const rl_comm_counters c = rl_comm_get_counters(w);
        int64_t by0 = c.bytes_sent, k0[RL_COLL_NKINDS];
        for (int k = 0; k < RL_COLL_NKINDS; k++)
            k0[k] = c.issued[k];
        int64_t act0 = rl_ctx_mem(ctx)->current[RL_MEM_ACTIVATION];
        rl_clear_error(ctx);
        e = tp_block_forward(&blk, xi, yi);
        int64_t act = rl_ctx_mem(ctx)->current[RL_MEM_ACTIVATION] - act0;
        if (e)
            set_err(rc, ctx, e, sp ? "the SP block forward (sp_mlp_forward)" : "the TP block forward (tp_mlp_forward)");
        if (!e) {
            e = tp_block_backward(&blk, dyi, dxi);
            if (e)
                set_err(rc, ctx, e, sp ? "the SP block backward (sp_mlp_backward)" : "the TP block backward");
        }
        rl_barrier(w, 0);
        if (e)
            return 0; /* a call of it may still be in flight: leave the tensors to the run */
        if (!e && r == 0) {
            int64_t *calls = sp ? rc->st->sp_calls : rc->st->tp_calls;
            const rl_comm_counters c1 = rl_comm_get_counters(w);
            for (int k = 0; k < RL_COLL_NKINDS; k++)
                calls[k] = c1.issued[k] - k0[k] - (k == RL_COLL_BARRIER ? 1 : 0);
            *(sp ? &rc->st->sp_bytes : &rc->st->tp_bytes) = c1.bytes_sent - by0;
            *(sp ? &rc->st->sp_act : &rc->st->tp_act) = act;
        }
        if (!e && sp) { /* rank r's rows of the TP block's output and input gradient */
            rl_tensor *ry = mp_rows(ctx, y_tp, r * rows_l, rows_l, 3, loc, "s/t,b,h");
            rl_tensor *rdx = mp_rows(ctx, dx_tp, r * rows_l, rows_l, 3, loc, "s/t,b,h");
            upd(rc, &rc->st->sp_y_err, rel_err(yi, ry));
            upd(rc, &rc->st->sp_dx_err, rel_err(dxi, rdx));
            rl_tensor_free(ry), rl_tensor_free(rdx);
        }
        if (!e && sp) { /* the output against the dense half-block x + MLP(LayerNorm(x)) on one rank */
            rl_tensor *ln = rl_tensor_new(ctx, "ln", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
            rl_tensor *ry = rl_tensor_new(ctx, "ry", RL_F32, RL_MEM_OTHER, 3, full, "s,b,h");
            rl_tensor *mu = rl_tensor_new_1d(ctx, "mu", RL_F32, RL_MEM_OTHER, s * b);
            rl_tensor *rs = rl_tensor_new_1d(ctx, "rs", RL_F32, RL_MEM_OTHER, s * b);
            int q = rl_layernorm_forward(ctx, x, blk.gamma, blk.beta, 1e-5f, ln, mu, rs);
            q = q ? q : mp_dense_mlp(ctx, ln, d.w1, d.b1, d.w2, d.b2, ry);
            q = q ? q : rl_residual_add(ctx, x, ry, ry);
            rl_tensor *mine = q ? NULL : mp_rows(ctx, ry, r * rows_l, rows_l, 3, loc, "s/t,b,h");
            upd(rc, &rc->st->sp_y_err, q ? INFINITY : rel_err(yi, mine));
            rl_tensor_free(mine), rl_tensor_free(ln), rl_tensor_free(ry), rl_tensor_free(mu), rl_tensor_free(rs);
        }
        if (sp) {
            rl_tensor_free(xi), rl_tensor_free(dyi), rl_tensor_free(yi), rl_tensor_free(dxi);
        }
        tp_block_free(&blk);
    }
    dense_free(&d);
    rl_tensor_free(x), rl_tensor_free(dy), rl_tensor_free(y_tp), rl_tensor_free(dx_tp);
    return 0;
}

/* 30.4: one step of the schedule on p stages; the stage gradients gathered for the check */
static int part_pp(rl_ctx *ctx, run_ctx *rc)
{
    const mp_config *cfg = rc->cfg;
    rl_comm *w = rl_comm_world(ctx);
    const rl_pp_schedule *s = rc->sched;
    pp_stage *st = pp_stage_new(w, s->m, s->v, cfg->pp_rows, cfg->h, cfg->t_f, cfg->t_b, cfg->seed);
    if (!st) {
        set_err(rc, ctx, RL_ERR_ARG, "pp_stage_new");
        return 0;
    }
    if (st->rank == 0) {
        pthread_mutex_lock(&rc->lock);
        snprintf(rc->st->pp_comm[0], sizeof rc->st->pp_comm[0], "%s", rl_comm_name(st->act_comm));
        snprintf(rc->st->pp_comm[1], sizeof rc->st->pp_comm[1], "%s", rl_comm_name(st->grad_comm));
        pthread_mutex_unlock(&rc->lock);
    }
    rl_mem_account *acc = rl_ctx_mem(ctx);
    int64_t before[RL_MEM_NCAT]; /* nothing of this run used comm memory before the executor */
    memcpy(before, acc->current, sizeof before);
    rl_step_begin(ctx, 0);
    rl_clear_error(ctx);
    int e = pp_execute(st, s);
    rl_step_end(ctx);
    if (e) {
        set_err(rc, ctx, e, "pp_execute");
        return 0; /* a call of it may still be in flight: leave the tensors to the run */
    } else {
        if (st->rank < MP_MAX_RANKS) { /* what the executor held and left (read by the grader) */
            pthread_mutex_lock(&rc->lock);
            for (int k = 0; k < RL_MEM_NCAT; k++)
                rc->st->pp_left[st->rank][k] = acc->current[k] - before[k];
            rc->st->pp_act_extra[st->rank] = st->act_extra;
            rc->st->pp_comm_min[st->rank] = st->comm_min;
            rc->st->pp_comm_peak[st->rank] = acc->peak[RL_MEM_COMM] - before[RL_MEM_COMM];
            pthread_mutex_unlock(&rc->lock);
        }
        for (int c = 0; c < st->v; c++) {
            int vs = c * st->p + st->rank;
            rl_tensor_to_f32(st->dw[c], rc->pp_dw + (int64_t)vs * cfg->h * cfg->h, cfg->h * cfg->h);
        }
        if (st->rank == st->p - 1 || s->v > 1)
            if (st->rank == (s->v * s->p - 1) % s->p)
                rc->pp_loss = st->loss;
        if (st->live)
            set_err(rc, ctx, RL_ERR_ARG, "pp_execute (activations of some micro-batches were never released by a B)");
    }
    pp_stage_free(st);
    return 0;
}

/* 30.5: ring attention (zig-zag and contiguous) vs full causal attention */
static int part_cp(rl_ctx *ctx, run_ctx *rc)
{
    const mp_config *cfg = rc->cfg;
    rl_comm *w = rl_comm_world(ctx);
    int n = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t b = cfg->b, s = cfg->s, h = cfg->h, sl = s / n, full[3] = { b, s, h }, loc[3] = { b, sl, h };
    rl_tensor *qkv[3], *part[3];
    for (int i = 0; i < 3; i++) {
        qkv[i] = rl_tensor_new(ctx, "qkv", RL_F32, RL_MEM_OTHER, 3, full, "b,s,h");
        if (!qkv[i])
            return RL_ERR_NOMEM;
        mp_fill(qkv[i], cfg->seed + 60 + (uint64_t)i, 1.0f);
    }
    int64_t ps[4] = { b, cfg->heads, s, s };
    rl_tensor *pr = rl_tensor_new(ctx, "probs", RL_F32, RL_MEM_OTHER, 4, ps, "b,a,s,s");
    rl_tensor *ref = rl_tensor_new(ctx, "ref", RL_F32, RL_MEM_OTHER, 3, full, "b,s,h");
    rl_tensor *out = rl_tensor_new(ctx, "out", RL_F32, RL_MEM_ACTIVATION, 3, loc, "b,s/cp,h");
    rl_tensor *want = rl_tensor_new(ctx, "want", RL_F32, RL_MEM_OTHER, 3, loc, "b,s/cp,h");
    int64_t *pos = malloc((size_t)sl * sizeof *pos);
    int e = rl_attention_forward(ctx, qkv[0], qkv[1], qkv[2], cfg->heads, pr, ref);
    for (int zz = 1; zz >= 0 && !e; zz--) {
        char err[1024] = "";
        rl_clear_error(ctx);
        e = cp_positions(s, n, r, zz, pos, err, sizeof err);
        if (e) {
            rl_error(ctx, e, "%s", err);
            set_err(rc, ctx, e, "cp_positions");
            break;
        }
        for (int i = 0; i < 3; i++) { /* this rank's rows of q, k, v at its positions */
            part[i] = rl_tensor_new(ctx, "part", RL_F32, RL_MEM_ACTIVATION, 3, loc, "b,s/cp,h");
            for (int64_t bb = 0; bb < b; bb++)
                for (int64_t j = 0; j < sl; j++)
                    for (int64_t c = 0; c < h; c++) {
                        int64_t p = pos[j] >= 0 && pos[j] < s ? pos[j] : 0;
                        rl_tensor_set(part[i], (bb * sl + j) * h + c, rl_tensor_get(qkv[i], (bb * s + p) * h + c));
                        if (!i)
                            rl_tensor_set(want, (bb * sl + j) * h + c, rl_tensor_get(ref, (bb * s + p) * h + c));
                    }
        }
        int64_t work = 0;
        rl_clear_error(ctx);
        e = cp_ring_attention(w, part[0], part[1], part[2], cfg->heads, zz, pos, out, &work);
        if (e) {
            set_err(rc, ctx, e, "cp_ring_attention");
            return 0; /* a call of it may still be in flight: leave the tensors to the run */
        } else {
            upd(rc, zz ? &rc->st->cp_err : &rc->st->cp_err_contig, rel_err(out, want));
            (zz ? rc->st->cp_work : rc->st->cp_work_contig)[r] = work;
        }
        for (int i = 0; i < 3; i++)
            rl_tensor_free(part[i]);
    }
    free(pos);
    for (int i = 0; i < 3; i++)
        rl_tensor_free(qkv[i]);
    rl_tensor_free(pr), rl_tensor_free(ref), rl_tensor_free(out), rl_tensor_free(want);
    return 0;
}

static int (*const part_fns[5])(rl_ctx *, run_ctx *) = { part_tp, part_attn, part_sp, part_pp, part_cp };

static int part_rank(rl_ctx *ctx, void *arg)
{
    run_ctx *rc = arg;
    static const char *const roles[5] = { "tp", "tp", "tp-sp", "pp", "cp" }; /* (the trace's names for the traffic) */
    rl_comm_set_role(rl_comm_world(ctx), roles[rc->part]);
    return part_fns[rc->part](ctx, rc);
}

int mp_run(const mp_config *cfg, int parts, mp_stats *st, rl_trace **pp_trace)
{
    memset(st, 0, sizeof *st);
    st->shapes_ok = 1;
    if (pp_trace)
        *pp_trace = NULL;
    int t = cfg->opts.ranks;
    if (t < 1 || t > MP_MAX_RANKS || cfg->p < 1 || cfg->p > MP_MAX_RANKS || cfg->h < 1 || cfg->b < 1 || cfg->s < 1)
        return rl_error(NULL, RL_ERR_ARG, "mp_run: need 1..%d ranks and stages, b, s, h >= 1", MP_MAX_RANKS);
    run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.cfg = cfg;
    rc.st = st;
    pthread_mutex_init(&rc.lock, NULL);
    int first = 0;
    /* --trace run.json: the pipeline part writes run.json, the others run.tp_mlp.json ... */
    static const char *const part_names[5] = { "tp_mlp", "tp_attention", "sp", "pipeline", "ring_attention" };
    char part_trace[5][512];
    for (int part = 0; part < 5; part++) {
        const char *base = cfg->opts.trace_path ? cfg->opts.trace_path : "";
        size_t len = strlen(base);
        if (len > 5 && strcmp(base + len - 5, ".json") == 0)
            len -= 5;
        snprintf(part_trace[part], sizeof part_trace[part], "%.*s.%s.json", (int)len, base, part_names[part]);
    }
    for (int part = 0; part < 5; part++) {
        if (!(parts & (1 << part)))
            continue;
        rc.part = part;
        rl_opts o = cfg->opts;
        o.tui = 0;
        o.trace_path = cfg->opts.trace_path && part != 3 ? part_trace[part] : NULL;
        rl_trace *tr = NULL;
        int lr;
        if (part == 3) {
            char err[1024] = "";
            int v = cfg->pp_sched ? cfg->pp_sched->v : cfg->schedule == RL_PP_INTERLEAVED ? cfg->v : 1;
            o.ranks = cfg->p;
            o.trace_path = cfg->opts.trace_path;
            rl_clear_error(NULL);
            rc.sched = cfg->pp_sched ? (rl_pp_schedule *)cfg->pp_sched
                                     : pp_build_schedule(cfg->schedule, cfg->p, cfg->m, v, err, sizeof err);
            if (!rc.sched) {
                st->rc[3] = strstr(err, "not implemented") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG;
                snprintf(st->err[3], sizeof st->err[3], "%s%s", strncmp(err, "pp_build_schedule", 17) ? "pp_build_schedule: " : "",
                         err[0] ? err : "NULL with no message");
                first = first ? first : st->rc[3];
                continue;
            }
            for (int r = 0; r < 4 && r < cfg->p; r++)
                rl_pp_stage_string(rc.sched, r, st->pp_lists[r], sizeof st->pp_lists[r]);
            if (rl_pp_validate(rc.sched, err, sizeof err)) {
                st->rc[3] = RL_ERR_ARG;
                snprintf(st->err[3], sizeof st->err[3], "rl_pp_validate refuses your %s schedule: %s",
                         rl_pp_kind_name(cfg->schedule), err);
                if (!cfg->pp_sched)
                    rl_pp_schedule_free(rc.sched);
                first = first ? first : st->rc[3];
                continue;
            }
            int V = cfg->p * v;
            rc.pp_dw = calloc((size_t)V * cfg->h * cfg->h, sizeof(float));
            if (cfg->opts.tui) {
                o.tui = 1;
                snprintf(o.tui_view, sizeof o.tui_view, "pipeline");
                lr = rl_tui_run_live(&o, part_rank, &rc, &tr);
            } else {
                lr = rl_launch(&o, part_rank, &rc, &tr);
            }
            if (!lr && !st->rc[3]) {
                float *ref = calloc((size_t)V * cfg->h * cfg->h, sizeof(float));
                if (ref && !mp_pp_reference(cfg, v, ref, &st->pp_ref_loss)) {
                    double worst = 0;
                    for (int64_t i = 0; i < (int64_t)V * cfg->h * cfg->h; i++) {
                        double d = fabs(rc.pp_dw[i] - ref[i]) / fmax(fabs(ref[i]), 1e-3);
                        worst = d == d && d > worst ? d : (d == d ? worst : INFINITY);
                    }
                    st->pp_grad_err = worst;
                    st->pp_loss = rc.pp_loss;
                }
                free(ref);
                char err[256];
                if (rl_pp_bubble_from_trace(tr, 0, &st->pp, err, sizeof err)) {
                    st->rc[3] = RL_ERR_ARG;
                    snprintf(st->err[3], sizeof st->err[3], "no pipeline ops in the trace: %s", err);
                }
            }
            free(rc.pp_dw);
            rc.pp_dw = NULL;
            if (!cfg->pp_sched)
                rl_pp_schedule_free(rc.sched);
            rc.sched = NULL;
        } else {
            lr = rl_launch(&o, part_rank, &rc, NULL);
        }
        st->run_rc[part] = lr;
        if (lr && !st->rc[part]) {
            st->rc[part] = lr;
            snprintf(st->err[part], sizeof st->err[part], "the run failed: %s%s", rl_status_name(lr),
                     lr == RL_ERR_HANG ? " (the watchdog found a send/recv or collective that never completed: a "
                                         "deadlock; see the report above)" : "");
        }
        if (pp_trace && part == 3)
            *pp_trace = tr;
        else
            rl_trace_free(tr);
        first = first ? first : st->rc[part];
    }
    pthread_mutex_destroy(&rc.lock);
    return first;
}
