/* test_models.c — the models of model.h and the data of data.h: finite-difference gradient
 * checks of every model (every parameter), the grad-ready hook's order and count (with a
 * tied parameter), unit callbacks, replaced value/grad pointers, gradient accumulation,
 * bf16 vs f32, determinism, data sharding (n ranks × b = 1 rank × n·b) and training. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "ringlab.h"
#include "testutil.h"

#define FD_EPS 1e-2
#define FD_TOL 3e-2

static rl_model_config tiny_config(rl_model_kind kind, int tied)
{
    rl_model_config c = rl_model_config_default(kind);
    c.seed = 5;
    if (kind == RL_MODEL_MLP)
        c.hidden = 6, c.layers = 2, c.out_dim = 3;
    else if (kind == RL_MODEL_TRANSFORMER)
        c.hidden = 8, c.heads = 2, c.layers = 2, c.vocab = 7, c.seq = 5, c.tie_embeddings = tied;
    else
        c.hidden = 6, c.layers = 2, c.out_dim = 3, c.experts = 3, c.top_k = 2, c.ffn = 8;
    return c;
}

static rl_data *data_for(rl_ctx *ctx, const rl_model_config *c, uint64_t seed)
{
    return c->kind == RL_MODEL_TRANSFORMER ? rl_data_tokens(ctx, c->vocab, c->seq, seed)
                                           : rl_data_regression(ctx, c->hidden, c->out_dim, seed);
}

static float forward_loss(rl_model *m, const rl_batch *b)
{
    float loss = NAN;
    ck_assert_msg(rl_model_forward(m, b, &loss) == 0, "forward: %s", rl_last_error(m->ctx));
    return loss;
}

/* Checks ∂loss/∂p for up to 6 elements of every parameter against central differences. */
static void model_grad_check(rl_model_kind kind, int tied)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(kind, tied);
    rl_model *m = rl_model_new(ctx, &c);
    ck_assert_msg(m != NULL, "%s", rl_last_error(ctx));
    rl_data *d = data_for(ctx, &c, 11);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, kind == RL_MODEL_TRANSFORMER ? 3 : 5, &b), 0);
    /* random, non-trivial LayerNorm and bias parameters so their gradients are generic */
    rl_rng r = rl_rng_make(3, 3);
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].ndim == 1)
            for (int64_t j = 0; j < m->params[i].numel; j++)
                rl_tensor_set(m->params[i].value, j, rl_tensor_get(m->params[i].value, j) + 0.3f * (float)rl_rng_normal(&r));
    ck_assert_int_eq(rl_model_zero_grad(m), 0);
    forward_loss(m, &b);
    ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
    for (int i = 0; i < m->nparams; i++) {
        rl_param *p = &m->params[i];
        double gmax = 0;
        for (int64_t j = 0; j < p->numel; j++)
            gmax = fmax(gmax, fabs(rl_tensor_get(p->grad, j)));
        int64_t stride = p->numel > 6 ? p->numel / 6 : 1;
        for (int64_t j = 0; j < p->numel; j += stride) {
            float v0 = rl_tensor_get(p->value, j);
            rl_tensor_set(p->value, j, v0 + (float)FD_EPS);
            double lp = forward_loss(m, &b);
            rl_tensor_set(p->value, j, v0 - (float)FD_EPS);
            double lm = forward_loss(m, &b);
            rl_tensor_set(p->value, j, v0);
            double num = (lp - lm) / (2 * FD_EPS), ana = rl_tensor_get(p->grad, j);
            double err = fabs(num - ana) / fmax(fmax(fabs(num), fabs(ana)), 2e-2 * gmax + 2e-4);
            ck_assert_msg(err < FD_TOL, "%s%s: %s[%lld]: finite difference %.6g vs backward %.6g (rel err %.3g)",
                          rl_model_kind_name(kind), tied ? " (tied)" : "", p->name, (long long)j, num, ana, err);
        }
    }
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

START_TEST(test_grad_mlp) { model_grad_check(RL_MODEL_MLP, 0); }
END_TEST
START_TEST(test_grad_transformer) { model_grad_check(RL_MODEL_TRANSFORMER, 0); }
END_TEST
START_TEST(test_grad_transformer_tied) { model_grad_check(RL_MODEL_TRANSFORMER, 1); }
END_TEST
START_TEST(test_grad_moe) { model_grad_check(RL_MODEL_MOE, 0); }
END_TEST

/* ------------------------------------------------------------------ hooks and units */

typedef struct {
    int order[512], n;
    int fired[512];
    char units[64][16];
    int nunits;
} hook_log;

static int log_hook(rl_param *p, void *arg)
{
    hook_log *h = arg;
    h->order[h->n++] = p->index;
    h->fired[p->index]++;
    return 0;
}

static int log_unit(rl_unit *u, void *arg, char tag)
{
    hook_log *h = arg;
    if (h->nunits < 64)
        snprintf(h->units[h->nunits++], 16, "%c%d", tag, u->index);
    return 0;
}
static int pre_fwd(rl_unit *u, void *a) { return log_unit(u, a, 'F'); }
static int post_fwd(rl_unit *u, void *a) { return log_unit(u, a, 'f'); }
static int pre_bwd(rl_unit *u, void *a) { return log_unit(u, a, 'B'); }
static int post_bwd(rl_unit *u, void *a) { return log_unit(u, a, 'b'); }

static void hook_check(rl_model_kind kind, int tied)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(kind, tied);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 1);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, 4, &b), 0);
    hook_log *h = calloc(1, sizeof *h);
    m->hook = log_hook;
    m->hook_arg = h;
    m->pre_forward = pre_fwd, m->post_forward = post_fwd, m->pre_backward = pre_bwd, m->post_backward = post_bwd;
    m->unit_arg = h;
    for (int round = 0; round < 2; round++) { /* twice: counts reset every backward */
        h->n = 0;
        h->nunits = 0;
        memset(h->fired, 0, sizeof h->fired);
        forward_loss(m, &b);
        ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
        ck_assert_int_eq(h->n, m->nparams);
        for (int i = 0; i < m->nparams; i++) {
            ck_assert_msg(h->fired[i] == 1, "%s fired %d times", m->params[i].name, h->fired[i]);
            /* exactly reverse registration order */
            ck_assert_msg(h->order[i] == m->nparams - 1 - i, "hook %d was %s, expected %s", i,
                          m->params[h->order[i]].name, m->params[m->nparams - 1 - i].name);
        }
        /* units: F0 f0 F1 f1 ... then B(last) b(last) ... B0 b0 */
        ck_assert_int_eq(h->nunits, 4 * m->nunits);
        for (int u = 0; u < m->nunits; u++) {
            char e[16];
            snprintf(e, sizeof e, "F%d", u);
            ck_assert_str_eq(h->units[2 * u], e);
            snprintf(e, sizeof e, "f%d", u);
            ck_assert_str_eq(h->units[2 * u + 1], e);
            snprintf(e, sizeof e, "B%d", m->nunits - 1 - u);
            ck_assert_str_eq(h->units[2 * m->nunits + 2 * u], e);
            snprintf(e, sizeof e, "b%d", m->nunits - 1 - u);
            ck_assert_str_eq(h->units[2 * m->nunits + 2 * u + 1], e);
        }
    }
    /* every parameter sits in exactly one unit, the unit its index says */
    int seen = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int i = 0; i < m->units[u].nparams; i++, seen++)
            ck_assert_int_eq(m->units[u].params[i]->unit, u);
    ck_assert_int_eq(seen, m->nparams);
    if (kind == RL_MODEL_TRANSFORMER && tied) {
        rl_param *wte = rl_model_find_param(m, "wte");
        ck_assert_ptr_nonnull(wte);
        ck_assert_int_eq(wte->uses, 2);
        ck_assert_int_eq(h->order[m->nparams - 1], wte->index); /* after its last contribution */
        ck_assert_ptr_null(rl_model_find_param(m, "lm_head.w"));
    }
    /* backward without a new forward is an error, not a double contribution */
    ck_assert_int_eq(rl_model_backward(m, 1.0f), RL_ERR_ARG);
    free(h);
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

START_TEST(test_hooks)
{
    hook_check(RL_MODEL_MLP, 0);
    hook_check(RL_MODEL_TRANSFORMER, 0);
    hook_check(RL_MODEL_TRANSFORMER, 1);
    hook_check(RL_MODEL_MOE, 0);
}
END_TEST

/* A hook under rl_model_set_ready_order: the gradient's sum at the moment the hook fires. */
typedef struct {
    hook_log log;
    double sum_at_hook[512];
} ready_log;

static double grad_sum(const rl_param *p)
{
    double s = 0;
    for (int64_t k = 0; k < p->numel; k++)
        s += rl_tensor_get(p->grad, k);
    return s;
}

static int ready_hook(rl_param *p, void *arg)
{
    ready_log *r = arg;
    r->sum_at_hook[p->index] = grad_sum(p);
    return log_hook(p, &r->log);
}

/* Runs one backward with the ready order (seed, window); r gets what the hook saw. */
static void ready_order_run(uint64_t seed, int window, ready_log *r)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(RL_MODEL_MLP, 0);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 1);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, 4, &b), 0);
    memset(r, 0, sizeof *r);
    m->hook = ready_hook;
    m->hook_arg = r;
    ck_assert_int_eq(rl_model_set_ready_order(m, seed, window), 0);
    forward_loss(m, &b);
    ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
    ck_assert_int_eq(r->log.n, m->nparams);
    for (int i = 0; i < m->nparams; i++) {
        ck_assert_msg(r->log.fired[i] == 1, "%s fired %d times", m->params[i].name, r->log.fired[i]);
        ck_assert_msg(fabs(r->sum_at_hook[i] - grad_sum(&m->params[i])) <= 1e-9 * fabs(grad_sum(&m->params[i])),
                      "%s: the hook fired before its gradient was final", m->params[i].name);
    }
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

START_TEST(test_hooks_ready_order)
{
    ready_log *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    ready_order_run(7, 5, a);
    ready_order_run(7, 5, b);
    ready_order_run(8, 5, c);
    int reversed = 1, same = 1, differ = 0;
    for (int i = 0; i < a->log.n; i++) {
        reversed &= a->log.order[i] == a->log.n - 1 - i;
        same &= a->log.order[i] == b->log.order[i];
        differ |= a->log.order[i] != c->log.order[i];
    }
    ck_assert_msg(!reversed, "rl_model_set_ready_order(7, 5) left the hooks in reverse registration order");
    ck_assert_msg(same, "the same seed must give the same order");
    ck_assert_msg(differ, "another seed must give another order");
    ready_order_run(7, 1, a); /* window 1: backward's own order */
    for (int i = 0; i < a->log.n; i++)
        ck_assert_int_eq(a->log.order[i], a->log.n - 1 - i);
    free(a), free(b), free(c);
}
END_TEST

/* Layer tags: every compute event of a block's ops carries its layer. */
START_TEST(test_layer_tags)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(RL_MODEL_TRANSFORMER, 1);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 1);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, 2, &b), 0);
    rl_trace *tr = rl_ctx_trace(ctx);
    size_t n0 = tr->n;
    forward_loss(m, &b);
    int layers[2] = { 0, 0 }, untagged = 0, attn = 0;
    for (size_t i = n0; i < tr->n; i++) {
        int l = tr->ev[i].tags[RL_TAG_LAYER];
        if (l >= 0 && l < 2)
            layers[l]++;
        else
            untagged++;
        if (!strcmp(tr->ev[i].name, "attention")) {
            attn++;
            ck_assert_int_ge(tr->ev[i].tags[RL_TAG_LAYER], 0);
            ck_assert_ptr_nonnull(strstr(tr->ev[i].shapes, "-> att"));
        }
    }
    ck_assert_int_eq(attn, 2);
    ck_assert_int_eq(layers[0], layers[1]);
    ck_assert_int_gt(layers[0], 10);
    ck_assert_int_gt(untagged, 0); /* embedding and head */
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ pointer replacement, accumulation */

/* Grads of the MLP for a batch, copied out (concatenated in registration order). */
static float *grads_of(rl_model *m, int64_t *n)
{
    *n = rl_model_numel(m);
    float *g = malloc(sizeof(float) * (size_t)*n), *p = g;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].grad, p, m->params[i].numel);
        p += m->params[i].numel;
    }
    return g;
}

START_TEST(test_replaced_pointers_and_accumulation)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(RL_MODEL_TRANSFORMER, 1);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 2);
    rl_batch b = { 0 }, h1 = { 0 }, h2 = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 3, 0, 4, &b), 0);
    ck_assert_int_eq(rl_data_get(d, ctx, 3, 0, 2, &h1), 0);
    ck_assert_int_eq(rl_data_get(d, ctx, 3, 2, 2, &h2), 0);
    /* reference: one backward over the whole batch */
    rl_model_zero_grad(m);
    float loss_ref = forward_loss(m, &b);
    ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
    int64_t n;
    float *g_ref = grads_of(m, &n);
    /* DDP-style: every grad a view into one flat bucket; ZeRO-3-style: values point at a copy */
    rl_tensor *bucket = rl_tensor_new_1d(ctx, "bucket", RL_F32, RL_MEM_COMM, n);
    rl_tensor *flat = rl_tensor_new_1d(ctx, "gathered", RL_F32, RL_MEM_PARAM, n);
    rl_tensor **views = calloc((size_t)m->nparams, sizeof *views), **vviews = calloc((size_t)m->nparams, sizeof *vviews);
    int64_t off = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_param *p = &m->params[i];
        views[i] = rl_tensor_view(bucket, p->name, off, p->ndim, p->shape, p->dims);
        vviews[i] = rl_tensor_view(flat, p->name, off, p->ndim, p->shape, p->dims);
        rl_tensor_copy(vviews[i], p->value);
        rl_tensor_fill(p->own_value, NAN); /* forward must not read the old tensor */
        p->grad = views[i];
        p->value = vviews[i];
        off += p->numel;
    }
    /* two half-batches with grad_scale 1/2 accumulate to the full-batch gradient */
    rl_model_zero_grad(m);
    float l1 = forward_loss(m, &h1);
    ck_assert_int_eq(rl_model_backward(m, 0.5f), 0);
    float l2 = forward_loss(m, &h2);
    ck_assert_int_eq(rl_model_backward(m, 0.5f), 0);
    ck_assert_float_eq_tol(0.5f * (l1 + l2), loss_ref, 1e-5f);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(rl_tensor_get(bucket, i) - g_ref[i]) <= 1e-5f + 1e-4f * fabsf(g_ref[i]),
                      "bucket element %lld: %g vs %g", (long long)i, rl_tensor_get(bucket, i), g_ref[i]);
    for (int i = 0; i < m->nparams; i++) {
        rl_param *p = &m->params[i];
        p->grad = p->own_grad;
        p->value = p->own_value;
        rl_tensor_free(views[i]);
        rl_tensor_free(vviews[i]);
    }
    free(views);
    free(vviews);
    free(g_ref);
    rl_tensor_free(bucket);
    rl_tensor_free(flat);
    rl_batch_free(&b);
    rl_batch_free(&h1);
    rl_batch_free(&h2);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ MoE routing */

START_TEST(test_moe_routing)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(RL_MODEL_MOE, 0);
    c.experts = 4;
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 4);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, 16, &b), 0);
    ck_assert_ptr_null(rl_model_routing(m, 0));
    forward_loss(m, &b);
    for (int l = 0; l < c.layers; l++) {
        const rl_moe_routing *r = rl_model_routing(m, l);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->tokens, 16);
        for (int64_t t = 0; t < r->tokens; t++) {
            double ws = 0, ps = 0;
            for (int e = 0; e < 4; e++)
                ps += r->probs[t * 4 + e];
            ck_assert_double_eq_tol(ps, 1.0, 1e-5);
            ck_assert_int_ne(r->expert[t * 2], r->expert[t * 2 + 1]);
            for (int j = 0; j < 2; j++)
                ws += r->weight[t * 2 + j];
            ck_assert_double_eq_tol(ws, 1.0, 1e-5);
            /* best first, and no unchosen expert beats a chosen one */
            ck_assert(r->weight[t * 2] >= r->weight[t * 2 + 1]);
            for (int e = 0; e < 4; e++)
                if (e != r->expert[t * 2] && e != r->expert[t * 2 + 1])
                    ck_assert(r->probs[t * 4 + e] <= r->probs[t * 4 + r->expert[t * 2 + 1]]);
        }
    }
    ck_assert_ptr_null(rl_model_routing(m, 7));
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ memory, bf16, errors */

START_TEST(test_memory_and_bf16)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_mem_account *acc = rl_ctx_mem(ctx);
    int64_t p0 = acc->current[RL_MEM_PARAM], g0 = acc->current[RL_MEM_GRAD];
    rl_model_config c = rl_model_config_default(RL_MODEL_TRANSFORMER);
    rl_model *m = rl_model_new(ctx, &c);
    c.param_dtype = c.grad_dtype = RL_BF16;
    rl_model *mb = rl_model_new(ctx, &c);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(mb);
    int64_t n = rl_model_numel(m);
    ck_assert_int_eq(acc->current[RL_MEM_PARAM] - p0, 6 * n); /* 4 + 2 bytes per parameter */
    ck_assert_int_eq(acc->current[RL_MEM_GRAD] - g0, 6 * n);
    /* same seed: bf16 parameters are the f32 ones rounded */
    for (int i = 0; i < m->nparams; i++)
        ck_assert_float_eq(rl_tensor_get(mb->params[i].value, 0), rl_round_bf16(rl_tensor_get(m->params[i].value, 0)));
    rl_data *d = data_for(ctx, &c, 1);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_get(d, ctx, 0, 0, 4, &b), 0);
    int64_t a0 = acc->current[RL_MEM_ACTIVATION];
    float l32 = forward_loss(m, &b), l16 = forward_loss(mb, &b);
    ck_assert_int_gt(acc->current[RL_MEM_ACTIVATION], a0);
    /* bf16 params (activations f32): loss within 1% of the f32 model's */
    ck_assert_msg(fabsf(l16 - l32) < 0.01f * l32, "bf16 loss %g vs f32 %g", l16, l32);
    rl_model_zero_grad(m);
    rl_model_zero_grad(mb);
    ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
    ck_assert_int_eq(rl_model_backward(mb, 1.0f), 0);
    /* bf16 grads: norm within 5% of the f32 grads' */
    double s32 = 0, s16 = 0, diff = 0;
    for (int i = 0; i < m->nparams; i++)
        for (int64_t j = 0; j < m->params[i].numel; j++) {
            double a = rl_tensor_get(m->params[i].grad, j), bb = rl_tensor_get(mb->params[i].grad, j);
            s32 += a * a, s16 += bb * bb, diff += (a - bb) * (a - bb);
        }
    ck_assert_msg(sqrt(diff) < 0.05 * sqrt(s32), "bf16 grads differ by %g of the norm", sqrt(diff / s32));
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_model_free(mb);
    ck_assert_int_eq(acc->current[RL_MEM_PARAM], p0);
    ck_assert_int_eq(acc->current[RL_MEM_ACTIVATION], a0);
    /* bad configs: NULL with a message */
    c = rl_model_config_default(RL_MODEL_TRANSFORMER);
    c.heads = 3;
    ck_assert_ptr_null(rl_model_new(ctx, &c));
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "heads"));
    c = rl_model_config_default(RL_MODEL_MOE);
    c.top_k = 9;
    ck_assert_ptr_null(rl_model_new(ctx, &c));
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ data sharding */

START_TEST(test_data_sharding)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    for (int task = 0; task < 2; task++) {
        rl_data *d = task ? rl_data_tokens(ctx, 16, 8, 9) : rl_data_regression(ctx, 6, 3, 9);
        for (int n = 1; n <= 4; n++) {
            int64_t bsz = 3;
            rl_batch whole = { 0 }, part = { 0 };
            ck_assert_int_eq(rl_data_shard(d, ctx, 7, 0, n * bsz, &whole), 0);
            for (int r = 0; r < n; r++) {
                ck_assert_int_eq(rl_data_shard(d, ctx, 7, r, bsz, &part), 0);
                if (task) {
                    ck_assert_mem_eq(part.tokens, whole.tokens + r * bsz * 8, sizeof(int) * bsz * 8);
                    ck_assert_mem_eq(part.targets, whole.targets + r * bsz * 8, sizeof(int) * bsz * 8);
                } else {
                    for (int64_t i = 0; i < part.x->numel; i++)
                        ck_assert_float_eq(rl_tensor_get(part.x, i), rl_tensor_get(whole.x, r * bsz * 6 + i));
                    for (int64_t i = 0; i < part.y->numel; i++)
                        ck_assert_float_eq(rl_tensor_get(part.y, i), rl_tensor_get(whole.y, r * bsz * 3 + i));
                }
            }
            rl_batch_free(&whole);
            rl_batch_free(&part);
        }
        /* different steps give different samples; targets follow the tokens */
        rl_batch s0 = { 0 }, s1 = { 0 };
        rl_data_get(d, ctx, 0, 0, 2, &s0);
        rl_data_get(d, ctx, 1, 0, 2, &s1);
        if (task) {
            ck_assert(memcmp(s0.tokens, s1.tokens, sizeof(int) * 16) != 0);
            for (int i = 0; i + 1 < 8; i++)
                ck_assert_int_eq(s0.targets[i], s0.tokens[i + 1]);
        } else {
            ck_assert(rl_tensor_get(s0.x, 0) != rl_tensor_get(s1.x, 0));
        }
        rl_batch_free(&s0);
        rl_batch_free(&s1);
        rl_data_free(d);
    }
    ck_assert_ptr_null(rl_data_tokens(ctx, 1, 8, 1));
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* The mean of n ranks' gradients (batch b each, run as rl_launch ranks) equals one rank's
 * gradient over n·b: the equivalence DDP relies on. */
typedef struct { float *grads[4]; int64_t n; } shard_run;

static int shard_rank(rl_ctx *ctx, void *arg)
{
    shard_run *s = arg;
    rl_model_config c = tiny_config(RL_MODEL_MLP, 0);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 3);
    rl_batch b = { 0 };
    int rc = !m || !d ? RL_ERR_NOMEM : rl_data_shard(d, ctx, 5, rl_rank(ctx), 2, &b);
    if (!rc)
        rc = rl_model_forward(m, &b, NULL);
    if (!rc)
        rc = rl_model_backward(m, 1.0f);
    if (!rc)
        s->grads[rl_rank(ctx)] = grads_of(m, &s->n);
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    return rc;
}

START_TEST(test_sharded_gradients)
{
    shard_run s = { { 0 }, 0 };
    rl_opts o = rl_test_opts(4, NULL);
    ck_assert_int_eq(rl_launch(&o, shard_rank, &s, NULL), 0);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model_config c = tiny_config(RL_MODEL_MLP, 0);
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, 3);
    rl_batch b = { 0 };
    ck_assert_int_eq(rl_data_shard(d, ctx, 5, 0, 8, &b), 0);
    forward_loss(m, &b);
    ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
    int64_t n;
    float *g = grads_of(m, &n);
    ck_assert_int_eq(n, s.n);
    for (int64_t i = 0; i < n; i++) {
        float mean = 0.25f * (s.grads[0][i] + s.grads[1][i] + s.grads[2][i] + s.grads[3][i]);
        ck_assert_msg(fabsf(mean - g[i]) <= 1e-6f + 1e-4f * fabsf(g[i]), "grad %lld: mean of ranks %g vs one rank %g",
                      (long long)i, mean, g[i]);
    }
    for (int r = 0; r < 4; r++)
        free(s.grads[r]);
    free(g);
    rl_batch_free(&b);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ------------------------------------------------------------------ training */

/* Trains a default model for `steps` on one rank; fills losses[steps]. */
static void train(rl_model_kind kind, int steps, int batch, float lr, uint64_t seed, rl_dtype dt, float *losses)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, seed);
    rl_model_config c = rl_model_config_default(kind);
    c.seed = seed;
    c.param_dtype = c.grad_dtype = dt;
    rl_model *m = rl_model_new(ctx, &c);
    rl_data *d = data_for(ctx, &c, seed + 100);
    rl_adamw_cfg oc = rl_adamw_defaults();
    oc.lr = lr;
    rl_model_optim *o = rl_model_adamw_new(m, oc);
    ck_assert_ptr_nonnull(o);
    rl_batch b = { 0 };
    for (int s = 0; s < steps; s++) {
        ck_assert_int_eq(rl_data_shard(d, ctx, s, 0, batch, &b), 0);
        ck_assert_int_eq(rl_model_zero_grad(m), 0);
        losses[s] = forward_loss(m, &b);
        ck_assert_int_eq(rl_model_backward(m, 1.0f), 0);
        ck_assert_int_eq(rl_model_adamw_step(o), 0);
    }
    rl_batch_free(&b);
    rl_model_optim_free(o);
    rl_data_free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

static double tail_mean(const float *l, int n, int k)
{
    double s = 0;
    for (int i = n - k; i < n; i++)
        s += l[i];
    return s / k;
}

START_TEST(test_train_mlp)
{
    int steps = 300;
    float *l = malloc(sizeof(float) * steps);
    train(RL_MODEL_MLP, steps, 32, 3e-3f, 1, RL_F32, l);
    ck_assert_msg(tail_mean(l, steps, 10) * 10 <= l[0], "MLP loss %g -> %g: less than 10x lower", l[0], tail_mean(l, steps, 10));
    free(l);
}
END_TEST

START_TEST(test_train_transformer)
{
    int steps = rl_test_quick() ? 60 : 200;
    float *l = malloc(sizeof(float) * steps);
    train(RL_MODEL_TRANSFORMER, steps, rl_test_quick() ? 8 : 16, 3e-3f, 1, RL_F32, l);
    /* ln 16 = 2.77 at the start; the task's floor is ≈ 0.7 */
    double want = rl_test_quick() ? 0.85 : 0.5;
    ck_assert_msg(tail_mean(l, steps, 10) < want * l[0], "transformer loss %g -> %g: not below %.2f× the start", l[0],
                  tail_mean(l, steps, 10), want);
    free(l);
}
END_TEST

START_TEST(test_train_moe_bf16)
{
    int steps = rl_test_quick() ? 100 : 200;
    float *l = malloc(sizeof(float) * steps);
    train(RL_MODEL_MOE, steps, 32, 3e-3f, 2, RL_BF16, l);
    ck_assert_msg(tail_mean(l, steps, 10) * 4 < l[0], "MoE (bf16) loss %g -> %g: less than 4x lower", l[0],
                  tail_mean(l, steps, 10));
    free(l);
}
END_TEST

START_TEST(test_determinism)
{
    int steps = 15;
    float a[15], b[15], c[15];
    train(RL_MODEL_TRANSFORMER, steps, 4, 3e-3f, 7, RL_F32, a);
    train(RL_MODEL_TRANSFORMER, steps, 4, 3e-3f, 7, RL_F32, b);
    train(RL_MODEL_TRANSFORMER, steps, 4, 3e-3f, 8, RL_F32, c);
    ck_assert_mem_eq(a, b, sizeof a); /* bitwise the same loss curve */
    ck_assert(memcmp(a, c, sizeof a) != 0);
    train(RL_MODEL_MOE, steps, 8, 3e-3f, 7, RL_BF16, a);
    train(RL_MODEL_MOE, steps, 8, 3e-3f, 7, RL_BF16, b);
    ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

Suite *models_suite(void)
{
    Suite *s = suite_create("models");
    TCase *tc = tcase_create("models");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_grad_mlp);
    tcase_add_test(tc, test_grad_transformer);
    tcase_add_test(tc, test_grad_transformer_tied);
    tcase_add_test(tc, test_grad_moe);
    tcase_add_test(tc, test_hooks);
    tcase_add_test(tc, test_hooks_ready_order);
    tcase_add_test(tc, test_layer_tags);
    tcase_add_test(tc, test_replaced_pointers_and_accumulation);
    tcase_add_test(tc, test_moe_routing);
    tcase_add_test(tc, test_memory_and_bf16);
    tcase_add_test(tc, test_data_sharding);
    tcase_add_test(tc, test_sharded_gradients);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_train_mlp);
    tcase_add_test(tc, test_train_transformer);
    tcase_add_test(tc, test_train_moe_bf16);
    suite_add_tcase(s, tc);
    return s;
}
