/* test_comm.c — the sim communicators against naive references: every collective for
 * world sizes 1–8, f32 and bf16, odd counts, count 0; split communicators; async
 * ordering; counters; virtual time against the α-β formulas; trace determinism;
 * mismatch errors; the watchdog on an injected hang; no leaked threads. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ringlab.h"
#include "testutil.h"

/* Value rank q holds at element i: small integers, so every sum is exact in bf16. */
static float pat(int q, int64_t i) { return (float)((q * 3 + i * 7) % 11) - 5.0f; }

static float ref_reduce(rl_redop op, int n, int64_t i, rl_dtype dt)
{
    float acc = pat(0, i);
    for (int q = 1; q < n; q++) {
        float v = pat(q, i);
        acc = op == RL_MAX ? fmaxf(acc, v) : op == RL_MIN ? fminf(acc, v) : acc + v;
    }
    if (op == RL_AVG)
        acc /= (float)n;
    return dt == RL_BF16 ? rl_round_bf16(acc) : acc;
}

static rl_tensor *filled(rl_ctx *ctx, rl_dtype dt, int64_t n, int q)
{
    rl_tensor *t = rl_tensor_new_1d(ctx, "buf", dt, RL_MEM_COMM, n);
    for (int64_t i = 0; i < n; i++)
        rl_tensor_set(t, i, pat(q, i));
    return t;
}

typedef struct {
    int wrong[8];
    int calls[8];
} coll_result;

#define EXPECT(cond) do { if (!(cond)) res->wrong[r]++; } while (0)

/* Runs every collective, both dtypes, several counts, in place and out of place. */
static int all_collectives_rank(rl_ctx *ctx, void *arg)
{
    coll_result *res = arg;
    rl_comm *w = rl_comm_world(ctx);
    int n = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t counts[] = { 0, 1, n > 1 ? n - 1 : 1, 7, 1000, 1024 * n + 3 };
    for (int dt = 0; dt < 2; dt++) {
        rl_dtype d = (rl_dtype)dt;
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            int64_t c = counts[ci];
            /* all_reduce, every op, out of place and in place */
            for (int op = RL_SUM; op <= RL_MIN; op++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    rl_tensor *s = filled(ctx, d, c, r), *o = inplace ? s : rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, c);
                    EXPECT(rl_all_reduce(w, s, o, (rl_redop)op, 0) != NULL);
                    for (int64_t i = 0; i < c; i++)
                        EXPECT(rl_tensor_get(o, i) == ref_reduce((rl_redop)op, n, i, d));
                    if (!inplace)
                        rl_tensor_free(o);
                    rl_tensor_free(s);
                    res->calls[r]++;
                }
            /* reduce_scatter: send n*c, rank r gets chunk r */
            rl_tensor *s = filled(ctx, d, c * n, r), *o = rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, c);
            EXPECT(rl_reduce_scatter(w, s, o, RL_SUM, 0) != NULL);
            for (int64_t i = 0; i < c; i++)
                EXPECT(rl_tensor_get(o, i) == ref_reduce(RL_SUM, n, (int64_t)r * c + i, d));
            rl_tensor_free(s);
            rl_tensor_free(o);
            /* all_gather */
            s = filled(ctx, d, c, r);
            o = rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, c * n);
            EXPECT(rl_all_gather(w, s, o, 0) != NULL);
            for (int64_t i = 0; i < c * n; i++)
                EXPECT(rl_tensor_get(o, i) == pat((int)(i / (c ? c : 1)), i % (c ? c : 1)));
            rl_tensor_free(s);
            rl_tensor_free(o);
            /* broadcast and reduce from the last rank */
            int root = n - 1;
            s = filled(ctx, d, c, r);
            o = rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, c);
            EXPECT(rl_broadcast(w, s, o, root, 0) != NULL);
            for (int64_t i = 0; i < c; i++)
                EXPECT(rl_tensor_get(o, i) == pat(root, i));
            rl_tensor_zero(o);
            EXPECT(rl_reduce(w, s, o, RL_MAX, root, 0) != NULL);
            for (int64_t i = 0; i < c; i++)
                EXPECT(rl_tensor_get(o, i) == (r == root ? ref_reduce(RL_MAX, n, i, d) : 0.0f));
            rl_tensor_free(s);
            rl_tensor_free(o);
            /* all_to_all: chunk q of my send goes to rank q */
            s = filled(ctx, d, c * n, r);
            o = rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, c * n);
            EXPECT(rl_all_to_all(w, s, o, 0) != NULL);
            for (int64_t i = 0; i < c * n; i++)
                EXPECT(rl_tensor_get(o, i) == pat((int)(i / (c ? c : 1)), (int64_t)r * c + i % (c ? c : 1)));
            /* all_to_all in place */
            EXPECT(rl_all_to_all(w, s, s, 0) != NULL);
            EXPECT(rl_tensor_equal(s, o));
            rl_tensor_free(s);
            rl_tensor_free(o);
            /* all_to_allv with uneven blocks: rank p sends (p+q+c)%3 elements to q */
            int64_t sc[8], sd[8], rc[8], rd[8], ts = 0, tr = 0;
            for (int q = 0; q < n; q++) {
                sc[q] = (r + q + c) % 3;
                sd[q] = ts;
                ts += sc[q];
                rc[q] = (q + r + c) % 3;
                rd[q] = tr;
                tr += rc[q];
            }
            s = filled(ctx, d, ts, r);
            o = rl_tensor_new_1d(ctx, "o", d, RL_MEM_COMM, tr);
            EXPECT(rl_all_to_allv(w, s, sc, sd, o, rc, rd, 0) != NULL);
            for (int q = 0; q < n; q++) {
                /* q's block for me starts at q's displacement for rank r */
                int64_t qoff = 0;
                for (int p = 0; p < r; p++)
                    qoff += (q + p + c) % 3;
                for (int64_t k = 0; k < rc[q]; k++)
                    EXPECT(rl_tensor_get(o, rd[q] + k) == pat(q, qoff + k));
            }
            rl_tensor_free(s);
            rl_tensor_free(o);
        }
    }
    EXPECT(rl_barrier(w, 0) != NULL);
    return 0;
}

START_TEST(test_collectives_world_1_to_8)
{
    int n = _i;
    coll_result res = { { 0 }, { 0 } };
    rl_opts o = rl_test_opts(n, NULL);
    ck_assert_int_eq(rl_launch(&o, all_collectives_rank, &res, NULL), 0);
    for (int r = 0; r < n; r++) {
        ck_assert_msg(res.wrong[r] == 0, "world %d rank %d: %d wrong results", n, r, res.wrong[r]);
        ck_assert_int_gt(res.calls[r], 0);
    }
}
END_TEST

/* ---------------------------------------------------------------- split communicators */

static int split_rank(rl_ctx *ctx, void *arg)
{
    coll_result *res = arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_comm_rank(w), n = rl_comm_size(w);
    /* even and odd ranks, ordered by descending world rank */
    rl_comm *half = rl_comm_split(w, r % 2, -r);
    EXPECT(half != NULL);
    EXPECT(rl_comm_size(half) == n / 2);
    EXPECT(rl_comm_rank(half) == (n / 2 - 1) - r / 2);
    EXPECT(rl_comm_global_rank(half, rl_comm_rank(half)) == r);
    rl_tensor *t = rl_tensor_new_1d(ctx, "t", RL_F32, RL_MEM_COMM, 5);
    rl_tensor_fill(t, (float)r);
    EXPECT(rl_all_reduce(half, t, t, RL_SUM, 0) != NULL);
    float want = 0;
    for (int q = r % 2; q < n; q += 2)
        want += (float)q;
    EXPECT(rl_tensor_get(t, 4) == want);
    /* nested split: pairs inside each half */
    rl_comm *pair = rl_comm_split(half, rl_comm_rank(half) / 2, 0);
    EXPECT(pair && rl_comm_size(pair) == 2);
    rl_tensor_fill(t, 1.0f);
    EXPECT(rl_all_reduce(pair, t, t, RL_SUM, 0) != NULL);
    EXPECT(rl_tensor_get(t, 0) == 2.0f);
    /* RL_COLOR_NONE: not in any new communicator */
    rl_comm *none = rl_comm_split(w, r == 0 ? RL_COLOR_NONE : 0, 0);
    EXPECT(r == 0 ? none == NULL : (none != NULL && rl_comm_size(none) == n - 1));
    /* the world still works after the splits */
    rl_tensor_fill(t, 1.0f);
    EXPECT(rl_all_reduce(w, t, t, RL_SUM, 0) != NULL);
    EXPECT(rl_tensor_get(t, 2) == (float)n);
    rl_tensor_free(t);
    return 0;
}

START_TEST(test_split)
{
    coll_result res = { { 0 }, { 0 } };
    rl_opts o = rl_test_opts(8, NULL);
    ck_assert_int_eq(rl_launch(&o, split_rank, &res, NULL), 0);
    for (int r = 0; r < 8; r++)
        ck_assert_msg(res.wrong[r] == 0, "rank %d: %d wrong", r, res.wrong[r]);
}
END_TEST

/* ---------------------------------------------------------------- async ordering */

static int async_rank(rl_ctx *ctx, void *arg)
{
    coll_result *res = arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_comm_rank(w), n = rl_comm_size(w);
    enum { K = 6 };
    rl_tensor *t[K];
    rl_work *h[K];
    for (int k = 0; k < K; k++) {
        t[k] = rl_tensor_new_1d(ctx, "t", RL_F32, RL_MEM_COMM, 1000 * (k + 1));
        rl_tensor_fill(t[k], (float)(r + k));
        rl_set_tag(ctx, RL_TAG_BUCKET, k);
        h[k] = rl_all_reduce(w, t[k], t[k], RL_SUM, RL_ASYNC);
        EXPECT(h[k] != NULL);
    }
    rl_set_tag(ctx, RL_TAG_BUCKET, -1);
    /* issued counts the calls at once, even while they are in flight */
    EXPECT(rl_comm_get_counters(w).issued[RL_COLL_ALL_REDUCE] == K);
    double before = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    for (int k = K - 1; k >= 0; k--) { /* waited in reverse order */
        EXPECT(rl_wait(h[k]) == 0);
        float want = 0;
        for (int q = 0; q < n; q++)
            want += (float)(q + k);
        EXPECT(rl_tensor_get(t[k], 999) == want);
    }
    /* waiting moved the compute clock to the end of the last all-reduce */
    EXPECT(rl_stream_time(ctx, RL_STREAM_COMPUTE) >= before);
    EXPECT(rl_stream_time(ctx, RL_STREAM_COMPUTE) == rl_stream_time(ctx, RL_STREAM_COMM));
    /* rl_test: a completed handle tests 1 */
    rl_work *x = rl_all_reduce(w, t[0], t[0], RL_SUM, RL_ASYNC);
    while (!rl_test(x))
        usleep(100);
    EXPECT(rl_wait(x) == 0);
    /* rl_comm_drain: every call issued has completed afterwards, waited on or not */
    for (int k = 0; k < K; k++)
        h[k] = rl_all_reduce(w, t[k], t[k], RL_SUM, RL_ASYNC);
    double clock = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    EXPECT(rl_comm_drain(ctx, 10.0) == 0);
    for (int k = 0; k < K; k++)
        EXPECT(rl_test(h[k]));
    EXPECT(rl_stream_time(ctx, RL_STREAM_COMPUTE) == clock); /* the clocks did not move */
    for (int k = 0; k < K; k++)
        EXPECT(rl_wait(h[k]) == 0);
    for (int k = 0; k < K; k++)
        rl_tensor_free(t[k]);
    return 0;
}

START_TEST(test_async_ordering)
{
    coll_result res = { { 0 }, { 0 } };
    rl_opts o = rl_test_opts(4, NULL);
    rl_trace *tr = NULL;
    ck_assert_int_eq(rl_launch(&o, async_rank, &res, &tr), 0);
    for (int r = 0; r < 4; r++)
        ck_assert_msg(res.wrong[r] == 0, "rank %d: %d wrong", r, res.wrong[r]);
    /* on every rank the comm stream ran the all-reduces in issue order, back to back */
    for (int r = 0; r < 4; r++) {
        int last_bucket = -1;
        double last_end = 0;
        for (size_t i = 0; i < tr->n; i++) {
            const rl_trace_event *e = &tr->ev[i];
            if (e->rank != r || e->cat != RL_CAT_COMM || e->tags[RL_TAG_BUCKET] < 0)
                continue;
            ck_assert_int_eq(e->tags[RL_TAG_BUCKET], last_bucket + 1);
            ck_assert(e->vstart >= last_end - 1e-15);
            last_bucket = e->tags[RL_TAG_BUCKET];
            last_end = e->vend;
        }
        ck_assert_int_eq(last_bucket, 5);
    }
    rl_trace_free(tr);
}
END_TEST

/* ---------------------------------------------------------------- point to point */

static int ring_rank(rl_ctx *ctx, void *arg)
{
    coll_result *res = arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_comm_rank(w), n = rl_comm_size(w);
    rl_tensor *s = filled(ctx, RL_BF16, 33, r), *d = rl_tensor_new_1d(ctx, "d", RL_BF16, RL_MEM_COMM, 33);
    for (int step = 0; step < 3; step++) {
        EXPECT(rl_group_start(ctx) == 0);
        EXPECT(rl_send(w, s, (r + 1) % n, 0) != NULL);
        EXPECT(rl_recv(w, d, (r + n - 1) % n, 0) != NULL);
        EXPECT(rl_group_end(ctx) == 0);
        for (int64_t i = 0; i < 33; i++)
            EXPECT(rl_tensor_get(d, i) == pat((r + n - 1) % n, i));
    }
    /* plain (ungrouped) send/recv between two ranks */
    if (r == 0)
        EXPECT(rl_send(w, s, 1, 0) != NULL);
    else if (r == 1) {
        EXPECT(rl_recv(w, d, 0, 0) != NULL);
        EXPECT(rl_tensor_get(d, 5) == pat(0, 5));
    }
    const rl_comm_counters c = rl_comm_get_counters(w);
    EXPECT(c.calls[RL_COLL_SEND] == 3 + (r == 0));
    EXPECT(c.bytes_sent == (3 + (r == 0)) * 33 * 2);
    EXPECT(c.bytes_recv == (3 + (r == 1)) * 33 * 2);
    rl_comm_counters forged = rl_comm_get_counters(w); /* a copy: writing it changes nothing */
    forged.bytes_sent = 0, forged.calls[RL_COLL_SEND] = 1000;
    EXPECT(forged.calls[RL_COLL_SEND] == 1000 && rl_comm_get_counters(w).bytes_sent == c.bytes_sent &&
           rl_comm_get_counters(w).calls[RL_COLL_SEND] == c.calls[RL_COLL_SEND]);
    EXPECT(rl_comm_get_counters(NULL).bytes_sent == 0);
    /* bad peers are refused with a message */
    EXPECT(rl_send(w, s, r, 0) == NULL);
    EXPECT(strstr(rl_last_error(ctx), "peer") != NULL);
    /* all_to_allv: rank r sends q+1 elements to rank q (the trace records the bytes per peer) */
    int64_t sc[8], sd[8], rc[8], rd[8], off = 0, roff = 0;
    for (int q = 0; q < n; q++) {
        sc[q] = q + 1, sd[q] = off, off += sc[q];
        rc[q] = r + 1, rd[q] = roff, roff += rc[q];
    }
    rl_tensor *a2s = filled(ctx, RL_F32, off, r), *a2r = rl_tensor_new_1d(ctx, "a2r", RL_F32, RL_MEM_COMM, roff);
    EXPECT(rl_all_to_allv(w, a2s, sc, sd, a2r, rc, rd, 0) != NULL);
    rl_tensor_free(a2s);
    rl_tensor_free(a2r);
    rl_tensor_free(s);
    rl_tensor_free(d);
    return 0;
}

START_TEST(test_p2p_ring)
{
    coll_result res = { { 0 }, { 0 } };
    rl_opts o = rl_test_opts(5, NULL);
    rl_trace *tr = NULL;
    ck_assert_int_eq(rl_launch(&o, ring_rank, &res, &tr), 0);
    for (int r = 0; r < 5; r++)
        ck_assert_msg(res.wrong[r] == 0, "rank %d: %d wrong", r, res.wrong[r]);
    /* the trace names every send's and receive's peer, and what an all_to_allv sent to each */
    int sends = 0, recvs = 0, a2a = 0;
    for (size_t i = 0; i < tr->n; i++) {
        const rl_trace_event *e = &tr->ev[i];
        if (!strcmp(e->name, "send") || !strcmp(e->name, "recv")) {
            int is_send = e->name[0] == 's', ring = is_send ? (e->rank + 1) % 5 : (e->rank + 4) % 5;
            int other = is_send ? (e->rank == 0 && e->peer == 1) : (e->rank == 1 && e->peer == 0);
            ck_assert_msg(e->peer == ring || other, "rank %d: %s with peer %d", e->rank, e->name, e->peer);
            sends += is_send, recvs += !is_send;
        } else if (!strcmp(e->name, "all_to_allv")) {
            ck_assert_int_eq(e->npeers, 5);
            for (int q = 0; q < 5; q++)
                ck_assert_int_eq((int)e->peer_bytes[q], 4 * (q + 1));
            a2a++;
        } else {
            ck_assert(e->peer == -1 && e->npeers == 0);
        }
    }
    ck_assert_int_eq(sends, 5 * 3 + 1);
    ck_assert_int_eq(recvs, 5 * 3 + 1);
    ck_assert_int_eq(a2a, 5);
    rl_trace_free(tr);
}
END_TEST

/* ---------------------------------------------------------------- counters and time */

typedef struct {
    int kind;
    int64_t bytes;
    double vtime[16];
    int64_t sent[16], recv[16], calls[16];
} timing_arg;

static int timing_rank(rl_ctx *ctx, void *arg)
{
    timing_arg *a = arg;
    rl_comm *w = rl_comm_world(ctx);
    int n = rl_comm_size(w), r = rl_comm_rank(w);
    int64_t total = a->bytes / 4;
    rl_tensor *big = rl_tensor_new_1d(ctx, "big", RL_F32, RL_MEM_COMM, total);
    rl_tensor *small = rl_tensor_new_1d(ctx, "small", RL_F32, RL_MEM_COMM, total / n);
    double t0 = rl_stream_time(ctx, RL_STREAM_COMPUTE);
    if (a->kind == RL_COLL_ALL_REDUCE)
        rl_all_reduce(w, big, big, RL_SUM, 0);
    else if (a->kind == RL_COLL_REDUCE_SCATTER)
        rl_reduce_scatter(w, big, small, RL_SUM, 0);
    else
        rl_all_gather(w, small, big, 0);
    a->vtime[r] = rl_stream_time(ctx, RL_STREAM_COMPUTE) - t0;
    const rl_comm_counters c = rl_comm_get_counters(w);
    a->sent[r] = c.bytes_sent;
    a->recv[r] = c.bytes_recv;
    a->calls[r] = c.calls[a->kind];
    (void)n;
    return 0;
}

START_TEST(test_virtual_time_matches_alpha_beta)
{
    const char *profiles[] = { "h100-nvlink", "a100-pcie", "h100-2node-ib" };
    int kinds[] = { RL_COLL_ALL_REDUCE, RL_COLL_REDUCE_SCATTER, RL_COLL_ALL_GATHER };
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 3; k++)
            for (int n = 2; n <= (p == 2 ? 16 : 8); n *= 2) {
                const rl_hw *hw = rl_hw_find(profiles[p]);
                timing_arg a = { .kind = kinds[k], .bytes = (int64_t)n * 4 * 40000 };
                rl_opts o = rl_test_opts(n, profiles[p]);
                ck_assert_int_eq(rl_launch(&o, timing_rank, &a, NULL), 0);
                /* the formula, written out here independently of cost.c */
                const rl_link *l = n > hw->gpus_per_node ? &hw->inter : &hw->intra;
                double S = (double)a.bytes, want;
                if (kinds[k] == RL_COLL_ALL_REDUCE)
                    want = 2.0 * (n - 1) * l->alpha + 2.0 * (n - 1) / n * S / l->bw;
                else
                    want = (n - 1) * l->alpha + (double)(n - 1) / n * S / l->bw;
                double ring_bytes = (kinds[k] == RL_COLL_ALL_REDUCE ? 2.0 : 1.0) * (n - 1) / n * S;
                for (int r = 0; r < n; r++) {
                    ck_assert_msg(fabs(a.vtime[r] - want) <= 1e-9 * want, "%s %s n=%d: %.12g vs %.12g",
                                  profiles[p], rl_coll_name(kinds[k]), n, a.vtime[r], want);
                    ck_assert_int_eq(a.sent[r], (int64_t)llround(ring_bytes));
                    ck_assert_int_eq(a.recv[r], (int64_t)llround(ring_bytes));
                    ck_assert_int_eq(a.calls[r], 1);
                }
            }
}
END_TEST

/* ---------------------------------------------------------------- trace determinism */

static int traced_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    rl_tensor *t = rl_tensor_new_1d(ctx, "g", RL_F32, RL_MEM_GRAD, 4096);
    for (int step = 0; step < 3; step++) {
        rl_step_begin(ctx, step);
        rl_work *h[3];
        for (int b = 0; b < 3; b++) {
            rl_compute_record(ctx, "matmul", RL_F32, 1e9 * (rl_rank(ctx) + 1), 1e6, "x[b=4] -> y[b=4]", 0);
            rl_set_tag(ctx, RL_TAG_BUCKET, b);
            h[b] = rl_all_reduce(w, t, t, RL_AVG, RL_ASYNC);
        }
        rl_set_tag(ctx, RL_TAG_BUCKET, -1);
        for (int b = 0; b < 3; b++)
            rl_wait(h[b]);
        rl_step_end(ctx);
    }
    rl_tensor_free(t);
    return 0;
}

START_TEST(test_trace_deterministic)
{
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "/tmp/rl_trace_a_%d.json", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/rl_trace_b_%d.json", (int)getpid());
    rl_opts o = rl_test_opts(4, "h100-2node-ib");
    o.trace_path = p1;
    ck_assert_int_eq(rl_launch(&o, traced_rank, NULL, NULL), 0);
    o.trace_path = p2;
    o.faults[0].kind = RL_FAULT_STRAGGLER; /* also exercises the straggler fault */
    o.faults[0].rank = 1;
    o.faults[0].ms = 2;
    o.nfaults = 1;
    ck_assert_int_eq(rl_launch(&o, traced_rank, NULL, NULL), 0);
    o.trace_path = p1; /* and once more without the fault, to compare */
    o.nfaults = 0;
    char p3[64];
    snprintf(p3, sizeof p3, "/tmp/rl_trace_c_%d.json", (int)getpid());
    o.trace_path = p3;
    ck_assert_int_eq(rl_launch(&o, traced_rank, NULL, NULL), 0);
    long l1, l2, l3;
    char *a = rl_test_slurp(p1, &l1), *b = rl_test_slurp(p2, &l2), *c = rl_test_slurp(p3, &l3);
    ck_assert(a && b && c && l1 > 100);
    ck_assert_msg(l1 == l3 && memcmp(a, c, (size_t)l1) == 0, "two identical runs gave different traces");
    ck_assert_msg(l1 != l2 || memcmp(a, b, (size_t)l1) != 0, "the straggler fault did not change the trace");
    /* the trace reads back with its events */
    char err[256];
    rl_trace *t = rl_trace_read_json(p1, err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    ck_assert_int_eq(t->nranks, 4);
    int straggle = 0;
    rl_trace *t2 = rl_trace_read_json(p2, err, sizeof err);
    for (size_t i = 0; i < t2->n; i++)
        if (strstr(t2->ev[i].name, "straggler"))
            straggle++;
    ck_assert_int_eq(straggle, 3);
    rl_trace_free(t);
    rl_trace_free(t2);
    free(a);
    free(b);
    free(c);
    unlink(p1);
    unlink(p2);
    unlink(p3);
}
END_TEST

/* ---------------------------------------------------------------- failures */

/* Runs fn with stderr captured into buf; returns rl_launch's result. */
static int launch_capturing(rl_opts *o, rl_rank_fn fn, char *buf, size_t size, double *seconds)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/rl_stderr_%d.txt", (int)getpid());
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w+");
    dup2(fileno(f), 2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = rl_launch(o, fn, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t k = fread(buf, 1, size - 1, f);
    buf[k] = 0;
    fclose(f);
    unlink(path);
    if (seconds)
        *seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return rc;
}

static int mismatch_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 1024);
    rl_tensor *b = rl_tensor_new_1d(ctx, "b", RL_F32, RL_MEM_COMM, 2048);
    rl_all_reduce(w, a, a, RL_SUM, 0); /* seq 0 matches */
    if (rl_rank(ctx) == 3)
        rl_all_gather(w, a, rl_tensor_new_1d(ctx, "c", RL_F32, RL_MEM_COMM, 4096), 0);
    else
        rl_all_reduce(w, b, b, RL_SUM, 0);
    return 0;
}

START_TEST(test_mismatch_message)
{
    char out[8192];
    rl_opts o = rl_test_opts(4, NULL);
    int rc = launch_capturing(&o, mismatch_rank, out, sizeof out, NULL);
    ck_assert_int_eq(rc, RL_ERR_MISMATCH);
    /* names both ranks, both calls and the seq */
    ck_assert_msg(strstr(out, "seq 1") && strstr(out, "all_gather(count=1024") &&
                      strstr(out, "all_reduce(count=2048") && strstr(out, "rank 3"),
                  "unexpected message: %s", out);
}
END_TEST

static int hang_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 256);
    for (int i = 0; i < 10; i++)
        if (!rl_all_reduce(w, a, a, RL_SUM, 0))
            return -1;
    return 0;
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(test_watchdog_names_rank_and_seq)
{
    char out[16384];
    rl_opts o = rl_test_opts(4, NULL);
    o.timeout_s = 1.0;
    char err[128];
    ck_assert_int_eq(rl_fault_parse("hang:rank=2:seq=3", &o.faults[0], err, sizeof err), 0);
    o.nfaults = 1;
    char trace[64], flight[80];
    snprintf(trace, sizeof trace, "/tmp/rl_hang_%d.json", (int)getpid());
    snprintf(flight, sizeof flight, "%s.flight.json", trace);
    o.trace_path = trace;
    int threads = count_threads();
    double secs;
    int rc = launch_capturing(&o, hang_rank, out, sizeof out, &secs);
    ck_assert_int_eq(rc, RL_ERR_HANG);
    /* with --trace, the flight records are also written as JSON beside the trace */
    long len;
    char *json = rl_test_slurp(flight, &len);
    ck_assert_msg(json && strstr(json, "\"verdict\"") && strstr(json, "never called it"), "no flight JSON");
    free(json);
    unlink(flight);
    unlink(trace);
    ck_assert_msg(secs < o.timeout_s + 2.0, "watchdog took %.2f s", secs);
    ck_assert_msg(strstr(out, "rank 2 (last completed seq 2) never called it") && strstr(out, "seq 3"),
                  "unexpected report: %s", out);
    ck_assert_int_eq(count_threads(), threads); /* every rank and comm thread was joined */
    /* every rank hung (here the only one): nobody waits in a collective, the watchdog still fires */
    for (int n = 1; n <= 2; n++) {
        o = rl_test_opts(n, NULL);
        o.timeout_s = 0.5;
        for (int r = 0; r < n; r++)
            ck_assert_int_eq(rl_fault_parse(r ? "hang:rank=1:seq=3" : "hang:rank=0:seq=3", &o.faults[r], err,
                                            sizeof err), 0);
        o.nfaults = n;
        rc = launch_capturing(&o, hang_rank, out, sizeof out, &secs);
        ck_assert_int_eq(rc, RL_ERR_HANG);
        ck_assert_msg(secs < o.timeout_s + 2.0, "watchdog took %.2f s", secs);
        ck_assert_msg(strstr(out, "rank 0 never entered collective seq 3 on world (--fault hang), and no other rank "
                                  "was left in a collective"), "%d ranks, all hung: %s", n, out);
    }
}
END_TEST

/* Rank 0 comes late to each of 10 all-reduces, so the others wait inside them. */
static int late_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 256);
    for (int i = 0; i < 10; i++) {
        if (rl_rank(ctx) == 0) {
            struct timespec ts = { 0, 60000000L };
            nanosleep(&ts, NULL);
        }
        if (!rl_all_reduce(w, a, a, RL_SUM, 0))
            return -1;
    }
    return 0;
}

/* A paused run (rl_run_pause) waits for three times the watchdog's limit with ranks inside a
 * collective: no hang is reported, and once resumed the run finishes normally. */
START_TEST(test_pause_stops_the_watchdog)
{
    rl_opts o = rl_test_opts(3, NULL);
    o.timeout_s = 0.3;
    rl_run *run = rl_launch_async(&o, late_rank, NULL);
    ck_assert_ptr_nonnull(run);
    struct timespec ts = { 0, 150000000L };
    nanosleep(&ts, NULL);
    rl_run_pause(run, 1);
    struct timespec pause = { 1, 0 };
    nanosleep(&pause, NULL);
    ck_assert_msg(!rl_run_done(run), "the run went on (or failed) while paused");
    rl_run_pause(run, 0);
    ck_assert_int_eq(rl_run_finish(run, NULL), 0);
}
END_TEST

START_TEST(test_mismatch_fault_and_clean_exit)
{
    char out[8192];
    rl_opts o = rl_test_opts(3, NULL);
    char err[128];
    ck_assert_int_eq(rl_fault_parse("mismatch:rank=1:seq=4", &o.faults[0], err, sizeof err), 0);
    o.nfaults = 1;
    int threads = count_threads();
    ck_assert_int_eq(launch_capturing(&o, hang_rank, out, sizeof out, NULL), RL_ERR_MISMATCH);
    ck_assert_msg(strstr(out, "rank 1 called all_reduce(count=257") && strstr(out, "seq 4"), "%s", out);
    ck_assert_int_eq(count_threads(), threads);
}
END_TEST

/* A mismatch names the rank whose call differs from most ranks' calls, whichever rank
 * arrived first: the injected rank, also when it is rank 0, on every run. */
START_TEST(test_mismatch_names_the_odd_rank)
{
    for (int run = 0; run < 6; run++) {
        char out[8192];
        rl_opts o = rl_test_opts(4, NULL);
        char err[128], spec[64];
        int odd = run % 2 ? 0 : 3;
        snprintf(spec, sizeof spec, "mismatch:rank=%d:seq=2", odd);
        ck_assert_int_eq(rl_fault_parse(spec, &o.faults[0], err, sizeof err), 0);
        o.nfaults = 1;
        ck_assert_int_eq(launch_capturing(&o, hang_rank, out, sizeof out, NULL), RL_ERR_MISMATCH);
        char want[160];
        snprintf(want, sizeof want, "rank %d called all_reduce(count=257, f32, sum) at seq 2 on world but rank %d called "
                 "all_reduce(count=256", odd, odd ? 0 : 1);
        ck_assert_msg(strstr(out, want), "run %d: expected '%s' in:\n%s", run, want, out);
    }
}
END_TEST

static int p2p_deadlock_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_rank(ctx), n = rl_world_size(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 8);
    rl_send(w, a, (r + 1) % n, 0); /* every rank sends first: nobody receives */
    rl_recv(w, a, (r + n - 1) % n, 0);
    return 0;
}

START_TEST(test_ungrouped_ring_deadlock_is_reported)
{
    char out[16384];
    rl_opts o = rl_test_opts(3, NULL);
    o.timeout_s = 0.5;
    ck_assert_int_eq(launch_capturing(&o, p2p_deadlock_rank, out, sizeof out, NULL), RL_ERR_HANG);
    ck_assert_msg(strstr(out, "rl_group_start"), "%s", out);
}
END_TEST

/* Both ranks group a send alone and receive only after the group: grouped, and still stuck. */
static int grouped_deadlock_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_rank(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 8);
    rl_group_start(ctx);
    rl_send(w, a, 1 - r, 0);
    rl_group_end(ctx);
    rl_recv(w, a, 1 - r, 0);
    return 0;
}

START_TEST(test_grouped_deadlock_names_the_peer)
{
    char out[16384];
    rl_opts o = rl_test_opts(2, NULL);
    o.timeout_s = 0.5;
    ck_assert_int_eq(launch_capturing(&o, grouped_deadlock_rank, out, sizeof out, NULL), RL_ERR_HANG);
    /* the calls are grouped already: the verdict says where the peer is, not "wrap in a group" */
    ck_assert_msg(strstr(out, "inside a group") && strstr(out, "rank 1 is itself blocked in send to rank 0") &&
                  !strstr(out, "wrap each step"), "%s", out);
}
END_TEST

START_TEST(test_bad_arguments)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_comm *w = rl_comm_world(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 10);
    rl_tensor *b = rl_tensor_new_1d(ctx, "b", RL_BF16, RL_MEM_COMM, 10);
    rl_tensor *c = rl_tensor_new_1d(ctx, "c", RL_F32, RL_MEM_COMM, 11);
    ck_assert_ptr_null(rl_all_reduce(w, a, b, RL_SUM, 0));
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "bf16"));
    ck_assert_ptr_null(rl_all_reduce(w, a, c, RL_SUM, 0));
    ck_assert_ptr_null(rl_all_reduce(w, a, a, (rl_redop)9, 0));
    ck_assert_ptr_null(rl_all_reduce(NULL, a, a, RL_SUM, 0));
    ck_assert_ptr_null(rl_broadcast(w, a, a, 3, 0));
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "root 3"));
    ck_assert_ptr_null(rl_all_gather(w, a, c, 0));
    ck_assert_int_eq(rl_wait(NULL), RL_ERR_ARG);
    ck_assert_int_eq(rl_group_end(ctx), RL_ERR_ARG);
    /* world of one: collectives are copies */
    rl_tensor_fill(a, 2.0f);
    ck_assert_ptr_nonnull(rl_all_reduce(w, a, c == a ? a : a, RL_SUM, 0));
    ck_assert(rl_tensor_get(a, 3) == 2.0f);
    rl_ctx_free_standalone(ctx);
}
END_TEST

Suite *comm_suite(void)
{
    Suite *s = suite_create("comm");
    TCase *tc = tcase_create("collectives");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_collectives_world_1_to_8, 1, 9);
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_async_ordering);
    tcase_add_test(tc, test_p2p_ring);
    tcase_add_test(tc, test_virtual_time_matches_alpha_beta);
    tcase_add_test(tc, test_trace_deterministic);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    TCase *tf = tcase_create("failures");
    tcase_set_timeout(tf, 30);
    tcase_add_test(tf, test_mismatch_message);
    tcase_add_test(tf, test_watchdog_names_rank_and_seq);
    tcase_add_test(tf, test_pause_stops_the_watchdog);
    tcase_add_test(tf, test_mismatch_fault_and_clean_exit);
    tcase_add_test(tf, test_mismatch_names_the_odd_rank);
    tcase_add_test(tf, test_ungrouped_ring_deadlock_is_reported);
    tcase_add_test(tf, test_grouped_deadlock_names_the_peer);
    suite_add_tcase(s, tf);
    return s;
}
