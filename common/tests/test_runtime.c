/* test_runtime.c — tensors (bf16 rounding, views, memory account), options and faults,
 * the cost model, trace export/import, and the `ringlab bench` command line. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ringlab.h"
#include "ops.h"
#include "testutil.h"

START_TEST(test_bf16_round_to_nearest_even)
{
    /* 1 + 2^-8 lies halfway between bf16 1.0 and 1.0078125: ties go to even (1.0) */
    ck_assert(rl_round_bf16(1.0f + 0x1p-8f) == 1.0f);
    /* 1 + 3·2^-8 lies halfway between 1.0078125 and 1.015625: even is 1.015625 */
    ck_assert(rl_round_bf16(1.0f + 3 * 0x1p-8f) == 1.015625f);
    ck_assert(rl_round_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0078125f); /* above half: up */
    ck_assert(rl_round_bf16(-2.5f) == -2.5f);
    ck_assert(isinf(rl_round_bf16(INFINITY)));
    ck_assert(isnan(rl_round_bf16(NAN)));
    ck_assert(rl_bf16_to_f32(rl_f32_to_bf16(3.0e38f)) > 2.9e38f);
}
END_TEST

START_TEST(test_tensor_views_and_memory_account)
{
    rl_ctx *ctx = rl_ctx_new_standalone(NULL, 1);
    rl_mem_account *m = rl_ctx_mem(ctx);
    rl_tensor *p = rl_tensor_new(ctx, "w", RL_BF16, RL_MEM_PARAM, 2, (int64_t[]){ 4, 8 }, "h,4h");
    ck_assert_int_eq(m->current[RL_MEM_PARAM], 64);
    rl_tensor *g = rl_tensor_new_1d(ctx, "bucket", RL_F32, RL_MEM_GRAD, 100);
    ck_assert_int_eq(m->current_total, 464);
    /* a view shares storage and is not charged */
    rl_tensor *v = rl_tensor_view(g, "gw", 10, 2, (int64_t[]){ 4, 8 }, "h,4h");
    ck_assert_int_eq(m->current_total, 464);
    rl_tensor_set(v, 0, 7.0f);
    ck_assert(rl_tensor_get(g, 10) == 7.0f);
    char buf[64];
    ck_assert_str_eq(rl_tensor_describe(v, buf, sizeof buf), "gw[h=4,4h=8]");
    /* a view that does not fit is refused with a message */
    ck_assert_ptr_null(rl_tensor_slice(g, 95, 10));
    ck_assert_ptr_nonnull(strstr(rl_last_error(ctx), "does not fit"));
    /* freeing the base keeps the storage alive for the view */
    rl_tensor_free(g);
    ck_assert_int_eq(m->current[RL_MEM_GRAD], 400);
    rl_tensor_free(v);
    ck_assert_int_eq(m->current[RL_MEM_GRAD], 0);
    ck_assert_int_eq(m->peak[RL_MEM_GRAD], 400);
    ck_assert_int_eq(m->peak_total, 464);
    /* a host staging tensor: host memory; on sim charged like any tensor, and released on free */
    rl_tensor *h = rl_tensor_new_host(ctx, "staging", RL_F32, 10);
    ck_assert_ptr_nonnull(rl_tensor_host_data(h));
    ck_assert_int_eq(m->current[RL_MEM_OTHER], 40);
    rl_tensor_free(h);
    ck_assert_int_eq(m->current[RL_MEM_OTHER], 0);
    /* bf16 storage rounds; copy converts */
    rl_tensor *f = rl_tensor_new_1d(ctx, "f", RL_F32, RL_MEM_OTHER, 32);
    rl_tensor_fill(f, 1.0f + 0x1p-8f);
    rl_tensor *pb = rl_tensor_view(p, "pv", 0, 1, (int64_t[]){ 32 }, NULL);
    ck_assert_int_eq(rl_tensor_copy(pb, f), 0);
    ck_assert(rl_tensor_get(p, 31) == 1.0f);
    ck_assert_int_ne(rl_tensor_copy(g == NULL ? f : f, rl_tensor_slice(f, 0, 3)), 0);
    ck_assert_ptr_null(rl_tensor_new(ctx, "bad", RL_F32, RL_MEM_PARAM, 5, (int64_t[]){ 1, 1, 1, 1, 1 }, NULL));
    ck_assert_ptr_null(rl_tensor_new(ctx, "neg", RL_F32, RL_MEM_PARAM, 1, (int64_t[]){ -3 }, NULL));
    rl_ctx_free_standalone(ctx); /* frees what is left, no leak under ASan */
}
END_TEST

START_TEST(test_options)
{
    rl_opts o;
    char err[256];
    char *ok[] = { "prog", "--ranks", "8", "--hw=a100-pcie", "--seed", "7", "--fault", "straggler:rank=1:ms=20",
                   "extra", "--timeout", "2.5", "--trace", "t.json", NULL };
    int argc = 13;
    rl_opts_init(&o);
    ck_assert_int_eq(rl_opts_parse(&o, &argc, ok, err, sizeof err), 0);
    ck_assert_int_eq(o.ranks, 8);
    ck_assert_str_eq(o.hw->name, "a100-pcie");
    ck_assert_int_eq((int)o.seed, 7);
    ck_assert_int_eq(o.nfaults, 1);
    ck_assert(o.faults[0].ms == 20);
    ck_assert(o.timeout_s == 2.5);
    ck_assert_int_eq(argc, 2);
    ck_assert_str_eq(ok[1], "extra");
    char *tui[] = { "prog", "--tui=memory", NULL };
    int tc = 2;
    rl_opts_init(&o);
    ck_assert_int_eq(rl_opts_parse(&o, &tc, tui, err, sizeof err), 0);
    ck_assert(o.tui == 1 && strcmp(o.tui_view, "memory") == 0);
    const char *bad[][3] = { { "--ranks", "0", "1 to 1024" }, { "--ranks", "x", "whole number" },
                             { "--hw", "tpu", "unknown profile" }, { "--backend", "gpu", "sim, cuda or auto" },
                             { "--fault", "hang:rank=1", "seq=S" }, { "--fault", "boom", "unknown kind" },
                             { "--timeout", "-1", "--timeout: '-1' is not a number from 0.1 to 86400" },
                             { "--timeout", "0.001", "from 0.1" }, /* (ranks not yet arrived would be blamed) */
                             { "--tui=graph", "x", "memory or mesh" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = { "prog", (char *)bad[i][0], (char *)bad[i][1], NULL };
        int c = 3;
        rl_opts_init(&o);
        ck_assert_int_eq(rl_opts_parse(&o, &c, argv, err, sizeof err), -1);
        ck_assert_msg(strstr(err, bad[i][2]), "%s %s: '%s'", bad[i][0], bad[i][1], err);
    }
}
END_TEST

/* Rank 1 runs out of memory while the others wait for it in an all-reduce. */
static int oom_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    if (rl_rank(ctx) == 1)
        return rl_error(ctx, RL_ERR_NOMEM, "out of memory: needed 4096 GiB for the test's buffer");
    rl_tensor *x = rl_tensor_new_1d(ctx, "x", RL_F32, RL_MEM_OTHER, 4);
    rl_all_reduce(rl_comm_world(ctx), x, x, RL_SUM, 0);
    rl_tensor_free(x);
    return 0;
}

/* A rank that runs out of memory stops the run at once, naming itself — the others are not
 * left waiting for it until the watchdog (20 s here) reports a hang. */
START_TEST(test_out_of_memory_stops_the_run)
{
    rl_opts o = rl_test_opts(3, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = rl_launch(&o, oom_rank, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(rc == RL_ERR_NOMEM, "the run ended with %d (%s), expected out of memory", rc, rl_status_name(rc));
    ck_assert_msg(s < 10, "the run took %.1f s: the other ranks waited for the watchdog", s);
}
END_TEST

START_TEST(test_cost_model)
{
    int n;
    const rl_hw *p = rl_hw_profiles(&n);
    ck_assert_int_eq(n, 3);
    for (int i = 0; i < n; i++)
        ck_assert(strlen(p[i].source) > 20);
    const rl_hw *ib = rl_hw_find("h100-2node-ib");
    int in_node[] = { 0, 3, 7 }, across[] = { 7, 8 };
    ck_assert_ptr_eq(rl_hw_group_link(ib, in_node, 3), &ib->intra);
    ck_assert_ptr_eq(rl_hw_group_link(ib, across, 2), &ib->inter);
    /* tree vs ring latency at 1024 GPUs: 2 log2 n = 20 steps vs 2(n-1) = 2046 */
    ck_assert(fabs(rl_ab_tree_all_reduce(1024, 0, 1, 1) - 20) < 1e-12);
    ck_assert(fabs(rl_ab_ring_all_reduce(1024, 0, 1, 1) - 2046) < 1e-12);
    ck_assert(fabs(rl_busbw_factor(RL_COLL_ALL_REDUCE, 8) - 1.75) < 1e-15);
    ck_assert(fabs(rl_busbw_factor(RL_COLL_ALL_GATHER, 4) - 0.75) < 1e-15);
    ck_assert(rl_busbw_factor(RL_COLL_BROADCAST, 4) == 1.0);
    /* roofline: a large GEMM is compute bound, a copy memory bound, a tiny op at the floor */
    const rl_hw *h = rl_hw_default();
    ck_assert(fabs(rl_op_time(h, RL_BF16, 989e12, 0) - 1.0) < 1e-12);
    ck_assert(fabs(rl_op_time(h, RL_F32, 0, 3.35e12) - 1.0) < 1e-12);
    ck_assert(rl_op_time(h, RL_F32, 1, 1) == h->op_min_time);
    ck_assert_int_eq(rl_coll_parse("allreduce"), RL_COLL_ALL_REDUCE);
    ck_assert_int_eq(rl_coll_parse("all_to_allv"), RL_COLL_ALL_TO_ALLV);
    ck_assert_int_eq(rl_coll_parse("nope"), -1);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* Comm hidden behind compute: compute [0,4] and [3,6] merge to [0,6]; comm [5,9] on step 0
 * has 1 of 4 hidden; a comm span of step 1 and another rank's compute are ignored; wall
 * times are used with wall=1. */
/* One step that allocates an activation, uses it and frees it between ops. */
static int act_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_step_begin(ctx, 0);
    rl_tensor *w = rl_tensor_new_1d(ctx, "w", RL_F32, RL_MEM_PARAM, 1024);
    rl_fill(ctx, w, 1);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_ACTIVATION, 4096);
    rl_fill(ctx, a, 2);
    rl_tensor_free(a);
    rl_scale(ctx, w, 0.5f);
    rl_step_end(ctx);
    rl_tensor_free(w);
    return 0;
}

/* Memory over time: a sample after every op that changed the account, so an activation held
 * inside a step shows in the trace (not only the step ends). */
START_TEST(test_memory_sampled_inside_steps)
{
    rl_opts o = rl_test_opts(1, NULL);
    rl_trace *t = NULL;
    ck_assert_int_eq(rl_launch(&o, act_rank, NULL, &t), 0);
    ck_assert_ptr_nonnull(t);
    int act = 0, after = 0;
    for (size_t i = 0; i < t->nmem; i++) {
        act |= t->mem[i].current[RL_MEM_ACTIVATION] == 4096 * 4;
        after |= act && t->mem[i].current[RL_MEM_ACTIVATION] == 0 && t->mem[i].current[RL_MEM_PARAM] == 4096;
    }
    ck_assert_msg(act && after && t->nmem >= 3, "%zu samples: the activation held inside the step (%d) and its free "
                  "before the step's end (%d)", t->nmem, act, after);
    rl_trace_free(t);
}
END_TEST

START_TEST(test_trace_comm_hidden)
{
    rl_trace *t = rl_trace_new(2);
    struct { int rank, stream, cat, step; double a, b; } ev[] = {
        { 0, 0, RL_CAT_COMPUTE, 0, 0, 4 }, { 0, 0, RL_CAT_COMPUTE, 0, 3, 6 }, { 0, 1, RL_CAT_COMM, 0, 5, 9 },
        { 0, 1, RL_CAT_COMM, 1, 10, 12 }, { 1, 0, RL_CAT_COMPUTE, 0, 6, 9 }, { 0, 0, RL_CAT_IDLE, 0, 6, 9 },
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        rl_trace_event e;
        rl_trace_event_init(&e);
        e.rank = ev[i].rank;
        e.stream = ev[i].stream;
        e.cat = (rl_cat)ev[i].cat;
        e.tags[RL_TAG_STEP] = ev[i].step;
        e.vstart = ev[i].a;
        e.vend = ev[i].b;
        e.wstart = 2 * ev[i].a; /* wall: everything twice as long */
        e.wend = 2 * ev[i].b;
        rl_trace_add(t, &e);
    }
    double comm = 0, hidden = 0;
    ck_assert_double_eq_tol(rl_trace_comm_hidden(t, 0, 0, 0, &comm, &hidden), 0.25, 1e-12);
    ck_assert_double_eq_tol(comm, 4, 1e-12);
    ck_assert_double_eq_tol(hidden, 1, 1e-12);
    ck_assert_double_eq_tol(rl_trace_comm_hidden(t, 0, 0, 1, &comm, &hidden), 0.25, 1e-12);
    ck_assert_double_eq_tol(comm, 8, 1e-12);
    ck_assert_double_eq_tol(rl_trace_comm_hidden(t, 0, -1, 0, &comm, NULL), 1.0 / 6, 1e-12);
    ck_assert_double_eq(rl_trace_comm_hidden(t, 1, 0, 0, NULL, NULL), -1);
    rl_trace_free(t);
}
END_TEST

/* A trace with one event of each kind of payload (shapes, per-peer bytes, a peer), a memory
 * sample, a mesh, a headline figure and a peak. */
static rl_trace *sample_trace(void)
{
    rl_trace *t = rl_trace_new(2);
    rl_trace_event e;
    rl_trace_event_init(&e);
    snprintf(e.name, sizeof e.name, "all_reduce");
    e.rank = 1;
    e.stream = 1;
    e.cat = RL_CAT_COMM;
    e.vstart = 1e-6;
    e.vend = 3.5e-6;
    e.bytes = 4096;
    e.tags[RL_TAG_BUCKET] = 2;
    e.seq = 9;
    e.shapes = "g[n=1024]";
    snprintf(e.comm, sizeof e.comm, "world");
    rl_trace_add(t, &e);
    int64_t pb[3] = { 16, 0, 48 };
    snprintf(e.name, sizeof e.name, "all_to_allv");
    e.shapes = NULL;
    e.peer_bytes = pb;
    e.npeers = 3;
    rl_trace_add(t, &e);
    snprintf(e.name, sizeof e.name, "send");
    e.peer_bytes = NULL;
    e.npeers = 0;
    e.peer = 2;
    rl_trace_add(t, &e);
    rl_mem_sample m = { .rank = 0, .vtime = 2e-6, .current = { 10, 20, 30, 40, 50, 60 } };
    rl_trace_add_mem(t, &m);
    rl_trace_set_mesh(t, 2, (const char *[]){ "dp", "tp" }, (int[]){ 1, 2 });
    rl_trace_set_meta(t, "step time", "1.5 ms");
    t->peak[1][RL_MEM_GRAD] = 777;
    return t;
}

/* Checks that r holds sample_trace()'s contents. */
static void check_sample_trace(const rl_trace *r)
{
    ck_assert_int_eq((int)r->n, 3);
    ck_assert_str_eq(r->ev[0].name, "all_reduce");
    ck_assert(r->ev[0].peer == -1 && r->ev[0].npeers == 0 && r->ev[0].peer_bytes == NULL);
    ck_assert(r->ev[1].npeers == 3 && r->ev[1].peer_bytes[0] == 16 && r->ev[1].peer_bytes[2] == 48);
    ck_assert_int_eq(r->ev[2].peer, 2);
    ck_assert_int_eq(r->ev[0].rank, 1);
    ck_assert_int_eq(r->ev[0].stream, 1);
    ck_assert(fabs(r->ev[0].vend - 3.5e-6) < 1e-15);
    ck_assert_int_eq(r->ev[0].tags[RL_TAG_BUCKET], 2);
    ck_assert_int_eq((int)r->ev[0].seq, 9);
    ck_assert_str_eq(r->ev[0].shapes, "g[n=1024]");
    ck_assert_int_eq((int)r->nmem, 1);
    ck_assert_int_eq((int)r->mem[0].current[RL_MEM_COMM], 50);
    ck_assert_int_eq(r->mesh_ndims, 2);
    ck_assert_str_eq(rl_trace_get_meta(r, "step time"), "1.5 ms");
    ck_assert_int_eq((int)r->peak[1][RL_MEM_GRAD], 777);
}

START_TEST(test_trace_roundtrip_and_errors)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/tmp/rl_rt_%d.json", (int)getpid());
    rl_trace *t = sample_trace();
    ck_assert_int_eq(rl_trace_write_json(t, path, 0, err, sizeof err), 0);
    rl_trace *r = rl_trace_read_json(path, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    check_sample_trace(r);
    rl_trace_free(r);
    rl_trace_free(t);

    const char *bad[][2] = {
        { "{\"traceEvents\": [", "line 1" },
        { "", "line" },
        { "{\"foo\": 1}", "traceEvents" },
        { "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": \"soon\"}]}", "ts" },
        { "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"ts\": 1e300}]}", "ts" },
        { "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 99, \"ts\": 1}], \"ringlab\": {\"ranks\": 2}}", "pid" },
        { "{\"traceEvents\": [], \"ringlab\": {\"ranks\": 2, \"mesh\": {\"dims\": [\"dp\"], \"sizes\": [3]}}}", "mesh" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i][0]);
        r = rl_trace_read_json(path, err, sizeof err);
        ck_assert_msg(r == NULL, "accepted: %s", bad[i][0]);
        ck_assert_msg(strstr(err, bad[i][1]), "case %zu: '%s'", i, err);
    }
    ck_assert_ptr_null(rl_trace_read_json("/nonexistent/x.json", err, sizeof err));
    unlink(path);
}
END_TEST

/* A packed trace unpacks to the same trace; every shorter or longer block, and one whose
 * counts are out of range, is refused with a message. */
START_TEST(test_trace_pack_unpack)
{
    char err[256];
    rl_trace *t = sample_trace();
    size_t len = 0;
    unsigned char *b = rl_trace_pack(t, &len);
    ck_assert_ptr_nonnull(b);
    rl_trace *r = rl_trace_unpack(b, len, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    check_sample_trace(r);
    ck_assert_int_eq(r->ev[0].vstart == t->ev[0].vstart && r->ev[2].seq == t->ev[2].seq, 1);
    rl_trace_free(r);
    for (size_t k = 0; k < len; k++) {
        r = rl_trace_unpack(b, k, err, sizeof err);
        ck_assert_msg(r == NULL && strstr(err, "not a packed trace"), "a block cut at %zu of %zu bytes was accepted",
                      k, len);
    }
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, b, len);
    longer[len] = 0;
    ck_assert_ptr_null(rl_trace_unpack(longer, len + 1, err, sizeof err));
    memcpy(longer + 8, &(uint64_t){ (uint64_t)1 << 40 }, 8); /* nranks */
    ck_assert_ptr_null(rl_trace_unpack(longer, len, err, sizeof err));
    memcpy(longer, b, len);
    memcpy(longer + 16 + sizeof t->hw, &(uint64_t){ (uint64_t)1 << 50 }, 8); /* events */
    ck_assert_ptr_null(rl_trace_unpack(longer, len, err, sizeof err));
    free(longer);
    free(b);
    rl_trace_free(t);
}
END_TEST

/* Runs `ringlab ARGS`, returns the exit status and the output (stdout+stderr). */
static int run_ringlab(const char *args, char *out, size_t size)
{
    return rl_test_run_ringlab(rl_test_build(), "", args, out, size);
}

/* rl_optnum's message in full (test_cli.c's sweep tries every declared option of every
 * program), --fault's duration range, lab 30's sizes that cannot fit, and values in range. */
START_TEST(test_cli_numbers_in_range)
{
    char out[1 << 14];
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", "train --lr 1e400", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "--lr: '1e400' is not a number from 1e-09 to 10") && strstr(out, "usage:"), "%s", out);
    /* the option last with no value: named as missing */
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", "train --steps", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "--steps: '(missing)' is not a whole number"), "%s", out);
    /* --fault's duration has a range too */
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", "train --fault straggler:rank=0:ms=1e18", out, sizeof out),
                     2);
    ck_assert_msg(strstr(out, "ms=1e18 is not a plain decimal number >= 0 (digits and a point, e.g. ms=800)"), "%s",
                  out);
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", "train --fault straggler:rank=0:ms=99999999", out,
                                         sizeof out), 2);
    ck_assert_msg(strstr(out, "ms=99999999 is not a number from 0 to 3600000"), "%s", out);
    /* lab 30's driver on sizes whose tensors cannot fit: a message, exit 1 — not a crash */
    if (!rl_test_quick()) { /* the labs' drivers are built by the normal build only */
        int rc = rl_test_run_cmd("build/solutions/30_tp_pp_sp_cp/run --seq 4096 --hidden 4096 --heads 4096 "
                                 "--batch 4096 2>&1", out, sizeof out);
        ck_assert_msg(rc == 1 && strstr(out, "out of memory: b = 4096, s = 4096, h = 4096, a = 4096 need about"),
                      "lab 30 on huge sizes: exit %d\n%s", rc, out);
    }
    /* in range: runs */
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", "train --steps 2 --batch 4 --every 1 --lr 0.01", out,
                                         sizeof out), 0);
}
END_TEST

START_TEST(test_bench_cli)
{
    static char out[65536];
    /* acceptance: one row per size, #wrong 0, busbw/algbw = 2(n-1)/n, busbw near 450 GB/s at 128M */
    int quick = rl_test_quick(); /* under the sanitizers: up to 8M only */
    ck_assert_int_eq(run_ringlab(quick ? "bench all_reduce --ranks 8 --hw h100-nvlink -b 8 -e 8M -f 16 -n 1 -w 0"
                                       : "bench all_reduce --ranks 8 --hw h100-nvlink -b 8 -e 128M -f 16 -n 1 -w 0",
                                 out, sizeof out), 0);
    int rows = 0;
    double last_bus = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        long long size, count;
        char type[16], op[16];
        int root, w1, w2;
        double t1, a1, b1, t2, a2, b2;
        if (sscanf(line, " %lld %lld %15s %15s %d %lf %lf %lf %d %lf %lf %lf %d", &size, &count, type, op, &root,
                   &t1, &a1, &b1, &w1, &t2, &a2, &b2, &w2) != 13)
            continue;
        rows++;
        ck_assert_int_eq(w1, 0);
        ck_assert_int_eq(w2, 0);
        if (a1 > 1)
            ck_assert_msg(fabs(b1 / a1 - 1.75) < 0.01, "busbw/algbw %.3f", b1 / a1);
        if (rows == 7) /* the modelled table's last row: 128 MiB (8 MiB when quick) */
            last_bus = b1;
    }
    ck_assert_int_eq(rows, quick ? 12 : 14); /* 8 B to 128 MiB by 16x: 7 sizes, modelled and wall tables */
    if (!quick)
        ck_assert_msg(last_bus > 400 && last_bus < 450, "busbw at 128M: %.1f", last_bus);
    /* every collective runs and checks clean on 3 ranks, bf16 too */
    const char *colls[] = { "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all",
                            "all_to_allv", "sendrecv" };
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        char args[256];
        snprintf(args, sizeof args, "bench %s --ranks 3 -b 1K -e 64K -f 8 -n 2 -w 1 -d bfloat16 -r 2", colls[i]);
        ck_assert_msg(run_ringlab(args, out, sizeof out) == 0, "%s: %s", colls[i], out);
    }
    /* bad usage: one line saying what is wrong, and exit 2 */
    ck_assert_int_eq(run_ringlab("bench all_reduce --ranks 0", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--ranks: '0' is not a whole number from 1 to 1024"));
    ck_assert_int_eq(run_ringlab("bench warp_reduce", out, sizeof out), 2);
    ck_assert_int_eq(run_ringlab("bench all_reduce -b 1M -e 1K", out, sizeof out), 2);
    ck_assert_int_eq(run_ringlab("bench all_reduce --ranks 9", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "h100-2node-ib"));
    ck_assert_int_eq(run_ringlab("nosuchcommand", out, sizeof out), 2);
    /* the CUDA backend is refused clearly in this build; auto falls back to sim */
    ck_assert_int_ne(run_ringlab("bench all_reduce --backend cuda -b 8 -e 8", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "use --backend sim"));
    ck_assert_int_eq(run_ringlab("bench all_reduce --backend auto -b 8 -e 8 -n 1 -w 0", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "using sim"));
    /* buffers that do not fit the address space: a message and exit 1 on every rank's behalf, not a
     * NULL buffer filled, a hang or an "OK" (not under the sanitizers, whose shadow needs the space) */
    if (!quick) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "ulimit -v 1200000 && OPENBLAS_NUM_THREADS=1 timeout 120 %s/ringlab bench all_reduce "
                 "--ranks 2 -b 256M -e 256M -n 1 -w 0 2>&1", rl_test_build());
        int st = rl_test_run_cmd(cmd, out, sizeof out);
        ck_assert_msg(st == 1 && strstr(out, "out of memory: the 268435456-byte row needs") && !strstr(out, " OK"),
                      "%s: exit %d\n%s", cmd, st, out);
    }
}
END_TEST

START_TEST(test_bench_hang_acceptance)
{
    static char out[65536];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = run_ringlab("bench all_reduce --ranks 4 --fault hang:rank=2:seq=3 --timeout 2 -b 1K -e 1K", out,
                         sizeof out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_int_eq(st, RL_EXIT_HANG);
    ck_assert_msg(secs < 2 + 2.0, "took %.1f s", secs);
    ck_assert_ptr_nonnull(strstr(out, "rank 2"));
    ck_assert_ptr_nonnull(strstr(out, "seq 3"));
}
END_TEST

Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_bf16_round_to_nearest_even);
    tcase_add_test(tc, test_tensor_views_and_memory_account);
    tcase_add_test(tc, test_options);
    tcase_add_test(tc, test_out_of_memory_stops_the_run);
    tcase_add_test(tc, test_cost_model);
    tcase_add_test(tc, test_trace_roundtrip_and_errors);
    tcase_add_test(tc, test_trace_pack_unpack);
    tcase_add_test(tc, test_trace_comm_hidden);
    tcase_add_test(tc, test_memory_sampled_inside_steps);
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("bench_cli");
    tcase_set_timeout(cli, 120);
    tcase_add_test(cli, test_bench_cli);
    tcase_add_test(cli, test_cli_numbers_in_range);
    tcase_add_test(cli, test_bench_hang_acceptance);
    suite_add_tcase(s, cli);
    return s;
}
