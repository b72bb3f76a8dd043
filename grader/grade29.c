/* grade29.c — the grader of Lab 29 (ZeRO-1/2/3 and FSDP). One Check test per graded
 * behaviour, grouped by step (29.1–29.5), run by grade.c. Learner code runs on simulated
 * ranks (rl_launch); references come from common/ — the memory and traffic formulas of
 * calc.h (rl_calc_zero), and a one-rank DDP+AdamW baseline computed here with the model and
 * optimizer of common/: one rank plays every rank's micro-batch in turn, sums the
 * gradients in rank order in fp32 as the collectives do (rounding to bf16 where a
 * collective's output is bf16) and takes rl_model_adamw_step — never the solution file.
 *
 * The training harness here runs the step itself (the calls of zero_train_step, in its
 * order) so that it can read this rank's reduced gradient pieces between the reduction and
 * AdamW, and it wraps the engine's unit callbacks and grad-ready hook: each records the
 * compute-stream time around the learner's callback and marks the collectives issued inside
 * it with a trace tag (RL_TAG_CHUNK) of the grader's; the hook's tag also says whether the
 * call announced its unit's last gradient (the harness counts the calls per unit). How data
 * moves, which unit each all-gather serves and what overlaps what is then read from the
 * run's trace (the runtime's own record of every collective, its bytes and its modelled
 * start and end), never from counters the code under test can reset. A rank that fails
 * returns its error; a failed run is reported by the first error of any rank. Randomized cases (world sizes, model shapes,
 * steps, gradient-ready orders, meshes) come from rl_grade_rng, and every randomized test
 * prints one "cases:" line. Built twice: against labs/29_zero_fsdp/zero.c and against
 * solutions/29_zero_fsdp/zero.c.
 *
 * For the judge (grade.h): every run of code under test (zero_bytes_per_rank, a training case,
 * hsdp_make_mesh) happens in the child, inside rl_grade_run, and leaves in the child's record
 * what the ranks reported, the harness's logs, the kept buffers (reduced pieces, parameters)
 * and the trace; the judge reads them from there (strings ended, counts and offsets clamped),
 * computes the baseline and makes every comparison. The child makes no checks and skips the
 * baseline and the checks' work (rl_grade_judging). */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bf16.h"
#include "calc.h"
#include "grade.h"
#include "zero.h"

#define MAXR 16
#define MAXS 4   /* training steps of a case */
#define MAXMU 8  /* model units (blocks + head) */
#define MAXU 8   /* FSDP units */

/* ================================================================== shared helpers */


/* What a rank reports back, in the child's record: a status, the whole message (kept, never
 * cut) and when it came (the order of the errors of one run, over every rank). */
typedef struct rank_res {
    int rc;
    rl_grade_blob err;
    int seq;
} rank_res;

static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER; /* rl_grade_note from several rank threads */
static int err_clock;                                       /* counts the errors of the running test */

/* rl_grade_note, one rank thread at a time: what a crash that follows will be reported with. */
static void note_crash(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_crash(const char *fmt, ...)
{
    rl_grade_text b = { 0 };
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    rl_grade_text_add(&b, "%s", s ? s : "");
    free(s);
    pthread_mutex_lock(&note_mu);
    rl_grade_note("%s", rl_grade_text_str(&b));
    pthread_mutex_unlock(&note_mu);
    rl_grade_text_free(&b);
}

/* In a run: records an error the code under test reported (and notes it for a crash that may follow). */
static void note_err(rank_res *rr, rl_ctx *ctx, int rc, const char *what)
{
    rr->rc = rc;
    rr->seq = __atomic_add_fetch(&err_clock, 1, __ATOMIC_SEQ_CST);
    const char *m = ctx ? rl_last_error(ctx) : "";
    rl_grade_text b = { 0 };
    rl_grade_text_add(&b, "%s returned %d (%s)%s%s", what, rc, rl_status_name(rc), m[0] ? ": " : " (no message)", m);
    rr->err = rl_grade_keep_str(rl_grade_text_str(&b));
    note_crash("rank %d: %s", ctx ? rl_rank(ctx) : -1, rl_grade_text_str(&b));
    rl_grade_text_free(&b);
}

/* The rank whose error came first, skipping ranks that were only stopped (RL_ERR_ABORTED)
 * because another one failed; -1 when no rank reported an error. */
static int first_error(const rank_res *const *rr, int n)
{
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int r = 0; r < n; r++) {
            if (!rr[r]->rc || (pass == 0 && rr[r]->rc == RL_ERR_ABORTED))
                continue;
            if (best < 0 || rr[r]->seq < rr[best]->seq)
                best = r;
        }
    return best;
}

/* The message of a failed run: the first real error, which ranks were stopped after it and
 * how (the runtime's report, printed below the message, is of that stop). */
static void failure_text(rl_grade_text *b, const char *what, const rank_res *const *rr, int n, int launch_rc)
{
    int f = first_error(rr, n);
    const char *err = rl_grade_blob_str(rr[f]->err);
    rl_grade_text_add(b, "%s, rank %d: %s", what, f, err[0] ? err : "(no message)");
    int others = 0;
    for (int r = 0; r < n; r++)
        if (r != f && rr[r]->rc)
            others++;
    if (others) {
        rl_grade_text_add(b, ". It was the first error; then ");
        int k = 0;
        for (int r = 0; r < n; r++)
            if (r != f && rr[r]->rc)
                rl_grade_text_add(b, "%s%d", k++ ? ", " : "rank(s) ", r);
        rl_grade_text_add(b, " failed or were stopped too");
    }
    if (launch_rc == RL_ERR_HANG)
        rl_grade_text_add(b, ". The ranks that waited for rank %d's collectives were stopped by the watchdog (its "
                          "report below is of that stop, not of the cause)", f);
}

/* Options of a quiet sim run with a watchdog well inside the test's time limit. */
static rl_opts grade_opts(int n, const rl_hw *hw)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.hw = hw;
    /* a rank that failed leaves the others waiting for its collectives: keep that wait short
     * (sanitizer builds run several times slower) */
    o.timeout_s = (rl_grade_quick() ? 6.0 : 1.5) * rl_grade_time_scale();
    return o;
}

/* A profile of 2 nodes with 2 GPUs each (h100-2node-ib's links): 4 ranks whose HSDP
 * replica groups cross nodes. */
static rl_hw hw_2x2;
static const rl_hw *grade_hw_2x2(void)
{
    hw_2x2 = *rl_hw_find("h100-2node-ib");
    hw_2x2.name = "2x2-ib";
    hw_2x2.gpus_per_node = 2;
    hw_2x2.nodes = 2;
    return &hw_2x2;
}

/* h100-nvlink with a slow link (4 GB/s): a reduce-scatter outlasts a unit's backward, so a
 * bucket freed without waiting for its reduce-scatter is freed while it still travels. */
static rl_hw hw_slow;
static const rl_hw *grade_hw_slow(void)
{
    hw_slow = *rl_hw_find("h100-nvlink");
    hw_slow.name = "h100-slow-link";
    hw_slow.intra.bw = 4e9;
    return &hw_slow;
}

/* The fixed grading model: an MLP of 4 blocks, hidden 128, bf16 params and grads. */
static rl_model_config grade_model(void)
{
    rl_model_config mc = rl_model_config_default(RL_MODEL_MLP);
    mc.hidden = 128;
    mc.layers = 4;
    mc.out_dim = 16;
    mc.param_dtype = RL_BF16;
    mc.grad_dtype = RL_BF16;
    return mc;
}

/* A random MLP: hidden not a power of two, 2..max_layers blocks, a head of another width. */
static rl_model_config random_model(rl_rng *g, int max_layers)
{
    rl_model_config mc = grade_model();
    mc.hidden = rl_grade_pick(g, 24, 112);
    if (!(mc.hidden & (mc.hidden - 1)))
        mc.hidden++;
    mc.layers = rl_grade_pick(g, 2, max_layers);
    mc.out_dim = rl_grade_pick(g, 3, 19);
    mc.seed = (uint64_t)rl_grade_pick(g, 1, 1000000);
    return mc;
}

/* ================================================================== the harness */

enum { CB_PRE_F = 0, CB_POST_F, CB_PRE_B, CB_POST_B, CB_N };
static const char *cb_names[CB_N] = { "pre-forward", "post-forward", "pre-backward", "post-backward" };

/* The grader's trace tags (RL_TAG_CHUNK) on the collectives the code under test issues. */
#define TAG_CB(kind, mu) (1 + (kind) * 64 + (mu)) /* inside a unit callback */
#define TAG_HOOK(u) (1000 + (u))                  /* inside the grad-ready hook call that completes unit u */
#define TAG_HOOK_EARLY(u) (1500 + (u))            /* inside a hook call for unit u with gradients still to come */
#define TAG_FREE 5000                             /* the grader's own zero3_gather + zero3_free after the steps */
#define TAG_REDUCE 2000                           /* zero1_reduce_scatter_grads / zero_finalize_grads */
#define TAG_OPT 3000                              /* zero_shard_adamw */
#define TAG_GATHER 4000                           /* zero_all_gather_params */

/* Human-readable place of a grader tag. */
static void tag_text(rl_grade_text *b, int tag)
{
    if (tag >= 1 && tag < 1 + CB_N * 64)
        rl_grade_text_add(b, "%s of model unit %d", cb_names[(tag - 1) / 64], (tag - 1) % 64);
    else if (tag >= 1000 && tag < 1500)
        rl_grade_text_add(b, "the grad-ready hook (the call announcing unit %d's last gradient)", tag - 1000);
    else if (tag >= 1500 && tag < 2000)
        rl_grade_text_add(b, "the grad-ready hook (a call for unit %d while some of its gradients were still to "
                          "come)", tag - 1500);
    else if (tag == TAG_REDUCE)
        rl_grade_text_add(b, "the gradient reduction after backward");
    else if (tag == TAG_OPT)
        rl_grade_text_add(b, "zero_shard_adamw");
    else if (tag == TAG_GATHER)
        rl_grade_text_add(b, "zero_all_gather_params");
    else
        rl_grade_text_add(b, "forward/backward compute (outside every callback)");
}

/* What the engine looked like (support-built: units and buffers). */
typedef struct unit_info {
    int first_unit, nunits, first_param, nparams;
    int64_t numel, padded, shard, flat_off, shard_off, start; /* start: first element in registration order */
} unit_info;

/* One step of one rank, as the harness saw it (in the child's record). */
typedef struct step_log {
    int done;                                   /* the step ran to its end */
    double t0, t_fwd, t_bwd, t_red, t1;         /* compute-stream time: start, after forward, backward, reduction, end */
    double cb[MAXMU][CB_N][2];                  /* around each learner callback: entry, exit */
    int red_rc;                                 /* what the reduction returned */
    rl_grade_blob red_err;                      /* its message */
    rl_mem_account mem;                         /* after the step, with the step's peaks */
    rl_mem_account mem_red;                     /* right after the reduction (also when it failed) */
    int nfree;
    int free_unit[4 * MAXU];                    /* buckets the hook freed, and the compute time it returned */
    double free_t[4 * MAXU];
    int live_bad;                               /* after some hook call: completed units whose bucket was alive (> 1) */
    int live_param, live_mask;                  /* that call's parameter, and those units (bit u) */
    rl_grade_blob grad;                         /* this rank's reduced pieces after the reduction, f32 [shard_numel] */
    rl_grade_blob local;                        /* ZeRO-1: this rank's own flat_grad after backward, f32 [flat_numel] */
    rl_grade_blob rest;                         /* ZeRO-1: flat_grad after the reduction, f32 [flat_numel] */
} step_log;

/* One rank of a case (in the child's record). */
typedef struct rank_log {
    rank_res r;
    int have_engine;
    int n, rank, rep, rep_rank;                 /* shard group size and index, replica group size and index */
    char shard_comm[24], rep_comm[24];
    int nunits, nmu;
    unit_info u[MAXU];
    int mu_unit[MAXMU];
    int64_t shard_numel, flat_numel;
    step_log st[MAXS];
    rl_grade_blob params;                       /* Ψ values after the run, f32 */
    rl_grade_blob held;                         /* per value: 1 where this rank holds a copy (stage 3: its piece) */
    double free_t;                              /* compute time after the grader's zero3_free of an in-flight unit */
} rank_log;

/* What a run of a case leaves in the child's record. */
typedef struct case_res {
    int launch_rc;                              /* rl_launch's status */
    rank_log rk[MAXR];
    rl_grade_blob trace;
} case_res;

/* One distributed run. */
typedef struct case29 {
    zero_stage stage;
    int ranks, group, wrap, fp, bp, steps;
    rl_model_config mc;
    int64_t mb;
    float lr;
    uint64_t data_seed;
    const rl_hw *hw;
    int ready_window;           /* > 1: gradients become ready out of order (the same order on every rank) */
    uint64_t ready_seed;
    int drop_param;             /* >= 0: the harness withholds this parameter's grad-ready hook in step 0 */
    int dup_param;              /* >= 0: the harness announces this parameter twice in step 0 */
    int free_check;             /* stage 3: after the steps, gather a unit and free it while in flight */
    int snap_rest;              /* ZeRO-1: keep flat_grad after backward and after the reduction */
    int stop_after_reduce;      /* end every rank after step 0's reduction */
    int64_t psi;
    /* the run, from the child's record (its strings ended, its counts and offsets clamped) */
    case_res res;
    const float *params[MAXR];  /* per rank: Ψ values, and where it holds a copy (in the record) */
    const unsigned char *held[MAXR];
    const float *grad[MAXR][MAXS], *local[MAXR][MAXS], *rest[MAXR][MAXS]; /* the steps' kept buffers (NULL: none) */
    rl_trace *trace;
    char *text;                 /* the case in words (case_text), for messages */
} case29;

/* The harness's own state of one rank while a case runs in the child: the step it is in, the
 * engine's callbacks it wraps, its count of hook calls per unit, and the buffers the steps
 * fill (kept in the record after the run). */
typedef struct rank_run {
    int cur_step;
    rl_unit_hook cb[CB_N];                      /* the engine's callbacks */
    rl_grad_hook hook;
    int announced[MAXS][MAXU];                  /* hook calls so far per step and unit */
    int64_t ngrad, nflat;                       /* elements of grad and of local / rest */
    float *grad[MAXS], *local[MAXS], *rest[MAXS];
    float *params;                              /* Ψ values after the run */
    unsigned char *held;
} rank_run;

/* A run of a case in the child: the case, where its results go, the harness's state per rank. */
typedef struct case_job {
    const case29 *c;
    case_res *o;
    rank_run rr[MAXR];
} case_job;

static case_job *cur; /* the case running (tests run forked, one at a time) */

/* A case with the defaults: 4 ranks, the fixed model, 3 steps, per-block units, prefetch. */
static void case_init(case29 *c, zero_stage st, int ranks, int steps)
{
    memset(c, 0, sizeof *c);
    c->stage = st;
    c->ranks = ranks;
    c->group = ranks;
    c->wrap = 1;
    c->fp = c->bp = 1;
    c->steps = steps;
    c->mc = grade_model();
    c->mb = 8;
    c->lr = 1e-3f;
    c->data_seed = 11;
    c->hw = rl_hw_find("h100-nvlink");
    c->drop_param = -1;
    c->dup_param = -1;
}

/* Draws a random case of stage st: world (3..6 or the given list), model, steps, micro-batch. */
static void case_random(case29 *c, rl_rng *g, zero_stage st, int ranks)
{
    case_init(c, st, ranks, rl_grade_pick(g, 2, MAXS));
    c->mc = random_model(g, 5);
    c->mb = rl_grade_pick(g, 3, 10);
    c->data_seed = (uint64_t)rl_grade_pick(g, 1, 1000000);
}

/* Describes a case for the "cases:" line and the messages. */
static void case_text(rl_grade_text *b, const case29 *c)
{
    rl_grade_text_add(b, "%s on %d ranks", zero_stage_name(c->stage), c->ranks);
    if (c->stage == ZERO_HSDP)
        rl_grade_text_add(b, " in groups of %d", c->group);
    rl_grade_text_add(b, ", MLP hidden %d x %d blocks, head %d, %lld samples per rank, %d step%s", c->mc.hidden, c->mc.layers,
           c->mc.out_dim, (long long)c->mb, c->steps, c->steps == 1 ? "" : "s");
    if (c->stage == ZERO_STAGE2 && !c->wrap)
        rl_grade_text_add(b, ", one unit (one bucket) for the whole model");
    if (c->stage >= ZERO_STAGE3)
        rl_grade_text_add(b, ", %s, %s", c->wrap ? "per-block units" : "one unit for the whole model",
               c->fp && c->bp ? "forward+backward prefetch" : c->fp ? "forward prefetch only"
                                : c->bp ? "backward prefetch only" : "no prefetch");
    if (c->ready_window > 1)
        rl_grade_text_add(b, ", gradients ready out of order (window %d)", c->ready_window);
    if (c->hw)
        rl_grade_text_add(b, ", %s", c->hw->name);
}

/* The callbacks the harness puts around the engine's. */
static int wrap_cb(int kind, rl_unit *mu, void *arg)
{
    zero_engine *e = arg;
    int w = rl_rank(e->ctx);
    rank_run *R = &cur->rr[w];
    step_log *S = &cur->o->rk[w].st[R->cur_step];
    int i = mu->index < MAXMU ? mu->index : MAXMU - 1;
    S->cb[i][kind][0] = rl_stream_time(e->ctx, RL_STREAM_COMPUTE);
    rl_set_tag(e->ctx, RL_TAG_CHUNK, TAG_CB(kind, mu->index));
    int rc = R->cb[kind] ? R->cb[kind](mu, arg) : 0;
    rl_set_tag(e->ctx, RL_TAG_CHUNK, -1);
    S->cb[i][kind][1] = rl_stream_time(e->ctx, RL_STREAM_COMPUTE);
    return rc;
}
static int w_pre_f(rl_unit *mu, void *arg) { return wrap_cb(CB_PRE_F, mu, arg); }
static int w_post_f(rl_unit *mu, void *arg) { return wrap_cb(CB_POST_F, mu, arg); }
static int w_pre_b(rl_unit *mu, void *arg) { return wrap_cb(CB_PRE_B, mu, arg); }
static int w_post_b(rl_unit *mu, void *arg) { return wrap_cb(CB_POST_B, mu, arg); }

/* The grad-ready hook around the engine's: tags its collectives (by whether this call
 * announces the unit's last gradient, from the harness's own count), notes the buckets it
 * freed and when, and after the call how many completed units still hold a bucket (the one
 * launched last may; zero.h: the one launched before is released). Withholds the case's
 * dropped parameter and announces its duplicated one twice, in step 0. */
static int w_hook(rl_param *p, void *arg)
{
    zero_engine *e = arg;
    int w = rl_rank(e->ctx);
    rank_run *R = &cur->rr[w];
    step_log *S = &cur->o->rk[w].st[R->cur_step];
    int *announced = R->announced[R->cur_step];
    if (p->index == cur->c->drop_param && R->cur_step == 0)
        return 0;
    int u = e->unit_of_param[p->index];
    int calls = p->index == cur->c->dup_param && R->cur_step == 0 ? 2 : 1, rc = 0;
    for (int k = 0; k < calls && !rc; k++) {
        rl_tensor *before[MAXU];
        for (int v = 0; v < e->nunits && v < MAXU; v++)
            before[v] = e->units[v].grad;
        int last = u < MAXU && ++announced[u] == e->units[u].nparams;
        rl_set_tag(e->ctx, RL_TAG_CHUNK, last ? TAG_HOOK(u) : TAG_HOOK_EARLY(u));
        rc = R->hook(p, arg);
        rl_set_tag(e->ctx, RL_TAG_CHUNK, -1);
        double t = rl_stream_time(e->ctx, RL_STREAM_COMPUTE);
        int live = 0, mask = 0;
        for (int v = 0; v < e->nunits && v < MAXU; v++) {
            if (before[v] && !e->units[v].grad && S->nfree < 4 * MAXU) {
                S->free_unit[S->nfree] = v;
                S->free_t[S->nfree++] = t;
            }
            if (announced[v] == e->units[v].nparams && e->units[v].grad)
                live++, mask |= 1 << v;
        }
        if (live > 1 && !S->live_bad) {
            S->live_bad = live;
            S->live_param = p->index;
            S->live_mask = mask;
        }
    }
    return rc;
}

/* Copies this rank's reduced gradient pieces (after the reduction) into grad. */
static void snap_grads(zero_engine *e, float *grad)
{
    for (int u = 0; u < e->nunits; u++) {
        zero_unit *U = &e->units[u];
        if (!U->shard)
            continue;
        rl_tensor *t = e->flat_grad ? rl_tensor_slice(e->flat_grad, U->flat_off + (int64_t)e->rank * U->shard, U->shard)
                                    : rl_tensor_slice(e->grad_shard, U->shard_off, U->shard);
        if (t)
            rl_tensor_to_f32(t, grad + U->shard_off, U->shard);
        rl_tensor_free(t);
    }
}

/* One training step: the calls of zero_train_step in its order, with the harness's marks.
 * Returns 0 or the first error, with *what naming the call that failed. */
static int grader_step(const case29 *c, zero_engine *e, rl_data *data, int s, rl_batch *batch, rank_log *L,
                       rank_run *R, const char **what)
{
    rl_ctx *ctx = e->ctx;
    step_log *S = &L->st[s];
    S->t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    *what = "the grader's batch";
    int rc = rl_data_get(data, ctx, s, (int64_t)rl_rank(ctx) * c->mb, c->mb, batch);
    if (!rc && e->flat_grad)
        rc = rl_zero(ctx, e->flat_grad);
    if (rc)
        return rc;
    *what = "forward (your unit callbacks run inside it)";
    rc = rl_model_forward(e->model, batch, NULL);
    S->t_fwd = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    if (rc)
        return rc;
    *what = "backward (your unit callbacks and grad-ready hook run inside it)";
    rc = rl_model_backward(e->model, 1.0f);
    S->t_bwd = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    if (rc)
        return rc;
    int z1 = c->stage == ZERO_STAGE1;
    if (z1 && R->local[s])
        rl_tensor_to_f32(e->flat_grad, R->local[s], e->flat_numel);
    *what = z1 ? "zero1_reduce_scatter_grads" : "zero_finalize_grads";
    rl_clear_error(ctx);
    rl_set_tag(ctx, RL_TAG_CHUNK, TAG_REDUCE);
    rc = z1 ? zero1_reduce_scatter_grads(e) : zero_finalize_grads(e);
    rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    S->t_red = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    S->red_rc = rc;
    S->mem_red = *rl_ctx_mem(ctx);
    if (z1 && R->rest[s] && !rc)
        rl_tensor_to_f32(e->flat_grad, R->rest[s], e->flat_numel);
    if (rc) {
        S->red_err = rl_grade_keep_str(rl_last_error(ctx));
        return rc;
    }
    snap_grads(e, R->grad[s]);
    if (c->stop_after_reduce)
        return 0;
    *what = "zero_shard_adamw";
    rl_set_tag(ctx, RL_TAG_CHUNK, TAG_OPT);
    rc = zero_shard_adamw(e);
    rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    if (!rc && (c->stage == ZERO_STAGE1 || c->stage == ZERO_STAGE2)) {
        *what = "zero_all_gather_params";
        rl_set_tag(ctx, RL_TAG_CHUNK, TAG_GATHER);
        rc = zero_all_gather_params(e);
        rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    }
    S->t1 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    S->done = !rc;
    return rc;
}

/* Notes the engine's shape in L. */
static void note_engine(rank_log *L, const zero_engine *e, const rl_model *m)
{
    L->have_engine = 1;
    L->n = e->n;
    L->rank = e->rank;
    L->rep = e->replica_comm ? rl_comm_size(e->replica_comm) : 1;
    L->rep_rank = e->replica_comm ? rl_comm_rank(e->replica_comm) : 0;
    snprintf(L->shard_comm, sizeof L->shard_comm, "%s", rl_comm_name(e->shard_comm));
    snprintf(L->rep_comm, sizeof L->rep_comm, "%s", e->replica_comm ? rl_comm_name(e->replica_comm) : "");
    L->nunits = e->nunits < MAXU ? e->nunits : MAXU;
    L->nmu = m->nunits < MAXMU ? m->nunits : MAXMU;
    int64_t start = 0;
    for (int u = 0; u < L->nunits; u++) {
        const zero_unit *U = &e->units[u];
        L->u[u] = (unit_info){ U->first_unit, U->nunits, U->first_param, U->nparams, U->numel, U->padded,
                               U->shard, U->flat_off, U->shard_off, start };
        start += U->numel;
    }
    for (int k = 0; k < L->nmu; k++)
        L->mu_unit[k] = e->unit_of_model_unit[k];
    L->shard_numel = e->shard_numel;
    L->flat_numel = e->flat_numel;
}

/* The grader's own check of zero3_free (stage 3): gather unit u and free it at once, while
 * its all-gather may still be in flight; zero.h: zero3_free waits for it first. A view of
 * `full` keeps its storage alive whatever the code under test does, so a free that does not
 * wait cannot corrupt memory here; the compute time after the free is compared with the
 * gather's end on the trace. */
static int free_in_flight(zero_engine *e, rank_log *L, int u)
{
    rl_ctx *ctx = e->ctx;
    rl_set_tag(ctx, RL_TAG_CHUNK, TAG_FREE);
    int rc = zero3_gather(e, u);
    rl_set_tag(ctx, RL_TAG_CHUNK, -1);
    rl_tensor *keep = !rc && e->units[u].full ? rl_tensor_slice(e->units[u].full, 0, 1) : NULL;
    if (!rc)
        rc = zero3_free(e, u);
    L->free_t = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    rl_comm_drain(ctx, 1.0 * rl_grade_time_scale());
    rl_tensor_free(keep);
    return rc;
}

/* One rank of a case: the model, the engine, the harness's wrappers, the steps, then this
 * rank's copy of the parameters. Errors are noted in the rank's log; the rank then returns
 * its error, so that the run ends with it. */
static int train_rank(rl_ctx *ctx, void *arg)
{
    case_job *j = arg;
    const case29 *c = j->c;
    int w = rl_rank(ctx);
    rank_log *L = &j->o->rk[w];
    rank_run *R = &j->rr[w];
    rl_model *m = rl_model_new(ctx, &c->mc);
    rl_data *data = m ? rl_data_regression(ctx, c->mc.hidden, c->mc.out_dim, c->data_seed) : NULL;
    if (!m || !data) {
        note_err(&L->r, ctx, RL_ERR_ARG, "the grader's model");
        rl_data_free(data);
        rl_model_free(m);
        return L->r.rc;
    }
    zero_config zc;
    memset(&zc, 0, sizeof zc);
    zc.stage = c->stage;
    zc.wrap_per_block = c->wrap;
    zc.forward_prefetch = c->fp;
    zc.backward_prefetch = c->bp;
    zc.group = c->group;
    zc.adamw = rl_adamw_defaults();
    zc.adamw.lr = c->lr;
    rl_clear_error(ctx);
    zero_engine *e = zero_engine_new(m, rl_comm_world(ctx), &zc);
    if (!e) {
        note_err(&L->r, ctx, strstr(rl_last_error(ctx), "not implemented") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG,
                 "zero_engine_new");
        rl_data_free(data);
        rl_model_free(m);
        return L->r.rc;
    }
    note_engine(L, e, m);
    if (c->ready_window > 1)
        rl_model_set_ready_order(m, c->ready_seed, c->ready_window);
    R->cb[CB_PRE_F] = m->pre_forward;
    R->cb[CB_POST_F] = m->post_forward;
    R->cb[CB_PRE_B] = m->pre_backward;
    R->cb[CB_POST_B] = m->post_backward;
    R->hook = m->hook;
    m->pre_forward = w_pre_f;
    m->post_forward = w_post_f;
    m->pre_backward = w_pre_b;
    m->post_backward = w_post_b;
    m->unit_arg = e;
    if (R->hook)
        m->hook = w_hook;
    R->ngrad = e->shard_numel > 0 ? e->shard_numel : 0;
    R->nflat = c->snap_rest && e->flat_grad && e->flat_numel > 0 ? e->flat_numel : 0;
    for (int s = 0; s < c->steps; s++) {
        R->grad[s] = calloc((size_t)(R->ngrad ? R->ngrad : 1), sizeof(float));
        if (c->snap_rest && e->flat_grad) {
            R->local[s] = calloc((size_t)(R->nflat ? R->nflat : 1), sizeof(float));
            R->rest[s] = calloc((size_t)(R->nflat ? R->nflat : 1), sizeof(float));
        }
    }
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    for (int s = 0; s < c->steps && !L->r.rc; s++) {
        R->cur_step = s;
        rl_clear_error(ctx);
        rl_mem_reset_peaks(rl_ctx_mem(ctx));
        rl_step_begin(ctx, s);
        const char *what = "";
        int rc = grader_step(c, e, data, s, &batch, L, R, &what);
        rl_step_end(ctx);
        L->st[s].mem = *rl_ctx_mem(ctx);
        if (rc && !(c->stop_after_reduce && L->st[s].red_rc))
            note_err(&L->r, ctx, rc, what);
        if (c->stop_after_reduce)
            break;
    }
    if (!L->r.rc && c->free_check && e->param_shard) {
        int rc = free_in_flight(e, L, e->nunits - 1);
        if (rc)
            note_err(&L->r, ctx, rc, "zero3_gather + zero3_free of a unit whose all-gather is still in flight");
    }
    /* this rank's copy of the parameters */
    float *out = R->params;
    if (out && R->held && !L->r.rc && !c->stop_after_reduce) {
        int64_t off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_param *p = &m->params[i];
            zero_unit *U = &e->units[e->unit_of_param[i]];
            if (e->flat_param) {
                rl_tensor_to_f32(p->value, out + off, p->numel);
                memset(R->held + off, 1, (size_t)p->numel);
            } else {
                /* stage 3 / HSDP: the elements of this rank's piece of p's unit */
                int64_t lo = (int64_t)e->rank * U->shard, pos = e->offset_in_unit[i];
                for (int64_t k = 0; k < p->numel; k++)
                    if (pos + k >= lo && pos + k < lo + U->shard) {
                        out[off + k] = rl_tensor_get(e->param_shard, U->shard_off + pos + k - lo);
                        R->held[off + k] = 1;
                    }
            }
            off += p->numel;
        }
    }
    m->pre_forward = R->cb[CB_PRE_F];
    m->post_forward = R->cb[CB_POST_F];
    m->pre_backward = R->cb[CB_PRE_B];
    m->post_backward = R->cb[CB_POST_B];
    if (R->hook)
        m->hook = R->hook;
    rl_batch_free(&batch);
    zero_engine_free(e);
    rl_data_free(data);
    rl_model_free(m);
    return L->r.rc;
}

/* Frees a case and what was read from its run. */
static void case_free(case29 *c)
{
    rl_trace_free(c->trace);
    free(c->text);
    free(c);
}

/* In the child: runs the case on its ranks and keeps what they left in the record. */
static void case_produce(void *out, void *arg)
{
    case_job *j = arg;
    const case29 *c = j->c;
    j->o = out;
    size_t psi = (size_t)c->psi;
    for (int r = 0; r < c->ranks; r++) {
        j->rr[r].params = calloc(psi + 1, sizeof(float));
        j->rr[r].held = calloc(psi + 1, 1);
    }
    cur = j;
    note_crash("none yet: the crash came while the grader ran %s. A crash in a run usually means a buffer freed "
               "while a collective still reads or writes it (a bucket or gathered unit freed before rl_wait on its "
               "work), or a work handle used after rl_wait released it (wait once, then set the field to NULL)",
               c->text);
    rl_opts o = grade_opts(c->ranks, c->hw);
    rl_trace *t = NULL;
    j->o->launch_rc = rl_launch(&o, train_rank, j, &t);
    j->o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
    for (int r = 0; r < c->ranks; r++) {
        rank_log *L = &j->o->rk[r];
        rank_run *R = &j->rr[r];
        L->params = rl_grade_keep(R->params, R->params ? psi * sizeof(float) : 0);
        L->held = rl_grade_keep(R->held, R->held ? psi : 0);
        for (int s = 0; s < MAXS; s++) {
            if (R->grad[s])
                L->st[s].grad = rl_grade_keep(R->grad[s], (size_t)R->ngrad * sizeof(float));
            if (R->local[s] && R->rest[s]) {
                L->st[s].local = rl_grade_keep(R->local[s], (size_t)R->nflat * sizeof(float));
                L->st[s].rest = rl_grade_keep(R->rest[s], (size_t)R->nflat * sizeof(float));
            }
            free(R->grad[s]);
            free(R->local[s]);
            free(R->rest[s]);
        }
        free(R->params);
        free(R->held);
    }
}

/* v, or the nearest end of [lo, hi]. */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Takes a run of c from the record: its strings ended, every count and offset that sizes a
 * loop or indexes an array clamped to its range, views of the kept buffers (each of the exact
 * size the run kept) and the trace. */
static void case_take(case29 *c, const case_res *o)
{
    c->res = *o;
    size_t psi = (size_t)c->psi;
    for (int r = 0; r < c->ranks; r++) {
        rank_log *L = &c->res.rk[r];
        L->shard_comm[sizeof L->shard_comm - 1] = 0;
        L->rep_comm[sizeof L->rep_comm - 1] = 0;
        if (!L->have_engine)
            L->nunits = L->nmu = 0, L->shard_numel = L->flat_numel = 0;
        L->nunits = (int)clamp64(L->nunits, 0, MAXU);
        L->nmu = (int)clamp64(L->nmu, 0, MAXMU);
        L->shard_numel = clamp64(L->shard_numel, 0, INT64_MAX);
        L->flat_numel = clamp64(L->flat_numel, 0, INT64_MAX);
        for (int u = 0; u < L->nunits; u++) {
            unit_info *U = &L->u[u];
            U->first_unit = (int)clamp64(U->first_unit, 0, MAXMU - 1);
            U->nunits = (int)clamp64(U->nunits, 1, MAXMU - U->first_unit);
            U->shard_off = clamp64(U->shard_off, 0, L->shard_numel);
            U->shard = clamp64(U->shard, 0, L->shard_numel - U->shard_off);
            U->flat_off = clamp64(U->flat_off, 0, L->flat_numel);
            U->padded = clamp64(U->padded, 0, L->flat_numel - U->flat_off);
            U->start = clamp64(U->start, 0, c->psi);
            U->numel = clamp64(U->numel, 0, c->psi - U->start);
        }
        for (int s = 0; s < MAXS; s++) {
            step_log *S = &L->st[s];
            S->nfree = (int)clamp64(S->nfree, 0, 4 * MAXU);
            for (int i = 0; i < S->nfree; i++)
                S->free_unit[i] = (int)clamp64(S->free_unit[i], 0, MAXU - 1);
        }
        c->params[r] = rl_grade_blob_get(L->params, sizeof(float), psi);
        c->held[r] = rl_grade_blob_get(L->held, 1, psi);
        int snap = c->snap_rest && c->stage == ZERO_STAGE1 && L->have_engine;
        for (int s = 0; s < c->steps; s++) {
            size_t ngrad = L->have_engine ? (size_t)L->shard_numel : 0;
            c->grad[r][s] = rl_grade_blob_get(L->st[s].grad, sizeof(float), ngrad);
            c->local[r][s] = rl_grade_blob_get(L->st[s].local, sizeof(float), snap ? (size_t)L->flat_numel : 0);
            c->rest[r][s] = rl_grade_blob_get(L->st[s].rest, sizeof(float), snap ? (size_t)L->flat_numel : 0);
        }
    }
    rl_trace_free(c->trace);
    c->trace = rl_grade_trace(c->res.trace);
}

/* Runs the case on its ranks in the child (always with a trace); c gets the run from the record. */
static void case_launch(case29 *c)
{
    rl_grade_text t = { 0 };
    case_text(&t, c);
    free(c->text);
    c->text = t.s;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, &c->mc);
    ck_assert_msg(m, "the grader's model could not be built: %s", rl_last_error(ctx));
    c->psi = rl_model_numel(m);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
    case_job job;
    memset(&job, 0, sizeof job);
    job.c = c;
    const case_res *o = rl_grade_run("case", sizeof *o, case_produce, &job);
    case_take(c, o);
}

/* Runs the case; ends the test with the most useful message on a failure. */
static void case_run(case29 *c)
{
    case_launch(c);
    rl_grade_text what = { 0 };
    case_text(&what, c);
    const rank_res *rr[MAXR] = { 0 };
    for (int r = 0; r < c->ranks; r++)
        rr[r] = &c->res.rk[r].r;
    if (first_error(rr, c->ranks) >= 0) {
        rl_grade_text msg = { 0 };
        failure_text(&msg, rl_grade_text_str(&what), rr, c->ranks, c->res.launch_rc);
        ck_abort_msg("%s", rl_grade_text_str(&msg));
    }
    if (c->res.launch_rc == RL_ERR_HANG)
        ck_abort_msg("%s never finished: the watchdog found a collective that never completed (every rank must "
                     "issue the same collectives in the same order). The report is below.", rl_grade_text_str(&what));
    if (c->res.launch_rc)
        ck_abort_msg("%s failed: %s (the runtime's report is below)", rl_grade_text_str(&what),
                     rl_status_name(c->res.launch_rc));
    ck_assert_msg(c->trace, "%s: the run left no trace", rl_grade_text_str(&what));
    rl_grade_text_free(&what);
}

/* A new case on the heap (the structure is large). */
static case29 *case_new(void)
{
    case29 *c = calloc(1, sizeof *c);
    ck_assert(c);
    return c;
}

/* ------------------------------------------------------------------ the baseline */

/* One bf16 step (unit in the last place) at the magnitude of x. */
static double bf16_step(double x)
{
    x = fabs(x);
    if (!(x > 0))
        return 0;
    int e;
    frexp(x, &e); /* x = f·2^e, 0.5 <= f < 1: bf16 keeps 8 significant bits */
    return ldexp(1.0, e - 8);
}

/* What one rank computes for a DDP+AdamW run of W ranks in groups of G (G = W: plain
 * data parallel): per step the mean gradient (each rank's bf16 gradient of its own
 * micro-batch, summed in fp32 in rank order inside each group and rounded to bf16 — a
 * reduce-scatter — the group sums summed in group order and rounded — the all-reduce
 * across groups — then scaled by 1/W), the mean magnitude of the ranks' gradients (what
 * rounding is measured against), and the parameters after the last AdamW step. Registration
 * order, Ψ floats each. */
typedef struct ref29 {
    int64_t psi;
    int groups;                 /* replicas (R): more roundings in the reduction when > 1 */
    float *mean[MAXS], *mag[MAXS];
    float *params, *init;      /* after the last step, before the first */
} ref29;

static ref29 *baseline(const case29 *c, int G)
{
    int W = c->ranks;
    const rl_model_config *mc = &c->mc;
    ref29 *ref = calloc(1, sizeof *ref);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, mc);
    rl_data *data = rl_data_regression(ctx, mc->hidden, mc->out_dim, c->data_seed);
    ck_assert(ref && m && data);
    int64_t psi = ref->psi = rl_model_numel(m);
    ref->groups = W / G;
    rl_adamw_cfg ac = rl_adamw_defaults();
    ac.lr = c->lr;
    rl_model_optim *opt = rl_model_adamw_new(m, ac);
    ref->init = malloc((size_t)psi * sizeof(float));
    for (int i = 0, off = 0; i < m->nparams; off += (int)m->params[i].numel, i++)
        rl_tensor_to_f32(m->params[i].value, ref->init + off, m->params[i].numel);
    float *grp = calloc((size_t)psi, sizeof *grp), *tot = calloc((size_t)psi, sizeof *tot);
    float *g = calloc((size_t)psi, sizeof *g);
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    for (int s = 0; s < c->steps; s++) {
        float *mag = ref->mag[s] = calloc((size_t)psi, sizeof *mag);
        ref->mean[s] = calloc((size_t)psi, sizeof(float));
        for (int q = 0; q < W / G; q++) {
            for (int j = 0; j < G; j++) {
                int r = q * G + j;
                ck_assert(rl_model_zero_grad(m) == 0);
                ck_assert(rl_data_get(data, ctx, s, (int64_t)r * c->mb, c->mb, &batch) == 0);
                ck_assert(rl_model_forward(m, &batch, NULL) == 0);
                ck_assert(rl_model_backward(m, 1.0f) == 0);
                int64_t off = 0;
                for (int i = 0; i < m->nparams; i++) {
                    rl_tensor_to_f32(m->params[i].grad, g + off, m->params[i].numel);
                    off += m->params[i].numel;
                }
                for (int64_t k = 0; k < psi; k++) {
                    grp[k] = j ? grp[k] + g[k] : g[k];
                    mag[k] += fabsf(g[k]) / (float)W;
                }
            }
            for (int64_t k = 0; k < psi; k++) {
                float v = rl_round_bf16(grp[k]);
                tot[k] = q ? tot[k] + v : v;
            }
        }
        int64_t off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_tensor_from_f32(m->params[i].grad, tot + off, m->params[i].numel); /* rounds to bf16 */
            if (W > 1)
                rl_scale(ctx, m->params[i].grad, 1.0f / (float)W);
            rl_tensor_to_f32(m->params[i].grad, ref->mean[s] + off, m->params[i].numel);
            off += m->params[i].numel;
        }
        ck_assert(rl_model_adamw_step(opt) == 0);
    }
    ref->params = malloc((size_t)psi * sizeof(float));
    int64_t off = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].value, ref->params + off, m->params[i].numel);
        off += m->params[i].numel;
    }
    free(grp);
    free(tot);
    free(g);
    rl_batch_free(&batch);
    rl_model_optim_free(opt);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
    return ref;
}

/* Frees a baseline. */
static void ref_free(ref29 *r)
{
    if (!r)
        return;
    for (int s = 0; s < MAXS; s++) {
        free(r->mean[s]);
        free(r->mag[s]);
    }
    free(r->params);
    free(r->init);
    free(r);
}


/* Every rank's parameters against the baseline. AdamW turns the rounding noise of a gradient
 * that nearly cancels (across ranks, samples or steps) into up to a whole step of lr, so
 * another correct rounding of the same reduction (RL_AVG instead of a sum and a scale, the
 * scale before the all-reduce) moves some values by a fraction of lr. Hence: every value
 * within one bf16 step + 3·lr per step of the baseline, and each rank's copy of each unit
 * within 15% (L2) of the baseline, measured against how far the steps moved the unit
 * (correct roundings stay near 5%, a stale or wrong piece is near 100%). Scale errors that
 * AdamW would hide are left to check_grads, which looks at the reduced gradient itself.
 * Every element must be held by some rank. */
static void check_params(const case29 *c, const ref29 *ref, const char *what)
{
    double lr = c->lr, loose = 3 * lr * c->steps;
    int64_t held = 0, k_bad = -1, nbad = 0, nnan = 0, k_nan = -1;
    int r_bad = -1, r_nan = -1;
    const rank_log *L0 = &c->res.rk[0];
    for (int64_t k = 0; k < c->psi; k++) {
        int any = 0;
        for (int r = 0; r < c->ranks; r++) {
            if (!c->held[r][k])
                continue;
            float v = c->params[r][k];
            any = 1;
            if (!isfinite(v)) {
                if (!nnan++)
                    k_nan = k, r_nan = r;
                continue;
            }
            double d = fabs(v - ref->params[k]);
            if (!(d <= bf16_step(ref->params[k]) + loose) && !nbad++)
                k_bad = k, r_bad = r;
        }
        held += any;
    }
    if (nnan)
        ck_abort_msg("%s: after %d steps %lld parameter values (counting every rank's copy) are not finite numbers "
                     "(NaN or inf); first: element %lld (registration order) on rank %d = %g, baseline %.6g. Garbage "
                     "of this kind comes from a buffer a collective was still using: a gradient bucket freed (or "
                     "reused) before its reduce-scatter completed, or a result read before rl_wait on its work (a "
                     "handle dropped without waiting)", what, c->steps, (long long)nnan, (long long)k_nan, r_nan,
                     c->params[r_nan][k_nan], ref->params[k_nan]);
    if (nbad)
        ck_abort_msg("%s: after %d steps %lld parameter values (counting every rank's copy) differ from the "
                     "DDP+AdamW baseline by more than AdamW could move them (one bf16 step + 3 x lr per step); "
                     "first: element %lld (registration order) on rank %d = %.6g, baseline %.6g (lr %g). Common "
                     "causes: a skipped all-gather of the updated parameters, a wrong piece offset, a stale gathered "
                     "unit, a reduce-scatter launched before its unit's gradients were all ready, gradients of two "
                     "units mixed up, the AdamW step counter (e->step: once per zero_shard_adamw, its bias "
                     "correction depends on it) advanced more or less than once per step", what, c->steps,
                     (long long)nbad, (long long)k_bad, r_bad, c->params[r_bad][k_bad], ref->params[k_bad], lr);
    ck_assert_msg(held == c->psi, "%s: the ranks' pieces cover only %lld of the %lld parameters after the run", what,
                  (long long)held, (long long)c->psi);
    /* per rank and unit: the distance to the baseline against how far the steps moved the unit */
    for (int r = 0; r < c->ranks; r++)
        for (int u = 0; u < L0->nunits; u++) {
            const unit_info *U = &L0->u[u];
            double d2 = 0, m2 = 0;
            int64_t cnt = 0;
            for (int64_t k = U->start; k < U->start + U->numel; k++) {
                float v = c->params[r][k];
                if (!c->held[r][k])
                    continue;
                double d = v - ref->params[k], mv = ref->params[k] - ref->init[k];
                d2 += d * d;
                m2 += mv * mv;
                cnt++;
            }
            if (!cnt)
                continue;
            double ratio = sqrt(d2 / (m2 + 1e-30));
            ck_assert_msg(ratio <= 0.15,
                          "%s: after %d steps rank %d's copy of unit %d (%lld values) is %.1f%% of the way off the "
                          "DDP+AdamW baseline, measured against how far the steps moved it (L2: distance %.4g, "
                          "movement %.4g); a correct sharded run stays within a few %% (different but correct "
                          "roundings only). Common causes: a skipped all-gather of the updated parameters, a wrong "
                          "piece offset, a stale gathered unit, a reduce-scatter launched before its unit's gradients "
                          "were all ready, the AdamW step counter (e->step: once per zero_shard_adamw, its bias "
                          "correction depends on it) advanced more or less than once per step", what, c->steps, r, u,
                          (long long)cnt, 100 * ratio, sqrt(d2), sqrt(m2));
        }
}

/* Every rank's reduced gradient pieces against the baseline's mean: in step 0 (the same
 * parameters everywhere) each element within two bf16 steps of the mean magnitude of the
 * ranks' gradients (padding: exactly 0). A correct reduction rounds to bf16 once or twice
 * (the sum and the scale; RL_AVG once; a pre-divide once per rank and once for the sum), each
 * rounding off by at most half a step, so two correct results can lie two steps apart; HSDP
 * rounds once more (the all-reduce of the group sums): three steps. In every step the piece
 * within 2% (L2) of the mean (later steps start from parameters that correct roundings left
 * a bf16 step apart). A gradient off by a factor (÷N
 * missing, ÷N twice, ÷ the group instead of every data-parallel rank) would otherwise hide
 * inside AdamW, which is nearly scale-invariant. */
static void check_grads(const case29 *c, const ref29 *ref, const char *what)
{
    /* step 0 on every rank first (the same parameters everywhere: the reduction alone), then the later steps */
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < c->ranks; r++) {
            const rank_log *L = &c->res.rk[r];
            for (int s = pass; s < (pass ? c->steps : 1); s++) {
                const float *grad = c->grad[r][s];
                for (int u = 0; u < L->nunits; u++) {
                    const unit_info *U = &L->u[u];
                    double d2 = 0, r2 = 0, g2 = 0;
                    int64_t nbad = 0, j_bad = -1;
                    for (int64_t j = 0; j < U->shard; j++) {
                        int64_t pos = (int64_t)L->rank * U->shard + j;
                        double want = 0, mag = 0, got = grad[U->shard_off + j];
                        if (pos < U->numel) {
                            want = ref->mean[s][U->start + pos];
                            mag = ref->mag[s][U->start + pos];
                        }
                        d2 += (got - want) * (got - want);
                        r2 += want * want;
                        g2 += got * got;
                        double tol = (ref->groups > 1 ? 3 : 2) * bf16_step(mag > fabs(want) ? mag : want);
                        if (s == 0 && !(fabs(got - want) <= tol) && !nbad++)
                            j_bad = j;
                    }
                    double ratio = r2 > 0 ? sqrt(g2 / r2) : 0.0;
                    if (nbad) {
                        int64_t pos = (int64_t)L->rank * U->shard + j_bad;
                        ck_abort_msg("%s: rank %d (piece %d of %d), unit %d, step 0: %lld of the %lld reduced "
                                     "gradient values differ from the mean over the %d data-parallel ranks by more "
                                     "than %d bf16 steps; first: element %lld of the unit%s = %.6g, mean %.6g (the "
                                     "unit's piece of this rank starts at element %lld = rank x shard). The norm of "
                                     "the piece is %.4g, the mean's %.4g (ratio %.3g). Common causes: the sum not "
                                     "divided by the data-parallel size (or divided twice: RL_AVG and a scale), "
                                     "divided by the shard group instead of every replica, the wrong piece (offset), "
                                     "a reduce-scatter of an incomplete bucket, a bucket freed or a result read "
                                     "before its collective completed", what, r, L->rank, L->n, u, (long long)nbad,
                                     (long long)U->shard, c->ranks, ref->groups > 1 ? 3 : 2, (long long)pos,
                                     pos >= U->numel ? " (padding)" : "", grad[U->shard_off + j_bad],
                                     pos < U->numel ? ref->mean[s][U->start + pos] : 0.0f,
                                     (long long)((int64_t)L->rank * U->shard), sqrt(g2), sqrt(r2), ratio);
                    }
                    if (sqrt(d2) <= 0.02 * sqrt(r2) + 1e-12)
                        continue;
                    const char *why =
                        s == 0 ? "the reduction itself is off"
                        : ratio > 1.15 ? "the piece is larger than the mean while step 0's pieces matched it on every "
                                         "rank: a gradient that grows from step to step is accumulated from an "
                                         "earlier step (a bucket or buffer reused without being zeroed)"
                        : ratio < 0.85 ? "the piece is smaller than the mean while step 0's pieces matched it on "
                                         "every rank: contributions missing from the sum in later steps (a bucket "
                                         "reduce-scattered before all its gradients were written, a stale piece)"
                                       : "the piece has the mean's size but not its values, while step 0's pieces "
                                         "matched the mean on every rank: the reduction is right, but the parameters "
                                         "this step's gradients were computed from already differ from the "
                                         "baseline's — the ranks' copies diverged in an earlier step (a skipped or "
                                         "wrong all-gather of the updated parameters, AdamW on the wrong piece or "
                                         "skipping a unit, the AdamW step counter advanced more or less than once "
                                         "per step, a stale gathered unit in ZeRO-3); the parameter test shows where";
                    ck_abort_msg("%s: rank %d (piece %d of %d), unit %d, step %d: the reduced gradient piece is %.3g%% "
                                 "away (L2) from the mean over the %d data-parallel ranks (norms: got %.4g, mean %.4g, "
                                 "ratio %.3g): %s", what, r, L->rank, L->n, u, s,
                                 r2 > 0 ? 100 * sqrt(d2 / r2) : 100.0, c->ranks, sqrt(g2), sqrt(r2), ratio, why);
                }
            }
        }
}

/* ZeRO-1: the rest of flat_grad after the reduction (the other ranks' pieces) is left as
 * it is — this rank's own gradients — or divided by N where the whole unit was scaled,
 * before or after the reduce-scatter (zero.h); this rank's piece is checked against the
 * mean. */
static void check_rest(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        for (int s = 0; s < c->steps; s++) {
            const float *local = c->local[r][s], *rest = c->rest[r][s];
            if (!local || !rest)
                continue;
            for (int u = 0; u < L->nunits; u++) {
                const unit_info *U = &L->u[u];
                int64_t lo = (int64_t)L->rank * U->shard, nbad = 0, j_bad = -1;
                for (int64_t j = 0; j < U->padded; j++) {
                    if (j >= lo && j < lo + U->shard)
                        continue;
                    double mine = local[U->flat_off + j], got = rest[U->flat_off + j];
                    double div = mine / L->n;
                    if (!(got == mine || fabs(got - div) <= bf16_step(div)) && !nbad++)
                        j_bad = j;
                }
                ck_assert_msg(!nbad,
                              "%s: rank %d, unit %d, step %d: after zero1_reduce_scatter_grads %lld values of "
                              "flat_grad outside this rank's piece changed; first: element %lld of the unit = %.6g, "
                              "this rank's own gradient there %.6g (zero.h: the rest of flat_grad \"is left as it "
                              "is, or divided by N\"). The reduce-scatter's result goes into this rank's piece "
                              "only",
                              what, r, u, s, (long long)nbad, (long long)j_bad, rest[U->flat_off + j_bad],
                              local[U->flat_off + j_bad]);
            }
        }
    }
}

/* ------------------------------------------------------------------ the trace */

/* One collective of one rank, as the trace recorded it. */
typedef struct coll {
    double vs, ve, bytes;
    int kind, tag, on_shard, on_rep;
} coll;

/* Orders collectives by their start on the comm stream. */
static int coll_cmp(const void *a, const void *b)
{
    const coll *x = a, *y = b;
    return x->vs < y->vs ? -1 : x->vs > y->vs ? 1 : 0;
}

/* The collectives rank r ran in step s, in the order they ran on its comm stream (the
 * order it issued them). Returns the count; *out is malloc'd. */
static int colls_of(const case29 *c, int r, int s, coll **out)
{
    const rank_log *L = &c->res.rk[r];
    int n = 0, cap = 64;
    coll *v = malloc((size_t)cap * sizeof *v);
    for (size_t i = 0; c->trace && i < c->trace->n; i++) { /* none in the child after a failed run */
        const rl_trace_event *ev = &c->trace->ev[i];
        if (ev->rank != r || ev->tags[RL_TAG_STEP] != s || ev->stream != RL_STREAM_COMM || ev->cat != RL_CAT_COMM)
            continue;
        if (n == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n++] = (coll){ ev->vstart, ev->vend, ev->bytes, rl_coll_parse(ev->name), ev->tags[RL_TAG_CHUNK],
                         !strcmp(ev->comm, L->shard_comm), L->rep_comm[0] && !strcmp(ev->comm, L->rep_comm) };
    }
    qsort(v, (size_t)n, sizeof *v, coll_cmp);
    *out = v;
    return n;
}

/* Compute-stream idle time of rank r in step s that began in [a, b), waiting for `what`
 * (a collective's name; NULL: anything). */
static double idle_in(const case29 *c, int r, int s, double a, double b, const char *what)
{
    double t = 0;
    for (size_t i = 0; c->trace && i < c->trace->n; i++) {
        const rl_trace_event *ev = &c->trace->ev[i];
        if (ev->rank != r || ev->tags[RL_TAG_STEP] != s || ev->stream != RL_STREAM_COMPUTE || ev->cat != RL_CAT_IDLE)
            continue;
        if (ev->vstart >= a && ev->vstart < b && (!what || strstr(ev->name, what)))
            t += ev->vend - ev->vstart;
    }
    return t;
}

/* Bytes one rank sends for a collective of S bytes on n ranks (ring). */
static double ring(int kind, int n, double S) { return rl_ring_bytes_per_rank((rl_coll_kind)kind, n, S); }

/* The cost model's bytes per rank per step (calc.h). */
static double calc_traffic(double psi, int W, int G, rl_calc_zero_kind k)
{
    rl_calc_zero_in in = { psi, W, 0, G, 2 };
    rl_calc_zero_out out;
    ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
    return out.traffic_bytes[k];
}

/* The unit(s) a buffer of `bytes` fits ("unit 3", "unit 0/1/2" when blocks are alike), for messages. */
static void unit_of_bytes(rl_grade_text *b, const rank_log *L, double bytes)
{
    int any = 0;
    for (int u = 0; u < L->nunits; u++)
        if (2.0 * (double)L->u[u].padded == bytes) {
            rl_grade_text_add(b, "%s%d", any ? "/" : "unit ", u);
            any = 1;
        }
    if (!any)
        rl_grade_text_add(b, "%.0f B (no unit's size)", bytes);
}

/* ================================================================== 29.1 memory model */

/* The formula's per-rank bytes, written out here: bf16 params and grads, K bytes of optimizer state. */
static void formula(double psi, int n, zero_stage st, double k, int group, double *p, double *g, double *o)
{
    *p = 2 * psi, *g = 2 * psi, *o = k * psi;
    if (st == ZERO_HSDP) {
        *p /= group, *g /= group, *o /= group;
        return;
    }
    if (st >= ZERO_STAGE1)
        *o /= n;
    if (st >= ZERO_STAGE2)
        *g /= n;
    if (st >= ZERO_STAGE3)
        *p /= n;
}

/* What zero_bytes_per_rank left in the child's record: its status, its message and out. */
typedef struct mem_res {
    int rc;
    char err[1100];
    zero_mem out;
} mem_res;

/* A call of zero_bytes_per_rank: its arguments (null_out: out = NULL) and what a crash in it
 * is reported with. */
typedef struct mem_job {
    double psi;
    int n, st;
    double k;
    int group, null_out;
    const char *note;
} mem_job;

/* In the child: the call of zero_bytes_per_rank, its status and message in the record. */
static void mem_produce(void *out, void *arg)
{
    const mem_job *j = arg;
    mem_res *o = out;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    note_crash("%s", j->note);
    rl_clear_error(ctx);
    o->rc = zero_bytes_per_rank(ctx, j->psi, j->n, (zero_stage)j->st, j->k, j->group, j->null_out ? NULL : &o->out);
    snprintf(o->err, sizeof o->err, "%s", rl_last_error(ctx));
    rl_ctx_free_standalone(ctx);
}

/* Calls zero_bytes_per_rank(NULL out when null_out) in the child; the judge gets its status,
 * message (ended) and figures. note: what a crash in the call is reported with. */
static mem_res mem_run(double psi, int n, int st, double k, int group, int null_out, const char *note)
{
    mem_job j = { psi, n, st, k, group, null_out, note };
    mem_res o = *(const mem_res *)rl_grade_run("zero_bytes_per_rank", sizeof o, mem_produce, &j);
    o.err[sizeof o.err - 1] = 0;
    return o;
}

/* zero_bytes_per_rank against the cost model (total) and the formula (categories, GB, GiB). */
static void check_mem(double psi, int n, zero_stage st, double k, int group)
{
    char note[256];
    snprintf(note, sizeof note, "none yet: the crash came in zero_bytes_per_rank(psi=%g, n=%d, %s, k=%g, group=%d)",
             psi, n, zero_stage_name(st), k, group);
    mem_res res = mem_run(psi, n, st, k, group, 0, note);
    int rc = res.rc;
    zero_mem got = res.out;
    if (rc)
        ck_abort_msg("zero_bytes_per_rank(psi=%g, n=%d, %s, k=%g, group=%d) returned %d (%s): %s%s", psi, n,
                     zero_stage_name(st), k, group, rc, rl_status_name(rc), res.err[0] ? res.err : "(no message)",
                     st != ZERO_HSDP ? ". The group is read by hsdp only: the other stages ignore it, whatever its "
                     "value (zero.h)" : k < 0 ? ". A negative k is not an error: like 0 it means K = 12 (zero.h)" : "");
    double kk = k > 0 ? k : 12, want = 0;
    if (psi > 0) { /* the cost model wants Ψ > 0; Ψ = 0 is 0 bytes */
        rl_calc_zero_in in = { psi, n, kk, st == ZERO_HSDP ? group : 0, 2 };
        rl_calc_zero_out out;
        ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
        want = out.bytes[st == ZERO_HSDP ? RL_CALC_HSDP : (int)st];
    }
    double p, g, o;
    formula(psi, n, st, kk, group, &p, &g, &o);
    double tol = 1e-9 * want + 1e-6;
    if (k > 0 && k < 1 && fabs(got.total - want) > tol)
        ck_abort_msg("Ψ = %g parameters, N = %d, %s, k = %g: total %.6g bytes; with K = %g the cost model says %.6g. "
                     "Only k <= 0 means the default 12 (zero.h: \"k <= 0 means 12\"); any k > 0, also one below "
                     "1, is the number of optimizer bytes per parameter", psi, n, zero_stage_name(st), k, got.total,
                     kk, want);
    ck_assert_msg(fabs(got.total - want) <= tol,
                  "Ψ = %g parameters, N = %d, %s, k = %g (K = %g)%s: total %.6g bytes; the cost model (calc.h) says "
                  "%.6g bytes (%.4g GB)%s", psi, n, zero_stage_name(st), k, kk, st == ZERO_HSDP ? " (hsdp group)" : "",
                  got.total, want, want / 1e9, k <= 0 ? ". k <= 0 means the default K = 12" : "");
    ck_assert_msg(fabs(got.param - p) <= tol && fabs(got.grad - g) <= tol && fabs(got.optim - o) <= tol,
                  "Ψ = %g, N = %d, %s, K = %g: param/grad/optim = %.6g / %.6g / %.6g bytes; expected %.6g / %.6g / "
                  "%.6g", psi, n, zero_stage_name(st), kk, got.param, got.grad, got.optim, p, g, o);
    ck_assert_msg(fabs(got.gb - want / 1e9) <= 1e-9 * want / 1e9 + 1e-12 &&
                  fabs(got.gib - want / 1073741824.0) <= 1e-9 * want / 1073741824.0 + 1e-12,
                  "Ψ = %g, N = %d, %s: gb = %.6g and gib = %.6g; %.6g bytes are %.6g GB (1e9 bytes) and %.6g GiB "
                  "(2^30 bytes)", psi, n, zero_stage_name(st), got.gb, got.gib, want, want / 1e9,
                  want / 1073741824.0);
}

START_TEST(t_mem_paper)
{
    /* the ZeRO paper's example: Ψ = 7.5B on Nd = 64 (120, 31.4, 16.6, 1.9 GB) */
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
        check_mem(7.5e9, 64, (zero_stage)st, 12, 0);
}
END_TEST

START_TEST(t_mem_7b)
{
    /* the course's example: 7B on 8 GPUs (112, 38.5, 26.25, 14 GB), K left at its default */
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
        check_mem(7e9, 8, (zero_stage)st, 0, 0);
}
END_TEST

START_TEST(t_mem_sizes)
{
    /* fixed edges: 1 rank (every stage the same), 3 ranks, Ψ = 0 */
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++) {
        check_mem(1e6, 1, (zero_stage)st, 12, 0);
        check_mem(1.3e9, 3, (zero_stage)st, 16, 0);
        check_mem(0, 8, (zero_stage)st, 8, 0);
        check_mem(7e9, 8, (zero_stage)st, -1, 0); /* k <= 0: the default K = 12 */
        check_mem(2e9, 4, (zero_stage)st, 0.5, 0); /* 0 < k < 1 is a K like any other */
    }
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    double ks[] = { 8, 12, 16, 0, -1, 10.5, 0.25, -1e9 };
    for (int i = 0; i < 24; i++) {
        double psi = floor(pow(10, 3 + 9 * rl_rng_uniform(&g)));
        int n = rl_grade_pick(&g, 1, 2048);
        double k = ks[rl_grade_pick(&g, 0, 7)];
        zero_stage st = (zero_stage)rl_grade_pick(&g, ZERO_DDP, ZERO_STAGE3);
        /* ignored outside hsdp, even when it does not divide n, is negative or larger than n */
        int group = rl_grade_pick(&g, -3, 3) + (i % 4 == 3 ? n : 0);
        rl_grade_text_add(&cases, "%sΨ=%.0f n=%d %s k=%g group=%d", i ? "; " : "", psi, n, zero_stage_name(st), k,
                          group);
        check_mem(psi, n, st, k, group);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
}
END_TEST

START_TEST(t_mem_hsdp)
{
    int cases[][2] = { { 16, 8 }, { 8, 8 }, { 8, 1 }, { 6, 3 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_mem(70e9, cases[i][0], ZERO_HSDP, 12, cases[i][1]);
        check_mem(7.5e9, cases[i][0], ZERO_HSDP, 16, cases[i][1]);
    }
    rl_rng g = rl_grade_rng(1);
    rl_grade_text sb = { 0 };
    for (int i = 0; i < 10; i++) {
        int G = rl_grade_pick(&g, 1, 12), R = rl_grade_pick(&g, 1, 40);
        double psi = floor(pow(10, 6 + 6 * rl_rng_uniform(&g)));
        double k = i % 3 ? 12 : 0;
        rl_grade_text_add(&sb, "%sn=%d G=%d Ψ=%.0f k=%g", i ? "; " : "", G * R, G, psi, k);
        check_mem(psi, G * R, ZERO_HSDP, k, G);
    }
    printf("cases: %s\n", rl_grade_text_str(&sb));
    rl_grade_text_free(&sb);
}
END_TEST

START_TEST(t_mem_bad_input)
{
    rl_rng g = rl_grade_rng(1);
    char note[512];
    int n = 2 * rl_grade_pick(&g, 2, 32), d = 2; /* an even world, and a divisor of it */
    int nd = 3;                                   /* a group that does not divide it */
    while (n % nd == 0)
        nd++;
    int nneg = -rl_grade_pick(&g, 1, 64);
    char w[4][96];
    snprintf(w[0], sizeof w[0], "n = %d", nneg);
    snprintf(w[1], sizeof w[1], "hsdp group %d of %d ranks (does not divide)", nd, n);
    snprintf(w[2], sizeof w[2], "hsdp group %d of %d ranks (larger than the world)", 2 * n, n);
    snprintf(w[3], sizeof w[3], "hsdp group -%d of %d ranks (negative)", d, n);
    struct { double psi; int n; int st; double k; int group; const char *what; } bad[] = {
        { -1, 8, ZERO_STAGE1, 12, 0, "psi = -1" },
        { NAN, 8, ZERO_STAGE1, 12, 0, "psi = NaN" },
        { INFINITY, 8, ZERO_STAGE3, 12, 0, "psi = +inf" },
        { 7e9, 0, ZERO_STAGE2, 12, 0, "n = 0" },
        { 7e9, nneg, ZERO_STAGE3, 12, 0, w[0] },
        { 7e9, 8, ZERO_NSTAGES, 12, 0, "stage ZERO_NSTAGES" },
        { 7e9, 8, 9, 12, 0, "stage 9" },
        { 7e9, 8, -1, 12, 0, "stage -1" },
        { 7e9, n, ZERO_HSDP, 12, nd, w[1] },
        { 7e9, n, ZERO_HSDP, 12, 2 * n, w[2] },
        { 7e9, n, ZERO_HSDP, 12, -d, w[3] },
        { 7e9, 8, ZERO_HSDP, 12, 0, "hsdp group 0" },
        { 7e9, 8, ZERO_STAGE1, NAN, 0, "k = NaN" },
        { 7e9, 8, ZERO_STAGE1, INFINITY, 0, "k = +inf" },
        { 7e9, 8, ZERO_STAGE2, -INFINITY, 0, "k = -inf" },
    };
    int gneg = -rl_grade_pick(&g, 1, 8), gbig = n * rl_grade_pick(&g, 2, 4) + rl_grade_pick(&g, 0, 1);
    printf("cases: n=%d; hsdp on %d ranks: group %d (not a divisor), %d, -%d; ignored outside hsdp: groups %d, %d, "
           "%d\n", nneg, n, nd, 2 * n, d, nd, gneg, gbig);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(note, sizeof note, "none yet: the crash came in zero_bytes_per_rank with %s (to be refused with "
                 "RL_ERR_ARG)", bad[i].what);
        int rc = mem_run(bad[i].psi, bad[i].n, bad[i].st, bad[i].k, bad[i].group, 0, note).rc;
        ck_assert_msg(rc == RL_ERR_ARG, "zero_bytes_per_rank with %s must be refused with RL_ERR_ARG (got %d, %s)%s",
                      bad[i].what, rc, rl_status_name(rc),
                      bad[i].k != bad[i].k || isinf(bad[i].k) ? ": zero.h says k <= 0 means 12, and a NaN or "
                      "infinite k (+inf or -inf) is refused like a NaN psi — check k before giving it the default"
                      : "");
    }
    ck_assert_msg(mem_run(7e9, 8, ZERO_STAGE1, 12, 0, 1,
                          "none yet: the crash came in zero_bytes_per_rank(7e9, 8, zero1, 12, 0, out = NULL): a NULL "
                          "out is refused with RL_ERR_ARG before anything is written").rc == RL_ERR_ARG,
                  "zero_bytes_per_rank with out = NULL must be refused with RL_ERR_ARG");
    /* the group is ignored outside hsdp: one that does not divide n, a negative one, one larger than n */
    int ignored[3] = { nd, gneg, gbig };
    for (int st = ZERO_DDP; st <= ZERO_STAGE3; st++)
        for (int i = 0; i < 3; i++) {
            snprintf(note, sizeof note, "none yet: the crash came in zero_bytes_per_rank(7e9, n=%d, %s, 12, group=%d)",
                     n, zero_stage_name((zero_stage)st), ignored[i]);
            int rc = mem_run(7e9, n, st, 12, ignored[i], 0, note).rc;
            ck_assert_msg(rc == 0, "zero_bytes_per_rank(7e9, n=%d, %s, group=%d) returned %d (%s): the group is "
                          "only read by hsdp (zero.h: \"ignored by the other stages\"), whatever its value — "
                          "negative, 0, larger than n or not a divisor", n, zero_stage_name((zero_stage)st),
                          ignored[i], rc, rl_status_name(rc));
        }
}
END_TEST

/* ================================================================== memory after and during the steps */

/* The activation bytes of the case's model on one micro-batch (a one-rank run here): what
 * every rank's activation peak holds whatever the stage. */
static int64_t model_act_bytes(const case29 *c)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_model *m = rl_model_new(ctx, &c->mc);
    rl_data *data = rl_data_regression(ctx, c->mc.hidden, c->mc.out_dim, c->data_seed);
    ck_assert(m && data);
    rl_batch batch;
    memset(&batch, 0, sizeof batch);
    rl_mem_reset_peaks(rl_ctx_mem(ctx));
    ck_assert(rl_data_get(data, ctx, 0, 0, c->mb, &batch) == 0);
    ck_assert(rl_model_forward(m, &batch, NULL) == 0);
    ck_assert(rl_model_backward(m, 1.0f) == 0);
    int64_t act = rl_ctx_mem(ctx)->peak[RL_MEM_ACTIVATION];
    rl_batch_free(&batch);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
    return act;
}

/* Exact bytes the engine's buffers hold, and the bounds at the step's peak; the other
 * categories hold only the model's own activations (no staging copies anywhere). */
static void check_memory(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    int64_t act = model_act_bytes(c);
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        int64_t maxu = 0, maxpair = 0;
        for (int u = 0; u < L->nunits; u++) {
            int64_t p = L->u[u].padded, q = p + (u + 1 < L->nunits ? L->u[u + 1].padded : 0);
            maxu = p > maxu ? p : maxu;
            maxpair = q > maxpair ? q : maxpair;
        }
        int64_t sh = 2 * L->shard_numel, fl = 2 * L->flat_numel, opt = 12 * L->shard_numel;
        int st = c->stage;
        int64_t want_p = st <= ZERO_STAGE2 ? fl : sh, want_g = st == ZERO_STAGE1 ? fl : sh;
        double psi = (double)c->psi, fp, fg, fo;
        formula(psi, L->n, st == ZERO_HSDP ? ZERO_STAGE3 : (zero_stage)st, 12, L->n, &fp, &fg, &fo);
        for (int s = 0; s < c->steps; s++) {
            const rl_mem_account *M = &c->res.rk[r].st[s].mem;
            const char *names[3] = { "param", "grad", "optim" };
            int64_t want[3] = { want_p, want_g, opt };
            double form[3] = { fp, fg, fo };
            int cat[3] = { RL_MEM_PARAM, RL_MEM_GRAD, RL_MEM_OPTIM };
            for (int i = 0; i < 3; i++)
                ck_assert_msg(M->current[cat[i]] == want[i],
                              "%s: rank %d holds %lld bytes of %s after step %d (memory account); the stage's buffers "
                              "are %lld bytes (formula %.0f, Ψ = %lld, N = %d, with each unit padded to a multiple "
                              "of N)%s", what, r, (long long)M->current[cat[i]], names[i], s, (long long)want[i],
                              form[i], (long long)c->psi, L->n,
                              cat[i] == RL_MEM_PARAM && st >= ZERO_STAGE3 ? ": a gathered unit left after the step "
                              "(every unit is freed after its forward and after its backward)"
                              : cat[i] == RL_MEM_GRAD && st >= ZERO_STAGE2 ? ": a gradient bucket left after the "
                              "step (finalize frees every bucket)" : "");
            int64_t bound_p = st <= ZERO_STAGE2 ? fl : sh + 2 * (c->fp || c->bp ? maxpair : maxu);
            int64_t bound_g = st == ZERO_STAGE1 ? fl : sh + 2 * maxpair;
            ck_assert_msg(M->peak[RL_MEM_PARAM] <= bound_p,
                          "%s: parameter memory peaked at %lld bytes in step %d on rank %d; %s%lld bytes. %s", what,
                          (long long)M->peak[RL_MEM_PARAM], s, r,
                          st <= ZERO_STAGE2 ? "the full bf16 parameters are " : "the shard (2Ψ/N) plus ",
                          (long long)bound_p,
                          st <= ZERO_STAGE2 ? "No extra parameter buffers."
                          : c->fp || c->bp ? "At most two units are gathered at a time (the current one and the "
                          "prefetched one, FSDP's limit_all_gathers): free each unit after its forward and after its "
                          "backward, and prefetch only the unit needed next"
                          : "Without prefetch one unit is gathered at a time");
            ck_assert_msg(M->peak[RL_MEM_GRAD] <= bound_g,
                          "%s: gradient memory peaked at %lld bytes in step %d on rank %d; %s = %lld bytes. %s", what,
                          (long long)M->peak[RL_MEM_GRAD], s, r,
                          st == ZERO_STAGE1 ? "the full bf16 gradients (flat_grad)"
                          : "the gradient shard (2Ψ/N) plus at most two unit buckets (the largest consecutive pair)",
                          (long long)bound_g,
                          st == ZERO_STAGE1 ? "No extra gradient buffers."
                          : "A full gradient buffer (2Ψ) defeats the sharded gradients: free each bucket once its "
                          "reduce-scatter is done (the one launched before, when the next unit's is launched)");
            if (st >= ZERO_STAGE2)
                ck_assert_msg(M->peak[RL_MEM_GRAD] >= sh + 2 * maxu,
                              "%s: gradient memory peaked at %lld bytes in step %d on rank %d, less than the gradient "
                              "shard plus the largest unit's bucket (%lld bytes): a bucket is gradient memory "
                              "(zero.h: \"bf16 [padded], RL_MEM_GRAD\"), not charged to another category",
                              what, (long long)M->peak[RL_MEM_GRAD], s, r, (long long)(sh + 2 * maxu));
            if (st >= ZERO_STAGE3)
                ck_assert_msg(M->peak[RL_MEM_PARAM] >= sh + 2 * maxu,
                              "%s: parameter memory peaked at %lld bytes in step %d on rank %d, less than the shard "
                              "plus the largest gathered unit (%lld bytes): a gathered unit is parameter memory "
                              "(zero.h: \"a new bf16 buffer ... (RL_MEM_PARAM)\")", what,
                              (long long)M->peak[RL_MEM_PARAM], s, r, (long long)(sh + 2 * maxu));
            static const int extra[3] = { RL_MEM_ACTIVATION, RL_MEM_COMM, RL_MEM_OTHER };
            for (int i = 0; i < 3; i++) {
                int64_t allowed = extra[i] == RL_MEM_ACTIVATION ? act : 0;
                ck_assert_msg(M->peak[extra[i]] <= allowed,
                              "%s: %s memory peaked at %lld bytes in step %d on rank %d; %s%lld bytes. An extra "
                              "buffer (a staging copy of a unit, a bucket or grad_shard around a collective) was "
                              "charged to %s: no extra buffers at any step's peak, in any category — collectives "
                              "work in place on the stage's own buffers (flat_grad, the buckets, grad_shard, the "
                              "gathered units)", what, rl_mem_cat_name((rl_mem_cat)extra[i]),
                              (long long)M->peak[extra[i]], s, r,
                              extra[i] == RL_MEM_ACTIVATION ? "the model's own activations for this micro-batch are "
                              : "this lab allocates no such memory: ", (long long)allowed,
                              rl_mem_cat_name((rl_mem_cat)extra[i]));
            }
            ck_assert_msg(M->peak[RL_MEM_OPTIM] == opt,
                          "%s: optimizer memory peaked at %lld bytes in step %d on rank %d; the fp32 master, m and v "
                          "of this rank's pieces are %lld bytes (12Ψ/N): no extra optimizer buffers", what,
                          (long long)M->peak[RL_MEM_OPTIM], s, r, (long long)opt);
        }
    }
}

/* ================================================================== traffic from the trace */

/* The step's collectives on every rank against the stage's pattern: per unit one
 * reduce-scatter (ZeRO-1 after backward, ZeRO-2/3 in the grad-ready hook of that unit), the
 * all-gathers (ZeRO-1/2 one per unit after AdamW; ZeRO-3 two per unit, before its forward and
 * its backward), HSDP's all-reduce across replicas; the bytes each rank sent against the cost
 * model. */
static void check_traffic(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    int st = c->stage;
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        int U = L->nunits, n = L->n, R = L->rep;
        for (int s = 0; s < c->steps; s++) {
            coll *v;
            int nc = colls_of(c, r, s, &v);
            int n_rs = 0, n_ag = 0, n_ar = 0, rs_of[MAXU] = { 0 };
            double sent_shard = 0, sent_rep = 0, ar_bytes = 0;
            for (int i = 0; i < nc; i++) {
                coll *x = &v[i];
                rl_grade_text where = { 0 };
                tag_text(&where, x->tag);
                if (x->on_shard)
                    sent_shard += ring(x->kind, n, x->bytes);
                else if (x->on_rep)
                    sent_rep += ring(x->kind, R, x->bytes);
                if (x->kind == RL_COLL_REDUCE_SCATTER) {
                    n_rs++;
                    int hook_u = x->tag >= 1000 && x->tag < 1500 ? x->tag - 1000 : -1;
                    ck_assert_msg(x->on_shard, "%s, rank %d, step %d: a reduce-scatter ran outside the shard "
                                  "communicator", what, r, s);
                    if (st >= ZERO_STAGE2 && x->tag >= 1500 && x->tag < 2000)
                        ck_abort_msg("%s, rank %d, step %d: unit %d's reduce-scatter (%.0f bytes) was issued in a "
                                     "grad-ready hook call for one of its parameters while others of its gradients "
                                     "were still to be announced (zero.h: \"the call that completes a unit (whichever "
                                     "parameter it announces) launches\") — backward "
                                     "announces gradients in the order it makes them ready, not always in reverse "
                                     "registration order", what, r, s,
                                     x->tag - 1500, x->bytes);
                    if (st == ZERO_STAGE1)
                        ck_assert_msg(x->tag == TAG_REDUCE, "%s, rank %d, step %d: a reduce-scatter was issued in %s; "
                                      "ZeRO-1 reduce-scatters every unit's gradients after backward, in "
                                      "zero1_reduce_scatter_grads", what, r, s, rl_grade_text_str(&where));
                    else
                        ck_assert_msg(hook_u >= 0 && hook_u < U && 2.0 * (double)L->u[hook_u].padded == x->bytes,
                                      "%s, rank %d, step %d: a reduce-scatter of %.0f bytes was issued in %s; the "
                                      "grad-ready hook launches each unit's bucket (2 x padded bytes) the moment the "
                                      "unit's last gradient is ready (handout 29.3: \"the grad-ready hook "
                                      "reduce-scatters the bucket ...\")", what, r, s, x->bytes, rl_grade_text_str(&where));
                    if (hook_u >= 0 && hook_u < U)
                        rs_of[hook_u]++;
                } else if (x->kind == RL_COLL_ALL_GATHER) {
                    n_ag++;
                    ck_assert_msg(x->on_shard, "%s, rank %d, step %d: an all-gather ran outside the shard communicator",
                                  what, r, s);
                    if (st <= ZERO_STAGE2)
                        ck_assert_msg(x->tag == TAG_GATHER, "%s, rank %d, step %d: an all-gather was issued in %s; "
                                      "ZeRO-1/2 all-gather the updated parameters after AdamW, in "
                                      "zero_all_gather_params", what, r, s, rl_grade_text_str(&where));
                    else
                        ck_assert_msg(x->tag >= 1 && x->tag < 1 + CB_N * 64 &&
                                      ((x->tag - 1) / 64 == CB_PRE_F || (x->tag - 1) / 64 == CB_PRE_B),
                                      "%s, rank %d, step %d: an all-gather was issued in %s; ZeRO-3 gathers a unit "
                                      "before its forward and before its backward (and prefetches there)", what, r, s,
                                      rl_grade_text_str(&where));
                } else if (x->kind == RL_COLL_ALL_REDUCE) {
                    n_ar++;
                    ar_bytes += x->bytes;
                    ck_assert_msg(st == ZERO_HSDP && x->on_rep,
                                  "%s, rank %d, step %d: an all-reduce (%.0f bytes) was issued in %s; %s", what, r, s,
                                  x->bytes, rl_grade_text_str(&where),
                                  st == ZERO_HSDP ? "HSDP all-reduces the gradient pieces across the replica "
                                  "communicator only" : "this stage reduces with reduce-scatters only (an all-reduce "
                                  "sends the whole gradient to every rank: 2x the bytes)");
                } else {
                    ck_abort_msg("%s, rank %d, step %d: a %s was issued in %s; the stage uses reduce-scatters and "
                                 "all-gathers%s only", what, r, s, rl_coll_name((rl_coll_kind)x->kind),
                                 rl_grade_text_str(&where), st == ZERO_HSDP ? " (and the all-reduce across replicas)" : "");
                }
                rl_grade_text_free(&where);
            }
            free(v);
            int want_ag = st >= ZERO_STAGE3 ? 2 * U : U;
            ck_assert_msg(n_rs == U && n_ag == want_ag,
                          "%s, rank %d, step %d: %d reduce-scatter(s) and %d all-gather(s) with %d unit%s; expected %d "
                          "and %d (%s)", what, r, s, n_rs, n_ag, U, U == 1 ? "" : "s", U, want_ag,
                          st >= ZERO_STAGE3 ? "each unit gathered before its forward and again before its backward, "
                          "its gradients reduce-scattered once; one gather more means a unit was gathered that was "
                          "not needed next, one fewer a stale gathered unit reused" : "one of each per unit");
            if (st >= ZERO_STAGE2)
                for (int u = 0; u < U; u++)
                    ck_assert_msg(rs_of[u] == 1, "%s, rank %d, step %d: unit %d's bucket was reduce-scattered %d "
                                  "time(s) from its grad-ready hook; expected once, when its last gradient is ready",
                                  what, r, s, u, rs_of[u]);
            /* bytes: exact from the units, and the cost model's Ψ figure */
            double want_sh = 0;
            for (int u = 0; u < U; u++) {
                double S = 2.0 * (double)L->u[u].padded;
                want_sh += ring(RL_COLL_REDUCE_SCATTER, n, S) + (st >= ZERO_STAGE3 ? 2 : 1) * ring(RL_COLL_ALL_GATHER, n, S);
            }
            ck_assert_msg(fabs(sent_shard - want_sh) < 0.5,
                          "%s, rank %d, step %d: the collectives on the shard communicator send %.0f bytes per rank "
                          "(ring); the units' reduce-scatters and all-gathers send %.0f (%s)", what, r, s, sent_shard,
                          want_sh, st >= ZERO_STAGE3 ? "3(N-1)/N x Ψ x 2 bytes" : "2(N-1)/N x Ψ x 2 bytes");
            if (st == ZERO_HSDP && R > 1) {
                double want_rep = ring(RL_COLL_ALL_REDUCE, R, 2.0 * (double)L->shard_numel);
                ck_assert_msg(n_ar >= 1 && fabs(ar_bytes - 2.0 * (double)L->shard_numel) < 0.5 &&
                              fabs(sent_rep - want_rep) < 0.5,
                              "%s, rank %d, step %d: %d all-reduce(s) of %.0f bytes in all across the replica group "
                              "(%.0f bytes sent); expected the gradient pieces (%lld bytes) all-reduced across the "
                              "%d replicas once: 2(R-1)/R x Ψ/G x 2 = %.0f bytes sent", what, r, s, n_ar, ar_bytes,
                              sent_rep, (long long)(2 * L->shard_numel), R, want_rep);
            }
            rl_calc_zero_kind k = st == ZERO_HSDP ? RL_CALC_HSDP : (rl_calc_zero_kind)st;
            double calc = calc_traffic((double)c->psi, c->ranks, n, k);
            ck_assert_msg(fabs(sent_shard + sent_rep - calc) <= 0.01 * calc + 64,
                          "%s, rank %d, step %d: %.0f bytes sent in the step; the cost model (calc.h %s) says %.0f",
                          what, r, s, sent_shard + sent_rep, rl_calc_zero_name(k), calc);
        }
    }
}

/* ================================================================== overlap on the modelled timeline */

/* ZeRO-2/3: every rank's reduce-scatters start during backward, the compute stream never
 * waits for one during backward (beyond 25% of their comm time: it may wait for the one
 * launched before, never for the one it just launched), and no bucket is freed before its
 * reduce-scatter ended. */
static void check_overlap(const case29 *c, const char *what, int check_idle)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        for (int s = 0; s < c->steps; s++) {
            const step_log *S = &L->st[s];
            coll *v;
            int nc = colls_of(c, r, s, &v), total = 0, early = 0;
            double rs_time = 0, rs_end[MAXU], last_end = 0;
            for (int u = 0; u < MAXU; u++)
                rs_end[u] = -1;
            for (int i = 0; i < nc; i++) {
                if (v[i].kind != RL_COLL_REDUCE_SCATTER)
                    continue;
                total++;
                early += v[i].vs < S->t_bwd;
                rs_time += v[i].ve - v[i].vs;
                last_end = v[i].ve > last_end ? v[i].ve : last_end;
                if (v[i].tag >= 1000 && v[i].tag < 2000 && (v[i].tag - 1000) % 500 < MAXU)
                    rs_end[(v[i].tag - 1000) % 500] = v[i].ve;
            }
            free(v);
            ck_assert_msg(total == L->nunits && early >= total - 1,
                          "%s, rank %d, step %d: %d reduce-scatter(s) (%d units), %d of them started before backward "
                          "ended; the grad-ready hook launches each bucket's reduce-scatter (RL_ASYNC) the moment its "
                          "last gradient is ready, so all but the last travel while backward goes on (handout 29.3: "
                          "\"The reduce-scatters run on the comm stream during backward\")", what, r, s, total,
                          L->nunits, early);
            if (check_idle) {
                double wait = idle_in(c, r, s, S->t_fwd, S->t_bwd, "reduce_scatter");
                double exposed = idle_in(c, r, s, S->t0, S->t1 + 1, NULL);
                ck_assert_msg(wait <= 0.25 * rs_time + 1e-9,
                              "%s, rank %d, step %d: during backward the compute stream waited %.1f us for "
                              "reduce-scatters, which ran %.1f us on the comm stream (exposed comm in the step: %.1f "
                              "us). Launched with RL_ASYNC and waited for only when the NEXT unit's is launched, "
                              "they hide behind backward (handout 29.3: exposed comm falls from about 82 us to about "
                              "43 us); a reduce-scatter that blocks (no RL_ASYNC), or waited for right after its "
                              "launch, puts all of it on the critical path", what, r, s, wait * 1e6, rs_time * 1e6,
                              exposed * 1e6);
            }
            ck_assert_msg(S->t_red >= last_end - 1e-12,
                          "%s, rank %d, step %d: zero_finalize_grads returned at %.2f us, before the last "
                          "reduce-scatter ended (%.2f us): finalize waits for every reduce-scatter still in flight "
                          "before the gradients are used", what, r, s, S->t_red * 1e6, last_end * 1e6);
            for (int i = 0; i < S->nfree; i++) {
                int u = S->free_unit[i];
                ck_assert_msg(rs_end[u] < 0 || S->free_t[i] >= rs_end[u] - 1e-12,
                              "%s, rank %d, step %d: unit %d's gradient bucket was freed (in the grad-ready hook, at "
                              "%.2f us) before its reduce-scatter ended (%.2f us): the comm stream still reads a "
                              "bucket until its reduce-scatter completes — rl_wait on it before freeing", what, r, s,
                              u, S->free_t[i] * 1e6, rs_end[u] * 1e6);
            }
        }
    }
}

/* ================================================================== 29.2 ZeRO-1 */

/* A random case of stage st on a world drawn from worlds[] (ready: gradients announced in a
 * random order, windows of 2 to all parameters). */
static case29 *random_case(int stream, zero_stage st, const int *worlds, int nworlds, int ready)
{
    rl_rng g = rl_grade_rng((uint64_t)stream);
    case29 *c = case_new();
    case_random(c, &g, st, worlds[rl_grade_pick(&g, 0, nworlds - 1)]);
    if (ready) {
        int nparams = 6 * c->mc.layers + 2;
        c->ready_window = rl_grade_pick(&g, 2, nparams);
        c->ready_seed = (uint64_t)rl_grade_pick(&g, 1, 1000000);
    }
    return c;
}

/* Prints the test's one "cases:" line. */
static void print_cases(const case29 *const *cs, int n)
{
    rl_grade_text b = { 0 };
    for (int i = 0; i < n; i++) {
        rl_grade_text_add(&b, "%s", i ? "; " : "");
        case_text(&b, cs[i]);
    }
    printf("cases: %s\n", rl_grade_text_str(&b));
    rl_grade_text_free(&b);
}

/* Runs c, checks its parameters (and gradients) against the baseline of groups of G. */
static void run_and_compare(case29 *c, int G, int params, int grads)
{
    rl_grade_text what = { 0 };
    case_text(&what, c);
    case_run(c);
    if (rl_grade_judging()) { /* the baseline only feeds the checks */
        ref29 *ref = baseline(c, G);
        if (params)
            check_params(c, ref, rl_grade_text_str(&what));
        if (grads)
            check_grads(c, ref, rl_grade_text_str(&what));
        ref_free(ref);
    }
    rl_grade_text_free(&what);
}

static const int worlds_odd[] = { 3, 4, 5, 6 };

START_TEST(t_z1_params)
{
    case29 *a = random_case(1, ZERO_STAGE1, worlds_odd, 4, 0);
    case29 *b = case_new();
    case_init(b, ZERO_STAGE1, 3, 3); /* the fixed edge: 3 ranks, every unit padded */
    const case29 *cs[2] = { a, b };
    print_cases(cs, 2);
    run_and_compare(a, a->ranks, 1, 0);
    run_and_compare(b, 3, 1, 0);
    case_free(a);
    case_free(b);
}
END_TEST

START_TEST(t_z1_grads)
{
    case29 *a = random_case(2, ZERO_STAGE1, worlds_odd, 4, 0);
    a->snap_rest = 1;
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    run_and_compare(a, a->ranks, 0, 1);
    check_rest(a, a->text);
    case_free(a);
}
END_TEST

START_TEST(t_z1_memory)
{
    case29 *a = random_case(3, ZERO_STAGE1, worlds_odd, 4, 0);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_memory(a, a->text);
    case_free(a);
}
END_TEST

START_TEST(t_z1_traffic)
{
    case29 *a = random_case(4, ZERO_STAGE1, worlds_odd, 4, 0);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_traffic(a, a->text);
    case_free(a);
}
END_TEST

/* ================================================================== 29.3 ZeRO-2 */

START_TEST(t_z2_params)
{
    case29 *a = random_case(1, ZERO_STAGE2, worlds_odd, 4, 1);
    a->ready_window = 6 * a->mc.layers + 2; /* every gradient announced at the end, in a random order */
    case29 *b = case_new(), *w = random_case(2, ZERO_STAGE2, worlds_odd, 4, 0);
    case_init(b, ZERO_STAGE2, 3, 3); /* the fixed edge: 3 ranks, every unit padded */
    w->wrap = 0;                     /* one unit (one bucket) for the whole model */
    const case29 *cs[3] = { a, b, w };
    print_cases(cs, 3);
    run_and_compare(a, a->ranks, 1, 0);
    run_and_compare(b, 3, 1, 0);
    run_and_compare(w, w->ranks, 1, 0);
    case_free(a);
    case_free(b);
    case_free(w);
}
END_TEST

START_TEST(t_z2_grads)
{
    case29 *a = random_case(2, ZERO_STAGE2, worlds_odd, 4, 1);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    run_and_compare(a, a->ranks, 0, 1);
    case_free(a);
}
END_TEST

START_TEST(t_z2_grad_memory)
{
    case29 *a = random_case(3, ZERO_STAGE2, worlds_odd, 4, 0);
    a->hw = grade_hw_slow();
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_memory(a, a->text);
    check_overlap(a, a->text, 0);
    case_free(a);
}
END_TEST

START_TEST(t_z2_traffic)
{
    case29 *a = random_case(4, ZERO_STAGE2, worlds_odd, 4, 1);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_traffic(a, a->text);
    case_free(a);
}
END_TEST

START_TEST(t_z2_overlap)
{
    case29 *a = random_case(5, ZERO_STAGE2, worlds_odd, 4, 0);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_overlap(a, a->text, 1);
    case_free(a);
}
END_TEST

/* The grad-ready hook's two duties, under gradients announced out of order: each unit's
 * reduce-scatter issued in the call that announces its last gradient (the harness counts
 * the calls), and after every call at most one completed unit still holding its bucket —
 * the one launched last (zero.h: the bucket launched before is released in the hook). */
static void check_hook(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        for (int s = 0; s < c->steps; s++) {
            coll *v;
            int nc = colls_of(c, r, s, &v), early = -1;
            double bytes = 0;
            for (int i = 0; i < nc; i++)
                if (v[i].kind == RL_COLL_REDUCE_SCATTER && v[i].tag >= 1500 && v[i].tag < 2000 && early < 0)
                    early = v[i].tag - 1500, bytes = v[i].bytes;
            free(v);
            ck_assert_msg(early < 0,
                          "%s, rank %d, step %d: unit %d's reduce-scatter (%.0f bytes) was issued in a grad-ready "
                          "hook call for one of its parameters while others of its gradients were still to be "
                          "announced (zero.h: \"the call that completes a unit (whichever parameter it announces) "
                          "launches\"): not at its first or last registered parameter — "
                          "backward announces gradients in the order it makes them ready, not always in reverse "
                          "registration order", what, r, s, early, bytes);
            const step_log *S = &L->st[s];
            if (S->live_bad) {
                rl_grade_text units = { 0 };
                for (int u = 0, k = 0; u < L->nunits; u++)
                    if (S->live_mask & (1 << u))
                        rl_grade_text_add(&units, "%s%d", k++ ? ", " : "", u);
                ck_abort_msg("%s, rank %d, step %d: after the grad-ready hook of parameter %d returned, %d complete "
                             "units still held their gradient buckets (units %s); expected at most one, the unit "
                             "launched last. Each launch releases the bucket launched before it (whichever unit "
                             "that was: zero.h \"wait for the previously launched unit's "
                             "reduce-scatter ... and free that bucket\"), not the bucket of a neighbouring unit — "
                             "units complete in the order backward makes their gradients ready", what, r, s,
                             S->live_param, S->live_bad, rl_grade_text_str(&units));
            }
        }
    }
}

START_TEST(t_z2_hook)
{
    rl_rng g = rl_grade_rng(7);
    case29 *a = case_new(), *b = case_new();
    case_random(a, &g, ZERO_STAGE2, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    a->ready_window = 6 * a->mc.layers + 2; /* every gradient announced at the end, in a random order */
    a->ready_seed = (uint64_t)rl_grade_pick(&g, 1, 1000000);
    case_random(b, &g, ZERO_STAGE2, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    b->ready_window = rl_grade_pick(&g, 4, 6 * b->mc.layers + 2);
    b->ready_seed = (uint64_t)rl_grade_pick(&g, 1, 1000000);
    const case29 *cs[2] = { a, b };
    print_cases(cs, 2);
    case_run(a);
    check_hook(a, a->text);
    case_run(b);
    check_hook(b, b->text);
    case_free(a);
    case_free(b);
}
END_TEST

/* Does msg name unit u (its index as a number of its own, or its model unit's name)? */
static int names_unit(const char *msg, int u, const char *mname)
{
    char num[16];
    snprintf(num, sizeof num, "%d", u);
    size_t k = strlen(num);
    for (const char *p = msg; (p = strstr(p, num)); p++) {
        int before = p == msg || !(p[-1] >= '0' && p[-1] <= '9');
        int after = !(p[k] >= '0' && p[k] <= '9');
        if (before && after)
            return 1;
    }
    return mname && mname[0] && strstr(msg, mname) != NULL;
}

START_TEST(t_z2_pending)
{
    rl_rng g = rl_grade_rng(6);
    case29 *c = case_new(), *d = case_new();
    case_random(c, &g, ZERO_STAGE2, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    c->steps = 1;
    c->stop_after_reduce = 1;
    /* a parameter of a random unit whose gradient never becomes ready */
    int mu = rl_grade_pick(&g, 0, c->mc.layers); /* head = layers */
    int first = 6 * mu, count = mu == c->mc.layers ? 2 : 6;
    c->drop_param = first + rl_grade_pick(&g, 0, count - 1);
    /* and a run in which one parameter is announced twice */
    case_random(d, &g, ZERO_STAGE2, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    d->steps = 1;
    d->stop_after_reduce = 1;
    d->dup_param = rl_grade_pick(&g, 0, 6 * d->mc.layers + 1);
    rl_grade_text what = { 0 }, what2 = { 0 };
    case_text(&what, c);
    case_text(&what2, d);
    printf("cases: %s; the grad-ready hook of parameter %d (unit %d) never fires; %s; parameter %d is announced "
           "twice\n", rl_grade_text_str(&what), c->drop_param, mu, rl_grade_text_str(&what2), d->dup_param);
    case_launch(c);
    const rank_res *rr[MAXR] = { 0 };
    for (int r = 0; r < c->ranks; r++)
        rr[r] = &c->res.rk[r].r;
    if (first_error(rr, c->ranks) >= 0) {
        rl_grade_text msg = { 0 };
        failure_text(&msg, rl_grade_text_str(&what), rr, c->ranks, c->res.launch_rc);
        ck_abort_msg("%s", rl_grade_text_str(&msg));
    }
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        ck_assert_msg(L->have_engine, "%s, rank %d: no engine", rl_grade_text_str(&what), r);
        int u = L->mu_unit[mu];
        const step_log *S = &L->st[0];
        ck_assert_msg(S->red_rc != 0,
                      "%s, rank %d: the gradient of one parameter of unit %d never became ready in backward (its "
                      "grad-ready hook never fired), so that unit's bucket was never reduce-scattered; "
                      "zero_finalize_grads returned 0 all the same. It must check that every unit's gradients all "
                      "arrived and return an error naming the unit that still waits (the incident of lecture 28: a bucket "
                      "that never becomes ready)", rl_grade_text_str(&what), r, u);
        char mname[16];
        if (mu == c->mc.layers)
            snprintf(mname, sizeof mname, "head");
        else
            snprintf(mname, sizeof mname, "block%d", mu);
        const char *err = rl_grade_blob_str(S->red_err);
        ck_assert_msg(names_unit(err, u, mname),
                      "%s, rank %d: zero_finalize_grads refused (%d, %s) but its message does not name unit %d, the "
                      "one whose gradients never all arrived: \"%s\"", rl_grade_text_str(&what), r, S->red_rc,
                      rl_status_name(S->red_rc), u, err[0] ? err : "(no message)");
        int64_t shard = 2 * L->shard_numel;
        ck_assert_msg(S->mem_red.current[RL_MEM_GRAD] == shard,
                      "%s, rank %d: after zero_finalize_grads refused, the rank holds %lld bytes of gradient memory; "
                      "the gradient shard is %lld: finalize frees every bucket (waiting for any reduce-scatter "
                      "still in flight) even when it returns the error (zero.h), so that nothing is left behind",
                      rl_grade_text_str(&what), r, (long long)S->mem_red.current[RL_MEM_GRAD], (long long)shard);
    }
    ck_assert_msg(c->res.launch_rc == 0 || c->res.launch_rc == RL_ERR_ARG, "%s: the run ended with %s",
                  rl_grade_text_str(&what), rl_status_name(c->res.launch_rc));
    /* a parameter announced twice: the hook (or finalize) must refuse */
    case_launch(d);
    ck_assert_msg(d->res.launch_rc != RL_ERR_HANG,
                  "%s: after parameter %d was announced to the grad-ready hook twice in one backward the run hung "
                  "(the watchdog's report is below): the hook should have refused the second announcement (a unit "
                  "announced more often than it has parameters is an error) on every rank alike",
                  rl_grade_text_str(&what2), d->dup_param);
    for (int r = 0; r < d->ranks; r++) {
        const rank_log *L = &d->res.rk[r];
        int dmu = d->dup_param / 6 < d->mc.layers ? d->dup_param / 6 : d->mc.layers;
        int u = L->have_engine ? L->mu_unit[dmu] : -1;
        ck_assert_msg((L->r.rc != 0 && L->r.rc != RL_ERR_ABORTED) || L->st[0].red_rc != 0,
                      "%s, rank %d: parameter %d (unit %d) was announced to the grad-ready hook twice in one "
                      "backward, and neither the hook nor zero_finalize_grads returned an error: a unit whose "
                      "gradients arrive more often than it has parameters is an "
                      "error (zero.h), else its bucket may be reduce-scattered twice or before it is complete",
                      rl_grade_text_str(&what2), r, d->dup_param, u);
    }
    rl_grade_text_free(&what);
    rl_grade_text_free(&what2);
    case_free(c);
    case_free(d);
}
END_TEST

/* ================================================================== 29.4 ZeRO-3 / FSDP */

START_TEST(t_z3_params)
{
    case29 *a = random_case(1, ZERO_STAGE3, worlds_odd, 4, 1);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    run_and_compare(a, a->ranks, 1, 0);
    case_free(a);
}
END_TEST

START_TEST(t_z3_params_variants)
{
    rl_rng g = rl_grade_rng(2);
    case29 *a = case_new(), *b = case_new();
    case_random(a, &g, ZERO_STAGE3, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    a->wrap = 0;
    a->fp = a->bp = rl_grade_pick(&g, 0, 1);
    case_random(b, &g, ZERO_STAGE3, rl_grade_pick(&g, 0, 1) ? 3 : 5);
    b->fp = b->bp = 0;
    const case29 *cs[2] = { a, b };
    print_cases(cs, 2);
    run_and_compare(a, a->ranks, 1, 0);
    run_and_compare(b, b->ranks, 1, 0);
    case_free(a);
    case_free(b);
}
END_TEST

START_TEST(t_z3_grads)
{
    case29 *a = random_case(3, ZERO_STAGE3, worlds_odd, 4, 1);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    run_and_compare(a, a->ranks, 0, 1);
    case_free(a);
}
END_TEST

/* After the steps each rank gathered its last unit and freed it at once (free_in_flight):
 * zero3_free must have waited for that all-gather (zero.h) — the compute stream's time after
 * the free is not before the gather's end. */
static void check_free_waits(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    for (int r = 0; r < c->ranks; r++) {
        double end = -1;
        for (size_t i = 0; i < c->trace->n; i++) {
            const rl_trace_event *ev = &c->trace->ev[i];
            if (ev->rank == r && ev->stream == RL_STREAM_COMM && ev->cat == RL_CAT_COMM &&
                ev->tags[RL_TAG_CHUNK] == TAG_FREE && !strcmp(ev->name, "all_gather"))
                end = ev->vend;
        }
        ck_assert_msg(end >= 0, "%s, rank %d: zero3_gather of a unit not gathered (after the steps) issued no "
                      "all-gather", what, r);
        ck_assert_msg(c->res.rk[r].free_t >= end - 1e-12,
                      "%s, rank %d: zero3_free of a unit whose all-gather was still in flight returned at %.2f us, "
                      "before that all-gather ended (%.2f us): it freed the buffer the all-gather was writing. "
                      "zero3_free waits for the unit's gather first when one is in flight (zero.h), then detaches "
                      "and frees `full`", what, r, c->res.rk[r].free_t * 1e6, end * 1e6);
    }
}

START_TEST(t_z3_memory)
{
    rl_rng g = rl_grade_rng(4);
    case29 *a = case_new(), *b = case_new();
    case_random(a, &g, ZERO_STAGE3, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    case_random(b, &g, ZERO_STAGE3, worlds_odd[rl_grade_pick(&g, 0, 3)]);
    b->fp = b->bp = 0;
    a->free_check = 1;
    const case29 *cs[2] = { a, b };
    print_cases(cs, 2);
    case_run(a);
    check_memory(a, a->text);
    check_free_waits(a, a->text);
    case_run(b);
    check_memory(b, b->text);
    case_free(a);
    case_free(b);
}
END_TEST

START_TEST(t_z3_wrap)
{
    rl_rng g = rl_grade_rng(5);
    case29 *per = case_new(), *whole = case_new();
    case_random(per, &g, ZERO_STAGE3, 4);
    per->mc.layers = rl_grade_pick(&g, 4, 5);
    per->steps = 2;
    *whole = *per;
    whole->wrap = 0;
    const case29 *cs[2] = { per, whole };
    print_cases(cs, 2);
    case_run(per);
    case_run(whole);
    const rl_mem_account *P = &per->res.rk[0].st[1].mem, *Wm = &whole->res.rk[0].st[1].mem;
    double full = 2.0 * (double)per->psi, shard = 2.0 * (double)whole->res.rk[0].shard_numel;
    ck_assert_msg(whole->res.rk[0].nunits == 1 && (double)Wm->peak[RL_MEM_PARAM] >= shard + full,
                  "ZeRO-3 without a wrap policy (%d unit): parameter peak %lld bytes; gathering the whole model "
                  "holds the shard + 2Ψ = %.0f bytes", whole->res.rk[0].nunits, (long long)Wm->peak[RL_MEM_PARAM],
                  shard + full);
    ck_assert_msg((double)P->peak[RL_MEM_PARAM] < 0.75 * (double)Wm->peak[RL_MEM_PARAM],
                  "ZeRO-3: per-block units peak at %lld bytes of parameters, one unit for the whole model at %lld; "
                  "per-block units should hold far less (shard + two units)", (long long)P->peak[RL_MEM_PARAM],
                  (long long)Wm->peak[RL_MEM_PARAM]);
    printf("parameter peak: per-block units %lld bytes, whole model %lld bytes\n", (long long)P->peak[RL_MEM_PARAM],
           (long long)Wm->peak[RL_MEM_PARAM]);
    case_free(per);
    case_free(whole);
}
END_TEST

START_TEST(t_z3_traffic)
{
    case29 *a = random_case(6, ZERO_STAGE3, worlds_odd, 4, 0);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_traffic(a, a->text);
    case_free(a);
}
END_TEST

/* Which all-gathers rank L must issue in a step, in order: at which callback, for which unit. */
typedef struct want_ag {
    int kind, mu, unit;
} want_ag;

/* Fills w with them; returns the count. */
static int want_gathers(const rank_log *L, int fp, int bp, want_ag *w)
{
    int U = L->nunits, k = 0;
    for (int u = 0; u < U; u++) {
        int mu = L->u[u].first_unit;
        if (!fp || u == 0)
            w[k++] = (want_ag){ CB_PRE_F, mu, u };
        if (fp && u + 1 < U)
            w[k++] = (want_ag){ CB_PRE_F, mu, u + 1 };
    }
    for (int u = U - 1; u >= 0; u--) {
        int mu = L->u[u].first_unit + L->u[u].nunits - 1;
        if (!bp || u == U - 1)
            w[k++] = (want_ag){ CB_PRE_B, mu, u };
        if (bp && u - 1 >= 0)
            w[k++] = (want_ag){ CB_PRE_B, mu, u - 1 };
    }
    return k;
}

/* Writes the all-gather schedule (callback: units) of a list, for messages. */
static void sched_text(rl_grade_text *b, const rank_log *L, const want_ag *w, int nw, const coll *v, int nv)
{
    if (w) {
        for (int i = 0; i < nw; i++)
            rl_grade_text_add(b, "%s%s of model unit %d: unit %d", i ? ", " : "", cb_names[w[i].kind], w[i].mu, w[i].unit);
        return;
    }
    for (int i = 0; i < nv; i++) {
        rl_grade_text_add(b, "%s", i ? ", " : "");
        tag_text(b, v[i].tag);
        rl_grade_text_add(b, ": ");
        unit_of_bytes(b, L, v[i].bytes);
    }
}

/* The order of the all-gathers on the trace: each issued in the callback where the handout
 * puts it, for the unit needed there or next; each unit's gather ended before its compute began. */
static void check_schedule(const case29 *c, const char *what)
{
    if (!rl_grade_judging())
        return; /* the child only records */
    for (int r = 0; r < c->ranks; r++) {
        const rank_log *L = &c->res.rk[r];
        for (int s = 0; s < c->steps; s++) {
            const step_log *S = &L->st[s];
            coll *v;
            int nc = colls_of(c, r, s, &v), na = 0;
            coll ag[4 * MAXU];
            for (int i = 0; i < nc; i++)
                if (v[i].kind == RL_COLL_ALL_GATHER && v[i].on_shard && na < 4 * MAXU)
                    ag[na++] = v[i];
            free(v);
            want_ag w[4 * MAXU];
            int nw = want_gathers(L, c->fp, c->bp, w);
            int ok = na == nw;
            for (int i = 0; ok && i < nw; i++) {
                ok = ag[i].tag == TAG_CB(w[i].kind, w[i].mu);
                /* the bytes tell a block from the head: the same multiset within one callback */
                int same = 0;
                for (int j = 0; j < nw; j++)
                    if (w[j].kind == w[i].kind && w[j].mu == w[i].mu && 2.0 * (double)L->u[w[j].unit].padded == ag[i].bytes)
                        same = 1;
                ok = ok && same;
            }
            if (!ok) {
                rl_grade_text got = { 0 }, want = { 0 };
                sched_text(&got, L, NULL, 0, ag, na);
                sched_text(&want, L, w, nw, NULL, 0);
                ck_abort_msg("%s, rank %d, step %d: the all-gathers ran in this order (where each was issued: the "
                             "unit its size fits) — %s; expected — %s. Before a unit's forward gather it (unless "
                             "prefetched) and, with forward_prefetch, start gathering u+1; before its backward gather "
                             "it (unless prefetched) and, with backward_prefetch, start gathering u-1 (handout 29.4: "
                             "\"with forward_prefetch start gathering unit u+1 while u computes; with "
                             "backward_prefetch unit u-1 during u's backward\"). A unit gathered twice, a unit "
                             "missing (a stale copy reused) or a prefetch in the wrong direction shows here",
                             what, r, s, rl_grade_text_str(&got), rl_grade_text_str(&want));
            }
            /* a callback issuing the unit's own gather and a prefetch: the own one first, waited for alone */
            for (int i = 0; i + 1 < nw; i++) {
                if (w[i].kind != w[i + 1].kind || w[i].mu != w[i + 1].mu)
                    continue;
                double a = S->cb[w[i].mu][w[i].kind][0], b = S->cb[w[i].mu][w[i].kind][1];
                for (size_t k = 0; k < c->trace->n; k++) {
                    const rl_trace_event *ev = &c->trace->ev[k];
                    if (ev->rank != r || ev->tags[RL_TAG_STEP] != s || ev->stream != RL_STREAM_COMPUTE ||
                        ev->cat != RL_CAT_IDLE || !strstr(ev->name, "all_gather"))
                        continue;
                    ck_assert_msg(!(ev->vstart >= a - 1e-12 && ev->vstart <= b + 1e-12 &&
                                    ev->vend >= ag[i + 1].ve - 1e-12),
                                  "%s, rank %d, step %d: in the %s callback of model unit %d two all-gathers were "
                                  "issued (unit %d's own and the prefetch of unit %d), and the compute stream waited "
                                  "until the second of them ended (%.2f us; the first ended at %.2f us): the unit "
                                  "needed now waited for the prefetch (zero.h: \"A unit's compute never waits for a "
                                  "prefetch\")", what, r,
                                  s, cb_names[w[i].kind], w[i].mu, w[i].unit, w[i + 1].unit, ag[i + 1].ve * 1e6,
                                  ag[i].ve * 1e6);
                }
            }
            for (int i = 0; i < nw; i++) {
                const unit_info *U = &L->u[w[i].unit];
                int kind = w[i].kind;
                int amu = kind == CB_PRE_F ? U->first_unit : U->first_unit + U->nunits - 1;
                double start = S->cb[amu][kind][1];
                ck_assert_msg(ag[i].ve <= start + 1e-12,
                              "%s, rank %d, step %d: unit %d's %s all-gather ended at %.2f us, after the unit's %s "
                              "compute began (%.2f us): the parameters were read before the gather completed (handout "
                              "29.4: \"Read parameters only after zero3_wait\")", what, r, s, w[i].unit,
                              kind == CB_PRE_F ? "forward" : "backward", ag[i].ve * 1e6,
                              kind == CB_PRE_F ? "forward" : "backward", start * 1e6);
            }
        }
    }
}

START_TEST(t_z3_order)
{
    rl_rng g = rl_grade_rng(7);
    case29 *cs[3];
    for (int i = 0; i < 3; i++) { /* forward prefetch only, backward prefetch only, both */
        cs[i] = case_new();
        case_random(cs[i], &g, ZERO_STAGE3, worlds_odd[rl_grade_pick(&g, 0, 3)]);
        cs[i]->fp = i != 1;
        cs[i]->bp = i != 0;
    }
    print_cases((const case29 *const *)cs, 3);
    for (int i = 0; i < 3; i++) {
        case_run(cs[i]);
        check_schedule(cs[i], cs[i]->text);
        case_free(cs[i]);
    }
}
END_TEST

/* Compute-stream idle of rank 0 in the last step (the exposed comm). */
static double exposed(const case29 *c)
{
    const step_log *S = &c->res.rk[0].st[c->steps - 1];
    return idle_in(c, 0, c->steps - 1, S->t0, S->t1 + 1, NULL);
}

START_TEST(t_z3_prefetch)
{
    rl_rng g = rl_grade_rng(8);
    case29 *pf = case_new(), *none = case_new(), *fwd = case_new();
    case_init(pf, ZERO_STAGE3, rl_grade_pick(&g, 3, 5), 2);
    pf->mc.hidden = rl_grade_pick(&g, 100, 140);
    pf->hw = rl_hw_find("a100-pcie");
    *none = *pf;
    none->fp = none->bp = 0;
    *fwd = *pf;
    fwd->bp = 0;
    const case29 *cs[1] = { pf };
    print_cases(cs, 1);
    case_run(pf);
    case_run(none);
    case_run(fwd);
    double e_pf = exposed(pf), e_none = exposed(none), e_fwd = exposed(fwd);
    printf("exposed comm on a100-pcie: with prefetch %.1f us, forward prefetch only %.1f us, without %.1f us\n",
           e_pf * 1e6, e_fwd * 1e6, e_none * 1e6);
    /* the runs without (some) prefetch must not prefetch: else the comparison compares prefetch with itself */
    const case29 *less[2] = { none, fwd };
    for (int k = 0; k < 2; k++) {
        coll *v;
        int nc = colls_of(less[k], 0, 1, &v), extra = 0, mu_x = -1, kind_x = 0;
        for (int i = 0; i < nc; i++) {
            if (v[i].kind != RL_COLL_ALL_GATHER || v[i].tag < 1 || v[i].tag >= 1 + CB_N * 64)
                continue;
            int kind = (v[i].tag - 1) / 64, mu = (v[i].tag - 1) % 64;
            int n_in = 0;
            for (int j = 0; j < nc; j++)
                n_in += v[j].kind == RL_COLL_ALL_GATHER && v[j].tag == v[i].tag;
            int allowed = k == 1 && kind == CB_PRE_F ? 2 : 1; /* forward prefetch only: u and u+1 in forward */
            if (n_in > allowed && mu_x < 0)
                extra = n_in, mu_x = mu, kind_x = kind;
        }
        free(v);
        ck_assert_msg(mu_x < 0,
                      "ZeRO-3 on a100-pcie, %s: %d all-gathers were issued in the %s callback of model unit %d, so "
                      "this run prefetched although its config says %s — the comparison of exposed comm (%.1f us "
                      "with prefetch, %.1f us %s) means nothing then. zero3_pre_forward prefetches only when "
                      "cfg.forward_prefetch is set, zero3_pre_backward only when cfg.backward_prefetch is",
                      k == 0 ? "without prefetch" : "with forward prefetch only", extra, cb_names[kind_x], mu_x,
                      k == 0 ? "forward_prefetch = backward_prefetch = 0" : "backward_prefetch = 0", e_pf * 1e6,
                      (k == 0 ? e_none : e_fwd) * 1e6, k == 0 ? "without" : "with forward prefetch only");
    }
    ck_assert_msg(e_none > 0 && e_pf <= 0.6 * e_none,
                  "ZeRO-3 on a100-pcie: exposed comm %.1f us with prefetch, %.1f us without; prefetching the unit "
                  "needed next (forward u+1, backward u-1) while the current one computes should hide at least 40%% "
                  "of it", e_pf * 1e6, e_none * 1e6);
    ck_assert_msg(e_fwd < e_none && e_pf < e_fwd,
                  "ZeRO-3: exposed comm without prefetch %.1f us, forward_prefetch only %.1f us, both %.1f us; each "
                  "prefetch should hide part of it", e_none * 1e6, e_fwd * 1e6, e_pf * 1e6);
    coll *v;
    int nc = colls_of(pf, 0, 1, &v), nag = 0;
    for (int i = 0; i < nc; i++)
        nag += v[i].kind == RL_COLL_ALL_GATHER;
    free(v);
    ck_assert_msg(nag == 2 * pf->res.rk[0].nunits,
                  "ZeRO-3 with prefetch: %d all-gathers per step for %d units; expected %d (each unit once in "
                  "forward, once in backward)", nag, pf->res.rk[0].nunits, 2 * pf->res.rk[0].nunits);
    case_free(pf);
    case_free(none);
    case_free(fwd);
}
END_TEST

START_TEST(t_z3_overlap)
{
    case29 *a = random_case(9, ZERO_STAGE3, worlds_odd, 4, 0);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    case_run(a);
    check_overlap(a, a->text, 1);
    case_free(a);
}
END_TEST

/* ================================================================== 29.5 hybrid sharding */

/* What a mesh run leaves in the child's record. */
typedef struct mesh_res {
    int rc;                     /* rl_launch's status */
    rank_res r[MAXR];
    int shard_size[MAXR], shard_rank[MAXR], rep_size[MAXR], rep_rank[MAXR];
    int shard_g[MAXR][MAXR], rep_g[MAXR][MAXR];
    int refused[MAXR];
    rl_grade_blob trace;
} mesh_res;

/* A mesh run in the child: world W in groups of G, whether to keep its trace, what a crash is
 * reported with, and where its results go. */
typedef struct mesh_job {
    int W, G, keep_trace;
    const char *note;
    mesh_res *o;
} mesh_job;

/* One rank of a mesh case: builds the mesh and notes what it got. */
static int mesh_rank(rl_ctx *ctx, void *arg)
{
    const mesh_job *j = arg;
    mesh_res *c = j->o;
    int w = rl_rank(ctx);
    rl_comm *sh = NULL, *rep = NULL;
    rl_clear_error(ctx);
    int rc = hsdp_make_mesh(rl_comm_world(ctx), j->G, &sh, &rep);
    if (rc) {
        if (rc == RL_ERR_ARG)
            c->refused[w] = 1;
        else
            note_err(&c->r[w], ctx, rc, "hsdp_make_mesh");
        return c->r[w].rc;
    }
    if (!sh || !rep) {
        note_err(&c->r[w], ctx, RL_ERR_ARG, "hsdp_make_mesh (a NULL communicator)");
        return c->r[w].rc;
    }
    c->shard_size[w] = rl_comm_size(sh);
    c->shard_rank[w] = rl_comm_rank(sh);
    c->rep_size[w] = rl_comm_size(rep);
    c->rep_rank[w] = rl_comm_rank(rep);
    for (int i = 0; i < c->shard_size[w] && i < MAXR; i++)
        c->shard_g[w][i] = rl_comm_global_rank(sh, i);
    for (int i = 0; i < c->rep_size[w] && i < MAXR; i++)
        c->rep_g[w][i] = rl_comm_global_rank(rep, i);
    rl_comm_free(sh);
    rl_comm_free(rep);
    return 0;
}

/* In the child: runs hsdp_make_mesh on every rank, what each got (and the trace) in the record. */
static void mesh_produce(void *out, void *arg)
{
    mesh_job *j = arg;
    j->o = out;
    note_crash("%s", j->note);
    rl_opts o = grade_opts(j->W, j->W > 8 ? rl_hw_find("h100-2node-ib") : NULL);
    rl_trace *t = NULL;
    j->o->rc = rl_launch(&o, mesh_rank, j, j->keep_trace ? &t : NULL);
    j->o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Runs hsdp_make_mesh on W ranks in groups of G in the child (keep_trace: with the run's
 * trace); returns what each rank got, from the record (malloc'd). */
static mesh_res *mesh_run(int W, int G, int keep_trace, const char *note)
{
    mesh_job j = { W, G, keep_trace, note, NULL };
    const mesh_res *o = rl_grade_run("hsdp_make_mesh", sizeof *o, mesh_produce, &j);
    mesh_res *c = malloc(sizeof *c);
    ck_assert(c);
    *c = *o;
    return c;
}

/* A valid mesh of W ranks in groups of G on every rank. */
static void check_mesh(int W, int G)
{
    char note[160];
    snprintf(note, sizeof note, "none yet: the crash came in hsdp_make_mesh(world of %d ranks, group %d)", W, G);
    mesh_res *c = mesh_run(W, G, 0, note);
    int rc = c->rc;
    const rank_res *rr[MAXR] = { 0 };
    for (int w = 0; w < W; w++)
        rr[w] = &c->r[w];
    if (first_error(rr, W) >= 0) {
        rl_grade_text what = { 0 }, msg = { 0 };
        rl_grade_text_add(&what, "hsdp_make_mesh(world %d, group %d)", W, G);
        failure_text(&msg, rl_grade_text_str(&what), rr, W, rc);
        ck_abort_msg("%s", rl_grade_text_str(&msg));
    }
    ck_assert_msg(rc == 0, "hsdp_make_mesh(world %d, group %d): the run failed (%s)", W, G, rl_status_name(rc));
    for (int w = 0; w < W; w++) {
        ck_assert_msg(!c->refused[w], "hsdp_make_mesh refused world %d, group %d (a valid mesh) on rank %d", W, G, w);
        ck_assert_msg(c->shard_size[w] == G && c->shard_rank[w] == w % G && c->rep_size[w] == W / G &&
                      c->rep_rank[w] == w / G,
                      "world %d, group %d, rank %d: shard group %d ranks (index %d), replica group %d ranks "
                      "(index %d); expected %d (index %d) and %d (index %d)", W, G, w, c->shard_size[w],
                      c->shard_rank[w], c->rep_size[w], c->rep_rank[w], G, w % G, W / G, w / G);
        for (int k = 0; k < G; k++)
            ck_assert_msg(c->shard_g[w][k] == w - w % G + k,
                          "world %d, group %d: rank %d's shard group member %d is world rank %d; expected %d "
                          "(consecutive ranks, one node)", W, G, w, k, c->shard_g[w][k], w - w % G + k);
        for (int k = 0; k < W / G; k++)
            ck_assert_msg(c->rep_g[w][k] == k * G + w % G,
                          "world %d, group %d: rank %d's replica group member %d is world rank %d; expected %d",
                          W, G, w, k, c->rep_g[w][k], k * G + w % G);
    }
    free(c);
}

/* A group that does not divide the world: refused on every rank, before any split (the
 * trace holds no comm_split: a split is a collective of the whole world, and what it made
 * would be left behind). */
static void check_mesh_refused(int W, int G)
{
    char note[320];
    snprintf(note, sizeof note, "none yet: the crash came in hsdp_make_mesh(world of %d ranks, group %d), a group to "
             "refuse with RL_ERR_ARG before anything else (zero.h: \"RL_ERR_ARG, before any split, when group does "
             "not divide the world size\")", W, G);
    mesh_res *c = mesh_run(W, G, 1, note);
    rl_trace *tr = rl_grade_trace(c->trace);
    for (int w = 0; w < W; w++)
        ck_assert_msg(c->refused[w], "hsdp_make_mesh(world %d, group %d) must be refused with RL_ERR_ARG on every "
                      "rank (%d does not divide %d), before any split; rank %d %s", W, G, G, W, w,
                      c->r[w].rc ? rl_grade_blob_str(c->r[w].err) : "accepted it");
    int splits = 0, r_split = -1;
    for (size_t i = 0; tr && i < tr->n; i++)
        if (tr->ev[i].stream == RL_STREAM_COMM && !strcmp(tr->ev[i].name, "comm_split") && !splits++)
            r_split = tr->ev[i].rank;
    rl_trace_free(tr);
    ck_assert_msg(!splits, "hsdp_make_mesh(world %d, group %d) was refused, but the trace shows %d comm_split "
                  "event(s) before it (the first on rank %d): a group that does not divide the world is refused "
                  "before any split (zero.h) — each split is a collective of the whole world, and the communicators "
                  "it made would be left behind", W, G, splits, r_split);
    free(c);
}

START_TEST(t_hsdp_mesh)
{
    int fixed[][2] = { { 4, 2 }, { 16, 8 }, { 4, 4 }, { 4, 1 } };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_mesh(fixed[i][0], fixed[i][1]);
    rl_rng g = rl_grade_rng(1);
    rl_grade_text sb = { 0 };
    for (int i = 0; i < 3; i++) {
        int W = rl_grade_pick(&g, 2, 12), G;
        do
            G = rl_grade_pick(&g, 1, W);
        while (W % G);
        rl_grade_text_add(&sb, "%sworld %d group %d", i ? "; " : "", W, G);
        check_mesh(W, G);
    }
    int W = 2 * rl_grade_pick(&g, 2, 6), G;
    do
        G = rl_grade_pick(&g, 3, W + 2);
    while (W % G == 0);
    rl_grade_text_add(&sb, "; refused: world %d group %d, world 4 group 3, world 6 group 0", W, G);
    printf("cases: %s\n", rl_grade_text_str(&sb));
    rl_grade_text_free(&sb);
    check_mesh_refused(4, 3);
    check_mesh_refused(W, G);
    check_mesh_refused(6, 0);
}
END_TEST

/* A random HSDP case: 6 or 8 ranks in groups of 2..W/2 (at least 2 replicas and 2 shards, never as many of one as
 * of the other). */
static case29 *random_hsdp(int stream, int ready)
{
    rl_rng g = rl_grade_rng((uint64_t)stream);
    static const int meshes[][2] = { { 6, 2 }, { 6, 3 }, { 8, 2 }, { 8, 4 } }; /* 4 = 2 x 2 is a fixed case */
    int k = rl_grade_pick(&g, 0, 3);
    case29 *c = case_new();
    case_random(c, &g, ZERO_HSDP, meshes[k][0]);
    c->group = meshes[k][1];
    if (ready) {
        c->ready_window = rl_grade_pick(&g, 2, 6 * c->mc.layers + 2);
        c->ready_seed = (uint64_t)rl_grade_pick(&g, 1, 1000000);
    }
    return c;
}

START_TEST(t_hsdp_params)
{
    case29 *a = case_new();
    case_init(a, ZERO_HSDP, 4, 3);
    a->group = 2;
    a->hw = grade_hw_2x2();
    case29 *b = random_hsdp(1, 1);
    const case29 *cs[2] = { a, b };
    print_cases(cs, 2);
    run_and_compare(a, 2, 1, 0);
    run_and_compare(b, b->group, 1, 0);
    case_free(a);
    case_free(b);
}
END_TEST

START_TEST(t_hsdp_grads)
{
    case29 *a = random_hsdp(2, 1);
    const case29 *cs[1] = { a };
    print_cases(cs, 1);
    run_and_compare(a, a->group, 0, 1);
    case_free(a);
}
END_TEST

/* One HSDP case: its traffic from the trace, its memory account, 16Ψ/G of model states. */
static void hsdp_traffic(case29 *c)
{
    rl_grade_text what = { 0 };
    case_text(&what, c);
    case_run(c);
    const rank_log *L = &c->res.rk[0];
    ck_assert_msg(L->n == c->group && L->rep == c->ranks / c->group,
                  "%s: the shard group has %d ranks and the replica group %d; expected %d and %d", rl_grade_text_str(&what),
                  L->n, L->rep, c->group, c->ranks / c->group);
    check_traffic(c, rl_grade_text_str(&what));
    check_memory(c, rl_grade_text_str(&what));
    double per = 16.0 * (double)c->psi / c->group;
    const rl_mem_account *M = &L->st[c->steps - 1].mem;
    double states = (double)(M->current[RL_MEM_PARAM] + M->current[RL_MEM_GRAD] + M->current[RL_MEM_OPTIM]);
    ck_assert_msg(fabs(states - per) <= 0.01 * per + 64, "%s: %.0f bytes of model states on rank 0; (2+2+12)Ψ/G = %.0f",
                  rl_grade_text_str(&what), states, per);
    rl_grade_text_free(&what);
}

START_TEST(t_hsdp_traffic)
{
    case29 *a = case_new();
    case_init(a, ZERO_HSDP, 4, 2);
    a->group = 2;
    a->hw = grade_hw_2x2();
    case29 *b = random_hsdp(3, 0);
    case29 *one = case_new(); /* G = W: one shard group, a replica communicator of one rank (R = 1) */
    case_init(one, ZERO_HSDP, 4, 2);
    one->mc.layers = 2;
    one->mc.hidden = 40;
    const case29 *cs[3] = { a, b, one };
    print_cases(cs, 3);
    hsdp_traffic(a);
    hsdp_traffic(b);
    hsdp_traffic(one);
    case_free(one);
    if (!rl_grade_quick()) {
        case29 *big = case_new();
        case_init(big, ZERO_HSDP, 16, 2);
        big->group = 8;
        big->mc.layers = 2;
        big->mc.hidden = 48;
        big->hw = rl_hw_find("h100-2node-ib");
        hsdp_traffic(big);
        case_free(big);
    }
    case_free(a);
    case_free(b);
}
END_TEST

/* ------------------------------------------------------------------ answers file */

/* The cost model for Ψ on n ranks, K = 12. */
static rl_calc_zero_out zero_calc(double psi, int n)
{
    rl_calc_zero_in in = { psi, n, 12, 0, 2 };
    rl_calc_zero_out out;
    ck_assert(rl_calc_zero(&in, &out, NULL, 0) == 0);
    return out;
}

/* This learner's numbers for the hand derivations (rl_grade_learner_pick): H1 a model on a
 * cluster; H2 the memory a GPU gives model states and the data-parallel degree; H3 a model and
 * the link its FSDP traffic crosses. */
typedef struct h_numbers {
    double h1_psi;
    int h1_n, h1_pct;
    double h2_mem_gb;
    int h2_n;
    double h3_psi;
    const char *h3_link; /* a profile of cost.h: its intra-node link when h3_inter is 0, else its inter-node */
    int h3_inter;
} h_numbers;

static h_numbers my_numbers(void)
{
    static const double psi1[] = { 1.3e9, 2.7e9, 6.7e9, 13e9, 30e9, 65e9 }, n1[] = { 4, 8, 16, 32, 64 },
                        pct1[] = { 5, 10, 20, 25 };
    static const double mem2[] = { 24, 40, 48, 80, 96 }, n2[] = { 8, 16, 32, 128, 512 };
    static const double psi3[] = { 13e9, 34e9, 70e9, 180e9 }, link3[] = { 0, 1, 2 };
    static const char *const links[] = { "h100-nvlink", "h100-2node-ib", "a100-pcie" };
    h_numbers h;
    h.h1_psi = rl_grade_learner_pick("29/H1/psi", psi1, 6);
    h.h1_n = (int)rl_grade_learner_pick("29/H1/n", n1, 5);
    h.h1_pct = (int)rl_grade_learner_pick("29/H1/pct", pct1, 4);
    h.h2_mem_gb = rl_grade_learner_pick("29/H2/memory", mem2, 5);
    h.h2_n = (int)rl_grade_learner_pick("29/H2/n", n2, 5);
    h.h3_psi = rl_grade_learner_pick("29/H3/psi", psi3, 4);
    int l = (int)rl_grade_learner_pick("29/H3/link", link3, 3);
    h.h3_link = links[l];
    h.h3_inter = l == 1;
    return h;
}

/* The link H3's traffic crosses. */
static const rl_link *h3_link(const h_numbers *h)
{
    const rl_hw *hw = rl_hw_find(h->h3_link);
    return h->h3_inter ? &hw->inter : &hw->intra;
}

/* make questions LAB=29: this learner's numbers. */
static void questions29(FILE *out)
{
    h_numbers h = my_numbers();
    const rl_link *l = h3_link(&h);
    fprintf(out, "  H1: a model of %g·10⁹ parameters (Ψ = %g) on %d GPUs, K = 12; within %d%% of the floor.\n",
            h.h1_psi / 1e9, h.h1_psi, h.h1_n, h.h1_pct);
    fprintf(out, "  H2: each GPU has %g GB for model states; %d GPUs of data parallelism, K = 12.\n", h.h2_mem_gb,
            h.h2_n);
    fprintf(out, "  H3: a model of %g·10⁹ parameters in bf16; the traffic crosses %s at %g GB/s each way.\n",
            h.h3_psi / 1e9, l->name, l->bw / 1e9);
}

/* H1: this learner's model on this learner's GPUs under 16Ψ accounting (GB), and ZeRO-1 in GiB. */
START_TEST(t_ans_model)
{
    h_numbers h = my_numbers();
    rl_calc_zero_out z = zero_calc(h.h1_psi, h.h1_n);
    CHECK_NUM("h1_ddp_gb", z.bytes[RL_CALC_DDP] / 1e9, 0.005);
    CHECK_NUM("h1_zero1_gb", z.bytes[RL_CALC_ZERO1] / 1e9, 0.005);
    CHECK_NUM("h1_zero2_gb", z.bytes[RL_CALC_ZERO2] / 1e9, 0.005);
    CHECK_NUM("h1_zero3_gb", z.bytes[RL_CALC_ZERO3] / 1e9, 0.005);
    CHECK_NUM("h1_zero1_gib", z.bytes[RL_CALC_ZERO1] / 1073741824.0, 0.005);
    /* ZeRO-1 tends to 4Ψ (the bf16 parameters and gradients) as the GPUs grow; the fewest GPUs
     * with 4Ψ + 12Ψ/n within pct% of it: 12/n <= 4·pct/100  ⇔  n >= 300/pct */
    CHECK_NUM("h1_gpus_near_floor", (300 + h.h1_pct - 1) / h.h1_pct, 0.001);
}
END_TEST

/* H2: the largest model (10⁹ parameters) whose model states fit the learner's memory per GPU
 * under each stage: the memory over the bytes per parameter the cost model charges a rank. */
START_TEST(t_ans_fit)
{
    h_numbers h = my_numbers();
    rl_calc_zero_out z = zero_calc(1, h.h2_n); /* bytes per rank for one parameter */
    CHECK_NUM("h2_ddp_b", h.h2_mem_gb / z.bytes[RL_CALC_DDP], 0.01);
    CHECK_NUM("h2_zero1_b", h.h2_mem_gb / z.bytes[RL_CALC_ZERO1], 0.01);
    CHECK_NUM("h2_zero2_b", h.h2_mem_gb / z.bytes[RL_CALC_ZERO2], 0.01);
    CHECK_NUM("h2_zero3_b", h.h2_mem_gb / z.bytes[RL_CALC_ZERO3], 0.01);
}
END_TEST

/* H3: FSDP's extra traffic over DDP for the learner's model (the paper's large-N figures, bf16)
 * and its time on the learner's link. */
START_TEST(t_ans_fsdp_extra)
{
    h_numbers h = my_numbers();
    rl_calc_zero_out z = zero_calc(h.h3_psi, 1024);
    double extra = (z.traffic_paper[RL_CALC_ZERO3] - z.traffic_paper[RL_CALC_DDP]) * 2;
    CHECK_NUM("h3_extra_gb", extra / 1e9, 0.01);
    CHECK_NUM("h3_extra_s", extra / h3_link(&h)->bw, 0.02);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_INTERVIEW();
}
END_TEST

/* the interview questions' answer keys, in the handout's order */
static const char *const interview29[] = { "i1_three_psi", "i2_no_wrap", "i3_zero2_vs_zero3", NULL };

/* ================================================================== the table */

static const rl_grade_step steps29[] = {
    { "29.1", "memory model" },
    { "29.2", "ZeRO-1" },
    { "29.3", "ZeRO-2" },
    { "29.4", "ZeRO-3 / FSDP" },
    { "29.5", "hybrid sharding" },
};

static const rl_grade_test tests29[] = {
    { "29.1", "the paper's example: 7.5B on 64 GPUs", 4, 10, &t_mem_paper, 0 },
    { "29.1", "7B on 8 GPUs (16 psi accounting)", 3, 10, &t_mem_7b, 0 },
    { "29.1", "random model and cluster sizes, K defaulted or 8..16", 4, 10, &t_mem_sizes, 0 },
    { "29.1", "hybrid sharding groups", 3, 10, &t_mem_hsdp, 0 },
    { "29.1", "bad input refused, group ignored outside hsdp", 2, 10, &t_mem_bad_input, 0 },
    { "29.1", "answers: your model on your GPUs, in GB and GiB", 3, 10, &t_ans_model, RL_GRADE_NO_CHILD },
    { "29.1", "answers: the largest model your GPUs hold, per stage", 2, 10, &t_ans_fit, RL_GRADE_NO_CHILD },
    { "29.2", "parameters = DDP+AdamW baseline (random worlds and models)", 6, 40, &t_z1_params, 0 },
    { "29.2", "ZeRO-1 reduced gradient = the mean, this rank's piece", 4, 40, &t_z1_grads, 0 },
    { "29.2", "memory account after each step and at its peak", 5, 40, &t_z1_memory, 0 },
    { "29.2", "traffic from the trace: one reduce-scatter and one all-gather per unit", 5, 40, &t_z1_traffic, 0 },
    { "29.3", "parameters = baseline, gradients ready out of order", 5, 40, &t_z2_params, 0 },
    { "29.3", "ZeRO-2 reduced gradient = the mean, this rank's piece", 4, 40, &t_z2_grads, 0 },
    { "29.3", "gradient memory 2psi/N + buckets, no full buffer", 5, 40, &t_z2_grad_memory, 0 },
    { "29.3", "traffic from the trace: one reduce-scatter per unit, from the hook", 3, 40, &t_z2_traffic, 0 },
    { "29.3", "reduce-scatters overlap backward (exposed comm bounded)", 4, 40, &t_z2_overlap, 0 },
    { "29.3", "the hook: launch at a unit's last gradient, release the bucket launched before", 3, 40, &t_z2_hook, 0 },
    { "29.3", "a unit whose gradients never all arrive fails finalize", 3, 40, &t_z2_pending, 0 },
    { "29.4", "parameters = baseline (per-block units, prefetch, out-of-order gradients)", 5, 40, &t_z3_params, 0 },
    { "29.4", "whole-model unit, no prefetch, odd ranks: same result", 4, 60, &t_z3_params_variants, 0 },
    { "29.4", "ZeRO-3 reduced gradient = the mean, this rank's piece", 3, 40, &t_z3_grads, 0 },
    { "29.4", "memory: shard + two units, all freed after the step", 5, 40, &t_z3_memory, 0 },
    { "29.4", "per-block units vs one unit: parameter peak", 3, 40, &t_z3_wrap, 0 },
    { "29.4", "traffic from the trace: 3psi, 2 gathers and 1 reduce-scatter per unit", 3, 40, &t_z3_traffic, 0 },
    { "29.4", "prefetch order from the trace: each gather for the unit needed next", 5, 40, &t_z3_order, 0 },
    { "29.4", "prefetch hides comm (exposed comm drops)", 3, 60, &t_z3_prefetch, 0 },
    { "29.4", "ZeRO-3 reduce-scatters overlap backward", 3, 40, &t_z3_overlap, 0 },
    { "29.4", "answers: FSDP's extra traffic for your model on your link", 2, 10, &t_ans_fsdp_extra, RL_GRADE_NO_CHILD },
    { "29.5", "2-D mesh from rl_comm_split", 5, 30, &t_hsdp_mesh, 0 },
    { "29.5", "parameters = baseline (2 nodes x 2, random meshes)", 5, 40, &t_hsdp_params, 0 },
    { "29.5", "HSDP reduced gradient = the mean over every replica", 3, 40, &t_hsdp_grads, 0 },
    { "29.5", "intra- vs inter-group traffic from the trace, memory (16psi/G)", 6, 60, &t_hsdp_traffic, 0 },
    { "29.5", "answers: interview questions", 3, 10, &t_ans_interview, RL_GRADE_NO_CHILD },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "29", "ZeRO-1/2/3 and FSDP", "labs/29_zero_fsdp/README.md", "labs/29_zero_fsdp/answers.txt",
        steps29, (int)(sizeof steps29 / sizeof steps29[0]), tests29, (int)(sizeof tests29 / sizeof tests29[0]),
        questions29,
        interview29,
    };
    return rl_grade_main(&lab, argc, argv);
}
