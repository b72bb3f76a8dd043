/* grade30.c — the grader of Lab 30 (model parallelism: TP, SP, PP, CP). One Check test per
 * graded behaviour, grouped by step (30.1–30.5), run by grade.c.
 *
 * Every test draws its cases from rl_grade_rng (world sizes that are not powers of two,
 * shapes, schedules with m < p and m = p−1, p = 1 ...) and prints them on one line. Learner
 * code runs on simulated ranks; every result is compared with a dense one-rank computation
 * the grader builds from common/ ops on its own thread (never from the solution file). How
 * data moves — which collectives, their sizes, the ring's peers — is read from the run's
 * trace (the runtime's record). Schedules are checked with rl_pp_validate and against the
 * runtime's generators (rl_pp_schedule_new); the executor runs the runtime's schedules;
 * bubbles are measured from the trace (rl_pp_bubble_from_trace) and compared with
 * rl_calc_bubble; hand derivations with calc.h.
 *
 * Every run of code under test goes through rl_grade_run: in the child it records what the
 * checks read — the outputs, the tensors the code left (description and values), memory
 * figures, statuses and messages, schedules, the trace and the watchdog's flight dump — and
 * the references, the comparisons and the messages are the judge's, from that record (its
 * texts ended, its counts in range). */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "calc.h"
#include "diagnose.h"
#include "grade.h"
#include "mp.h"

#define TOL 1e-4   /* relative, f32 results of a few hundred terms */
#define MAXP 10    /* problems listed per topic (the count of the rest follows) */
#define MAXW MP_MAX_RANKS

/* ================================================================== messages */


/* What a run found, by topic; each test fails on the topics it grades. The problems are
 * found after each run, from its record (tests run forked: one test's problems per process). */
enum { T_RUN, T_SHARD, T_FWD, T_BWD, T_MEM, T_COMM, T_WORK, NTOPIC };
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* the ranks of a run, writing its log */
static rl_grade_text g_prob[NTOPIC];
static int g_nprob[NTOPIC];
static char g_case[512]; /* the case being run, prefixed to every problem */

/* Records a problem under a topic (the first MAXP are kept, the rest counted). */
static void problem(int topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(int topic, const char *fmt, ...)
{
    if (++g_nprob[topic] <= MAXP) {
        rl_grade_text_add(&g_prob[topic], "\n  - [%s] ", g_case);
        va_list ap;
        va_start(ap, fmt);
        rl_grade_text_vadd(&g_prob[topic], fmt, ap);
        va_end(ap);
    }
}

/* Fails the test when the topic has problems: the heading, then each problem. */
static void expect_none(int topic, const char *heading)
{
    if (!g_nprob[topic])
        return;
    char more[64] = "";
    if (g_nprob[topic] > MAXP)
        snprintf(more, sizeof more, "\n  (and %d more)", g_nprob[topic] - MAXP);
    ck_abort_msg("%s%s%s", heading, rl_grade_text_str(&g_prob[topic]), more);
}

/* 1 when the message names the number v as a whole token ("t = 4", "(4)", "4." but not
 * "48", "4h" or "0.4"). */
static int names_number(const char *msg, long long v)
{
    char want[32];
    snprintf(want, sizeof want, "%lld", v);
    size_t n = strlen(want);
    for (const char *p = msg; (p = strstr(p, want)); p++) {
        int before = p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '_');
        char a = p[n];
        int after = isalnum((unsigned char)a) || a == '_' || (a == '.' && isdigit((unsigned char)p[n + 1]));
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* ================================================================== runs, tensors, traces */

static rl_opts gopts(int ranks)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = ranks;
    o.quiet = 1;
    o.timeout_s = 3.0 * rl_grade_time_scale();
    return o;
}

/* An error a rank of a run reported: a status the learner's code returned, or the grader's
 * split into groups that failed. */
typedef struct run_err {
    int split;                 /* 1: the grader's rl_comm_split failed */
    int rc;
    char who[64];              /* "rank 2", "rank 1 of group 0 (world rank 3)", "world rank 3" */
    char what[80];             /* the call */
    char msg[1024];            /* rl_last_error after it */
} run_err;

#define MAXERR (2 * MAXW)

/* What every run of ranks leaves first in the child's record. */
typedef struct run_head {
    int rc;                    /* rl_launch's status */
    int nerr;
    run_err err[MAXERR];       /* the first MAXERR errors, in the order the ranks reported them */
    char name[MAXW][32];       /* per world rank: its group communicator's name */
    rl_grade_blob trace;
} run_head;

/* In a run: keeps an error a rank reported in the run's log, and notes it for a crash that
 * may follow (an abort after an earlier error leaves that error's note). */
static void log_err(rl_ctx *ctx, run_head *h, int split, int rc, const char *who, const char *what)
{
    const char *m = rl_last_error(ctx);
    pthread_mutex_lock(&g_mu);
    int earlier = h->nerr > 0;
    if (h->nerr >= 0 && h->nerr < MAXERR) {
        run_err *e = &h->err[h->nerr];
        e->split = split, e->rc = rc;
        snprintf(e->who, sizeof e->who, "%s", who);
        snprintf(e->what, sizeof e->what, "%s", what);
        snprintf(e->msg, sizeof e->msg, "%s", m);
        h->nerr++;
    }
    pthread_mutex_unlock(&g_mu);
    if (!split && !(rc == RL_ERR_ABORTED && earlier))
        rl_grade_note("%s: %s returned %d (%s): %s", who, what, rc, rl_status_name(rc), m[0] ? m : "(no message)");
}

/* In a run: keeps a status the learner's code returned (with its message) in the run's log;
 * returns rc. */
static int lerr(rl_ctx *ctx, run_head *h, const char *who, int rc, const char *what)
{
    if (rc)
        log_err(ctx, h, 0, rc, who, what);
    return rc;
}

/* The problems of a run, from its log: each status the learner's code returned (an abort that
 * follows an earlier error, and what another rank already reported in this case, are not
 * repeated), a failed split, and a failed run (a deadlock the watchdog ended ...). */
static void run_problems(const run_head *h, int ranks)
{
    static rl_grade_text last; /* case, call, status and message of the last one recorded */
    for (int i = 0; i < h->nerr; i++) {
        const run_err *e = &h->err[i];
        if (e->split) {
            problem(T_RUN, "%s: grader: rl_comm_split failed: %s", e->who, e->msg);
            continue;
        }
        rl_grade_text key = { 0 };
        rl_grade_text_add(&key, "%s|%s|%d|%s", g_case, e->what, e->rc, e->msg);
        if ((e->rc == RL_ERR_ABORTED && g_nprob[T_RUN] > 0) ||
            !strcmp(rl_grade_text_str(&key), rl_grade_text_str(&last))) {
            rl_grade_text_free(&key);
            continue;
        }
        rl_grade_text_free(&last);
        last = key;
        problem(T_RUN, "%s: %s returned %d (%s)%s%s", e->who, e->what, e->rc, rl_status_name(e->rc),
                e->msg[0] ? ": " : " with no message", e->msg);
    }
    if (h->rc)
        problem(T_RUN, "the run on %d ranks failed: %s%s", ranks, rl_status_name(h->rc),
                h->rc == RL_ERR_HANG ? " — the watchdog found a call that never completed (a deadlock; its report and "
                                       "verdict are above)" : "");
}

/* ================================================================== groups (sub-communicators) */

/* The heading's advice when a run on two groups fails. */
#define GROUP_NOTE                                                                                           \
    " (each group's code is handed its own communicator: a call on the world, or t and ranks read from the " \
    "world, reaches the other group's ranks)"

/* How a run's world is cut into the groups the code under test runs on: one group is the
 * world itself; two groups of n ranks each have members drawn at random, so a group's ranks
 * are not the world's ranks 0..n-1 in order and a call on the world (or a peer named by its
 * group rank on the world) reaches the wrong ranks. Each group has its own data. */
typedef struct job {
    int n, ng;                  /* ranks per group, groups (1 or 2) */
    int color[MAXW], key[MAXW]; /* per world rank: its group and its rank there */
    int member[2][MAXW];        /* per group: the world rank of each group rank */
    char name[MAXW][32];        /* per world rank: its group communicator's name (from the run's record) */
    void *c[2];                 /* the case of each group */
} job;

/* A job of ng groups of n ranks (members drawn from g when ng = 2) over the cases c0, c1. */
static void job_make(job *J, int n, int ng, rl_rng *g, void *c0, void *c1)
{
    memset(J, 0, sizeof *J);
    J->n = n, J->ng = ng, J->c[0] = c0, J->c[1] = ng > 1 ? c1 : c0;
    int perm[MAXW];
    for (int i = 0; i < n * ng; i++)
        perm[i] = i;
    if (ng > 1)
        rl_grade_shuffle(g, perm, n * ng);
    for (int k = 0; k < ng; k++)
        for (int i = 0; i < n; i++) {
            int w = perm[k * n + i];
            J->member[k][i] = w, J->color[w] = k, J->key[w] = i;
        }
}

/* "groups {0,3,1} and {2,5,4} (world ranks)" — or nothing for one group. */
static void job_text(const job *J, rl_grade_text *b)
{
    if (J->ng < 2)
        return;
    rl_grade_text_add(b, "two groups of %d of a world of %d: world ranks {", J->n, J->n * J->ng);
    for (int k = 0; k < J->ng; k++)
        for (int i = 0; i < J->n; i++)
            rl_grade_text_add(b, "%d%s", J->member[k][i], i + 1 < J->n ? "," : k + 1 < J->ng ? "} and {" : "}");
}

/* The label of world rank wr in messages: "rank 2", or "rank 2 of group 1 (world rank 5)" (its
 * rank in the group's communicator, which orders the group by key). */
static void job_who(const job *J, int wr, char *who, size_t size)
{
    if (J->ng > 1)
        snprintf(who, size, "rank %d of group %d (world rank %d)", J->key[wr], J->color[wr], wr);
    else
        snprintf(who, size, "rank %d", wr);
}

/* A run of a job in the child: the job, the rank function, whether the trace is kept, and
 * where the results go (the record's output, which starts with a run_head). */
typedef struct job_go {
    const job *J;
    rl_rank_fn fn;
    int keep_trace;
    void *o;
} job_go;

static void job_produce(void *out, void *arg)
{
    job_go *G = arg;
    run_head *h = out;
    G->o = out;
    rl_opts o = gopts(G->J->n * G->J->ng);
    rl_trace *t = NULL;
    h->rc = rl_launch(&o, G->fn, G, G->keep_trace ? &t : NULL);
    h->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Runs fn on the job's ranks in the child and returns a copy of what the run recorded (size
 * bytes, a struct that starts with a run_head; the caller frees it), its run_head's texts ended
 * and its count in range. The run's errors become problems, the group communicators' names go
 * to J, and *tr gets the run's trace when tr is not NULL. */
static void *job_run(const char *label, job *J, rl_rank_fn fn, size_t size, rl_trace **tr)
{
    job_go G = { J, fn, tr != NULL, NULL };
    const void *rec = rl_grade_run(label, size, job_produce, &G);
    run_head *h = malloc(size);
    ck_assert(h != NULL);
    memcpy(h, rec, size);
    h->nerr = h->nerr < 0 ? 0 : h->nerr > MAXERR ? MAXERR : h->nerr;
    for (int i = 0; i < MAXERR; i++) {
        run_err *e = &h->err[i];
        e->who[sizeof e->who - 1] = e->what[sizeof e->what - 1] = e->msg[sizeof e->msg - 1] = 0;
    }
    for (int r = 0; r < MAXW; r++) {
        h->name[r][sizeof h->name[r] - 1] = 0;
        memcpy(J->name[r], h->name[r], sizeof J->name[r]);
    }
    run_problems(h, J->n * J->ng);
    if (tr)
        *tr = rl_grade_trace(h->trace);
    return h;
}

/* In a run: this rank's group communicator (the world for one group; NULL when the split
 * failed), its case in *cs and a label for messages in who ("rank 2", or "rank 2 of group 1
 * (world rank 5)"); the communicator's name goes to the record. */
static rl_comm *job_comm(rl_ctx *ctx, job_go *G, void **cs, char *who, size_t size)
{
    const job *J = G->J;
    run_head *h = G->o;
    rl_comm *w = rl_comm_world(ctx), *c = w;
    int wr = rl_rank(ctx);
    if (J->ng > 1)
        c = rl_comm_split(w, J->color[wr], J->key[wr]);
    *cs = J->c[J->ng > 1 ? J->color[wr] : 0];
    if (!c) {
        snprintf(who, size, "world rank %d", wr);
        log_err(ctx, h, 1, RL_ERR_ARG, who, "rl_comm_split");
        return NULL;
    }
    snprintf(h->name[wr], sizeof h->name[wr], "%s", rl_comm_name(c));
    if (J->ng > 1)
        snprintf(who, size, "rank %d of group %d (world rank %d)", rl_comm_rank(c), J->color[wr], wr);
    else
        snprintf(who, size, "rank %d", wr);
    return c;
}

/* Releases a group communicator of job_comm (not the world). */
static void job_comm_free(rl_ctx *ctx, rl_comm *c)
{
    if (c && c != rl_comm_world(ctx))
        rl_comm_free(c);
}

/* Every comm and p2p event of steps lo..hi in the trace ran on its rank's group
 * communicator, and every send/recv had a peer of the same group (handout sentence `rule`). */
static void expect_on_group(const rl_trace *tr, const job *J, int lo, int hi, const char *rule)
{
    int nw = J->n * J->ng;
    for (int r = 0; r < nw; r++) {
        int shown = 0;
        for (size_t i = 0; tr && i < tr->n && shown < 2; i++) {
            const rl_trace_event *e = &tr->ev[i];
            int st = e->tags[RL_TAG_STEP];
            if (e->rank != r || (e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P) || st < lo || st > hi)
                continue;
            int peer_ok = e->peer < 0 || (e->peer < nw && J->color[e->peer] == J->color[r]);
            if (!strcmp(e->comm, J->name[r]) && peer_ok)
                continue;
            shown++;
            if (strcmp(e->comm, J->name[r]))
                problem(T_COMM, "world rank %d (rank %d of group %d): its %s of %.0f B ran on communicator '%s'; expected "
                        "the group's own '%s', the communicator passed in (%s)", r, J->key[r], J->color[r], e->name,
                        e->bytes, e->comm[0] ? e->comm : "(none)", J->name[r], rule);
            else
                problem(T_COMM, "world rank %d (rank %d of group %d): its %s of %.0f B %s world rank %d, which is in the "
                        "other group (%s)", r, J->key[r], J->color[r], e->name, e->bytes,
                        strcmp(e->name, "send") ? "came from" : "went to", e->peer, rule);
        }
    }
}


/* ================================================================== tensors: in a run, in the record */

/* A new f32 tensor (RL_MEM_OTHER), filled from src when given. */
static rl_tensor *tnew(rl_ctx *ctx, const char *name, int nd, const int64_t *shape, const char *dims, const float *src)
{
    rl_tensor *t = rl_tensor_new(ctx, name, RL_F32, RL_MEM_OTHER, nd, shape, dims);
    if (t && src)
        rl_tensor_from_f32(t, src, t->numel);
    return t;
}

#define SNAP_MAXV ((int64_t)1 << 24) /* the most values of one tensor a run keeps */

/* A tensor as a run left it, in the record: its description and, when kept, its values. */
typedef struct tsnap {
    int present;               /* 0: the pointer was NULL */
    int dtype, cat, ndim;
    int64_t shape[RL_MAX_DIMS], numel, bytes;
    char dims[RL_MAX_DIMS][RL_DIM_NAME];
    rl_grade_blob v;           /* its numel values as floats, when kept */
} tsnap;

/* In a run: t's description, and its values when vals (at most SNAP_MAXV of them). */
static tsnap snap(const rl_tensor *t, int vals)
{
    tsnap s;
    memset(&s, 0, sizeof s);
    if (!t)
        return s;
    s.present = 1;
    s.dtype = t->dtype, s.cat = t->cat, s.ndim = t->ndim;
    memcpy(s.shape, t->shape, sizeof s.shape);
    memcpy(s.dims, t->dims, sizeof s.dims);
    s.numel = t->numel;
    s.bytes = rl_tensor_bytes(t);
    if (vals && t->numel > 0 && t->numel <= SNAP_MAXV) {
        float *f = malloc((size_t)t->numel * sizeof *f);
        if (!f)
            ck_abort_msg("grader: out of memory");
        for (int64_t i = 0; f && i < t->numel; i++)
            f[i] = rl_tensor_get(t, i);
        s.v = rl_grade_keep(f, (size_t)t->numel * sizeof *f);
        free(f);
    }
    return s;
}

/* In a run: the values of one of the grader's tensors (its numel floats) kept in the record. */
static rl_grade_blob keep_vals(const rl_tensor *t)
{
    tsnap s = snap(t, 1);
    return s.v;
}

/* A tensor from the record, to read: its description (texts ended) and its values. */
typedef struct tview {
    rl_dtype dtype;
    rl_mem_cat cat;
    int ndim;
    int64_t shape[RL_MAX_DIMS], numel, bytes;
    char dims[RL_MAX_DIMS][RL_DIM_NAME];
    const float *v;            /* numel values, when the run kept them (else NULL) */
} tview;

/* The tensor recorded in s as *t (NULL when the pointer was NULL); vals: the run kept its
 * values. A count that does not match the shape is a malformed record (the view then has no
 * shape, so it matches none and its values are never read). */
static const tview *view(tview *t, const tsnap *s, int vals)
{
    if (!s->present)
        return NULL;
    memset(t, 0, sizeof *t);
    t->dtype = (rl_dtype)s->dtype, t->cat = (rl_mem_cat)s->cat, t->ndim = s->ndim;
    memcpy(t->shape, s->shape, sizeof t->shape);
    memcpy(t->dims, s->dims, sizeof t->dims);
    for (int i = 0; i < RL_MAX_DIMS; i++)
        t->dims[i][RL_DIM_NAME - 1] = 0;
    t->numel = s->numel, t->bytes = s->bytes;
    int64_t n = 1;
    int ok = t->ndim >= 0 && t->ndim <= RL_MAX_DIMS;
    for (int i = 0; ok && i < t->ndim; i++)
        ok = t->shape[i] >= 0 && !__builtin_mul_overflow(n, t->shape[i], &n);
    if (!ok || n != t->numel) {
        ck_abort_msg("the test's record is malformed (a tensor whose element count does not match its shape): the "
                     "code under test overwrote it");
        t->ndim = -1, t->numel = -1;
        return t;
    }
    if (vals && t->numel <= SNAP_MAXV)
        t->v = rl_grade_blob_get(s->v, sizeof(float), (size_t)t->numel);
    return t;
}

/* The n values of one of the grader's tensors from the record. */
static const float *vals_of(rl_grade_blob b, int64_t n)
{
    return rl_grade_blob_get(b, sizeof(float), (size_t)n);
}

/* What a rank's memory account held at `now` beyond `before`, per category (comm buffers of
 * the runtime aside), as text in out; 0 when nothing. */
static int mem_left(const int64_t *now, const int64_t *before, rl_grade_text *out)
{
    for (int k = 0; k < RL_MEM_NCAT; k++)
        if (k != RL_MEM_COMM && now[k] != before[k])
            rl_grade_text_add(out, "%s%s %+lld B", out->len ? ", " : "", rl_mem_cat_name((rl_mem_cat)k),
                   (long long)(now[k] - before[k]));
    return out->len > 0;
}

/* max |a−ref| / max(|ref|, floor) over n elements; INFINITY for a NaN. */
static double rel_to(const float *a, const float *ref, int64_t n, double floor)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], d = fabs(x - ref[i]) / fmax(fabs(ref[i]), floor);
        if (!(d <= worst))
            worst = d == d ? d : INFINITY;
    }
    return worst;
}

/* 1 when a − ref is the same nonzero value everywhere (what an output that was accumulated into
 * instead of overwritten shows), with that value in *shift. */
static int const_shift(const float *a, const float *ref, int64_t n, double *shift)
{
    if (n < 1)
        return 0;
    double d0 = a[0] - ref[0];
    for (int64_t i = 1; i < n; i++)
        if (!(fabs(a[i] - ref[i] - d0) <= 1e-3 * fmax(1.0, fabs(d0))))
            return 0;
    *shift = d0;
    return fabs(d0) > 1e-3;
}

/* Fills n floats uniformly in [-scale, scale]. */
static void fill(float *p, int64_t n, rl_rng *g, double scale)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((2.0 * rl_rng_uniform(g) - 1.0) * scale);
}

static float *fnew(int64_t n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(float)); }

/* "h,4h/t": a tensor's dim names joined by commas. */
static const char *dims_of(const tview *t, char *buf, size_t size)
{
    buf[0] = 0;
    for (int i = 0; t && i < t->ndim; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", t->dims[i][0] ? t->dims[i] : "(none)");
    return buf;
}

/* "[h=64,4h/t=64] (f32, param)": shape with dim names and memory category. */
static const char *tdesc(const tview *t, char *buf, size_t size)
{
    if (!t) {
        snprintf(buf, size, "(NULL)");
        return buf;
    }
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%s=%lld", i ? "," : "", t->dims[i][0] ? t->dims[i] : "?",
                              (long long)t->shape[i]);
    if (k < size)
        snprintf(buf + k, size - k, "] (%s, %s)", rl_dtype_name(t->dtype), rl_mem_cat_name(t->cat));
    return buf;
}

/* Checks one tensor's presence, dtype, shape, dim names and category; 1 when its shape is
 * right (its elements can be read). */
static int check_tensor(int topic, const char *who, const char *field, const tview *t, int nd, const int64_t *shape,
                        const char *dims, rl_mem_cat cat, const char *why)
{
    char got[200], d[80];
    if (!t) {
        problem(topic, "%s: %s is NULL; expected a tensor with dims \"%s\" (%s)", who, field, dims, why);
        return 0;
    }
    int ok = t->dtype == RL_F32 && t->ndim == nd;
    for (int i = 0; ok && i < nd; i++)
        ok = t->shape[i] == shape[i];
    char want[120] = "";
    for (int i = 0; i < nd; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (!ok) {
        problem(topic, "%s: %s is %s; expected f32 [%s] with dims \"%s\" (%s)", who, field,
                tdesc(t, got, sizeof got), want, dims, why);
        return 0;
    }
    if (strcmp(dims_of(t, d, sizeof d), dims))
        problem(topic, "%s: %s has dims \"%s\"; expected \"%s\" — the shapes view marks the sharded dims by "
                "these names (%s)", who, field, d, dims, why);
    if ((int)cat >= 0 && t->cat != cat)
        problem(T_MEM, "%s: %s is charged to %s; expected %s (%s)", who, field, rl_mem_cat_name(t->cat),
                rl_mem_cat_name(cat), why);
    return 1;
}

/* This rank's comm events (collectives and p2p) tagged with step `phase`, in order. */
static int comm_events(const rl_trace *tr, int rank, int phase, const rl_trace_event **ev, int max)
{
    int n = 0;
    for (size_t i = 0; tr && i < tr->n; i++) {
        const rl_trace_event *e = &tr->ev[i];
        if (e->rank == rank && (e->cat == RL_CAT_COMM || e->cat == RL_CAT_P2P) && e->tags[RL_TAG_STEP] == phase) {
            if (n < max)
                ev[n] = e;
            n++;
        }
    }
    return n;
}

/* "all_reduce of 1536 B, send of 96 B to rank 1" — or "none". */
static void events_text(rl_grade_text *b, const rl_trace_event *const *ev, int n, int max)
{
    if (!n)
        rl_grade_text_add(b, "none");
    for (int i = 0; i < n && i < max; i++) {
        rl_grade_text_add(b, "%s%s of %.0f B", i ? ", " : "", ev[i]->name, ev[i]->bytes);
        if (ev[i]->peer >= 0)
            rl_grade_text_add(b, " %s rank %d", strcmp(ev[i]->name, "send") ? "from" : "to", ev[i]->peer);
    }
    if (n > max)
        rl_grade_text_add(b, ", ... (%d in all)", n);
}

#define MAXEV 256

/* Checks that a phase of every rank issued exactly the collectives `want` (names, in order),
 * each of `bytes` bytes; t1_optional: with one rank, calling none is fine. */
static void expect_colls(const rl_trace *tr, int ranks, int phase, const char *phase_name, const char *const *want,
                         int nwant, double bytes, int t1_optional, const char *rule)
{
    const rl_trace_event *ev[MAXEV];
    for (int r = 0; r < ranks; r++) {
        int n = comm_events(tr, r, phase, ev, MAXEV), ok = n == nwant;
        for (int i = 0; ok && i < n; i++)
            ok = !strcmp(ev[i]->name, want[i]) && ev[i]->bytes == bytes;
        if (!ok && t1_optional && ranks == 1 && n == 0)
            ok = 1;
        if (ok)
            continue;
        rl_grade_text got = { 0 }, exp = { 0 };
        events_text(&got, ev, n, 12);
        for (int i = 0; i < nwant; i++)
            rl_grade_text_add(&exp, "%s%s of %.0f B", i ? ", " : "", want[i], bytes);
        problem(T_COMM, "rank %d, %s: the trace has %s; expected %s (%s)", r, phase_name, rl_grade_text_str(&got), rl_grade_text_str(&exp),
                rule);
        rl_grade_text_free(&got);
        rl_grade_text_free(&exp);
    }
}

/* ================================================================== dense references (grader side) */

/* The dense MLP Z = GeLU(X·A + a)·B + c and its gradients, on a standalone one-rank context. */
typedef struct mlp_ref {
    int64_t rows, h, f;
    float *A, *a, *B, *c;       /* weights */
    float *x, *dy;              /* data [rows, h] */
    float *y, *dx;              /* results [rows, h] */
    float *dA, *da, *dB, *dc;   /* gradients of one backward */
} mlp_ref;

static void mlp_ref_free(mlp_ref *d)
{
    float *ps[] = { d->A, d->a, d->B, d->c, d->x, d->dy, d->y, d->dx, d->dA, d->da, d->dB, d->dc };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        free(ps[i]);
    memset(d, 0, sizeof *d);
}

/* Runs the dense forward and backward of d (weights, x, dy set) into its y, dx and gradients. */
static int mlp_dense(rl_ctx *ctx, mlp_ref *d)
{
    int64_t rows = d->rows, h = d->h, f = d->f, sx[2] = { rows, h }, sf[2] = { rows, f }, s1[2] = { h, f },
            s2[2] = { f, h };
    rl_tensor *A = tnew(ctx, "A", 2, s1, "h,4h", d->A), *a = tnew(ctx, "a", 1, &f, "4h", d->a);
    rl_tensor *B = tnew(ctx, "B", 2, s2, "4h,h", d->B), *c = tnew(ctx, "c", 1, &h, "h", d->c);
    rl_tensor *x = tnew(ctx, "x", 2, sx, "rows,h", d->x), *dy = tnew(ctx, "dy", 2, sx, "rows,h", d->dy);
    rl_tensor *y = tnew(ctx, "y", 2, sx, "rows,h", NULL), *dx = tnew(ctx, "dx", 2, sx, "rows,h", NULL);
    rl_tensor *pre = tnew(ctx, "pre", 2, sf, "rows,4h", NULL), *act = tnew(ctx, "act", 2, sf, "rows,4h", NULL);
    rl_tensor *dact = tnew(ctx, "dact", 2, sf, "rows,4h", NULL), *dpre = tnew(ctx, "dpre", 2, sf, "rows,4h", NULL);
    rl_tensor *gA = tnew(ctx, "dA", 2, s1, "h,4h", NULL), *ga = tnew(ctx, "da", 1, &f, "4h", NULL);
    rl_tensor *gB = tnew(ctx, "dB", 2, s2, "4h,h", NULL), *gc = tnew(ctx, "dc", 1, &h, "h", NULL);
    int q = rl_matmul(ctx, x, 0, A, 0, pre, 0);
    q = q ? q : rl_bias_add(ctx, pre, a);
    q = q ? q : rl_gelu_forward(ctx, pre, act);
    q = q ? q : rl_matmul(ctx, act, 0, B, 0, y, 0);
    q = q ? q : rl_bias_add(ctx, y, c);
    q = q ? q : rl_bias_backward(ctx, dy, gc);
    q = q ? q : rl_matmul_backward(ctx, act, 0, B, 0, dy, dact, 0, gB, 1);
    q = q ? q : rl_gelu_backward(ctx, pre, dact, dpre);
    q = q ? q : rl_bias_backward(ctx, dpre, ga);
    q = q ? q : rl_matmul_backward(ctx, x, 0, A, 0, dpre, dx, 0, gA, 1);
    q = q ? q : rl_tensor_to_f32(y, d->y, rows * h) || rl_tensor_to_f32(dx, d->dx, rows * h) ||
                rl_tensor_to_f32(gA, d->dA, h * f) || rl_tensor_to_f32(ga, d->da, f) ||
                rl_tensor_to_f32(gB, d->dB, f * h) || rl_tensor_to_f32(gc, d->dc, h);
    rl_tensor *ts[] = { A, a, B, c, x, dy, y, dx, pre, act, dact, dpre, gA, ga, gB, gc };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    return q;
}

/* Random dense weights and data for an MLP of hidden size h over `rows` rows; its results zero. */
static void mlp_ref_fill(mlp_ref *d, int64_t rows, int64_t h, rl_rng *g)
{
    memset(d, 0, sizeof *d);
    d->rows = rows, d->h = h, d->f = 4 * h;
    int64_t f = d->f;
    d->A = fnew(h * f), d->a = fnew(f), d->B = fnew(f * h), d->c = fnew(h), d->x = fnew(rows * h),
    d->dy = fnew(rows * h);
    fill(d->A, h * f, g, 1.0 / sqrt((double)h));
    fill(d->a, f, g, 0.1);
    fill(d->B, f * h, g, 1.0 / sqrt((double)f));
    fill(d->c, h, g, 0.1);
    fill(d->x, rows * h, g, 1.0);
    fill(d->dy, rows * h, g, 1.0);
    d->y = fnew(rows * h), d->dx = fnew(rows * h), d->dA = fnew(h * f), d->da = fnew(f), d->dB = fnew(f * h),
    d->dc = fnew(h);
}

/* mlp_ref_fill, and in the judge the results (the child, where the code under test runs, must
 * find no reference in its memory). */
static void mlp_ref_make(mlp_ref *d, int64_t rows, int64_t h, rl_rng *g)
{
    mlp_ref_fill(d, rows, h, g);
    if (!rl_grade_judging())
        return;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int q = mlp_dense(ctx, d);
    rl_ctx_free_standalone(ctx);
    ck_assert_msg(q == 0, "grader: the dense MLP reference failed (%d)", q);
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* A hidden size in [lo, hi] with 4h divisible by t (ColumnParallelLinear's columns). */
static int64_t pick_h(rl_rng *g, int t, int lo, int hi)
{
    int q = t / gcd(t, 4), k0 = (lo + q - 1) / q, k1 = hi / q;
    return (int64_t)q * rl_grade_pick(g, k0 < 1 ? 1 : k0, k1 < k0 ? k0 : k1);
}

/* ================================================================== 30.1 TP MLP */

/* One TP MLP case: t ranks, x [b, s, h]. */
typedef struct tp_case {
    int t;
    int64_t b, s, h;
    mlp_ref d;                 /* rows = b·s */
} tp_case;

static void tp_case_make(tp_case *c, int t, int64_t b, int64_t s, int64_t h, rl_rng *g)
{
    c->t = t, c->b = b, c->s = s, c->h = h;
    mlp_ref_make(&c->d, b * s, h, g);
    snprintf(g_case, sizeof g_case, "t = %d, b = %lld, s = %lld, h = %lld, 4h/t = %lld", t, (long long)b,
             (long long)s, (long long)h, (long long)(4 * h / t));
}

/* Random TP cases: t in 2..8 (odd ones included), h with 4h divisible by t. */
static void tp_draw(rl_rng *g, int *t, int64_t *b, int64_t *s, int64_t *h)
{
    static const int ts[] = { 2, 3, 4, 5, 6, 7, 8, 3, 5, 6 };
    *t = ts[rl_grade_pick(g, 0, (int)(sizeof ts / sizeof ts[0]) - 1)];
    *b = rl_grade_pick(g, 1, 3);
    *s = rl_grade_pick(g, 3, 9);
    *h = pick_h(g, *t, 6, 40);
}

/* A tp_mlp as tp_mlp_init left it, in the record: its fields, its shards and gradients. */
typedef struct mlp_rec {
    int ctx_ok, tp_ok;         /* ctx and tp are this rank's context and the TP group passed in */
    int t, rank, sp;
    int64_t h, f;
    tsnap w1, b1, w2, b2, dw1, db1, dw2, db2; /* with their values */
} mlp_rec;

/* In a run: m's fields and tensors (ctx, tp: the rank's context and the group passed in). */
static void mlp_keep(mlp_rec *o, const tp_mlp *m, const rl_ctx *ctx, const rl_comm *tp)
{
    o->ctx_ok = m->ctx == ctx, o->tp_ok = m->tp == tp;
    o->t = m->t, o->rank = m->rank, o->sp = m->sequence_parallel, o->h = m->h, o->f = m->f;
    o->w1 = snap(m->w1, 1), o->b1 = snap(m->b1, 1), o->w2 = snap(m->w2, 1), o->b2 = snap(m->b2, 1);
    o->dw1 = snap(m->dw1, 1), o->db1 = snap(m->db1, 1), o->dw2 = snap(m->dw2, 1), o->db2 = snap(m->db2, 1);
}

/* The shards of tp_mlp_init on rank r: shapes, dim names, categories, the right slices, zero gradients. */
static void tp_check_shards(const mlp_rec *m, const mlp_ref *d, int t, int r, int sp, const char *who)
{
    int64_t h = d->h, f = d->f, fl = f / t, s1[2] = { h, fl }, s2[2] = { fl, h };
    if (!m->ctx_ok || !m->tp_ok || m->t != t || m->rank != r || m->h != h || m->f != f || m->sp != sp)
        problem(T_SHARD, "%s: the struct's fields are ctx %s, tp %s, t = %d, rank = %d, h = %lld, f = %lld, "
                "sequence_parallel = %d; expected this rank's context and TP group, t = %d, rank = %d, h = %lld, f = "
                "%lld, sequence_parallel = %d (header: 'Sets ctx, tp, t, rank, h, f, sequence_parallel')", who,
                m->ctx_ok ? "ok" : "wrong", m->tp_ok ? "ok" : "wrong", m->t, m->rank, (long long)m->h,
                (long long)m->f, m->sp, t, r, (long long)h, (long long)f, sp);
    tview tv[8];
    const tview *w1 = view(&tv[0], &m->w1, 1), *b1 = view(&tv[1], &m->b1, 1), *w2 = view(&tv[2], &m->w2, 1),
                *b2 = view(&tv[3], &m->b2, 1);
    const tview *g[4] = { view(&tv[4], &m->dw1, 1), view(&tv[5], &m->db1, 1), view(&tv[6], &m->dw2, 1),
                          view(&tv[7], &m->db2, 1) };
    const char *col = "ColumnParallelLinear: A's columns r*4h/t ..", *row = "RowParallelLinear: B's rows r*4h/t ..",
               *rep = "c is whole on every rank";
    int w1ok = check_tensor(T_SHARD, who, "w1", w1, 2, s1, "h,4h/t", RL_MEM_PARAM, col);
    int b1ok = check_tensor(T_SHARD, who, "b1", b1, 1, &fl, "4h/t", RL_MEM_PARAM, "a's slice r*4h/t ..");
    int w2ok = check_tensor(T_SHARD, who, "w2", w2, 2, s2, "4h/t,h", RL_MEM_PARAM, row);
    int b2ok = check_tensor(T_SHARD, who, "b2", b2, 1, &h, "h", RL_MEM_PARAM, rep);
    int gok[4] = { check_tensor(T_SHARD, who, "dw1", g[0], 2, s1, "h,4h/t", RL_MEM_GRAD, "w1's gradient"),
                   check_tensor(T_SHARD, who, "db1", g[1], 1, &fl, "4h/t", RL_MEM_GRAD, "b1's gradient"),
                   check_tensor(T_SHARD, who, "dw2", g[2], 2, s2, "4h/t,h", RL_MEM_GRAD, "w2's gradient"),
                   check_tensor(T_SHARD, who, "db2", g[3], 1, &h, "h", RL_MEM_GRAD, "b2's gradient") };
    for (int64_t i = 0; w1ok && i < h; i++)
        for (int64_t j = 0; j < fl; j++)
            if (w1->v[i * fl + j] != d->A[i * f + r * fl + j]) {
                problem(T_SHARD, "%s: w1[%lld, %lld] is not A[%lld, %lld] (w1 holds A's columns r*4h/t = %lld .. "
                        "%lld: %s)", who, (long long)i, (long long)j, (long long)i, (long long)(r * fl + j),
                        (long long)(r * fl), (long long)(r * fl + fl - 1), col);
                i = h;
                break;
            }
    for (int64_t j = 0; b1ok && j < fl; j++)
        if (b1->v[j] != d->a[r * fl + j]) {
            problem(T_SHARD, "%s: b1[%lld] is not a[%lld] (b1 is the slice of a that matches w1's columns, "
                    "r*4h/t = %lld ..)", who, (long long)j, (long long)(r * fl + j), (long long)(r * fl));
            break;
        }
    for (int64_t j = 0; w2ok && j < fl; j++)
        for (int64_t i = 0; i < h; i++)
            if (w2->v[j * h + i] != d->B[(r * fl + j) * h + i]) {
                problem(T_SHARD, "%s: w2[%lld, %lld] is not B[%lld, %lld] (%s)", who, (long long)j, (long long)i,
                        (long long)(r * fl + j), (long long)i, row);
                j = fl;
                break;
            }
    for (int64_t i = 0; b2ok && i < h; i++)
        if (b2->v[i] != d->c[i]) {
            problem(T_SHARD, "%s: b2[%lld] is not c[%lld] (%s; it is added once, after g)", who, (long long)i,
                    (long long)i, rep);
            break;
        }
    static const char *const gn[4] = { "dw1", "db1", "dw2", "db2" };
    for (int k = 0; k < 4; k++)
        for (int64_t i = 0; gok[k] && i < g[k]->numel; i++)
            if (g[k]->v[i] != 0) {
                problem(T_SHARD, "%s: %s[%lld] = %g after tp_mlp_init; the gradients start at zero (header: "
                        "'zeroed gradients')", who, gn[k], (long long)i, g[k]->v[i]);
                break;
            }
}

/* The gradient shards g (dw1, db1, dw2, db2) of rank r against `scale` times the dense
 * gradients; the worst relative difference, the name of the worst tensor in *which. */
enum { G_DW1 = 1, G_DB1 = 2, G_DW2 = 4, G_DB2 = 8, G_ALL = 15 };

static double tp_grad_err(const tview *const g[4], const mlp_ref *d, int t, int r, double scale, int mask,
                          const char **which)
{
    int64_t h = d->h, f = d->f, fl = f / t;
    double worst = 0, e;
    *which = "";
    if (!g[0] || g[0]->numel != h * fl || !g[1] || g[1]->numel != fl || !g[2] || g[2]->numel != fl * h || !g[3] ||
        g[3]->numel != h) {
        *which = "(a gradient of the wrong shape)";
        return INFINITY;
    }
#define WORSE(name, a, b)                                                  \
    do {                                                                   \
        e = fabs((double)(a) - (b)) / fmax(fabs((double)(b)), 1e-2);       \
        if (!(e <= worst)) {                                               \
            worst = e == e ? e : INFINITY;                                 \
            *which = name;                                                 \
        }                                                                  \
    } while (0)
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < fl; j++) {
            if (mask & G_DW1)
                WORSE("dw1", g[0]->v[i * fl + j], scale * d->dA[i * f + r * fl + j]);
            if (mask & G_DW2)
                WORSE("dw2", g[2]->v[j * h + i], scale * d->dB[(r * fl + j) * h + i]);
        }
    for (int64_t j = 0; (mask & G_DB1) && j < fl; j++)
        WORSE("db1", g[1]->v[j], scale * d->da[r * fl + j]);
    for (int64_t i = 0; (mask & G_DB2) && i < h; i++)
        WORSE("db2", g[3]->v[i], scale * d->dc[i]);
#undef WORSE
    return worst;
}

/* The gradient shards a run recorded, to read (tv: room for four views). */
static void grads_of(const tsnap *s, tview *tv, const tview *g[4])
{
    for (int k = 0; k < 4; k++)
        g[k] = view(&tv[k], &s[k], 1);
}

/* The saved activations after a forward: x_in and hpre/hact [.., 4h/t] under RL_MEM_ACTIVATION. */
static void tp_check_saved(const tsnap *sx_in, const tsnap *shpre, const tsnap *shact, const char *who, int64_t lead,
                           int64_t lead2, const char *leadnames, int64_t h, int64_t fl, int64_t grew)
{
    int64_t sx[3] = { lead, lead2, h }, sh[3] = { lead, lead2, fl };
    char dh[40], dx[40];
    snprintf(dh, sizeof dh, "%s,4h/t", leadnames);
    snprintf(dx, sizeof dx, "%s,h", leadnames);
    const char *why = "saved for the backward by your forward (RL_MEM_ACTIVATION)";
    tview tv[3];
    const tview *x_in = view(&tv[0], sx_in, 0), *hpre = view(&tv[1], shpre, 0), *hact = view(&tv[2], shact, 0);
    int64_t held = 0;
    if (check_tensor(T_SHARD, who, "x_in", x_in, 3, sx, dx, -1, "the column-parallel input"))
        held += x_in->cat == RL_MEM_ACTIVATION ? x_in->bytes : 0;
    if (x_in && x_in->cat != RL_MEM_ACTIVATION)
        problem(T_MEM, "%s: x_in is charged to %s; expected activation (%s)", who, rl_mem_cat_name(x_in->cat),
                why);
    if (check_tensor(T_SHARD, who, "hpre", hpre, 3, sh, dh, RL_MEM_ACTIVATION, why))
        held += hpre->cat == RL_MEM_ACTIVATION ? hpre->bytes : 0;
    if (check_tensor(T_SHARD, who, "hact", hact, 3, sh, dh, RL_MEM_ACTIVATION, why))
        held += hact->cat == RL_MEM_ACTIVATION ? hact->bytes : 0;
    if (grew > held)
        problem(T_MEM, "%s: the forward left %lld B of activations allocated, %lld B more than x_in, hpre and "
                "hact hold: a temporary of the forward was not freed", who, (long long)grew, (long long)(grew - held));
}

/* One forward and backward of a TP MLP run, as a rank recorded it. */
typedef struct tp_pass_rec {
    int fwd_done, fwd_rc;      /* the forward returned, with this status */
    int64_t act0, act1;        /* activation bytes before and after it */
    rl_grade_blob y;           /* y after it (returned 0) */
    int bwd_done, bwd_rc;
    int64_t act2;              /* activation bytes after the backward */
    rl_grade_blob dx;          /* dx after it (returned 0) */
    tsnap g[4];                /* dw1, db1, dw2, db2 after it */
} tp_pass_rec;

/* What a rank of a TP MLP run recorded. */
typedef struct tp_rank_rec {
    int init_done, init_rc;    /* tp_mlp_init returned, with this status */
    mlp_rec m;                 /* after it */
    tp_pass_rec pass[2];
    tsnap x_in, hpre, hact;    /* saved by the first forward */
    int freed;                 /* tp_mlp_free ran */
    int64_t before[RL_MEM_NCAT], after[RL_MEM_NCAT]; /* the rank's memory before tp_mlp_init and after tp_mlp_free */
} tp_rank_rec;

typedef struct tp_res {
    run_head head;
    tp_rank_rec r[MAXW];
} tp_res;

static int tp_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    tp_res *o = G->o;
    void *cv;
    char who[64];
    rl_comm *w = job_comm(ctx, G, &cv, who, sizeof who);
    if (!w)
        return 0;
    const tp_case *c = cv;
    const mlp_ref *d = &c->d;
    tp_rank_rec *R = &o->r[rl_rank(ctx)];
    int64_t h = d->h, f = d->f, sh[3] = { c->b, c->s, h }, s1[2] = { h, f }, s2[2] = { f, h };
    rl_tensor *A = tnew(ctx, "A", 2, s1, "h,4h", d->A), *a = tnew(ctx, "a", 1, &f, "4h", d->a);
    rl_tensor *B = tnew(ctx, "B", 2, s2, "4h,h", d->B), *cc = tnew(ctx, "c", 1, &h, "h", d->c);
    rl_tensor *x = tnew(ctx, "x", 3, sh, "b,s,h", d->x), *dy = tnew(ctx, "dy", 3, sh, "b,s,h", d->dy);
    rl_tensor *y = tnew(ctx, "y", 3, sh, "b,s,h", NULL), *dx = tnew(ctx, "dx", 3, sh, "b,s,h", NULL);
    rl_mem_account *acc = rl_ctx_mem(ctx);
    memcpy(R->before, acc->current, sizeof R->before);
    tp_mlp m;
    memset(&m, 0, sizeof m);
    rl_clear_error(ctx);
    int rc = lerr(ctx, &o->head, who, tp_mlp_init(&m, w, A, a, B, cc, 0), "tp_mlp_init");
    R->init_rc = rc, R->init_done = 1;
    if (!rc)
        mlp_keep(&R->m, &m, ctx, w);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        tp_pass_rec *P = &R->pass[pass];
        rl_tensor_fill(y, 7.25f); /* the forward overwrites y */
        P->act0 = acc->current[RL_MEM_ACTIVATION];
        rl_set_tag(ctx, RL_TAG_STEP, 1 + 2 * pass);
        rl_clear_error(ctx);
        rc = lerr(ctx, &o->head, who, tp_mlp_forward(&m, x, y), pass ? "the second tp_mlp_forward" : "tp_mlp_forward");
        rl_set_tag(ctx, RL_TAG_STEP, -1);
        P->fwd_rc = rc, P->fwd_done = 1;
        if (rc)
            break;
        P->act1 = acc->current[RL_MEM_ACTIVATION];
        P->y = keep_vals(y);
        if (!pass)
            R->x_in = snap(m.x_in, 0), R->hpre = snap(m.hpre, 0), R->hact = snap(m.hact, 0);
        rl_tensor_fill(dx, -3.5f); /* the backward overwrites dx */
        rl_set_tag(ctx, RL_TAG_STEP, 2 + 2 * pass);
        rl_clear_error(ctx);
        rc = lerr(ctx, &o->head, who, tp_mlp_backward(&m, dy, dx),
                  pass ? "the second tp_mlp_backward" : "tp_mlp_backward");
        rl_set_tag(ctx, RL_TAG_STEP, -1);
        P->bwd_rc = rc, P->bwd_done = 1;
        if (rc)
            break;
        P->act2 = acc->current[RL_MEM_ACTIVATION];
        P->dx = keep_vals(dx);
        P->g[0] = snap(m.dw1, 1), P->g[1] = snap(m.db1, 1), P->g[2] = snap(m.dw2, 1), P->g[3] = snap(m.db2, 1);
    }
    if (rc) /* the learner's code failed: a call of it may still be in flight — leave the tensors to the run */
        return 0;
    tp_mlp_free(&m);
    memcpy(R->after, acc->current, sizeof R->after);
    R->freed = 1;
    rl_tensor *ts[] = { A, a, B, cc, x, dy, y, dx };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    job_comm_free(ctx, w);
    return 0;
}

/* The checks of one rank of a TP MLP run (rank r of t, label who), from what it recorded. */
static void tp_rank_check(const tp_rank_rec *R, const tp_case *c, int t, int r, const char *who)
{
    const mlp_ref *d = &c->d;
    int64_t h = d->h, f = d->f, fl = f / t, rows = d->rows;
    if (!R->init_done)
        return;
    int rc = R->init_rc;
    if (!rc)
        tp_check_shards(&R->m, d, t, r, 0, who);
    int64_t act_fwd = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        const tp_pass_rec *P = &R->pass[pass];
        if (!P->fwd_done)
            return;
        if ((rc = P->fwd_rc))
            break;
        int64_t act1 = P->act1;
        const float *y = vals_of(P->y, rows * h);
        double e = rel_to(y, d->y, rows * h, 1e-2), shift;
        if (!(e < TOL)) {
            if (const_shift(y, d->y, rows * h, &shift))
                problem(T_FWD, "%s, forward %d: y = the dense MLP's output + %g everywhere (%.3g x the 7.25 y held "
                        "before the call): the forward must overwrite y, not add to it", who, pass + 1, shift,
                        shift / 7.25);
            else
                problem(T_FWD, "%s, forward %d: y differs from the dense MLP by %.3g (relative; y held 7.25 before "
                        "the call): the row-parallel partial outputs are summed by ONE all-reduce (g), then c is added "
                        "once", who, pass + 1, e);
        }
        if (!pass) {
            tp_check_saved(&R->x_in, &R->hpre, &R->hact, who, c->b, c->s, "b,s", h, fl, act1 - P->act0);
            act_fwd = act1;
        } else if (act1 != act_fwd) {
            problem(T_MEM, "%s: after the second forward the rank holds %lld B of activations, after the first "
                    "%lld B: each forward frees what the previous one saved (header: 'freed by the next forward')", who,
                    (long long)act1, (long long)act_fwd);
        }
        if (!P->bwd_done)
            return;
        if ((rc = P->bwd_rc))
            break;
        int64_t act2 = P->act2;
        if (act2 > act1)
            problem(T_MEM, "%s: backward %d left %lld B more activations allocated than the forward had: its "
                    "temporaries (dhact, dhpre ...) must be freed", who, pass + 1, (long long)(act2 - act1));
        const float *dx = vals_of(P->dx, rows * h);
        e = rel_to(dx, d->dx, rows * h, 1e-2);
        if (!(e < TOL)) {
            if (const_shift(dx, d->dx, rows * h, &shift))
                problem(T_BWD, "%s, backward %d: dx = the dense input gradient + %g everywhere (%.3g x the -3.5 "
                        "dx held before the call): backward ops OVERWRITE dx (beta 0), they do not add to it", who,
                        pass + 1, shift, shift / -3.5);
            else
                problem(T_BWD, "%s, backward %d: dx differs from the dense input gradient by %.3g (relative; dx "
                        "held -3.5 before the call): f is an all-reduce in backward — each rank's dx covers only its "
                        "4h/t columns of A", who, pass + 1, e);
        }
        const char *which;
        tview tv[4];
        const tview *g[4];
        grads_of(P->g, tv, g);
        e = tp_grad_err(g, d, t, r, pass + 1, G_ALL, &which);
        if (!(e < TOL)) {
            const char *w1;
            int bit = !strcmp(which, "dw1") ? G_DW1 : !strcmp(which, "db1") ? G_DB1 : !strcmp(which, "dw2") ? G_DW2
                      : G_DB2;
            double one = pass ? tp_grad_err(g, d, t, r, 1, bit, &w1) : INFINITY; /* that tensor = one backward's? */
            int whole = !strcmp(which, "db2");
            problem(T_BWD, "%s, after %d forward+backward pass%s: %s differs from %s%s by %.3g (relative)%s", who,
                    pass + 1, pass ? "es" : "", which, pass ? "twice " : "",
                    whole ? "the dense gradient of c (db2 is whole on every rank)"
                          : "this rank's slice of the dense gradient", e,
                    pass && one < TOL ? ": it equals ONE backward's — backward ACCUMULATES into dw1, db1, dw2, "
                                        "db2 (header), it must not overwrite them"
                    : pass || whole   ? ""
                                      : " (dw1, db1: this rank's 4h/t columns; dw2: its rows)");
        }
    }
    if (rc || !R->freed)
        return;
    rl_grade_text left = { 0 };
    if (mem_left(R->after, R->before, &left))
        problem(T_MEM, "%s: after tp_mlp_free the rank's memory differs from before tp_mlp_init (%s): a tensor "
                "of the forward or backward that is not in the struct was never freed", who, rl_grade_text_str(&left));
    rl_grade_text_free(&left);
}

/* Runs a TP job (the case of each group on its ranks) in the child and checks every rank
 * from its record; the trace is returned when tr is given. */
static void tp_go(job *J, rl_trace **tr)
{
    tp_res *o = job_run("tp_mlp", J, tp_rank, sizeof *o, tr);
    for (int wr = 0; wr < J->n * J->ng; wr++) {
        char who[64];
        job_who(J, wr, who, sizeof who);
        tp_rank_check(&o->r[wr], J->c[J->color[wr]], J->n, J->key[wr], who);
    }
    free(o);
}

/* Runs one TP case on the world; the trace is returned when tr is given. */
static void tp_run(tp_case *c, rl_trace **tr)
{
    job J;
    job_make(&J, c->t, 1, NULL, c, NULL);
    tp_go(&J, tr);
}
/* Draws n random TP cases (stream k), runs each and prints them on one line. */
static void tp_random_runs(int n, int tmin, void (*after)(tp_case *, rl_trace *))
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text line = { 0 };
    for (int i = 0; i < n; i++) {
        tp_case c;
        int t;
        int64_t b, s, h;
        do
            tp_draw(&g, &t, &b, &s, &h);
        while (t < tmin);
        tp_case_make(&c, t, b, s, h, &g);
        rl_grade_text_add(&line, "%s%s", i ? "; " : "cases: ", g_case);
        rl_trace *tr = NULL;
        tp_run(&c, after ? &tr : NULL);
        if (after)
            after(&c, tr);
        rl_trace_free(tr);
        mlp_ref_free(&c.d);
    }
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
}

START_TEST(t_tp_shapes)
{
    tp_random_runs(2, 2, NULL);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_SHARD, "tensor-parallel MLP shards (w1 [h, 4h/t] dims \"h,4h/t\" = A's columns r*4h/t.., b1 [4h/t], "
                         "w2 [4h/t, h] dims \"4h/t,h\" = B's rows r*4h/t.., b2 = c [h]; saved hpre/hact [b, s, 4h/t] "
                         "dims \"b,s,4h/t\"):");
}
END_TEST

START_TEST(t_tp_forward)
{
    tp_random_runs(3, 2, NULL);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_FWD, "TP MLP forward:");
}
END_TEST

START_TEST(t_tp_backward)
{
    tp_random_runs(3, 2, NULL);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_BWD, "TP MLP backward (two forward+backward passes; dx overwritten, dw accumulated):");
}
END_TEST

/* The collectives of a TP case's four phases on `ranks` world ranks, from its trace. */
static void tp_comm_check(const tp_case *c, const rl_trace *tr, int ranks)
{
    static const char *const ar[1] = { "all_reduce" };
    double bytes = 4.0 * (double)(c->b * c->s * c->h);
    const char *rule = "g is ONE all-reduce of b*s*h elements in forward, f ONE in backward; nothing else";
    static const char *const names[4] = { "forward", "backward", "second forward", "second backward" };
    for (int ph = 1; ph <= 4; ph++)
        expect_colls(tr, ranks, ph, names[ph - 1], ar, 1, bytes, 1, rule);
}

/* tp_comm_check on the case's own t ranks (the after-run hook of tp_random_runs). */
static void tp_comm_after(tp_case *c, rl_trace *tr) { tp_comm_check(c, tr, c->t); }

START_TEST(t_tp_counts)
{
    tp_random_runs(2, 2, tp_comm_after);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_COMM, "TP MLP collectives, from the run's trace (handout 30.1 Cost: 'Per MLP: 1 all-reduce forward "
                        "+ 1 backward of b*s*h elements'):");
}
END_TEST

START_TEST(t_tp_memory)
{
    tp_random_runs(2, 2, NULL);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_MEM, "TP MLP memory (header: the shards under RL_MEM_PARAM, their gradients under RL_MEM_GRAD; "
                       "handout: 'Allocate saved activations under RL_MEM_ACTIVATION'; header: saved x_in, hpre, hact "
                       "are 'freed by the next forward and by tp_mlp_free'):");
}
END_TEST

START_TEST(t_tp_sizes)
{
    /* the edges: t = 1 (the dense layer; the all-reduce is a copy or skipped) and one column of
     * the FFN per rank (t = 4h) */
    rl_rng g = rl_grade_rng(2);
    int64_t h1 = rl_grade_pick(&g, 5, 24), b1 = rl_grade_pick(&g, 1, 3), s1 = rl_grade_pick(&g, 2, 9);
    int tt = rl_grade_pick(&g, 0, 1) ? 8 : 4; /* h100-nvlink models 8 GPUs */
    int64_t b2 = rl_grade_pick(&g, 1, 2), s2 = rl_grade_pick(&g, 2, 5), h2 = tt / 4;
    tp_case c;
    rl_grade_text line = { 0 };
    tp_case_make(&c, 1, b1, s1, h1, &g);
    rl_grade_text_add(&line, "cases: %s", g_case);
    rl_trace *tr = NULL;
    tp_run(&c, &tr);
    tp_comm_after(&c, tr);
    rl_trace_free(tr);
    mlp_ref_free(&c.d);
    tp_case_make(&c, tt, b2, s2, h2, &g);
    rl_grade_text_add(&line, "; %s", g_case);
    tp_run(&c, NULL);
    mlp_ref_free(&c.d);
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
    expect_none(T_RUN, "the TP MLP run failed:");
    expect_none(T_SHARD, "shards:");
    expect_none(T_FWD, "forward:");
    expect_none(T_BWD, "backward:");
    expect_none(T_COMM, "collectives (with t = 1 the all-reduce is a copy: calling it or not is fine, nothing else):");
}
END_TEST

/* 30.1 inside a larger world: 2t ranks in two TP groups of t (members drawn at random), each
 * with its own weights and data; every result per group, every collective on the group's
 * communicator (mp.h: 'rl_comm *tp; the tensor-parallel group'). */
START_TEST(t_tp_groups)
{
    rl_rng g = rl_grade_rng(4);
    int t = rl_grade_pick(&g, 2, 4);
    int64_t b = rl_grade_pick(&g, 1, 2), s = rl_grade_pick(&g, 2, 6), h = pick_h(&g, t, 4, 20);
    tp_case c[2];
    tp_case_make(&c[0], t, b, s, h, &g);
    tp_case_make(&c[1], t, b, s, h, &g);
    job J;
    job_make(&J, t, 2, &g, &c[0], &c[1]);
    rl_grade_text grp = { 0 };
    job_text(&J, &grp);
    snprintf(g_case, sizeof g_case, "t = %d, b = %lld, s = %lld, h = %lld; %s", t, (long long)b, (long long)s,
             (long long)h, rl_grade_text_str(&grp));
    printf("cases: %s\n", g_case);
    rl_grade_text_free(&grp);
    rl_trace *tr = NULL;
    tp_go(&J, &tr);
    tp_comm_check(&c[0], tr, 2 * t);
    expect_on_group(tr, &J, 1, 4, "mp.h: 'rl_comm *tp; the tensor-parallel group': g and f sum over the TP group, "
                    "not over the world");
    rl_trace_free(tr);
    mlp_ref_free(&c[0].d);
    mlp_ref_free(&c[1].d);
    const char *why = "two TP groups, each with its own weights and data:";
    expect_none(T_RUN, "the TP MLP run on two TP groups failed" GROUP_NOTE ":");
    expect_none(T_SHARD, why);
    expect_none(T_COMM, "collectives of two TP groups, from the run's trace (each group's on its own communicator, "
                        "the tp argument):");
    expect_none(T_FWD, why);
    expect_none(T_BWD, why);
    expect_none(T_MEM, why);
}
END_TEST

/* What the ranks of a run of refusals recorded: per rank, each call's status and message. */
typedef struct refuse_res {
    run_head head;
    int rc[MAXW][2];
    char msg[MAXW][2][1024];
} refuse_res;

/* Runs fn (refusals: the case is the job's) on t ranks in the child; the record's copy with
 * its messages ended (the caller frees it). */
static refuse_res *refuse_run(const char *label, int t, rl_rank_fn fn, void *b)
{
    job J;
    job_make(&J, t, 1, NULL, b, NULL);
    refuse_res *o = job_run(label, &J, fn, sizeof *o, NULL);
    for (int r = 0; r < MAXW; r++)
        for (int k = 0; k < 2; k++)
            o->msg[r][k][sizeof o->msg[r][k] - 1] = 0;
    return o;
}

/* 30.1 refusals: f not divisible by t, shapes that disagree. */
typedef struct tp_bad { int64_t h, hb; int t; } tp_bad;

static int tp_bad_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    const tp_bad *b = G->J->c[0];
    refuse_res *o = G->o;
    int r = rl_rank(ctx);
    for (int k = 0; k < 2; k++) {
        int64_t h = k ? b->hb : b->h, f = 4 * h, s1[2] = { h, f }, s2[2] = { f, k ? h + 1 : h };
        rl_tensor *A = tnew(ctx, "A", 2, s1, "h,4h", NULL), *a = tnew(ctx, "a", 1, &f, "4h", NULL);
        rl_tensor *B = tnew(ctx, "B", 2, s2, "4h,h", NULL), *c = tnew(ctx, "c", 1, &h, "h", NULL);
        tp_mlp m;
        memset(&m, 0, sizeof m);
        rl_clear_error(ctx);
        o->rc[r][k] = tp_mlp_init(&m, rl_comm_world(ctx), A, a, B, c, 0);
        snprintf(o->msg[r][k], sizeof o->msg[r][k], "%s", rl_last_error(ctx));
        if (o->rc[r][k])
            rl_grade_note("rank %d: tp_mlp_init refused (%s): %s", r, rl_status_name(o->rc[r][k]), o->msg[r][k]);
        tp_mlp_free(&m);
        rl_tensor_free(A), rl_tensor_free(a), rl_tensor_free(B), rl_tensor_free(c);
    }
    return 0;
}

START_TEST(t_tp_refuse)
{
    rl_rng g = rl_grade_rng(3);
    static const int ts[] = { 3, 5, 6, 7 };
    tp_bad bb, *b = &bb;
    memset(b, 0, sizeof *b);
    b->t = ts[rl_grade_pick(&g, 0, 3)];
    do
        b->h = rl_grade_pick(&g, 5, 30);
    while ((4 * b->h) % b->t == 0 || b->h == b->t || 4 * b->h == b->t);
    b->hb = pick_h(&g, b->t, 6, 30);
    printf("cases: t = %d, h = %lld (f = %lld); t = %d, h = %lld with B [4h, h+1]\n", b->t, (long long)b->h,
           (long long)(4 * b->h), b->t, (long long)b->hb);
    snprintf(g_case, sizeof g_case, "refusals");
    refuse_res *o = refuse_run("tp_mlp_init refusals", b->t, tp_bad_rank, b);
    expect_none(T_RUN, "tp_mlp_init on refused shapes:");
    long long f = 4 * b->h;
    for (int r = 0; r < b->t; r++) {
        const char *m = o->msg[r][0];
        ck_assert_msg(o->rc[r][0] == RL_ERR_ARG, "rank %d: tp_mlp_init with f = 4h = %lld on t = %d ranks must return "
                      "RL_ERR_ARG (f is not divisible by t); got %d (%s)%s%s", r, f, b->t, o->rc[r][0],
                      rl_status_name(o->rc[r][0]), m[0] ? ": " : "", m);
        ck_assert_msg(names_number(m, f) && names_number(m, b->t), "rank %d: the refusal of f = %lld on t = %d ranks "
                      "must name both numbers; the message was '%s'", r, f, b->t, m[0] ? m : "(empty)");
        m = o->msg[r][1];
        ck_assert_msg(o->rc[r][1] == RL_ERR_ARG && m[0], "rank %d: tp_mlp_init with A [%lld, %lld] and B [%lld, %lld] "
                      "(the shapes disagree) must return RL_ERR_ARG with a message; got %d (%s)%s%s", r,
                      (long long)b->hb, (long long)(4 * b->hb), (long long)(4 * b->hb), (long long)(b->hb + 1),
                      o->rc[r][1], rl_status_name(o->rc[r][1]), m[0] ? ": " : ", no message", m);
    }
    free(o);
}
END_TEST

/* This learner's numbers for the hand derivations (rl_grade_learner_pick): H1 a layer's
 * sizes, H3 a pipeline, H4 a layer and a TP size. */
typedef struct h_numbers {
    double h1_b, h1_s, h1_h;
    int h3_p, h3_m, h3_v;
    double h4_s, h4_b, h4_h;
    int h4_t;
} h_numbers;

static h_numbers my_numbers(void)
{
    static const double b1[] = { 1, 4 }, s1[] = { 2048, 8192 }, h1[] = { 4096, 5120, 6144, 12288 };
    static const double p3[] = { 3, 5, 6, 8 }, k3[] = { 2, 3, 4, 6 }, v3[] = { 2, 3, 4 }; /* m = k·p */
    static const double s4[] = { 2048, 8192 }, b4[] = { 1, 2 }, h4[] = { 4096, 5120, 12288 }, t4[] = { 2, 4, 8 };
    h_numbers n;
    n.h1_b = rl_grade_learner_pick("30/H1/b", b1, 2);
    n.h1_s = rl_grade_learner_pick("30/H1/s", s1, 2);
    n.h1_h = rl_grade_learner_pick("30/H1/h", h1, 4);
    n.h3_p = (int)rl_grade_learner_pick("30/H3/p", p3, 4);
    n.h3_m = n.h3_p * (int)rl_grade_learner_pick("30/H3/m", k3, 4);
    n.h3_v = (int)rl_grade_learner_pick("30/H3/v", v3, 3);
    n.h4_s = rl_grade_learner_pick("30/H4/s", s4, 2);
    n.h4_b = rl_grade_learner_pick("30/H4/b", b4, 2);
    n.h4_h = rl_grade_learner_pick("30/H4/h", h4, 3);
    n.h4_t = (int)rl_grade_learner_pick("30/H4/t", t4, 3);
    return n;
}

/* make questions LAB=30: this learner's numbers. */
static void questions30(FILE *out)
{
    h_numbers n = my_numbers();
    fprintf(out, "  H1: a layer with h = %g, b = %g, s = %g, bf16, TP size 8.\n", n.h1_h, n.h1_b, n.h1_s);
    fprintf(out, "  H3: p = %d stages, m = %d micro-batches; interleaved with v = %d chunks per stage.\n", n.h3_p,
            n.h3_m, n.h3_v);
    fprintf(out, "  H4: s = %g, b = %g, h = %g, a = %g heads, t = %d, 16-bit activations, no recomputation.\n",
            n.h4_s, n.h4_b, n.h4_h, n.h4_h / 128, n.h4_t);
}

START_TEST(t_ans_tp)
{
    h_numbers n = my_numbers();
    rl_calc_tp_in in = { n.h1_b, n.h1_s, n.h1_h, 8, 2, NULL };
    rl_calc_tp_out o;
    ck_assert(rl_calc_tp(&in, &o, NULL, 0) == 0);
    CHECK_NUM("h1_fwd_elems", o.fwd_elems, 0.01);
    CHECK_NUM("h1_layer_gb", o.layer_bytes / 1e9, 0.01);
    /* the longest s whose layer traffic (forward + backward, large-t count) stays within 1 GB */
    in.s = 1;
    ck_assert(rl_calc_tp(&in, &o, NULL, 0) == 0);
    CHECK_NUM("h1_max_s", floor(1e9 / o.layer_bytes), 0.001);
}
END_TEST

/* ================================================================== 30.2 TP attention */

typedef struct attn_case {
    int t, heads;
    int64_t b, s, h;
    float *W[4], *x, *y;       /* dense Wq, Wk, Wv, Wo [h, h]; x, y [b, s, h] */
} attn_case;

static void attn_case_free(attn_case *c)
{
    for (int i = 0; i < 4; i++)
        free(c->W[i]);
    free(c->x), free(c->y);
}

/* Random weights and x, and the dense causal attention y = softmax(q·kᵀ/√hd + mask)·v·Wo. */
static void attn_case_make(attn_case *c, int t, int heads, int64_t hd, int64_t b, int64_t s, rl_rng *g)
{
    memset(c, 0, sizeof *c);
    c->t = t, c->heads = heads, c->b = b, c->s = s, c->h = heads * hd;
    int64_t h = c->h, sh[3] = { b, s, h }, sw[2] = { h, h }, ps[4] = { b, heads, s, s };
    for (int i = 0; i < 4; i++) {
        c->W[i] = fnew(h * h);
        fill(c->W[i], h * h, g, 1.0 / sqrt((double)h));
    }
    c->x = fnew(b * s * h), c->y = fnew(b * s * h);
    fill(c->x, b * s * h, g, 1.0);
    snprintf(g_case, sizeof g_case, "t = %d, a = %d head(s) of %lld (h = %lld), b = %lld, s = %lld", t, heads,
             (long long)hd, (long long)h, (long long)b, (long long)s);
    if (!rl_grade_judging()) /* the child: the reference is the judge's */
        return;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *W[4], *x = tnew(ctx, "x", 3, sh, "b,s,h", c->x), *q = tnew(ctx, "q", 3, sh, "b,s,h", NULL);
    rl_tensor *k = tnew(ctx, "k", 3, sh, "b,s,h", NULL), *v = tnew(ctx, "v", 3, sh, "b,s,h", NULL);
    rl_tensor *o = tnew(ctx, "o", 3, sh, "b,s,h", NULL), *y = tnew(ctx, "y", 3, sh, "b,s,h", NULL);
    rl_tensor *pr = tnew(ctx, "probs", 4, ps, "b,a,s,s", NULL);
    for (int i = 0; i < 4; i++)
        W[i] = tnew(ctx, "W", 2, sw, "h,h", c->W[i]);
    int rc = rl_matmul(ctx, x, 0, W[0], 0, q, 0);
    rc = rc ? rc : rl_matmul(ctx, x, 0, W[1], 0, k, 0);
    rc = rc ? rc : rl_matmul(ctx, x, 0, W[2], 0, v, 0);
    rc = rc ? rc : rl_attention_forward(ctx, q, k, v, heads, pr, o);
    rc = rc ? rc : rl_matmul(ctx, o, 0, W[3], 0, y, 0);
    rc = rc ? rc : rl_tensor_to_f32(y, c->y, b * s * h);
    rl_tensor *ts[] = { x, q, k, v, o, y, pr, W[0], W[1], W[2], W[3] };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
    ck_assert_msg(rc == 0, "grader: the dense attention reference failed (%d)", rc);
}

/* Which column of the dense [h, h] matrix W equals column j of the shard [h, hl] (-1: none). */
static int64_t find_col(const tview *sh, int64_t hl, int64_t j, const float *W, int64_t h)
{
    for (int64_t J = 0; J < h; J++) {
        int64_t i = 0;
        while (i < h && sh->v[i * hl + j] == W[i * h + J])
            i++;
        if (i == h)
            return J;
    }
    return -1;
}


/* What a rank of a TP attention run recorded. */
typedef struct attn_rank_rec {
    int init_done, init_rc;    /* tp_attn_init returned, with this status */
    int t, rank, heads, local_heads; /* the struct's fields after it */
    int64_t h, head_dim;
    tsnap wq, wk, wv, wo;      /* with their values */
    int fwd_done, fwd_rc;
    int64_t fwd0[RL_MEM_NCAT], fwd1[RL_MEM_NCAT]; /* the rank's memory before and after tp_attn_forward */
    rl_grade_blob y;           /* y after it (returned 0) */
    int freed;                 /* tp_attn_free ran */
    int64_t before[RL_MEM_NCAT], after[RL_MEM_NCAT]; /* before tp_attn_init, after tp_attn_free */
} attn_rank_rec;

typedef struct attn_res {
    run_head head;
    attn_rank_rec r[MAXW];
} attn_res;

static int attn_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    attn_res *o = G->o;
    void *cv;
    char who[64];
    rl_comm *w = job_comm(ctx, G, &cv, who, sizeof who);
    if (!w)
        return 0;
    const attn_case *c = cv;
    attn_rank_rec *R = &o->r[rl_rank(ctx)];
    int64_t h = c->h, sh[3] = { c->b, c->s, h }, sw[2] = { h, h };
    rl_tensor *W[4], *x = tnew(ctx, "x", 3, sh, "b,s,h", c->x), *y = tnew(ctx, "y", 3, sh, "b,s,h", NULL);
    for (int i = 0; i < 4; i++)
        W[i] = tnew(ctx, "W", 2, sw, "h,h", c->W[i]);
    memcpy(R->before, rl_ctx_mem(ctx)->current, sizeof R->before);
    tp_attn a;
    memset(&a, 0, sizeof a);
    rl_clear_error(ctx);
    int rc = lerr(ctx, &o->head, who, tp_attn_init(&a, w, c->heads, W[0], W[1], W[2], W[3]), "tp_attn_init");
    R->init_rc = rc, R->init_done = 1;
    if (!rc) {
        R->t = a.t, R->rank = a.rank, R->heads = a.heads, R->local_heads = a.local_heads, R->h = a.h,
        R->head_dim = a.head_dim;
        R->wq = snap(a.wq, 1), R->wk = snap(a.wk, 1), R->wv = snap(a.wv, 1), R->wo = snap(a.wo, 1);
        rl_tensor_fill(y, 5.5f);
        memcpy(R->fwd0, rl_ctx_mem(ctx)->current, sizeof R->fwd0);
        rl_set_tag(ctx, RL_TAG_STEP, 1);
        rl_clear_error(ctx);
        rc = lerr(ctx, &o->head, who, tp_attn_forward(&a, x, y), "tp_attn_forward");
        rl_set_tag(ctx, RL_TAG_STEP, -1);
        memcpy(R->fwd1, rl_ctx_mem(ctx)->current, sizeof R->fwd1);
        R->fwd_rc = rc, R->fwd_done = 1;
        if (!rc)
            R->y = keep_vals(y);
    }
    if (rc) /* a call of the learner's code may still be in flight: leave its tensors to the run */
        return 0;
    tp_attn_free(&a);
    memcpy(R->after, rl_ctx_mem(ctx)->current, sizeof R->after);
    R->freed = 1;
    for (int i = 0; i < 4; i++)
        rl_tensor_free(W[i]);
    rl_tensor_free(x), rl_tensor_free(y);
    job_comm_free(ctx, w);
    return 0;
}

/* The checks of one rank of a TP attention run (rank r of t, label who), from what it recorded. */
static void attn_rank_check(const attn_rank_rec *R, const attn_case *c, int t, int r, const char *who)
{
    int64_t h = c->h, hl = h / t, sc[2] = { h, hl }, sr[2] = { hl, h };
    if (!R->init_done)
        return;
    int rc = R->init_rc;
    if (!rc) {
        if (R->t != t || R->rank != r || R->heads != c->heads || R->local_heads != c->heads / t || R->h != h ||
            R->head_dim != h / c->heads)
            problem(T_SHARD, "%s: t = %d, rank = %d, heads = %d, local_heads = %d, h = %lld, head_dim = %lld; "
                    "expected %d, %d, %d, a/t = %d, %lld, h/a = %lld", who, R->t, R->rank, R->heads, R->local_heads,
                    (long long)R->h, (long long)R->head_dim, t, r, c->heads, c->heads / t, (long long)h,
                    (long long)(h / c->heads));
        static const char *const nm[3] = { "wq", "wk", "wv" }, *const dn[3] = { "Wq", "Wk", "Wv" };
        tview tv[4];
        const tview *qkv[3] = { view(&tv[0], &R->wq, 1), view(&tv[1], &R->wk, 1), view(&tv[2], &R->wv, 1) };
        const tview *wo = view(&tv[3], &R->wo, 1);
        int lh = c->heads / t;
        for (int i = 0; i < 3; i++) {
            if (!check_tensor(T_SHARD, who, nm[i], qkv[i], 2, sc, "h,h/t", RL_MEM_PARAM, "the columns of this rank's heads"))
                continue;
            for (int64_t j = 0; j < hl; j++)
                if (qkv[i]->v[j] != c->W[i][r * hl + j] || find_col(qkv[i], hl, j, c->W[i], h) != r * hl + j) {
                    int64_t J = find_col(qkv[i], hl, j, c->W[i], h);
                    char got[64];
                    if (J >= 0)
                        snprintf(got, sizeof got, "column %lld of %s (head %lld)", (long long)J, dn[i],
                                 (long long)(J / (h / c->heads)));
                    else
                        snprintf(got, sizeof got, "no column of %s", dn[i]);
                    problem(T_SHARD, "%s: column %lld of %s is %s; expected column %lld (rank r keeps heads "
                            "r*a/t .. (r+1)*a/t-1 = %d .. %d, side by side: columns r*h/t = %lld .. %lld)", who,
                            (long long)j, nm[i], got, (long long)(r * hl + j), r * lh, r * lh + lh - 1,
                            (long long)(r * hl), (long long)(r * hl + hl - 1));
                    break;
                }
        }
        if (check_tensor(T_SHARD, who, "wo", wo, 2, sr, "h/t,h", RL_MEM_PARAM, "the rows of this rank's heads"))
            for (int64_t j = 0; j < hl; j++) {
                int64_t i = 0;
                while (i < h && wo->v[j * h + i] == c->W[3][(r * hl + j) * h + i])
                    i++;
                if (i < h) {
                    problem(T_SHARD, "%s: row %lld of wo is not row %lld of Wo (wo holds the rows of this rank's "
                            "heads, r*h/t = %lld .., in the order of wq's columns)", who, (long long)j,
                            (long long)(r * hl + j), (long long)(r * hl));
                    break;
                }
            }
        if (!R->fwd_done)
            return;
        rc = R->fwd_rc;
        rl_grade_text left = { 0 };
        if (!rc && mem_left(R->fwd1, R->fwd0, &left))
            problem(T_MEM, "%s: tp_attn_forward left %s allocated: its temporaries (q, k, v, the attention "
                    "output, probs [b, a/t, s, s]) are freed before it returns (nothing is saved in this step)", who,
                    rl_grade_text_str(&left));
        rl_grade_text_free(&left);
        double e = rc ? 0 : rel_to(vals_of(R->y, c->b * c->s * h), c->y, c->b * c->s * h, 1e-2);
        if (!(e < TOL))
            problem(T_FWD, "%s: y differs from dense causal attention by %.3g (relative; y held 5.5 before the "
                    "call)", who, e);
    }
    if (rc || !R->freed)
        return;
    rl_grade_text left = { 0 };
    if (mem_left(R->after, R->before, &left))
        problem(T_MEM, "%s: after tp_attn_free the rank's memory differs from before tp_attn_init (%s)", who,
                rl_grade_text_str(&left));
    rl_grade_text_free(&left);
}

/* Runs a TP attention job in the child and checks every rank from its record; the trace is
 * returned when tr is given. */
static void attn_go(job *J, rl_trace **tr)
{
    attn_res *o = job_run("tp_attn", J, attn_rank, sizeof *o, tr);
    for (int wr = 0; wr < J->n * J->ng; wr++) {
        char who[64];
        job_who(J, wr, who, sizeof who);
        attn_rank_check(&o->r[wr], J->c[J->color[wr]], J->n, J->key[wr], who);
    }
    free(o);
}

/* Random attention cases: t in 2..6, a = t·(lh_min..3) heads of 2..5. */
static void attn_random_runs(int n, int lh_min, void (*after)(attn_case *, rl_trace *))
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text line = { 0 };
    for (int i = 0; i < n; i++) {
        attn_case c;
        int t = rl_grade_pick(&g, 2, 6), lh = rl_grade_pick(&g, lh_min, 3);
        attn_case_make(&c, t, t * lh, rl_grade_pick(&g, 2, 5), rl_grade_pick(&g, 1, 2), rl_grade_pick(&g, 3, 9), &g);
        rl_grade_text_add(&line, "%s%s", i ? "; " : "cases: ", g_case);
        rl_trace *tr = NULL;
        job J;
        job_make(&J, t, 1, NULL, &c, NULL);
        attn_go(&J, after ? &tr : NULL);
        if (after)
            after(&c, tr);
        rl_trace_free(tr);
        attn_case_free(&c);
    }
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
}

START_TEST(t_attn)
{
    attn_random_runs(3, 1, NULL);
    expect_none(T_RUN, "the TP attention run failed:");
    expect_none(T_FWD, "TP attention output:");
}
END_TEST

/* The attention op of each rank's forward in the trace names the sharded dims: q, k, v
 * [b, s, h/t], probs [b, a/t, s, s] (handout 30.2 Shape). */
static void attn_shapes_after(attn_case *c, rl_trace *tr)
{
    char want_h[40], want_a[40];
    snprintf(want_h, sizeof want_h, "h/t=%lld]", (long long)(c->h / c->t));
    snprintf(want_a, sizeof want_a, "a/t=%d,", c->heads / c->t);
    for (int r = 0; r < c->t; r++)
        for (size_t i = 0; tr && i < tr->n; i++) {
            const rl_trace_event *e = &tr->ev[i];
            if (e->rank != r || e->cat != RL_CAT_COMPUTE || e->tags[RL_TAG_STEP] != 1 || strcmp(e->name, "attention"))
                continue;
            if (!e->shapes || !strstr(e->shapes, want_h) || !strstr(e->shapes, want_a))
                problem(T_SHARD, "rank %d: the attention op's shapes are '%s'; expected q, k, v [b, s, h/t=%lld] and "
                        "probs [b, a/t=%d, s, s] (handout 30.2 Shape: the dim names mark what is sharded)", r,
                        e->shapes ? e->shapes : "(none)", (long long)(c->h / c->t), c->heads / c->t);
            break;
        }
}

START_TEST(t_attn_shards)
{
    attn_random_runs(2, 2, attn_shapes_after); /* two or more heads per rank: their order matters */
    expect_none(T_RUN, "the TP attention run failed:");
    expect_none(T_SHARD, "TP attention shards (wq, wk, wv [h, h/t] dims \"h,h/t\"; wo [h/t, h] dims \"h/t,h\"):");
    expect_none(T_MEM, "TP attention memory (shards under RL_MEM_PARAM; the forward frees its temporaries):");
}
END_TEST

static void attn_comm_after(attn_case *c, rl_trace *tr)
{
    static const char *const ar[1] = { "all_reduce" };
    expect_colls(tr, c->t, 1, "forward", ar, 1, 4.0 * (double)(c->b * c->s * c->h), 0,
                 "one all-reduce of b*s*h after the row-parallel Wo; heads need no communication before it");
}

START_TEST(t_attn_comm)
{
    attn_random_runs(2, 1, attn_comm_after);
    expect_none(T_RUN, "the TP attention run failed:");
    expect_none(T_COMM, "TP attention collectives, from the run's trace (handout 30.2 Cost: 'traffic is one "
                        "all-reduce of b*s*h forward'):");
}
END_TEST

/* 30.2 inside a larger world: two TP groups of t (members drawn at random), each with its own
 * weights and x; the output per group, the all-reduce on the group's communicator. */
START_TEST(t_attn_groups)
{
    rl_rng g = rl_grade_rng(2);
    int t = rl_grade_pick(&g, 2, 4), heads = t * rl_grade_pick(&g, 1, 2);
    int64_t hd = rl_grade_pick(&g, 2, 4), b = rl_grade_pick(&g, 1, 2), s = rl_grade_pick(&g, 3, 7);
    attn_case c[2];
    attn_case_make(&c[0], t, heads, hd, b, s, &g);
    attn_case_make(&c[1], t, heads, hd, b, s, &g);
    job J;
    job_make(&J, t, 2, &g, &c[0], &c[1]);
    rl_grade_text grp = { 0 };
    job_text(&J, &grp);
    snprintf(g_case, sizeof g_case, "t = %d, a = %d head(s) of %lld, b = %lld, s = %lld; %s", t, heads,
             (long long)hd, (long long)b, (long long)s, rl_grade_text_str(&grp));
    printf("cases: %s\n", g_case);
    rl_grade_text_free(&grp);
    rl_trace *tr = NULL;
    attn_go(&J, &tr);
    static const char *const ar[1] = { "all_reduce" };
    expect_colls(tr, 2 * t, 1, "forward", ar, 1, 4.0 * (double)(b * s * c[0].h), 0,
                 "one all-reduce of b*s*h after the row-parallel Wo");
    expect_on_group(tr, &J, 1, 1, "mp.h: 'one all-reduce after it' over the TP group a->tp, not over the world");
    rl_trace_free(tr);
    attn_case_free(&c[0]);
    attn_case_free(&c[1]);
    const char *why = "two TP groups, each with its own weights and data:";
    expect_none(T_RUN, "the TP attention run on two TP groups failed" GROUP_NOTE ":");
    expect_none(T_SHARD, why);
    expect_none(T_COMM, "the all-reduce of two TP groups, from the run's trace (each group's on its own "
                        "communicator):");
    expect_none(T_FWD, why);
    expect_none(T_MEM, why);
}
END_TEST

typedef struct bad_heads { int a, t; int64_t h, h2; int a2; } bad_heads;

static int bad_heads_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    const bad_heads *b = G->J->c[0];
    refuse_res *o = G->o;
    int r = rl_rank(ctx);
    for (int k = 0; k < 2; k++) {
        int64_t h = k ? b->h2 : b->h, sh[2] = { h, h };
        rl_tensor *W = tnew(ctx, "W", 2, sh, "h,h", NULL);
        tp_attn a;
        memset(&a, 0, sizeof a);
        rl_clear_error(ctx);
        o->rc[r][k] = tp_attn_init(&a, rl_comm_world(ctx), k ? b->a2 : b->a, W, W, W, W);
        snprintf(o->msg[r][k], sizeof o->msg[r][k], "%s", rl_last_error(ctx));
        tp_attn_free(&a);
        rl_tensor_free(W);
    }
    return 0;
}

START_TEST(t_attn_bad_heads)
{
    rl_rng g = rl_grade_rng(1);
    bad_heads bb, *b = &bb;
    memset(b, 0, sizeof *b);
    b->t = rl_grade_pick(&g, 3, 6);
    do
        b->a = rl_grade_pick(&g, 2, 3 * b->t);
    while (b->a % b->t == 0);
    int64_t hd = rl_grade_pick(&g, 2, 5);
    b->h = b->a * hd;
    if (b->h == b->t)
        b->h = b->a * ++hd;
    b->a2 = b->t * rl_grade_pick(&g, 1, 2);
    b->h2 = b->a2 * rl_grade_pick(&g, 2, 4) + 1; /* h not divisible by a */
    printf("cases: a = %d heads, t = %d, h = %lld; a = %d, t = %d, h = %lld\n", b->a, b->t, (long long)b->h, b->a2,
           b->t, (long long)b->h2);
    snprintf(g_case, sizeof g_case, "refusals");
    refuse_res *o = refuse_run("tp_attn_init refusals", b->t, bad_heads_rank, b);
    expect_none(T_RUN, "tp_attn_init with heads that cannot be split:");
    for (int r = 0; r < b->t; r++) {
        const char *m = o->msg[r][0];
        ck_assert_msg(o->rc[r][0] == RL_ERR_ARG, "rank %d: tp_attn_init with a = %d heads on t = %d ranks (h = %lld) "
                      "must return RL_ERR_ARG; got %d (%s)%s%s", r, b->a, b->t, (long long)b->h, o->rc[r][0],
                      rl_status_name(o->rc[r][0]), m[0] ? ": " : "", m);
        ck_assert_msg(names_number(m, b->a) && names_number(m, b->t), "rank %d: the message must name the head count "
                      "a = %d and t = %d (handout: 'refuse it with a message naming a and t'); it was '%s'", r, b->a,
                      b->t, m[0] ? m : "(empty)");
        m = o->msg[r][1];
        ck_assert_msg(o->rc[r][1] == RL_ERR_ARG && m[0], "rank %d: tp_attn_init with h = %lld not divisible by a = %d "
                      "heads must return RL_ERR_ARG with a message (header: 'or h by heads'); got %d (%s)%s%s", r,
                      (long long)b->h2, b->a2, o->rc[r][1], rl_status_name(o->rc[r][1]), m[0] ? ": " : ", no message",
                      m);
    }
    free(o);
}
END_TEST

/* ================================================================== 30.3 sequence parallelism */

/* The half-block y = x + MLP(LayerNorm(x)) on [s, b, h] (rows s·b), TP and TP+SP on t ranks. */
typedef struct sp_case {
    int t;
    int64_t s, b, h;
    mlp_ref d;                 /* the MLP's weights; its x and dy are unused */
    float *gamma, *beta, *x, *dy, *y, *dx;  /* dense block data and results [s·b, h] */
    int64_t act[2][MP_MAX_RANKS], bwd[2][MP_MAX_RANKS]; /* per rank: activations held after the block forward
                                                           and added by its backward (TP, SP; from the run's
                                                           record) */
} sp_case;

static void sp_case_free(sp_case *c)
{
    mlp_ref_free(&c->d);
    free(c->gamma), free(c->beta), free(c->x), free(c->dy), free(c->y), free(c->dx);
}

/* Random block data and the dense block's output, input gradient and MLP gradients. */
static void sp_case_make(sp_case *c, int t, int64_t s, int64_t b, int64_t h, rl_rng *g)
{
    memset(c, 0, sizeof *c);
    c->t = t, c->s = s, c->b = b, c->h = h;
    int64_t rows = s * b, n = rows * h, sh[2] = { rows, h };
    c->gamma = fnew(h), c->beta = fnew(h), c->x = fnew(n), c->dy = fnew(n), c->y = fnew(n), c->dx = fnew(n);
    fill(c->gamma, h, g, 0.1);
    for (int64_t i = 0; i < h; i++)
        c->gamma[i] += 1.0f;
    fill(c->beta, h, g, 0.1);
    fill(c->x, n, g, 1.0);
    fill(c->dy, n, g, 1.0);
    snprintf(g_case, sizeof g_case, "t = %d, s = %lld, b = %lld, h = %lld (s/t = %lld)", t, (long long)s, (long long)b,
             (long long)h, (long long)(s / t));
    mlp_ref_fill(&c->d, rows, h, g); /* random weights; its x and dy become LayerNorm(x) and dy below */
    if (!rl_grade_judging()) /* the child: no reference */
        return;
    /* the MLP runs on LayerNorm(x) with the block's dy */
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *x = tnew(ctx, "x", 2, sh, "sb,h", c->x), *ln = tnew(ctx, "ln", 2, sh, "sb,h", NULL);
    rl_tensor *ga = tnew(ctx, "gamma", 1, &h, "h", c->gamma), *be = tnew(ctx, "beta", 1, &h, "h", c->beta);
    rl_tensor *mu = tnew(ctx, "mean", 1, &rows, "sb", NULL), *rs = tnew(ctx, "rstd", 1, &rows, "sb", NULL);
    rl_tensor *dln = tnew(ctx, "dln", 2, sh, "sb,h", NULL), *dx = tnew(ctx, "dx", 2, sh, "sb,h", NULL);
    rl_tensor *dg = tnew(ctx, "dg", 1, &h, "h", NULL), *db = tnew(ctx, "db", 1, &h, "h", NULL);
    int rc = rl_layernorm_forward(ctx, x, ga, be, 1e-5f, ln, mu, rs);
    float *lnv = fnew(n);
    rc = rc ? rc : rl_tensor_to_f32(ln, lnv, n);
    memcpy(c->d.x, lnv, sizeof(float) * (size_t)n);
    memcpy(c->d.dy, c->dy, sizeof(float) * (size_t)n);
    rc = rc ? rc : mlp_dense(ctx, &c->d);
    for (int64_t i = 0; i < n; i++)
        c->y[i] = c->x[i] + c->d.y[i];
    rc = rc ? rc : rl_tensor_from_f32(dln, c->d.dx, n);
    rc = rc ? rc : rl_layernorm_backward(ctx, x, ga, mu, rs, dln, dx, dg, db);
    rc = rc ? rc : rl_tensor_to_f32(dx, c->dx, n);
    for (int64_t i = 0; i < n; i++)
        c->dx[i] += c->dy[i];
    free(lnv);
    rl_tensor *ts[] = { x, ln, ga, be, mu, rs, dln, dx, dg, db };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        rl_tensor_free(ts[i]);
    rl_ctx_free_standalone(ctx);
    ck_assert_msg(rc == 0, "grader: the dense block reference failed (%d)", rc);
}


/* One block (TP or SP) of an SP run, as a rank recorded it. */
typedef struct sp_part_rec {
    int init_done, init_rc;    /* tp_block_init returned, with this status */
    int fwd_done, fwd_rc;
    int64_t act0, act1;        /* activation bytes before and after the block forward */
    int bwd_done, bwd_rc;      /* (after a forward that returned 0) */
    int64_t act_end, dln;      /* activation bytes after the backward (the forward when it failed), dln's bytes */
    tsnap x_in, hpre, hact;    /* SP: the MLP's saved tensors after the backward */
    rl_grade_blob y, dx;       /* SP: y and dx after the backward (both returned 0) */
    tsnap g[4];                /* SP: dw1, db1, dw2, db2 then */
} sp_part_rec;

typedef struct sp_res {
    run_head head;
    sp_part_rec r[MAXW][2];    /* per world rank: TP, SP */
} sp_res;

static int sp_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    sp_res *o = G->o;
    void *cv;
    char who[64];
    rl_comm *w = job_comm(ctx, G, &cv, who, sizeof who);
    if (!w)
        return 0;
    const sp_case *c = cv;
    const mlp_ref *d = &c->d;
    int t = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t h = c->h, f = 4 * h, sl = c->s / t, rows_l = sl * c->b, r0 = r * rows_l;
    int64_t full[3] = { c->s, c->b, h }, loc[3] = { sl, c->b, h }, s1[2] = { h, f }, s2[2] = { f, h };
    rl_tensor *A = tnew(ctx, "A", 2, s1, "h,4h", d->A), *a = tnew(ctx, "a", 1, &f, "4h", d->a);
    rl_tensor *B = tnew(ctx, "B", 2, s2, "4h,h", d->B), *cc = tnew(ctx, "c", 1, &h, "h", d->c);
    rl_mem_account *acc = rl_ctx_mem(ctx);
    int rc = 0;
    for (int sp = 0; sp <= 1 && !rc; sp++) {
        sp_part_rec *P = &o->r[rl_rank(ctx)][sp];
        const int64_t *shape = sp ? loc : full;
        int64_t o0 = sp ? r0 * h : 0;
        const char *dn = sp ? "s/t,b,h" : "s,b,h";
        rl_tensor *x = tnew(ctx, "x", 3, shape, dn, c->x + o0), *dy = tnew(ctx, "dy", 3, shape, dn, c->dy + o0);
        rl_tensor *y = tnew(ctx, "y", 3, shape, dn, NULL), *dx = tnew(ctx, "dx", 3, shape, dn, NULL);
        tp_block blk;
        memset(&blk, 0, sizeof blk);
        rl_clear_error(ctx);
        rc = lerr(ctx, &o->head, who, tp_block_init(&blk, w, A, a, B, cc, sp, 30),
                  sp ? "tp_block_init (tp_mlp_init, SP)" : "tp_block_init (tp_mlp_init)");
        P->init_rc = rc, P->init_done = 1;
        if (!rc) {
            rl_tensor_from_f32(blk.gamma, c->gamma, h);
            rl_tensor_from_f32(blk.beta, c->beta, h);
            P->act0 = acc->current[RL_MEM_ACTIVATION];
            rl_tensor_fill(y, 6.0f);
            rl_set_tag(ctx, RL_TAG_STEP, 1 + 2 * sp);
            rl_clear_error(ctx);
            rc = lerr(ctx, &o->head, who, tp_block_forward(&blk, x, y), sp ? "the SP block forward (sp_mlp_forward)"
                                                                          : "the TP block forward (tp_mlp_forward)");
            rl_set_tag(ctx, RL_TAG_STEP, -1);
            P->act1 = acc->current[RL_MEM_ACTIVATION];
            P->fwd_rc = rc, P->fwd_done = 1;
            if (!rc) {
                rl_tensor_fill(dx, -2.0f);
                rl_set_tag(ctx, RL_TAG_STEP, 2 + 2 * sp);
                rl_clear_error(ctx);
                rc = lerr(ctx, &o->head, who, tp_block_backward(&blk, dy, dx),
                          sp ? "the SP block backward (sp_mlp_backward)" : "the TP block backward (tp_mlp_backward)");
                rl_set_tag(ctx, RL_TAG_STEP, -1);
                P->bwd_rc = rc, P->bwd_done = 1;
            }
            if (sp && !rc) /* the gathered input and the FFN shards: [s, b, ..] after the all-gather */
                P->x_in = snap(blk.mlp.x_in, 0), P->hpre = snap(blk.mlp.hpre, 0), P->hact = snap(blk.mlp.hact, 0);
            P->act_end = acc->current[RL_MEM_ACTIVATION];
            P->dln = blk.dln ? rl_tensor_bytes(blk.dln) : 0;
        }
        if (!rc && sp) {
            P->y = keep_vals(y), P->dx = keep_vals(dx);
            P->g[0] = snap(blk.mlp.dw1, 1), P->g[1] = snap(blk.mlp.db1, 1), P->g[2] = snap(blk.mlp.dw2, 1),
            P->g[3] = snap(blk.mlp.db2, 1);
        }
        if (rc) /* a call of the learner's code may still be in flight: leave its tensors to the run */
            return 0;
        tp_block_free(&blk);
        rl_tensor_free(x), rl_tensor_free(dy), rl_tensor_free(y), rl_tensor_free(dx);
    }
    rl_tensor_free(A), rl_tensor_free(a), rl_tensor_free(B), rl_tensor_free(cc);
    job_comm_free(ctx, w);
    return 0;
}

/* The checks of one rank of an SP run (rank r of t, label who), from what it recorded; its
 * activation figures go to the case. */
static void sp_rank_check(const sp_part_rec *R, sp_case *c, int t, int r, const char *who)
{
    const mlp_ref *d = &c->d;
    int64_t h = c->h, f = 4 * h, sl = c->s / t, rows_l = sl * c->b, r0 = r * rows_l;
    int rc = 0;
    for (int sp = 0; sp <= 1 && !rc; sp++) {
        const sp_part_rec *P = &R[sp];
        int64_t n = (sp ? rows_l : c->s * c->b) * h, o = sp ? r0 * h : 0;
        if (!P->init_done)
            return;
        if (!(rc = P->init_rc)) {
            if (!P->fwd_done)
                return;
            if (!(rc = P->fwd_rc)) {
                if (!P->bwd_done)
                    return;
                rc = P->bwd_rc;
            }
            c->act[sp][r] = P->act1 - P->act0;
            if (sp && !rc) /* the gathered input and the FFN shards: [s, b, ..] after the all-gather */
                tp_check_saved(&P->x_in, &P->hpre, &P->hact, who, c->s, c->b, "s,b", h, f / t, 0);
            c->bwd[sp][r] = P->act_end - P->act1 - P->dln;
        }
        if (!rc && sp) {
            double ey = rel_to(vals_of(P->y, n), c->y + o, n, 1e-2), ex = rel_to(vals_of(P->dx, n), c->dx + o, n, 1e-2);
            if (!(ey < TOL))
                problem(T_FWD, "%s: the SP block's output (rows %lld .. %lld of [s*b, h]: this rank's s/t "
                        "positions) differs from the dense x + MLP(LayerNorm(x)) by %.3g (relative)", who, (long long)r0,
                        (long long)(r0 + rows_l - 1), ey);
            if (!(ex < TOL))
                problem(T_FWD, "%s: the SP block's input gradient (this rank's rows) differs from the dense one "
                        "by %.3g (relative; dx held -2 before the call)", who, ex);
            /* the MLP's shards: dw1, db1, dw2 as under TP (the gathered dy), db2 over this rank's rows */
            const char *which;
            tview tv[4];
            const tview *g[4];
            grads_of(P->g, tv, g);
            double eg = tp_grad_err(g, d, t, r, 1, G_DW1 | G_DB1 | G_DW2, &which);
            if (!(eg < TOL))
                problem(T_BWD, "%s: under SP %s differs from the slice of the dense gradient by %.3g (relative): "
                        "the column- and row-parallel weights see the whole sequence (the gathered x and dy)", who, which,
                        eg);
            const tview *db2 = g[3];
            if (db2 && db2->numel == h) {
                double worst = 0, whole = 0;
                for (int64_t k = 0; k < h; k++) {
                    double s = 0;
                    for (int64_t i = 0; i < rows_l; i++)
                        s += c->dy[(r0 + i) * h + k];
                    double e = fabs(db2->v[k] - s) / fmax(fabs(s), 1e-2);
                    double e2 = fabs(db2->v[k] - d->dc[k]) / fmax(fabs(d->dc[k]), 1e-2);
                    worst = e <= worst ? worst : (e == e ? e : INFINITY);
                    whole = e2 <= whole ? whole : (e2 == e2 ? e2 : INFINITY);
                }
                if (!(worst < TOL))
                    problem(T_BWD, "%s: under SP db2 differs from the sum of dy over this rank's %lld rows by %.3g "
                            "(relative)%s (handout: 'under SP, db2 ... are partial sums over this rank's rows')", who,
                            (long long)rows_l, worst, whole < TOL ? "; it is the sum over the WHOLE sequence: c's "
                                                                     "gradient came from the gathered dy" : "");
            } else {
                problem(T_BWD, "%s: db2 is missing or not [h]", who);
            }
        }
    }
}

/* Runs an SP job (TP, then SP blocks) in the child and checks every rank from its record;
 * the trace is returned when tr is given. */
static void sp_go(job *J, rl_trace **tr)
{
    sp_res *o = job_run("tp_block", J, sp_rank, sizeof *o, tr);
    for (int wr = 0; wr < J->n * J->ng; wr++) {
        char who[64];
        job_who(J, wr, who, sizeof who);
        sp_rank_check(o->r[wr], J->c[J->color[wr]], J->n, J->key[wr], who);
    }
    free(o);
}
/* Random SP cases: t in 2..6, s a multiple of t, 4h divisible by t. */
static void sp_random_runs(int n, void (*after)(sp_case *, rl_trace *))
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text line = { 0 };
    for (int i = 0; i < n; i++) {
        sp_case *c = calloc(1, sizeof *c);
        int t = rl_grade_pick(&g, 2, 6);
        sp_case_make(c, t, (int64_t)t * rl_grade_pick(&g, 1, 3), rl_grade_pick(&g, 1, 3), pick_h(&g, t, 6, 32), &g);
        rl_grade_text_add(&line, "%s%s", i ? "; " : "cases: ", g_case);
        rl_trace *tr = NULL;
        job J;
        job_make(&J, t, 1, NULL, c, NULL);
        sp_go(&J, after ? &tr : NULL);
        if (after)
            after(c, tr);
        rl_trace_free(tr);
        sp_case_free(c);
        free(c);
    }
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
}

START_TEST(t_sp_outputs)
{
    sp_random_runs(2, NULL);
    expect_none(T_RUN, "the SP block run failed:");
    expect_none(T_FWD, "SP block results:");
    expect_none(T_SHARD, "SP shapes (handout 30.3 Shape: x [s/t, b, h] -> all-gather -> x_in [s, b, h]; hpre, hact "
                         "[s, b, 4h/t]):");
}
END_TEST

START_TEST(t_sp_grads)
{
    sp_random_runs(2, NULL);
    expect_none(T_RUN, "the SP block run failed:");
    expect_none(T_BWD, "SP gradient shards:");
}
END_TEST

/* The collectives of the four phases (TP and SP forward, backward) on `ranks` world ranks. */
static void sp_comm_check(const sp_case *c, const rl_trace *tr, int ranks)
{
    static const char *const ar[1] = { "all_reduce" }, *const agrs[2] = { "all_gather", "reduce_scatter" };
    double bytes = 4.0 * (double)(c->s * c->b * c->h);
    expect_colls(tr, ranks, 1, "TP forward", ar, 1, bytes, 0, "plain TP: one all-reduce");
    expect_colls(tr, ranks, 2, "TP backward", ar, 1, bytes, 0, "plain TP: one all-reduce");
    expect_colls(tr, ranks, 3, "SP forward", agrs, 2, bytes, 0,
                 "f under SP all-gathers x along s before the column-parallel linear, g reduce-scatters after the "
                 "row-parallel one: the same b*s*h elements as TP's all-reduce, no all-reduce");
    expect_colls(tr, ranks, 4, "SP backward", agrs, 2, bytes, 0,
                 "g's backward all-gathers dy, f's reduce-scatters the partial dx: b*s*h elements each");
}

/* sp_comm_check on the case's own t ranks (the after-run hook of sp_random_runs). */
static void sp_comm_after(sp_case *c, rl_trace *tr) { sp_comm_check(c, tr, c->t); }

START_TEST(t_sp_volume)
{
    sp_random_runs(2, sp_comm_after);
    expect_none(T_RUN, "the SP block run failed:");
    expect_none(T_COMM, "SP collectives, from the run's trace (handout 30.3: 'all-gather before the column-parallel "
                        "linear, reduce-scatter after the row-parallel one'; 'the bytes are the same as TP's'):");
}
END_TEST

/* 30.3 inside a larger world: two TP groups of t (members drawn at random), each with its own
 * weights and data, TP and SP blocks per group, every collective on the group's communicator. */
START_TEST(t_sp_groups)
{
    rl_rng g = rl_grade_rng(2);
    int t = rl_grade_pick(&g, 2, 4);
    int64_t s = (int64_t)t * rl_grade_pick(&g, 1, 2), b = rl_grade_pick(&g, 1, 2), h = pick_h(&g, t, 4, 16);
    sp_case *c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = calloc(1, sizeof *c[k]);
        sp_case_make(c[k], t, s, b, h, &g);
    }
    job J;
    job_make(&J, t, 2, &g, c[0], c[1]);
    rl_grade_text grp = { 0 };
    job_text(&J, &grp);
    snprintf(g_case, sizeof g_case, "t = %d, s = %lld, b = %lld, h = %lld; %s", t, (long long)s, (long long)b,
             (long long)h, rl_grade_text_str(&grp));
    printf("cases: %s\n", g_case);
    rl_grade_text_free(&grp);
    rl_trace *tr = NULL;
    sp_go(&J, &tr);
    sp_comm_check(c[0], tr, 2 * t);
    expect_on_group(tr, &J, 1, 4, "mp.h: 'tp: the tensor-parallel group': SP's all-gathers and reduce-scatters "
                    "run over the TP group, not over the world");
    rl_trace_free(tr);
    for (int k = 0; k < 2; k++) {
        sp_case_free(c[k]);
        free(c[k]);
    }
    const char *why = "two TP groups, each with its own weights and data:";
    expect_none(T_RUN, "the SP block run on two TP groups failed" GROUP_NOTE ":");
    expect_none(T_SHARD, why);
    expect_none(T_COMM, "collectives of two TP groups under SP, from the run's trace (each group's on its own "
                        "communicator):");
    expect_none(T_FWD, why);
    expect_none(T_BWD, why);
}
END_TEST

static void sp_mem_after(sp_case *c, rl_trace *tr)
{
    (void)tr;
    int t = c->t;
    int64_t sb = c->s * c->b, h = c->h, fl = 4 * h / t;
    int64_t ln_tp = 4 * (2 * sb * h + 2 * sb), ln_sp = 4 * (2 * (sb / t) * h + 2 * (sb / t));
    int64_t sp_max = ln_sp + 4 * (sb * h + 2 * sb * fl), tp_max = ln_tp + 4 * (sb * h + 2 * sb * fl);
    printf("%s: activations after the block forward, rank 0: TP %lld B, SP %lld B\n", g_case, (long long)c->act[0][0],
           (long long)c->act[1][0]);
    for (int r = 0; r < t; r++) {
        /* a leak first: with a temporary left behind, the comparison of TP and SP says nothing */
        int leak = 0;
        if (c->act[1][r] > sp_max)
            leak = 1, problem(T_MEM, "rank %d: under SP the block holds %lld B after its forward, %lld B more than the "
                              "%lld B of its saved tensors (the LayerNorm region [s/t, b, h], the gathered x_in [s, b, "
                              "h], hpre and hact [s, b, 4h/t]): a temporary of the forward (the partial output [s, b, "
                              "h] before the reduce-scatter ...) was not freed", r, (long long)c->act[1][r],
                              (long long)(c->act[1][r] - sp_max), (long long)sp_max);
        if (c->act[0][r] > tp_max)
            leak = 1, problem(T_MEM, "rank %d: under TP the block holds %lld B after its forward, %lld B more than the "
                              "%lld B of its saved tensors: a temporary of the forward was not freed", r,
                              (long long)c->act[0][r], (long long)(c->act[0][r] - tp_max), (long long)tp_max);
        if (!leak && c->act[1][r] > c->act[0][r] - (ln_tp - ln_sp))
            problem(T_MEM, "rank %d: the block holds %lld B of activations after its forward under SP and %lld B "
                    "under TP; sharding the LayerNorm region along s saves %lld B (x, LayerNorm out, mean, rstd: "
                    "[s, b] -> [s/t, b])", r, (long long)c->act[1][r], (long long)c->act[0][r],
                    (long long)(ln_tp - ln_sp));
        for (int sp = 0; sp <= 1; sp++)
            if (c->bwd[sp][r] > 0)
                problem(T_MEM, "rank %d: the %s backward left %lld B of activations allocated besides the block's own "
                        "input gradient: a temporary (the gathered dy, the partial dx ...) was not freed", r,
                        sp ? "SP" : "TP", (long long)c->bwd[sp][r]);
    }
}

START_TEST(t_sp_memory)
{
    sp_random_runs(2, sp_mem_after);
    expect_none(T_RUN, "the SP block run failed:");
    expect_none(T_MEM, "activation memory of the block (handout 30.3 Cost: 'the LayerNorm/dropout/residual region is "
                       "stored once per rank instead of t times'):");
}
END_TEST

START_TEST(t_ans_act)
{
    h_numbers n = my_numbers();
    rl_calc_act_in in = { n.h4_s, n.h4_b, n.h4_h, n.h4_h / 128, n.h4_t, 0, RL_CALC_RECOMPUTE_NONE, 1 };
    rl_calc_act_out o, osp;
    ck_assert(rl_calc_activation(&in, &o, NULL, 0) == 0);
    in.sp = 1;
    ck_assert(rl_calc_activation(&in, &osp, NULL, 0) == 0);
    CHECK_NUM("h4_tp_gb", o.per_layer / 1e9, 0.01);
    CHECK_NUM("h4_tp_sp_gb", osp.per_layer / 1e9, 0.01);
    /* the longest s for which one layer with TP + SP stays within 1 GB: sbh/t·(34 + 5as/h) grows
     * with s², so bisect on the whole numbers */
    double lo = 0, hi = 1e7;
    while (hi - lo > 1) {
        in.s = floor((lo + hi) / 2);
        ck_assert(rl_calc_activation(&in, &osp, NULL, 0) == 0);
        *(osp.per_layer <= 1e9 ? &lo : &hi) = in.s;
    }
    CHECK_NUM("h4_max_s_sp", lo, 0.001);
}
END_TEST

/* ================================================================== 30.4 pipeline schedules */

typedef struct pp_case { rl_pp_kind kind; int p, m, v; } pp_case;

static const char *pp_case_text(const pp_case *c, char *buf, size_t size)
{
    if (c->kind == RL_PP_INTERLEAVED)
        snprintf(buf, size, "interleaved p = %d, m = %d, v = %d", c->p, c->m, c->v);
    else
        snprintf(buf, size, "%s p = %d, m = %d", rl_pp_kind_name(c->kind), c->p, c->m);
    return buf;
}

/* A random schedule case of kind k: p in 1..6; GPipe/1F1B m in 1..2p+2, m < p often; interleaved
 * v in 2..4 and m = p, 2p or 3p. */
static pp_case pp_draw(rl_rng *g, rl_pp_kind k, int pmin, int pmax)
{
    pp_case c = { k, rl_grade_pick(g, pmin, pmax), 1, 1 };
    if (k == RL_PP_INTERLEAVED) {
        c.v = rl_grade_pick(g, 2, MP_MAX_CHUNKS);
        c.m = c.p * rl_grade_pick(g, 1, 3);
    } else {
        int kind = rl_grade_pick(g, 0, 3); /* m < p - 1, m = p - 1, m = p, m > p */
        c.m = kind == 0 && c.p > 2 ? rl_grade_pick(g, 1, c.p - 2) : kind <= 1 && c.p > 1 ? c.p - 1
              : kind == 2 ? c.p : rl_grade_pick(g, c.p + 1, 2 * c.p + 2);
    }
    return c;
}

/* The fixed edge cases and n random ones (every kind), into cs; returns the count. */
static int pp_cases(rl_rng *g, pp_case *cs, int n)
{
    static const pp_case edge[] = {
        { RL_PP_1F1B, 4, 2, 1 }, { RL_PP_1F1B, 4, 3, 1 }, { RL_PP_1F1B, 1, 3, 1 }, { RL_PP_GPIPE, 1, 2, 1 },
        { RL_PP_GPIPE, 5, 1, 1 }, { RL_PP_INTERLEAVED, 2, 4, 3 }, { RL_PP_INTERLEAVED, 3, 3, 2 },
        { RL_PP_INTERLEAVED, 2, 2, 4 }, { RL_PP_INTERLEAVED, 4, 8, 2 },
    };
    int k = 0;
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        cs[k++] = edge[i];
    for (int i = 0; i < n; i++)
        cs[k++] = pp_draw(g, (rl_pp_kind)(i % 3), i % 3 == RL_PP_INTERLEAVED ? 2 : 1, 6);
    return k;
}

/* Prints the cases on one line. */
static void pp_print_cases(const pp_case *cs, int n)
{
    rl_grade_text line = { 0 };
    char buf[96];
    for (int i = 0; i < n; i++)
        rl_grade_text_add(&line, "%s%s", i ? "; " : "cases: ", pp_case_text(&cs[i], buf, sizeof buf));
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
}

#define PP_MAXOPS 4096 /* ops of a stage's list a run keeps */

/* What pp_build_schedule returned, in the record: the schedule's fields and the op lists of
 * its first MP_MAX_RANKS stages, or NULL with the message in err. */
typedef struct sched_rec {
    int got;                   /* 1: a schedule came back */
    char err[1024];
    int kind, p, m, v, split_w;
    int nops[MP_MAX_RANKS];    /* as the code under test set them */
    rl_grade_blob ops[MP_MAX_RANKS]; /* the first PP_MAXOPS ops of each list (rl_pp_op) */
} sched_rec;

/* In a run: what pp_build_schedule returned (s, or NULL and err of errlen bytes) into *o. */
static void sched_keep(sched_rec *o, const rl_pp_schedule *s, const char *err, size_t errlen)
{
    size_t n = strnlen(err, errlen < sizeof o->err ? errlen : sizeof o->err - 1);
    o->got = s != NULL;
    memcpy(o->err, err, n);
    o->err[n] = 0;
    if (!s)
        return;
    o->kind = s->kind, o->p = s->p, o->m = s->m, o->v = s->v, o->split_w = s->split_w;
    for (int r = 0; r < s->p && r < MP_MAX_RANKS; r++) {
        int n = s->nops[r] < 0 ? 0 : s->nops[r] > PP_MAXOPS ? PP_MAXOPS : s->nops[r];
        o->nops[r] = s->nops[r];
        o->ops[r] = rl_grade_keep(s->ops[r], (size_t)n * sizeof(rl_pp_op));
    }
}

/* The schedule recorded in o, rebuilt (the caller frees it): NULL when none came back, or
 * with the reason in err when its fields make no schedule. */
static rl_pp_schedule *sched_of(const sched_rec *o, char *err, size_t errlen)
{
    if (!o->got)
        return NULL;
    if (o->p < 1 || o->p > MP_MAX_RANKS) {
        snprintf(err, errlen, "the schedule has p = %d stages (1 .. %d)", o->p, MP_MAX_RANKS);
        return NULL;
    }
    rl_pp_schedule *s = rl_pp_schedule_empty(o->p, o->m, o->v, o->split_w, err, errlen);
    if (!s)
        return NULL;
    s->kind = (rl_pp_kind)o->kind;
    for (int r = 0; r < o->p; r++) {
        int n = o->nops[r] < 0 ? 0 : o->nops[r] > PP_MAXOPS ? PP_MAXOPS : o->nops[r];
        const rl_pp_op *ops = rl_grade_blob_get(o->ops[r], sizeof(rl_pp_op), (size_t)n);
        for (int i = 0; i < n; i++)
            if (rl_pp_schedule_append(s, r, ops[i].kind, ops[i].mb, ops[i].chunk)) {
                snprintf(err, errlen, "grader: out of memory");
                rl_pp_schedule_free(s);
                return NULL;
            }
    }
    return s;
}

/* pp_build_schedule on each of n cases (errlen: the room of its err), in the child. */
typedef struct sched_job {
    const pp_case *cs;
    int n;
    size_t errlen;
} sched_job;

static void sched_produce(void *out, void *arg)
{
    const sched_job *j = arg;
    sched_rec *o = out;
    char *err = malloc(j->errlen);
    ck_assert(err != NULL);
    for (int i = 0; i < j->n; i++) {
        err[0] = 0;
        rl_pp_schedule *s = pp_build_schedule(j->cs[i].kind, j->cs[i].p, j->cs[i].m, j->cs[i].v, err, j->errlen);
        sched_keep(&o[i], s, err, j->errlen);
        rl_pp_schedule_free(s);
    }
    free(err);
}

/* What pp_build_schedule returned for each of n cases (err of errlen bytes), from the record:
 * a copy with the messages ended (the caller frees it). */
static sched_rec *sched_run(const pp_case *cs, int n, size_t errlen)
{
    sched_job j = { cs, n, errlen };
    const sched_rec *o = rl_grade_run("pp_build_schedule", (size_t)n * sizeof *o, sched_produce, &j);
    sched_rec *c = malloc((size_t)n * sizeof *c);
    ck_assert(c != NULL);
    memcpy(c, o, (size_t)n * sizeof *c);
    for (int i = 0; i < n; i++)
        c[i].err[sizeof c[i].err - 1] = 0;
    return c;
}

/* The learner's schedule for a case (o: what pp_build_schedule returned), NULL with the reason
 * in *why (caller frees). */
static rl_pp_schedule *pp_learner(const pp_case *c, const sched_rec *o, rl_grade_text *why)
{
    char err[256] = "";
    char cb[96];
    rl_pp_schedule *s = NULL;
    if (!o->got)
        rl_grade_text_add(why, "\n  - %s: pp_build_schedule returned NULL: %s", pp_case_text(c, cb, sizeof cb),
               o->err[0] ? o->err : "(no message)");
    else if (o->p != c->p || o->m != c->m || o->v != c->v || o->split_w || o->kind != (int)c->kind)
        rl_grade_text_add(why, "\n  - %s: the schedule says kind = %s, p = %d, m = %d, v = %d, split_w = %d; expected kind = %s, "
               "p = %d, m = %d, v = %d (1 for GPipe and 1F1B), split_w = 0 (the TODO: 's->kind = kind'; "
               "rl_pp_schedule_empty leaves it custom, and the pipeline view names the schedule by it)",
               pp_case_text(c, cb, sizeof cb), rl_pp_kind_name((rl_pp_kind)o->kind), o->p, o->m, o->v, o->split_w,
               rl_pp_kind_name(c->kind), c->p, c->m, c->v);
    else if (!(s = sched_of(o, err, sizeof err)))
        rl_grade_text_add(why, "\n  - %s: grader: %s", pp_case_text(c, cb, sizeof cb), err);
    return s;
}

START_TEST(t_pp_validate)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[32];
    int n = pp_cases(&g, cs, 9);
    pp_print_cases(cs, n);
    sched_rec *o = sched_run(cs, n, 1024);
    rl_grade_text bad = { 0 };
    for (int i = 0; i < n; i++) {
        rl_pp_schedule *s = pp_learner(&cs[i], &o[i], &bad);
        if (!s)
            continue;
        char err[4096], cb[96];
        if (rl_pp_validate(s, err, sizeof err)) {
            int st = 0;
            sscanf(err, "stage %d", &st);
            st = st >= 0 && st < s->p ? st : 0;
            size_t n0 = 16 * (size_t)s->nops[st] + 16;
            char *l0 = malloc(n0);
            rl_grade_text_add(&bad, "\n  - %s: rl_pp_validate: %s (stage %d's list: %s)", pp_case_text(&cs[i], cb, sizeof cb), err,
                   st, rl_pp_stage_string(s, st, l0, n0));
            free(l0);
        }
        rl_pp_schedule_free(s);
    }
    free(o);
    ck_assert_msg(!bad.len, "pp_build_schedule's schedules (the kind, p, m and v asked for; rl_pp_validate: each op "
                  "once per stage, B after its F, messages received in the order they are sent, no deadlock):%s",
                  rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

/* "F3" or, with chunks, "F3.1". */
static const char *op_text(const rl_pp_schedule *s, const rl_pp_op *o, char *buf, size_t size)
{
    if (s->v > 1)
        snprintf(buf, size, "%c%d.%d", o->kind, o->mb, o->chunk);
    else
        snprintf(buf, size, "%c%d", o->kind, o->mb);
    return buf;
}

/* The first stage whose list differs from the runtime's, as text; 0 when all match. It names the
 * first op that differs and the op the contract puts there, with the learner's list up to it —
 * not the expected list, nor the rule as a formula (the contract states it in words); in exam
 * mode only where it differs. */
static int pp_diff(const rl_pp_schedule *s, const rl_pp_schedule *e, const pp_case *c, rl_grade_text *out)
{
    char cb[96];
    for (int r = 0; r < e->p; r++) {
        int i = 0;
        while (i < s->nops[r] && i < e->nops[r] && s->ops[r][i].kind == e->ops[r][i].kind &&
               s->ops[r][i].mb == e->ops[r][i].mb && s->ops[r][i].chunk == e->ops[r][i].chunk)
            i++;
        if (i == s->nops[r] && i == e->nops[r])
            continue;
        size_t n = 16 * (size_t)s->nops[r] + 16;
        char *got = malloc(n), yours[24] = "(nothing)", want[24] = "(nothing)";
        rl_pp_stage_string(s, r, got, n);
        char *cut = got; /* the learner's list up to and with the op that differs */
        for (int k = 0; k <= i && cut; k++)
            cut = strchr(cut + (k > 0), ' ');
        if (cut)
            *cut = 0;
        if (i < s->nops[r])
            op_text(s, &s->ops[r][i], yours, sizeof yours);
        if (i < e->nops[r])
            op_text(e, &e->ops[r][i], want, sizeof want);
        if (rl_grade_exam())
            rl_grade_text_add(out, "\n  - %s, stage %d: the list's order differs from the contract's", pp_case_text(c, cb,
                              sizeof cb), r);
        else
            rl_grade_text_add(out, "\n  - %s, stage %d differs at op %d: yours is %s, the contract's order puts %s there "
                              "(your list up to it: %s)", pp_case_text(c, cb, sizeof cb), r, i, yours, want, got);
        free(got);
        return 1;
    }
    return 0;
}

START_TEST(t_pp_order)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[32];
    int n = pp_cases(&g, cs, 9);
    pp_print_cases(cs, n);
    sched_rec *o = sched_run(cs, n, 1024);
    rl_grade_text bad = { 0 };
    for (int i = 0; i < n; i++) {
        rl_pp_schedule *s = pp_learner(&cs[i], &o[i], &bad);
        char err[256];
        rl_pp_schedule *e = rl_pp_schedule_new(cs[i].kind, cs[i].p, cs[i].m, cs[i].v, err, sizeof err);
        ck_assert_msg(e != NULL, "grader: rl_pp_schedule_new: %s", err);
        if (s && e)
            pp_diff(s, e, &cs[i], &bad);
        rl_pp_schedule_free(s);
        rl_pp_schedule_free(e);
    }
    free(o);
    ck_assert_msg(!bad.len, "op lists that are not in the order the handout fixes:%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

START_TEST(t_pp_refuse)
{
    rl_rng g = rl_grade_rng(1);
    int p = rl_grade_pick(&g, 2, 5), m = rl_grade_pick(&g, 1, 8), pm = p * rl_grade_pick(&g, 1, 3);
    int v = rl_grade_pick(&g, 2, MP_MAX_CHUNKS);
    struct { pp_case c; const char *why; } bad[] = {
        { { RL_PP_GPIPE, 0, m, 1 }, "p = 0 stages" },
        { { RL_PP_1F1B, p, 0, 1 }, "m = 0 micro-batches" },
        { { RL_PP_1F1B, p, MP_MAX_MB + 1, 1 }, "m above MP_MAX_MB" },
        { { RL_PP_GPIPE, p, m, v }, "v != 1 for GPipe (one chunk per stage)" },
        { { RL_PP_1F1B, p, m, v }, "v != 1 for 1F1B (one chunk per stage)" },
        { { RL_PP_INTERLEAVED, p, pm + 1, v }, "interleaved with m not a multiple of p" },
        { { RL_PP_INTERLEAVED, p, pm, 1 }, "interleaved with v = 1 (that is 1F1B)" },
        { { RL_PP_INTERLEAVED, p, pm, MP_MAX_CHUNKS + 1 }, "interleaved with v above MP_MAX_CHUNKS" },
        { { RL_PP_INTERLEAVED, 1, m, v }, "interleaved with p = 1 (one stage: nothing to interleave)" },
    };
    enum { NBAD = sizeof bad / sizeof bad[0] };
    printf("cases: p = %d, m = %d, v = %d; interleaved m = %d and %d\n", p, m, v, pm, pm + 1);
    rl_grade_text out = { 0 };
    pp_case good[3] = { { RL_PP_GPIPE, p, m, 1 }, { RL_PP_1F1B, p, m, 1 }, { RL_PP_INTERLEAVED, p, pm, v } };
    sched_rec *o = sched_run(good, 3, 1024);
    for (int i = 0; i < 3; i++) { /* refusing everything is not refusing bad arguments */
        rl_pp_schedule *s = pp_learner(&good[i], &o[i], &out);
        rl_pp_schedule_free(s);
    }
    free(o);
    ck_assert_msg(!out.len, "pp_build_schedule must build the valid schedules before its refusals count:%s",
                  rl_grade_text_str(&out));
    pp_case bc[NBAD];
    for (int i = 0; i < NBAD; i++)
        bc[i] = bad[i].c;
    o = sched_run(bc, NBAD, 512);
    for (int i = 0; i < NBAD; i++) {
        const pp_case *c = &bad[i].c;
        if (o[i].got || !o[i].err[0])
            rl_grade_text_add(&out, "\n  - %s (%s, p = %d, m = %d, v = %d): %s", bad[i].why, rl_pp_kind_name(c->kind), c->p,
                   c->m, c->v, o[i].got ? "a schedule came back" : "NULL but no message in err");
    }
    free(o);
    ck_assert_msg(!out.len, "pp_build_schedule must refuse bad arguments with NULL and a message in err (header: 'p, "
                  "m >= 1, m <= MP_MAX_MB; GPipe and 1F1B take v = 1 only; interleaved needs p >= 2, 2 <= v <= "
                  "MP_MAX_CHUNKS and m a multiple of p'):%s", rl_grade_text_str(&out));
    rl_grade_text_free(&out);
}
END_TEST

#define PPMAX MP_MAX_RANKS

/* A pipeline run: its measurements, its trace, after a deadlock the watchdog's flight dump
 * (every rank's last calls with their state, and the verdict), and the learner's schedule it
 * ran — all from the child's record. */
typedef struct pp_res {
    mp_stats st;
    rl_trace *tr;
    rl_diag_flight fl;
    int have_fl;
    rl_pp_schedule *learner;   /* the learner's schedule (a case without a given one), or NULL */
} pp_res;

/* Frees what a run left in r (its trace, flight records and schedule). */
static void pp_res_free(pp_res *r)
{
    rl_trace_free(r->tr);
    rl_diag_flight_free(&r->fl);
    rl_pp_schedule_free(r->learner);
    r->tr = NULL;
    r->have_fl = 0;
    r->learner = NULL;
}

/* What a stage of a pipeline step recorded. */
typedef struct pp_stage_rec {
    int order;                 /* when its pp_execute returned or pp_stage_new failed: 1, 2 ... (0: never) */
    int new_failed;            /* pp_stage_new returned NULL */
    int exec_rc;               /* pp_execute's status */
    char msg[1024];            /* rl_last_error then */
    int live;                  /* (mb, chunk) activations still held after pp_execute */
    int64_t left[RL_MEM_NCAT]; /* what pp_execute left allocated, by category */
    int64_t act_extra, comm_min; /* the stage's act_extra and comm_min (mp.h) */
    float loss;
} pp_stage_rec;

/* What a pipeline step left in the child's record. */
typedef struct pp_out {
    sched_rec sched;           /* the learner's schedule (a case without a given one) */
    int ran;                   /* the schedule validated and the step ran */
    char verr[1024];           /* else rl_pp_validate's refusal of it */
    int lr;                    /* rl_launch's status */
    int norder;                /* stages that have finished (pp_stage_rec.order) */
    char comm[2][32];          /* the names of act_comm and grad_comm */
    pp_stage_rec st[PPMAX];
    rl_grade_blob dw;          /* the stages' weight gradients: V·h·h floats by virtual stage */
    rl_grade_blob trace;
    int have_fl;               /* the watchdog fired and left its flight dump */
    char fl_verdict[512];
    int fl_nranks;
    rl_grade_blob fl_rec;      /* its records (rl_diag_rec) */
} pp_out;

/* A pipeline step in the child: its configuration, the schedule it runs, where its results go. */
typedef struct pp_job {
    const mp_config *cfg;
    const rl_pp_schedule *s;
    pp_out *o;
    float *dw;                 /* V·h·h */
    int V;
} pp_job;

/* One stage of the step (as mp_run's pipeline part): pp_execute on the stage, then what it
 * left, its gradients and its loss. */
static int pp_rank(rl_ctx *ctx, void *arg)
{
    pp_job *j = arg;
    const mp_config *cfg = j->cfg;
    const rl_pp_schedule *s = j->s;
    pp_out *o = j->o;
    int rank = rl_rank(ctx);
    pp_stage_rec *R = &o->st[rank];
    pp_stage *st = pp_stage_new(rl_comm_world(ctx), s->m, s->v, cfg->pp_rows, cfg->h, cfg->t_f, cfg->t_b, cfg->seed);
    if (!st) {
        R->new_failed = 1;
        snprintf(R->msg, sizeof R->msg, "%s", rl_last_error(ctx));
        R->order = __atomic_add_fetch(&o->norder, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (st->rank == 0) {
        snprintf(o->comm[0], sizeof o->comm[0], "%s", rl_comm_name(st->act_comm));
        snprintf(o->comm[1], sizeof o->comm[1], "%s", rl_comm_name(st->grad_comm));
    }
    rl_mem_account *acc = rl_ctx_mem(ctx);
    int64_t before[RL_MEM_NCAT]; /* nothing of this run used comm memory before the executor */
    memcpy(before, acc->current, sizeof before);
    rl_step_begin(ctx, 0);
    rl_clear_error(ctx);
    int e = pp_execute(st, s);
    rl_step_end(ctx);
    R->exec_rc = e;
    snprintf(R->msg, sizeof R->msg, "%s", rl_last_error(ctx));
    R->order = __atomic_add_fetch(&o->norder, 1, __ATOMIC_RELAXED);
    if (e)
        return 0; /* a call of it may still be in flight: leave the tensors to the run */
    for (int k = 0; k < RL_MEM_NCAT; k++)
        R->left[k] = acc->current[k] - before[k];
    R->act_extra = st->act_extra;
    R->comm_min = st->comm_min;
    for (int c = 0; c < st->v; c++) {
        int vs = c * st->p + st->rank;
        if (vs < j->V)
            rl_tensor_to_f32(st->dw[c], j->dw + (int64_t)vs * cfg->h * cfg->h, cfg->h * cfg->h);
    }
    R->loss = st->loss;
    R->live = st->live;
    pp_stage_free(st);
    return 0;
}

/* A pipeline step to run in the child: the case's configuration and its schedule (NULL: the
 * learner's pp_build_schedule). */
typedef struct pp_go {
    const mp_config *cfg;
    const rl_pp_schedule *sched;
    int v;                     /* chunks of the configuration */
} pp_go;

static void pp_produce(void *out, void *arg)
{
    const pp_go *g = arg;
    const mp_config *cfg = g->cfg;
    pp_out *o = out;
    rl_pp_schedule *own = NULL;
    const rl_pp_schedule *s = g->sched;
    char err[1024] = "";
    if (!s) {
        own = pp_build_schedule(cfg->schedule, cfg->p, cfg->m, g->v, err, sizeof err);
        sched_keep(&o->sched, own, err, sizeof err);
        if (!(s = own))
            return;
    }
    if (rl_pp_validate(s, err, sizeof err)) {
        snprintf(o->verr, sizeof o->verr, "%s", err);
        rl_pp_schedule_free(own);
        return;
    }
    o->ran = 1;
    int V = cfg->p * g->v;
    size_t ndw = (size_t)V * (size_t)(cfg->h * cfg->h);
    float *dw = calloc(ndw ? ndw : 1, sizeof *dw);
    ck_assert(dw != NULL);
    char dir[] = "grade30-pp-XXXXXX", path[64], fpath[96]; /* in the test's scratch folder */
    int have_dir = mkdtemp(dir) != NULL;
    rl_opts opt = cfg->opts;
    opt.tui = 0;
    opt.ranks = cfg->p;
    if (have_dir) {
        snprintf(path, sizeof path, "%s/pp.json", dir);
        opt.trace_path = path;
    }
    pp_job j = { cfg, s, o, dw, V };
    rl_trace *tr = NULL;
    o->lr = rl_launch(&opt, pp_rank, &j, &tr);
    o->dw = rl_grade_keep(dw, ndw * sizeof *dw);
    o->trace = rl_grade_keep_trace(tr);
    rl_trace_free(tr);
    free(dw);
    if (have_dir) {
        rl_diag_flight fl;
        memset(&fl, 0, sizeof fl);
        snprintf(fpath, sizeof fpath, "%s.flight.json", path);
        if (o->lr == RL_ERR_HANG && access(fpath, R_OK) == 0 && rl_diag_flight_load(fpath, &fl, err, sizeof err) == 0) {
            o->have_fl = 1;
            o->fl_nranks = fl.nranks;
            snprintf(o->fl_verdict, sizeof o->fl_verdict, "%s", fl.verdict);
            o->fl_rec = rl_grade_keep(fl.rec, (size_t)(fl.nrec > 0 ? fl.nrec : 0) * sizeof *fl.rec);
        }
        rl_diag_flight_free(&fl);
        unlink(fpath);
        unlink(path);
        rmdir(dir);
    }
    rl_pp_schedule_free(own);
}

/* One pipeline step on p stages, as mp_run's pipeline part runs it, in the child; sched: the
 * runtime's schedule (executor tests) or NULL (the learner's pp_build_schedule). The trace
 * goes to a temporary file so that a watchdog that fires leaves its flight dump beside it
 * (read back, then removed). res gets what mp_run would report — the first error, the
 * gradients against the unpipelined model's (the judge's), the bubble and in-flight figures
 * from the trace, what each stage's executor left — with the trace, the flight dump and the
 * learner's schedule. */
static void pp_run(const pp_case *c, const rl_pp_schedule *sched, uint64_t seed, int64_t rows, int64_t h,
                   pp_res *res)
{
    memset(res, 0, sizeof *res);
    mp_config cfg = mp_config_default();
    cfg.opts = gopts(c->p);
    cfg.p = c->p, cfg.m = c->m, cfg.v = c->v, cfg.schedule = c->kind;
    cfg.pp_rows = rows, cfg.h = h, cfg.seed = seed;
    cfg.pp_sched = sched;
    int v = sched ? sched->v : c->kind == RL_PP_INTERLEAVED ? c->v : 1;
    pp_go g = { &cfg, sched, v };
    const pp_out *rec = rl_grade_run("pp_execute", sizeof *rec, pp_produce, &g);
    pp_out *o = malloc(sizeof *o);
    ck_assert(o != NULL);
    *o = *rec;
    o->sched.err[sizeof o->sched.err - 1] = 0;
    o->comm[0][sizeof o->comm[0] - 1] = o->comm[1][sizeof o->comm[1] - 1] = 0;
    o->fl_verdict[sizeof o->fl_verdict - 1] = o->verr[sizeof o->verr - 1] = 0;
    for (int r = 0; r < PPMAX; r++)
        o->st[r].msg[sizeof o->st[r].msg - 1] = 0;
    mp_stats *st = &res->st;
    const rl_pp_schedule *s = sched;
    char err[1024] = "";
    if (!sched) {
        if (!o->sched.got) {
            st->rc[3] = strstr(o->sched.err, "not implemented") ? RL_ERR_NOT_IMPLEMENTED : RL_ERR_ARG;
            snprintf(st->err[3], sizeof st->err[3], "pp_build_schedule: %s",
                     o->sched.err[0] ? o->sched.err : "NULL with no message");
            free(o);
            return;
        }
        s = res->learner = sched_of(&o->sched, err, sizeof err);
    }
    int refused = !s || rl_pp_validate(s, err, sizeof err);
    if (!refused && !o->ran) /* the child refused the schedule it had */
        refused = 1, snprintf(err, sizeof err, "%s", o->verr);
    if (refused) {
        st->rc[3] = RL_ERR_ARG;
        snprintf(st->err[3], sizeof st->err[3], "rl_pp_validate refuses your %s schedule: %s",
                 rl_pp_kind_name(c->kind), err);
        free(o);
        return;
    }
    res->tr = rl_grade_trace(o->trace);
    snprintf(st->pp_comm[0], sizeof st->pp_comm[0], "%s", o->comm[0]);
    snprintf(st->pp_comm[1], sizeof st->pp_comm[1], "%s", o->comm[1]);
    int first = -1; /* the stage whose error came first (mp_run reports the first) */
    for (int r = 0; r < c->p && r < PPMAX; r++) {
        const pp_stage_rec *R = &o->st[r];
        if (R->order > 0 && (R->new_failed || R->exec_rc || R->live) && (first < 0 || R->order < o->st[first].order))
            first = r;
        memcpy(st->pp_left[r], R->left, sizeof st->pp_left[r]);
        st->pp_act_extra[r] = R->act_extra;
        st->pp_comm_min[r] = R->comm_min;
    }
    if (first >= 0) {
        const pp_stage_rec *R = &o->st[first];
        int code = R->new_failed ? RL_ERR_ARG : R->exec_rc ? R->exec_rc : RL_ERR_ARG;
        st->rc[3] = code;
        snprintf(st->err[3], sizeof st->err[3], "rank %d: %s returned %d (%s)%s%s", first,
                 R->new_failed ? "pp_stage_new" : R->exec_rc ? "pp_execute"
                 : "pp_execute (activations of some micro-batches were never released by a B)",
                 code, rl_status_name(code), R->msg[0] ? ": " : "", R->msg);
    }
    if (!o->lr && !st->rc[3]) {
        int V = c->p * v;
        size_t n = (size_t)V * (size_t)(h * h);
        const float *dw = rl_grade_blob_get(o->dw, sizeof(float), n);
        float *ref = rl_grade_judging() ? calloc(n ? n : 1, sizeof *ref) : NULL; /* only the checks read them */
        if (ref && !mp_pp_reference(&cfg, v, ref, &st->pp_ref_loss)) {
            double worst = 0;
            for (size_t i = 0; i < n; i++) {
                double d = fabs(dw[i] - ref[i]) / fmax(fabs(ref[i]), 1e-3);
                worst = d == d && d > worst ? d : (d == d ? worst : INFINITY);
            }
            st->pp_grad_err = worst;
            st->pp_loss = o->st[(V - 1) % c->p].loss;
        }
        free(ref);
        char e2[256] = "the run left no trace";
        if (!res->tr || rl_pp_bubble_from_trace(res->tr, 0, &st->pp, e2, sizeof e2)) {
            st->rc[3] = RL_ERR_ARG;
            snprintf(st->err[3], sizeof st->err[3], "no pipeline ops in the trace: %s", e2);
        }
    }
    st->run_rc[3] = o->lr;
    if (o->lr && !st->rc[3]) {
        st->rc[3] = o->lr;
        snprintf(st->err[3], sizeof st->err[3], "the run failed: %s%s", rl_status_name(o->lr),
                 o->lr == RL_ERR_HANG ? " (the watchdog found a send/recv or collective that never completed: a "
                                        "deadlock; see the report above)" : "");
    }
    if (o->have_fl && o->lr == RL_ERR_HANG) {
        size_t n = rl_grade_blob_count(o->fl_rec, sizeof(rl_diag_rec));
        const rl_diag_rec *fr = rl_grade_blob_get(o->fl_rec, sizeof(rl_diag_rec), n);
        res->fl.rec = calloc(n ? n : 1, sizeof *res->fl.rec);
        ck_assert(res->fl.rec != NULL);
        for (size_t i = 0; i < n; i++) {
            rl_diag_rec *f = &res->fl.rec[i];
            *f = fr[i];
            f->op[sizeof f->op - 1] = f->dtype[sizeof f->dtype - 1] = f->comm[sizeof f->comm - 1] =
                f->state[sizeof f->state - 1] = 0;
        }
        res->fl.nrec = (int)n;
        res->fl.nranks = o->fl_nranks;
        snprintf(res->fl.verdict, sizeof res->fl.verdict, "%s", o->fl_verdict);
        res->have_fl = 1;
    }
    free(o);
}


/* ------------------------------------------------------------------ deadlock analysis */

enum { PK_ACT = 0, PK_GRAD = 1, PK_OTHER = 2 };
#define PPSTUCK 8

/* One call a stage had in flight when the watchdog fired. */
typedef struct pp_call { int send, kind, peer; char comm[24]; } pp_call;

/* Where every stage stood: ops run (from the trace's stage_forward/backward events), sends and
 * receives completed per kind and peer (the trace), calls in flight (the flight dump). */
typedef struct pp_where {
    int ran[PPMAX];
    int done[PPMAX][2][3][PPMAX];   /* [stage][send?][kind][peer] */
    pp_call fly[PPMAX][PPSTUCK];
    int nfly[PPMAX];
} pp_where;

static const char *const pk_name[3] = { "act_comm", "grad_comm", "another communicator" };

/* Which of the stage's two communicators a name is (PK_OTHER: neither). */
static int pp_comm_kind(const mp_stats *st, const char *comm)
{
    return !strcmp(comm, st->pp_comm[0]) ? PK_ACT : !strcmp(comm, st->pp_comm[1]) ? PK_GRAD : PK_OTHER;
}

/* The op of `stage` whose output goes to `peer` (sending) or whose input comes from `peer`
 * (receiving) as the k-th message of `kind` between them (-1: none). */
static int pp_msg_op(const rl_pp_schedule *s, int stage, int peer, int kind, int k, int sending)
{
    for (int i = 0, n = 0; i < s->nops[stage]; i++) {
        int from, to;
        rl_pp_op_peers(s, stage, &s->ops[stage][i], &from, &to);
        if ((sending ? to : from) == peer && (s->ops[stage][i].kind == 'F' ? PK_ACT : PK_GRAD) == kind && n++ == k)
            return i;
    }
    return -1;
}

/* Messages of `kind` the schedule sends from q to r. */
static int pp_nmsg(const rl_pp_schedule *s, int q, int r, int kind)
{
    int n = 0;
    while (pp_msg_op(s, q, r, kind, n, 1) >= 0)
        n++;
    return n;
}

/* 1 when stage r's list has an F after a B (a steady phase). */
static int pp_mixed(const rl_pp_schedule *s, int r)
{
    int seen_b = 0;
    for (int i = 0; i < s->nops[r]; i++) {
        if (s->ops[r][i].kind == 'F' && seen_b)
            return 1;
        seen_b |= s->ops[r][i].kind == 'B';
    }
    return 0;
}

/* Fills w from the run's trace and flight dump; 0 when there is nothing to read. */
static int pp_where_read(const rl_pp_schedule *s, const pp_res *res, pp_where *w)
{
    memset(w, 0, sizeof *w);
    if (!res->tr || !res->have_fl || s->p > PPMAX)
        return 0;
    for (size_t i = 0; i < res->tr->n; i++) {
        const rl_trace_event *e = &res->tr->ev[i];
        if (e->rank < 0 || e->rank >= s->p)
            continue;
        if (e->cat == RL_CAT_COMPUTE && (!strcmp(e->name, "stage_forward") || !strcmp(e->name, "stage_backward")))
            w->ran[e->rank]++;
        if (e->cat == RL_CAT_P2P && e->peer >= 0 && e->peer < s->p)
            w->done[e->rank][!strcmp(e->name, "send")][pp_comm_kind(&res->st, e->comm)][e->peer]++;
    }
    for (int i = 0; i < res->fl.nrec; i++) {
        const rl_diag_rec *f = &res->fl.rec[i];
        int r = f->rank, snd = !strcmp(f->op, "send");
        if (r < 0 || r >= s->p || !strcmp(f->state, "completed") || (!snd && strcmp(f->op, "recv")) ||
            w->nfly[r] >= PPSTUCK || f->peer < 0 || f->peer >= s->p)
            continue;
        pp_call *c = &w->fly[r][w->nfly[r]++];
        c->send = snd, c->peer = f->peer, c->kind = pp_comm_kind(&res->st, f->comm);
        snprintf(c->comm, sizeof c->comm, "%s", f->comm);
    }
    return 1;
}

/* What a call in flight carries, as text: "the output of F3 (for stage 2's F3)". */
static void pp_call_text(const rl_pp_schedule *s, const pp_where *w, int r, const pp_call *c, rl_grade_text *b)
{
    char o1[24], o2[24];
    if (c->kind == PK_OTHER) {
        rl_grade_text_add(b, "%s %s stage %d on '%s'", c->send ? "a send" : "a receive", c->send ? "to" : "from", c->peer,
               c->comm);
        return;
    }
    const char *cn = pk_name[c->kind];
    if (c->send) {
        int k = w->done[r][1][c->kind][c->peer], i = pp_msg_op(s, r, c->peer, c->kind, k, 1);
        int j = pp_msg_op(s, c->peer, r, c->kind, k, 0);
        int nm = pp_nmsg(s, r, c->peer, c->kind);
        if (i < 0 && !nm)
            rl_grade_text_add(b, "a send to stage %d on %s, where the schedule sends that stage nothing", c->peer, cn);
        else if (i < 0)
            rl_grade_text_add(b, "a send to stage %d on %s (message %d there; the schedule has %d)", c->peer, cn, k + 1, nm);
        else
            rl_grade_text_add(b, "the send of %s's output to stage %d on %s (the input of its %s)",
                   op_text(s, &s->ops[r][i], o1, sizeof o1), c->peer, cn,
                   j >= 0 ? op_text(s, &s->ops[c->peer][j], o2, sizeof o2) : "?");
    } else {
        int k = w->done[r][0][c->kind][c->peer], j = pp_msg_op(s, r, c->peer, c->kind, k, 0);
        int nm = pp_nmsg(s, c->peer, r, c->kind);
        if (j < 0 && !nm)
            rl_grade_text_add(b, "a receive from stage %d on %s, where the schedule has that stage send nothing", c->peer, cn);
        else if (j < 0)
            rl_grade_text_add(b, "a receive from stage %d on %s (message %d there; the schedule has %d)", c->peer, cn, k + 1, nm);
        else
            rl_grade_text_add(b, "the receive of %s's input from stage %d on %s", op_text(s, &s->ops[r][j], o1, sizeof o1),
                   c->peer, cn);
    }
}

/* The op of stage r whose input the receive c in flight would carry (-1: none). */
static int pp_recv_op_of(const rl_pp_schedule *s, const pp_where *w, int r, const pp_call *c)
{
    return c->kind == PK_OTHER ? -1 : pp_msg_op(s, r, c->peer, c->kind, w->done[r][0][c->kind][c->peer], 0);
}

/* After a deadlock: where each stage stood and the advice that matches what went wrong,
 * read from the trace (what completed) and the watchdog's flight dump (what was in flight). */
static void pp_deadlock(const rl_pp_schedule *s, const pp_res *res, rl_grade_text *out)
{
    pp_where *w = calloc(1, sizeof *w);
    if (!w || !s || !pp_where_read(s, res, w)) {
        rl_grade_text_add(out, "\n    The schedule validates (rl_pp_validate), so the order of your communication calls deadlocked "
               "(the watchdog's report above says which call never completed): a send completes only when the peer "
               "posts the matching receive, so each pending send goes in ONE group with the next op's receive, and "
               "the last send after the loop.");
        free(w);
        return;
    }
    char o1[24], o2[24];
    int p = s->p, shown = 0;
    /* where each stage stood */
    rl_grade_text_add(out, "\n    The schedule validates (rl_pp_validate), so the order of your communication calls deadlocked. "
           "Where the stages stood (trace and flight dump):");
    for (int r = 0; r < p && shown < 6; r++) {
        if (!w->nfly[r] && w->ran[r] >= s->nops[r])
            continue;
        shown++;
        rl_grade_text_add(out, "\n      stage %d ran %d of its %d ops", r, w->ran[r], s->nops[r]);
        if (w->ran[r] < s->nops[r])
            rl_grade_text_add(out, " (next: %s)", op_text(s, &s->ops[r][w->ran[r]], o1, sizeof o1));
        if (!w->nfly[r])
            rl_grade_text_add(out, "; no call in flight%s", w->ran[r] >= s->nops[r] ? " (its list is done)" : "");
        for (int i = 0; i < w->nfly[r]; i++) {
            rl_grade_text_add(out, "%s", i ? "; " : "; blocked in ");
            pp_call_text(s, w, r, &w->fly[r][i], out);
        }
    }
    int grouped = strstr(res->fl.verdict, "ungrouped") == NULL;
    /* R1: a call on a communicator the schedule does not use for that message */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < w->nfly[r]; i++) {
            const pp_call *f = &w->fly[r][i];
            int k = f->kind == PK_OTHER ? 0 : w->done[r][f->send][f->kind][f->peer];
            int q = f->peer, have = f->kind == PK_OTHER ? 0 : f->send ? pp_nmsg(s, r, q, f->kind) : pp_nmsg(s, q, r, f->kind);
            if (f->kind != PK_OTHER && k < have)
                continue;
            int other = f->kind == PK_ACT ? PK_GRAD : PK_ACT;
            int want = f->kind == PK_OTHER ? 0 : f->send ? pp_nmsg(s, r, q, other) : pp_nmsg(s, q, r, other);
            rl_grade_text_add(out, "\n    Stage %d %s stage %d on %s, but ", r, f->send ? "sends to" : "waits to receive from", q,
                   f->kind == PK_OTHER ? f->comm : pk_name[f->kind]);
            if (want)
                rl_grade_text_add(out, "everything stage %d sends stage %d in this schedule is %s (%d of them), which travel%s on %s",
                       f->send ? r : q, f->send ? q : r, other == PK_GRAD ? "a gradient" : "an activation", want,
                       want == 1 ? "s" : "", pk_name[other]);
            else
                rl_grade_text_add(out, "the schedule sends nothing from stage %d to stage %d there", f->send ? r : q,
                       f->send ? q : r);
            rl_grade_text_add(out, " — mp.h: 'activations on act_comm, gradients on grad_comm' (a call on the other "
                   "communicator waits for a partner that never comes).");
            free(w);
            return;
        }
    /* R2: a receive whose message its sender computed but never sent */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < w->nfly[r]; i++) {
            const pp_call *f = &w->fly[r][i];
            if (f->send)
                continue;
            int q = f->peer, k = w->done[r][0][f->kind][q], j = pp_msg_op(s, q, r, f->kind, k, 1);
            int sending = 0;
            for (int x = 0; x < w->nfly[q]; x++)
                sending |= w->fly[q][x].send && w->fly[q][x].peer == r;
            if (j < 0 || w->ran[q] <= j || sending || w->done[q][1][f->kind][r] > k)
                continue;
            rl_grade_text_add(out, "\n    Stage %d waits for the output of stage %d's %s, which stage %d computed but never sent: ",
                   r, q, op_text(s, &s->ops[q][j], o1, sizeof o1), q);
            if (!w->nfly[q] && w->ran[q] >= s->nops[q])
                rl_grade_text_add(out, "stage %d finished its list without sending it (README 30.4: \"Every output is sent "
                       "exactly once, the last one included\").", q);
            else
                rl_grade_text_add(out, "stage %d went on to later calls with that output unsent.", q);
            free(w);
            return;
        }
    /* R3: a receive of a later op posted early where no look-ahead belongs */
    for (int r = 0; r < p; r++)
        for (int i = 0; i < w->nfly[r]; i++) {
            const pp_call *f = &w->fly[r][i];
            int j = f->send ? -1 : pp_recv_op_of(s, w, r, f), cur = w->ran[r];
            if (j <= cur || (s->v > 1 && pp_mixed(s, r) && j == cur + 1))
                continue;
            rl_grade_text_add(out, "\n    Stage %d posted the receive of %s's input before running %s: ", r,
                   op_text(s, &s->ops[r][j], o1, sizeof o1), op_text(s, &s->ops[r][cur], o2, sizeof o2));
            rl_grade_text_add(out, "its peer sends that input only after it has received this stage's output of %s or of "
                   "an op before it, and the group holding the receive does not complete first — so each of the two "
                   "stages waits for the other (README 30.4, Machine).",
                   op_text(s, &s->ops[r][cur], o2, sizeof o2));
            free(w);
            return;
        }
    /* R4: a send waiting alone while this op's receive is not posted */
    for (int r = 0; r < p; r++) {
        int sends = 0, recvs = 0, cur = w->ran[r];
        for (int i = 0; i < w->nfly[r]; i++)
            w->fly[r][i].send ? sends++ : recvs++;
        if (!sends || recvs || cur >= s->nops[r])
            continue;
        int from, to;
        rl_pp_op_peers(s, r, &s->ops[r][cur], &from, &to);
        int kind = s->ops[r][cur].kind == 'F' ? PK_ACT : PK_GRAD, kin = 0;
        for (int i = 0; i < cur; i++) {
            int f2, t2;
            rl_pp_op_peers(s, r, &s->ops[r][i], &f2, &t2);
            kin += f2 == from && s->ops[r][i].kind == s->ops[r][cur].kind;
        }
        if (from < 0 || w->done[r][0][kind][from] > kin)
            continue;
        rl_grade_text what = { 0 };
        pp_call_text(s, w, r, &w->fly[r][0], &what);
        rl_grade_text_add(out, "\n    Stage %d is blocked in %s with no receive in flight, although its next op %s needs its "
               "input from stage %d: the send was issued %s, and a send completes only when the peer posts the "
               "matching receive — which the peer has not, being itself blocked (README 30.4, Machine).", r,
               rl_grade_text_str(&what),
               op_text(s, &s->ops[r][cur], o1, sizeof o1), from,
               grouped ? "in a group of its own, before the receive" : "outside any group, before the receive");
        rl_grade_text_free(&what);
        free(w);
        return;
    }
    /* R5: interleaved, a peer sending the input of the stage's next op, which it does not receive yet */
    for (int r = 0; s->v > 1 && r < p; r++)
        for (int i = 0; i < w->nfly[r]; i++) {
            const pp_call *f = &w->fly[r][i];
            int q = f->peer;
            if (!f->send || f->kind == PK_OTHER)
                continue;
            int j = pp_msg_op(s, q, r, f->kind, w->done[r][1][f->kind][q], 0), cur = w->ran[q];
            if (cur >= s->nops[q] || j != cur + 1 || s->ops[q][j].kind == s->ops[q][cur].kind || !pp_mixed(s, q))
                continue;
            rl_grade_text_add(out, "\n    Stage %d waits in the group of its %s while stage %d is sending it the input of its "
                   "next op, %s, which stage %d has not posted the receive of yet: each of the two stages waits for "
                   "the other (README 30.4, Machine).", q,
                   op_text(s, &s->ops[q][cur], o1, sizeof o1), r, op_text(s, &s->ops[q][j], o2, sizeof o2), q);
            free(w);
            return;
        }
    rl_grade_text_add(out, "\n    Compare the order of your calls with the schedule, op by op, on the stages above: which "
           "call of each waits for which call of the other (README 30.4, Machine)?");
    free(w);
}

/* The reason a pipeline run failed, with advice that matches its cause (nothing when it did not). */
static void pp_failure(const pp_case *c, const rl_pp_schedule *s, const pp_res *res, rl_grade_text *out)
{
    char cb[96];
    const mp_stats *st = &res->st;
    if (!st->rc[3])
        return;
    rl_grade_text_add(out, "\n  - %s: %s", pp_case_text(c, cb, sizeof cb), st->err[3]);
    if (st->run_rc[3] == RL_ERR_HANG)
        pp_deadlock(s, res, out);
}

/* After a deadlock the rest of a test's cases are not run (each would cost the watchdog's
 * timeout): the line that says so. */
static void pp_skipped(rl_grade_text *out, int n)
{
    if (n > 0)
        rl_grade_text_add(out, "\n  (%d more case%s not run after this deadlock)", n, n == 1 ? "" : "s");
}

/* Random executor cases of the given kinds: the runtime's schedule run by pp_execute. */
static void pp_exec_cases(const rl_pp_kind *kinds, int nk, int per_kind, const pp_case *extra, int nextra)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[16];
    int n = 0;
    for (int k = 0; k < nk; k++)
        for (int i = 0; i < per_kind; i++)
            cs[n++] = pp_draw(&g, kinds[k], 2, kinds[k] == RL_PP_INTERLEAVED ? 4 : 5);
    for (int i = 0; i < nextra; i++)
        cs[n++] = extra[i];
    pp_print_cases(cs, n);
    rl_grade_text bad = { 0 };
    for (int i = 0; i < n; i++) {
        char err[256], cb[96];
        rl_pp_schedule *s = rl_pp_schedule_new(cs[i].kind, cs[i].p, cs[i].m, cs[i].v, err, sizeof err);
        ck_assert_msg(s != NULL, "grader: rl_pp_schedule_new: %s", err);
        pp_res res;
        int64_t h = rl_grade_pick(&g, 5, 24), rows = rl_grade_pick(&g, 2, 9);
        pp_run(&cs[i], s, rl_rng_below(&g, 1000) + 1, rows, h, &res);
        pp_failure(&cs[i], s, &res, &bad);
        const mp_stats *st = &res.st;
        if (!st->rc[3]) {
            if (!(st->pp_grad_err < TOL))
                rl_grade_text_add(&bad, "\n  - %s: the stage weight gradients differ from the unpipelined model's by %.3g "
                       "(relative)", pp_case_text(&cs[i], cb, sizeof cb), st->pp_grad_err);
            if (!(fabs(st->pp_loss - st->pp_ref_loss) <= 1e-5 * fabs(st->pp_ref_loss) + 1e-7))
                rl_grade_text_add(&bad, "\n  - %s: loss %.7g, unpipelined %.7g", pp_case_text(&cs[i], cb, sizeof cb), st->pp_loss,
                       st->pp_ref_loss);
        }
        int hung = st->run_rc[3] == RL_ERR_HANG;
        pp_res_free(&res);
        rl_pp_schedule_free(s);
        if (hung) {
            pp_skipped(&bad, n - i - 1);
            break;
        }
    }
    ck_assert_msg(!bad.len, "pp_execute on the runtime's schedules (rl_pp_schedule_new):%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}

START_TEST(t_pp_grads)
{
    static const rl_pp_kind ks[2] = { RL_PP_GPIPE, RL_PP_1F1B };
    static const pp_case extra[2] = { { RL_PP_1F1B, 4, 2, 1 }, { RL_PP_1F1B, 1, 3, 1 } };
    pp_exec_cases(ks, 2, 2, extra, 2);
}
END_TEST

START_TEST(t_pp_grads_il)
{
    static const rl_pp_kind ks[1] = { RL_PP_INTERLEAVED };
    static const pp_case extra[2] = { { RL_PP_INTERLEAVED, 3, 3, 2 }, { RL_PP_INTERLEAVED, 2, 4, 2 } };
    pp_exec_cases(ks, 1, 2, extra, 2);
}
END_TEST

/* 30.4 executor memory, read by the lab's stage code at the start of every op: nothing of the
 * executor's own under RL_MEM_ACTIVATION, its input buffer under RL_MEM_COMM, and nothing left
 * allocated when pp_execute returns (the TODO: 'Buffers [rows, h] (RL_MEM_COMM)'). */
START_TEST(t_pp_memory)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[3] = { pp_draw(&g, RL_PP_GPIPE, 2, 5), pp_draw(&g, RL_PP_1F1B, 2, 5),
                      pp_draw(&g, RL_PP_INTERLEAVED, 2, 4) };
    pp_print_cases(cs, 3);
    rl_grade_text bad = { 0 };
    for (int i = 0; i < 3; i++) {
        char err[256], cb[96];
        rl_pp_schedule *s = rl_pp_schedule_new(cs[i].kind, cs[i].p, cs[i].m, cs[i].v, err, sizeof err);
        ck_assert_msg(s != NULL, "grader: rl_pp_schedule_new: %s", err);
        int64_t h = rl_grade_pick(&g, 5, 24), rows = rl_grade_pick(&g, 2, 9), B = 4 * rows * h;
        pp_res res;
        pp_run(&cs[i], s, rl_rng_below(&g, 1000) + 1, rows, h, &res);
        pp_failure(&cs[i], s, &res, &bad);
        const mp_stats *st = &res.st;
        pp_case_text(&cs[i], cb, sizeof cb);
        for (int r = 0; !st->rc[3] && r < cs[i].p; r++) {
            rl_grade_text left = { 0 };
            for (int k = 0; k < RL_MEM_NCAT; k++)
                if (st->pp_left[r][k])
                    rl_grade_text_add(&left, "%s%s %+lld B", left.len ? ", " : "", rl_mem_cat_name((rl_mem_cat)k),
                           (long long)st->pp_left[r][k]);
            if (left.len)
                rl_grade_text_add(&bad, "\n  - %s, stage %d: pp_execute left %s allocated (one buffer [rows, h] = %lld B): its "
                       "buffers are freed before it returns", cb, r, rl_grade_text_str(&left), (long long)B);
            if (st->pp_act_extra[r] > 0)
                rl_grade_text_add(&bad, "\n  - %s, stage %d: at the start of an op the stage held %lld B of activations beyond its "
                       "saved (mb, chunk) tensors (%.3g times a [rows, h] buffer): the executor's buffers are p2p buffers, "
                       "charged to RL_MEM_COMM, not to activations", cb, r, (long long)st->pp_act_extra[r],
                       (double)st->pp_act_extra[r] / (double)B);
            if (cs[i].p > 1 && st->pp_comm_min[r] >= 0 && st->pp_comm_min[r] < B)
                rl_grade_text_add(&bad, "\n  - %s, stage %d: an op that received its input ran with %lld B of comm memory in use, "
                       "less than the one buffer [rows, h] = %lld B that input arrived in: the receive buffers are "
                       "charged to RL_MEM_COMM", cb, r, (long long)st->pp_comm_min[r], (long long)B);
        }
        int hung = st->run_rc[3] == RL_ERR_HANG;
        pp_res_free(&res);
        rl_pp_schedule_free(s);
        if (hung) {
            pp_skipped(&bad, 3 - i - 1);
            break;
        }
    }
    ck_assert_msg(!bad.len, "pp_execute's memory (the TODO: 'Buffers [rows, h] (RL_MEM_COMM): one for the output, one "
                  "input per kind'):%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

static double formula(rl_calc_schedule k, int p, int m, int v)
{
    rl_calc_bubble_in in = { p, m, v, k };
    rl_calc_bubble_out o;
    ck_assert(rl_calc_bubble(&in, &o, NULL, 0) == 0);
    return o.frac_total;
}

/* The learner's schedule and executor on a case (default model sizes); after a deadlock in the
 * same test (*hung) the case is skipped: returns 0 when st holds a successful run. */
static int pp_case_run(const pp_case *c, mp_stats *st, rl_grade_text *bad, int *hung)
{
    if (*hung) {
        (*hung)++;
        return 1;
    }
    pp_res res;
    pp_run(c, NULL, 30, 16, 64, &res);
    pp_failure(c, res.learner, &res, bad);
    *st = res.st;
    if (res.st.run_rc[3] == RL_ERR_HANG)
        *hung = 1;
    pp_res_free(&res);
    return st->rc[3] != 0;
}

START_TEST(t_pp_bubble)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[4] = { pp_draw(&g, RL_PP_GPIPE, 2, 6), pp_draw(&g, RL_PP_1F1B, 2, 6), pp_draw(&g, RL_PP_1F1B, 2, 6),
                      { RL_PP_1F1B, 4, 8, 1 } };
    pp_print_cases(cs, 4);
    rl_grade_text bad = { 0 };
    int hung = 0;
    for (int i = 0; i < 4; i++) {
        mp_stats st;
        char cb[96];
        if (pp_case_run(&cs[i], &st, &bad, &hung))
            continue;
        double want = formula(cs[i].kind == RL_PP_GPIPE ? RL_CALC_SCHED_GPIPE : RL_CALC_SCHED_1F1B, cs[i].p, cs[i].m, 1);
        printf("%s: bubble measured %.4f, formula %.4f\n", pp_case_text(&cs[i], cb, sizeof cb), st.pp.bubble_frac, want);
        if (!(fabs(st.pp.bubble_frac - want) <= 0.02 * want + 0.004))
            rl_grade_text_add(&bad, "\n  - %s: measured bubble %.4f, (p-1)/(m+p-1) = %.4f (tolerance 2%% + 0.004 for the p2p "
                   "latencies): a stage waits longer than the schedule requires (a receive posted later than the op "
                   "before it? a send waited on alone?)", cb, st.pp.bubble_frac, want);
    }
    pp_skipped(&bad, hung - 1);
    ck_assert_msg(!bad.len, "pipeline bubble measured from the trace:%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

START_TEST(t_pp_interleaved)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[3] = { pp_draw(&g, RL_PP_INTERLEAVED, 2, 4), pp_draw(&g, RL_PP_INTERLEAVED, 2, 4),
                      { RL_PP_INTERLEAVED, 4, 8, 2 } };
    pp_print_cases(cs, 3);
    rl_grade_text bad = { 0 };
    int hung = 0;
    for (int i = 0; i < 3; i++) {
        mp_stats st, o;
        char cb[96];
        pp_case onef = { RL_PP_1F1B, cs[i].p, cs[i].m, 1 };
        int f1 = pp_case_run(&cs[i], &st, &bad, &hung), f2 = pp_case_run(&onef, &o, &bad, &hung);
        if (f1 || f2)
            continue;
        double want = formula(RL_CALC_SCHED_INTERLEAVED, cs[i].p, cs[i].m, cs[i].v);
        printf("%s: bubble measured %.4f, formula %.4f (1F1B measured %.4f)\n", pp_case_text(&cs[i], cb, sizeof cb),
               st.pp.bubble_frac, want, o.pp.bubble_frac);
        if (!(fabs(st.pp.bubble_frac - want) <= 0.05 * want + 0.006 && st.pp.bubble_frac < o.pp.bubble_frac))
            rl_grade_text_add(&bad, "\n  - %s: measured bubble %.4f, (p-1)/(vm+p-1) = %.4f (tolerance 5%% + 0.006: the combined "
                   "receives wait a little), 1F1B on the same p, m %.4f: a stage waits longer than the schedule "
                   "requires (a look-ahead receive posted later than it could be?)", cb, st.pp.bubble_frac, want,
                   o.pp.bubble_frac);
    }
    pp_skipped(&bad, hung - 1);
    ck_assert_msg(!bad.len, "interleaved 1F1B bubble measured from the trace:%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

START_TEST(t_pp_inflight)
{
    rl_rng g = rl_grade_rng(1);
    pp_case cs[3] = { pp_draw(&g, RL_PP_GPIPE, 2, 6), pp_draw(&g, RL_PP_1F1B, 2, 6), pp_draw(&g, RL_PP_1F1B, 3, 6) };
    cs[2].m = rl_grade_pick(&g, 1, cs[2].p - 1); /* m < p: the warm-up is cut to m */
    pp_print_cases(cs, 3);
    rl_grade_text bad = { 0 };
    int hung = 0;
    for (int i = 0; i < 3; i++) {
        mp_stats st;
        char cb[96];
        if (pp_case_run(&cs[i], &st, &bad, &hung))
            continue;
        for (int r = 0; r < cs[i].p; r++) {
            int want = cs[i].kind == RL_PP_GPIPE ? cs[i].m : (cs[i].p - r < cs[i].m ? cs[i].p - r : cs[i].m);
            if (fabs(st.pp.peak_inflight[r] - want) > 1e-9)
                rl_grade_text_add(&bad, "\n  - %s: stage %d holds %.2f micro-batches at its peak; expected %d (%s)",
                       pp_case_text(&cs[i], cb, sizeof cb), r, st.pp.peak_inflight[r], want,
                       cs[i].kind == RL_PP_GPIPE ? "GPipe holds all m" : "1F1B: min(p-r, m), the p-r-1 warm-up "
                                                                         "forwards and one more");
        }
    }
    pp_skipped(&bad, hung - 1);
    ck_assert_msg(!bad.len, "peak in-flight micro-batches per stage, from the trace:%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
}
END_TEST

START_TEST(t_ans_bubble)
{
    h_numbers n = my_numbers();
    CHECK_NUM("h3_naive", formula(RL_CALC_SCHED_NAIVE, n.h3_p, n.h3_m, 1), 0.01);
    CHECK_NUM("h3_1f1b", formula(RL_CALC_SCHED_1F1B, n.h3_p, n.h3_m, 1), 0.01);
    CHECK_NUM("h3_interleaved", formula(RL_CALC_SCHED_INTERLEAVED, n.h3_p, n.h3_m, n.h3_v), 0.01);
    /* the fewest micro-batches for which 1F1B's bubble is at most 5% of the total time:
     * (p-1)/(m+p-1) <= 1/20  ⇔  m >= 19(p-1) */
    CHECK_NUM("h3_min_m", 19 * (n.h3_p - 1), 0.001);
}
END_TEST

/* ================================================================== 30.5 context parallelism */

/* The positions the handout fixes: contiguous rank r: r·seq/cp ..; zig-zag: chunk r then chunk
 * 2cp−r−1 of 2cp, each ascending. */
static void cp_expected(int64_t seq, int cp, int r, int zz, int64_t *pos)
{
    int64_t n = seq / cp, c = seq / (2 * cp);
    for (int64_t i = 0; i < n; i++)
        pos[i] = zz ? (i < c ? r * c + i : (2 * cp - r - 1) * c + (i - c)) : r * n + i;
}

static void pos_text(rl_grade_text *b, const int64_t *pos, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        rl_grade_text_add(b, "%s%lld", i ? " " : "", (long long)pos[i]);
}

/* A call of cp_positions: its arguments, the room of pos (filled with -777 first) and of err. */
typedef struct cpos_call {
    int64_t seq;
    int cp, rank, zz;
    int64_t room;
    size_t errlen;
} cpos_call;

/* What a call of cp_positions left in the record: its status, err, and pos (room elements). */
typedef struct cpos_res {
    int rc;
    char err[512];
    rl_grade_blob pos;
} cpos_res;

/* The calls of a cpos_run, in the child. */
typedef struct cpos_job {
    const cpos_call *calls;
    int n;
} cpos_job;

static void cpos_produce(void *out, void *arg)
{
    const cpos_job *j = arg;
    cpos_res *o = out;
    for (int k = 0; k < j->n; k++) {
        const cpos_call *c = &j->calls[k];
        int64_t *pos = malloc(sizeof(int64_t) * (size_t)(c->room > 0 ? c->room : 1));
        char err[512] = "";
        ck_assert(pos != NULL);
        for (int64_t i = 0; i < c->room; i++)
            pos[i] = -777;
        o[k].rc = cp_positions(c->seq, c->cp, c->rank, c->zz, pos, err, c->errlen);
        size_t n = strnlen(err, sizeof err - 1);
        memcpy(o[k].err, err, n);
        o[k].err[n] = 0;
        o[k].pos = rl_grade_keep(pos, sizeof(int64_t) * (size_t)(c->room > 0 ? c->room : 0));
        free(pos);
    }
}

/* cp_positions on each of n calls, in the child; a copy of what they returned, their messages
 * ended (the caller frees it; read each pos with cpos_of). */
static cpos_res *cpos_run(const cpos_call *calls, int n)
{
    cpos_job j = { calls, n };
    const cpos_res *o = rl_grade_run("cp_positions", (size_t)n * sizeof *o, cpos_produce, &j);
    cpos_res *c = malloc((size_t)n * sizeof *c);
    ck_assert(c != NULL);
    memcpy(c, o, (size_t)n * sizeof *c);
    for (int k = 0; k < n; k++)
        c[k].err[sizeof c[k].err - 1] = 0;
    return c;
}

/* The room elements of pos a call of cp_positions left. */
static const int64_t *cpos_of(const cpos_res *o, const cpos_call *c)
{
    return rl_grade_blob_get(o->pos, sizeof(int64_t), (size_t)(c->room > 0 ? c->room : 0));
}

START_TEST(t_cp_positions)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text bad = { 0 }, line = { 0 };
    cpos_call calls[40];
    int ncall = 0;
    for (int k = 0; k < 4; k++) {
        int cp = k == 0 ? 1 : rl_grade_pick(&g, 2, 6), zz = k % 2;
        /* the last zig-zag case has chunks of 2 or more positions: their order within a chunk shows */
        int64_t seq = (zz ? 2 * cp : cp) * rl_grade_pick(&g, k == 3 ? 2 : 1, 4);
        if (!zz && k == 2 && cp > 1)
            seq = (int64_t)cp * (2 * rl_grade_pick(&g, 0, 2) + 1); /* a contiguous split that 2cp does not divide */
        rl_grade_text_add(&line, "%s%s seq = %lld, cp = %d", k ? "; " : "cases: ", zz ? "zig-zag" : "contiguous", (long long)seq,
               cp);
        for (int r = 0; r < cp; r++)
            calls[ncall++] = (cpos_call){ seq, cp, r, zz, seq / cp + 4, 512 };
    }
    int nvalid = ncall;
    /* refusals */
    int cp = rl_grade_pick(&g, 2, 6);
    int64_t odd = (int64_t)cp * (2 * rl_grade_pick(&g, 1, 3) + 1), nd = (int64_t)cp * rl_grade_pick(&g, 1, 4) + 1;
    struct { int64_t seq; int cp, rank, zz; const char *why; } ref[] = {
        { nd, cp, 0, 0, "contiguous: seq not divisible by cp" },
        { odd, cp, cp - 1, 1, "zig-zag: seq divisible by cp but not by 2cp" },
        { 2 * cp * 2, cp, cp, 1, "rank = cp (out of range)" },
        { 2 * cp * 2, cp, -1, 0, "rank = -1" },
        { 8, 0, 0, 0, "cp = 0" },
    };
    rl_grade_text_add(&line, "; refusals with cp = %d: seq = %lld (contiguous), %lld (zig-zag)", cp, (long long)nd,
           (long long)odd);
    printf("%s\n", rl_grade_text_str(&line));
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++)
        calls[ncall++] = (cpos_call){ ref[i].seq, ref[i].cp, ref[i].rank, ref[i].zz, 64, 512 };
    cpos_res *o = cpos_run(calls, ncall);
    for (int k = 0; k < nvalid; k++) {
        const cpos_call *c = &calls[k];
        int64_t seq = c->seq, n = seq / c->cp;
        int r = c->rank, zz = c->zz, rc = o[k].rc;
        const char *err = o[k].err;
        const int64_t *pos = cpos_of(&o[k], c);
        int64_t *want = malloc(sizeof(int64_t) * (size_t)n);
        cp_expected(seq, c->cp, r, zz, want);
        int same = rc == 0 && !memcmp(pos, want, sizeof(int64_t) * (size_t)n);
        if (rc == 0 && (pos[n] != -777 || pos[n + 3] != -777))
            rl_grade_text_add(&bad, "\n  - %s seq = %lld, cp = %d, rank %d: wrote past pos[seq/cp - 1] = pos[%lld]",
                   zz ? "zig-zag" : "contiguous", (long long)seq, c->cp, r, (long long)(n - 1));
        if (!same) {
            rl_grade_text_add(&bad, "\n  - %s seq = %lld, cp = %d, rank %d: ", zz ? "zig-zag" : "contiguous", (long long)seq,
                   c->cp, r);
            if (rc)
                rl_grade_text_add(&bad, "returned %d (%s): %s", rc, rl_status_name(rc), err[0] ? err : "(no message)");
            else {
                rl_grade_text_add(&bad, "pos = ");
                pos_text(&bad, pos, n);
                rl_grade_text_add(&bad, "; expected ");
                pos_text(&bad, want, n);
                if (zz)
                    rl_grade_text_add(&bad, " (local order: chunk r = %d's positions ascending, then chunk 2cp-r-1 = %d's)", r,
                           2 * c->cp - r - 1);
            }
        }
        free(want);
    }
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        int rc = o[nvalid + i].rc;
        const char *err = o[nvalid + i].err;
        if (rc != RL_ERR_ARG || !err[0])
            rl_grade_text_add(&bad, "\n  - %s (seq = %lld, cp = %d, rank %d): expected RL_ERR_ARG with a message in err; got %d "
                   "(%s)%s%s", ref[i].why, (long long)ref[i].seq, ref[i].cp, ref[i].rank, rc, rl_status_name(rc),
                   err[0] ? ": " : ", no message", err);
    }
    free(o);
    ck_assert_msg(!bad.len, "cp_positions (header: 'contiguous (rank r holds r*seq/cp ..) or zig-zag (chunks r and "
                  "2cp-r-1 of 2cp) ... in local order. RL_ERR_ARG unless seq is divisible by cp (zig-zag: by 2cp)'):%s",
                  rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
    rl_grade_text_free(&line);
}
END_TEST

/* a and the reference agree: equal infinities, else within tol (relative to max(1, |ref|)). */
static int close_to(double a, double ref, double tol)
{
    if (isinf(ref) || isinf(a))
        return a == ref;
    return fabs(a - ref) <= tol * fmax(1.0, fabs(ref));
}

/* A call of cp_lse_merge: (O, L) ⊕ (Ob, Lb) with out [b, sq, nh·hd], lse [b, nh, sq]. */
typedef struct merge_job {
    int nh;
    int64_t b, sq, hd;
    const float *O, *Ob, *L, *Lb;
} merge_job;

/* What the call left in the record: its status and message, out and lse afterwards. */
typedef struct merge_res {
    int rc;
    char err[1024];
    rl_grade_blob out, lse;
} merge_res;

static void merge_produce(void *out, void *arg)
{
    const merge_job *j = arg;
    merge_res *o = out;
    int64_t os[3] = { j->b, j->sq, j->nh * j->hd }, ls[3] = { j->b, j->nh, j->sq };
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_tensor *t = tnew(ctx, "out", 3, os, "b,sq,h", j->O), *tb = tnew(ctx, "out_b", 3, os, "b,sq,h", j->Ob);
    rl_tensor *l = tnew(ctx, "lse", 3, ls, "b,a,sq", j->L), *lb = tnew(ctx, "lse_b", 3, ls, "b,a,sq", j->Lb);
    rl_clear_error(ctx);
    o->rc = cp_lse_merge(ctx, t, l, tb, lb, j->nh);
    snprintf(o->err, sizeof o->err, "%s", rl_last_error(ctx));
    o->out = keep_vals(t), o->lse = keep_vals(l);
    rl_tensor_free(t), rl_tensor_free(tb), rl_tensor_free(l), rl_tensor_free(lb);
    rl_ctx_free_standalone(ctx);
}

START_TEST(t_cp_merge)
{
    rl_rng g = rl_grade_rng(1);
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_grade_text bad = { 0 }, line = { 0 };
    for (int k = 0; k < 3; k++) {
        int nh = rl_grade_pick(&g, 1, 4);
        int64_t b = rl_grade_pick(&g, 1, 3), sq = rl_grade_pick(&g, 8, 11), hd = rl_grade_pick(&g, 1, 5);
        int64_t os[3] = { b, sq, nh * hd }, ls[3] = { b, nh, sq }, no = b * sq * nh * hd, nl = b * nh * sq;
        rl_grade_text_add(&line, "%sb = %lld, sq = %lld, %d head(s) of %lld", k ? "; " : "cases: ", (long long)b, (long long)sq, nh,
               (long long)hd);
        float *O = fnew(no), *Ob = fnew(no), *L = fnew(nl), *Lb = fnew(nl);
        fill(O, no, &g, 1.0);
        fill(Ob, no, &g, 1.0);
        /* rows of every kind: close values, large ones (|lse| ~ 150), far apart (one dominates),
         * lse_b = -inf (nothing to add), lse = -inf (nothing yet), both -inf, and |lse| ~ 800 of
         * either sign (exp overflows a double above ~709: only a max-shifted merge is exact there) */
        for (int64_t i = 0; i < nl; i++) {
            int kind = i < 8 ? (int)i : (int)rl_rng_below(&g, 8); /* every kind in every case */
            double base = kind == 1 ? (120 + 60 * rl_rng_uniform(&g)) * (rl_rng_below(&g, 2) ? 1 : -1)
                          : kind >= 6 ? (780 + 40 * rl_rng_uniform(&g)) * (kind == 6 ? 1 : -1) : 0;
            L[i] = (float)(base + 3 * (2 * rl_rng_uniform(&g) - 1));
            Lb[i] = (float)(base + 3 * (2 * rl_rng_uniform(&g) - 1) + (kind == 2 ? 40 * (rl_rng_below(&g, 2) ? 1 : -1) : 0));
            if (kind == 3 || kind == 5)
                Lb[i] = -INFINITY;
            if (kind == 4 || kind == 5)
                L[i] = -INFINITY;
        }
        for (int64_t bb = 0; bb < b; bb++)
            for (int hh = 0; hh < nh; hh++)
                for (int64_t i = 0; i < sq; i++) {
                    int64_t li = (bb * nh + hh) * sq + i, o0 = (bb * sq + i) * nh * hd + hh * hd;
                    for (int64_t d = 0; d < hd; d++) {
                        if (isinf(L[li]))
                            O[o0 + d] = 0; /* a row with every key masked: lse = -inf, out = 0 */
                        if (isinf(Lb[li]))
                            Ob[o0 + d] = 0;
                    }
                }
        merge_job j = { nh, b, sq, hd, O, Ob, L, Lb };
        merge_res o = *(const merge_res *)rl_grade_run("cp_lse_merge", sizeof o, merge_produce, &j);
        o.err[sizeof o.err - 1] = 0;
        int rc = o.rc;
        if (rc) {
            rl_grade_text_add(&bad, "\n  - cp_lse_merge returned %d (%s): %s", rc, rl_status_name(rc), o.err);
        } else {
            const float *got_o = vals_of(o.out, no), *got_l = vals_of(o.lse, nl);
            rl_tensor *ob = tnew(ctx, "out_b", 3, os, "b,sq,h", Ob), *lb = tnew(ctx, "lse_b", 3, ls, "b,a,sq", Lb);
            rl_tensor *o2 = tnew(ctx, "o2", 3, os, "b,sq,h", O), *l2 = tnew(ctx, "l2", 3, ls, "b,a,sq", L);
            ck_assert(rl_attn_merge(ctx, o2, l2, ob, lb, nh) == 0);
            int shown = 0;
            for (int64_t bb = 0; bb < b && shown < 4; bb++)
                for (int hh = 0; hh < nh && shown < 4; hh++)
                    for (int64_t i = 0; i < sq && shown < 4; i++) {
                        int64_t li = (bb * nh + hh) * sq + i, o0 = (bb * sq + i) * nh * hd + hh * hd;
                        int ok = close_to(got_l[li], rl_tensor_get(l2, li), 1e-6);
                        for (int64_t d = 0; d < hd && ok; d++)
                            ok = close_to(got_o[o0 + d], rl_tensor_get(o2, o0 + d), 1e-4);
                        if (!ok) {
                            shown++;
                            rl_grade_text_add(&bad, "\n  - batch %lld, head %d, row %lld: lse = %g, lse_b = %g -> lse' = %g, "
                                   "expected %g; out'[0] = %g, expected %g (out %g, out_b %g)", (long long)bb, hh,
                                   (long long)i, L[li], Lb[li], got_l[li], rl_tensor_get(l2, li),
                                   got_o[o0], rl_tensor_get(o2, o0), O[o0], Ob[o0]);
                        }
                    }
            rl_tensor_free(ob), rl_tensor_free(lb), rl_tensor_free(o2), rl_tensor_free(l2);
        }
        free(O), free(Ob), free(L), free(Lb);
    }
    rl_ctx_free_standalone(ctx);
    printf("%s\n", rl_grade_text_str(&line));
    ck_assert_msg(!bad.len, "cp_lse_merge against the log-sum-exp rule (lse' = lse + log(1 + exp(lse_b - lse)), out' "
                  "= exp(lse - lse')*out + exp(lse_b - lse')*out_b, exact for any finite lse — rows with |lse| near "
                  "150 and near 800 among them, where exp of lse alone overflows a double; a -inf row merges as "
                  "'nothing', also when both are -inf):%s", rl_grade_text_str(&bad));
    rl_grade_text_free(&bad);
    rl_grade_text_free(&line);
}
END_TEST

/* One ring-attention case: cp ranks, q, k, v [b, s, h] with a heads; the positions each rank
 * uses (the learner's cp_positions when they are a valid split, else the handout's). */
typedef struct cp_case {
    int cp, heads;
    int64_t b, s, h;
    float *q, *k, *v, *ref;                    /* [b, s, h]; ref = full causal attention */
    int64_t *pos[2][MP_MAX_RANKS];             /* [contiguous, zig-zag][rank] -> s/cp positions */
    int64_t w0[MP_MAX_RANKS], work[3][MP_MAX_RANKS]; /* *work before, and after each call (from the run's record) */
} cp_case;

static void cp_case_free(cp_case *c)
{
    free(c->q), free(c->k), free(c->v), free(c->ref);
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < MP_MAX_RANKS; r++)
            free(c->pos[z][r]);
}

static void cp_case_make(cp_case *c, int cp, int heads, int64_t hd, int64_t b, int64_t s, rl_rng *g)
{
    memset(c, 0, sizeof *c);
    c->cp = cp, c->heads = heads, c->b = b, c->s = s, c->h = heads * hd;
    int64_t h = c->h, n = b * s * h, sh[3] = { b, s, h }, ps[4] = { b, heads, s, s }, sl = s / cp;
    c->q = fnew(n), c->k = fnew(n), c->v = fnew(n), c->ref = fnew(n);
    fill(c->q, n, g, 1.0), fill(c->k, n, g, 1.0), fill(c->v, n, g, 1.0);
    if (rl_grade_judging()) { /* the reference is the judge's: the code under test finds none in its memory */
        rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
        rl_tensor *q = tnew(ctx, "q", 3, sh, "b,s,h", c->q), *k = tnew(ctx, "k", 3, sh, "b,s,h", c->k);
        rl_tensor *v = tnew(ctx, "v", 3, sh, "b,s,h", c->v), *o = tnew(ctx, "o", 3, sh, "b,s,h", NULL);
        rl_tensor *pr = tnew(ctx, "probs", 4, ps, "b,a,s,s", NULL);
        int rc = rl_attention_forward(ctx, q, k, v, heads, pr, o);
        rc = rc ? rc : rl_tensor_to_f32(o, c->ref, n);
        rl_tensor_free(q), rl_tensor_free(k), rl_tensor_free(v), rl_tensor_free(o), rl_tensor_free(pr);
        rl_ctx_free_standalone(ctx);
        ck_assert_msg(rc == 0, "grader: the full attention reference failed (%d)", rc);
    }
    cpos_call calls[2 * MP_MAX_RANKS];
    for (int z = 0; z < 2; z++)
        for (int r = 0; r < cp; r++)
            calls[z * cp + r] = (cpos_call){ s, cp, r, z, sl, 256 };
    cpos_res *pr2 = cpos_run(calls, 2 * cp);
    for (int z = 0; z < 2; z++) {
        char *seen = calloc((size_t)s, 1);
        int valid = 1;
        for (int r = 0; r < cp; r++) {
            const cpos_res *o2 = &pr2[z * cp + r];
            const int64_t *p = cpos_of(o2, &calls[z * cp + r]);
            c->pos[z][r] = malloc(sizeof(int64_t) * (size_t)sl);
            memcpy(c->pos[z][r], p, sizeof(int64_t) * (size_t)sl);
            if (o2->rc)
                valid = 0;
            for (int64_t i = 0; valid && i < sl; i++) {
                int64_t q0 = c->pos[z][r][i];
                valid = q0 >= 0 && q0 < s && !seen[q0];
                if (valid)
                    seen[q0] = 1;
            }
        }
        if (!valid)
            for (int r = 0; r < cp; r++)
                cp_expected(s, cp, r, z, c->pos[z][r]);
        free(seen);
    }
    free(pr2);
    for (int r = 0; r < cp; r++)
        c->w0[r] = 1000 * (r + 1) + (int64_t)rl_rng_below(g, 1000);
    snprintf(g_case, sizeof g_case, "cp = %d, b = %lld, s = %lld (s/cp = %lld), %d head(s) of %lld", cp, (long long)b,
             (long long)s, (long long)sl, heads, (long long)hd);
}

/* A call of ring attention, as a rank recorded it. */
typedef struct cp_call_rec {
    int done, rc;              /* cp_ring_attention returned, with this status */
    int64_t work;              /* *work after it */
    int64_t before[RL_MEM_NCAT], after[RL_MEM_NCAT]; /* the rank's memory before and after it */
    rl_grade_blob out;         /* out after it (returned 0) */
} cp_call_rec;

typedef struct cp_res {
    run_head head;
    cp_call_rec r[MAXW][3];    /* per world rank: zig-zag, contiguous, zig-zag with work = NULL */
} cp_res;

static int cp_rank(rl_ctx *ctx, void *arg)
{
    job_go *G = arg;
    cp_res *o = G->o;
    void *cv;
    char who[64];
    rl_comm *w = job_comm(ctx, G, &cv, who, sizeof who);
    if (!w)
        return 0;
    const cp_case *c = cv;
    int cp = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t b = c->b, s = c->s, h = c->h, sl = s / cp, loc[3] = { b, sl, h };
    /* calls: 1 zig-zag with *work, 2 contiguous with *work, 3 zig-zag with work = NULL */
    for (int call = 1; call <= 3; call++) {
        cp_call_rec *R = &o->r[rl_rank(ctx)][call - 1];
        int zz = call != 2;
        const int64_t *pos = c->pos[zz][r];
        float *part[3];
        for (int i = 0; i < 3; i++)
            part[i] = fnew(b * sl * h);
        const float *src[3] = { c->q, c->k, c->v };
        for (int i = 0; i < 3; i++)
            for (int64_t bb = 0; bb < b; bb++)
                for (int64_t j = 0; j < sl; j++)
                    memcpy(part[i] + (bb * sl + j) * h, src[i] + (bb * s + pos[j]) * h, sizeof(float) * (size_t)h);
        rl_tensor *q = tnew(ctx, "q", 3, loc, "b,s/cp,h", part[0]), *k = tnew(ctx, "k", 3, loc, "b,s/cp,h", part[1]);
        rl_tensor *v = tnew(ctx, "v", 3, loc, "b,s/cp,h", part[2]), *out = tnew(ctx, "out", 3, loc, "b,s/cp,h", NULL);
        rl_tensor_fill(out, 4.5f);
        int64_t work = c->w0[r];
        memcpy(R->before, rl_ctx_mem(ctx)->current, sizeof R->before);
        rl_set_tag(ctx, RL_TAG_STEP, call);
        rl_clear_error(ctx);
        int rc = lerr(ctx, &o->head, who,
                      cp_ring_attention(w, q, k, v, c->heads, zz, pos, out, call == 3 ? NULL : &work),
                      call == 3 ? "cp_ring_attention (work = NULL)" : "cp_ring_attention");
        rl_set_tag(ctx, RL_TAG_STEP, -1);
        memcpy(R->after, rl_ctx_mem(ctx)->current, sizeof R->after);
        R->work = work;
        R->rc = rc, R->done = 1;
        if (!rc)
            R->out = keep_vals(out);
        for (int i = 0; i < 3; i++)
            free(part[i]);
        if (rc) /* a call of the learner's code may still be in flight: leave its tensors to the run */
            return 0;
        rl_tensor_free(q), rl_tensor_free(k), rl_tensor_free(v), rl_tensor_free(out);
    }
    job_comm_free(ctx, w);
    return 0;
}

/* The checks of one rank of a ring attention run (rank r, label who), from what it recorded;
 * its *work figures go to the case. */
static void cp_rank_check(const cp_call_rec *R, cp_case *c, int r, const char *who)
{
    int64_t b = c->b, s = c->s, h = c->h, sl = s / c->cp;
    float *want = fnew(b * sl * h);
    for (int call = 1; call <= 3; call++) {
        const cp_call_rec *C = &R[call - 1];
        int zz = call != 2;
        const int64_t *pos = c->pos[zz][r];
        if (!C->done)
            break;
        int rc = C->rc;
        c->work[call - 1][r] = C->work;
        rl_grade_text left = { 0 };
        for (int kc = 0; !rc && kc < RL_MEM_NCAT; kc++) /* every category, its comm buffers too */
            if (C->after[kc] != C->before[kc])
                rl_grade_text_add(&left, "%s%s %+lld B", left.len ? ", " : "", rl_mem_cat_name((rl_mem_cat)kc),
                       (long long)(C->after[kc] - C->before[kc]));
        if (left.len)
            problem(T_MEM, "%s, %s call: cp_ring_attention left %s allocated: its temporaries (lse, the block's out "
                    "and lse, the two K/V block buffers ...) are freed before it returns", who,
                    call == 2 ? "contiguous" : call == 3 ? "zig-zag (work = NULL)" : "zig-zag", rl_grade_text_str(&left));
        rl_grade_text_free(&left);
        if (!rc) {
            for (int64_t bb = 0; bb < b; bb++)
                for (int64_t j = 0; j < sl; j++)
                    memcpy(want + (bb * sl + j) * h, c->ref + (bb * s + pos[j]) * h, sizeof(float) * (size_t)h);
            double e = rel_to(vals_of(C->out, b * sl * h), want, b * sl * h, 1e-2);
            if (!(e < TOL))
                problem(T_FWD, "%s, %s%s: out differs from full causal attention at this rank's positions by %.3g "
                        "(relative; out held 4.5 before the call)", who, zz ? "zig-zag" : "contiguous",
                        call == 3 ? " (work = NULL)" : "", e);
        }
        if (rc)
            break;
    }
    free(want);
}

/* Runs a ring attention job in the child and checks every rank from its record; the trace is
 * returned when tr is given. */
static void cp_go(job *J, rl_trace **tr)
{
    cp_res *o = job_run("cp_ring_attention", J, cp_rank, sizeof *o, tr);
    for (int wr = 0; wr < J->n * J->ng; wr++) {
        char who[64];
        job_who(J, wr, who, sizeof who);
        cp_rank_check(o->r[wr], J->c[J->color[wr]], J->key[wr], who);
    }
    free(o);
}

/* Sends and receives of the ring from the trace, on every rank of every group of J: K/V passed
 * to one neighbour (world ranks of the group's ring), never gathered. */
static void cp_ring_check(const job *J, const rl_trace *tr)
{
    int cp = J->n;
    const cp_case *c = J->c[0];
    double want = 4.0 * (double)(cp - 1) * 2 * c->b * (c->s / cp) * c->h;
    const rl_trace_event *ev[MAXEV];
    int dir = 0; /* +1: every rank sends to r+1; -1: to r-1 */
    for (int call = 1; call <= 3; call++)
        for (int wr = 0; wr < cp * J->ng; wr++) {
            const int *ring = J->member[J->color[wr]];
            int r = J->key[wr], next = ring[(r + 1) % cp], prev = ring[(r + cp - 1) % cp];
            int n = comm_events(tr, wr, call, ev, MAXEV), coll = 0;
            double sent = 0, recvd = 0;
            int bad_peer = 0;
            for (int i = 0; i < n && i < MAXEV; i++) {
                const rl_trace_event *e = ev[i];
                if (e->cat != RL_CAT_P2P) {
                    coll++;
                    continue;
                }
                int is_send = !strcmp(e->name, "send");
                int to_next = e->peer == (is_send ? next : prev), to_prev = e->peer == (is_send ? prev : next);
                if (!dir && cp > 2)
                    dir = to_next ? 1 : to_prev ? -1 : 0;
                if (!(dir >= 0 ? to_next : to_prev) && !(cp <= 2 && (to_next || to_prev)))
                    bad_peer++;
                if (is_send)
                    sent += e->bytes;
                else
                    recvd += e->bytes;
            }
            if (coll || bad_peer || sent != want || recvd != want) {
                rl_grade_text got = { 0 }, lab = { 0 };
                events_text(&got, ev, n, 10);
                if (J->ng > 1)
                    rl_grade_text_add(&lab, "world rank %d (rank %d of group %d)", wr, r, J->color[wr]);
                else
                    rl_grade_text_add(&lab, "rank %d", wr);
                problem(T_COMM, "%s, %s call: the trace has %s; expected only sends to %srank %d and receives from "
                        "%srank %d (%s), %.0f B each way in all: cp-1 = %d steps of the K and V blocks, 2*b*(s/cp)*h = "
                        "%lld elements per step%s", rl_grade_text_str(&lab), call == 2 ? "contiguous" : "zig-zag", rl_grade_text_str(&got),
                        J->ng > 1 ? "world " : "", dir >= 0 ? next : prev, J->ng > 1 ? "world " : "",
                        dir >= 0 ? prev : next,
                        J->ng > 1 ? "this group's ring neighbours; the trace names peers by world rank"
                        : dir >= 0 ? "r+1 and r-1; the other direction on every rank is fine too"
                                   : "the ring in the other direction",
                        want, cp - 1, (long long)(2 * c->b * (c->s / cp) * c->h),
                        coll ? "; no collective: ring attention never gathers K/V" : "");
                rl_grade_text_free(&got);
                rl_grade_text_free(&lab);
            }
        }
}

/* cp_ring_check on one group: the world (the after-run hook of cp_random_runs). */
static void cp_ring_after(cp_case *c, rl_trace *tr)
{
    job J;
    job_make(&J, c->cp, 1, NULL, c, NULL);
    cp_ring_check(&J, tr);
}

/* Each rank's causal work as the runtime measured it — the score entries its attention blocks
 * computed, from their trace events (attn_block: 4·b·h FLOPs per unmasked pair) — against the
 * mask's count from its positions, what it reported in *work, and the balance under zig-zag. */
static void cp_work_after(cp_case *c, rl_trace *tr)
{
    int cp = c->cp;
    int64_t sl = c->s / cp;
    for (int call = 1; call <= 2; call++) {
        int zz = call == 1;
        int64_t first = -1;
        for (int r = 0; r < cp; r++) {
            int64_t want = 0;
            for (int q = 0; q < cp; q++)
                want += rl_cp_causal_work(c->pos[zz][r], sl, c->pos[zz][q], sl);
            int64_t got = c->work[call - 1][r] - c->w0[r];
            double flops = 0;
            for (size_t i = 0; tr && i < tr->n; i++) {
                const rl_trace_event *e = &tr->ev[i];
                if (e->rank == r && e->cat == RL_CAT_COMPUTE && e->tags[RL_TAG_STEP] == call &&
                    !strcmp(e->name, "attn_block"))
                    flops += e->flops;
            }
            int64_t measured = llround(flops / (4.0 * (double)(c->b * c->h)));
            if (measured != want)
                problem(T_WORK, "rank %d, %s: its attention blocks computed %lld score entries (the runtime counts them: "
                        "attn_block in the trace), but the causal mask leaves %lld for this rank's queries against the "
                        "whole sequence: every K/V block once, each with this rank's and the block's positions", r,
                        zz ? "zig-zag" : "contiguous", (long long)measured, (long long)want);
            else if (got != measured)
                problem(T_WORK, "rank %d, %s: *work went from %lld to %lld (%+lld); its attention blocks computed %lld "
                        "score entries%s", r, zz ? "zig-zag" : "contiguous", (long long)c->w0[r],
                        (long long)c->work[call - 1][r], (long long)got, (long long)measured,
                        c->work[call - 1][r] == measured ? ": *work must be ADDED TO (header: '*work += ...')" : "");
            if (zz && first >= 0 && measured != first)
                problem(T_WORK, "rank %d: under zig-zag its blocks computed %lld score entries, rank 0's %lld: chunks r "
                        "and 2cp-r-1 balance the causal work exactly", r, (long long)measured, (long long)first);
            if (zz && first < 0)
                first = measured;
        }
    }
}

/* Random CP cases: cp in 2..6, s a multiple of 2cp. */
static void cp_random_runs(int n, int with_cp1, void (*after)(cp_case *, rl_trace *))
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text line = { 0 };
    for (int i = 0; i < n + with_cp1; i++) {
        cp_case *c = calloc(1, sizeof *c);
        int cp = i == n ? 1 : rl_grade_pick(&g, 2, 6);
        cp_case_make(c, cp, rl_grade_pick(&g, 1, 3), rl_grade_pick(&g, 2, 5), rl_grade_pick(&g, 1, 2),
                     2 * cp * rl_grade_pick(&g, 1, 3), &g);
        rl_grade_text_add(&line, "%s%s", i ? "; " : "cases: ", g_case);
        rl_trace *tr = NULL;
        job J;
        job_make(&J, cp, 1, NULL, c, NULL);
        cp_go(&J, after ? &tr : NULL);
        if (after)
            after(c, tr);
        rl_trace_free(tr);
        cp_case_free(c);
        free(c);
    }
    printf("%s\n", rl_grade_text_str(&line));
    rl_grade_text_free(&line);
}

START_TEST(t_cp_equal)
{
    cp_random_runs(2, 1, NULL);
    expect_none(T_RUN, "the ring attention run failed:");
    expect_none(T_FWD, "ring attention (zig-zag and contiguous, and with work = NULL) against full causal attention:");
}
END_TEST

START_TEST(t_cp_memory)
{
    cp_random_runs(2, 0, NULL);
    expect_none(T_RUN, "the ring attention run failed:");
    expect_none(T_MEM, "memory after cp_ring_attention (its lse, block outputs and K/V block buffers are "
                       "temporaries of the call: nothing of them outlives it):");
}
END_TEST

START_TEST(t_cp_ring)
{
    cp_random_runs(2, 0, cp_ring_after);
    expect_none(T_RUN, "the ring attention run failed:");
    expect_none(T_COMM, "how K/V moves, from the run's trace (header: 'cp-1 ring steps pass K/V blocks to r+1 and "
                        "receive from r-1'; handout 30.5 Cost: 'Each step sends the K and V blocks (2*b*(s/cp)*h "
                        "elements) to the next rank'):");
}
END_TEST

/* 30.5 inside a larger world: two CP groups of cp (members drawn at random), each with its own
 * q, k, v; the output per group, the ring between the group's neighbours on its communicator. */
START_TEST(t_cp_groups)
{
    rl_rng g = rl_grade_rng(2);
    int cp = rl_grade_pick(&g, 2, 4), heads = rl_grade_pick(&g, 1, 2);
    int64_t hd = rl_grade_pick(&g, 2, 4), b = rl_grade_pick(&g, 1, 2), s = 2 * cp * rl_grade_pick(&g, 1, 2);
    cp_case *c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = calloc(1, sizeof *c[k]);
        cp_case_make(c[k], cp, heads, hd, b, s, &g);
    }
    job J;
    job_make(&J, cp, 2, &g, c[0], c[1]);
    rl_grade_text grp = { 0 };
    job_text(&J, &grp);
    snprintf(g_case, sizeof g_case, "cp = %d, b = %lld, s = %lld, %d head(s) of %lld; %s", cp, (long long)b,
             (long long)s, heads, (long long)hd, rl_grade_text_str(&grp));
    printf("cases: %s\n", g_case);
    rl_grade_text_free(&grp);
    rl_trace *tr = NULL;
    cp_go(&J, &tr);
    cp_ring_check(&J, tr);
    expect_on_group(tr, &J, 1, 3, "mp.h: ring attention on 'rank r of cp' passes K/V blocks to r+1 and receives "
                    "from r-1 of the cp communicator, not of the world");
    rl_trace_free(tr);
    for (int k = 0; k < 2; k++) {
        cp_case_free(c[k]);
        free(c[k]);
    }
    expect_none(T_RUN, "the ring attention run on two CP groups failed" GROUP_NOTE ":");
    expect_none(T_COMM, "how K/V moves in two CP groups, from the run's trace (each group's ring on its own "
                        "communicator, between its own ranks):");
    expect_none(T_FWD, "two CP groups, each with its own q, k, v:");
}
END_TEST

START_TEST(t_cp_balance)
{
    cp_random_runs(2, 0, cp_work_after);
    expect_none(T_RUN, "the ring attention run failed:");
    expect_none(T_WORK, "causal work per rank (header: '*work (may be NULL) += unmasked score entries this rank "
                        "computed'):");
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_INTERVIEW();
}
END_TEST

/* the interview questions' answer keys, in the handout's order */
static const char *const interview30[] = { "i1_tp_in_node", "i2_interleave_cost", "i3_ring_vs_ulysses", NULL };

/* ================================================================== the table */

static const rl_grade_step steps30[] = {
    { "30.1", "tensor-parallel MLP" },
    { "30.2", "tensor-parallel attention" },
    { "30.3", "sequence parallelism" },
    { "30.4", "pipeline schedules" },
    { "30.5", "context parallelism" },
};

static const rl_grade_test tests30[] = {
    { "30.1", "shard shapes, dim names and slices", 3, 20, &t_tp_shapes, 0 },
    { "30.1", "forward = dense MLP", 4, 20, &t_tp_forward, 0 },
    { "30.1", "backward: dx and gradient shards = dense", 4, 20, &t_tp_backward, 0 },
    { "30.1", "one all-reduce of b*s*h forward, one backward (trace)", 4, 20, &t_tp_counts, 0 },
    { "30.1", "memory: every tensor's category, saved activations freed", 2, 20, &t_tp_memory, 0 },
    { "30.1", "t = 1 and one FFN column per rank", 2, 30, &t_tp_sizes, 0 },
    { "30.1", "on a sub-communicator: two TP groups, collectives on the group (trace)", 2, 20, &t_tp_groups, 0 },
    { "30.1", "f not divisible by t, shapes that disagree: refused", 1, 20, &t_tp_refuse, 0 },
    { "30.1", "answers: TP traffic of your layer", 2, 10, &t_ans_tp, RL_GRADE_NO_CHILD },
    { "30.2", "= dense attention (random a, t)", 5, 20, &t_attn, 0 },
    { "30.2", "heads r*a/t.. on rank r: shards, temporaries freed", 2, 20, &t_attn_shards, 0 },
    { "30.2", "one all-reduce of b*s*h (trace)", 2, 20, &t_attn_comm, 0 },
    { "30.2", "on a sub-communicator: two TP groups, the all-reduce on the group (trace)", 2, 20, &t_attn_groups, 0 },
    { "30.2", "heads not divisible by t: clear error", 3, 20, &t_attn_bad_heads, 0 },
    { "30.3", "outputs = dense block", 4, 20, &t_sp_outputs, 0 },
    { "30.3", "gradient shards; db2 over this rank's rows", 2, 20, &t_sp_grads, 0 },
    { "30.3", "all-gather and reduce-scatter of b*s*h, no all-reduce (trace)", 4, 20, &t_sp_volume, 0 },
    { "30.3", "activation bytes per rank reduced", 4, 20, &t_sp_memory, 0 },
    { "30.3", "on a sub-communicator: two TP groups, the SP collectives on the group (trace)", 2, 20, &t_sp_groups, 0 },
    { "30.3", "answers: your layer's activation memory with and without SP", 2, 10, &t_ans_act, RL_GRADE_NO_CHILD },
    { "30.4", "schedules validate (dependencies, no deadlock)", 4, 20, &t_pp_validate, 0 },
    { "30.4", "op lists in the handout's order", 4, 20, &t_pp_order, 0 },
    { "30.4", "bad arguments refused", 2, 20, &t_pp_refuse, 0 },
    { "30.4", "executor: gradients = unpipelined model (gpipe, 1f1b)", 4, 40, &t_pp_grads, 0 },
    { "30.4", "executor: interleaved gradients = unpipelined model", 3, 40, &t_pp_grads_il, 0 },
    { "30.4", "bubble (p-1)/(m+p-1): gpipe, 1f1b", 4, 40, &t_pp_bubble, 0 },
    { "30.4", "interleaved bubble (p-1)/(vm+p-1)", 3, 40, &t_pp_interleaved, 0 },
    { "30.4", "peak in-flight: gpipe m, 1f1b min(p-r, m)", 3, 40, &t_pp_inflight, 0 },
    { "30.4", "executor memory: buffers under RL_MEM_COMM, nothing left", 2, 40, &t_pp_memory, 0 },
    { "30.4", "answers: bubbles of your pipeline", 2, 10, &t_ans_bubble, RL_GRADE_NO_CHILD },
    { "30.5", "positions: contiguous, zig-zag in local order", 3, 10, &t_cp_positions, 0 },
    { "30.5", "log-sum-exp merge", 3, 10, &t_cp_merge, 0 },
    { "30.5", "ring attention = full attention", 5, 30, &t_cp_equal, 0 },
    { "30.5", "ring attention leaves nothing allocated", 1, 30, &t_cp_memory, 0 },
    { "30.5", "K/V passed around the ring, never gathered (trace)", 3, 30, &t_cp_ring, 0 },
    { "30.5", "on a sub-communicator: two CP groups, the ring on the group (trace)", 2, 30, &t_cp_groups, 0 },
    { "30.5", "causal work: the mask's count, accumulated, balanced", 3, 30, &t_cp_balance, 0 },
    { "30.5", "answers: interview questions", 3, 10, &t_ans_interview, RL_GRADE_NO_CHILD },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "30", "model parallelism: TP, SP, PP, CP", "labs/30_tp_pp_sp_cp/README.md", "labs/30_tp_pp_sp_cp/answers.txt",
        steps30, (int)(sizeof steps30 / sizeof steps30[0]), tests30, (int)(sizeof tests30 / sizeof tests30[0]),
        questions30,
        interview30,
    };
    return rl_grade_main(&lab, argc, argv);
}
