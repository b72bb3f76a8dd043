/* ddp_support.c — the parts of Lab 28 you do not write: bucket-plan storage, the reducer's
 * construction (gradient_as_bucket_view), a whole training run with its measurements from
 * the trace, and the sweep table's printer. Not edited by learners. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ddp.h"
#include "tui.h"

int ddp_plan_alloc(ddp_bucket_plan *plan, int nparams)
{
    memset(plan, 0, sizeof *plan);
    size_t n = (size_t)(nparams > 0 ? nparams : 1);
    plan->nparams = nparams;
    plan->buckets = calloc(n, sizeof *plan->buckets);
    plan->order = calloc(n, sizeof *plan->order);
    plan->bucket_of = calloc(n, sizeof *plan->bucket_of);
    plan->offset_of = calloc(n, sizeof *plan->offset_of);
    if (!plan->buckets || !plan->order || !plan->bucket_of || !plan->offset_of) {
        ddp_plan_free(plan);
        return RL_ERR_NOMEM;
    }
    for (int i = 0; i < nparams; i++)
        plan->bucket_of[i] = -1;
    return 0;
}

void ddp_plan_free(ddp_bucket_plan *plan)
{
    if (!plan)
        return;
    free(plan->buckets);
    free(plan->order);
    free(plan->bucket_of);
    free(plan->offset_of);
    memset(plan, 0, sizeof *plan);
}

/* Checks that a plan covers every parameter once with consistent offsets, so a wrong plan
 * gives a message instead of a crash. */
static int check_plan(rl_ctx *ctx, const ddp_param_desc *d, int n, const ddp_bucket_plan *p)
{
    if (p->nbuckets < 0 || p->nbuckets > (n > 0 ? n : 0) || p->norder < 0 || p->norder > n)
        return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: nbuckets %d / norder %d out of range for %d parameters",
                        p->nbuckets, p->norder, n);
    int covered = 0;
    for (int b = 0; b < p->nbuckets; b++) {
        const ddp_bucket *bk = &p->buckets[b];
        if (bk->first < 0 || bk->nparams < 1 || bk->first + bk->nparams > p->norder)
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: bucket %d (first %d, %d params) does not fit in "
                            "order[0..%d)", b, bk->first, bk->nparams, p->norder);
        int64_t off = 0;
        for (int k = bk->first; k < bk->first + bk->nparams; k++) {
            int i = p->order[k];
            if (i < 0 || i >= n || p->bucket_of[i] != b || p->offset_of[i] != off)
                return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: order[%d] = %d is not laid out at offset %lld "
                                "of bucket %d", k, i, (long long)off, b);
            off += d[i].numel;
        }
        if (off != bk->numel)
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: bucket %d holds %lld elements but says numel %lld", b,
                            (long long)off, (long long)bk->numel);
        covered += bk->nparams;
    }
    for (int i = 0; i < n; i++)
        if (d[i].tied_to < 0 && (p->bucket_of[i] < 0 || p->bucket_of[i] >= p->nbuckets))
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: parameter %d (%s) is in no bucket", i, d[i].name);
    if (covered != p->norder)
        return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: buckets cover %d entries of order[] but norder is %d",
                        covered, p->norder);
    return 0;
}

void ddp_reducer_reset(ddp_reducer *r)
{
    if (!r)
        return;
    for (int b = 0; b < r->plan.nbuckets; b++)
        r->work[b] = NULL;
    memset(r->scratch, 0, (size_t)r->nscratch * sizeof *r->scratch);
}

ddp_reducer *ddp_reducer_new(rl_model *m, rl_comm *comm, double bucket_cap_mb, double first_bucket_mb)
{
    rl_ctx *ctx = m ? m->ctx : NULL;
    if (!m || !comm)
        return rl_error(ctx, RL_ERR_ARG, "ddp_reducer_new: model and communicator are required"), NULL;
    if (!(bucket_cap_mb > 0) || !(first_bucket_mb > 0))
        return rl_error(ctx, RL_ERR_ARG, "ddp_reducer_new: bucket caps must be > 0 MiB (got %g and %g)",
                        bucket_cap_mb, first_bucket_mb), NULL;
    ddp_reducer *r = calloc(1, sizeof *r);
    int n = m->nparams;
    r->ctx = ctx;
    r->comm = comm;
    r->model = m;
    r->bucket_cap_mb = bucket_cap_mb;
    r->first_bucket_mb = first_bucket_mb;
    r->require_sync = 1;
    r->descs = calloc((size_t)(n > 0 ? n : 1), sizeof *r->descs);
    for (int i = 0; i < n; i++) {
        rl_param *p = &m->params[i];
        r->descs[i] = (ddp_param_desc){ p->name, p->numel, p->grad ? p->grad->dtype : RL_F32, -1 };
    }
    int rc = ddp_plan_alloc(&r->plan, n);
    if (!rc) {
        rl_clear_error(ctx);
        rc = ddp_assign_buckets(ctx, r->descs, n, (int64_t)llround(first_bucket_mb * DDP_MIB),
                                (int64_t)llround(bucket_cap_mb * DDP_MIB), &r->plan);
        if (rc && !rl_last_error(ctx)[0])
            rl_error(ctx, rc, "ddp_assign_buckets failed (%s)", rl_status_name(rc));
    }
    if (!rc)
        rc = check_plan(ctx, r->descs, n, &r->plan);
    if (rc) {
        ddp_plan_free(&r->plan);
        free(r->descs);
        free(r);
        return NULL;
    }
    int nb = r->plan.nbuckets;
    r->bucket_buf = calloc((size_t)nb + 1, sizeof *r->bucket_buf);
    r->work = calloc((size_t)nb + 1, sizeof *r->work);
    r->nscratch = 4 * (n + nb) + 64;
    r->scratch = calloc((size_t)r->nscratch, sizeof *r->scratch);
    if (!r->bucket_buf || !r->work || !r->scratch) {
        rl_error(ctx, RL_ERR_NOMEM, "ddp_reducer_new: out of memory for the reducer's tables (%d buckets)", nb);
        ddp_reducer_free(r);
        return NULL;
    }
    for (int b = 0; b < nb; b++) {
        char name[32];
        snprintf(name, sizeof name, "bucket%d", b);
        int first = r->plan.order[r->plan.buckets[b].first];
        r->bucket_buf[b] = rl_tensor_new_1d(ctx, name, r->descs[first].dtype, RL_MEM_GRAD, r->plan.buckets[b].numel);
        if (!r->bucket_buf[b]) {
            ddp_reducer_free(r);
            return NULL;
        }
    }
    /* gradient_as_bucket_view: each grad becomes a view into its bucket (its old grad is freed) */
    for (int i = 0; i < n; i++) {
        rl_param *p = &m->params[i];
        int b = r->plan.bucket_of[i];
        rl_tensor *v = rl_tensor_view(r->bucket_buf[b], p->name, r->plan.offset_of[i], p->ndim, p->shape, p->dims);
        if (!v) {
            ddp_reducer_free(r);
            return NULL;
        }
        if (p->grad)
            rl_tensor_copy(v, p->grad);
        if (p->own_grad) {
            rl_tensor_free(p->own_grad);
            p->own_grad = NULL;
        }
        p->grad = v;
    }
    ddp_reducer_reset(r);
    m->hook = ddp_grad_ready;
    m->hook_arg = r;
    return r;
}

void ddp_reducer_free(ddp_reducer *r)
{
    if (!r)
        return;
    rl_model *m = r->model;
    /* buckets still in flight after an error (their handles may be lost): if they do not finish,
     * the buffers are left to the run, which frees every tensor once the comm streams stop */
    int drained = rl_comm_drain(r->ctx, 3.0) == 0;
    for (int i = 0; i < m->nparams && r->bucket_buf; i++) {
        rl_param *p = &m->params[i];
        if (p->own_grad || !p->grad || r->plan.bucket_of[i] < 0)
            continue;
        /* give the model a grad of its own again, with the bucket's values */
        rl_tensor *g = rl_tensor_new(r->ctx, p->name, p->grad->dtype, RL_MEM_GRAD, p->ndim, p->shape, p->dims);
        if (g)
            rl_tensor_copy(g, p->grad);
        rl_tensor_free(p->grad);
        p->grad = p->own_grad = g;
    }
    if (m->hook == ddp_grad_ready && m->hook_arg == r)
        m->hook = NULL, m->hook_arg = NULL;
    for (int b = 0; r->bucket_buf && drained && b < r->plan.nbuckets; b++)
        rl_tensor_free(r->bucket_buf[b]);
    free(r->bucket_buf);
    free(r->work);
    free(r->scratch);
    ddp_plan_free(&r->plan);
    free(r->descs);
    free(r);
}

/* ================================================================== a whole run */

ddp_run_config ddp_run_config_default(void)
{
    ddp_run_config c;
    memset(&c, 0, sizeof c);
    rl_opts_init(&c.opts);
    c.model = rl_model_config_default(RL_MODEL_MLP);
    c.model.hidden = 256;
    c.model.layers = 8;
    c.model.out_dim = 16;
    c.micro_batch = 32;
    c.accum_steps = 1;
    c.steps = 10;
    /* PyTorch's 25 MiB cap is sized for models of hundreds of MiB; this model has 16 MiB of
     * gradients, so the lab scales the cap down to 4 MiB (a quarter of the model, as 25 MiB
     * is of a 100 MiB model): 5 buckets. --bucket-cap-mb 25 shows what the default does. */
    c.bucket_cap_mb = 4.0;
    c.first_bucket_mb = DDP_DEFAULT_FIRST_BUCKET_MB;
    c.lr = 1e-3f;
    c.data_seed = 7;
    return c;
}

/* What one rank records while it trains. */
typedef struct rank_log {
    double step_start;         /* compute clock when the measured step began */
    double backward_end;       /* compute clock when the last backward ended */
    int64_t calls0, sent0, calls1, sent1;
    int nbuckets;
    int64_t bucket_bytes[64], bucket_params[64];
    float *loss;               /* per step */
} rank_log;

typedef struct run_shared {
    const ddp_run_config *cfg;
    rank_log logs[DDP_MAX_RANKS];
} run_shared;

/* post_backward of unit 0 fires when the whole backward is done (unit 0 goes last). */
typedef struct unit_arg { rank_log *log; rl_ctx *ctx; } unit_arg;

static int unit_post_backward(rl_unit *u, void *arg)
{
    unit_arg *ua = arg;
    if (u->index == 0)
        ua->log->backward_end = rl_stream_time(ua->ctx, RL_STREAM_COMPUTE);
    return 0;
}

static int run_rank(rl_ctx *ctx, void *arg)
{
    run_shared *sh = arg;
    const ddp_run_config *cfg = sh->cfg;
    int rank = rl_rank(ctx);
    rank_log *lg = &sh->logs[rank];
    rl_comm *w = rl_comm_world(ctx);
    rl_comm_set_role(w, "dp");
    int rc = 0;
    rl_model *m = rl_model_new(ctx, &cfg->model);
    rl_data *data = m ? rl_data_regression(ctx, cfg->model.hidden, cfg->model.out_dim, cfg->data_seed) : NULL;
    if (!m || !data) {
        rl_data_free(data);
        rl_model_free(m);
        return RL_ERR_ARG;
    }
    ddp_reducer *r = ddp_reducer_new(m, w, cfg->bucket_cap_mb, cfg->first_bucket_mb);
    if (!r) {
        rl_data_free(data);
        rl_model_free(m);
        return strstr(rl_last_error(ctx), "not implemented yet") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG;
    }
    unit_arg ua = { lg, ctx };
    m->post_backward = unit_post_backward;
    m->unit_arg = &ua;
    lg->nbuckets = r->plan.nbuckets;
    for (int b = 0; b < r->plan.nbuckets && b < 64; b++) {
        lg->bucket_bytes[b] = r->plan.buckets[b].bytes;
        lg->bucket_params[b] = r->plan.buckets[b].nparams;
    }
    rl_adamw_cfg ac = rl_adamw_defaults();
    ac.lr = cfg->lr;
    rl_model_optim *opt = rl_model_adamw_new(m, ac);
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    rl_mem_reset_peaks(rl_ctx_mem(ctx)); /* the peaks of the steps, not of building the reducer */
    for (int s = 0; s < cfg->steps && !rc; s++) {
        const rl_comm_counters c = rl_comm_get_counters(w);
        lg->calls0 = c.calls[RL_COLL_ALL_REDUCE];
        lg->sent0 = c.bytes_sent;
        lg->step_start = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        rl_step_begin(ctx, s);
        float loss = 0;
        rc = ddp_train_step(r, data, s, cfg->micro_batch, cfg->accum_steps > 0 ? cfg->accum_steps : 1, &batch, &loss);
        if (!rc)
            rc = rl_model_adamw_step(opt);
        rl_step_end(ctx);
        const rl_comm_counters after = rl_comm_get_counters(w); /* a copy: read again after the step */
        lg->calls1 = after.calls[RL_COLL_ALL_REDUCE];
        lg->sent1 = after.bytes_sent;
        if (lg->loss)
            lg->loss[s] = loss;
    }
    rl_batch_free(&batch);
    rl_model_optim_free(opt);
    ddp_reducer_free(r);
    rl_data_free(data);
    rl_model_free(m);
    return rc;
}

int ddp_run(const ddp_run_config *cfg, ddp_run_stats *out)
{
    memset(out, 0, sizeof *out);
    int n = cfg->opts.ranks;
    if (n < 1 || n > DDP_MAX_RANKS || cfg->steps < 1 || cfg->micro_batch < 1)
        return rl_error(NULL, RL_ERR_ARG, "ddp_run: need 1..%d ranks (got %d), steps >= 1 and micro_batch >= 1",
                        DDP_MAX_RANKS, n);
    run_shared *sh = calloc(1, sizeof *sh);
    sh->cfg = cfg;
    for (int r = 0; r < DDP_MAX_RANKS; r++) /* (every slot: a multi-process run fills its own rank's) */
        sh->logs[r].loss = calloc((size_t)cfg->steps, sizeof(float));
    rl_trace *tr = NULL;
    /* --tui: the live timeline while the ranks run (it stays open until q) */
    int rc = cfg->opts.tui ? rl_tui_run_live(&cfg->opts, run_rank, sh, &tr) : rl_launch(&cfg->opts, run_rank, sh, &tr);
    /* one process per rank (docs/launch.md): this process knows its own rank only */
    int world = n, me = rl_launch_process_rank(&cfg->opts, &world);
    int first = me >= 0 ? me : 0, last = me >= 0 ? me + 1 : n;
    out->process_rank = me;

    if (!rc && last <= DDP_MAX_RANKS) {
        int s = cfg->steps - 1;
        const rank_log *l0 = &sh->logs[first];
        out->ranks = me >= 0 ? world : n;
        out->nbuckets = l0->nbuckets;
        for (int b = 0; b < l0->nbuckets && b < 64; b++) {
            out->bucket_bytes[b] = l0->bucket_bytes[b];
            out->bucket_params[b] = l0->bucket_params[b];
            out->param_bytes += l0->bucket_bytes[b];
            out->params += l0->bucket_bytes[b] / 4;
        }
        out->first_comm_start = -1;
        for (int r = first; r < last; r++) {
            double busy = 0, idle = 0, comm = 0, end = sh->logs[r].step_start, start1 = -1;
            for (size_t i = 0; i < tr->n; i++) {
                const rl_trace_event *e = &tr->ev[i];
                if (e->rank != r || e->tags[RL_TAG_STEP] != s)
                    continue;
                double d = e->vend - e->vstart;
                if (e->stream == RL_STREAM_COMPUTE && e->cat == RL_CAT_COMPUTE)
                    busy += d;
                else if (e->stream == RL_STREAM_COMPUTE && e->cat == RL_CAT_IDLE)
                    idle += d;
                else if (e->stream == RL_STREAM_COMM && e->cat == RL_CAT_COMM) {
                    comm += d;
                    if (start1 < 0 || e->vstart < start1)
                        start1 = e->vstart;
                }
                if (e->stream == RL_STREAM_COMPUTE && e->vend > end)
                    end = e->vend;
            }
            double t = end - sh->logs[r].step_start;
            out->rank_step[r] = t;
            out->rank_wait[r] = idle;
            if (t > out->step_time)
                out->step_time = t;
            if (r == first) { /* rank 0 (in a multi-process run: this process's rank) */
                out->compute_time = busy;
                out->exposed_comm = idle;
                out->comm_time = comm;
                out->backward_end = l0->backward_end - l0->step_start;
                out->first_comm_start = start1 < 0 ? -1 : start1 - l0->step_start;
            }
        }
        out->overlap = out->comm_time > 0 ? 1.0 - out->exposed_comm / out->comm_time : 1.0;
        if (out->overlap < 0)
            out->overlap = 0;
        out->measured_overlap = -1;
        const char *be = rl_trace_get_meta(tr, "backend");
        if (be) {
            snprintf(out->backend, sizeof out->backend, "%s", be);
            out->measured_overlap = rl_trace_comm_hidden(tr, first, s, 0, &out->measured_comm, &out->measured_hidden);
        }
        out->bytes_sent = l0->sent1 - l0->sent0;
        out->allreduce_calls = l0->calls1 - l0->calls0;
        out->first_loss = 0;
        out->last_loss = 0;
        for (int r = first; r < last; r++) {
            out->first_loss += sh->logs[r].loss[0] / (last - first);
            out->last_loss += sh->logs[r].loss[s] / (last - first);
        }
        if (cfg->print_loss)
            for (int k = 0; k < cfg->steps; k++) {
                double mean = 0;
                for (int r = first; r < last; r++)
                    mean += sh->logs[r].loss[k] / (last - first);
                printf("step %3d  loss %.5f\n", k, mean);
            }
        if (cfg->print_chart && !cfg->opts.tui) {
            printf("\nTimeline of step %d (%s; compute and comm stream of every rank; "
                   "explore it with --trace FILE, then ringlab view FILE):\n", s,
                   rl_trace_get_meta(tr, "backend") ? "measured on the GPU" : "modelled");
            rl_tui_print_step_chart(tr, s, stdout);
        }
    }
    rl_trace_free(tr);
    for (int r = 0; r < DDP_MAX_RANKS; r++)
        free(sh->logs[r].loss);
    free(sh);
    return rc;
}

/* ================================================================== the sweep */

ddp_sweep_config ddp_sweep_config_default(void)
{
    ddp_sweep_config c;
    memset(&c, 0, sizeof c);
    c.base = ddp_run_config_default();
    c.base.steps = 2;
    double caps[] = { 1, 5, 25, 50, 100 };
    c.ncaps = 5;
    memcpy(c.caps_mb, caps, sizeof caps);
    c.max_ranks = 8;
    c.straggler_rank = c.base.opts.ranks - 1;
    c.straggler_ms = 1.0;
    return c;
}

void ddp_sweep_print(const ddp_sweep_table *t, FILE *f)
{
    fprintf(f, "%-26s %5s %8s %8s %10s %10s %10s %10s %8s %9s %8s\n", "run", "ranks", "cap MiB", "buckets",
            "step (us)", "comm (us)", "a-b (us)", "exposed", "hidden", "speedup", "effic.");
    for (int i = 0; i < t->nrows; i++) {
        const ddp_sweep_row *r = &t->rows[i];
        const ddp_run_stats *s = &r->stats;
        char sp[16] = "-", ef[16] = "-";
        if (r->speedup > 0)
            snprintf(sp, sizeof sp, "%.2fx", r->speedup);
        if (r->efficiency > 0)
            snprintf(ef, sizeof ef, "%.1f%%", 100.0 * r->efficiency);
        fprintf(f, "%-26s %5d %8g %8d %10.1f %10.1f %10.1f %10.1f %7.0f%% %9s %8s\n", r->label, r->ranks,
                r->bucket_cap_mb, s->nbuckets, s->step_time * 1e6, s->comm_time * 1e6, r->predicted_comm * 1e6,
                s->exposed_comm * 1e6, 100.0 * s->overlap, sp, ef);
    }
    fprintf(f, "(virtual time on the modelled hardware; 'comm' = time the comm stream ran all-reduces in one step, "
               "'a-b' = your ring formula summed over the buckets, 'exposed' = time the compute stream waited for "
               "comm; world rows: weak scaling, same samples per rank)\n");
}
