/* grade28.c — the grader of Lab 28 (DDP). One Check test per graded behaviour, grouped by
 * step (28.1–28.5), run by grade.c. Learner code runs on simulated ranks (rl_launch);
 * references come from one-rank computations with common/ (the model's own backward on
 * the global batch, direct sums, cost.h / calc.h formulas) and from a bucket rule written
 * out here — never from the solution file. How data moves is read from the run's trace
 * (the runtime's own record: peers, bytes, virtual times), never from counters the code
 * under test can reset. Randomized cases come from rl_grade_rng (the run's seed and the
 * test), and every randomized test prints one "cases:" line. Built twice: against
 * labs/28_ddp/ddp.c and against solutions/28_ddp/ddp.c. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "calc.h"
#include "ddp.h"
#include "apiwatch.h"
#include "grade.h"

#define MAXR 16
#define MAXSTEPS 3

/* ================================================================== shared helpers */

/* What a rank reports back (err holds a whole rl_last_error, at most 1 KiB, and a short prefix). */
typedef struct rank_res {
    int rc;
    char err[1400];
} rank_res;

/* Records an error the code under test reported (and notes it for a crash that may follow). */
static void note_err(rank_res *rr, rl_ctx *ctx, int rc, const char *what)
{
    rr->rc = rc;
    const char *m = rl_last_error(ctx);
    snprintf(rr->err, sizeof rr->err, "%s returned %d (%s)%s%s", what, rc, rl_status_name(rc), m[0] ? ": " : "", m);
    rl_grade_note("%s", rr->err);
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

/* What usually causes a run's mismatch or hang (rc), from what the run left in arg. */
typedef const char *(*launch_advice)(const void *arg, int rc);

/* In a run (the child only): launches fn on n ranks (hw NULL: the default profile); returns
 * rl_launch's status and, when tr is not NULL and the run succeeded, its trace. */
static int launch_hw(int n, const rl_hw *hw, rl_rank_fn fn, void *arg, rl_trace **tr)
{
    rl_opts o = grade_opts(n);
    if (hw)
        o.hw = hw;
    int rc = rl_launch(&o, fn, arg, tr);
    if (tr && rc && *tr)
        rl_trace_free(*tr), *tr = NULL;
    return rc;
}

/* Copies what n ranks reported from the record, each message ended. */
static void take_ranks(rank_res *dst, const rank_res *src, int n)
{
    memcpy(dst, src, (size_t)n * sizeof *dst);
    for (int r = 0; r < n; r++)
        dst[r].err[sizeof dst[r].err - 1] = 0;
}

/* Ends the test with the most useful message when a run of n ranks failed: rc is rl_launch's
 * status, rr what each rank reported; advice (may be NULL) says what usually causes a mismatch
 * or a hang, from arg. */
static void check_launch(int n, int rc, const rank_res *rr, const char *what, launch_advice advice, const void *arg)
{
    /* a rank's own error first; one that says "aborted" is the runtime stopping it after a mismatch or a
     * hang elsewhere, reported below */
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < n; r++)
            if (rr[r].rc && (pass || (rr[r].rc != RL_ERR_ABORTED && rr[r].rc != RL_ERR_MISMATCH))) {
                if (pass && (rc == RL_ERR_MISMATCH || rc == RL_ERR_HANG))
                    break;
                ck_abort_msg("%s on %d rank%s, rank %d: %s", what, n, n == 1 ? "" : "s", r, rr[r].err);
            }
    const char *why = advice && (rc == RL_ERR_HANG || rc == RL_ERR_MISMATCH) ? advice(arg, rc) : NULL;
    if (rc == RL_ERR_HANG)
        ck_abort_msg("%s on %d ranks never finished: the watchdog found a collective or send/recv that never "
                     "completed (%s). The report is below.", what, n,
                     why ? why : "an ungrouped ring of sends deadlocks: issue each step's send and recv between "
                                 "rl_group_start and rl_group_end");
    if (rc == RL_ERR_MISMATCH)
        ck_abort_msg("%s on %d ranks failed: the ranks issued different operations at the same position (the "
                     "runtime's report is below). %s", what, n,
                     why ? why : "Every rank must issue the same calls in the same order.");
    if (rc)
        ck_abort_msg("%s on %d ranks failed: %s (the runtime's report is below)", what, n, rl_status_name(rc));
}

static const rl_hw *grade_hw(void) { return rl_hw_find("h100-nvlink"); }

/* 1 when text names bucket b ("bucket 2", not "bucket 21"), case-insensitive. */
static int names_bucket(const char *text, int b)
{
    char want[32];
    snprintf(want, sizeof want, "bucket %d", b);
    size_t k = strlen(want);
    for (const char *s = text; *s; s++)
        if (strncasecmp(s, want, k) == 0 && !(s[k] >= '0' && s[k] <= '9'))
            return 1;
    return 0;
}

/* ================================================================== 28.1 ring all-reduce */

/* What a ring run leaves in the child's record. */
typedef struct ring_res {
    int rc;                    /* rl_launch's status */
    rank_res r[MAXR];
    int comm_size[MAXR];       /* 0: this rank took part in no communicator */
    int comm_rank[MAXR];
    int members[MAXR][MAXR];   /* per world rank: the world ranks of its communicator, in its rank order */
    char comm_name[MAXR][24];
    int64_t leaked[MAXR];      /* bytes a rank held after its calls and freeing buf, beyond what it held before */
    int64_t grew[MAXR][RL_MEM_NCAT]; /* per category: peak during the calls above what the rank held before them */
    rl_grade_blob out[MAXR][2]; /* per world rank and call: the buffer afterwards, as floats */
    rl_grade_blob trace;
} ring_res;

typedef struct ring_arg {
    int64_t count;
    rl_dtype dtype;
    int split;                 /* 1: rank g joins the communicator of color[g] (RL_COLOR_NONE: none), key[g] */
    int color[MAXR], key[MAXR];
    int reps;                  /* calls on the same buffer (refilled between calls), at most 2; call k is tagged step k */
    ring_res res;              /* the last run's results, from the record */
} ring_arg;

/* A ring run in the child: the case, where its results go, and how to run it. */
typedef struct ring_job {
    const ring_arg *a;
    ring_res *o;
    int W;
    const rl_hw *hw;
    int keep_trace;
} ring_job;

/* The salt of this test's ring inputs (drawn from the run's seed by ring_run, the same in the child
 * and the judge): the inputs follow no formula a lab file could sum in closed form. */
static uint64_t pat_salt;

/* Rank q's input element i: a small integer (-6..6), so that every sum is exact in f32 and bf16. */
static float pat(int q, int64_t i)
{
    uint64_t h = pat_salt ^ ((uint64_t)(q + 1) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (float)(h % 13) - 6.0f;
}

static int ring_rank(rl_ctx *ctx, void *arg)
{
    const ring_job *j = arg;
    const ring_arg *a = j->a;
    ring_res *o = j->o;
    int g = rl_rank(ctx);
    rank_res *rr = &o->r[g];
    rl_comm *w = rl_comm_world(ctx), *comm = w;
    if (a->split) {
        comm = rl_comm_split(w, a->color[g], a->key[g]);
        if (!comm) {
            if (a->color[g] != RL_COLOR_NONE)
                note_err(rr, ctx, RL_ERR_ARG, "rl_comm_split (grader)");
            return 0;
        }
    }
    int n = rl_comm_size(comm);
    o->comm_size[g] = n;
    o->comm_rank[g] = rl_comm_rank(comm);
    for (int q = 0; q < n && q < MAXR; q++)
        o->members[g][q] = rl_comm_global_rank(comm, q);
    snprintf(o->comm_name[g], sizeof o->comm_name[g], "%s", rl_comm_name(comm));
    rl_mem_account *mem = rl_ctx_mem(ctx);
    int64_t held = mem->current_total, base[RL_MEM_NCAT];
    rl_tensor *buf = rl_tensor_new_1d(ctx, "grad", a->dtype, RL_MEM_GRAD, a->count);
    float *got = malloc((size_t)(a->count ? a->count : 1) * sizeof *got);
    rl_mem_reset_peaks(mem);
    for (int k = 0; k < RL_MEM_NCAT; k++)
        base[k] = mem->current[k];
    for (int rep = 0; rep < a->reps && rep < 2 && !rr->rc; rep++) {
        for (int64_t i = 0; i < a->count; i++)
            rl_tensor_set(buf, i, pat(g, i) + (float)rep);
        rl_clear_error(ctx);
        rl_set_tag(ctx, RL_TAG_STEP, rep);
        int rc = ddp_ring_all_reduce(comm, buf);
        rl_set_tag(ctx, RL_TAG_STEP, -1);
        if (rc) {
            note_err(rr, ctx, rc, "ddp_ring_all_reduce");
            break;
        }
        rl_tensor_to_f32(buf, got, a->count);
        o->out[g][rep] = rl_grade_keep(got, (size_t)a->count * sizeof *got);
    }
    free(got);
    for (int k = 0; k < RL_MEM_NCAT; k++)
        o->grew[g][k] = mem->peak[k] - base[k];
    /* measured after buf is freed: a view of buf left alive keeps buf's storage allocated */
    rl_tensor_free(buf);
    o->leaked[g] = mem->current_total - held;
    if (a->split)
        rl_comm_free(comm);
    return 0;
}

static void ring_produce(void *out, void *arg)
{
    ring_job *j = arg;
    j->o = out;
    rl_trace *t = NULL;
    j->o->rc = launch_hw(j->W, j->hw, ring_rank, j, j->keep_trace ? &t : NULL);
    j->o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Describes a ring case for messages ("n=5, count=37, f32, sub-communicators of ..."). */
static void ring_what(const ring_arg *a, int W, char *what, size_t size)
{
    if (!a->split) {
        snprintf(what, size, "ddp_ring_all_reduce(count=%lld, %s)", (long long)a->count, rl_dtype_name(a->dtype));
        return;
    }
    size_t k = (size_t)snprintf(what, size, "ddp_ring_all_reduce(count=%lld, %s) on sub-communicators (colors",
                                (long long)a->count, rl_dtype_name(a->dtype));
    for (int g = 0; g < W && k + 8 < size; g++)
        k += (size_t)snprintf(what + k, size - k, " %d", a->color[g]);
    if (k + 2 < size)
        snprintf(what + k, size - k, ")");
}

/* The communicators the judge expects from its own case: per world rank its size (0: in none)
 * and its members in rank order (rl_comm_split: by key, then by world rank). */
static void ring_groups(const ring_arg *a, int W, int size[MAXR], int members[MAXR][MAXR])
{
    for (int g = 0; g < W; g++) {
        size[g] = 0;
        if (a->split && a->color[g] == RL_COLOR_NONE)
            continue;
        for (int q = 0; q < W; q++)
            if (!a->split || a->color[q] == a->color[g])
                members[g][size[g]++] = q;
        for (int i = 1; i < size[g]; i++) /* insertion sort by (key, world rank) */
            for (int k = i; k > 0 && a->split && a->key[members[g][k - 1]] > a->key[members[g][k]]; k--) {
                int t = members[g][k];
                members[g][k] = members[g][k - 1];
                members[g][k - 1] = t;
            }
    }
}

/* Runs the learner's ring on W ranks (split: a->color/key already set) and checks every element
 * exactly; keeps the trace in *tr when tr is not NULL. */
static void ring_run(int W, int64_t count, rl_dtype dt, int split, int reps, ring_arg *a, const rl_hw *hw,
                     rl_trace **tr)
{
    rl_rng salt = rl_grade_rng(0x7061); /* the same draw in the child and the judge */
    pat_salt = rl_rng_next(&salt);
    int color[MAXR], key[MAXR];
    memcpy(color, a->color, sizeof color);
    memcpy(key, a->key, sizeof key);
    memset(a, 0, sizeof *a);
    memcpy(a->color, color, sizeof color);
    memcpy(a->key, key, sizeof key);
    a->count = count;
    a->dtype = dt;
    a->split = split;
    a->reps = reps;
    char what[256];
    ring_what(a, W, what, sizeof what);
    ring_job job = { a, NULL, W, hw, tr != NULL };
    const ring_res *o = rl_grade_run("ring", sizeof *o, ring_produce, &job);
    a->res = *o;
    ring_res *res = &a->res;
    take_ranks(res->r, o->r, W);
    for (int g = 0; g < W; g++) {
        res->comm_name[g][sizeof res->comm_name[g] - 1] = 0;
        if (res->comm_size[g] < 0 || res->comm_size[g] > W)
            res->comm_size[g] = 0;
        if (res->comm_rank[g] < 0 || res->comm_rank[g] >= res->comm_size[g])
            res->comm_rank[g] = 0;
        for (int q = 0; q < MAXR; q++)
            if (res->members[g][q] < 0 || res->members[g][q] >= W)
                res->members[g][q] = 0;
    }
    check_launch(W, res->rc, res->r, what, NULL, NULL);
    /* who took part is the judge's to know, from its own case: the record must agree with it,
     * and every check below uses the judge's groups */
    int size[MAXR], members[MAXR][MAXR];
    ring_groups(a, W, size, members);
    for (int g = 0; g < W; g++) {
        ck_assert_msg(res->comm_size[g] == size[g] && !memcmp(res->members[g], members[g], sizeof(int) * (size_t)size[g]),
                      "%s on %d ranks: the run's record says rank %d's communicator has %d ranks, the case %d: the "
                      "record of the run was changed", what, W, g, res->comm_size[g], size[g]);
        res->comm_size[g] = size[g];
        memcpy(res->members[g], members[g], sizeof members[g]);
    }
    if (tr)
        *tr = rl_grade_trace(res->trace);
    for (int g = 0; g < W; g++) {
        int n = res->comm_size[g];
        if (!n)
            continue;
        int64_t wrong = 0, first = 0;
        double got1 = 0, want1 = 0;
        for (int rep = 0; rep < reps; rep++) {
            const float *out = rl_grade_blob_get(res->out[g][rep], sizeof(float), (size_t)count);
            for (int64_t i = 0; i < count; i++) {
                float want = 0;
                for (int q = 0; q < n; q++)
                    want += pat(res->members[g][q], i) + (float)rep;
                if (out[i] != want && !wrong++)
                    first = i, got1 = out[i], want1 = want;
            }
        }
        ck_assert_msg(wrong == 0,
                      "%s on %d ranks: rank %d has %lld wrong elements; first: element %lld = %g, expected %g "
                      "(the sum over %s)", what, W, g, (long long)wrong, (long long)first, got1, want1,
                      split ? "its sub-communicator's ranks" : "all ranks");
    }
}


static void ring_check(int n, int64_t count, rl_dtype dt, int split, int reps, ring_arg *a);
static void ring_pattern(const ring_arg *a, int W, const rl_trace *t, const char *what);

/* Draws a random split of W ranks into 1..3 communicators (a rank may sit out), with random
 * keys; writes the colors into a and a description into the cases line. */
static void random_split(rl_rng *g, int W, ring_arg *a, rl_grade_text *cases)
{
    int ngroups = rl_grade_pick(g, 1, W >= 6 ? 3 : 2);
    int perm[MAXR];
    for (int q = 0; q < W; q++)
        perm[q] = q;
    rl_grade_shuffle(g, perm, W);
    for (int q = 0; q < W; q++) {
        a->color[q] = rl_grade_pick(g, 0, ngroups - 1);
        a->key[q] = perm[q];
    }
    if (W >= 4 && rl_grade_pick(g, 0, 2) == 0) /* one rank in no communicator */
        a->color[rl_grade_pick(g, 0, W - 1)] = RL_COLOR_NONE;
    rl_grade_text_add(cases, " colors");
    for (int q = 0; q < W; q++)
        rl_grade_text_add(cases, q ? ",%d" : "=%d", a->color[q]);
    rl_grade_text_add(cases, " keys");
    for (int q = 0; q < W; q++)
        rl_grade_text_add(cases, q ? ",%d" : "=%d", a->key[q]);
}

START_TEST(t_ring_world_sizes)
{
    ring_arg *a = calloc(1, sizeof *a);
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int n = 1; n <= 8; n++) {
        int64_t count = (int64_t)n * rl_grade_pick(&g, 5, 60);
        rl_grade_text_add(&cases, "%sn=%d count=%lld", n > 1 ? "; " : "", n, (long long)count);
        ring_check(n, count, RL_F32, 0, 2, a);
        for (int r = 0; r < n; r++)
            ck_assert_msg(a->res.leaked[r] == 0,
                          "ddp_ring_all_reduce(count=%lld) on %d ranks: after two calls, once the grader has freed "
                          "the buffer, rank %d still holds %lld bytes more than before: every call must free what it "
                          "allocates (README 28.1: \"nothing left allocated when it returns\"). A view left alive "
                          "keeps its whole buffer allocated after the buffer is "
                          "freed; in a training run that is a bucket per step",
                          (long long)count, n, r, (long long)a->res.leaked[r]);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
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
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 5; k++) {
        int n = rl_grade_pick(&g, 2, 8);
        int64_t count = rl_grade_pick(&g, n + 1, 3000);
        if (count % n == 0)
            count++;
        rl_grade_text_add(&cases, "%sn=%d count=%lld", k ? "; " : "", n, (long long)count);
        ring_check(n, count, RL_F32, 0, 1, a);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
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
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 4; k++) {
        int n = rl_grade_pick(&g, 2, 8);
        int64_t count = k == 3 ? 0 : rl_grade_pick(&g, 1, n - 1);
        rl_grade_text_add(&cases, "%sn=%d count=%lld", k ? "; " : "", n, (long long)count);
        ring_check(n, count, RL_F32, 0, 1, a);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(a);
}
END_TEST

START_TEST(t_ring_bf16)
{
    ring_arg *a = calloc(1, sizeof *a);
    ring_check(4, 1000, RL_BF16, 0, 1, a);
    ring_check(6, 77, RL_BF16, 0, 1, a);
    rl_rng g = rl_grade_rng(1);
    int n = rl_grade_pick(&g, 2, 8);
    int64_t count = rl_grade_pick(&g, 1, 900);
    printf("cases: n=%d count=%lld\n", n, (long long)count);
    ring_check(n, count, RL_BF16, 0, 2, a);
    free(a);
}
END_TEST

/* Checks the ring's memory in a finished ring_run: during the calls nothing but RL_MEM_COMM grew,
 * and that by at most one scratch tensor of ceil(count/n) elements. */
static void check_ring_memory(const ring_arg *a, int W, const char *what)
{
    int64_t es = rl_dtype_size(a->dtype);
    for (int g = 0; g < W; g++) {
        int n = a->res.comm_size[g];
        if (!n)
            continue;
        for (int k = 0; k < RL_MEM_NCAT; k++)
            ck_assert_msg(k == RL_MEM_COMM || a->res.grew[g][k] <= 0,
                          "%s on %d ranks: while the ring ran, rank %d's %s memory grew by %lld bytes; the ring's "
                          "one allocation is its scratch tensor, charged to RL_MEM_COMM (README 28.1: \"at most "
                          "⌈count/n⌉ elements of extra memory at a time, charged as `RL_MEM_COMM`\"), so the memory "
                          "view shows it "
                          "as communication buffers", what, n, g, rl_mem_cat_name((rl_mem_cat)k),
                          (long long)a->res.grew[g][k]);
        int64_t chunk = (a->count + n - 1) / n;
        ck_assert_msg(a->res.grew[g][RL_MEM_COMM] <= chunk * es,
                      "%s on %d ranks: at its peak rank %d's RL_MEM_COMM memory grew by %lld bytes; one scratch "
                      "tensor of ceil(count/n) = %lld elements is %lld bytes (README 28.1: \"at most ⌈count/n⌉ "
                      "elements of extra memory at a time\"): every message is one chunk, so a scratch of the whole "
                      "buffer, or a second one, costs (n-1)/n of the buffer more on every GPU", what, n, g,
                      (long long)a->res.grew[g][RL_MEM_COMM], (long long)chunk, (long long)(chunk * es));
    }
}

START_TEST(t_ring_memory)
{
    ring_arg *a = calloc(1, sizeof *a);
    char what[256];
    struct { int n; int64_t count; rl_dtype dt; } fixed[] = { { 4, 1001, RL_F32 }, { 6, 77, RL_BF16 }, { 5, 3, RL_F32 } };
    for (int k = 0; k < 3; k++) {
        ring_check(fixed[k].n, fixed[k].count, fixed[k].dt, 0, 2, a);
        ring_what(a, fixed[k].n, what, sizeof what);
        check_ring_memory(a, fixed[k].n, what);
    }
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 3; k++) {
        int n = rl_grade_pick(&g, 2, 8);
        int64_t count = rl_grade_pick(&g, 1, 3000);
        rl_dtype dt = k == 2 ? RL_BF16 : RL_F32;
        rl_grade_text_add(&cases, "%sn=%d count=%lld %s", k ? "; " : "", n, (long long)count, rl_dtype_name(dt));
        ring_check(n, count, dt, 0, 1, a);
        ring_what(a, n, what, sizeof what);
        check_ring_memory(a, n, what);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(a);
}
END_TEST

/* No send or recv of a sub-communicator run may travel on the world communicator. */
static void check_no_world_traffic(const ring_arg *a, const rl_trace *t, int W, const char *what)
{
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if ((e->cat == RL_CAT_P2P || e->cat == RL_CAT_COMM) && e->tags[RL_TAG_STEP] >= 0 && e->rank < W &&
            a->res.comm_size[e->rank] &&
            strcmp(e->comm, a->res.comm_name[e->rank]) != 0)
            ck_abort_msg("%s: rank %d's %s (%.0f bytes) went over communicator '%s', but the ring was called on "
                         "'%s' (%d ranks): a ring on comm must use comm, whose ranks are 0..%d of comm, not world "
                         "ranks", what, e->rank, e->name, e->bytes, e->comm, a->res.comm_name[e->rank],
                         a->res.comm_size[e->rank], a->res.comm_size[e->rank] - 1);
    }
}

START_TEST(t_ring_subcomm)
{
    ring_arg *a = calloc(1, sizeof *a);
    rl_trace *t = NULL;
    /* even and odd world ranks, each group in reverse key order */
    for (int q = 0; q < 7; q++)
        a->color[q] = q % 2, a->key[q] = -q;
    char what[256];
    ring_run(6, 300, RL_F32, 1, 1, a, NULL, &t);
    check_no_world_traffic(a, t, 6, "even/odd sub-communicators of 6 ranks");
    ring_what(a, 6, what, sizeof what);
    ring_pattern(a, 6, t, what);
    rl_trace_free(t);
    t = NULL;
    for (int q = 0; q < 7; q++)
        a->color[q] = q % 2, a->key[q] = -q;
    ring_check(7, 101, RL_F32, 1, 1, a); /* groups of 4 and 3 */
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 3; k++) {
        int W = rl_grade_pick(&g, 3, 8);
        int64_t count = rl_grade_pick(&g, 0, 400);
        rl_grade_text_add(&cases, "%sW=%d count=%lld", k ? "; " : "", W, (long long)count);
        random_split(&g, W, a, &cases);
        ring_run(W, count, RL_F32, 1, 1, a, NULL, &t);
        check_no_world_traffic(a, t, W, "random sub-communicators");
        ring_what(a, W, what, sizeof what);
        ring_pattern(a, W, t, what);
        rl_trace_free(t);
        t = NULL;
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(a);
}
END_TEST

/* The p2p and collective events of world rank g in call rep, in trace order. */
static int call_events(const rl_trace *t, int g, int rep, const rl_trace_event **out, int max)
{
    int k = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank == g && e->tags[RL_TAG_STEP] == rep && (e->cat == RL_CAT_P2P || e->cat == RL_CAT_COMM) &&
            k < max)
            out[k++] = e;
    }
    return k;
}

#define RING_MAXEV 4096

/* Checks the ring's pattern in the trace of a ring_run: no collective; every send goes to one
 * neighbour and every recv comes from the other, the same direction on every rank of a
 * communicator; each message at most one chunk; 2(n-1) sends when every chunk is non-empty;
 * 2(n-1) x S bytes over the communicator's ranks, 2(n-1)/n x S per rank when n divides count. */
static void ring_pattern(const ring_arg *a, int W, const rl_trace *t, const char *what)
{
    const rl_trace_event **ev = malloc(RING_MAXEV * sizeof *ev);
    int64_t es = rl_dtype_size(a->dtype);
    double S = (double)a->count * (double)es;
    for (int rep = 0; rep < a->reps; rep++) {
        int dir[MAXR] = { 0 };
        double sent[MAXR] = { 0 }, recvd[MAXR] = { 0 };
        for (int g = 0; g < W; g++) {
            int n = a->res.comm_size[g];
            if (!n)
                continue;
            int cr = a->res.comm_rank[g];
            int right = a->res.members[g][(cr + 1) % n], left = a->res.members[g][(cr + n - 1) % n];
            int64_t chunk = (a->count + n - 1) / n;
            int k = call_events(t, g, rep, ev, RING_MAXEV), nsend = 0, nrecv = 0;
            for (int j = 0; j < k; j++) {
                const rl_trace_event *e = ev[j];
                if (e->cat == RL_CAT_COMM)
                    ck_abort_msg("%s on %d ranks: rank %d called %s (%.0f bytes), a collective; the ring is built "
                                 "from rl_send and rl_recv only (README 28.1: \"using only `rl_send` / `rl_recv`\")",
                                 what, n, g, e->name, e->bytes);
                if (n == 1 || a->count == 0)
                    ck_abort_msg("%s: rank %d made a %s although %s: there is nothing to send (README 28.1: "
                                 "\"nothing at all for n = 1 or count = 0\")", what, g, e->name,
                                 n == 1 ? "it is alone in its communicator" : "the buffer is empty");
                int is_send = strcmp(e->name, "send") == 0;
                ck_assert_msg(e->bytes > 0,
                              "%s on %d ranks: rank %d posted a %s of 0 bytes (an empty chunk); when count < n some "
                              "chunks are empty, and a ring step skips both the send and the matching receive of an "
                              "empty chunk (README 28.1: \"a chunk that comes out empty is simply not sent\")", what,
                              n, g, e->name);
                ck_assert_msg(e->bytes <= (double)(chunk * es),
                              "%s on %d ranks: rank %d's %s moved %.0f bytes; a ring step moves one chunk, at most "
                              "ceil(count/n) = %lld elements = %lld bytes (README 28.1: \"each at most "
                              "⌈count/n⌉ elements and never "
                              "empty\")", what, n, g, e->name, e->bytes, (long long)chunk, (long long)(chunk * es));
                if (is_send) {
                    int d = e->peer == right ? 1 : e->peer == left ? -1 : 0;
                    ck_assert_msg(d != 0,
                                  "%s on %d ranks: rank %d (rank %d of its communicator) sent %.0f bytes to world "
                                  "rank %d, which is not one of its ring neighbours (world ranks %d and %d). Every "
                                  "ring step sends one chunk to the next rank round the ring (README 28.1: \"only "
                                  "to and from the two ring neighbours (one direction for the whole call)\"; either "
                                  "direction is fine); sending each chunk straight to the rank that owns it is not "
                                  "a ring",
                                  what, n, g, cr, e->bytes, e->peer, right, left);
                    if (!dir[g])
                        dir[g] = d;
                    ck_assert_msg(n == 2 || d == dir[g],
                                  "%s on %d ranks: rank %d sent to its %s neighbour, then to its %s one; one call goes "
                                  "round the ring in one direction (README 28.1: \"one direction for "
                                  "the whole call\")", what, n, g,
                                  dir[g] > 0 ? "right" : "left", d > 0 ? "right" : "left");
                    nsend++;
                    sent[g] += e->bytes;
                } else {
                    nrecv++;
                    recvd[g] += e->bytes;
                }
            }
            for (int j = 0; j < k; j++) { /* receives come from the other side */
                const rl_trace_event *e = ev[j];
                if (strcmp(e->name, "recv") != 0)
                    continue;
                int want = dir[g] < 0 ? right : left;
                ck_assert_msg(n == 2 || !dir[g] || e->peer == want,
                              "%s on %d ranks: rank %d sends to its %s neighbour (world rank %d) but received from "
                              "world rank %d; in a ring step each rank receives from the neighbour on the other side "
                              "(world rank %d)", what, n, g, dir[g] > 0 ? "right" : "left",
                              dir[g] > 0 ? right : left, e->peer, want);
            }
            ck_assert_msg(nsend <= 2 * (n - 1) && nrecv <= 2 * (n - 1),
                          "%s on %d ranks: rank %d made %d sends and %d receives; a ring all-reduce takes 2(n-1) = %d "
                          "steps of one send and one receive (README 28.1)", what, n, g, nsend, nrecv, 2 * (n - 1));
            if (n > 1 && a->count >= (int64_t)n * n)
                ck_assert_msg(nsend == 2 * (n - 1) && nrecv == 2 * (n - 1),
                              "%s on %d ranks: rank %d made %d sends and %d receives; with every chunk non-empty a "
                              "ring all-reduce takes exactly 2(n-1) = %d steps, each one send and one receive "
                              "(README 28.1)", what, n, g, nsend, nrecv, 2 * (n - 1));
            if (n > 1 && a->count % n == 0) {
                double want = rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n, S);
                ck_assert_msg(fabs(sent[g] - want) < 0.5 && fabs(recvd[g] - want) < 0.5,
                              "%s on %d ranks, S = %.0f bytes: rank %d sent %.0f and received %.0f bytes; a ring "
                              "all-reduce moves 2(n-1)/n x S = %.0f bytes each way on every rank (a gather to one "
                              "root makes that rank send (n-1) x S)", what, n, S, g, sent[g], recvd[g], want);
            }
        }
        for (int g = 0; g < W; g++) { /* per communicator: one direction, 2(n-1) x S bytes in all */
            int n = a->res.comm_size[g];
            if (n < 2 || a->res.comm_rank[g] != 0)
                continue;
            double tot_s = 0, tot_r = 0;
            for (int q = 0; q < n; q++) {
                int m = a->res.members[g][q];
                tot_s += sent[m];
                tot_r += recvd[m];
                ck_assert_msg(n == 2 || !dir[m] || !dir[g] || dir[m] == dir[g],
                              "%s on %d ranks: rank %d sends to its %s neighbour but rank %d to its %s one; every "
                              "rank must go round the ring the same way", what, n, g, dir[g] > 0 ? "right" : "left",
                              m, dir[m] > 0 ? "right" : "left");
            }
            double want = 2.0 * (n - 1) * S;
            ck_assert_msg(fabs(tot_s - want) < 0.5 && fabs(tot_r - want) < 0.5,
                          "%s on %d ranks, S = %.0f bytes: the ranks sent %.0f and received %.0f bytes in all; a "
                          "ring all-reduce passes every chunk n-1 times in each phase: 2(n-1) x S = %.0f bytes",
                          what, n, S, tot_s, tot_r, want);
        }
    }
    free(ev);
}

/* Runs a case and checks the sums and, as every 28.1 test does (ranks are threads of one
 * process: sums alone could be read straight out of the other ranks' buffers), the ring's
 * traffic from the trace. */
static void ring_check(int n, int64_t count, rl_dtype dt, int split, int reps, ring_arg *a)
{
    rl_trace *t = NULL;
    char what[256];
    ring_run(n, count, dt, split, reps, a, NULL, &t);
    ring_what(a, n, what, sizeof what);
    ring_pattern(a, n, t, what);
    rl_trace_free(t);
}

START_TEST(t_ring_pattern)
{
    ring_arg *a = calloc(1, sizeof *a);
    rl_trace *t = NULL;
    char what[256];
    /* divisible counts: the exact per-rank bytes; n = 1 and count 0: nothing; count < n: empty chunks */
    struct { int n; int64_t count; } fixed[] = { { 2, 2048 }, { 3, 3072 }, { 4, 4096 }, { 5, 5120 }, { 8, 8192 },
                                                 { 1, 1024 }, { 6, 0 },    { 8, 5 },    { 5, 3 } };
    for (int i = 0; i < 9; i++) {
        ring_run(fixed[i].n, fixed[i].count, RL_F32, 0, 1, a, NULL, &t);
        ring_what(a, fixed[i].n, what, sizeof what);
        ring_pattern(a, fixed[i].n, t, what);
        rl_trace_free(t);
        t = NULL;
    }
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 6; k++) {
        int W = rl_grade_pick(&g, 2, 8), split = k >= 4;
        int64_t count = k == 0 ? (int64_t)W * rl_grade_pick(&g, 1, 200) : rl_grade_pick(&g, 1, 2500);
        rl_grade_text_add(&cases, "%sn=%d count=%lld", k ? "; " : "", W, (long long)count);
        if (split)
            random_split(&g, W, a, &cases);
        ring_run(W, count, k == 3 ? RL_BF16 : RL_F32, split, 2, a, NULL, &t);
        ring_what(a, W, what, sizeof what);
        ring_pattern(a, W, t, what);
        rl_trace_free(t);
        t = NULL;
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(a);
}
END_TEST

/* Busy time of world rank g's p2p events in call rep: the length of the union of their spans. */
static double p2p_busy(const rl_trace *t, int g, int rep)
{
    int cap = 256, k = 0;
    double (*iv)[2] = malloc((size_t)cap * sizeof *iv);
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank != g || e->tags[RL_TAG_STEP] != rep || e->cat != RL_CAT_P2P)
            continue;
        if (k == cap)
            iv = realloc(iv, (size_t)(cap *= 2) * sizeof *iv);
        iv[k][0] = e->vstart, iv[k][1] = e->vend, k++;
    }
    for (int i = 1; i < k; i++) /* insertion sort by start */
        for (int j = i; j > 0 && iv[j][0] < iv[j - 1][0]; j--) {
            double s = iv[j][0], e = iv[j][1];
            iv[j][0] = iv[j - 1][0], iv[j][1] = iv[j - 1][1];
            iv[j - 1][0] = s, iv[j - 1][1] = e;
        }
    double busy = 0, cs = 0, ce = -1;
    for (int i = 0; i < k; i++) {
        if (iv[i][0] > ce) {
            if (ce > cs)
                busy += ce - cs;
            cs = iv[i][0], ce = iv[i][1];
        } else if (iv[i][1] > ce)
            ce = iv[i][1];
    }
    if (ce > cs)
        busy += ce - cs;
    free(iv);
    return busy;
}

START_TEST(t_ring_time)
{
    ring_arg *a = calloc(1, sizeof *a);
    rl_trace *t = NULL;
    const rl_hw *hw = rl_hw_find("a100-pcie"); /* slow links: the transfers dominate the adds */
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 4; k++) {
        int n = k == 0 ? 3 : rl_grade_pick(&g, 2, 8);
        int64_t count = (int64_t)n * n * rl_grade_pick(&g, 200, 2000) + (k == 3 ? rl_grade_pick(&g, 1, n - 1) : 0);
        rl_grade_text_add(&cases, "%sn=%d count=%lld", k ? "; " : "", n, (long long)count);
        ring_run(n, count, RL_F32, 0, 1, a, hw, &t);
        char what[256];
        ring_what(a, n, what, sizeof what);
        ring_pattern(a, n, t, what);
        int granks[MAXR];
        for (int q = 0; q < n; q++)
            granks[q] = q;
        const rl_link *l = rl_hw_group_link(hw, granks, n);
        int64_t chunk = (count + n - 1) / n;
        double step = l->alpha + (double)chunk * 4 / l->bw, ab = 2.0 * (n - 1) * step;
        for (int r = 0; r < n; r++) {
            double busy = p2p_busy(t, r, 0);
            ck_assert_msg(busy <= 1.25 * ab + 1e-9,
                          "ddp_ring_all_reduce(count=%lld) on %d ranks of %s: rank %d's sends and receives kept its "
                          "link busy for %.1f us of virtual time, but 2(n-1) = %d steps of one chunk (%lld elements) "
                          "take %.1f us when each step's send and receive run at the same time (README 28.1: \"a "
                          "step's "
                          "send and receive are in flight at the same time\"). Sends and receives issued one after "
                          "the other take about twice as long", (long long)count, n, hw->name, r, busy * 1e6,
                          2 * (n - 1), (long long)chunk, ab * 1e6);
        }
        rl_trace_free(t);
        t = NULL;
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(a);
}
END_TEST

/* ================================================================== 28.2 buckets */

/* The bucket rule, written out independently: reverse order, close at the cap, no splits,
 * tied duplicates bucketed once with their original (followed through to the original). */
RL_API_WATCHED
static void ref_assign(const ddp_param_desc *d, int n, int64_t first, int64_t cap, ddp_bucket_plan *p)
{
    RL_API_ENTRY(); /* a reference: a lab file reaching it fails the test (grader/allow/) */
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

/* Appends a plan, bucket by bucket with parameter names and bytes, to b. */
static void describe_plan(const ddp_param_desc *d, const ddp_bucket_plan *p, rl_grade_text *b)
{
    if (p->nbuckets <= 0) {
        rl_grade_text_add(b, "(no buckets)");
        return;
    }
    for (int k = 0; k < p->nbuckets; k++) {
        rl_grade_text_add(b, "%s[", k ? " " : "");
        for (int j = 0; j < p->buckets[k].nparams && j < 1000; j++) {
            int idx = p->buckets[k].first + j;
            int i = idx >= 0 && idx < p->norder ? p->order[idx] : -1;
            rl_grade_text_add(b, "%s%s", j ? " " : "", i >= 0 && i < p->nparams && d[i].name ? d[i].name : "?");
        }
        rl_grade_text_add(b, "] %lld B", (long long)p->buckets[k].bytes);
    }
}

/* What ddp_assign_buckets left in the child's record: its status and message, and the plan. */
typedef struct plan_res {
    int rc;
    char err[1100];
    int nbuckets, norder;      /* as the code under test set them */
    rl_grade_blob buckets, order, bucket_of, offset_of; /* what fits in the plan's arrays */
} plan_res;

/* A call of ddp_assign_buckets: its arguments. */
typedef struct plan_job {
    const ddp_param_desc *d;
    int n;
    int64_t first, cap;
} plan_job;

static void plan_produce(void *out, void *arg)
{
    const plan_job *j = arg;
    plan_res *o = out;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    ddp_bucket_plan p;
    ck_assert(ddp_plan_alloc(&p, j->n) == 0);
    rl_clear_error(ctx);
    o->rc = ddp_assign_buckets(ctx, j->d, j->n, j->first, j->cap, &p);
    snprintf(o->err, sizeof o->err, "%s", rl_last_error(ctx));
    int cap = j->n > 0 ? j->n : 1; /* ddp_plan_alloc's room */
    o->nbuckets = p.nbuckets;
    o->norder = p.norder;
    int nb = p.nbuckets < 0 ? 0 : p.nbuckets > cap ? cap : p.nbuckets;
    int no = p.norder < 0 ? 0 : p.norder > cap ? cap : p.norder;
    o->buckets = rl_grade_keep(p.buckets, (size_t)nb * sizeof *p.buckets);
    o->order = rl_grade_keep(p.order, (size_t)no * sizeof *p.order);
    o->bucket_of = rl_grade_keep(p.bucket_of, (size_t)(j->n > 0 ? j->n : 0) * sizeof *p.bucket_of);
    o->offset_of = rl_grade_keep(p.offset_of, (size_t)(j->n > 0 ? j->n : 0) * sizeof *p.offset_of);
    ddp_plan_free(&p);
    rl_ctx_free_standalone(ctx);
}

/* Runs ddp_assign_buckets(d, n, first, cap) in the child; the judge gets what it returned. */
static const plan_res *plan_run(const ddp_param_desc *d, int n, int64_t first, int64_t cap)
{
    plan_job j = { d, n, first, cap };
    return rl_grade_run("ddp_assign_buckets", sizeof(plan_res), plan_produce, &j);
}

/* The plan a run returned, as a plan to read (its arrays point into the record): nbuckets and
 * norder are the counts the record holds, *claimed_ok 0 when the code under test claimed more. */
static ddp_bucket_plan plan_of(const plan_res *o, int n, int *claimed_ok)
{
    ddp_bucket_plan p = { 0 };
    p.nparams = n;
    p.nbuckets = (int)rl_grade_blob_count(o->buckets, sizeof(ddp_bucket));
    p.norder = (int)rl_grade_blob_count(o->order, sizeof(int));
    p.buckets = (ddp_bucket *)rl_grade_blob_get(o->buckets, sizeof(ddp_bucket), (size_t)p.nbuckets);
    p.order = (int *)rl_grade_blob_get(o->order, sizeof(int), (size_t)p.norder);
    p.bucket_of = (int *)rl_grade_blob_get(o->bucket_of, sizeof(int), (size_t)(n > 0 ? n : 0));
    p.offset_of = (int64_t *)rl_grade_blob_get(o->offset_of, sizeof(int64_t), (size_t)(n > 0 ? n : 0));
    *claimed_ok = o->nbuckets == p.nbuckets && o->norder == p.norder;
    return p;
}

/* Runs the learner's assignment and compares it with the reference; ends the test on a difference. */
static void plan_check(const char *what, const ddp_param_desc *d, int n, int64_t first, int64_t cap)
{
    const plan_res *o = plan_run(d, n, first, cap);
    if (o->rc)
        ck_abort_msg("%s: ddp_assign_buckets returned %d (%s): %.*s", what, o->rc, rl_status_name(o->rc),
                     (int)sizeof o->err, o->err[0] ? o->err : "(no message)");
    int claimed_ok;
    ddp_bucket_plan got = plan_of(o, n, &claimed_ok), want;
    ck_assert_msg(claimed_ok, "%s: ddp_assign_buckets set nbuckets = %d and norder = %d, more than the %d entries "
                  "the plan has room for (ddp_plan_alloc: one per parameter)", what, o->nbuckets, o->norder, n);
    ck_assert(ddp_plan_alloc(&want, n) == 0);
    ref_assign(d, n, first, cap, &want);
    int same = got.nbuckets == want.nbuckets && got.norder == want.norder;
    for (int b = 0; same && b < want.nbuckets; b++)
        same = got.buckets[b].first == want.buckets[b].first && got.buckets[b].nparams == want.buckets[b].nparams &&
               got.buckets[b].numel == want.buckets[b].numel && got.buckets[b].bytes == want.buckets[b].bytes;
    for (int k = 0; same && k < want.norder; k++)
        same = got.order[k] == want.order[k];
    if (!same) {
        rl_grade_text m = { 0 };
        rl_grade_text_add(&m, "%s (first cap %lld B, cap %lld B): expected %d bucket(s) ", what, (long long)first,
                          (long long)cap, want.nbuckets);
        describe_plan(d, &want, &m);
        rl_grade_text_add(&m, "; got %d: ", got.nbuckets);
        describe_plan(d, &got, &m);
        rl_grade_text_add(&m,
                          ". The rule: walk the parameters in reverse registration order, append each whole, and close "
                          "the bucket as soon as its bytes reach its cap (>=), first_cap_bytes for bucket 0, cap_bytes "
                          "after; a tied duplicate is skipped");
        ck_abort_msg("%s", rl_grade_text_str(&m));
    }
    for (int i = 0; i < n; i++)
        ck_assert_msg(got.bucket_of[i] == want.bucket_of[i] && got.offset_of[i] == want.offset_of[i],
                      "%s: parameter %d (%s%s) has bucket_of %d, offset_of %lld; expected %d, %lld%s", what, i,
                      d[i].name, d[i].tied_to >= 0 ? ", a tied duplicate" : "", got.bucket_of[i],
                      (long long)got.offset_of[i], want.bucket_of[i], (long long)want.offset_of[i],
                      d[i].tied_to >= 0 ? " (its original's bucket and offset)" : " (offsets count elements)");
    ddp_plan_free(&want);
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
    /* caps one byte above a bucket's exact size: those buckets stay open (the cap is in bytes) */
    plan_check("the same, caps 1 KiB + 1 B and 3 KiB + 3 B (a bucket 1 byte short of its cap stays open)", d, 9,
               1025, 3075);
    /* bf16: bytes are numel x 2 */
    for (int i = 0; i < 9; i++)
        d[i].dtype = RL_BF16;
    plan_check("the same in bf16 (2 bytes per element)", d, 9, 1024, 3072);
    plan_check("the same in bf16, caps 1 KiB / 2 + 1 B and 3 KiB / 2 + 1 B (odd caps in bytes)", d, 9, 513, 1537);
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
    const plan_res *o = plan_run(d, 6, 1 * MIB, 25 * MIB);
    ck_assert_int_eq(o->rc, 0);
    int claimed_ok;
    ddp_bucket_plan p = plan_of(o, 6, &claimed_ok);
    int64_t total = 0;
    for (int b = 0; b < p.nbuckets; b++)
        total += p.buckets[b].bytes;
    ck_assert_msg(total == (64 * 1024 + 4096 + 32 * 1024 + 256) * 4,
                  "the buckets hold %lld bytes; the tied weight must be counted once (%d bytes)", (long long)total,
                  (64 * 1024 + 4096 + 32 * 1024 + 256) * 4);
    /* a duplicate in the middle of the list, pointing at another duplicate */
    ddp_param_desc e[7] = {
        { "a", 300, RL_F32, -1 }, { "b", 500, RL_F32, -1 }, { "a2", 300, RL_F32, 0 }, { "c", 700, RL_F32, -1 },
        { "a3", 300, RL_F32, 2 }, { "d", 100, RL_F32, -1 }, { "b2", 500, RL_F32, 1 },
    };
    plan_check("duplicates in the middle (a3 -> a2 -> a), caps 1 KiB / 2 KiB", e, 7, 1024, 2048);
}
END_TEST

START_TEST(t_buckets_empty_and_bad)
{
    plan_check("empty model", NULL, 0, 1 * MIB, 25 * MIB);
    ddp_param_desc d[2] = { { "a", 10, RL_F32, -1 }, { "b", 10, RL_F32, -1 } };
    struct { int64_t first, cap; } bad[] = { { 1 * MIB, 0 }, { 0, 25 * MIB }, { -5, 25 * MIB }, { 1 * MIB, -1 } };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const plan_res *o = plan_run(d, 2, bad[k].first, bad[k].cap);
        ck_assert_msg(o->rc == RL_ERR_ARG, "first cap %lld B, cap %lld B: expected RL_ERR_ARG (%d), got %d (%s); caps "
                      "must be > 0 bytes", (long long)bad[k].first, (long long)bad[k].cap, RL_ERR_ARG, o->rc,
                      rl_status_name(o->rc));
        ck_assert_msg(o->err[0], "first cap %lld B, cap %lld B: refused without a message (use rl_error)",
                      (long long)bad[k].first, (long long)bad[k].cap);
    }
}
END_TEST

/* Expects ddp_assign_buckets to refuse d with RL_ERR_ARG and a message. */
static void expect_refusal(const char *what, const ddp_param_desc *d, int n)
{
    const plan_res *o = plan_run(d, n, 1 * MIB, 25 * MIB);
    ck_assert_msg(o->rc == RL_ERR_ARG, "%s: expected RL_ERR_ARG (%d), got %d (%s); ddp_assign_buckets refuses "
                  "negative sizes, a tied_to that is not -1 or an earlier index, and mixed dtypes (README 28.2)",
                  what, RL_ERR_ARG, o->rc, rl_status_name(o->rc));
    ck_assert_msg(o->err[0], "%s: refused without a message (use rl_error)", what);
}

START_TEST(t_buckets_refusals)
{
    rl_rng g = rl_grade_rng(1);
    int n = rl_grade_pick(&g, 3, 12), bad = rl_grade_pick(&g, 1, n - 2);
    ddp_param_desc d[12];
    char names[12][16];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i);
        d[i] = (ddp_param_desc){ names[i], rl_grade_pick(&g, 1, 5000), RL_F32, -1 };
    }
    int orig = rl_grade_pick(&g, 0, bad - 1);
    printf("cases: n=%d, bad entry %d (as a tied duplicate: of entry %d)\n", n, bad, orig);
    char what[160];
    d[bad].numel = -rl_grade_pick(&g, 1, 100);
    snprintf(what, sizeof what, "parameter %d of %d has numel %lld", bad, n, (long long)d[bad].numel);
    expect_refusal(what, d, n);
    d[bad].numel = 10;
    int ties[] = { bad + 1, -2, n + 3, bad };
    const char *why[] = { "a later entry", "below -1", "past the end", "itself" };
    for (int k = 0; k < 4; k++) {
        d[bad].tied_to = ties[k];
        snprintf(what, sizeof what, "parameter %d of %d is tied to %d (%s)", bad, n, ties[k], why[k]);
        expect_refusal(what, d, n);
    }
    d[bad].tied_to = -1;
    d[bad].dtype = RL_BF16;
    snprintf(what, sizeof what, "parameter %d is bf16, the others f32 (mixed dtypes)", bad);
    expect_refusal(what, d, n);
    /* the same bad values on a tied duplicate: a duplicate is bucketed with its original, but it is
     * still an entry of the list, and the refusals apply to every entry */
    d[bad].tied_to = orig;
    d[bad].dtype = RL_F32;
    d[bad].numel = -rl_grade_pick(&g, 1, 100);
    snprintf(what, sizeof what, "parameter %d of %d, a tied duplicate of entry %d, has numel %lld", bad, n, orig,
             (long long)d[bad].numel);
    expect_refusal(what, d, n);
    d[bad].numel = d[orig].numel;
    d[bad].dtype = RL_BF16;
    snprintf(what, sizeof what, "parameter %d, a tied duplicate of entry %d, is bf16, the others f32 (mixed dtypes)",
             bad, orig);
    expect_refusal(what, d, n);
}
END_TEST

/* A random parameter list: names, sizes of every kind (not powers of two), one dtype, tied
 * duplicates of random earlier entries; caps that make some bucket land exactly on its cap
 * and another one byte short of it. */
typedef struct plist {
    int n;
    ddp_param_desc d[48];
    char names[48][16];
    int64_t first, cap;
} plist;

static int64_t random_size(rl_rng *g)
{
    switch (rl_grade_pick(g, 0, 5)) {
    case 0: return rl_grade_pick(g, 1, 7);
    case 1: return rl_grade_pick(g, 10, 999);
    case 2: return rl_grade_pick(g, 1000, 70000);
    case 3: return ((int64_t)1 << rl_grade_pick(g, 8, 16)) + rl_grade_pick(g, -1, 1) * rl_grade_pick(g, 1, 3);
    case 4: return rl_grade_pick(g, 0, 3) == 0 ? 0 : rl_grade_pick(g, 2, 50);
    default: return rl_grade_pick(g, 100000, 600000);
    }
}

static void random_plist(rl_rng *g, plist *p, rl_grade_text *cases)
{
    memset(p, 0, sizeof *p);
    p->n = rl_grade_pick(g, 1, 40);
    rl_dtype dt = rl_grade_pick(g, 0, 2) == 0 ? RL_BF16 : RL_F32;
    int64_t es = rl_dtype_size(dt);
    int ndup = 0;
    for (int i = 0; i < p->n; i++) {
        snprintf(p->names[i], sizeof p->names[i], "p%d", i);
        p->d[i] = (ddp_param_desc){ p->names[i], random_size(g), dt, -1 };
        if (i > 0 && rl_grade_pick(g, 0, 7) == 0) { /* a tied duplicate of an earlier entry */
            int o = rl_grade_pick(g, 0, i - 1);
            p->d[i].tied_to = o;
            while (p->d[o].tied_to >= 0)
                o = p->d[o].tied_to;
            p->d[i].numel = p->d[o].numel;
            ndup++;
        }
    }
    /* the bytes of the originals in reverse order, to place the caps */
    int64_t w[48];
    int m = 0;
    for (int i = p->n - 1; i >= 0; i--)
        if (p->d[i].tied_to < 0)
            w[m++] = p->d[i].numel * es;
    int k1 = m ? rl_grade_pick(g, 1, m < 3 ? m : 3) : 0;
    int64_t s1 = 0, s2 = 0;
    for (int j = 0; j < k1; j++)
        s1 += w[j];
    int k2 = rl_grade_pick(g, 1, 4);
    for (int j = k1; j < k1 + k2 && j < m; j++)
        s2 += w[j];
    int mode = rl_grade_pick(g, 0, 2);
    /* mode 0: bucket 0 exactly at its cap, bucket 1 one byte short; 1: the other way; 2: random caps */
    p->first = mode == 0 ? s1 : mode == 1 ? s1 + 1 : rl_grade_pick(g, 1, 400000);
    p->cap = mode == 0 ? s2 + 1 : mode == 1 ? s2 : rl_grade_pick(g, 1, 900000);
    if (p->first < 1)
        p->first = 1;
    if (p->cap < 1)
        p->cap = 1;
    rl_grade_text_add(cases, "n=%d %s dups=%d first=%lld cap=%lld", p->n, rl_dtype_name(dt), ndup, (long long)p->first,
                      (long long)p->cap);
}

START_TEST(t_buckets_random)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    plist *p = malloc(sizeof *p);
    for (int k = 0; k < 8; k++) {
        if (k)
            rl_grade_text_add(&cases, "; ");
        random_plist(&g, p, &cases);
        char what[96];
        snprintf(what, sizeof what, "random list #%d (%d parameters)", k, p->n);
        plan_check(what, p->d, p->n, p->first, p->cap);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    free(p);
}
END_TEST

/* ================================================================== 28.3 / 28.4 DDP runs */

#define MAXG 2
#define MAXP 512

/* What a DDP run leaves in the child's record. */
typedef struct ddp_res {
    int rc;                        /* rl_launch's status */
    rank_res r[MAXR];
    rl_grade_blob grad[MAXR][MAXSTEPS]; /* each rank's gradients after each step (registration order, f32) */
    double bwd_end[MAXR][MAXSTEPS], bwd_start[MAXR][MAXSTEPS], start[MAXR][MAXSTEPS];
    float loss[MAXR][MAXSTEPS];
    int sync_after[MAXR][MAXSTEPS]; /* K > 1: r->require_sync when ddp_train_step returned */
    char comm_name[MAXR][24];      /* the communicator each rank's reducer runs on */
    int nbuckets;
    int64_t bucket_bytes[64];
    int nparams, bucket_of[MAXP];  /* world rank 0's plan: each parameter's bucket */
    /* what the grader's hook wrapper saw in the synced backward of each step (-1: nothing) */
    int ooo[MAXR][MAXSTEPS], ooo_missing[MAXR][MAXSTEPS]; /* bucket ooo launched while ooo_missing was not */
    int late[MAXR][MAXSTEPS], late_param[MAXR][MAXSTEPS]; /* bucket late could go after the hook of
                                                                  parameter late_param returned, and had not */
    double fin_time[MAXR][MAXSTEPS]; /* compute-stream clock when finalize (28.3) or the step (28.4) returned */
    rl_grade_blob trace;
} ddp_res;

typedef struct ddp_case {
    int n, steps, K;               /* n: ranks of the world */
    rl_model_config model;
    int64_t mb;
    double cap, first;
    uint64_t data_seed;            /* group g trains on the data set of seed data_seed + 1000 g */
    int ready_window;              /* > 1: backward announces ready gradients in a seeded random order */
    uint64_t ready_seed;           /* rank r's seed: ready_seed (+ r when per_rank) */
    int per_rank;
    int ngroups;                   /* 1: the reducer runs on the world; 2: the world is split in two groups */
    int group[MAXR], key[MAXR];    /* world rank q joins data-parallel group group[q] with key[q] */
    int gsize[MAXG];               /* ranks per group */
    int grank[MAXR];               /* q's rank in its group (ordered by key) */
    /* the references, computed by the grader */
    int64_t total;                 /* parameter elements */
    int np;                        /* parameters, their sizes and names */
    int64_t pnumel[MAXP];
    char pname[MAXP][40];
    float *ref[MAXG][MAXSTEPS];    /* per group: one-rank reference gradients per step, registration order */
    double ref_loss[MAXSTEPS][MAXR]; /* mean loss over world rank q's samples of the step */
    /* the run, from the child's record, and what the grader makes of it */
    ddp_res res;
    double err[MAXR][MAXSTEPS];    /* max |g - ref| / max |ref| */
    char err_param[MAXR][40];
    const float *bad_grad[MAXR];   /* a rank's gradients in its first step that failed (NULL: none; in the record) */
    int bad_step[MAXR];
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
    c->ngroups = 1;
    c->gsize[0] = n;
    for (int q = 0; q < n; q++)
        c->grank[q] = q;
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

/* Splits the case's W world ranks into two data-parallel groups of at least two ranks each, of
 * random membership and shuffled keys (so a group rank is neither the world rank nor in its order),
 * each group training on data of its own; describes the split in cases. */
static void ddp_case_split(ddp_case *c, rl_rng *g, int W, rl_grade_text *cases)
{
    c->n = W;
    c->ngroups = 2;
    int perm[MAXR], keys[MAXR];
    for (int q = 0; q < W; q++)
        perm[q] = keys[q] = q;
    rl_grade_shuffle(g, perm, W);
    rl_grade_shuffle(g, keys, W);
    int n0 = rl_grade_pick(g, 2, W - 2);
    c->gsize[0] = n0;
    c->gsize[1] = W - n0;
    for (int j = 0; j < W; j++)
        c->group[perm[j]] = j < n0 ? 0 : 1;
    for (int q = 0; q < W; q++)
        c->key[q] = keys[q];
    for (int q = 0; q < W; q++) {
        c->grank[q] = 0;
        for (int p = 0; p < W; p++) /* ranks of a group are ordered by key (all keys differ) */
            if (c->group[p] == c->group[q] && c->key[p] < c->key[q])
                c->grank[q]++;
    }
    rl_grade_text_add(cases, "%d ranks in two groups:", W);
    for (int q = 0; q < W; q++)
        rl_grade_text_add(cases, " %d->g%d.%d", q, c->group[q], c->grank[q]);
}

/* The batch behind a reference, for messages ("3 ranks x 2 micro-steps x 4 samples = 24 samples"). */
static void batch_desc(const ddp_case *c, int g, rl_grade_text *b)
{
    int n = c->gsize[g];
    if (c->K > 1)
        rl_grade_text_add(b, "%d rank%s x %d micro-steps x %lld samples = %lld samples", n, n == 1 ? "" : "s", c->K,
                          (long long)c->mb, (long long)(n * c->K * c->mb));
    else
        rl_grade_text_add(b, "%d rank%s x %lld samples = %lld samples", n, n == 1 ? "" : "s", (long long)c->mb,
                          (long long)(n * c->mb));
}

/* The gradient (registration order) of the mean loss over `count` samples of step s from off. */
static void ref_grad(rl_model *m, rl_data *data, rl_ctx *ctx, int s, int64_t off, int64_t count, rl_batch *b,
                     float *out, float *loss)
{
    float l = 0;
    ck_assert(rl_data_get(data, ctx, s, off, count, b) == 0);
    ck_assert(rl_model_zero_grad(m) == 0);
    ck_assert(rl_model_forward(m, b, &l) == 0);
    ck_assert(rl_model_backward(m, 1.0f) == 0);
    int64_t k = 0;
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].grad, out + k, m->params[i].numel);
        k += m->params[i].numel;
    }
    if (loss)
        *loss = l;
}

/* The one-rank references: per group, the model's own backward over the group's whole global
 * batch of each step, and each rank's mean loss over its own samples. */
static void ddp_case_reference(ddp_case *c)
{
    if (!rl_grade_judging())
        return; /* only the checks read them */
    for (int g = 0; g < c->ngroups; g++) {
        rl_ctx *ctx = rl_ctx_new_standalone(grade_hw(), 1);
        rl_model *m = rl_model_new(ctx, &c->model);
        rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, c->data_seed + 1000 * (uint64_t)g);
        ck_assert(m && data);
        c->total = rl_model_numel(m);
        c->np = m->nparams < MAXP ? m->nparams : MAXP;
        for (int i = 0; i < c->np; i++) {
            c->pnumel[i] = m->params[i].numel;
            snprintf(c->pname[i], sizeof c->pname[i], "%s", m->params[i].name);
        }
        rl_batch b;
        memset(&b, 0, sizeof b);
        int64_t per_rank = c->mb * c->K;
        for (int s = 0; s < c->steps; s++) {
            c->ref[g][s] = malloc((size_t)c->total * sizeof(float));
            ref_grad(m, data, ctx, s, 0, c->gsize[g] * per_rank, &b, c->ref[g][s], NULL);
            for (int q = 0; q < c->n && c->K > 1; q++) {
                float loss;
                if (c->group[q] != g)
                    continue;
                ck_assert(rl_data_get(data, ctx, s, c->grank[q] * per_rank, per_rank, &b) == 0);
                ck_assert(rl_model_forward(m, &b, &loss) == 0);
                c->ref_loss[s][q] = loss;
            }
        }
        rl_batch_free(&b);
        rl_data_free(data);
        rl_model_free(m);
        rl_ctx_free_standalone(ctx);
    }
}

static void ddp_case_free(ddp_case *c)
{
    for (int g = 0; g < MAXG; g++)
        for (int s = 0; s < MAXSTEPS; s++)
            free(c->ref[g][s]);
    free(c);
}

/* The grader's view of one rank's synced backward: it passes every gradient-ready call on to
 * ddp_grad_ready and notes, from the handles in r->work, which buckets the code under test has
 * launched, against its own count of the buckets that are complete. */
typedef struct ddp_watch {
    ddp_reducer *red;
    int nb;
    int seen[MAXP], pending[MAXP], launched[MAXP];
    int ooo, ooo_missing;          /* a bucket launched while an earlier one was not (-1: none) */
    int stall;                     /* after the last call: the first complete bucket not launched (-1: none) */
    int late, late_param;          /* the first call that returned with a bucket that could go not launched */
    int all_ready;                 /* every parameter's gradient came in this backward */
} ddp_watch;

/* Starts a backward: nothing seen, every bucket pending (a handle left from before counts as launched). */
static void watch_reset(ddp_watch *w)
{
    ddp_reducer *r = w->red;
    w->nb = r->plan.nbuckets < MAXP ? r->plan.nbuckets : MAXP;
    memset(w->seen, 0, sizeof w->seen);
    for (int b = 0; b < w->nb; b++) {
        w->pending[b] = r->plan.buckets[b].nparams;
        w->launched[b] = r->work && r->work[b] != NULL;
    }
    w->ooo = w->ooo_missing = w->stall = w->late = w->late_param = -1;
    w->all_ready = 0;
}

/* The grad-ready hook the grader installs: the learner's hook, then a look at what it launched. */
static int watch_hook(rl_param *p, void *arg)
{
    ddp_watch *w = arg;
    ddp_reducer *r = w->red;
    int sync = r->require_sync, rc = ddp_grad_ready(p, r);
    int i = p->index;
    if (!sync || i < 0 || i >= MAXP || i >= r->plan.nparams || w->seen[i])
        return rc;
    w->seen[i] = 1;
    int b = r->plan.bucket_of[i];
    if (b >= 0 && b < w->nb)
        w->pending[b]--;
    for (int k = 0; k < w->nb; k++)
        if (!w->launched[k] && r->work && r->work[k]) {
            w->launched[k] = 1;
            for (int j = 0; j < k && w->ooo < 0; j++)
                if (!w->launched[j])
                    w->ooo = k, w->ooo_missing = j;
        }
    int done = 0;
    while (done < w->nb && w->pending[done] <= 0)
        done++;
    w->all_ready = done == w->nb;
    w->stall = -1;
    for (int k = 0; k < done && w->stall < 0; k++)
        if (!w->launched[k])
            w->stall = k;
    if (w->stall >= 0 && w->late < 0)
        w->late = w->stall, w->late_param = i;
    return rc;
}

typedef struct bwd_note { rl_ctx *ctx; int last_unit; double *end_slot, *start_slot; ddp_watch *watch; } bwd_note;

/* post_backward of unit 0 fires when the whole backward is done (unit 0 goes last). */
static int note_bwd_end(rl_unit *u, void *arg)
{
    bwd_note *b = arg;
    if (u->index == 0 && b->end_slot)
        *b->end_slot = rl_stream_time(b->ctx, RL_STREAM_COMPUTE);
    return 0;
}

/* pre_backward of the last unit fires when a backward begins (the last unit goes first). */
static int note_bwd_start(rl_unit *u, void *arg)
{
    bwd_note *b = arg;
    if (u->index == b->last_unit) {
        if (b->start_slot)
            *b->start_slot = rl_stream_time(b->ctx, RL_STREAM_COMPUTE);
        if (b->watch)
            watch_reset(b->watch);
    }
    return 0;
}

/* Compares rank's gradients after step s (from the record) with its group's reference; keeps
 * them for the diagnosis when they are wrong. */
static void compare_grads(ddp_case *c, int rank, int s)
{
    const float *g = rl_grade_blob_get(c->res.grad[rank][s], sizeof(float), (size_t)c->total);
    const float *ref = c->ref[c->group[rank]][s];
    double refmax = 0, worst = 0;
    for (int64_t k = 0; k < c->total; k++)
        refmax = fmax(refmax, fabs(ref[k]));
    int64_t off = 0;
    for (int i = 0; i < c->np; i++) {
        for (int64_t k = off; k < off + c->pnumel[i]; k++) {
            double e = fabs((double)g[k] - ref[k]) / (refmax > 0 ? refmax : 1);
            if (!(e <= worst)) { /* also catches NaN */
                worst = isnan(e) ? INFINITY : e;
                memcpy(c->err_param[rank], c->pname[i], sizeof c->err_param[rank]); /* both end within 40 */
            }
        }
        off += c->pnumel[i];
    }
    c->err[rank][s] = worst;
    if (!(worst <= 1e-4) && !c->bad_grad[rank]) {
        c->bad_grad[rank] = g;
        c->bad_step[rank] = s;
    }
}

/* The advice for a 28.3/28.4 error the code under test reported, by what it says and what the
 * grader saw the hook launch. */
static const char *ddp_advice(const char *err, int K, const ddp_watch *w)
{
    if (strstr(err, "twice") && K > 1)
        return " Inside no_sync (require_sync == 0) the hook must neither mark nor launch anything: the first K-1 "
               "micro-steps only accumulate, and the last one marks every parameter once.";
    if (strstr(err, "twice"))
        return " A second backward starts from fresh marks and counts only if ddp_reducer_reset ran at the end of "
               "the previous ddp_finalize_backward.";
    if ((strstr(err, "never became ready") || strstr(err, "never ready")) && w && w->all_ready && w->stall >= 0)
        return " The grader counted the gradients: every parameter's came in this backward, so every bucket was "
               "complete, but the hook did not launch all of them. One gradient can complete several buckets at "
               "once: its own, and the later ones that were already complete and waiting behind it. The hook "
               "launches every bucket that can go, in order, not just one per call (README 28.3: "
               "\"the all-reduce of every bucket that can be launched has been launched\").";
    if (strstr(err, "never became ready") || strstr(err, "never ready"))
        return " Every parameter gets a gradient in these runs: check how your hook counts a bucket's ready "
               "gradients (from 0 after every ddp_reducer_reset) and how it remembers which buckets have gone.";
    return "";
}

/* A DDP run in the child: the case and where its results go. */
typedef struct ddp_job {
    const ddp_case *c;
    ddp_res *o;
    int keep_trace;
} ddp_job;

/* The model's gradients (registration order, f32) kept in the record. */
static rl_grade_blob keep_grads(rl_model *m)
{
    int64_t total = rl_model_numel(m), off = 0;
    float *g = malloc((size_t)(total ? total : 1) * sizeof *g);
    for (int i = 0; i < m->nparams; i++) {
        rl_tensor_to_f32(m->params[i].grad, g + off, m->params[i].numel);
        off += m->params[i].numel;
    }
    rl_grade_blob b = rl_grade_keep(g, (size_t)total * sizeof *g);
    free(g);
    return b;
}

static int ddp_case_rank(rl_ctx *ctx, void *arg)
{
    const ddp_job *j = arg;
    const ddp_case *c = j->c;
    ddp_res *o = j->o;
    int rank = rl_rank(ctx);
    rank_res *rr = &o->r[rank];
    rl_comm *w = rl_comm_world(ctx), *comm = w;
    if (c->ngroups > 1 && !(comm = rl_comm_split(w, c->group[rank], c->key[rank]))) {
        note_err(rr, ctx, RL_ERR_ARG, "rl_comm_split (grader)");
        return 0;
    }
    snprintf(o->comm_name[rank], sizeof o->comm_name[rank], "%s", rl_comm_name(comm));
    rl_model *m = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim,
                                       c->data_seed + 1000 * (uint64_t)c->group[rank]);
    ddp_reducer *red = NULL;
    if (!m || !data)
        note_err(rr, ctx, RL_ERR_ARG, "building the model (grader)");
    else {
        rl_clear_error(ctx);
        if (!(red = ddp_reducer_new(m, comm, c->cap, c->first))) {
            rr->rc = RL_ERR_ARG;
            snprintf(rr->err, sizeof rr->err, "ddp_reducer_new failed (it plans the buckets with your "
                     "ddp_assign_buckets): %s", rl_last_error(ctx));
        }
    }
    if (!red) {
        rl_data_free(data);
        rl_model_free(m);
        if (comm != w)
            rl_comm_free(comm);
        return 0;
    }
    if (rank == 0) {
        o->nbuckets = red->plan.nbuckets;
        for (int b = 0; b < red->plan.nbuckets && b < 64; b++)
            o->bucket_bytes[b] = red->plan.buckets[b].bytes;
        o->nparams = m->nparams < MAXP ? m->nparams : MAXP;
        for (int i = 0; i < o->nparams; i++)
            o->bucket_of[i] = red->plan.bucket_of[i];
    }
    if (c->ready_window > 1)
        rl_model_set_ready_order(m, c->ready_seed + (c->per_rank ? (uint64_t)rank : 0), c->ready_window);
    ddp_watch *watch = calloc(1, sizeof *watch);
    watch->red = red;
    watch_reset(watch);
    m->hook = watch_hook;
    m->hook_arg = watch;
    bwd_note note = { ctx, m->nunits - 1, NULL, NULL, watch };
    m->post_backward = note_bwd_end;
    m->pre_backward = note_bwd_start;
    m->unit_arg = &note;
    rl_batch b;
    memset(&b, 0, sizeof b);
    int crank = rl_comm_rank(comm);
    for (int s = 0; s < c->steps && !rr->rc; s++) {
        o->start[rank][s] = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        rl_step_begin(ctx, s);
        note.end_slot = &o->bwd_end[rank][s];
        note.start_slot = &o->bwd_start[rank][s];
        int rc;
        float loss = NAN;
        rl_clear_error(ctx);
        if (c->K == 1) { /* 28.3 alone: the grader drives forward and backward */
            const char *what = "rl_model_zero_grad";
            rc = rl_model_zero_grad(m);
            if (!rc)
                rc = rl_data_get(data, ctx, s, crank * c->mb, c->mb, &b), what = "rl_data_get";
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
            o->sync_after[rank][s] = red->require_sync;
            if (rc)
                note_err(rr, ctx, rc, "ddp_train_step");
        }
        o->ooo[rank][s] = watch->ooo;
        o->ooo_missing[rank][s] = watch->ooo_missing;
        o->late[rank][s] = watch->late;
        o->late_param[rank][s] = watch->late_param;
        o->fin_time[rank][s] = rl_stream_time(ctx, RL_STREAM_COMPUTE);
        if (rc) {
            size_t k = strlen(rr->err);
            snprintf(rr->err + k, sizeof rr->err - k, " (step %d).%s", s, ddp_advice(rr->err, c->K, watch));
        }
        rl_step_end(ctx);
        o->loss[rank][s] = loss;
        if (!rc)
            o->grad[rank][s] = keep_grads(m);
    }
    rl_batch_free(&b);
    m->hook = ddp_grad_ready;
    m->hook_arg = red;
    ddp_reducer_free(red); /* after an error it first lets any all-reduce still in flight finish */
    free(watch);
    rl_data_free(data);
    rl_model_free(m);
    if (comm != w)
        rl_comm_free(comm);
    return 0;
}

/* A new DDP case (ddp_case_init's arguments); set its fields, then ddp_case_go. */
static ddp_case *ddp_case_new(int n, int steps, int K, int small)
{
    ddp_case *c = malloc(sizeof *c);
    ddp_case_init(c, n, steps, K, small);
    return c;
}

/* What usually makes the ranks of a DDP run issue different all-reduces, or wait forever, from
 * what the grader's hook wrapper saw. */
static const char *ddp_launch_advice(const void *arg, int rc)
{
    const ddp_case *c = arg;
    int seen = 0;
    for (int q = 0; q < c->n; q++)
        for (int s = 0; s < c->steps; s++)
            seen |= c->res.ooo[q][s] >= 0;
    if (seen)
        return "The grader watched the handles in r->work: some rank launched a bucket while an earlier bucket was "
               "not launched yet. Backward makes gradients ready in another order on each rank, so buckets "
               "launched as they complete go out in a different order on each rank. DDP launches its buckets "
               "strictly in bucket order 0, 1, 2, ... (README 28.3: \"Every rank launches the "
               "same collectives in the same order: bucket order\"): a complete bucket waits until every earlier "
               "one has "
               "been launched.";
    if (rc == RL_ERR_MISMATCH)
        return "Every rank issues the same all-reduces in the same order: one per bucket and synced backward, in "
               "bucket order 0, 1, 2, ... whatever order backward makes the gradients ready in (README 28.3: "
               "\"bucket order, one all-reduce per bucket per backward\"), none inside no_sync.";
    return "some rank waits in an all-reduce that another rank never issued: every rank launches every bucket "
           "once per synced backward, in bucket order";
}

static void ddp_produce(void *out, void *arg)
{
    ddp_job *j = arg;
    j->o = out;
    for (int q = 0; q < MAXR; q++)
        for (int s = 0; s < MAXSTEPS; s++)
            j->o->ooo[q][s] = j->o->ooo_missing[q][s] = j->o->late[q][s] = j->o->late_param[q][s] = -1;
    rl_trace *t = NULL;
    j->o->rc = launch_hw(j->c->n, NULL, ddp_case_rank, j, j->keep_trace ? &t : NULL);
    j->o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Runs a case, checks that it ran and compares every rank's gradients with the references (the
 * caller checks what the test is about, then frees it); *tr gets the trace when tr is not NULL. */
static void ddp_case_go(ddp_case *c, rl_trace **tr, const char *what)
{
    ddp_case_reference(c);
    ddp_job job = { c, NULL, tr != NULL };
    const ddp_res *o = rl_grade_run("ddp", sizeof *o, ddp_produce, &job);
    c->res = *o;
    take_ranks(c->res.r, o->r, c->n);
    for (int q = 0; q < c->n; q++)
        c->res.comm_name[q][sizeof c->res.comm_name[q] - 1] = 0;
    if (c->res.nbuckets < 0 || c->res.nbuckets > 64)
        c->res.nbuckets = 0;
    if (c->res.nparams < 0 || c->res.nparams > MAXP)
        c->res.nparams = 0;
    check_launch(c->n, c->res.rc, c->res.r, what, ddp_launch_advice, c);
    if (tr)
        *tr = rl_grade_trace(c->res.trace);
    for (int r = 0; r < c->n && rl_grade_judging(); r++)
        for (int s = 0; s < c->steps; s++)
            if (c->res.grad[r][s].len)
                compare_grads(c, r, s);
}

static ddp_case *ddp_case_run(int n, int steps, int K, int small, rl_trace **tr, const char *what)
{
    ddp_case *c = ddp_case_new(n, steps, K, small);
    ddp_case_go(c, tr, what);
    return c;
}

/* ------------------------------------------------------------------ what wrong gradients are */

/* Least-squares factor k of got ≈ k·want over [lo, hi), its relative residual, and the largest
 * difference |got - want| over refmax. */
static void fit(const float *got, const float *want, int64_t lo, int64_t hi, double refmax, double *k, double *res,
                double *diff)
{
    double gw = 0, ww = 0, d = 0;
    for (int64_t i = lo; i < hi; i++) {
        gw += (double)got[i] * want[i];
        ww += (double)want[i] * want[i];
        d = fmax(d, fabs((double)got[i] - want[i]));
    }
    *k = ww > 0 ? gw / ww : 0;
    double rr = 0;
    for (int64_t i = lo; i < hi; i++) {
        double e = got[i] - *k * want[i];
        rr += e * e;
    }
    *res = ww > 0 ? sqrt(rr / ww) : INFINITY;
    *diff = refmax > 0 ? d / refmax : d;
}

/* Names the factor k when it is one that a usual mistake produces (n, 1/n, K, n·K, the group over
 * the world ...), appending its cause to m; 0 when none fits. */
static int name_factor(const ddp_case *c, int g, double k, rl_grade_text *m)
{
    int n = c->gsize[g], K = c->K, W = c->n;
    /* uses: 1 n, 2 K, 4 only in a split world */
    struct { double v; int uses; const char *name, *why; } cand[] = {
        { n, 1, "n", "the sum over the n ranks was never divided by n (README 28.3 item 3: scale each bucket by 1/n "
                     "after its wait, or all-reduce with RL_AVG)" },
        { 1.0 / n, 1, "1/n", "the mean was divided by n once more: RL_AVG and a 1/n scale together, or a grad_scale "
                             "that already divides by n" },
        { K, 2, "K", "each micro-step's backward takes grad_scale 1/K, so that the K micro-steps add up to their "
                     "mean (README 28.4)" },
        { 1.0 / K, 2, "1/K", "the gradients were divided by K twice" },
        { (double)n * K, 3, "n x K", "neither the 1/n average nor the grad_scale 1/K was applied" },
        { 1.0 / ((double)n * K), 3, "1/(n x K)", "the gradients were divided by n and by K once too often" },
        { (double)n / W, 4, "n/W (group size / world size)", "the sum over the group was divided by the world's size "
          "W instead of the data-parallel group's n: average over the reducer's communicator (rl_comm_size(r->comm))" },
        { (double)W / n, 4, "W/n (world size / group size)", "the sum was divided by the group's size, but it added "
          "up the gradients of the world's W ranks" },
    };
    int hits = 0;
    for (size_t j = 0; j < sizeof cand / sizeof cand[0]; j++) {
        int u = cand[j].uses;
        if (((u & 1) && n == 1) || ((u & 2) && K == 1) || ((u & 4) && c->ngroups < 2) ||
            fabs(cand[j].v - 1) < 1e-9 || fabs(k - cand[j].v) > 1e-3 * cand[j].v)
            continue;
        rl_grade_text_add(m, "%s%s = %g: %s", hits ? "; or " : " That is ", cand[j].name, cand[j].v, cand[j].why);
        hits++;
    }
    if (hits)
        rl_grade_text_add(m, ".");
    return hits;
}

/* The gradients of micro-steps k0..k1-1 of the rank whose samples are number idx (each the mean
 * over one micro-batch), each scaled by `scale`, added into out. */
static void add_micro(const ddp_case *c, rl_model *m, rl_data *data, rl_ctx *ctx, rl_batch *b, int idx, int s, int k0,
                      int k1, double scale, float *tmp, float *out)
{
    for (int k = k0; k < k1; k++) {
        ref_grad(m, data, ctx, s, ((int64_t)idx * c->K + k) * c->mb, c->mb, b, tmp, NULL);
        for (int64_t i = 0; i < c->total; i++)
            out[i] += (float)(scale * tmp[i]);
    }
}

/* Appends to m what rank r's wrong gradients of step s look like: a pure factor of the
 * reference (named when a usual mistake gives it), its own unreduced gradient, only the last
 * micro-step, a sync on the first micro-step, a bucket launched out of order on some rank,
 * else which buckets are right and which are not. */
static void grad_diagnosis(const ddp_case *c, int r, int s, rl_grade_text *m)
{
    const float *got = c->bad_grad[r];
    int g = c->group[r], n = c->gsize[g], K = c->K;
    if (!got || c->bad_step[r] != s)
        return;
    const float *ref = c->ref[g][s];
    double refmax = 0;
    for (int64_t i = 0; i < c->total; i++)
        refmax = fmax(refmax, fabs(ref[i]));
    double k, res, diff;
    fit(got, ref, 0, c->total, refmax, &k, &res, &diff);
    if (res <= 1e-3) {
        rl_grade_text_add(m, " All of its gradients are %.4g times the expected ones.", k);
        if (!name_factor(c, g, k, m))
            rl_grade_text_add(
                m,
                " That is none of the factors usual mistakes make (n = %d, K = %d): check every scale the "
                "gradients go through (grad_scale, the 1/n average).",
                n, K);
        return;
    }
    /* explanations that are other gradients of the same model and data */
    rl_ctx *ctx = rl_ctx_new_standalone(grade_hw(), 1);
    rl_model *mod = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, c->data_seed + 1000 * (uint64_t)g);
    rl_batch b;
    memset(&b, 0, sizeof b);
    float *tmp = malloc((size_t)c->total * sizeof(float)), *h = calloc((size_t)c->total, sizeof(float));
    const char *found = NULL;
    int ok = 1;
    for (int64_t i = 0; i < c->total && ok; i++)
        ok = got[i] == 0;
    if (ok)
        found = " Every gradient is 0: nothing reached the bucket buffers, or they were zeroed after backward.";
    if (!found) { /* its own gradient, never reduced (or divided by n) */
        add_micro(c, mod, data, ctx, &b, c->grank[r], s, 0, K, 1.0 / K, tmp, h);
        double dk, dres, d;
        fit(got, h, 0, c->total, refmax, &dk, &dres, &d);
        if (d <= 1e-4)
            found = " They are this rank's own gradient of its samples: nothing was all-reduced into them (was "
                    "every bucket launched on r->comm and waited for before the optimizer reads it?).";
        else if (n > 1 && dres <= 1e-3 && fabs(dk - 1.0 / n) <= 1e-3 / n)
            found = " They are this rank's own gradient of its samples divided by n: the 1/n scale ran, but the "
                    "all-reduce's sum never arrived in the buffer. A bucket is scaled after rl_wait on its own "
                    "all-reduce returns, and every bucket's all-reduce is waited for (README 28.3 item 3).";
    }
    if (!found && K > 1) { /* only the last micro-step's gradient survived */
        memset(h, 0, (size_t)c->total * sizeof(float));
        for (int q = 0; q < c->n; q++)
            if (c->group[q] == g)
                add_micro(c, mod, data, ctx, &b, c->grank[q], s, K - 1, K, 1.0 / ((double)n * K), tmp, h);
        double dk, dres, d;
        fit(got, h, 0, c->total, refmax, &dk, &dres, &d);
        if (d <= 1e-4)
            found = " They hold the last micro-step's gradient only: the earlier micro-steps' gradients were thrown "
                    "away — zero the gradients once, before the micro-step loop, not in it (README 28.4, Hints).";
        else if (dres <= 1e-3 && fabs(dk - K) <= 1e-3 * K)
            found = " They hold the last micro-step's gradient only, K times (without the grad_scale 1/K): the "
                    "earlier micro-steps' gradients were thrown away — zero the gradients once, before the "
                    "micro-step loop, not in it (README 28.4, Hints).";
    }
    if (!found && c->ngroups > 1 && K > 1) { /* samples read by world rank instead of group rank */
        memset(h, 0, (size_t)c->total * sizeof(float));
        for (int q = 0; q < c->n; q++)
            if (c->group[q] == g)
                add_micro(c, mod, data, ctx, &b, q, s, 0, K, 1.0 / ((double)n * K), tmp, h);
        double dk, dres, d;
        fit(got, h, 0, c->total, refmax, &dk, &dres, &d);
        if (d <= 1e-4)
            found = " They are the gradient of the samples the ranks' WORLD ranks would read: in a split world a "
                    "rank's micro-batches follow its rank in the reducer's communicator (rl_comm_rank(r->comm)), not "
                    "rl_rank (ddp.h: ddp_train_step).";
    }
    if (!found && K > 1) { /* micro-step 0 synced, the others only accumulated locally */
        memset(h, 0, (size_t)c->total * sizeof(float));
        for (int q = 0; q < c->n; q++)
            if (c->group[q] == g)
                add_micro(c, mod, data, ctx, &b, c->grank[q], s, 0, 1, 1.0 / ((double)n * K), tmp, h);
        float *h2 = calloc((size_t)c->total, sizeof(float));
        add_micro(c, mod, data, ctx, &b, c->grank[r], s, 1, K, 1.0 / K, tmp, h2);
        double dk, dres, d, d2;
        for (int64_t i = 0; i < c->total; i++) /* its later micro-steps added before or after the 1/n */
            tmp[i] = h[i] + h2[i], h[i] += h2[i] / (float)n;
        fit(got, tmp, 0, c->total, refmax, &dk, &dres, &d);
        fit(got, h, 0, c->total, refmax, &dk, &dres, &d2);
        free(h2);
        if (d <= 1e-4 || d2 <= 1e-4)
            found = " They are the first micro-step's gradients averaged over the ranks plus this rank's own later "
                    "micro-steps: the all-reduce ran after micro-step 0 instead of the last one (README 28.4: "
                    "require_sync = (k == K-1)).";
    }
    if (found)
        rl_grade_text_add(m, "%s", found);
    for (int q = 0; q < c->n && !found; q++)
        if (c->group[q] == g && c->res.ooo[q][s] >= 0) {
            rl_grade_text_add(
                m,
                " In this backward rank %d launched bucket %d while bucket %d was not launched yet (the "
                "grader watched the handles in r->work): backward makes gradients ready in another order on each "
                "rank, so the ranks all-reduced different buckets at the same position in the sequence and "
                "summed a bucket with another bucket of the same size. Buckets launch in bucket order: a complete "
                "bucket waits until every earlier one is launched (README 28.3: \"bucket order, one all-reduce per "
                "bucket per backward\").",
                q, c->res.ooo[q][s], c->res.ooo_missing[q][s]);
            found = "ooo";
        }
    if (!found) { /* which buckets are right */
        rl_grade_text_add(m, " Per bucket, its gradient against the expected one:");
        int64_t *lo = calloc((size_t)c->res.nparams + 1, sizeof *lo);
        for (int i = 0; i < c->res.nparams && i < mod->nparams; i++)
            lo[i + 1] = lo[i] + mod->params[i].numel;
        int nright = 0;
        for (int bk = 0; bk < c->res.nbuckets; bk++) {
            double gw = 0, ww = 0, d = 0, rr = 0;
            for (int i = 0; i < c->res.nparams; i++)
                if (c->res.bucket_of[i] == bk)
                    for (int64_t e = lo[i]; e < lo[i + 1]; e++) {
                        gw += (double)got[e] * ref[e];
                        ww += (double)ref[e] * ref[e];
                        d = fmax(d, fabs((double)got[e] - ref[e]));
                    }
            double kb = ww > 0 ? gw / ww : 0;
            for (int i = 0; i < c->res.nparams; i++)
                if (c->res.bucket_of[i] == bk)
                    for (int64_t e = lo[i]; e < lo[i + 1]; e++)
                        rr += (got[e] - kb * ref[e]) * (got[e] - kb * ref[e]);
            if (d <= 1e-4 * refmax)
                rl_grade_text_add(m, " bucket %d right;", bk), nright++;
            else if (ww > 0 && sqrt(rr / ww) <= 1e-3)
                rl_grade_text_add(m, " bucket %d %.4g times;", bk, kb);
            else
                rl_grade_text_add(m, " bucket %d wrong (not a multiple);", bk);
        }
        if (nright)
            rl_grade_text_add(
                m, " Some buckets are right and others are not: something happened to the wrong ones between "
                   "their launch and the end of finalize — an all-reduce not waited for (rl_wait) before its "
                   "bucket is scaled or read, a bucket scaled twice or not at all, or gradients added into a "
                   "bucket after its all-reduce was launched.");
        else
            rl_grade_text_add(m, " no bucket is right (not a factor of the expected gradients either).");
        free(lo);
    }
    free(tmp);
    free(h);
    rl_batch_free(&b);
    rl_data_free(data);
    rl_model_free(mod);
    rl_ctx_free_standalone(ctx);
}

static void check_grads(const ddp_case *c, const char *what)
{
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            if (c->err[r][s] <= 1e-4)
                continue;
            int g = c->group[r];
            rl_grade_text m = { 0 };
            rl_grade_text_add(&m, "%s: rank %d, step %d: the gradients differ from one rank's gradient of ", what, r,
                              s);
            if (c->ngroups > 1)
                rl_grade_text_add(
                    &m,
                    "its data-parallel group's global batch (group %d: %d of the %d ranks, rank %d in the "
                    "group, its own data; ",
                    g, c->gsize[g], c->n, c->grank[r]);
            else
                rl_grade_text_add(&m, "the global batch (");
            batch_desc(c, g, &m);
            rl_grade_text_add(&m, ") by %.3g of the largest gradient (worst: %s; tolerance 1e-4).", c->err[r][s],
                              c->err_param[r]);
            grad_diagnosis(c, r, s, &m);
            ck_abort_msg("%s", rl_grade_text_str(&m));
        }
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
    rl_rng g = rl_grade_rng(1);
    ddp_case *c = ddp_case_new(4, 2, 1, 0);
    c->ready_window = rl_grade_pick(&g, 2, 12);
    c->ready_seed = rl_rng_next(&g);
    c->per_rank = 1;
    printf("cases: 4 ranks, lab MLP, gradients ready in a random order per rank, %d at a time (seed %llu)\n",
           c->ready_window, (unsigned long long)c->ready_seed);
    ddp_case_go(c, NULL, "overlapped DDP (the lab's MLP, 4 ranks, gradients ready in another order on every rank)");
    check_grads(c, "4 ranks, the lab's MLP, 2 steps, gradients ready in another order on every rank");
    ddp_case_free(c);
}
END_TEST

START_TEST(t_ddp_grads_odd)
{
    grads_case(3, 2, 1, 1, "overlapped DDP (3 ranks, small MLP, many buckets)", "3 ranks, small MLP");
    grads_case(1, 1, 1, 1, "overlapped DDP (1 rank)", "1 rank");
    rl_rng g = rl_grade_rng(1);
    ddp_case *c = ddp_case_new(rl_grade_pick(&g, 2, 5), 2, 1, 1);
    c->model.layers = rl_grade_pick(&g, 2, 6);
    c->cap = 0.02 * rl_grade_pick(&g, 2, 10);
    c->ready_window = rl_grade_pick(&g, 2, 30);
    c->ready_seed = rl_rng_next(&g);
    c->per_rank = 1;
    printf("cases: %d ranks, small MLP of %d blocks, cap %g MiB, gradients ready %d at a time in another order on "
           "every rank\n", c->n, c->model.layers, c->cap, c->ready_window);
    ddp_case_go(c, NULL, "overlapped DDP (small MLP, gradients ready in another order on every rank)");
    check_grads(c, "small MLP, gradients ready in another order on every rank");
    ddp_case_free(c);
}
END_TEST

/* The comm-stream events (collectives and p2p) of rank r in step s, in the order they ran. */
static int step_comm_events(const rl_trace *t, int r, int s, const rl_trace_event **out, int max)
{
    int k = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank == r && (e->cat == RL_CAT_COMM || e->cat == RL_CAT_P2P) && e->tags[RL_TAG_STEP] == s && k < max)
            out[k++] = e;
    }
    return k;
}

/* From the trace: every rank, every step, exactly one all-reduce per bucket, in bucket order
 * (each of the size of its bucket), and no other collective or send/recv. */
static void check_bucket_order(const ddp_case *c, const rl_trace *t, const char *what)
{
    const rl_trace_event *ev[256];
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            int k = step_comm_events(t, r, s, ev, 256);
            for (int j = 0; j < k; j++)
                ck_assert_msg(strcmp(ev[j]->name, "all_reduce") == 0,
                              "%s: rank %d, step %d: operation #%d on the comm stream is %s (%.0f bytes); DDP makes "
                              "one all-reduce per bucket and nothing else", what, r, s, j, ev[j]->name, ev[j]->bytes);
            ck_assert_msg(k == c->res.nbuckets,
                          "%s: rank %d, step %d: %d all-reduces for %d buckets (from the trace); launch exactly one "
                          "per bucket per step%s", what, r, s, k, c->res.nbuckets,
                          c->K > 1 ? ", after the last micro-step only (no_sync before it)" : "");
            for (int b = 0; b < k; b++) {
                ck_assert_msg((int64_t)llround(ev[b]->bytes) == c->res.bucket_bytes[b],
                              "%s: rank %d, step %d: all-reduce #%d moved %.0f bytes but bucket %d has %lld; buckets "
                              "must be launched in bucket order 0, 1, 2, ... whatever order backward makes the "
                              "gradients ready in (a complete bucket waits for every earlier one; README 28.3: "
                              "\"bucket order, one all-reduce per bucket per "
                              "backward\")", what, r, s, b, ev[b]->bytes, b,
                              (long long)c->res.bucket_bytes[b]);
                ck_assert_msg(ev[b]->tags[RL_TAG_BUCKET] == b,
                              "%s: rank %d, step %d: all-reduce #%d (bucket %d's) carries the bucket tag %d (-1: "
                              "none): the hook tags each launch with its bucket (README 28.3: \"tagged with its bucket "
                              "(`rl_set_tag(ctx, RL_TAG_BUCKET, b)`, cleared afterwards)\"), which the timeline and "
                              "the narration use", what, r, s, b, b, ev[b]->tags[RL_TAG_BUCKET]);
            }
            /* the bucket tag marks the all-reduce only: backward's kernels after a launch carry none */
            for (size_t i = 0; i < t->n; i++) {
                const rl_trace_event *e = &t->ev[i];
                if (e->rank != r || e->tags[RL_TAG_STEP] != s || e->stream != RL_STREAM_COMPUTE ||
                    e->cat != RL_CAT_COMPUTE || e->vstart < c->res.bwd_start[r][s] - 1e-12 ||
                    e->vend > c->res.bwd_end[r][s] + 1e-12)
                    continue;
                ck_assert_msg(e->tags[RL_TAG_BUCKET] < 0,
                              "%s: rank %d, step %d: backward's kernel '%s' at %.1f us (virtual time since the step "
                              "began) carries the bucket tag %d: the hook tags a bucket's all-reduce and untags right "
                              "after launching it (README 28.3: \"tagged with its bucket "
                              "(`rl_set_tag(ctx, RL_TAG_BUCKET, b)`, cleared afterwards)\"); a tag left set marks "
                              "every later kernel of backward as part of "
                              "bucket %d in the timeline and in the trace", what, r, s, e->name,
                              (e->vstart - c->res.start[r][s]) * 1e6, e->tags[RL_TAG_BUCKET], e->tags[RL_TAG_BUCKET]);
            }
        }
}

/* From the trace: every collective and send/recv of a rank ran on its reducer's communicator
 * (its data-parallel group), none on the world. */
static void check_group_comm(const ddp_case *c, const rl_trace *t, const char *what)
{
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if ((e->cat != RL_CAT_COMM && e->cat != RL_CAT_P2P) || e->rank < 0 || e->rank >= c->n ||
            e->tags[RL_TAG_STEP] < 0)
            continue;
        int q = e->rank, g = c->group[q];
        ck_assert_msg(strcmp(e->comm, c->res.comm_name[q]) == 0,
                      "%s: rank %d's %s (%.0f bytes, step %d) ran on communicator '%s', but its reducer was built on "
                      "'%s', its data-parallel group (group %d: %d of the %d ranks, which trains on data of its own). "
                      "DDP all-reduces over the reducer's communicator r->comm, and averages over its size "
                      "(rl_comm_size(r->comm)); in a run that is also tensor- or pipeline-parallel (lab 31) the "
                      "data-parallel group is not the world, and an all-reduce on rl_comm_world adds the other "
                      "group's gradients in", what, q, e->name, e->bytes, e->tags[RL_TAG_STEP], e->comm,
                      c->res.comm_name[q], g, c->gsize[g], c->n);
    }
}

typedef struct order_rec { ddp_bucket_plan *plan; int *pending; int next, out_of_order; } order_rec;

/* A hook that only follows bucket completions: notes a bucket completing before an earlier one. */
static int order_hook(rl_param *p, void *arg)
{
    order_rec *o = arg;
    int b = o->plan->bucket_of[p->index];
    if (--o->pending[b] == 0 && b != o->next)
        o->out_of_order = 1;
    while (o->next < o->plan->nbuckets && o->pending[o->next] == 0)
        o->next++;
    return 0;
}

/* 1 when, with this seed and window, backward completes some bucket before an earlier one in
 * each of `steps` backwards (checked on a model of its own). */
static int order_scrambles(const ddp_case *c, uint64_t seed)
{
    rl_ctx *ctx = rl_ctx_new_standalone(grade_hw(), 1);
    rl_model *m = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, c->data_seed);
    ddp_param_desc *d = calloc((size_t)m->nparams, sizeof *d);
    for (int i = 0; i < m->nparams; i++)
        d[i] = (ddp_param_desc){ m->params[i].name, m->params[i].numel, RL_F32, -1 };
    ddp_bucket_plan plan;
    ddp_plan_alloc(&plan, m->nparams);
    ref_assign(d, m->nparams, (int64_t)llround(c->first * DDP_MIB), (int64_t)llround(c->cap * DDP_MIB), &plan);
    int *pending = calloc((size_t)plan.nbuckets + 1, sizeof *pending);
    order_rec o = { &plan, pending, 0, 0 };
    m->hook = order_hook;
    m->hook_arg = &o;
    rl_model_set_ready_order(m, seed, c->ready_window);
    rl_batch b;
    memset(&b, 0, sizeof b);
    int all = 1;
    for (int s = 0; s < c->steps; s++) {
        for (int k = 0; k < plan.nbuckets; k++)
            pending[k] = plan.buckets[k].nparams;
        o.next = 0;
        o.out_of_order = 0;
        float loss;
        rl_data_get(data, ctx, s, 0, c->mb, &b);
        rl_model_zero_grad(m);
        rl_model_forward(m, &b, &loss);
        rl_model_backward(m, 1.0f);
        all = all && o.out_of_order;
    }
    rl_batch_free(&b);
    free(pending);
    ddp_plan_free(&plan);
    free(d);
    rl_data_free(data);
    rl_model_free(m);
    rl_ctx_free_standalone(ctx);
    return all;
}

START_TEST(t_ddp_bucket_order)
{
    rl_rng g = rl_grade_rng(1);
    /* buckets of four different sizes, so the trace shows which bucket each all-reduce is */
    ddp_case *c = ddp_case_new(4, 2, 1, 1);
    c->model.layers = 6;
    c->first = 0.05;
    c->cap = 0.3;
    c->ready_window = rl_grade_pick(&g, 6, 38);
    c->ready_seed = rl_rng_next(&g);
    for (int tries = 0; tries < 50 && !order_scrambles(c, c->ready_seed); tries++)
        c->ready_seed = rl_rng_next(&g);
    c->per_rank = 0;
    printf("cases: 4 ranks, small MLP of 6 blocks (buckets of 4 sizes), gradients ready %d at a time in one random "
           "order on every rank (seed %llu)", c->ready_window, (unsigned long long)c->ready_seed);
    rl_trace *t = NULL;
    ddp_case_go(c, &t, "overlapped DDP (4 ranks, gradients ready out of bucket order)");
    check_bucket_order(c, t, "gradients ready out of bucket order");
    rl_trace_free(t);
    ddp_case_free(c);
    /* and a different order on every rank */
    c = ddp_case_new(rl_grade_pick(&g, 2, 4), 2, 1, 1);
    c->ready_window = rl_grade_pick(&g, 2, 26);
    c->ready_seed = rl_rng_next(&g);
    c->per_rank = 1;
    printf("; %d ranks, small MLP, %d at a time in another order on every rank\n", c->n, c->ready_window);
    t = NULL;
    ddp_case_go(c, &t, "overlapped DDP (gradients ready in another order on every rank)");
    check_bucket_order(c, t, "gradients ready in another order on every rank");
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

START_TEST(t_ddp_groups)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    ddp_case *c = ddp_case_new(4, 2, 1, 1);
    ddp_case_split(c, &g, rl_grade_pick(&g, 4, 6), &cases);
    c->model.layers = rl_grade_pick(&g, 2, 5);
    c->ready_window = rl_grade_pick(&g, 2, 20);
    c->ready_seed = rl_rng_next(&g);
    c->per_rank = 1;
    rl_grade_text_add(&cases, "; small MLP of %d blocks, gradients ready %d at a time in another order on every rank",
                      c->model.layers, c->ready_window);
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    rl_trace *t = NULL;
    const char *what = "overlapped DDP on two data-parallel groups of a split world";
    ddp_case_go(c, &t, what);
    check_group_comm(c, t, what);
    check_bucket_order(c, t, what);
    check_grads(c, what);
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

/* ------------------------------------------------------------------ refusals and the incident */

typedef struct hook_wrap {
    ddp_reducer *red;
    int skip;                      /* this parameter's gradient never becomes ready (-1: none) */
} hook_wrap;

/* The grad-ready hook as a model with an unused parameter calls it: never for `skip`. */
static int skip_hook(rl_param *p, void *arg)
{
    hook_wrap *h = arg;
    return p->index == h->skip ? 0 : ddp_grad_ready(p, h->red);
}

/* What an incident run leaves in the child's record. */
typedef struct incident_res {
    int rc;                        /* rl_launch's status */
    int skip;                      /* index of the parameter that gets no gradient */
    int bucket, nbuckets;          /* its bucket and the number of buckets (the reducer's plan, rank 0) */
    rank_res r[MAXR];
    int fin_rc[MAXR], mark_rc[MAXR][2];
    int launched_early[MAXR];      /* mode 1: the bucket launched before its last parameter was marked */
    int launched_at_end[MAXR];     /* mode 1: ... and was launched once every parameter of it was */
    char fin_msg[MAXR][1100], mark_msg[MAXR][1100];
    double fin_time[MAXR];         /* compute-stream clock when the failing finalize returned */
    int next_rc[MAXR];             /* mode 2: a complete backward and finalize after the error */
    char next_msg[MAXR][1400];
    rl_grade_blob trace;
} incident_res;

typedef struct incident_case {
    rl_model_config model;
    double cap, first;
    int mode;                      /* 0: never-ready bucket; 1: a parameter marked twice; 2: 0, then a full backward */
    int not_last;                  /* modes 0, 2: the parameter sits in a bucket that is not the last one */
    int n;                         /* ranks */
    uint64_t pick;                 /* draws the parameter */
    const rl_hw *hw;               /* NULL: the default profile */
    int keep_trace;
    incident_res res;              /* the run, from the child's record */
} incident_case;

/* One forward and backward of 4 samples of step s on rank `rank`; 0 or the error. */
static int incident_backward(rl_ctx *ctx, rl_model *m, rl_data *data, int rank, int s, rl_batch *bt)
{
    float loss;
    int rc = rl_model_zero_grad(m);
    if (!rc)
        rc = rl_data_get(data, ctx, s, rank * 4, 4, bt);
    if (!rc)
        rc = rl_model_forward(m, bt, &loss);
    if (!rc)
        rc = rl_model_backward(m, 1.0f);
    return rc;
}

/* An incident run in the child: the case and where its results go. */
typedef struct incident_job {
    const incident_case *c;
    incident_res *o;
} incident_job;

static int incident_rank(rl_ctx *ctx, void *arg)
{
    const incident_job *j = arg;
    const incident_case *c = j->c;
    incident_res *o = j->o;
    int rank = rl_rank(ctx);
    rank_res *rr = &o->r[rank];
    rl_model *m = rl_model_new(ctx, &c->model);
    rl_data *data = rl_data_regression(ctx, c->model.hidden, c->model.out_dim, 5);
    ddp_reducer *red = m ? ddp_reducer_new(m, rl_comm_world(ctx), c->cap, c->first) : NULL;
    if (!red) {
        note_err(rr, ctx, RL_ERR_ARG, "ddp_reducer_new (it plans the buckets with your ddp_assign_buckets)");
        rl_data_free(data);
        rl_model_free(m);
        return 0;
    }
    /* the same parameter on every rank: among those whose bucket holds two or more (mode 1), or
     * whose bucket is not the last one (not_last, when there are several buckets) */
    int cand[512], nc = 0, nb = red->plan.nbuckets;
    for (int i = 0; i < m->nparams && nc < 512; i++) {
        int b = red->plan.bucket_of[i];
        if (c->mode == 1 ? red->plan.buckets[b].nparams >= 2 : !c->not_last || nb < 2 || b < nb - 1)
            cand[nc++] = i;
    }
    int idx = nc ? cand[c->pick % (uint64_t)nc] : 0, b = red->plan.bucket_of[idx];
    if (rank == 0)
        o->skip = idx, o->bucket = b, o->nbuckets = nb;
    if (c->mode != 1) {
        hook_wrap h = { red, idx };
        m->hook = skip_hook;
        m->hook_arg = &h;
        rl_batch bt;
        memset(&bt, 0, sizeof bt);
        rl_clear_error(ctx);
        rl_step_begin(ctx, 0);
        int rc = incident_backward(ctx, m, data, rank, 0, &bt);
        if (rc)
            note_err(rr, ctx, rc, "rl_model_backward (it calls your ddp_grad_ready)");
        if (!rr->rc) {
            rl_clear_error(ctx);
            o->fin_rc[rank] = ddp_finalize_backward(red);
            o->fin_time[rank] = rl_stream_time(ctx, RL_STREAM_COMPUTE);
            snprintf(o->fin_msg[rank], sizeof o->fin_msg[rank], "%s", rl_last_error(ctx));
            if (o->fin_rc[rank])
                rl_grade_note("ddp_finalize_backward returned %d: %s", o->fin_rc[rank], o->fin_msg[rank]);
        }
        rl_step_end(ctx);
        m->hook = ddp_grad_ready;
        m->hook_arg = red;
        if (c->mode == 2 && !rr->rc && o->fin_rc[rank]) { /* the next backward, every gradient present */
            rl_step_begin(ctx, 1);
            rl_clear_error(ctx);
            const char *what = "rl_model_backward (it calls your ddp_grad_ready)";
            int rc2 = incident_backward(ctx, m, data, rank, 1, &bt);
            if (!rc2)
                rc2 = ddp_finalize_backward(red), what = "ddp_finalize_backward";
            o->next_rc[rank] = rc2;
            snprintf(o->next_msg[rank], sizeof o->next_msg[rank], "%s returned %d (%s): %s", what, rc2,
                     rl_status_name(rc2), rl_last_error(ctx)[0] ? rl_last_error(ctx) : "(no message)");
            if (rc2)
                rl_grade_note("%s", o->next_msg[rank]);
            rl_step_end(ctx);
        }
        rl_batch_free(&bt);
    } else {
        /* the buckets before b complete (they launch), then p is marked twice, then the rest of
         * b: b must launch when its last parameter is marked, not one mark earlier */
        rl_param *p = &m->params[idx];
        for (int i = 0; i < m->nparams; i++)
            if (red->plan.bucket_of[i] < b)
                ddp_grad_ready(&m->params[i], red);
        for (int k = 0; k < 2; k++) {
            rl_clear_error(ctx);
            o->mark_rc[rank][k] = ddp_grad_ready(p, red);
            if (k == 1)
                snprintf(o->mark_msg[rank], sizeof o->mark_msg[rank], "%s", rl_last_error(ctx));
        }
        for (int i = 0; i < m->nparams; i++)
            if (red->plan.bucket_of[i] == b && i != idx) {
                o->launched_early[rank] |= red->work[b] != NULL;
                ddp_grad_ready(&m->params[i], red);
            }
        o->launched_at_end[rank] = red->work[b] != NULL;
        for (int k = 0; k <= b && k < nb; k++)
            if (red->work[k])
                rl_wait(red->work[k]);
        ddp_reducer_reset(red);
    }
    ddp_reducer_free(red); /* lets the launched buckets' all-reduces finish first */
    rl_data_free(data);
    rl_model_free(m);
    return 0;
}

/* What usually makes an incident run mismatch or hang. */
static const char *incident_advice(const void *arg, int rc)
{
    (void)arg;
    if (rc == RL_ERR_MISMATCH)
        return "Every rank issues the same all-reduces in the same order: one per bucket, in bucket order (README "
               "28.3: \"bucket order, one all-reduce per bucket per backward\").";
    return "the grader leaves the same parameter without a gradient on every rank, so every rank launches the same "
           "buckets; a hang here usually means a rank waits for a bucket that was never launched, or launches "
           "one the others do not";
}

static void incident_produce(void *out, void *arg)
{
    const incident_case *c = arg;
    incident_job j = { c, out };
    rl_trace *t = NULL;
    j.o->rc = launch_hw(c->n, c->hw, incident_rank, &j, c->keep_trace ? &t : NULL);
    j.o->trace = rl_grade_keep_trace(t);
    rl_trace_free(t);
}

/* Runs an incident case on n ranks with a small MLP of random depth and caps (drawn from g);
 * describes it in cases. */
static incident_case *incident_run(rl_rng *g, int mode, int not_last, rl_trace **tr, rl_grade_text *cases)
{
    incident_case *c = calloc(1, sizeof *c);
    ddp_run_config d = ddp_run_config_default();
    c->model = d.model;
    c->model.hidden = 64;
    c->model.layers = rl_grade_pick(g, 2, 5);
    c->first = 0.05;
    c->cap = 0.02 * rl_grade_pick(g, 3, 10);
    c->mode = mode;
    c->not_last = not_last;
    c->pick = rl_rng_next(g);
    int n = c->n = rl_grade_pick(g, 2, 4);
    /* mode 2: a slow link (1 ms per ring step), so that the buckets launched during backward are
     * still running when finalize is called */
    rl_hw slow = *grade_hw();
    slow.intra.alpha = 1e-3;
    c->hw = mode == 2 ? &slow : NULL;
    c->keep_trace = tr != NULL;
    const incident_res *o = rl_grade_run("incident", sizeof *o, incident_produce, c);
    c->res = *o;
    take_ranks(c->res.r, o->r, n);
    for (int r = 0; r < n; r++) {
        c->res.fin_msg[r][sizeof c->res.fin_msg[r] - 1] = 0;
        c->res.mark_msg[r][sizeof c->res.mark_msg[r] - 1] = 0;
        c->res.next_msg[r][sizeof c->res.next_msg[r] - 1] = 0;
    }
    check_launch(n, c->res.rc, c->res.r,
                 mode == 1 ? "ddp_grad_ready called twice for one parameter" : "a backward that skips one parameter",
                 incident_advice, c);
    if (tr)
        *tr = rl_grade_trace(c->res.trace);
    rl_grade_text_add(cases, "%s%d ranks, small MLP of %d blocks, cap %g MiB, parameter %d (bucket %d of %d)",
                      cases->len ? "; " : "", n, c->model.layers, c->cap, c->res.skip, c->res.bucket, c->res.nbuckets);
    return c;
}

/* Checks that finalize failed on every rank of a never-ready case and named the bucket. */
static void check_never_ready(const incident_case *c)
{
    for (int r = 0; r < c->n; r++) {
        const char *msg = c->res.fin_msg[r][0] ? c->res.fin_msg[r] : "(none)";
        ck_assert_msg(c->res.fin_rc[r] != 0,
                      "parameter %d got no gradient in this backward (as an unused head's parameters in lecture 28's "
                      "incident), so bucket %d never became ready and was never launched; ddp_finalize_backward on "
                      "rank %d returned 0 (message: %s) instead of an error naming the bucket (README 28.3: \"If "
                      "some bucket was never launched (a parameter got no gradient: the lecture's incident), it "
                      "returns "
                      "an error code\")",
                      c->res.skip, c->res.bucket, r, msg);
        ck_assert_msg(names_bucket(c->res.fin_msg[r], c->res.bucket),
                      "parameter %d got no gradient, so bucket %d (of buckets 0..%d) never became ready; "
                      "ddp_finalize_backward on rank %d failed (%d, %s) with the message \"%s\", which does not name "
                      "that bucket: it should say \"bucket %d\" — the first bucket that was never launched, "
                      "next_bucket (README 28.3, and Troubleshooting: \"bucket 2 never became ready\")", c->res.skip,
                      c->res.bucket, c->res.nbuckets - 1, r, c->res.fin_rc[r], rl_status_name(c->res.fin_rc[r]), msg, c->res.bucket);
    }
}

START_TEST(t_ddp_never_ready)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    /* a parameter of a bucket that is not the last one, then one of any bucket */
    incident_case *a = incident_run(&g, 0, 1, NULL, &cases);
    incident_case *b = incident_run(&g, 0, 0, NULL, &cases);
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    check_never_ready(a);
    check_never_ready(b);
    free(a);
    free(b);
}
END_TEST

START_TEST(t_ddp_error_path)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    rl_trace *t = NULL;
    incident_case *c = incident_run(&g, 2, 1, &t, &cases);
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    ck_assert_msg(t != NULL, "the run left no trace");
    for (int r = 0; r < c->n; r++) {
        ck_assert_msg(c->res.fin_rc[r] != 0,
                      "parameter %d got no gradient, so bucket %d never became ready, but ddp_finalize_backward on "
                      "rank %d returned 0; this test needs that error (see the test of lecture 28's incident)",
                      c->res.skip, c->res.bucket, r);
        for (size_t i = 0; i < t->n; i++) {
            const rl_trace_event *e = &t->ev[i];
            if (e->rank != r || e->cat != RL_CAT_COMM || e->tags[RL_TAG_STEP] != 0)
                continue;
            ck_assert_msg(e->vend <= c->res.fin_time[r] + 1e-12,
                          "parameter %d got no gradient, so bucket %d never became ready and finalize failed, but on "
                          "rank %d it returned at %.1f us of virtual time while the %s of %.0f bytes (seq %lld, a "
                          "bucket launched before) ran until %.1f us: on this error too, finalize first waits for the "
                          "buckets it launched (ddp.h: ddp_finalize_backward), or an all-reduce is still writing into "
                          "a bucket buffer while the caller zeroes it for the next backward or frees the reducer",
                          c->res.skip, c->res.bucket, r, c->res.fin_time[r] * 1e6, e->name, e->bytes, (long long)e->seq,
                          e->vend * 1e6);
        }
        ck_assert_msg(c->res.next_rc[r] == 0,
                      "after finalize reported that bucket %d never became ready, the next backward on the same "
                      "reducer had every gradient, yet on rank %d %s. On this error too, finalize resets the reducer "
                      "(ddp_reducer_reset, ddp.h: ddp_finalize_backward): otherwise the next backward starts with "
                      "this one's marks, pending counts and next_bucket", c->res.bucket, r, c->res.next_msg[r]);
    }
    rl_trace_free(t);
    free(c);
}
END_TEST

START_TEST(t_ddp_double_mark)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    incident_case *c = incident_run(&g, 1, 0, NULL, &cases);
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    int n = c->n;
    for (int r = 0; r < n; r++) {
        ck_assert_msg(c->res.mark_rc[r][0] == 0, "rank %d: the first ddp_grad_ready for parameter %d returned %d "
                                                 "(%s): %s",
                      r, c->res.skip, c->res.mark_rc[r][0], rl_status_name(c->res.mark_rc[r][0]),
                      c->res.mark_msg[r][0] ? c->res.mark_msg[r] : "(no message)");
        ck_assert_msg(c->res.mark_rc[r][1] != 0,
                      "rank %d: ddp_grad_ready accepted parameter %d a second time in one backward (it returned 0); "
                      "a second mark must be refused with an error (README 28.3: \"A parameter marked twice in one "
                      "backward is refused with a message and not counted again\"), or its bucket is counted "
                      "complete before all its gradients are ready", r,
                      c->res.skip);
        ck_assert_msg(c->res.mark_msg[r][0], "rank %d: the second mark of parameter %d was refused without a "
                                             "message (use "
                      "rl_error)", r, c->res.skip);
        ck_assert_msg(!c->res.launched_early[r],
                      "rank %d: bucket %d's all-reduce was launched before its last parameter was marked: the "
                      "refused second mark of parameter %d was counted (README 28.3: \"not counted again\")", r,
                      c->res.bucket, c->res.skip);
        ck_assert_msg(c->res.launched_at_end[r],
                      "rank %d: every parameter of bucket %d (and of the buckets before it) was marked once, but its "
                      "all-reduce was not launched (after a refused second mark of parameter %d)", r, c->res.bucket,
                      c->res.skip);
    }
    free(c);
}
END_TEST

START_TEST(t_ddp_overlap_starts_early)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 1, 0, &t, "overlapped DDP (the lab's MLP, 4 ranks)");
    ck_assert_msg(c->res.nbuckets >= 2, "the lab's MLP should make several buckets at cap %g MiB; got %d", c->cap,
                  c->res.nbuckets);
    const rl_trace_event *ev[128];
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            int k = step_comm_events(t, r, s, ev, 128);
            ck_assert_msg(k > 0, "rank %d, step %d: no all-reduce in the trace", r, s);
            double start = ev[0]->vstart - c->res.start[r][s], bend = c->res.bwd_end[r][s] - c->res.start[r][s];
            ck_assert_msg(ev[0]->vstart < c->res.bwd_end[r][s],
                          "rank %d, step %d: the first bucket's all-reduce started at %.1f us but backward ended at "
                          "%.1f us (virtual time since the step began); launch each bucket from the grad-ready hook "
                          "as soon as it is complete, with RL_ASYNC, instead of after backward", r, s, start * 1e6,
                          bend * 1e6);
            int late = c->res.late[r][s];
            ck_assert_msg(late < 0, "rank %d, step %d: the grad-ready hook of parameter %d returned with bucket %d "
                          "complete, every bucket before it launched, and its own all-reduce not launched (the grader "
                          "watched r->work; README 28.3: \"When it returns, the all-reduce of every bucket that can "
                          "be launched has been launched\")", r, s, c->res.late_param[r][s], late);
        }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

/* Compute-stream idle time of rank r in step s (waiting for comm). */
static double step_idle(const rl_trace *t, int r, int s)
{
    double idle = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        if (e->rank == r && e->stream == RL_STREAM_COMPUTE && e->cat == RL_CAT_IDLE && e->tags[RL_TAG_STEP] == s)
            idle += e->vend - e->vstart;
    }
    return idle;
}

START_TEST(t_ddp_exposed_comm)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 1, 0, &t, "overlapped DDP (the lab's MLP, 4 ranks)");
    const rl_hw *hw = grade_hw();
    double T = 0, last = 0;
    for (int b = 0; b < c->res.nbuckets && b < 64; b++) {
        last = rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, c->n, (double)c->res.bucket_bytes[b], &hw->intra);
        T += last;
    }
    /* the last bucket becomes ready only when backward ends, so it cannot hide; the others
     * can: allow the last bucket plus half of the rest */
    double bound = last + 0.5 * (T - last) + 1e-6;
    const rl_trace_event *ev[128];
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            int k = step_comm_events(t, r, s, ev, 128);
            double comm_end = 0;
            for (int i = 0; i < k; i++)
                comm_end = fmax(comm_end, ev[i]->vend);
            ck_assert_msg(c->res.fin_time[r][s] >= comm_end - 1e-9,
                          "rank %d, step %d: ddp_finalize_backward returned at %.1f us on the compute stream, before "
                          "the last all-reduce ended (%.1f us, virtual time since the step began): the optimizer "
                          "that follows would read gradients still being reduced. Finalize's waits must hold the "
                          "compute stream (README 28.3: \"afterwards every parameter's gradient (a view into its "
                          "bucket) is the mean\")", r, s, (c->res.fin_time[r][s] - c->res.start[r][s]) * 1e6,
                          (comm_end - c->res.start[r][s]) * 1e6);
            double idle = step_idle(t, r, s);
            ck_assert_msg(idle <= bound,
                          "rank %d, step %d: the compute stream waited %.1f us for communication (exposed comm); "
                          "the bound is %.1f us = the last bucket's all-reduce (%.1f us, alpha-beta) + half of the "
                          "other %d buckets' %.1f us. All-reduces launched during backward with RL_ASYNC hide behind "
                          "the remaining backward; waiting inside the hook or launching after backward does not",
                          r, s, idle * 1e6, bound * 1e6, last * 1e6, c->res.nbuckets - 1, (T - last) * 1e6);
        }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

/* ------------------------------------------------------------------ 28.4 */

/* The reported loss of every rank and step: the mean over the rank's K micro-batches. */
static void check_losses(const ddp_case *c, const char *what)
{
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            double want = c->ref_loss[s][r], got = c->res.loss[r][s];
            int q = c->grank[r];
            ck_assert_msg(fabs(got - want) <= 1e-4 * fabs(want) + 1e-7,
                          "%s: rank %d, step %d: ddp_train_step reported loss %.7g; the mean loss of this rank's %d "
                          "micro-batches (samples %lld..%lld%s) is %.7g (ddp.h: \"*loss (may be NULL) gets the mean "
                          "loss of this rank's samples\"; the mean of the K micro-steps' losses, not the last one's "
                          "or their "
                          "sum)%s", what, r, s, got, c->K, (long long)(q * c->K * c->mb),
                          (long long)((q + 1) * c->K * c->mb - 1), c->ngroups > 1 ? " of its group's data" : "", want,
                          c->ngroups > 1 && q != r
                          ? ". In a split world a rank's samples follow its rank in the reducer's communicator "
                            "(rl_comm_rank(r->comm)), not its world rank (ddp.h: \"this rank's samples are its "
                            "rank-major slice of the step's batch\")" : "");
        }
}

/* After every ddp_train_step with K > 1 the reducer is out of no_sync again. */
static void check_sync_restored(const ddp_case *c, const char *what)
{
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++)
            ck_assert_msg(c->res.sync_after[r][s] == 1,
                          "%s: rank %d, step %d: ddp_train_step returned with require_sync = %d; the step leaves the "
                          "reducer out of no_sync, require_sync = 1 (README 28.4: \"`r->require_sync` is 1 when it "
                          "returns\"; ddp.h), or the next backward that is not inside ddp_train_step's loop — a "
                          "step with "
                          "accum_steps = 1, or code that drives backward itself as in 28.3 — all-reduces nothing",
                          what, r, s, c->res.sync_after[r][s]);
}

START_TEST(t_nosync_grads)
{
    ddp_case *c = ddp_case_run(2, 2, 3, 1, NULL, "ddp_train_step with 3 micro-steps (2 ranks)");
    check_grads(c, "2 ranks x 3 micro-steps");
    check_losses(c, "2 ranks x 3 micro-steps");
    check_sync_restored(c, "2 ranks x 3 micro-steps");
    ddp_case_free(c);
}
END_TEST

START_TEST(t_nosync_one_collective_set)
{
    rl_trace *t = NULL;
    ddp_case *c = ddp_case_run(4, 2, 4, 1, &t, "ddp_train_step with 4 micro-steps (4 ranks)");
    check_bucket_order(c, t, "4 ranks x 4 micro-steps");
    check_grads(c, "4 ranks x 4 micro-steps");
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

START_TEST(t_nosync_single_rank)
{
    grads_case(1, 1, 2, 1, "ddp_train_step with 2 micro-steps (1 rank)", "1 rank x 2 micro-steps");
}
END_TEST

START_TEST(t_nosync_random)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 2; k++) {
        ddp_case *c = ddp_case_new(rl_grade_pick(&g, k ? 1 : 2, 4), 2, rl_grade_pick(&g, 2, 5), 1);
        c->mb = rl_grade_pick(&g, 1, 6);
        c->model.layers = rl_grade_pick(&g, 2, 5);
        c->ready_window = rl_grade_pick(&g, 1, 20);
        c->ready_seed = rl_rng_next(&g);
        c->per_rank = 1;
        rl_grade_text_add(&cases, "%s%d rank(s) x K=%d micro-steps of %lld samples, %d blocks, ready window %d",
                          k ? "; " : "", c->n, c->K, (long long)c->mb, c->model.layers, c->ready_window);
        char what[160];
        snprintf(what, sizeof what, "%d ranks x %d micro-steps of %lld samples", c->n, c->K, (long long)c->mb);
        rl_trace *t = NULL;
        ddp_case_go(c, &t, what);
        check_grads(c, what);
        check_losses(c, what);
        check_sync_restored(c, what);
        check_bucket_order(c, t, what);
        rl_trace_free(t);
        ddp_case_free(c);
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
}
END_TEST

START_TEST(t_nosync_groups)
{
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    ddp_case *c = ddp_case_new(4, 2, rl_grade_pick(&g, 2, 4), 1);
    ddp_case_split(c, &g, rl_grade_pick(&g, 4, 6), &cases);
    c->mb = rl_grade_pick(&g, 2, 5);
    c->model.layers = rl_grade_pick(&g, 2, 4);
    c->ready_window = rl_grade_pick(&g, 2, 20);
    c->ready_seed = rl_rng_next(&g);
    c->per_rank = 1;
    rl_grade_text_add(&cases, "; K=%d micro-steps of %lld samples, small MLP of %d blocks, ready window %d", c->K,
                      (long long)c->mb, c->model.layers, c->ready_window);
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    rl_trace *t = NULL;
    char what[160];
    snprintf(what, sizeof what, "ddp_train_step with %d micro-steps on two data-parallel groups of a split world",
             c->K);
    ddp_case_go(c, &t, what);
    check_group_comm(c, t, what);
    check_losses(c, what);
    check_grads(c, what);
    check_bucket_order(c, t, what);
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

START_TEST(t_nosync_overlap)
{
    rl_trace *t = NULL;
    rl_rng g = rl_grade_rng(1);
    int K = rl_grade_pick(&g, 2, 4);
    printf("cases: 4 ranks x K=%d micro-steps, small MLP of 6 blocks\n", K);
    ddp_case *c = ddp_case_new(4, 2, K, 1);
    c->model.layers = 6;
    ddp_case_go(c, &t, "ddp_train_step (small MLP, 4 ranks)");
    const rl_trace_event *ev[128];
    for (int r = 0; r < c->n; r++)
        for (int s = 0; s < c->steps; s++) {
            int k = step_comm_events(t, r, s, ev, 128);
            ck_assert_msg(k > 0, "rank %d, step %d: no all-reduce in the trace", r, s);
            double t0 = c->res.start[r][s];
            for (int j = 0; j < k; j++)
                ck_assert_msg(ev[j]->vstart >= c->res.bwd_start[r][s] - 1e-12,
                              "rank %d, step %d: an all-reduce (#%d, %.0f bytes) started at %.1f us, before the last "
                              "micro-step's backward began (%.1f us; virtual time since the step began): inside "
                              "no_sync the comm stream stays idle (README 28.4)", r, s, j, ev[j]->bytes,
                              (ev[j]->vstart - t0) * 1e6, (c->res.bwd_start[r][s] - t0) * 1e6);
            ck_assert_msg(ev[0]->vstart < c->res.bwd_end[r][s],
                          "rank %d, step %d of %d micro-steps: the first bucket's all-reduce started at %.1f us but "
                          "the "
                          "last micro-step's backward ended at %.1f us (virtual time since the step began); the last "
                          "micro-step's backward overlaps the all-reduces as in 28.3 (README 28.4: \"none "
                          "before the last micro-step's backward begins\")", r, s, K,
                          (ev[0]->vstart - t0) * 1e6, (c->res.bwd_end[r][s] - t0) * 1e6);
        }
    rl_trace_free(t);
    ddp_case_free(c);
}
END_TEST

/* ================================================================== 28.5 α-β and the sweep */

/* One call of the learner's alpha-beta formula: n ranks, bytes, the link (NULL: none given). */
typedef struct ab_point {
    int n;
    double bytes;
    rl_link link;
    int null_link;
} ab_point;

/* What the calls left in the child's record: per call its status and time; the first failed
 * call's message. */
typedef struct ab_res {
    rl_grade_blob rc, t;
    int first_failed;              /* -1: none */
    char err[1100];
} ab_res;

typedef struct ab_job {
    int tree;
    const ab_point *pts;
    int npts;
} ab_job;

static void ab_produce(void *out, void *arg)
{
    const ab_job *j = arg;
    ab_res *o = out;
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    int *rc = calloc((size_t)j->npts, sizeof *rc);
    double *t = calloc((size_t)j->npts, sizeof *t);
    o->first_failed = -1;
    for (int i = 0; i < j->npts; i++) {
        const ab_point *p = &j->pts[i];
        const rl_link *l = p->null_link ? NULL : &p->link;
        t[i] = 12345;
        rl_clear_error(ctx);
        rc[i] = j->tree ? ddp_ab_tree_all_reduce(ctx, p->n, p->bytes, l, &t[i])
                        : ddp_ab_ring_all_reduce(ctx, p->n, p->bytes, l, &t[i]);
        if (rc[i] && o->first_failed < 0) {
            o->first_failed = i;
            snprintf(o->err, sizeof o->err, "%s", rl_last_error(ctx));
        }
    }
    o->rc = rl_grade_keep(rc, (size_t)j->npts * sizeof *rc);
    o->t = rl_grade_keep(t, (size_t)j->npts * sizeof *t);
    free(rc);
    free(t);
    rl_ctx_free_standalone(ctx);
}

/* Calls the learner's ring (tree 0) or tree formula on every point, in the child; the judge gets
 * each call's status in *rc and time in *t (arrays of npts in the record). */
static const ab_res *ab_run(int tree, const ab_point *pts, int npts, const int **rc, const double **t)
{
    ab_job j = { tree, pts, npts };
    const ab_res *o = rl_grade_run(tree ? "ddp_ab_tree_all_reduce" : "ddp_ab_ring_all_reduce", sizeof *o, ab_produce,
                                   &j);
    *rc = rl_grade_blob_get(o->rc, sizeof **rc, (size_t)npts);
    *t = rl_grade_blob_get(o->t, sizeof **t, (size_t)npts);
    return o;
}

static void check_ab(int tree)
{
    int nprof;
    const rl_hw *hw = rl_hw_profiles(&nprof);
    int ns[] = { 1, 2, 3, 4, 8, 16, 64, 1024 };
    double sizes[] = { 0, 1, 4e6, 25.0 * 1048576, 14e9 };
    int cap = nprof * 2 * 8 * 5 + 12, npts = 0;
    ab_point *pts = calloc((size_t)cap, sizeof *pts);
    for (int p = 0; p < nprof; p++)
        for (int li = 0; li < 2; li++)
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
                    pts[npts++] = (ab_point){ ns[i], sizes[k], li ? hw[p].inter : hw[p].intra, 0 };
    rl_rng g = rl_grade_rng(1);
    rl_grade_text cases = { 0 };
    for (int k = 0; k < 12; k++) { /* any n, any size, made-up links */
        rl_link l = {"made-up link", 1e9 * rl_grade_pick(&g, 1, 900), 1e-7 * rl_grade_pick(&g, 1, 100)};
        int n = rl_grade_pick(&g, 1, 5000);
        double bytes = floor(pow(10.0, 10.0 * rl_rng_uniform(&g)));
        rl_grade_text_add(&cases, "%sn=%d S=%.0f", k ? "; " : "", n, bytes);
        pts[npts++] = (ab_point){ n, bytes, l, 0 };
    }
    printf("cases: %s\n", rl_grade_text_str(&cases));
    rl_grade_text_free(&cases);
    const int *rc;
    const double *got;
    const ab_res *o = ab_run(tree, pts, npts, &rc, &got);
    for (int i = 0; i < npts; i++) {
        const ab_point *p = &pts[i];
        const rl_link *l = &p->link;
        if (rc[i])
            ck_abort_msg("ddp_ab_%s_all_reduce(n=%d, %.0f bytes, %s) returned %d (%s): %.*s", tree ? "tree" : "ring",
                         p->n, p->bytes, l->name, rc[i], rl_status_name(rc[i]), (int)sizeof o->err,
                         i == o->first_failed && o->err[0] ? o->err : "(no message)");
        double want = tree ? rl_ab_tree_all_reduce(p->n, p->bytes, l->alpha, l->bw)
                           : rl_ab_ring_all_reduce(p->n, p->bytes, l->alpha, l->bw);
        ck_assert_msg(fabs(got[i] - want) <= 1e-9 * fabs(want) + 1e-15,
                      "%s all-reduce, n=%d, S=%.0f bytes on %s (alpha %g s, %g B/s): got %.6g s, the cost model says "
                      "%.6g s (%s)", tree ? "tree" : "ring", p->n, p->bytes, l->name, l->alpha, l->bw, got[i], want,
                      tree ? "2 log2(n) alpha + 2 S/bw" : "2(n-1) alpha + 2(n-1)/n S/bw");
    }
    free(pts);
}

START_TEST(t_ab_ring) { check_ab(0); }
END_TEST

START_TEST(t_ab_tree) { check_ab(1); }
END_TEST

START_TEST(t_ab_refusals)
{
    rl_link ok = *(&rl_hw_default()->intra), zero = ok, neg = ok;
    zero.bw = 0;
    neg.bw = -450e9;
    struct { ab_point p; const char *what; } bad[] = {
        { { 0, 100, ok, 0 }, "n = 0" },           { { -3, 100, ok, 0 }, "n = -3" },
        { { 4, -1, ok, 0 }, "bytes = -1" },       { { 4, 100, ok, 1 }, "a NULL link" },
        { { 4, 100, zero, 0 }, "a link with bw = 0" }, { { 4, 100, neg, 0 }, "a link with bw < 0" },
    };
    int nbad = (int)(sizeof bad / sizeof bad[0]);
    for (int tree = 0; tree < 2; tree++)
        for (int k = 0; k < nbad; k++) {
            const int *rc;
            const double *x;
            const ab_res *o = ab_run(tree, &bad[k].p, 1, &rc, &x);
            ck_assert_msg(rc[0] == RL_ERR_ARG,
                          "ddp_ab_%s_all_reduce with %s: expected RL_ERR_ARG (%d), got %d (%s, time %g s); the "
                          "formulas refuse n < 1, bytes < 0, a NULL link and bw <= 0 (ddp.c, TODO 28.5)",
                          tree ? "tree" : "ring", bad[k].what, RL_ERR_ARG, rc[0], rl_status_name(rc[0]), x[0]);
            ck_assert_msg(o->err[0], "ddp_ab_%s_all_reduce with %s: refused without a message (use "
                          "rl_error)", tree ? "tree" : "ring", bad[k].what);
        }
}
END_TEST

/* A cheap base configuration for sweeps on hw (NULL: the default profile). */
static ddp_sweep_config small_sweep(const rl_hw *hw)
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
    sc.base.opts.hw = hw;
    double caps[] = { 0.02, 0.1, 25 };
    sc.ncaps = 3;
    memcpy(sc.caps_mb, caps, sizeof caps);
    sc.max_ranks = rl_grade_quick() ? 4 : 8;
    sc.straggler_rank = 2;
    sc.straggler_ms = 0.5;
    return sc;
}

/* What ddp_scaling_sweep left in the child's record. */
typedef struct sweep_res {
    int rc;
    ddp_sweep_table t;
} sweep_res;

static void sweep_produce(void *out, void *arg)
{
    sweep_res *o = out;
    o->rc = ddp_scaling_sweep(arg, &o->t);
}

/* Runs the learner's sweep in the child; *t gets its table, from the record. */
static void run_sweep(const ddp_sweep_config *sc, ddp_sweep_table *t)
{
    const sweep_res *o = rl_grade_run("ddp_scaling_sweep", sizeof *o, sweep_produce, (void *)sc);
    *t = o->t;
    if (t->nrows < 0 || t->nrows > DDP_SWEEP_MAX)
        t->nrows = 0;
    for (int i = 0; i < t->nrows; i++)
        t->rows[i].label[sizeof t->rows[i].label - 1] = 0;
    ck_assert_msg(o->rc == 0, "ddp_scaling_sweep returned %d (%s); see the output below", o->rc, rl_status_name(o->rc));
    int want = sc->ncaps + sc->max_ranks + (sc->straggler_ms > 0);
    ck_assert_msg(t->nrows == want, "the sweep made %d rows; expected %d (%d caps + worlds 1..%d%s)", t->nrows, want,
                  sc->ncaps, sc->max_ranks, sc->straggler_ms > 0 ? " + 1 straggler" : ", no straggler row");
}

/* What ddp_run (the lab's training, with the code under test) left in the child's record. */
typedef struct run_res {
    int rc;
    ddp_run_stats s;
} run_res;

static void run_produce(void *out, void *arg)
{
    run_res *o = out;
    o->rc = ddp_run(arg, &o->s);
}

/* Runs one configuration with ddp_run in the child; its stats from the record (the test ends
 * when it failed). */
static ddp_run_stats run_config(const ddp_run_config *rc)
{
    const run_res *o = rl_grade_run("ddp_run", sizeof *o, run_produce, (void *)rc);
    ck_assert_msg(o->rc == 0, "ddp_run of the lab's training returned %d (%s); see the output below", o->rc,
                  rl_status_name(o->rc));
    ddp_run_stats s = o->s;
    s.backend[sizeof s.backend - 1] = 0;
    return s;
}

/* The reference prediction of a row: the ring formula over its buckets on the link its ranks
 * 0..n-1 use on the sweep's hardware (rl_hw_group_link: inter-node once they span nodes). */
static double ref_predicted(const ddp_sweep_config *sc, const ddp_sweep_row *row, const rl_link **lk)
{
    const rl_hw *hw = sc->base.opts.hw ? sc->base.opts.hw : rl_hw_default();
    int granks[DDP_MAX_RANKS];
    int n = row->ranks < DDP_MAX_RANKS ? row->ranks : DDP_MAX_RANKS;
    for (int q = 0; q < n; q++)
        granks[q] = q;
    const rl_link *link = rl_hw_group_link(hw, granks, n > 0 ? n : 1);
    double pred = 0;
    for (int b = 0; b < row->stats.nbuckets && b < 64; b++)
        pred += rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n, (double)row->stats.bucket_bytes[b], link);
    *lk = link;
    return pred;
}

/* 1 when label starts with word and the number after it is x ("bucket 0.1 MiB", "world 4"). */
static int label_is(const char *label, const char *word, double x)
{
    size_t k = strlen(word);
    if (strncmp(label, word, k) != 0)
        return 0;
    char *end;
    double v = strtod(label + k, &end);
    return end != label + k && fabs(v - x) <= 1e-9 * fabs(x);
}

/* 1 when label is "straggler rank <R> +<X> ms" with R = rank and X = ms (any number format). */
static int straggler_label_is(const char *label, int rank, double ms)
{
    int r = -1, k = 0;
    double x = -1;
    if (sscanf(label, "straggler rank %d +%lf ms%n", &r, &x, &k) != 2 || k == 0 || label[k] != 0)
        return 0;
    return r == rank && fabs(x - ms) <= 1e-9 * fabs(ms);
}

/* A row's label for messages ("(no label)" when empty). */
static const char *row_label(const ddp_sweep_row *row) { return row->label[0] ? row->label : "(no label)"; }

/* Checks every row of a sweep: its configuration and label, that it was measured, its
 * prediction on the ranks' real link, and the world rows' efficiency and speedup. */
static void check_sweep_rows(const ddp_sweep_config *sc, const ddp_sweep_table *t)
{
    const rl_hw *hw = sc->base.opts.hw ? sc->base.opts.hw : rl_hw_default();
    for (int i = 0; i < t->nrows; i++) {
        const ddp_sweep_row *row = &t->rows[i];
        int is_cap = i < sc->ncaps, is_world = !is_cap && i < sc->ncaps + sc->max_ranks;
        int n = is_world ? i - sc->ncaps + 1 : sc->base.opts.ranks;
        double cap = is_cap ? sc->caps_mb[i] : sc->base.bucket_cap_mb;
        ck_assert_msg(row->ranks == n && row->bucket_cap_mb == cap && (row->straggler_ms > 0) == (!is_cap && !is_world),
                      "%s, row %d ('%s'): ranks %d, cap %g MiB, straggler %g ms; expected ranks %d, cap %g MiB%s "
                      "(rows: the caps, then worlds 1..%d, then the "
                      "straggler)", hw->name, i, row_label(row), row->ranks,
                      row->bucket_cap_mb, row->straggler_ms, n, cap, (!is_cap && !is_world) ? " and the straggler"
                      : ", no straggler", sc->max_ranks);
        int lab_ok = is_cap ? label_is(row->label, "bucket ", cap)
                     : is_world ? label_is(row->label, "world ", n)
                                : straggler_label_is(row->label, sc->straggler_rank, sc->straggler_ms);
        char want[96];
        if (is_cap)
            snprintf(want, sizeof want, "\"bucket %g MiB\"", cap);
        else if (is_world)
            snprintf(want, sizeof want, "\"world %d\"", n);
        else
            snprintf(want, sizeof want, "\"straggler rank %d +%g ms\" (the delay as given, %g ms)", sc->straggler_rank,
                     sc->straggler_ms, sc->straggler_ms);
        ck_assert_msg(lab_ok, "row %d is labelled '%s'; expected %s (ddp.c, TODO 28.5: the rows' labels)", i,
                      row->label[0] ? row->label : "(empty)", want);
        ck_assert_msg(is_world || (row->efficiency == 0 && row->speedup == 0),
                      "%s, row %d ('%s'): efficiency %g, speedup %g; those two are for the world rows only, against "
                      "'world 1' (ddp.h: \"world rows: ...\"); on the bucket and straggler rows they stay 0, which "
                      "ddp_sweep_print shows as '-'", hw->name, i, row_label(row), row->efficiency, row->speedup);
        ck_assert_msg(row->stats.step_time > 0 && row->stats.ranks == n,
                      "%s, row %d ('%s'): no measurements (step time %g s, %d ranks); run it with ddp_run", hw->name,
                      i, row_label(row), row->stats.step_time, row->stats.ranks);
        const rl_link *link;
        double pred = ref_predicted(sc, row, &link);
        ck_assert_msg(fabs(row->predicted_comm - pred) <= 1e-9 * pred + 1e-15,
                      "%s, row %d ('%s', %d ranks): predicted_comm %.6g s; the ring formula over its %d buckets on the "
                      "link these ranks use (%s: alpha %g s, %g B/s; rl_hw_group_link on the run's --hw) gives %.6g s",
                      hw->name, i, row_label(row), n, row->predicted_comm, row->stats.nbuckets, link->name, link->alpha,
                      link->bw, pred);
        if (is_world) {
            double t1 = t->rows[sc->ncaps].stats.step_time, eff = t1 / row->stats.step_time;
            ck_assert_msg(fabs(row->efficiency - eff) <= 1e-9 * eff && fabs(row->speedup - n * eff) <= 1e-9 * n * eff,
                          "%s, row %d ('%s'): efficiency %.6g and speedup %.6g; with t(1) = %.6g s (the 'world 1' "
                          "row) and t(%d) = %.6g s they are t(1)/t(n) = %.6g and n x that = %.6g", hw->name, i,
                          row_label(row), row->efficiency, row->speedup, t1, n, row->stats.step_time, eff, n * eff);
        }
    }
}

/* Runs a row's configuration again and checks the row holds what that run measures. */
static void rerun_row(const ddp_sweep_config *sc, const ddp_sweep_row *row)
{
    if (row->ranks < 1 || row->ranks > sc->max_ranks)
        return; /* not a row of this sweep (one that failed): the checks above say so */
    ddp_run_config rc = sc->base;
    rc.opts.ranks = row->ranks;
    rc.bucket_cap_mb = row->bucket_cap_mb;
    rc.opts.nfaults = 0;
    ddp_run_stats s = run_config(&rc);
    const rl_hw *hw = sc->base.opts.hw ? sc->base.opts.hw : rl_hw_default();
    ck_assert_msg(fabs(s.step_time - row->stats.step_time) <= 1e-12 && s.nbuckets == row->stats.nbuckets &&
                  fabs(s.comm_time - row->stats.comm_time) <= 1e-12,
                  "row '%s': step time %.6g s, comm %.6g s with %d buckets, but running that configuration (%d ranks, "
                  "cap %g MiB, %s) gives %.6g s, comm %.6g s with %d buckets: a row holds the run it claims",
                  row_label(row), row->stats.step_time, row->stats.comm_time, row->stats.nbuckets, row->ranks,
                  row->bucket_cap_mb, hw->name, s.step_time, s.comm_time, s.nbuckets);
}

START_TEST(t_sweep_table)
{
    ddp_sweep_config sc = small_sweep(NULL);
    ddp_sweep_table *t = calloc(1, sizeof *t);
    run_sweep(&sc, t);
    check_sweep_rows(&sc, t);
    /* the sweep ran what it says: re-run two rows and compare (the timeline is deterministic) */
    rl_rng g = rl_grade_rng(1);
    int a = rl_grade_pick(&g, 0, sc.ncaps - 1), b = sc.ncaps + rl_grade_pick(&g, 1, sc.max_ranks - 1);
    printf("cases: re-run rows %d and %d\n", a, b);
    rerun_row(&sc, &t->rows[a]);
    rerun_row(&sc, &t->rows[b]);
    ddp_sweep_print(t, stdout);
    free(t);
}
END_TEST

START_TEST(t_sweep_other_hw)
{
    rl_rng g = rl_grade_rng(1);
    ddp_sweep_table *t = calloc(1, sizeof *t);
    /* a100-pcie: every link is slower than NVLink */
    ddp_sweep_config sc = small_sweep(rl_hw_find("a100-pcie"));
    sc.ncaps = 1;
    sc.caps_mb[0] = 0.01 * rl_grade_pick(&g, 2, 20);
    sc.max_ranks = rl_grade_pick(&g, 2, 5);
    sc.straggler_ms = 0;
    printf("cases: a100-pcie cap %g MiB, worlds 1..%d", sc.caps_mb[0], sc.max_ranks);
    run_sweep(&sc, t);
    check_sweep_rows(&sc, t);
    rerun_row(&sc, &t->rows[rl_grade_pick(&g, 0, t->nrows - 1)]);
    /* two nodes of 8: from 9 ranks on the ring crosses InfiniBand */
    sc = small_sweep(rl_hw_find("h100-2node-ib"));
    sc.ncaps = 0;
    sc.max_ranks = rl_grade_pick(&g, 9, 11);
    sc.straggler_ms = 0;
    printf("; h100-2node-ib worlds 1..%d\n", sc.max_ranks);
    run_sweep(&sc, t);
    check_sweep_rows(&sc, t);
    rerun_row(&sc, &t->rows[t->nrows - 1]);
    free(t);
}
END_TEST

START_TEST(t_sweep_straggler)
{
    rl_rng g = rl_grade_rng(1);
    ddp_sweep_config sc = small_sweep(NULL);
    sc.ncaps = 0;
    sc.max_ranks = 1;
    sc.straggler_rank = rl_grade_pick(&g, 0, sc.base.opts.ranks - 1);
    sc.straggler_ms = 0.1 * rl_grade_pick(&g, 3, 15);
    printf("cases: straggler rank %d, +%g ms\n", sc.straggler_rank, sc.straggler_ms);
    ddp_sweep_table *t = calloc(1, sizeof *t);
    run_sweep(&sc, t);
    const ddp_sweep_row *row = &t->rows[t->nrows - 1];
    ck_assert_msg(straggler_label_is(row->label, sc.straggler_rank, sc.straggler_ms),
                  "the straggler row is labelled '%s'; expected \"straggler rank %d +%g ms\" (the delay as given)",
                  row->label[0] ? row->label : "(empty)", sc.straggler_rank, sc.straggler_ms);
    ddp_run_stats base = run_config(&sc.base);
    double x = sc.straggler_ms * 1e-3;
    ck_assert_msg(row->ranks == sc.base.opts.ranks && row->straggler_ms == sc.straggler_ms,
                  "the straggler row has %d ranks and %g ms; expected %d ranks, %g ms", row->ranks, row->straggler_ms,
                  sc.base.opts.ranks, sc.straggler_ms);
    for (int r = 0; r < row->ranks; r++) {
        double grow = row->stats.rank_step[r] - base.rank_step[r];
        ck_assert_msg(grow >= 0.9 * x && grow <= 1.1 * x,
                      "straggler rank %d +%g ms: rank %d's step took %.1f us, without the straggler %.1f us; every "
                      "rank's step grows by the straggler's delay, %g ms, no more and no less (the others wait for "
                      "the slow one in the next all-reduce)", sc.straggler_rank, sc.straggler_ms, r,
                      row->stats.rank_step[r] * 1e6, base.rank_step[r] * 1e6, sc.straggler_ms);
        if (r == sc.straggler_rank)
            ck_assert_msg(row->stats.rank_wait[r] <= base.rank_wait[r] + 0.1 * x,
                          "straggler rank %d waited %.1f us on comm (without the straggler %.1f us); the slow rank "
                          "itself hardly waits, the others wait for it (README 28.5). Is the fault on rank %d?",
                          r, row->stats.rank_wait[r] * 1e6, base.rank_wait[r] * 1e6, sc.straggler_rank);
        else
            ck_assert_msg(row->stats.rank_wait[r] >= base.rank_wait[r] + 0.9 * x,
                          "straggler rank %d: rank %d waited %.1f us on comm (without the straggler %.1f us); expected "
                          "about %g ms more (is the fault on rank %d?)", sc.straggler_rank, r,
                          row->stats.rank_wait[r] * 1e6, base.rank_wait[r] * 1e6, sc.straggler_ms, sc.straggler_rank);
    }
    free(t);
}
END_TEST

/* ------------------------------------------------------------------ answers file */

/* This learner's numbers for the hand derivations (rl_grade_learner_pick). */
typedef struct h_numbers {
    int h1_n, h2_n, h3_node, h3_cluster, h3_pct, h4_gpus, h6_n, h6_pct;
    double h1_mb, h3_params, h4_speedup, h5_fast_ms, h5_slow_ms, h6_mib;
    /* H7/H8: p0..p5 (KiB, f32) and p6 = p1 tied; the two caps (KiB); when backward makes each
     * gradient ready (µs; p1's after both uses of the tied weight) */
    double h7_kib[6], h7_first_kib, h7_cap_kib, h8_ready_us[6];
} h_numbers;

/* H7's plan: p0..p5 (f32, KiB) and p6 = p1, bucketed by the rule of 28.2 (ref_assign) into p;
 * the caller frees it with ddp_plan_free. */
static void h7_plan(const double *kib, double first_kib, double cap_kib, ddp_bucket_plan *p)
{
    ddp_param_desc d[7];
    for (int i = 0; i < 7; i++)
        d[i] = (ddp_param_desc){ "p", (int64_t)(i < 6 ? kib[i] : kib[1]) * 256, RL_F32, i < 6 ? -1 : 1 };
    ck_assert(ddp_plan_alloc(p, 7) == 0);
    ref_assign(d, 7, (int64_t)first_kib * 1024, (int64_t)cap_kib * 1024, p);
}

static h_numbers my_numbers(void)
{
    static const double n1[] = { 3, 5, 6, 8 }, mb1[] = { 6, 12, 40, 100 }, n2[] = { 256, 512, 2048, 4096 };
    static const double p3[] = { 1.3e9, 3e9, 13e9, 34e9 }, node3[] = { 4, 8, 16 }, cl3[] = { 512, 2048 };
    static const double sp4[] = { 180, 260, 330, 410 }, g4[] = { 512, 1024 }, f5[] = { 15, 20, 30 },
                        s5[] = { 45, 80, 95 }, mib6[] = { 10, 50, 100 }, n6[] = { 2, 8 };
    static const double pct3[] = { 90, 95, 96, 99 }, pct6[] = { 50, 75, 90 };
    h_numbers n;
    n.h1_n = (int)rl_grade_learner_pick("28/H1/n", n1, 4);
    n.h1_mb = rl_grade_learner_pick("28/H1/mb", mb1, 4);
    n.h2_n = (int)rl_grade_learner_pick("28/H2/n", n2, 4);
    n.h3_params = rl_grade_learner_pick("28/H3/params", p3, 4);
    n.h3_node = (int)rl_grade_learner_pick("28/H3/node", node3, 3);
    n.h3_cluster = (int)rl_grade_learner_pick("28/H3/cluster", cl3, 2);
    n.h3_pct = (int)rl_grade_learner_pick("28/H3/pct", pct3, 4);
    n.h4_speedup = rl_grade_learner_pick("28/H4/speedup", sp4, 4);
    n.h4_gpus = (int)rl_grade_learner_pick("28/H4/gpus", g4, 2);
    n.h5_fast_ms = rl_grade_learner_pick("28/H5/fast", f5, 3);
    n.h5_slow_ms = rl_grade_learner_pick("28/H5/slow", s5, 3);
    n.h6_mib = rl_grade_learner_pick("28/H6/mib", mib6, 3);
    n.h6_n = (int)rl_grade_learner_pick("28/H6/n", n6, 2);
    n.h6_pct = (int)rl_grade_learner_pick("28/H6/pct", pct6, 3);
    static const double kib[] = { 64, 96, 128, 160, 192, 256 }, first[] = { 128, 192, 256 }, cap[] = { 320, 448, 512 },
                        gap[] = { 15, 20, 25, 30 };
    for (int i = 0; i < 6; i++) {
        char q[32];
        snprintf(q, sizeof q, "28/H7/p%d", i);
        n.h7_kib[i] = rl_grade_learner_pick(q, kib, 6);
    }
    n.h7_first_kib = rl_grade_learner_pick("28/H7/first", first, 3);
    n.h7_cap_kib = rl_grade_learner_pick("28/H7/cap", cap, 3);
    double t = 0; /* backward reaches p5 first, p0 last ... */
    for (int i = 5; i >= 0; i--) {
        char q[32];
        snprintf(q, sizeof q, "28/H8/gap%d", i);
        n.h8_ready_us[i] = t += rl_grade_learner_pick(q, gap, 4);
    }
    /* ... but p5's gradient (always in bucket 0) comes late: 5 µs after bucket 1's last, so
     * bucket 1 is complete before bucket 0 and must wait for it */
    ddp_bucket_plan p;
    h7_plan(n.h7_kib, n.h7_first_kib, n.h7_cap_kib, &p);
    double b1_ready = 0;
    for (int j = 0; p.nbuckets > 1 && j < p.buckets[1].nparams; j++)
        b1_ready = fmax(b1_ready, n.h8_ready_us[p.order[p.buckets[1].first + j]]);
    ddp_plan_free(&p);
    n.h8_ready_us[5] = b1_ready + 5;
    return n;
}



/* make questions LAB=28: this learner's numbers. */
static void questions28(FILE *out)
{
    h_numbers n = my_numbers();
    fprintf(out, "  H1: ring all-reduce on N = %d GPUs of a %g MB gradient buffer.\n", n.h1_n, n.h1_mb);
    fprintf(out, "  H2: one all-reduce on %d GPUs.\n", n.h2_n);
    fprintf(out, "  H3: a model of %g·10⁹ parameters, bf16 gradients, on %d GPUs and on %d GPUs; percentage %d%%.\n",
            n.h3_params / 1e9, n.h3_node, n.h3_cluster, n.h3_pct);
    fprintf(out, "  H4: a job runs %gx faster on %d GPUs than on one.\n", n.h4_speedup, n.h4_gpus);
    fprintf(out, "  H5: every rank but one finishes its compute in %g ms, the straggler in %g ms.\n", n.h5_fast_ms,
            n.h5_slow_ms);
    fprintf(out, "  H6: one %g MiB bucket, ring all-reduce on %d GPUs of h100-nvlink and of a100-pcie; busbw target %d%%.\n",
            n.h6_mib, n.h6_n, n.h6_pct);
    fprintf(out, "  H7: f32 parameters p0..p6 in registration order, in KiB: %g, %g, %g, %g, %g, %g and p6 = p1 (a tied "
                 "weight registered twice); first bucket cap %g KiB, cap %g KiB.\n", n.h7_kib[0], n.h7_kib[1],
            n.h7_kib[2], n.h7_kib[3], n.h7_kib[4], n.h7_kib[5], n.h7_first_kib, n.h7_cap_kib);
    fprintf(out, "  H8: backward makes the gradients ready at (µs): p5 %g, p4 %g, p3 %g, p2 %g, p1 %g (both uses of "
                 "the tied weight), p0 %g.\n", n.h8_ready_us[5], n.h8_ready_us[4], n.h8_ready_us[3], n.h8_ready_us[2],
            n.h8_ready_us[1], n.h8_ready_us[0]);
}

/* H1: bytes per GPU in the reduce-scatter and in the whole all-reduce (MB). */
START_TEST(t_ans_traffic)
{
    h_numbers n = my_numbers();
    CHECK_NUM("h1_reduce_scatter_mb", rl_ring_bytes_per_rank(RL_COLL_REDUCE_SCATTER, n.h1_n, n.h1_mb * 1e6) / 1e6, 0.01);
    CHECK_NUM("h1_total_mb", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n.h1_n, n.h1_mb * 1e6) / 1e6, 0.01);
    CHECK_NUM("h1_step_mb", n.h1_mb / n.h1_n, 0.01); /* one chunk per ring step */
}
END_TEST

/* H2: latency steps of ring and tree all-reduce. */
START_TEST(t_ans_latency)
{
    h_numbers n = my_numbers();
    rl_calc_coll_in in = { RL_COLL_ALL_REDUCE, RL_ALGO_RING, n.h2_n, 1e6, rl_hw_find("h100-2node-ib"), NULL };
    rl_calc_coll_out ring, tree;
    ck_assert(rl_calc_coll(&in, &ring, NULL, 0) == 0);
    in.algo = RL_ALGO_TREE;
    ck_assert(rl_calc_coll(&in, &tree, NULL, 0) == 0);
    CHECK_NUM("h2_ring_steps", ring.latency_steps, 0.001);
    CHECK_NUM("h2_tree_steps", tree.latency_steps, 0.001);
    /* the size below which the tree's α-β time beats the ring's on the InfiniBand link:
     * 2(N-1)α + 2(N-1)/N·S/bw = 2·log2(N)·α + 2S/bw  ⇔  S = N·bw·α·(N - 1 - log2 N) */
    const rl_link *ib = &rl_hw_find("h100-2node-ib")->inter;
    CHECK_NUM("h2_tree_below_gb", n.h2_n * ib->bw * ib->alpha * (n.h2_n - 1 - log2(n.h2_n)) / 1e9, 0.01);
}
END_TEST

/* H3: a model's bf16 gradients: GB each GPU sends per step on a node and on a cluster. */
START_TEST(t_ans_7b)
{
    h_numbers n = my_numbers();
    double bytes = 2 * n.h3_params;
    CHECK_NUM("h3_gb_node", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n.h3_node, bytes) / 1e9, 0.01);
    CHECK_NUM("h3_gb_cluster", rl_ring_bytes_per_rank(RL_COLL_ALL_REDUCE, n.h3_cluster, bytes) / 1e9, 0.005);
    /* the fewest GPUs at which each sends at least pct% of twice the gradients: 2(N-1)/N >= 2·pct/100 */
    CHECK_NUM("h3_gpus_for_pct", (100 + (100 - n.h3_pct) - 1) / (100 - n.h3_pct), 0.001);
}
END_TEST

/* H4: scaling efficiency; H5: a straggler's cost. */
START_TEST(t_ans_efficiency)
{
    h_numbers n = my_numbers();
    CHECK_NUM("h4_efficiency_pct", 100.0 * n.h4_speedup / n.h4_gpus, 0.01);
    CHECK_NUM("h5_wait_ms", n.h5_slow_ms - n.h5_fast_ms, 0.01);
}
END_TEST

/* H6: α-β time of one bucket on two profiles (µs). */
START_TEST(t_ans_bucket_time)
{
    h_numbers n = my_numbers();
    double S = n.h6_mib * DDP_MIB;
    CHECK_NUM("h6_h100_us",
              1e6 * rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n.h6_n, S, &rl_hw_find("h100-nvlink")->intra), 0.02);
    CHECK_NUM("h6_a100pcie_us",
              1e6 * rl_ab_time(RL_COLL_ALL_REDUCE, RL_ALGO_RING, n.h6_n, S, &rl_hw_find("a100-pcie")->intra), 0.02);
    /* the bucket at which h100-nvlink's busbw reaches pct% of the link: busbw/bw = x/(2(N-1)α + x) with
     * x = 2(N-1)/N·S/bw, so S = pct/(100-pct)·α·N·bw */
    const rl_link *nv = &rl_hw_find("h100-nvlink")->intra;
    CHECK_NUM("h6_mb_at_pct", n.h6_pct / (100.0 - n.h6_pct) * nv->alpha * n.h6_n * nv->bw / 1e6, 0.01);
}
END_TEST

/* H7: H7's parameters bucketed by 28.2's rule. */
START_TEST(t_ans_buckets)
{
    h_numbers n = my_numbers();
    ddp_bucket_plan p;
    h7_plan(n.h7_kib, n.h7_first_kib, n.h7_cap_kib, &p);
    CHECK_NUM("h7_nbuckets", p.nbuckets, 0);
    CHECK_NUM("h7_bucket_of_p6", p.bucket_of[6], 0);
    CHECK_NUM("h7_b1_kib", p.buckets[1].bytes / 1024.0, 0.001);
    ddp_plan_free(&p);
}
END_TEST

/* H8: a bucket's all-reduce starts when its last gradient is ready and every earlier bucket has
 * started (28.3 launches them in bucket order). */
START_TEST(t_ans_launch)
{
    h_numbers n = my_numbers();
    ddp_bucket_plan p;
    h7_plan(n.h7_kib, n.h7_first_kib, n.h7_cap_kib, &p);
    double launch[8] = { 0 }, prev = 0;
    for (int b = 0; b < p.nbuckets && b < 8; b++) {
        double ready = 0;
        for (int j = 0; j < p.buckets[b].nparams; j++)
            ready = fmax(ready, n.h8_ready_us[p.order[p.buckets[b].first + j]]);
        launch[b] = prev = fmax(prev, ready);
    }
    CHECK_NUM("h8_launch_b1_us", launch[1], 0.001);
    CHECK_NUM("h8_launch_last_us", launch[p.nbuckets - 1], 0.001);
    ddp_plan_free(&p);
}
END_TEST

START_TEST(t_ans_interview)
{
    CHECK_INTERVIEW();
}
END_TEST

/* the interview questions' answer keys, in the handout's order */
static const char *const interview28[] = { "i1_reverse_order", "i2_tied_weights", "i3_step_spikes", NULL };

/* ================================================================== the table */

static const rl_grade_step steps28[] = {
    { "28.1", "ring all-reduce" },
    { "28.2", "bucket assignment" },
    { "28.3", "overlapped DDP" },
    { "28.4", "no_sync accumulation" },
    { "28.5", "alpha-beta and scaling" },
};

static const rl_grade_test tests28[] = {
    { "28.1", "world sizes 1-8, repeated calls", 6, 20, &t_ring_world_sizes, 0 },
    { "28.1", "odd counts (not divisible by n)", 5, 20, &t_ring_odd_counts, 0 },
    { "28.1", "count < n and count 0", 4, 20, &t_ring_tiny_counts, 0 },
    { "28.1", "bf16 buffers", 2, 20, &t_ring_bf16, 0 },
    { "28.1", "sub-communicators of random membership", 4, 20, &t_ring_subcomm, 0 },
    { "28.1", "ring pattern: one chunk per step to a neighbour, 2(n-1)/n x S bytes", 7, 20, &t_ring_pattern, 0 },
    { "28.1", "send and recv of a step run together (alpha-beta time)", 3, 20, &t_ring_time, 0 },
    { "28.1", "scratch: one RL_MEM_COMM tensor of ceil(count/n) elements", 2, 20, &t_ring_memory, 0 },
    { "28.2", "the lab's MLP (25 MiB, 4 MiB, 1 MiB caps)", 5, 20, &t_buckets_lab_model, 0 },
    { "28.2", "reverse registration order", 4, 10, &t_buckets_reverse_order, 0 },
    { "28.2", "a bucket closes when it reaches its cap", 4, 10, &t_buckets_cap_boundary, 0 },
    { "28.2", "huge and tiny parameters", 3, 10, &t_buckets_huge_tiny, 0 },
    { "28.2", "cap smaller than one parameter", 3, 10, &t_buckets_small_cap, 0 },
    { "28.2", "tied parameter counted once", 3, 10, &t_buckets_tied, 0 },
    { "28.2", "empty model, bad caps refused", 2, 10, &t_buckets_empty_and_bad, 0 },
    { "28.2", "negative sizes, bad tied_to, mixed dtypes refused", 3, 10, &t_buckets_refusals, 0 },
    { "28.2", "random parameter lists against the rule", 5, 10, &t_buckets_random, 0 },
    { "28.2", "answers: your parameters' buckets, by hand (H7)", 2, 10, &t_ans_buckets, RL_GRADE_NO_CHILD },
    { "28.3", "gradients = one-rank global-batch gradients", 8, 40, &t_ddp_grads, 0 },
    { "28.3", "3 ranks and 1 rank, small MLP", 3, 30, &t_ddp_grads_odd, 0 },
    { "28.3", "one all-reduce per bucket, in bucket order", 6, 40, &t_ddp_bucket_order, 0 },
    { "28.3", "a parameter marked ready twice is refused", 3, 20, &t_ddp_double_mark, 0 },
    { "28.3", "a bucket that never becomes ready: finalize fails and names it", 4, 20, &t_ddp_never_ready, 0 },
    { "28.3", "after that error: launched buckets waited for, reducer reset", 2, 20, &t_ddp_error_path, 0 },
    { "28.3", "two data-parallel groups of a split world", 4, 30, &t_ddp_groups, 0 },
    { "28.3", "each bucket launched by the hook call that lets it go", 6, 40, &t_ddp_overlap_starts_early, 0 },
    { "28.3", "exposed comm below the bound", 6, 40, &t_ddp_exposed_comm, 0 },
    { "28.3", "answers: when your buckets' all-reduces start (H8)", 2, 10, &t_ans_launch, RL_GRADE_NO_CHILD },
    { "28.4", "3 micro-steps = one rank's 3x batch", 6, 30, &t_nosync_grads, 0 },
    { "28.4", "one collective set per 4 micro-steps", 6, 30, &t_nosync_one_collective_set, 0 },
    { "28.4", "one rank, 2 micro-steps", 2, 30, &t_nosync_single_rank, 0 },
    { "28.4", "random ranks, micro-steps, micro-batch: gradients and reported loss", 4, 30, &t_nosync_random, 0 },
    { "28.4", "the last micro-step's backward overlaps the all-reduces", 3, 30, &t_nosync_overlap, 0 },
    { "28.4", "two data-parallel groups of a split world, K micro-steps", 3, 30, &t_nosync_groups, 0 },
    { "28.5", "ring alpha-beta time = cost model", 3, 10, &t_ab_ring, 0 },
    { "28.5", "tree alpha-beta time = cost model", 3, 10, &t_ab_tree, 0 },
    { "28.5", "alpha-beta arguments refused", 2, 10, &t_ab_refusals, 0 },
    { "28.5", "the sweep produces a table", 6, 60, &t_sweep_table, 0 },
    { "28.5", "the sweep on a100-pcie and on two nodes (group link)", 4, 60, &t_sweep_other_hw, 0 },
    { "28.5", "a straggler makes everyone wait", 3, 40, &t_sweep_straggler, 0 },
    { "28.5", "answers: ring traffic per GPU (your N and buffer)", 2, 10, &t_ans_traffic, RL_GRADE_NO_CHILD },
    { "28.5", "answers: ring vs tree latency steps on your GPUs", 2, 10, &t_ans_latency, RL_GRADE_NO_CHILD },
    { "28.5", "answers: your model's gradients on a node and a cluster", 2, 10, &t_ans_7b, RL_GRADE_NO_CHILD },
    { "28.5", "answers: scaling efficiency, straggler wait", 2, 10, &t_ans_efficiency, RL_GRADE_NO_CHILD },
    { "28.5", "answers: your bucket on NVLink and PCIe", 2, 10, &t_ans_bucket_time, RL_GRADE_NO_CHILD },
    { "28.5", "answers: interview questions", 3, 10, &t_ans_interview, RL_GRADE_NO_CHILD },
};

int main(int argc, char **argv)
{
    rl_grade_lab lab = {
        "28", "DDP: data parallelism and bucket overlap", "labs/28_ddp/README.md", "labs/28_ddp/answers.txt",
        steps28, (int)(sizeof steps28 / sizeof steps28[0]), tests28, (int)(sizeof tests28 / sizeof tests28[0]),
        questions28,
        interview28,
    };
    return rl_grade_main(&lab, argc, argv);
}
