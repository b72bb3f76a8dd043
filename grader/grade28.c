/* grade28.c — the grader of Lab 28 (DDP). One Check test per graded behaviour, grouped by
 * step (28.1–28.5), run by grade.c. Learner code runs on simulated ranks (rl_launch);
 * references come from one-rank computations with common/ (the model's own backward on
 * the global batch, direct sums, cost.h / calc.h formulas) and from a bucket rule written
 * out here — never from the solution file. Built twice: against labs/28_ddp/ddp.c and
 * against solutions/28_ddp/ddp.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "ddp.h"
#include "grade.h"

#define MAXR 16
#define MAXSTEPS 3

/* ================================================================== shared helpers */

/* What a rank reports back. */
typedef struct rank_res {
    int rc;
    char err[600];
    int64_t wrong, first_wrong;
    double got, want;
} rank_res;

static void note_err(rank_res *rr, rl_ctx *ctx, int rc, const char *what)
{
    rr->rc = rc;
    const char *m = rl_last_error(ctx);
    snprintf(rr->err, sizeof rr->err, "%s returned %d (%s)%s%s", what, rc, rl_status_name(rc), m[0] ? ": " : "", m);
}

/* Options of a quiet sim run with a watchdog well inside the test's time limit. */
static rl_opts grade_opts(int n)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.timeout_s = 4.0 * rl_grade_time_scale();
    return o;
}

/* Launches fn on n ranks; on failure ends the test with the most useful message. */
static void launch_or_fail(int n, rl_rank_fn fn, void *arg, const rank_res *rr, rl_trace **tr, const char *what)
{
    rl_opts o = grade_opts(n);
    int rc = rl_launch(&o, fn, arg, tr);
    for (int r = 0; r < n; r++)
        if (rr[r].rc) {
            if (tr && *tr)
                rl_trace_free(*tr), *tr = NULL;
            ck_abort_msg("%s on %d rank%s, rank %d: %s", what, n, n == 1 ? "" : "s", r, rr[r].err);
        }
    if (rc == RL_ERR_HANG)
        ck_abort_msg("%s on %d ranks never finished: the watchdog found a collective or send/recv that never "
                     "completed (an ungrouped ring of sends deadlocks: issue each step's send and recv between "
                     "rl_group_start and rl_group_end). The report is below.", what, n);
    if (rc)
        ck_abort_msg("%s on %d ranks failed: %s (the runtime's report is below)", what, n, rl_status_name(rc));
}

static const rl_hw *grade_hw(void) { return rl_hw_find("h100-nvlink"); }

/* ================================================================== 28.1 ring all-reduce */

typedef struct ring_arg {
    int64_t count;
    rl_dtype dtype;
    int split;          /* 1: all-reduce inside even/odd sub-communicators */
    int reps;           /* calls on the same buffer (the buffer is refilled between calls) */
    rank_res r[MAXR];
    int64_t sent[MAXR], recv[MAXR], sends[MAXR], colls[MAXR], world_sent[MAXR];
    int comm_size[MAXR];
} ring_arg;

/* Value of world rank q at element i: small integers, so every sum is exact in f32 and bf16. */
static float pat(int q, int64_t i) { return (float)((q * 5 + i * 3) % 13) - 6.0f; }

static int ring_rank(rl_ctx *ctx, void *arg)
{
    ring_arg *a = arg;
    int g = rl_rank(ctx), W = rl_world_size(ctx);
    rank_res *rr = &a->r[g];
    rl_comm *w = rl_comm_world(ctx), *comm = w;
    if (a->split && !(comm = rl_comm_split(w, g % 2, -g))) {
        note_err(rr, ctx, RL_ERR_ARG, "rl_comm_split (grader)");
        return 0;
    }
    rl_tensor *buf = rl_tensor_new_1d(ctx, "grad", a->dtype, RL_MEM_GRAD, a->count);
    rl_comm_reset_counters(comm);
    rl_comm_reset_counters(w);
    for (int rep = 0; rep < a->reps && !rr->rc; rep++) {
        for (int64_t i = 0; i < a->count; i++)
            rl_tensor_set(buf, i, pat(g, i) + (float)rep);
        rl_clear_error(ctx);
        int rc = ddp_ring_all_reduce(comm, buf);
        if (rc) {
            note_err(rr, ctx, rc, "ddp_ring_all_reduce");
            break;
        }
        for (int64_t i = 0; i < a->count; i++) {
            float want = 0;
            for (int q = 0; q < W; q++)
                if (!a->split || q % 2 == g % 2)
                    want += pat(q, i) + (float)rep;
            float got = rl_tensor_get(buf, i);
            if (got != want) {
                if (!rr->wrong++)
                    rr->first_wrong = i, rr->got = got, rr->want = want;
            }
        }
    }
    const rl_comm_counters *c = rl_comm_get_counters(comm);
    a->sent[g] = c->bytes_sent;
    a->recv[g] = c->bytes_recv;
    a->sends[g] = c->calls[RL_COLL_SEND];
    int64_t colls = 0;
    for (int k = 0; k < RL_COLL_NKINDS; k++)
        if (k != RL_COLL_SEND && k != RL_COLL_RECV)
            colls += c->calls[k];
    a->colls[g] = colls;
    a->world_sent[g] = a->split ? rl_comm_get_counters(w)->bytes_sent : 0;
    a->comm_size[g] = rl_comm_size(comm);
    rl_tensor_free(buf);
    if (a->split)
        rl_comm_free(comm);
    return 0;
}

/* Runs the learner's ring on n ranks and checks every element exactly. */
static void ring_check(int n, int64_t count, rl_dtype dt, int split, int reps, ring_arg *a)
{
    memset(a, 0, sizeof *a);
    a->count = count;
    a->dtype = dt;
    a->split = split;
    a->reps = reps;
    char what[96];
    snprintf(what, sizeof what, "ddp_ring_all_reduce(count=%lld, %s%s)", (long long)count, rl_dtype_name(dt),
             split ? ", sub-communicator" : "");
    launch_or_fail(n, ring_rank, a, a->r, NULL, what);
    for (int r = 0; r < n; r++)
        ck_assert_msg(a->r[r].wrong == 0,
                      "%s on %d ranks: rank %d has %lld wrong elements; first: element %lld = %g, expected %g "
                      "(the sum over %s)", what, n, r, (long long)a->r[r].wrong, (long long)a->r[r].first_wrong,
                      a->r[r].got, a->r[r].want, split ? "its sub-communicator's ranks" : "all ranks");
}

START_TEST(t_ring_world_sizes)
{
    ring_arg *a = calloc(1, sizeof *a);
    for (int n = 1; n <= 8; n++)
        ring_check(n, 96 * (int64_t)n, RL_F32, 0, 2, a);
    free(a);
}
END_TEST

START_TEST(t_ring_odd_counts)
{
    ring_arg *a = calloc(1, sizeof *a);
    int ns[] = { 3, 5, 7, 8 };
    int64_t counts[] = { 1001, 37 * 7 + 3, 13 };
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            ring_check(ns[i], counts[k], RL_F32, 0, 1, a);
    free(a);
}
END_TEST

START_TEST(t_ring_tiny_counts)
{
    ring_arg *a = calloc(1, sizeof *a);
    int64_t counts[] = { 0, 1, 3, 7 };
    for (int k = 0; k < 4; k++)
        ring_check(8, counts[k], RL_F32, 0, 1, a);
    ring_check(5, 2, RL_F32, 0, 1, a);
    ring_check(2, 1, RL_F32, 0, 1, a);
    free(a);
}
END_TEST

START_TEST(t_ring_bf16)
{
    ring_arg *a = calloc(1, sizeof *a);
    ring_check(4, 1000, RL_BF16, 0, 1, a);
    ring_check(6, 77, RL_BF16, 0, 1, a);
    free(a);
}
END_TEST

START_TEST(t_ring_subcomm)
{
    ring_arg *a = calloc(1, sizeof *a);
    ring_check(6, 300, RL_F32, 1, 1, a);
    for (int r = 0; r < 6; r++)
        ck_assert_msg(a->world_sent[r] == 0,
                      "sub-communicator: rank %d sent %lld bytes on the world communicator; a ring on comm must use "
                      "comm (its ranks are 0..%d of comm, not world ranks)", r, (long long)a->world_sent[r],
                      a->comm_size[r] - 1);
    ring_check(7, 101, RL_F32, 1, 1, a); /* groups of 4 and 3 */
    free(a);
}
END_TEST

START_TEST(t_ring_bytes)
{
    ring_arg *a = calloc(1, sizeof *a);
    int ns[] = { 3, 4, 5, 8, 2 }; /* n = 2 last: there a gather to rank 0 also moves S bytes */
    for (int i = 0; i < 5; i++) {
        int n = ns[i];
        int64_t count = 1024 * (int64_t)n;
        ring_check(n, count, RL_F32, 0, 1, a);
        double S = (double)count * 4, want = rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n, S);
        for (int r = 0; r < n; r++) {
            ck_assert_msg(a->colls[r] == 0,
                          "n=%d: rank %d made %lld collective call(s); build the ring from rl_send/rl_recv only",
                          n, r, (long long)a->colls[r]);
            ck_assert_msg(a->sent[r] == (int64_t)llround(want) && a->recv[r] == (int64_t)llround(want),
                          "n=%d, S=%.0f bytes: rank %d sent %lld and received %lld bytes; a ring all-reduce moves "
                          "2(n-1)/n x S = %.0f bytes each way on every rank (a gather to one root makes that rank "
                          "send (n-1) x S)", n, S, r, (long long)a->sent[r], (long long)a->recv[r], want);
            ck_assert_msg(a->sends[r] == 2 * (n - 1),
                          "n=%d: rank %d made %lld sends; a ring all-reduce takes 2(n-1) = %d steps", n, r,
                          (long long)a->sends[r], 2 * (n - 1));
        }
    }
    /* uneven chunks: between 2(S - largest chunk) and 2(S - smallest chunk) */
    int n = 7;
    int64_t count = 1000;
    ring_check(n, count, RL_F32, 0, 1, a);
    double lo = 2.0 * 4 * (double)(count - (count + n - 1) / n), hi = 2.0 * 4 * (double)(count - count / n);
    for (int r = 0; r < n; r++)
        ck_assert_msg(a->sent[r] >= lo && a->sent[r] <= hi,
                      "n=7, count=1000: rank %d sent %lld bytes; the ring sends every chunk but one in each phase, "
                      "%.0f..%.0f bytes", r, (long long)a->sent[r], lo, hi);
    free(a);
}
END_TEST

/* ================================================================== 28.2 buckets */

/* The bucket rule, written out independently: reverse order, close at the cap, no splits,
 * tied duplicates bucketed once with their original. */
static void ref_assign(const ddp_param_desc *d, int n, int64_t first, int64_t cap, ddp_bucket_plan *p)
{
    p->nbuckets = 0;
    p->norder = 0;
    int64_t limit = first, bytes = 0;
    int open = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (d[i].tied_to >= 0)
            continue;
        if (!open) {
            p->buckets[p->nbuckets++] = (ddp_bucket){ p->norder, 0, 0, 0 };
            open = 1;
            bytes = 0;
        }
        ddp_bucket *b = &p->buckets[p->nbuckets - 1];
        p->order[p->norder++] = i;
        p->bucket_of[i] = p->nbuckets - 1;
        p->offset_of[i] = b->numel;
        b->nparams++;
        b->numel += d[i].numel;
        bytes += d[i].numel * (int64_t)rl_dtype_size(d[i].dtype);
        b->bytes = bytes;
        if (bytes >= limit) {
            open = 0;
            limit = cap;
        }
    }
    for (int i = 0; i < n; i++) {
        int o = i;
        while (d[o].tied_to >= 0)
            o = d[o].tied_to;
        p->bucket_of[i] = p->bucket_of[o];
        p->offset_of[i] = p->offset_of[o];
    }
}

static void describe_plan(const ddp_param_desc *d, const ddp_bucket_plan *p, char *buf, size_t size)
{
    size_t k = 0;
    for (int b = 0; b < p->nbuckets && k + 80 < size; b++) {
        k += (size_t)snprintf(buf + k, size - k, "%s[", b ? " " : "");
        for (int j = 0; j < p->buckets[b].nparams && k + 40 < size; j++) {
            int idx = p->buckets[b].first + j;
            int i = idx >= 0 && idx < p->norder ? p->order[idx] : -1;
            k += (size_t)snprintf(buf + k, size - k, "%s%s", j ? " " : "", i >= 0 && i < p->nparams ? d[i].name : "?");
        }
        k += (size_t)snprintf(buf + k, size - k, "]");
    }
    if (p->nbuckets == 0)
        snprintf(buf, size, "(no buckets)");
}

/* Runs the learner's assignment and compares it with the reference; ends the test on a difference. */
static void plan_check(const char *what, const ddp_param_desc *d, int n, int64_t first, int64_t cap)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ddp_bucket_plan got, want;
    ck_assert(ddp_plan_alloc(&got, n) == 0 && ddp_plan_alloc(&want, n) == 0);
    int rc = ddp_assign_buckets(ctx, d, n, first, cap, &got);
    if (rc)
        ck_abort_msg("%s: ddp_assign_buckets returned %d (%s): %s", what, rc, rl_status_name(rc), rl_last_error(ctx));
    ref_assign(d, n, first, cap, &want);
    char gs[1200], ws[1200];
    describe_plan(d, &got, gs, sizeof gs);
    describe_plan(d, &want, ws, sizeof ws);
    int same = got.nbuckets == want.nbuckets && got.norder == want.norder;
    for (int b = 0; same && b < want.nbuckets; b++)
        same = got.buckets[b].first == want.buckets[b].first && got.buckets[b].nparams == want.buckets[b].nparams &&
               got.buckets[b].numel == want.buckets[b].numel && got.buckets[b].bytes == want.buckets[b].bytes;
    for (int k = 0; same && k < want.norder; k++)
        same = got.order[k] == want.order[k];
    ck_assert_msg(same, "%s (first cap %lld B, cap %lld B): expected %d bucket(s) %s, got %d: %s (bytes: bucket 0 has "
                  "%lld, expected %lld)", what, (long long)first, (long long)cap, want.nbuckets, ws, got.nbuckets, gs,
                  got.nbuckets ? (long long)got.buckets[0].bytes : 0LL,
                  want.nbuckets ? (long long)want.buckets[0].bytes : 0LL);
    for (int i = 0; i < n; i++)
        ck_assert_msg(got.bucket_of[i] == want.bucket_of[i] && got.offset_of[i] == want.offset_of[i],
                      "%s: parameter %d (%s%s) has bucket_of %d, offset_of %lld; expected %d, %lld", what, i, d[i].name,
                      d[i].tied_to >= 0 ? ", a tied duplicate" : "", got.bucket_of[i], (long long)got.offset_of[i],
                      want.bucket_of[i], (long long)want.offset_of[i]);
    ddp_plan_free(&got);
    ddp_plan_free(&want);
    rl_ctx_free_standalone(ctx);
}

#define MIB ((int64_t)1 << 20)

START_TEST(t_buckets_lab_model)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ddp_run_config c = ddp_run_config_default();
    rl_model *m = rl_model_new(ctx, &c.model);
    ck_assert(m != NULL);
    ddp_param_desc *d = calloc((size_t)m->nparams, sizeof *d);
    for (int i = 0; i < m->nparams; i++)
        d[i] = (ddp_param_desc){ m->params[i].name, m->params[i].numel, RL_F32, -1 };
    plan_check("the lab's MLP, PyTorch defaults (25 MiB, first 1 MiB)", d, m->nparams, 1 * MIB, 25 * MIB);
    plan_check("the lab's MLP, cap 4 MiB", d, m->nparams, 1 * MIB, 4 * MIB);
    plan_check("the lab's MLP, cap 1 MiB", d, m->nparams, 1 * MIB, 1 * MIB);
    free(d);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(t_buckets_reverse_order)
{
    ddp_param_desc d[6];
    char names[6][16];
    for (int i = 0; i < 6; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        d[i] = (ddp_param_desc){ names[i], 256, RL_F32, -1 }; /* 1 KiB each */
    }
    plan_check("6 parameters of 1 KiB, caps 2 KiB (expect [p5 p4] [p3 p2] [p1 p0])", d, 6, 2048, 2048);
    plan_check("6 parameters of 1 KiB, one bucket", d, 6, 1 * MIB, 25 * MIB);
}
END_TEST

START_TEST(t_buckets_cap_boundary)
{
    /* sizes in KiB (f32): the first bucket closes at 1 KiB, then buckets close once >= 3 KiB */
    int64_t kib[] = { 2, 1, 1, 1, 1, 2, 3, 1, 1 };
    ddp_param_desc d[9];
    char names[9][16];
    for (int i = 0; i < 9; i++) {
        snprintf(names[i], sizeof names[i], "w%d", i);
        d[i] = (ddp_param_desc){ names[i], kib[i] * 256, RL_F32, -1 };
    }
    plan_check("9 parameters of 1-3 KiB, first cap 1 KiB, cap 3 KiB", d, 9, 1024, 3072);
    plan_check("the same, first cap 2.5 KiB (overshoot by the last parameter)", d, 9, 2560, 3072);
    /* bf16: bytes are numel x 2 */
    for (int i = 0; i < 9; i++)
        d[i].dtype = RL_BF16;
    plan_check("the same in bf16 (2 bytes per element)", d, 9, 1024, 3072);
}
END_TEST

START_TEST(t_buckets_huge_tiny)
{
    ddp_param_desc d[8] = {
        { "embed", 10 * MIB, RL_F32, -1 }, /* 40 MiB */
        { "b0", 1, RL_F32, -1 },           { "w1", 1024, RL_F32, -1 }, { "b1", 1, RL_F32, -1 },
        { "huge", 30 * MIB, RL_F32, -1 }, /* 120 MiB */
        { "tiny", 1, RL_F32, -1 },         { "w2", 2 * MIB, RL_F32, -1 }, { "b2", 3, RL_F32, -1 },
    };
    plan_check("huge (40, 120 MiB) and tiny (1 element) parameters, PyTorch caps", d, 8, 1 * MIB, 25 * MIB);
    plan_check("huge and tiny parameters, cap 100 MiB", d, 8, 1 * MIB, 100 * MIB);
}
END_TEST

START_TEST(t_buckets_small_cap)
{
    ddp_param_desc d[5];
    char names[5][16];
    for (int i = 0; i < 5; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        d[i] = (ddp_param_desc){ names[i], 1000 + 100 * i, RL_F32, -1 };
    }
    plan_check("cap (100 B) smaller than every parameter: one bucket each", d, 5, 100, 100);
    plan_check("cap 1 byte", d, 5, 1, 1);
}
END_TEST

START_TEST(t_buckets_tied)
{
    /* a transformer-like list: the LM head (index 5) is the token embedding (index 0) again */
    ddp_param_desc d[6] = {
        { "wte", 64 * 1024, RL_F32, -1 }, { "wpe", 4096, RL_F32, -1 }, { "block0.w", 32 * 1024, RL_F32, -1 },
        { "block0.b", 128, RL_F32, -1 },  { "lnf.g", 128, RL_F32, -1 }, { "lm_head.w", 64 * 1024, RL_F32, 0 },
    };
    plan_check("tied embedding / LM head, one bucket", d, 6, 1 * MIB, 25 * MIB);
    plan_check("tied embedding / LM head, caps 64 KiB / 128 KiB", d, 6, 64 * 1024, 128 * 1024);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ddp_bucket_plan p;
    ddp_plan_alloc(&p, 6);
    ck_assert_int_eq(ddp_assign_buckets(ctx, d, 6, 1 * MIB, 25 * MIB, &p), 0);
    int64_t total = 0;
    for (int b = 0; b < p.nbuckets; b++)
        total += p.buckets[b].bytes;
    ck_assert_msg(total == (64 * 1024 + 4096 + 32 * 1024 + 256) * 4,
                  "the buckets hold %lld bytes; the tied weight must be counted once (%d bytes)", (long long)total,
                  (64 * 1024 + 4096 + 32 * 1024 + 256) * 4);
    ddp_plan_free(&p);
    rl_ctx_free_standalone(ctx);
}
END_TEST

START_TEST(t_buckets_empty_and_bad)
{
    plan_check("empty model", NULL, 0, 1 * MIB, 25 * MIB);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ddp_param_desc d[2] = { { "a", 10, RL_F32, -1 }, { "b", 10, RL_F32, -1 } };
    ddp_bucket_plan p;
    ddp_plan_alloc(&p, 2);
    int rc = ddp_assign_buckets(ctx, d, 2, 1 * MIB, 0, &p);
    ck_assert_msg(rc == RL_ERR_ARG, "cap 0 bytes: expected RL_ERR_ARG (%d), got %d", RL_ERR_ARG, rc);
    ck_assert_msg(rl_last_error(ctx)[0], "cap 0 bytes: refused without a message (use rl_error)");
    rc = ddp_assign_buckets(ctx, d, 2, -5, 25 * MIB, &p);
    ck_assert_msg(rc == RL_ERR_ARG, "first cap -5 bytes: expected RL_ERR_ARG, got %d", rc);
    d[1].dtype = RL_BF16;
    rc = ddp_assign_buckets(ctx, d, 2, 1 * MIB, 25 * MIB, &p);
    ck_assert_msg(rc == RL_ERR_ARG, "mixed f32/bf16 parameters: expected RL_ERR_ARG, got %d", rc);
    ddp_plan_free(&p);
    rl_ctx_free_standalone(ctx);
}
END_TEST

/* ================================================================== 28.3 / 28.4 DDP runs */

typedef struct ddp_case {
    int n, steps, K;
    rl_model_config model;
    int64_t mb;
    double cap, first;
    uint64_t data_seed;
    int64_t total;                 /* parameter elements */
    float *ref[MAXSTEPS];          /* one-rank reference gradients per step, registration order */
    /* results */
    rank_res r[MAXR];
    double err[MAXR][MAXSTEPS];    /* max |g - ref| / max |ref| */
    char err_param[MAXR][40];
    double bwd_end[MAXR][MAXSTEPS], start[MAXR][MAXSTEPS];
    int64_t calls[MAXR][MAXSTEPS], other_calls[MAXR];
    int nbuckets;
    int64_t bucket_bytes[64];
} ddp_case;

static void ddp_case_init(ddp_case *c, int n, int steps, int K, int small)
{
    memset(c, 0, sizeof *c);
    ddp_run_config d = ddp_run_config_default();
    c->n = n;
    c->steps = steps;
    c->K = K;
    c->model = d.model;
    c->mb = 8;
    c->cap = d.bucket_cap_mb;
    c->first = d.first_bucket_mb;
    c->data_seed = 11;
    if (small) { /* a smaller model with the same shape of problem: several buckets */
        c->model.hidden = 64;
        c->model.layers = 4;
        c->cap = 0.1;
        c->first = 0.05;
        c->mb = 4;
    }
    if (rl_grade_quick())
        c->model.layers = c->model.layers > 4 ? 4 : c->model.layers;
}

/* The one-rank reference: the model's own backward over the whole global batch of each step. */
static void ddp_case_reference(ddp_case *c)
{
    rl_ctx *ctx = rl_ctx_new_standalone(grade_hw(), 1);
    rl_model *m = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, c->data_seed);
    ck_assert(m && data);
    c->total = rl_model_numel(m);
    rl_batch b;
    memset(&b, 0, sizeof b);
    for (int s = 0; s < c->steps; s++) {
        float loss;
        ck_assert(rl_data_get(data, ctx, s, 0, c->n * c->mb * c->K, &b) == 0);
        ck_assert(rl_model_zero_grad(m) == 0);
        ck_assert(rl_model_forward(m, &b, &loss) == 0);
        ck_assert(rl_model_backward(m, 1.0f) == 0);
        c->ref[s] = malloc((size_t)c->total * sizeof(float));
        int64_t off = 0;
        for (int i = 0; i < m->nparams; i++) {
            rl_tensor_to_f32(m->params[i].grad, c->ref[s] + off, m->params[i].numel);
            off += m->params[i].numel;
        }
    }
    rl_batch_free(&b);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
}

static void ddp_case_free(ddp_case *c)
{
    for (int s = 0; s < MAXSTEPS; s++)
        free(c->ref[s]);
    free(c);
}

typedef struct bwd_note { rl_ctx *ctx; double *slot; } bwd_note;

static int note_bwd_end(rl_unit *u, void *arg)
{
    bwd_note *b = arg;
    if (u->index == 0 && b->slot)
        *b->slot = rl_stream_time(b->ctx, RL_STREAM_COMPUTE);
    return 0;
}

/* Compares this rank's gradients with the reference of step s. */
static void compare_grads(ddp_case *c, rl_model *m, int rank, int s)
{
    const float *ref = c->ref[s];
    double refmax = 0, worst = 0;
    for (int64_t k = 0; k < c->total; k++)
        refmax = fmax(refmax, fabs(ref[k]));
    float *g = malloc((size_t)c->total * sizeof(float));
    int64_t off = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].grad, g + off, m->params[i].numel);
        for (int64_t k = off; k < off + m->params[i].numel; k++) {
            double e = fabs((double)g[k] - ref[k]) / (refmax > 0 ? refmax : 1);
            if (!(e <= worst)) { /* also catches NaN */
                worst = isnan(e) ? INFINITY : e;
                snprintf(c->err_param[rank], sizeof c->err_param[rank], "%s", m->params[i].name);
            }
        }
        off += m->params[i].numel;
    }
    c->err[rank][s] = worst;
    free(g);
}

static int ddp_case_rank(rl_ctx *ctx, void *arg)
{
    ddp_case *c = arg;
    int rank = rl_rank(ctx);
    rank_res *rr = &c->r[rank];
    rl_comm *w = rl_comm_world(ctx);
    rl_model *m = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, c->data_seed);
    if (!m || !data) {
        note_err(rr, ctx, RL_ERR_ARG, "building the model (grader)");
        rl_data_free(data);
        rl_model_free(m);
        return 0;
    }
    rl_clear_error(ctx);
    ddp_reducer *red = ddp_reducer_new(m, w, c->cap, c->first);
    if (!red) {
        rr->rc = RL_ERR_ARG;
        snprintf(rr->err, sizeof rr->err, "ddp_reducer_new failed (it plans the buckets with your "
                 "ddp_assign_buckets): %s", rl_last_error(ctx));
        rl_data_free(data);
        rl_model_free(m);
        return 0;
    }
    if (rank == 0) {
        c->nbuckets = red->plan.nbuckets;
        for (int b = 0; b < red->plan.nbuckets && b < 64; b++)
            c->bucket_bytes[b] = red->plan.buckets[b].bytes;
    }
    bwd_note note = { ctx, NULL };
    m->post_backward = note_bwd_end;
    m->unit_arg = &note;
    rl_batch b;
    memset(&b, 0, sizeof b);
    const rl_comm_counters *cnt = rl_comm_get_counters(w);
    rl_comm_reset_counters(w);
    for (int s = 0; s < c->steps && !rr->rc; s++) {
        int64_t calls0 = cnt->calls[RL_COLL_ALL_REDUCE];
        c->start[rank][s] = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        rl_step_begin(ctx, s);
        note.slot = &c->bwd_end[rank][s];
        int rc;
        float loss;
        rl_clear_error(ctx);
        if (c->K == 1) { /* 28.3 alone: the grader drives forward and backward */
            const char *what = "rl_model_zero_grad";
            rc = rl_model_zero_grad(m);
            if (!rc)
                rc = rl_data_get(data, ctx, s, rank * c->mb, c->mb, &b), what = "rl_data_get";
            if (!rc)
                rc = rl_model_forward(m, &b, &loss), what = "rl_model_forward";
            if (!rc)
                rc = rl_model_backward(m, 1.0f), what = "rl_model_backward (it calls your ddp_grad_ready)";
            if (!rc)
                rc = ddp_finalize_backward(red), what = "ddp_finalize_backward";
            if (rc)
                note_err(rr, ctx, rc, what);
        } else {
            rc = ddp_train_step(red, data, s, c->mb, c->K, &b, &loss);
            if (rc)
                note_err(rr, ctx, rc, "ddp_train_step");
        }
        rl_step_end(ctx);
        c->calls[rank][s] = cnt->calls[RL_COLL_ALL_REDUCE] - calls0;
        if (!rc)
            compare_grads(c, m, rank, s);
    }
    int64_t other = 0;
    for (int k = 0; k < RL_COLL_NKINDS; k++)
        if (k != RL_COLL_ALL_REDUCE)
            other += cnt->calls[k];
    c->other_calls[rank] = other;
    rl_batch_free(&b);
    ddp_reducer_free(red);
    rl_data_free(data);
    rl_model_free(m);
    return 0;
}

/* Runs a new DDP case (ddp_case_init's arguments) and checks that it ran; the caller checks
 * what it is about, then frees it with ddp_case_free. */
static ddp_case *ddp_case_run(int n, int steps, int K, int small, rl_trace **tr, const char *what)
{
    ddp_case *c = malloc(sizeof *c);
    ddp_case_init(c, n, steps, K, small);
    ddp_case_reference(c);
    launch_or_fail(c->n, ddp_case_rank, c, c->r, tr, what);
    return c;
}

static void check_grads(const ddp_case *c, const char *what)
{
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++)
            ck_assert_msg(c->err[r][s] <= 1e-4,
                          "%s: rank %d, step %d: the gradients differ from one rank's gradient of the global batch "
                          "(%d ranks x %lld samples%s) by %.3g of the largest gradient (worst: %s; tolerance 1e-4). "
                          "%s", what, r, s, c->n, (long long)c->mb * c->K, c->K > 1 ? " x K micro-steps" : "",
                          c->err[r][s], c->err_param[r],
                          fabs(c->err[r][s] - (c->n - 1)) < 0.5 ? "They look n times too large: did you average?"
                                                                 : "");
}

/* Runs a case and checks its gradients (run_what names the run, what the check). */
static void grads_case(int n, int steps, int K, int small, const char *run_what, const char *what)
{
    ddp_case *c = ddp_case_run(n, steps, K, small, NULL, run_what);
    check_grads(c, what);
    ddp_case_free(c);
}

START_TEST(t_ddp_grads)
{
    grads_case(4, 2, 1, 0, "overlapped DDP (the lab's MLP, 4 ranks)", "4 ranks, the lab's MLP, 2 steps");
}
END_TEST

START_TEST(t_ddp_grads_odd)
{
    grads_case(3, 2, 1, 1, "overlapped DDP (3 ranks, small MLP, many buckets)", "3 ranks, small MLP");
    grads_case(1, 1, 1, 1, "overlapped DDP (1 rank)", "1 rank");
}
END_TEST

/* Comm events (all-reduces) of rank r in step s, in the order the comm stream ran them. */
static int step_comm_events(const rl_trace *t, int r, int s, const rl_trace_event **out, int max)
{
    int k = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank == r && e->stream == RL_STREAM_COMM && e->cat == RL_CAT_COMM && e->tags[RL_TAG_STEP] == s &&
            strcmp(e->name, "all_reduce") == 0 && k < max)
            out[k++] = e;
    }
    return k;
}

START_TEST(t_ddp_bucket_order)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 1, 0, &t, "overlapped DDP (the lab's MLP, 4 ranks)");
    const rl_trace_event *ev[128];
    for (int r = 0; r < c->n; r++) {
        ck_assert_msg(c->other_calls[r] == 0, "rank %d made %lld calls of other collectives; DDP needs one all-reduce "
                      "per bucket and nothing else", r, (long long)c->other_calls[r]);
        for (int s = 0; s < c->steps; s++) {
            ck_assert_msg(c->calls[r][s] == c->nbuckets,
                          "rank %d, step %d: %lld all-reduce calls for %d buckets; launch exactly one per bucket per "
                          "step", r, s, (long long)c->calls[r][s], c->nbuckets);
            int k = step_comm_events(t, r, s, ev, 128);
            ck_assert_int_eq(k, c->nbuckets);
            for (int b = 0; b < k; b++) {
                ck_assert_msg((int64_t)llround(ev[b]->bytes) == c->bucket_bytes[b],
                              "rank %d, step %d: all-reduce #%d moved %.0f bytes but bucket %d has %lld; buckets must "
                              "be launched in bucket order 0, 1, 2, ... (a ready bucket waits for earlier ones)", r, s,
                              b, ev[b]->bytes, b, (long long)c->bucket_bytes[b]);
                ck_assert_msg(ev[b]->tags[RL_TAG_BUCKET] == -1 || ev[b]->tags[RL_TAG_BUCKET] == b,
                              "rank %d, step %d: all-reduce #%d is tagged bucket %d", r, s, b,
                              ev[b]->tags[RL_TAG_BUCKET]);
            }
        }
    }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

START_TEST(t_ddp_overlap_starts_early)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 1, 0, &t, "overlapped DDP (the lab's MLP, 4 ranks)");
    ck_assert_msg(c->nbuckets >= 2, "the lab's MLP should make several buckets at cap %g MiB; got %d", c->cap,
                  c->nbuckets);
    const rl_trace_event *ev[128];
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            int k = step_comm_events(t, r, s, ev, 128);
            ck_assert_msg(k > 0, "rank %d, step %d: no all-reduce in the trace", r, s);
            double start = ev[0]->vstart - c->start[r][s], bend = c->bwd_end[r][s] - c->start[r][s];
            ck_assert_msg(ev[0]->vstart < c->bwd_end[r][s],
                          "rank %d, step %d: the first bucket's all-reduce started at %.1f us but backward ended at "
                          "%.1f us (virtual time since the step began); launch each bucket from the grad-ready hook "
                          "as soon as it is complete, with RL_ASYNC, instead of after backward", r, s, start * 1e6,
                          bend * 1e6);
        }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

START_TEST(t_ddp_exposed_comm)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 1, 0, &t, "overlapped DDP (the lab's MLP, 4 ranks)");
    const rl_hw *hw = grade_hw();
    double T = 0, last = 0;
    for (int b = 0; b < c->nbuckets && b < 64; b++) {
        last = rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, c->n, (double)c->bucket_bytes[b], &hw->intra);
        T += last;
    }
    /* the last bucket becomes ready only when backward ends, so it cannot hide; the others
     * can: allow the last bucket plus half of the rest */
    double bound = last + 0.5 * (T - last) + 1e-6;
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            double idle = 0;
            for (size_t i = 0; i < t->n; i++) {
                const rl_trace_event *e = &t->ev[i];
                if (e->rank == r && e->stream == RL_STREAM_COMPUTE && e->cat == RL_CAT_IDLE &&
                    e->tags[RL_TAG_STEP] == s)
                    idle += e->vend - e->vstart;
            }
            ck_assert_msg(idle <= bound,
                          "rank %d, step %d: the compute stream waited %.1f us for communication (exposed comm); "
                          "the bound is %.1f us = the last bucket's all-reduce (%.1f us, alpha-beta) + half of the "
                          "other %d buckets' %.1f us. All-reduces launched during backward with RL_ASYNC hide behind "
                          "the remaining backward; waiting inside the hook or launching after backward does not",
                          r, s, idle * 1e6, bound * 1e6, last * 1e6, c->nbuckets - 1, (T - last) * 1e6);
        }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

/* ------------------------------------------------------------------ 28.4 */

START_TEST(t_nosync_grads)
{
    grads_case(2, 2, 3, 1, "ddp_train_step with 3 micro-steps (2 ranks)", "2 ranks x 3 micro-steps");
}
END_TEST

START_TEST(t_nosync_one_collective_set)
{
    ddp_case *c = ddp_case_run(4, 2, 4, 1, NULL, "ddp_train_step with 4 micro-steps (4 ranks)");
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++)
            ck_assert_msg(c->calls[r][s] == c->nbuckets,
                          "rank %d, step %d: %lld all-reduce calls in 4 micro-steps with %d buckets; inside no_sync "
                          "backward only accumulates, so one set of %d bucket all-reduces per step", r, s,
                          (long long)c->calls[r][s], c->nbuckets, c->nbuckets);
    check_grads(c, "4 ranks x 4 micro-steps");
    ddp_case_free(c);
}
END_TEST

START_TEST(t_nosync_single_rank)
{
    grads_case(1, 1, 2, 1, "ddp_train_step with 2 micro-steps (1 rank)", "1 rank x 2 micro-steps");
}
END_TEST

/* ================================================================== 28.5 α-β and the sweep */

static void check_ab(int tree)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int nprof;
    const rl_hw *hw = rl_hw_profiles(&nprof);
    int ns[] = { 1, 2, 3, 4, 8, 16, 64, 1024 };
    double sizes[] = { 0, 1, 4e6, 25.0 * 1048576, 14e9 };
    for (int p = 0; p < nprof; p++)
        for (int li = 0; li < 2; li++) {
            const rl_link *l = li ? &hw[p].inter : &hw[p].intra;
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                    double got = -1, want = tree ? rl_ab_tree_all_reduce(ns[i], sizes[k], l->alpha, l->bw)
                                                 : rl_ab_ring_all_reduce(ns[i], sizes[k], l->alpha, l->bw);
                    rl_clear_error(ctx);
                    int rc = tree ? ddp_ab_tree_all_reduce(ctx, ns[i], sizes[k], l, &got)
                                  : ddp_ab_ring_all_reduce(ctx, ns[i], sizes[k], l, &got);
                    if (rc)
                        ck_abort_msg("ddp_ab_%s_all_reduce(n=%d, %.0f bytes, %s) returned %d (%s): %s",
                                     tree ? "tree" : "ring", ns[i], sizes[k], l->name, rc, rl_status_name(rc),
                                     rl_last_error(ctx));
                    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want) + 1e-15,
                                  "%s all-reduce, n=%d, S=%.0f bytes on %s (alpha %g s, %g B/s): got %.6g s, the "
                                  "cost model says %.6g s", tree ? "tree" : "ring", ns[i], sizes[k], l->name, l->alpha,
                                  l->bw, got, want);
                }
        }
    double x = 0;
    int rc = tree ? ddp_ab_tree_all_reduce(ctx, 0, 100, &hw[0].intra, &x)
                  : ddp_ab_ring_all_reduce(ctx, 0, 100, &hw[0].intra, &x);
    ck_assert_msg(rc == RL_ERR_ARG, "n = 0 must be refused with RL_ERR_ARG (got %d)", rc);
    rc = tree ? ddp_ab_tree_all_reduce(ctx, 4, -1, &hw[0].intra, &x) : ddp_ab_ring_all_reduce(ctx, 4, -1, &hw[0].intra, &x);
    ck_assert_msg(rc == RL_ERR_ARG, "bytes = -1 must be refused with RL_ERR_ARG (got %d)", rc);
    rl_ctx_free_standalone(ctx);
}

START_TEST(t_ab_ring) { check_ab(0); }
END_TEST

START_TEST(t_ab_tree) { check_ab(1); }
END_TEST

/* A cheap base configuration for sweeps. */
static ddp_sweep_config small_sweep(void)
{
    ddp_sweep_config sc = ddp_sweep_config_default();
    sc.base.model.hidden = 64;
    sc.base.model.layers = 2;
    sc.base.micro_batch = 4;
    sc.base.steps = 2;
    sc.base.bucket_cap_mb = 0.05;
    sc.base.first_bucket_mb = 0.02;
    sc.base.opts.quiet = 1;
    sc.base.opts.ranks = 4;
    sc.base.opts.timeout_s = 4.0 * rl_grade_time_scale();
    double caps[] = { 0.02, 0.1, 25 };
    sc.ncaps = 3;
    memcpy(sc.caps_mb, caps, sizeof caps);
    sc.max_ranks = rl_grade_quick() ? 4 : 8;
    sc.straggler_rank = 2;
    sc.straggler_ms = 0.5;
    return sc;
}

static void run_sweep(const ddp_sweep_config *sc, ddp_sweep_table *t)
{
    int rc = ddp_scaling_sweep(sc, t);
    ck_assert_msg(rc == 0, "ddp_scaling_sweep returned %d (%s); see the output below", rc, rl_status_name(rc));
    int want = sc->ncaps + sc->max_ranks + (sc->straggler_ms > 0);
    ck_assert_msg(t->nrows == want, "the sweep made %d rows; expected %d (%d caps + worlds 1..%d + 1 straggler)",
                  t->nrows, want, sc->ncaps, sc->max_ranks);
}

START_TEST(t_sweep_table)
{
    ddp_sweep_config sc = small_sweep();
    ddp_sweep_table *t = calloc(1, sizeof *t);
    run_sweep(&sc, t);
    const rl_hw *hw = rl_hw_default();
    for (int i = 0; i < t->nrows; i++) {
        const ddp_sweep_row *row = &t->rows[i];
        int is_cap = i < sc.ncaps, is_world = !is_cap && i < sc.ncaps + sc.max_ranks;
        int n = is_world ? i - sc.ncaps + 1 : sc.base.opts.ranks;
        double cap = is_cap ? sc.caps_mb[i] : sc.base.bucket_cap_mb;
        ck_assert_msg(row->ranks == n && row->bucket_cap_mb == cap && (row->straggler_ms > 0) == (!is_cap && !is_world),
                      "row %d ('%s'): ranks %d, cap %g MiB, straggler %g ms; expected ranks %d, cap %g MiB%s", i,
                      row->label, row->ranks, row->bucket_cap_mb, row->straggler_ms, n, cap,
                      (!is_cap && !is_world) ? " and the straggler" : ", no straggler");
        ck_assert_msg(row->label[0], "row %d has no label", i);
        ck_assert_msg(row->stats.step_time > 0 && row->stats.ranks == n,
                      "row %d ('%s'): no measurements (step time %g s, %d ranks); run it with ddp_run", i, row->label,
                      row->stats.step_time, row->stats.ranks);
        double pred = 0;
        for (int b = 0; b < row->stats.nbuckets && b < 64; b++)
            pred += rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n, (double)row->stats.bucket_bytes[b], &hw->intra);
        ck_assert_msg(fabs(row->predicted_comm - pred) <= 1e-9 * pred + 1e-15,
                      "row %d ('%s'): predicted_comm %.6g s; the ring formula over its %d buckets gives %.6g s", i,
                      row->label, row->predicted_comm, row->stats.nbuckets, pred);
        if (is_world) {
            double eff = t->rows[sc.ncaps].stats.step_time / row->stats.step_time;
            ck_assert_msg(fabs(row->efficiency - eff) <= 1e-9 * eff && fabs(row->speedup - n * eff) <= 1e-9 * n * eff,
                          "row %d ('%s'): efficiency %.6g and speedup %.6g; with t(1) = %.6g s and t(%d) = %.6g s "
                          "they are t(1)/t(n) = %.6g and n x that = %.6g", i, row->label, row->efficiency,
                          row->speedup, t->rows[sc.ncaps].stats.step_time, n, row->stats.step_time, eff, n * eff);
        }
    }
    /* the sweep ran what it says: re-run two rows and compare (the timeline is deterministic) */
    int pick[2] = { 0, sc.ncaps + 2 };
    for (int k = 0; k < 2; k++) {
        const ddp_sweep_row *row = &t->rows[pick[k]];
        ddp_run_config rc = sc.base;
        rc.opts.ranks = row->ranks;
        rc.bucket_cap_mb = row->bucket_cap_mb;
        ddp_run_stats s;
        ck_assert(ddp_run(&rc, &s) == 0);
        ck_assert_msg(fabs(s.step_time - row->stats.step_time) <= 1e-12 && s.nbuckets == row->stats.nbuckets,
                      "row '%s': step time %.6g s with %d buckets, but running that configuration gives %.6g s with "
                      "%d buckets", row->label, row->stats.step_time, row->stats.nbuckets, s.step_time, s.nbuckets);
    }
    ddp_sweep_print(t, stdout);
    free(t);
}
END_TEST

START_TEST(t_sweep_straggler)
{
    ddp_sweep_config sc = small_sweep();
    sc.ncaps = 0;
    sc.max_ranks = 1;
    ddp_sweep_table *t = calloc(1, sizeof *t);
    run_sweep(&sc, t);
    const ddp_sweep_row *row = &t->rows[t->nrows - 1];
    ddp_run_stats base;
    ck_assert(ddp_run(&sc.base, &base) == 0);
    double x = sc.straggler_ms * 1e-3;
    ck_assert_msg(row->ranks == sc.base.opts.ranks && row->straggler_ms == sc.straggler_ms,
                  "the straggler row has %d ranks and %g ms; expected %d ranks, %g ms", row->ranks, row->straggler_ms,
                  sc.base.opts.ranks, sc.straggler_ms);
    for (int r = 0; r < row->ranks; r++) {
        ck_assert_msg(row->stats.rank_step[r] >= base.rank_step[r] + 0.9 * x,
                      "straggler rank %d +%g ms: rank %d's step took %.1f us, without the straggler %.1f us; every "
                      "rank should wait for the slow one in the next all-reduce", sc.straggler_rank, sc.straggler_ms,
                      r, row->stats.rank_step[r] * 1e6, base.rank_step[r] * 1e6);
        if (r != sc.straggler_rank)
            ck_assert_msg(row->stats.rank_wait[r] >= base.rank_wait[r] + 0.9 * x,
                          "rank %d waited %.1f us on comm (without the straggler %.1f us); expected about %g ms more",
                          r, row->stats.rank_wait[r] * 1e6, base.rank_wait[r] * 1e6, sc.straggler_ms);
    }
    free(t);
}
END_TEST

/* ------------------------------------------------------------------ answers file */

/* H1: N = 4, Ψ = 4 MB: bytes per GPU in reduce-scatter and in the whole all-reduce (MB). */
START_TEST(t_ans_traffic)
{
    CHECK_NUM("h1_reduce_scatter_mb", rl_ring_bytes_per_rank(RL_COLL_REDUCE_SCATTER, 4, 4e6) / 1e6, 0.01);
    CHECK_NUM("h1_total_mb", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, 4, 4e6) / 1e6, 0.01);
}
END_TEST

/* H2: latency steps of ring and tree all-reduce at 1024 GPUs. */
START_TEST(t_ans_latency)
{
    rl_calc_coll_in in = { RL_COLL_ALL_REDUCE, RL_ALGO_RING, 1024, 1e6, rl_hw_find("h100-2node-ib"), NULL };
    rl_calc_coll_out ring, tree;
    ck_assert(rl_calc_coll(&in, &ring, NULL, 0) == 0);
    in.algo = RL_ALGO_TREE;
    ck_assert(rl_calc_coll(&in, &tree, NULL, 0) == 0);
    CHECK_NUM("h2_ring_steps", ring.latency_steps, 0.001);
    CHECK_NUM("h2_tree_steps", tree.latency_steps, 0.001);
}
END_TEST

/* H3: a 7B model's 14 GB of gradients: GB each GPU sends per step at 8 and 1024 GPUs. */
START_TEST(t_ans_7b)
{
    CHECK_NUM("h3_gb_8", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, 8, 14e9) / 1e9, 0.01);
    CHECK_NUM("h3_gb_1024", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, 1024, 14e9) / 1e9, 0.005);
}
END_TEST

/* H4: scaling efficiency of a 260x speed-up on 512 GPUs; H5: a straggler's cost. */
START_TEST(t_ans_efficiency)
{
    double speedup = 260, gpus = 512;
    CHECK_NUM("h4_efficiency_pct", 100.0 * speedup / gpus, 0.01);
    double fast_ms = 20, slow_ms = 80;
    CHECK_NUM("h5_wait_ms", slow_ms - fast_ms, 0.01);
}
END_TEST

/* H6: α-β time of one 25 MiB bucket on 8 GPUs of two profiles (µs). */
START_TEST(t_ans_bucket_time)
{
    double S = 25.0 * DDP_MIB;
    CHECK_NUM("h6_h100_us", 1e6 * rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, 8, S, &rl_hw_find("h100-nvlink")->intra),
              0.02);
    CHECK_NUM("h6_a100pcie_us", 1e6 * rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, 8, S, &rl_hw_find("a100-pcie")->intra),
              0.02);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_CHOICE("i1_reverse_order", 'b');
    CHECK_CHOICE("i2_tied_weights", 'c');
    CHECK_CHOICE("i3_step_spikes", 'd');
}
END_TEST

/* ================================================================== the table */

static const rl_grade_step steps28[] = {
    { "28.1", "ring all-reduce" },
    { "28.2", "bucket assignment" },
    { "28.3", "overlapped DDP" },
    { "28.4", "no_sync accumulation" },
    { "28.5", "alpha-beta and scaling" },
};

static const rl_grade_test tests28[] = {
    { "28.1", "world sizes 1-8, repeated calls", 6, 20, &t_ring_world_sizes },
    { "28.1", "odd counts (not divisible by n)", 5, 20, &t_ring_odd_counts },
    { "28.1", "count < n and count 0", 4, 20, &t_ring_tiny_counts },
    { "28.1", "bf16 buffers", 2, 20, &t_ring_bf16 },
    { "28.1", "sub-communicator", 4, 20, &t_ring_subcomm },
    { "28.1", "bytes sent = 2(n-1)/n x S, send/recv only", 7, 20, &t_ring_bytes },
    { "28.2", "the lab's MLP (25 MiB, 4 MiB, 1 MiB caps)", 5, 20, &t_buckets_lab_model },
    { "28.2", "reverse registration order", 4, 10, &t_buckets_reverse_order },
    { "28.2", "a bucket closes when it reaches its cap", 4, 10, &t_buckets_cap_boundary },
    { "28.2", "huge and tiny parameters", 3, 10, &t_buckets_huge_tiny },
    { "28.2", "cap smaller than one parameter", 3, 10, &t_buckets_small_cap },
    { "28.2", "tied parameter counted once", 3, 10, &t_buckets_tied },
    { "28.2", "empty model, bad caps refused", 3, 10, &t_buckets_empty_and_bad },
    { "28.3", "gradients = one-rank global-batch gradients", 8, 40, &t_ddp_grads },
    { "28.3", "3 ranks and 1 rank, small MLP", 3, 30, &t_ddp_grads_odd },
    { "28.3", "one all-reduce per bucket, in bucket order", 6, 40, &t_ddp_bucket_order },
    { "28.3", "first bucket's all-reduce starts before backward ends", 6, 40, &t_ddp_overlap_starts_early },
    { "28.3", "exposed comm below the bound", 6, 40, &t_ddp_exposed_comm },
    { "28.4", "3 micro-steps = one rank's 3x batch", 6, 30, &t_nosync_grads },
    { "28.4", "one collective set per 4 micro-steps", 6, 30, &t_nosync_one_collective_set },
    { "28.4", "one rank, 2 micro-steps", 2, 30, &t_nosync_single_rank },
    { "28.5", "ring alpha-beta time = cost model", 4, 10, &t_ab_ring },
    { "28.5", "tree alpha-beta time = cost model", 3, 10, &t_ab_tree },
    { "28.5", "the sweep produces a table", 6, 60, &t_sweep_table },
    { "28.5", "a straggler makes everyone wait", 3, 40, &t_sweep_straggler },
    { "28.5", "answers: ring traffic per GPU (N=4, 4 MB)", 2, 10, &t_ans_traffic },
    { "28.5", "answers: ring vs tree latency steps at 1024 GPUs", 2, 10, &t_ans_latency },
    { "28.5", "answers: 7B gradients at 8 and 1024 GPUs", 2, 10, &t_ans_7b },
    { "28.5", "answers: scaling efficiency, straggler wait", 2, 10, &t_ans_efficiency },
    { "28.5", "answers: a 25 MiB bucket on NVLink and PCIe", 2, 10, &t_ans_bucket_time },
    { "28.5", "answers: interview questions", 3, 10, &t_ans_interview },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "28", "DDP: data parallelism and bucket overlap", "labs/28_ddp/README.md", "labs/28_ddp/answers.txt",
        steps28, (int)(sizeof steps28 / sizeof steps28[0]), tests28, (int)(sizeof tests28 / sizeof tests28[0]),
    };
    return rl_grade_main(&lab, argc, argv);
}
