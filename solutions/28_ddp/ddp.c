/* ddp.c — Lab 28 reference solution: ring all-reduce from send/recv, bucket assignment,
 * overlapped DDP (the Reducer's grad-ready hook), no_sync gradient accumulation, α-β
 * times and the scaling sweep. Same functions as labs/28_ddp/ddp.c, filled in. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ddp.h"

/* ================================================================== 28.1 ring all-reduce */

/* Chunk c of count elements over n ranks: [count·c/n, count·(c+1)/n). */
static int64_t chunk_lo(int64_t count, int n, int c) { return count * c / n; }
static int64_t chunk_len(int64_t count, int n, int c) { return chunk_lo(count, n, c + 1) - chunk_lo(count, n, c); }
static int ring_mod(int a, int n) { return ((a % n) + n) % n; }

/* One ring step: send chunk sc of buf to the right neighbour while receiving chunk rc from
 * the left one into dst (a slice of the scratch buffer or of buf itself). */
static int ring_step(rl_comm *comm, rl_tensor *buf, int sc, rl_tensor *dst_base, int64_t dst_off, int rc)
{
    rl_ctx *ctx = rl_comm_ctx(comm);
    int n = rl_comm_size(comm), r = rl_comm_rank(comm);
    int64_t count = buf->numel;
    int64_t slen = chunk_len(count, n, sc), rlen = chunk_len(count, n, rc);
    rl_tensor *s = slen ? rl_tensor_slice(buf, chunk_lo(count, n, sc), slen) : NULL;
    rl_tensor *d = rlen ? rl_tensor_slice(dst_base, dst_off, rlen) : NULL;
    int rc_ = 0;
    rl_set_tag(ctx, RL_TAG_CHUNK, sc);
    rl_group_start(ctx);
    if (s && !rl_send(comm, s, (r + 1) % n, 0))
        rc_ = RL_ERR_ARG;
    if (d && !rl_recv(comm, d, (r + n - 1) % n, 0))
        rc_ = RL_ERR_ARG;
    int g = rl_group_end(ctx);
    rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    rl_tensor_free(s);
    rl_tensor_free(d);
    return rc_ ? rc_ : g;
}

int ddp_ring_all_reduce(rl_comm *comm, rl_tensor *buf)
{
    rl_ctx *ctx = rl_comm_ctx(comm);
    if (!comm || !buf)
        return rl_error(ctx, RL_ERR_ARG, "ddp_ring_all_reduce: communicator and buffer are required");
    int n = rl_comm_size(comm), r = rl_comm_rank(comm);
    int64_t count = buf->numel;
    if (n == 1 || count == 0)
        return 0;
    rl_tensor *tmp = rl_tensor_new_1d(ctx, "ring_recv", buf->dtype, RL_MEM_COMM, (count + n - 1) / n);
    if (!tmp)
        return RL_ERR_NOMEM;
    int rc = 0;
    /* reduce-scatter: at step s rank r sends chunk r−s and adds the incoming chunk r−s−1;
     * after n−1 steps it holds the full sum of chunk r+1 */
    for (int s = 0; s < n - 1 && !rc; s++) {
        int sc = ring_mod(r - s, n), rcv = ring_mod(r - s - 1, n);
        rc = ring_step(comm, buf, sc, tmp, 0, rcv);
        int64_t len = chunk_len(count, n, rcv);
        if (!rc && len) {
            rl_tensor *in = rl_tensor_slice(tmp, 0, len), *acc = rl_tensor_slice(buf, chunk_lo(count, n, rcv), len);
            rc = rl_axpy(ctx, 1.0f, in, acc);
            rl_tensor_free(in);
            rl_tensor_free(acc);
        }
    }
    /* all-gather: at step s rank r passes on the finished chunk r+1−s and receives chunk r−s
     * straight into place */
    for (int s = 0; s < n - 1 && !rc; s++) {
        int sc = ring_mod(r + 1 - s, n), rcv = ring_mod(r - s, n);
        rc = ring_step(comm, buf, sc, buf, chunk_lo(count, n, rcv), rcv);
    }
    rl_tensor_free(tmp);
    return rc;
}

/* ================================================================== 28.2 buckets */

int ddp_assign_buckets(rl_ctx *ctx, const ddp_param_desc *params, int nparams, int64_t first_cap_bytes,
                       int64_t cap_bytes, ddp_bucket_plan *plan)
{
    if (!plan || nparams < 0 || (nparams > 0 && !params))
        return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: need a parameter list and a plan");
    if (first_cap_bytes <= 0 || cap_bytes <= 0)
        return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: caps must be > 0 bytes (got first %lld, cap %lld)",
                        (long long)first_cap_bytes, (long long)cap_bytes);
    for (int i = 0; i < nparams; i++) {
        if (params[i].numel < 0)
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: parameter %d (%s) has %lld elements", i,
                            params[i].name ? params[i].name : "?", (long long)params[i].numel);
        if (params[i].tied_to < -1 || params[i].tied_to >= i)
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: parameter %d (%s) is tied to %d; tied_to must be "
                            "-1 or an earlier index", i, params[i].name ? params[i].name : "?", params[i].tied_to);
        if (params[i].dtype != params[0].dtype)
            return rl_error(ctx, RL_ERR_ARG, "ddp_assign_buckets: parameter %d is %s but parameter 0 is %s; a bucket "
                            "holds one dtype", i, rl_dtype_name(params[i].dtype), rl_dtype_name(params[0].dtype));
    }
    plan->nbuckets = 0;
    plan->norder = 0;
    int64_t limit = first_cap_bytes;
    ddp_bucket *cur = NULL;
    for (int i = nparams - 1; i >= 0; i--) {
        if (params[i].tied_to >= 0)
            continue; /* a second registration of one tensor: bucketed with its original */
        if (!cur) {
            cur = &plan->buckets[plan->nbuckets++];
            *cur = (ddp_bucket){ plan->norder, 0, 0, 0 };
        }
        plan->order[plan->norder++] = i;
        plan->bucket_of[i] = plan->nbuckets - 1;
        plan->offset_of[i] = cur->numel;
        cur->nparams++;
        cur->numel += params[i].numel;
        cur->bytes += params[i].numel * (int64_t)rl_dtype_size(params[i].dtype);
        if (cur->bytes >= limit) {
            cur = NULL;
            limit = cap_bytes;
        }
    }
    for (int i = 0; i < nparams; i++) {
        int o = i;
        while (params[o].tied_to >= 0)
            o = params[o].tied_to;
        plan->bucket_of[i] = plan->bucket_of[o];
        plan->offset_of[i] = plan->offset_of[o];
    }
    return 0;
}

/* ================================================================== 28.3 overlapped DDP */

/* Launches bucket b's all-reduce on the comm stream without waiting. */
static int launch_bucket(ddp_reducer *r, int b)
{
    rl_set_tag(r->ctx, RL_TAG_BUCKET, b);
    r->work[b] = rl_all_reduce(r->comm, r->bucket_buf[b], r->bucket_buf[b], RL_SUM, RL_ASYNC);
    rl_set_tag(r->ctx, RL_TAG_BUCKET, -1);
    return r->work[b] ? 0 : RL_ERR_ARG;
}

/* This backward's bookkeeping, kept in the reducer's scratch (all 0 after every reset): per
 * parameter whether its hook fired, per bucket how many of its gradients are ready, and the
 * next bucket to launch. */
typedef struct books {
    int *marked, *ready, *next;
} books;

static books books_of(ddp_reducer *r)
{
    int n = r->plan.nparams, nb = r->plan.nbuckets;
    return (books){ r->scratch, r->scratch + n, r->scratch + n + nb };
}

/* 1 when every gradient of bucket b is ready. */
static int complete(const ddp_reducer *r, books k, int b) { return k.ready[b] == r->plan.buckets[b].nparams; }

int ddp_grad_ready(rl_param *p, void *arg)
{
    ddp_reducer *r = arg;
    if (!r->require_sync)
        return 0; /* no_sync: backward only accumulates into the buckets */
    books k = books_of(r);
    int i = p->index;
    if (k.marked[i])
        return rl_error(r->ctx, RL_ERR_ARG, "DDP: parameter %s was marked ready twice in one backward", p->name);
    k.marked[i] = 1;
    int b = r->plan.bucket_of[i];
    k.ready[b]++;
    /* buckets launch in order: a complete bucket waits for every earlier one to launch */
    while (*k.next < r->plan.nbuckets && complete(r, k, *k.next)) {
        int rc = launch_bucket(r, *k.next);
        if (rc)
            return rc;
        ++*k.next;
    }
    return 0;
}

int ddp_finalize_backward(ddp_reducer *r)
{
    if (!r->require_sync)
        return 0;
    books k = books_of(r);
    if (*k.next < r->plan.nbuckets) {
        int b = *k.next;
        int err = rl_error(r->ctx, RL_ERR_ARG, "DDP: bucket %d never became ready (%d of its %d parameters got no "
                           "gradient); every parameter must take part in the loss", b,
                           r->plan.buckets[b].nparams - k.ready[b], r->plan.buckets[b].nparams);
        for (int j = 0; j < b; j++) /* the buckets launched before it finish before the reset */
            rl_wait(r->work[j]);
        ddp_reducer_reset(r);
        return err;
    }
    int n = rl_comm_size(r->comm), rc = 0;
    for (int b = 0; b < r->plan.nbuckets; b++) {
        int st = rl_wait(r->work[b]);
        r->work[b] = NULL;
        if (st && !rc)
            rc = st;
        if (!rc && n > 1)
            rc = rl_scale(r->ctx, r->bucket_buf[b], 1.0f / (float)n);
    }
    ddp_reducer_reset(r);
    return rc;
}

/* ================================================================== 28.4 no_sync */

int ddp_train_step(ddp_reducer *r, rl_data *data, int64_t step, int64_t micro_batch, int accum_steps,
                   rl_batch *batch, float *loss)
{
    if (accum_steps < 1 || micro_batch < 1)
        return rl_error(r->ctx, RL_ERR_ARG, "ddp_train_step: accum_steps (%d) and micro_batch (%lld) must be >= 1",
                        accum_steps, (long long)micro_batch);
    int rank = rl_comm_rank(r->comm), rc = rl_model_zero_grad(r->model); /* as the given code does */
    double sum = 0;
    for (int k = 0; k < accum_steps && !rc; k++) {
        float l = 0;
        r->require_sync = k == accum_steps - 1; /* no_sync for all but the last micro-step */
        rl_set_tag(r->ctx, RL_TAG_MICROBATCH, accum_steps > 1 ? k : -1);
        rc = rl_data_get(data, r->ctx, step, ((int64_t)rank * accum_steps + k) * micro_batch, micro_batch, batch);
        if (!rc)
            rc = rl_model_forward(r->model, batch, &l);
        if (!rc)
            rc = rl_model_backward(r->model, 1.0f / (float)accum_steps);
        sum += l;
    }
    rl_set_tag(r->ctx, RL_TAG_MICROBATCH, -1);
    r->require_sync = 1;
    if (!rc)
        rc = ddp_finalize_backward(r);
    else
        ddp_reducer_reset(r);
    if (loss)
        *loss = (float)(sum / accum_steps);
    return rc;
}

/* ================================================================== 28.5 α-β and scaling */

int ddp_ab_ring_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    if (n < 1 || bytes < 0 || !link || !seconds || !(link->bw > 0))
        return rl_error(ctx, RL_ERR_ARG, "ddp_ab_ring_all_reduce: need n >= 1, bytes >= 0 and a link with bw > 0");
    *seconds = n == 1 ? 0.0 : 2.0 * (n - 1) * link->alpha + 2.0 * (n - 1) / n * bytes / link->bw;
    return 0;
}

int ddp_ab_tree_all_reduce(rl_ctx *ctx, int n, double bytes, const rl_link *link, double *seconds)
{
    if (n < 1 || bytes < 0 || !link || !seconds || !(link->bw > 0))
        return rl_error(ctx, RL_ERR_ARG, "ddp_ab_tree_all_reduce: need n >= 1, bytes >= 0 and a link with bw > 0");
    *seconds = n == 1 ? 0.0 : 2.0 * log2((double)n) * link->alpha + 2.0 * bytes / link->bw;
    return 0;
}

/* Runs one configuration of the sweep into a row. */
static int sweep_row(const ddp_sweep_config *cfg, int ranks, double cap, double straggler_ms, const char *label,
                     ddp_sweep_row *row)
{
    ddp_run_config rc = cfg->base;
    rc.opts.ranks = ranks;
    rc.bucket_cap_mb = cap;
    rc.opts.nfaults = 0;
    if (straggler_ms > 0) {
        rc.opts.faults[0] = (rl_fault){ .kind = RL_FAULT_STRAGGLER, .rank = cfg->straggler_rank, .ms = straggler_ms };
        rc.opts.nfaults = 1;
    }
    memset(row, 0, sizeof *row);
    snprintf(row->label, sizeof row->label, "%s", label);
    row->ranks = ranks;
    row->bucket_cap_mb = cap;
    row->straggler_ms = straggler_ms;
    int st = ddp_run(&rc, &row->stats);
    if (st)
        return st;
    const rl_hw *hw = rc.opts.hw ? rc.opts.hw : rl_hw_default();
    int granks[DDP_MAX_RANKS];
    for (int q = 0; q < ranks; q++)
        granks[q] = q;
    const rl_link *link = rl_hw_group_link(hw, granks, ranks);
    for (int b = 0; b < row->stats.nbuckets && b < 64; b++) {
        double t = 0;
        if ((st = ddp_ab_ring_all_reduce(NULL, ranks, (double)row->stats.bucket_bytes[b], link, &t)))
            return st;
        row->predicted_comm += t;
    }
    return 0;
}

int ddp_scaling_sweep(const ddp_sweep_config *cfg, ddp_sweep_table *out)
{
    if (!cfg || !out || cfg->ncaps < 0 || cfg->ncaps > 8 || cfg->max_ranks < 1 ||
        cfg->ncaps + cfg->max_ranks + 1 > DDP_SWEEP_MAX)
        return rl_error(NULL, RL_ERR_ARG, "ddp_scaling_sweep: 0..8 caps and 1..%d ranks in all",
                        DDP_SWEEP_MAX - 9);
    memset(out, 0, sizeof *out);
    char label[48];
    int st = 0;
    for (int i = 0; i < cfg->ncaps && !st; i++) {
        snprintf(label, sizeof label, "bucket %g MiB", cfg->caps_mb[i]);
        st = sweep_row(cfg, cfg->base.opts.ranks, cfg->caps_mb[i], 0, label, &out->rows[out->nrows++]);
    }
    int world1 = out->nrows;
    for (int n = 1; n <= cfg->max_ranks && !st; n++) {
        snprintf(label, sizeof label, "world %d", n);
        ddp_sweep_row *row = &out->rows[out->nrows++];
        st = sweep_row(cfg, n, cfg->base.bucket_cap_mb, 0, label, row);
        if (!st) {
            row->efficiency = out->rows[world1].stats.step_time / row->stats.step_time;
            row->speedup = n * row->efficiency;
        }
    }
    if (!st && cfg->straggler_ms > 0) {
        snprintf(label, sizeof label, "straggler rank %d +%g ms", cfg->straggler_rank, cfg->straggler_ms);
        st = sweep_row(cfg, cfg->base.opts.ranks, cfg->base.bucket_cap_mb, cfg->straggler_ms, label,
                       &out->rows[out->nrows++]);
    }
    return st;
}
