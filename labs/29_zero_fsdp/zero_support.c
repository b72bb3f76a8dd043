/* zero_support.c — the parts of Lab 29 you do not write: stage names, the engine's
 * construction (units, flat layout, shard buffers, the model's parameters pointed into
 * them), views for gathered parameters and gradient buckets, the training step that calls
 * your functions, and a whole run with its measurements. Not edited by learners. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tui.h"
#include "zero.h"

static const char *stage_names[ZERO_NSTAGES] = { "ddp", "zero1", "zero2", "zero3", "hsdp" };

const char *zero_stage_name(zero_stage s) { return s >= 0 && s < ZERO_NSTAGES ? stage_names[s] : "?"; }

int zero_stage_parse(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < ZERO_NSTAGES; i++)
        if (!strcmp(s, stage_names[i]))
            return i;
    if (s[0] >= '0' && s[0] <= '3' && !s[1])
        return s[0] - '0';
    if (!strcmp(s, "full_shard") || !strcmp(s, "FULL_SHARD"))
        return ZERO_STAGE3;
    if (!strcmp(s, "shard_grad_op") || !strcmp(s, "SHARD_GRAD_OP"))
        return ZERO_STAGE2;
    if (!strcmp(s, "hybrid_shard") || !strcmp(s, "HYBRID_SHARD"))
        return ZERO_HSDP;
    return -1;
}

/* ================================================================== views */

enum { VALUE = 0, GRAD = 1 };

/* Points unit u's parameter values or grads at views into base (from element base_off on),
 * or detaches them (base NULL). */
static int point(zero_engine *e, int u, rl_tensor *base, int64_t base_off, int which)
{
    if (!e || u < 0 || u >= e->nunits)
        return rl_error(e ? e->ctx : NULL, RL_ERR_ARG, "zero_point_%s: unit %d does not exist (0..%d)",
                        which == VALUE ? "params" : "grads", u, e ? e->nunits - 1 : -1);
    zero_unit *U = &e->units[u];
    if (base && (base->dtype != RL_BF16 || base_off + U->padded > base->numel))
        return rl_error(e->ctx, RL_ERR_ARG, "zero_point_%s: unit %d needs a bf16 buffer of %lld elements (got %s, %lld)",
                        which == VALUE ? "params" : "grads", u, (long long)U->padded, rl_dtype_name(base->dtype),
                        (long long)(base->numel - base_off));
    rl_tensor **views = which == VALUE ? e->value_view : e->grad_view;
    for (int i = U->first_param; i < U->first_param + U->nparams; i++) {
        rl_param *p = &e->model->params[i];
        rl_tensor *v = NULL;
        if (base) {
            v = rl_tensor_view(base, p->name, base_off + e->offset_in_unit[i], p->ndim, p->shape, p->dims);
            if (!v)
                return RL_ERR_NOMEM;
        }
        rl_tensor_free(views[i]);
        views[i] = v;
        if (which == VALUE)
            p->value = v;
        else
            p->grad = v;
    }
    rl_mem_sample_now(e->ctx);
    return 0;
}

int zero_point_params(zero_engine *e, int u, rl_tensor *full) { return point(e, u, full, 0, VALUE); }

int zero_point_grads(zero_engine *e, int u, rl_tensor *bucket) { return point(e, u, bucket, 0, GRAD); }

/* ================================================================== the engine */

static rl_tensor *shard_buffer(zero_engine *e, const char *name, rl_dtype dt, rl_mem_cat cat)
{
    return rl_tensor_new_1d(e->ctx, name, dt, cat, e->shard_numel > 0 ? e->shard_numel : 1);
}

/* Builds the units from the model's units and the wrap policy; checks that every unit's
 * parameters are consecutive in registration order. */
static int build_units(zero_engine *e)
{
    rl_model *m = e->model;
    int nu = e->cfg.wrap_per_block ? m->nunits : 1;
    e->units = calloc((size_t)nu + 1, sizeof *e->units);
    e->unit_of_model_unit = calloc((size_t)m->nunits + 1, sizeof *e->unit_of_model_unit);
    e->unit_of_param = calloc((size_t)m->nparams + 1, sizeof *e->unit_of_param);
    e->offset_in_unit = calloc((size_t)m->nparams + 1, sizeof *e->offset_in_unit);
    e->value_view = calloc((size_t)m->nparams + 1, sizeof *e->value_view);
    e->grad_view = calloc((size_t)m->nparams + 1, sizeof *e->grad_view);
    e->nscratch = 4 * nu + 64;
    e->scratch = calloc((size_t)e->nscratch, sizeof *e->scratch);
    if (!e->units || !e->unit_of_model_unit || !e->unit_of_param || !e->offset_in_unit || !e->value_view ||
        !e->grad_view || !e->scratch)
        return rl_rank_out_of_memory(e->ctx, "needed the tables of %d parameters for the engine's units", m->nparams);
    e->nunits = nu;
    int next_param = 0;
    for (int u = 0; u < nu; u++) {
        zero_unit *U = &e->units[u];
        U->first_unit = e->cfg.wrap_per_block ? u : 0;
        U->nunits = e->cfg.wrap_per_block ? 1 : m->nunits;
        U->first_param = next_param;
        for (int k = U->first_unit; k < U->first_unit + U->nunits; k++) {
            const rl_unit *mu = &m->units[k];
            e->unit_of_model_unit[k] = u;
            for (int j = 0; j < mu->nparams; j++) {
                if (mu->params[j]->index != next_param)
                    return rl_error(e->ctx, RL_ERR_ARG, "zero: unit %s's parameters are not consecutive in "
                                    "registration order (a tied weight?); this lab shards the MLP model", mu->name);
                int i = next_param++;
                e->unit_of_param[i] = u;
                e->offset_in_unit[i] = U->numel;
                U->numel += m->params[i].numel;
            }
        }
        U->nparams = next_param - U->first_param;
        U->padded = (U->numel + e->n - 1) / e->n * e->n;
        U->shard = U->padded / e->n;
        U->flat_off = e->flat_numel;
        U->shard_off = e->shard_numel;
        e->flat_numel += U->padded;
        e->shard_numel += U->shard;
    }
    if (next_param != m->nparams)
        return rl_error(e->ctx, RL_ERR_ARG, "zero: %d of the model's %d parameters are in no unit", m->nparams - next_param,
                        m->nparams);
    return 0;
}

/* Copies the model's initial values into the stage's buffers and the master pieces, frees
 * the model's own tensors and points the parameters where the stage keeps them. */
static int place_params(zero_engine *e)
{
    rl_model *m = e->model;
    int rc = 0;
    for (int u = 0; u < e->nunits && !rc; u++) {
        zero_unit *U = &e->units[u];
        float *flat = calloc((size_t)U->padded + 1, sizeof *flat);
        if (!flat)
            return rl_rank_out_of_memory(e->ctx, "needed %zu bytes for unit %d's fp32 staging copy",
                                         ((size_t)U->padded + 1) * sizeof *flat, u);
        for (int i = U->first_param; i < U->first_param + U->nparams && !rc; i++)
            rc = rl_tensor_to_f32(m->params[i].own_value, flat + e->offset_in_unit[i], m->params[i].numel);
        const float *mine = flat + (int64_t)e->rank * U->shard;
        rl_tensor *ms = rl_tensor_slice(e->master, U->shard_off, U->shard);
        if (!rc && U->shard)
            rc = rl_tensor_from_f32(ms, mine, U->shard);
        rl_tensor_free(ms);
        if (!rc && e->flat_param) {
            rl_tensor *fs = rl_tensor_slice(e->flat_param, U->flat_off, U->padded);
            rc = rl_tensor_from_f32(fs, flat, U->padded);
            rl_tensor_free(fs);
            if (!rc)
                rc = point(e, u, e->flat_param, U->flat_off, VALUE);
        }
        if (!rc && e->param_shard && U->shard) {
            rl_tensor *ps = rl_tensor_slice(e->param_shard, U->shard_off, U->shard);
            rc = rl_tensor_from_f32(ps, mine, U->shard);
            rl_tensor_free(ps);
        }
        if (!rc && e->flat_grad)
            rc = point(e, u, e->flat_grad, U->flat_off, GRAD);
        free(flat);
    }
    for (int i = 0; i < m->nparams && !rc; i++) {
        rl_param *p = &m->params[i];
        if (p->value == p->own_value)
            p->value = NULL;
        if (p->grad == p->own_grad)
            p->grad = NULL;
        rl_tensor_free(p->own_value);
        rl_tensor_free(p->own_grad);
        p->own_value = p->own_grad = NULL;
    }
    return rc;
}

zero_engine *zero_engine_new(rl_model *m, rl_comm *world, const zero_config *cfg)
{
    rl_ctx *ctx = m ? m->ctx : NULL;
    if (!m || !world || !cfg)
        return rl_error(ctx, RL_ERR_ARG, "zero_engine_new: model, communicator and config are required"), NULL;
    if (cfg->stage < ZERO_STAGE1 || cfg->stage > ZERO_HSDP)
        return rl_error(ctx, RL_ERR_ARG, "zero_engine_new: stage %d; this lab runs zero1, zero2, zero3 and hsdp",
                        cfg->stage), NULL;
    if (m->cfg.param_dtype != RL_BF16 || m->cfg.grad_dtype != RL_BF16)
        return rl_error(ctx, RL_ERR_ARG, "zero_engine_new: mixed-precision Adam needs bf16 parameters and gradients "
                        "(model.param_dtype = model.grad_dtype = RL_BF16)"), NULL;
    zero_engine *e = calloc(1, sizeof *e);
    if (!e)
        return rl_rank_out_of_memory(ctx, "needed %zu bytes for the engine", sizeof *e), NULL;
    e->ctx = ctx;
    e->model = m;
    e->cfg = *cfg;
    e->world = world;
    rl_comm_set_role(world, "dp"); /* (the traffic's name in the trace: ZeRO shards over the data-parallel ranks) */
    int rc = 0;
    if (cfg->stage == ZERO_HSDP) {
        rl_clear_error(ctx);
        rc = hsdp_make_mesh(world, cfg->group, &e->shard_comm, &e->replica_comm);
        rl_comm_set_role(e->shard_comm, "shard"); /* (no-ops on NULL) */
        rl_comm_set_role(e->replica_comm, "replica");
        if (rc && !rl_last_error(ctx)[0])
            rl_error(ctx, rc, "hsdp_make_mesh failed (%s)", rl_status_name(rc));
        if (!rc && (!e->shard_comm || !e->replica_comm ||
                    rl_comm_size(e->shard_comm) * rl_comm_size(e->replica_comm) != rl_comm_size(world)))
            rc = rl_error(ctx, RL_ERR_ARG, "hsdp_make_mesh: the shard group (%d ranks) times the replica group (%d) "
                          "must be the world (%d ranks)", e->shard_comm ? rl_comm_size(e->shard_comm) : 0,
                          e->replica_comm ? rl_comm_size(e->replica_comm) : 0, rl_comm_size(world));
    } else {
        e->shard_comm = world;
    }
    if (!rc) {
        e->n = rl_comm_size(e->shard_comm);
        e->rank = rl_comm_rank(e->shard_comm);
        rc = build_units(e);
    }
    if (!rc) {
        int st = cfg->stage;
        e->master = shard_buffer(e, "master", RL_F32, RL_MEM_OPTIM);
        e->exp_avg = shard_buffer(e, "exp_avg", RL_F32, RL_MEM_OPTIM);
        e->exp_avg_sq = shard_buffer(e, "exp_avg_sq", RL_F32, RL_MEM_OPTIM);
        int bad = !e->master || !e->exp_avg || !e->exp_avg_sq;
        if (st == ZERO_STAGE1 || st == ZERO_STAGE2)
            bad |= !(e->flat_param = rl_tensor_new_1d(ctx, "flat_param", RL_BF16, RL_MEM_PARAM, e->flat_numel));
        if (st == ZERO_STAGE1)
            bad |= !(e->flat_grad = rl_tensor_new_1d(ctx, "flat_grad", RL_BF16, RL_MEM_GRAD, e->flat_numel));
        else
            bad |= !(e->grad_shard = shard_buffer(e, "grad_shard", RL_BF16, RL_MEM_GRAD));
        if (st >= ZERO_STAGE3)
            bad |= !(e->param_shard = shard_buffer(e, "param_shard", RL_BF16, RL_MEM_PARAM));
        rc = bad ? RL_ERR_NOMEM : place_params(e);
    }
    if (rc) {
        zero_engine_free(e);
        return NULL;
    }
    m->hook_arg = e;
    m->unit_arg = e;
    if (cfg->stage == ZERO_STAGE2) {
        m->hook = zero_grad_ready;
        m->pre_backward = zero_pre_backward;
    } else if (cfg->stage >= ZERO_STAGE3) {
        m->hook = zero_grad_ready;
        m->pre_forward = zero3_pre_forward;
        m->post_forward = zero3_post_forward;
        m->pre_backward = zero3_pre_backward;
        m->post_backward = zero3_post_backward;
    }
    if (rl_rank(ctx) == 0) {
        rl_ctx_set_meta(ctx, "stage", zero_stage_name(cfg->stage));
        if (cfg->stage == ZERO_HSDP && e->replica_comm) {
            const char *names[2] = { "rep", "shard" };
            int sizes[2] = { rl_comm_size(e->replica_comm), e->n };
            rl_ctx_set_mesh(ctx, 2, names, sizes);
        } else {
            const char *names[1] = { "dp" };
            int sizes[1] = { e->n };
            rl_ctx_set_mesh(ctx, 1, names, sizes);
        }
    }
    rl_mem_sample_now(ctx);
    return e;
}

void zero_engine_free(zero_engine *e)
{
    if (!e)
        return;
    rl_model *m = e->model;
    for (int u = 0; e->units && u < e->nunits; u++) {
        zero_unit *U = &e->units[u];
        if (U->gather)
            rl_wait(U->gather);
        if (U->reduce)
            rl_wait(U->reduce);
        U->gather = U->reduce = NULL;
    }
    for (int i = 0; m && e->value_view && i < m->nparams; i++) {
        rl_param *p = &m->params[i];
        if (p->value == e->value_view[i])
            p->value = NULL;
        if (p->grad == e->grad_view[i])
            p->grad = NULL;
        rl_tensor_free(e->value_view[i]);
        rl_tensor_free(e->grad_view[i]);
    }
    for (int u = 0; e->units && u < e->nunits; u++) {
        rl_tensor_free(e->units[u].full);
        rl_tensor_free(e->units[u].grad);
    }
    if (m && m->hook_arg == e) {
        m->hook = NULL;
        m->hook_arg = NULL;
    }
    if (m && m->unit_arg == e) {
        m->pre_forward = m->post_forward = m->pre_backward = m->post_backward = NULL;
        m->unit_arg = NULL;
    }
    rl_tensor_free(e->flat_param);
    rl_tensor_free(e->flat_grad);
    rl_tensor_free(e->param_shard);
    rl_tensor_free(e->grad_shard);
    rl_tensor_free(e->master);
    rl_tensor_free(e->exp_avg);
    rl_tensor_free(e->exp_avg_sq);
    if (e->shard_comm && e->shard_comm != e->world)
        rl_comm_free(e->shard_comm);
    if (e->replica_comm)
        rl_comm_free(e->replica_comm);
    free(e->units);
    free(e->unit_of_model_unit);
    free(e->unit_of_param);
    free(e->offset_in_unit);
    free(e->value_view);
    free(e->grad_view);
    free(e->scratch);
    free(e);
}

/* ================================================================== one step */

int zero_train_step(zero_engine *e, rl_data *data, int64_t step, int64_t micro_batch, rl_batch *batch,
                    float *loss)
{
    if (!e || !data || !batch || micro_batch < 1)
        return rl_error(e ? e->ctx : NULL, RL_ERR_ARG, "zero_train_step: engine, data and batch are required, "
                        "micro_batch >= 1");
    float l = 0;
    int rc = rl_data_get(data, e->ctx, step, (int64_t)rl_rank(e->ctx) * micro_batch, micro_batch, batch);
    if (!rc && e->flat_grad)
        rc = rl_zero(e->ctx, e->flat_grad);
    if (!rc)
        rc = rl_model_forward(e->model, batch, &l);
    if (!rc)
        rc = rl_model_backward(e->model, 1.0f);
    if (!rc)
        rc = e->cfg.stage == ZERO_STAGE1 ? zero1_reduce_scatter_grads(e) : zero_finalize_grads(e);
    if (!rc)
        rc = zero_shard_adamw(e);
    if (!rc && (e->cfg.stage == ZERO_STAGE1 || e->cfg.stage == ZERO_STAGE2))
        rc = zero_all_gather_params(e);
    if (loss)
        *loss = l;
    return rc;
}

/* ================================================================== a whole run */

zero_run_config zero_run_config_default(void)
{
    zero_run_config c;
    memset(&c, 0, sizeof c);
    rl_opts_init(&c.opts);
    c.model = rl_model_config_default(RL_MODEL_MLP);
    c.model.hidden = 256;
    c.model.layers = 8;
    c.model.out_dim = 16;
    c.model.param_dtype = RL_BF16;
    c.model.grad_dtype = RL_BF16;
    c.zero.stage = ZERO_STAGE3;
    c.zero.wrap_per_block = 1;
    c.zero.forward_prefetch = 1;
    c.zero.backward_prefetch = 1;
    c.zero.group = 2;
    c.zero.adamw = rl_adamw_defaults();
    c.micro_batch = 32;
    c.steps = 5;
    c.data_seed = 7;
    return c;
}

typedef struct rank_log {
    double step_start;
    int64_t shard0, shard1, rep0, rep1;
    int64_t calls0[RL_COLL_NKINDS], calls1[RL_COLL_NKINDS];
    rl_mem_account mem;
    int nunits, n;
    int64_t params, max_unit, max_pair;
    float *loss;
} rank_log;

typedef struct run_shared {
    const zero_run_config *cfg;
    rank_log logs[ZERO_MAX_RANKS];
} run_shared;

static void snap_counters(const zero_engine *e, int64_t *shard, int64_t *rep, int64_t *calls)
{
    const rl_comm_counters a = rl_comm_get_counters(e->shard_comm), b = rl_comm_get_counters(e->replica_comm);
    *shard = a.bytes_sent;
    *rep = b.bytes_sent; /* (zero without a replica communicator) */
    for (int k = 0; k < RL_COLL_NKINDS; k++)
        calls[k] = a.calls[k] + b.calls[k];
}

static int run_rank(rl_ctx *ctx, void *arg)
{
    run_shared *sh = arg;
    const zero_run_config *cfg = sh->cfg;
    rank_log *lg = &sh->logs[rl_rank(ctx)];
    rl_model *m = rl_model_new(ctx, &cfg->model);
    rl_data *data = m ? rl_data_regression(ctx, cfg->model.hidden, cfg->model.out_dim, cfg->data_seed) : NULL;
    if (!m || !data) {
        rl_data_free(data);
        rl_model_free(m);
        return RL_ERR_ARG;
    }
    lg->params = rl_model_numel(m);
    rl_clear_error(ctx);
    zero_engine *e = zero_engine_new(m, rl_comm_world(ctx), &cfg->zero);
    if (!e) {
        rl_data_free(data);
        rl_model_free(m);
        return strstr(rl_last_error(ctx), "not implemented yet") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG;
    }
    lg->nunits = e->nunits;
    lg->n = e->n;
    for (int u = 0; u < e->nunits; u++) {
        int64_t pu = e->units[u].padded, pair = pu + (u + 1 < e->nunits ? e->units[u + 1].padded : 0);
        lg->max_unit = pu > lg->max_unit ? pu : lg->max_unit;
        lg->max_pair = pair > lg->max_pair ? pair : lg->max_pair;
    }
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    int rc = 0;
    for (int s = 0; s < cfg->steps && !rc; s++) {
        snap_counters(e, &lg->shard0, &lg->rep0, lg->calls0);
        rl_mem_reset_peaks(rl_ctx_mem(ctx));
        lg->step_start = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        rl_step_begin(ctx, s);
        float loss = 0;
        rc = zero_train_step(e, data, s, cfg->micro_batch, &batch, &loss);
        rl_step_end(ctx);
        snap_counters(e, &lg->shard1, &lg->rep1, lg->calls1);
        lg->mem = *rl_ctx_mem(ctx);
        if (lg->loss)
            lg->loss[s] = loss;
    }
    rl_batch_free(&batch);
    zero_engine_free(e);
    rl_data_free(data);
    rl_model_free(m);
    return rc;
}

int zero_run(const zero_run_config *cfg, zero_run_stats *out)
{
    memset(out, 0, sizeof *out);
    int n = cfg->opts.ranks;
    if (n < 1 || n > ZERO_MAX_RANKS || cfg->steps < 1 || cfg->micro_batch < 1)
        return rl_error(NULL, RL_ERR_ARG, "zero_run: need 1..%d ranks (got %d), steps >= 1 and micro_batch >= 1",
                        ZERO_MAX_RANKS, n);
    run_shared *sh = calloc(1, sizeof *sh);
    if (!sh)
        return RL_ERR_NOMEM;
    sh->cfg = cfg;
    for (int r = 0; r < n; r++)
        sh->logs[r].loss = calloc((size_t)cfg->steps, sizeof(float));
    rl_trace *tr = NULL;
    /* --tui: the live view while the ranks run (it stays open until q) */
    int rc = cfg->opts.tui ? rl_tui_run_live(&cfg->opts, run_rank, sh, &tr) : rl_launch(&cfg->opts, run_rank, sh, &tr);
    if (!rc && tr) {
        int s = cfg->steps - 1;
        const rank_log *l0 = &sh->logs[0];
        out->ranks = n;
        out->n = l0->n;
        out->nunits = l0->nunits;
        out->params = l0->params;
        out->max_unit_padded = l0->max_unit;
        out->max_pair_padded = l0->max_pair;
        for (int c = 0; c < RL_MEM_NCAT; c++) {
            out->mem_current[c] = l0->mem.current[c];
            out->mem_peak[c] = l0->mem.peak[c];
        }
        out->peak_total = l0->mem.peak_total;
        out->shard_sent = l0->shard1 - l0->shard0;
        out->replica_sent = l0->rep1 - l0->rep0;
        out->all_gathers = l0->calls1[RL_COLL_ALL_GATHER] - l0->calls0[RL_COLL_ALL_GATHER];
        out->reduce_scatters = l0->calls1[RL_COLL_REDUCE_SCATTER] - l0->calls0[RL_COLL_REDUCE_SCATTER];
        out->all_reduces = l0->calls1[RL_COLL_ALL_REDUCE] - l0->calls0[RL_COLL_ALL_REDUCE];
        for (int r = 0; r < n; r++) {
            double busy = 0, idle = 0, comm = 0, end = sh->logs[r].step_start;
            for (size_t i = 0; i < tr->n; i++) {
                const rl_trace_event *ev = &tr->ev[i];
                if (ev->rank != r || ev->tags[RL_TAG_STEP] != s)
                    continue;
                double d = ev->vend - ev->vstart;
                if (ev->stream == RL_STREAM_COMPUTE && ev->cat == RL_CAT_COMPUTE)
                    busy += d;
                else if (ev->stream == RL_STREAM_COMPUTE && ev->cat == RL_CAT_IDLE)
                    idle += d;
                else if (ev->stream == RL_STREAM_COMM && ev->cat == RL_CAT_COMM)
                    comm += d;
                if (ev->stream == RL_STREAM_COMPUTE && ev->vend > end)
                    end = ev->vend;
            }
            double t = end - sh->logs[r].step_start;
            if (t > out->step_time)
                out->step_time = t;
            if (r == 0) {
                out->compute_time = busy;
                out->exposed_comm = idle;
                out->comm_time = comm;
            }
        }
        for (int r = 0; r < n; r++) {
            out->first_loss += sh->logs[r].loss[0] / n;
            out->last_loss += sh->logs[r].loss[s] / n;
        }
        if (cfg->print_loss)
            for (int k = 0; k < cfg->steps; k++) {
                double mean = 0;
                for (int r = 0; r < n; r++)
                    mean += sh->logs[r].loss[k] / n;
                printf("step %3d  loss %.5f\n", k, mean);
            }
        if (cfg->print_chart && !cfg->opts.tui) {
            char err[128];
            printf("\nMemory view after the run (per rank: bytes by category, current and peak; explore it with "
                   "--trace FILE, then ringlab view FILE, key 4):\n");
            if (rl_tui_print_chart(tr, RL_VIEW_MEMORY, 2 * n + 14, stdout, err, sizeof err))
                printf("(no memory chart: %s)\n", err);
        }
    }
    rl_trace_free(tr);
    for (int r = 0; r < n; r++)
        free(sh->logs[r].loss);
    free(sh);
    return rc;
}
