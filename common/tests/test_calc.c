/* test_calc.c — the cost calculators (common/calc.c) and `ringlab calc`. Every expected value
 * is recomputed here from first principles (or taken from the published table it cites),
 * never from the implementation. */
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "calc.h"
#include "optnum.h"
#include "testutil.h"

#define GB 1e9

/* |got - want| <= rel·|want| (+ a tiny absolute slack for zero) */
#define ck_near(got, want, rel) \
    ck_assert_msg(fabs((double)(got) - (double)(want)) <= (rel) * fabs((double)(want)) + 1e-12, \
                  "%s = %.12g, expected %.12g", #got, (double)(got), (double)(want))

/* Runs `ringlab ARGS` (stderr too), returns the exit status; output in out. */
static int calc_run(const char *args, char *out, size_t size)
{
    return rl_test_run_ringlab(rl_test_build(), "", args, out, size);
}

/* Runs `ringlab calc ARGS --json`, checks exit 0 and returns the parsed object. */
static json_t *calc_json(const char *args)
{
    static char out[1 << 16];
    char a[900];
    snprintf(a, sizeof a, "calc %s --json", args);
    int rc = calc_run(a, out, sizeof out);
    ck_assert_msg(rc == 0, "ringlab %s exited %d: %s", a, rc, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    ck_assert_msg(j && json_is_object(j), "ringlab %s printed no JSON object (%s): %s", a, e.text, out);
    return j;
}

/* A number at key (a path "a.b" goes one level down); fails when missing. */
static double jnum(json_t *j, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "%s", key);
    char *dot = strchr(k, '.');
    if (dot) {
        *dot = 0;
        j = json_object_get(j, k);
        ck_assert_msg(json_is_object(j), "JSON key '%s' missing", k);
        return jnum(j, dot + 1);
    }
    json_t *v = json_object_get(j, k);
    ck_assert_msg(json_is_number(v), "JSON key '%s' missing or not a number", key);
    return json_number_value(v);
}

/* ------------------------------------------------------------------ ZeRO */
START_TEST(test_zero_paper_example)
{
    /* ZeRO paper (Rajbhandari et al. 2020), Fig. 1 / Table 1: Ψ = 7.5B, Nd = 64, K = 12 →
     * 120 GB, 31.4 GB, 16.6 GB, 1.9 GB (published, rounded). */
    rl_calc_zero_in in = { .params = 7.5e9, .dp = 64 };
    rl_calc_zero_out r;
    ck_assert_int_eq(rl_calc_zero(&in, &r, NULL, 0), RL_OK);
    double psi = 7.5e9;
    ck_near(r.bytes[RL_CALC_DDP], 2 * psi + 2 * psi + 12 * psi, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO1], 2 * psi + 2 * psi + 12 * psi / 64, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO2], 2 * psi + (2 * psi + 12 * psi) / 64, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO3], 16 * psi / 64, 1e-12);
    ck_assert(fabs(r.bytes[RL_CALC_DDP] / GB - 120) < 0.05);
    ck_assert(fabs(r.bytes[RL_CALC_ZERO1] / GB - 31.4) < 0.05);
    ck_assert(fabs(r.bytes[RL_CALC_ZERO2] / GB - 16.6) < 0.05);
    ck_assert(fabs(r.bytes[RL_CALC_ZERO3] / GB - 1.9) < 0.05);
    /* default hsdp group: one node of 8 → full shard inside 8 GPUs */
    ck_assert_int_eq(r.group, 8);
    ck_near(r.bytes[RL_CALC_HSDP], 16 * psi / 8, 1e-12);
    /* traffic: ring 2(N-1)/N·Ψ for DDP and ZeRO-1/2, 3(N-1)/N·Ψ for ZeRO-3 (= 1.5× DDP) */
    ck_near(r.traffic_elems[RL_CALC_DDP], 2.0 * 63 / 64 * psi, 1e-12);
    ck_near(r.traffic_elems[RL_CALC_ZERO2], 2.0 * 63 / 64 * psi, 1e-12);
    ck_near(r.traffic_elems[RL_CALC_ZERO3], 3.0 * 63 / 64 * psi, 1e-12);
    ck_near(r.traffic_elems[RL_CALC_ZERO3] / r.traffic_elems[RL_CALC_DDP], 1.5, 1e-12);
    ck_near(r.traffic_bytes[RL_CALC_DDP], 2 * 2.0 * 63 / 64 * psi, 1e-12); /* bf16 */
    ck_near(r.traffic_paper[RL_CALC_ZERO1], 2 * psi, 1e-12);
    ck_near(r.traffic_paper[RL_CALC_ZERO3], 3 * psi, 1e-12);
    /* hsdp, G = 8, R = 8 groups: all-gather ×2 + reduce-scatter in the group, all-reduce of the shard across */
    ck_near(r.traffic_elems[RL_CALC_HSDP], 3.0 * 7 / 8 * psi + 2.0 * 7 / 8 * psi / 8, 1e-12);
}
END_TEST

START_TEST(test_zero_course_7b)
{
    /* COURSE.md lecture 29, 16Ψ, 7B on 8 GPUs: 112 / 38.5 / 26.25 / 14 GB (ZeRO-1 is 38.5, not 49) */
    rl_calc_zero_in in = { .params = 7e9, .dp = 8, .k = 12 };
    rl_calc_zero_out r;
    ck_assert_int_eq(rl_calc_zero(&in, &r, NULL, 0), RL_OK);
    ck_near(r.bytes[RL_CALC_DDP], 112 * GB, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO1], 38.5 * GB, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO2], 26.25 * GB, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO3], 14 * GB, 1e-12);
    /* K configurable: K = 8 (e.g. 8-bit-state style), hsdp in groups of 4 */
    rl_calc_zero_in in2 = { .params = 1e9, .dp = 8, .k = 8, .group = 4 };
    ck_assert_int_eq(rl_calc_zero(&in2, &r, NULL, 0), RL_OK);
    ck_near(r.bytes[RL_CALC_DDP], 12e9, 1e-12);
    ck_near(r.bytes[RL_CALC_ZERO1], 4e9 + 8e9 / 8, 1e-12);
    ck_near(r.bytes[RL_CALC_HSDP], 12e9 / 4, 1e-12);
    ck_near(r.traffic_elems[RL_CALC_HSDP], 3.0 * 3 / 4 * 1e9 + 2.0 * 1 / 2 * 1e9 / 4, 1e-12);
    /* errors, not aborts */
    char err[256] = "";
    rl_calc_zero_in bad = { .params = 1e9, .dp = 8, .group = 3 };
    ck_assert_int_eq(rl_calc_zero(&bad, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "divide"));
    bad.group = 0;
    bad.dp = 0;
    ck_assert_int_eq(rl_calc_zero(&bad, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "Nd"));
    bad.dp = 4;
    bad.params = -1;
    ck_assert_int_eq(rl_calc_zero(&bad, &r, NULL, 0), RL_ERR_ARG);
}
END_TEST

/* Acceptance: ZeRO paper Table 1 ("per-device memory consumption of different optimizations
 * as a function of DP degree", K = 12) through `calc zero --json`. Published values (GB):
 *   7.5B: Nd=4 120/52.5/41.3/30; Nd=64 120/31.4/16.6/1.88; Nd=1024 120/30.1/15.1/0.12
 *   128B: Nd=64 2048/536/284/32
 *   1T:   Nd=1024 16000/4011.7/2013.7/15.6
 * The 7.5B/64 and 128B rows are in REFERENCE.md's spirit; the others are not in the shared
 * reference and come from the paper's table. Tolerance: the table's last printed digit. */
START_TEST(test_zero_paper_table_json)
{
    static const struct { const char *psi; int nd; double v[4]; double tol; } rows[] = {
        { "7.5B", 4, { 120, 52.5, 41.3, 30 }, 0.0501 },
        { "7.5B", 64, { 120, 31.4, 16.6, 1.88 }, 0.05 },
        { "7.5B", 1024, { 120, 30.1, 15.1, 0.12 }, 0.05 },
        { "128B", 64, { 2048, 536, 284, 32 }, 0.5 },
        { "1T", 1024, { 16000, 4011.7, 2013.7, 15.6 }, 0.05 },
    };
    static const char *keys[] = { "ddp", "zero1", "zero2", "zero3" };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char a[128];
        snprintf(a, sizeof a, "zero --params %s --dp %d", rows[i].psi, rows[i].nd);
        json_t *j = calc_json(a);
        for (int k = 0; k < 4; k++) {
            double got = jnum(j, keys[k]) / GB;
            ck_assert_msg(fabs(got - rows[i].v[k]) <= rows[i].tol, "%s: %s = %.4f GB, paper %.4f", a, keys[k], got,
                          rows[i].v[k]);
        }
        ck_assert(json_is_number(json_object_get(j, "hsdp")));
        ck_assert(json_is_object(json_object_get(j, "traffic")));
        ck_assert(json_is_number(json_object_get(json_object_get(j, "traffic"), "zero3")));
        json_decref(j);
    }
    /* traffic in the JSON: bytes per rank per step, bf16 */
    json_t *j = calc_json("zero --params 7B --dp 8 --nodes-of 4");
    ck_near(jnum(j, "traffic.ddp"), 2 * (2.0 * 7 / 8 * 7e9), 1e-12);
    ck_near(jnum(j, "traffic.zero3"), 2 * (3.0 * 7 / 8 * 7e9), 1e-12);
    ck_near(jnum(j, "traffic_elements.zero1"), 2.0 * 7 / 8 * 7e9, 1e-12);
    ck_near(jnum(j, "hsdp"), 16 * 7e9 / 4, 1e-12);
    ck_near(jnum(j, "inputs.group"), 4, 0);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------------ collectives */
START_TEST(test_coll_ring_tree)
{
    const rl_hw *hw = rl_hw_find("h100-nvlink");
    ck_assert_ptr_nonnull(hw);
    /* COURSE.md lecture 28: latency steps at 1024 GPUs, ring 2046 vs tree 20 */
    rl_calc_coll_in in = { .kind = RL_COLL_ALL_REDUCE, .algo = RL_ALGO_RING, .ranks = 1024, .bytes = 4e6, .hw = hw };
    rl_calc_coll_out r;
    ck_assert_int_eq(rl_calc_coll(&in, &r, NULL, 0), RL_OK);
    ck_near(r.latency_steps, 2046, 0);
    ck_assert_int_eq(r.crosses_nodes, 1);
    double a = hw->inter.alpha, bw = hw->inter.bw;
    ck_near(r.time, 2046 * a + 2.0 * 1023 / 1024 * 4e6 / bw, 1e-12);
    in.algo = RL_ALGO_TREE;
    ck_assert_int_eq(rl_calc_coll(&in, &r, NULL, 0), RL_OK);
    ck_near(r.latency_steps, 20, 1e-12);
    ck_near(r.time, 20 * a + 2 * 4e6 / bw, 1e-12);
    /* COURSE.md: N = 4, 4 MB buffer → 3 MB reduce-scatter + 3 MB all-gather per GPU */
    rl_calc_coll_in rs = { .kind = RL_COLL_REDUCE_SCATTER, .ranks = 4, .bytes = 4e6, .hw = hw };
    ck_assert_int_eq(rl_calc_coll(&rs, &r, NULL, 0), RL_OK);
    ck_near(r.bytes_per_rank, 3e6, 1e-12);
    ck_assert_int_eq(r.crosses_nodes, 0);
    ck_near(r.time, 3 * hw->intra.alpha + 0.75 * 4e6 / hw->intra.bw, 1e-12);
    rl_calc_coll_in ar = { .kind = RL_COLL_ALL_REDUCE, .ranks = 4, .bytes = 4e6, .hw = hw };
    ck_assert_int_eq(rl_calc_coll(&ar, &r, NULL, 0), RL_OK);
    ck_near(r.bytes_per_rank, 6e6, 1e-12);
    /* errors */
    char err[256] = "";
    rs.algo = RL_ALGO_TREE;
    ck_assert_int_eq(rl_calc_coll(&rs, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "all_reduce only"));
    ar.ranks = 1;
    ck_assert_int_eq(rl_calc_coll(&ar, &r, err, sizeof err), RL_ERR_ARG);
    ar.ranks = 4;
    ar.hw = NULL;
    ck_assert_int_eq(rl_calc_coll(&ar, &r, err, sizeof err), RL_ERR_ARG);
}
END_TEST

/* Acceptance: nccl-tests busbw conventions (nccl-tests doc/PERFORMANCE.md: all_reduce
 * 2(n-1)/n, reduce_scatter / all_gather / alltoall (n-1)/n) through --json, and busbw as
 * "the hardware bandwidth": for large buffers a ring's busbw approaches the link's bandwidth
 * whatever n is (450 GB/s each way on NVLink4). */
START_TEST(test_coll_busbw_json)
{
    static const struct { const char *topic; double f8; } t[] = {
        { "allreduce", 2.0 * 7 / 8 }, { "reduce_scatter", 7.0 / 8 }, { "all_gather", 7.0 / 8 }, { "all_to_all", 7.0 / 8 },
    };
    for (size_t i = 0; i < 4; i++) {
        char a[128];
        snprintf(a, sizeof a, "%s --bytes 128M --ranks 8 --hw h100-nvlink", t[i].topic);
        json_t *j = calc_json(a);
        double S = 128.0 * 1024 * 1024;
        ck_near(jnum(j, "inputs.bytes"), S, 0);
        ck_near(jnum(j, "busbw_factor"), t[i].f8, 1e-12);
        double time = jnum(j, "time_s");
        ck_near(jnum(j, "time_us"), time * 1e6, 1e-9);
        ck_near(jnum(j, "algbw_GBps"), S / time / 1e9, 1e-9);
        ck_near(jnum(j, "busbw_GBps"), S / time / 1e9 * t[i].f8, 1e-9);
        ck_assert(json_is_string(json_object_get(j, "link")));
        ck_assert(json_is_boolean(json_object_get(j, "crosses_nodes")));
        ck_assert(json_is_number(json_object_get(j, "latency_steps")));
        ck_assert(json_is_number(json_object_get(j, "bytes_per_rank")));
        json_decref(j);
    }
    for (int n = 2; n <= 8; n *= 2) {
        char a[128];
        snprintf(a, sizeof a, "allreduce --bytes 8GiB --ranks %d", n);
        json_t *j = calc_json(a);
        ck_near(jnum(j, "busbw_GBps"), 450, 0.01);
        json_decref(j);
    }
    json_t *j = calc_json("allreduce --bytes 4MB --ranks 1024 --algo tree");
    ck_near(jnum(j, "latency_steps"), 20, 1e-12);
    ck_near(jnum(j, "inputs.bytes"), 4e6, 0);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------------ TP */
START_TEST(test_tp_70b_layer)
{
    /* COURSE.md: a 70B-class layer, h = 8192, b = 2, s = 4096, TP traffic ≈ 1.07 GB per layer
     * with 2 bytes counted once (not 2.15): 4 all-reduces of bsh elements, each sending ≈ 2bsh
     * per rank in a ring → 8bsh elements × 2 bytes. */
    const rl_hw *hw = rl_hw_find("h100-nvlink");
    rl_calc_tp_in in = { .b = 2, .s = 4096, .h = 8192, .t = 8, .hw = hw };
    rl_calc_tp_out r;
    ck_assert_int_eq(rl_calc_tp(&in, &r, NULL, 0), RL_OK);
    double bsh = 2.0 * 4096 * 8192;
    ck_near(r.allreduce_elems, bsh, 0);
    ck_near(r.fwd_elems, 2 * 2 * bsh, 0);
    ck_near(r.bwd_elems, 2 * 2 * bsh, 0);
    ck_near(r.layer_bytes, 2 * (4 * 2 * bsh), 0);
    ck_assert(fabs(r.layer_bytes / GB - 1.07) < 0.005);
    ck_near(r.layer_bytes_ring, 4 * (2.0 * 7 / 8 * bsh) * 2, 1e-12);
    ck_assert_int_eq(r.crosses_nodes, 0);
    double ar = 2 * 7 * hw->intra.alpha + 2.0 * 7 / 8 * bsh * 2 / hw->intra.bw;
    ck_near(r.fwd_time, 2 * ar, 1e-12);
    ck_near(r.layer_time, 4 * ar, 1e-12);
    /* TP = 16 on two nodes: flagged, and every all-reduce runs at the inter-node speed */
    in.t = 16;
    in.hw = rl_hw_find("h100-2node-ib");
    ck_assert_int_eq(rl_calc_tp(&in, &r, NULL, 0), RL_OK);
    ck_assert_int_eq(r.crosses_nodes, 1);
    ck_assert_ptr_eq(r.link, &in.hw->inter);
    json_t *j = calc_json("tp --b 2 --s 4096 --h 8192 --t 8");
    ck_near(jnum(j, "layer_bytes"), 16 * bsh, 0);
    ck_near(jnum(j, "forward_elements"), 4 * bsh, 0);
    ck_near(jnum(j, "backward_elements"), 4 * bsh, 0);
    ck_assert(json_is_number(json_object_get(j, "layer_time_s")));
    json_decref(j);
    static char out[8192];
    ck_assert_int_eq(calc_run("calc tp --b 2 --s 4096 --h 8192 --t 16 --hw h100-2node-ib", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "warning: t = 16 exceeds the 8 GPUs per node"));
    ck_assert_ptr_nonnull(strstr(out, "1.074 GB"));
}
END_TEST

/* ------------------------------------------------------------------ activations */
START_TEST(test_activation_korthikanti)
{
    /* Korthikanti et al. 2022, Table 2, for GPT-3 175B (s = 2048, h = 12288, a = 96; the paper
     * notes 5as/h = 80 for it), b = 1, t = 8. */
    double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    ck_near(5 * a * s / h, 80, 0);
    rl_calc_act_in in = { .s = s, .b = b, .h = h, .a = a, .t = 1 };
    rl_calc_act_out r;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, sbh * (34 + 80), 1e-12); /* no parallelism */
    in.t = 8;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, sbh * (10 + 24 / t + 80 / t), 1e-12); /* TP */
    double tp_only = r.per_layer;
    in.sp = 1;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, sbh / t * (34 + 80), 1e-12); /* TP + SP */
    double tp_sp = r.per_layer;
    in.recompute = RL_CALC_RECOMPUTE_SELECTIVE;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, 34 * sbh / t, 1e-12); /* TP + SP + selective */
    /* the paper: SP + selective recompute cut activation memory ~5x vs TP alone, and selective
     * recompute removes ~70% of what remains with SP for GPT-3 */
    ck_assert(tp_only / r.per_layer > 5 && tp_only / r.per_layer < 5.5);
    ck_assert(fabs(1 - r.per_layer / tp_sp - 0.70) < 0.01);
    in.sp = 0;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, sbh * (10 + 24 / t), 1e-12); /* TP + selective */
    in.recompute = RL_CALC_RECOMPUTE_FULL;
    in.layers = 96;
    ck_assert_int_eq(rl_calc_activation(&in, &r, NULL, 0), RL_OK);
    ck_near(r.per_layer, 2 * sbh, 1e-12);
    ck_near(r.total, 96 * 2 * sbh, 1e-12);
    ck_assert_int_eq(rl_calc_recompute_parse("selective"), RL_CALC_RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(rl_calc_recompute_parse("some"), -1);
    char err[128];
    in.a = 0;
    ck_assert_int_eq(rl_calc_activation(&in, &r, err, sizeof err), RL_ERR_ARG);
}
END_TEST

/* Acceptance: Megatron's activation table (Korthikanti et al. 2022, Table 2 formulas) for the
 * paper's Table 3 configurations, through --json: 22B (s 2048, h 6144, a 64, t 8), 530B (h 20480,
 * a 128, t 8), 1T (h 25600, a 160, t 8); values computed from the formulas. */
START_TEST(test_activation_table_json)
{
    static const struct { double h, a; int L; } cfg[] = { { 6144, 64, 48 }, { 20480, 128, 105 }, { 25600, 160, 128 } };
    for (size_t i = 0; i < 3; i++) {
        double s = 2048, b = 1, h = cfg[i].h, a = cfg[i].a, t = 8, sbh = s * b * h;
        struct { const char *opts; double coeff; } modes[] = {
            { "", 34 + 5 * a * s / h },
            { "--t 8", 10 + 24 / t + 5 * a * s / (h * t) },
            { "--t 8 --sp", (34 + 5 * a * s / h) / t },
            { "--t 8 --recompute selective", 10 + 24 / t },
            { "--t 8 --sp --recompute selective", 34 / t },
            { "--t 8 --sp --recompute full", 2 },
        };
        for (size_t k = 0; k < 6; k++) {
            char args[256];
            snprintf(args, sizeof args, "activation --s 2048 --b 1 --h %g --a %g --layers %d %s", h, a, cfg[i].L,
                     modes[k].opts);
            json_t *j = calc_json(args);
            ck_near(jnum(j, "per_layer_bytes"), sbh * modes[k].coeff, 1e-12);
            ck_near(jnum(j, "total_bytes"), cfg[i].L * sbh * modes[k].coeff, 1e-12);
            ck_near(jnum(j, "coeff"), modes[k].coeff, 1e-12);
            ck_assert(json_is_string(json_object_get(j, "formula")));
            json_decref(j);
        }
    }
}
END_TEST

/* ------------------------------------------------------------------ bubble */
START_TEST(test_bubble)
{
    /* COURSE.md lecture 30: p = 4, m = 16: naive 75%, GPipe/1F1B 15.8%, interleaved v = 2 8.6% */
    rl_calc_bubble_in in = { .p = 4, .m = 16, .sched = RL_CALC_SCHED_1F1B };
    rl_calc_bubble_out r;
    ck_assert_int_eq(rl_calc_bubble(&in, &r, NULL, 0), RL_OK);
    ck_near(r.frac_total, 3.0 / 19, 1e-12);
    ck_assert(fabs(100 * r.frac_total - 15.8) < 0.05);
    ck_near(r.frac_ideal, 3.0 / 16, 1e-12);
    ck_near(r.peak_inflight, 4, 0);
    in.sched = RL_CALC_SCHED_GPIPE;
    ck_assert_int_eq(rl_calc_bubble(&in, &r, NULL, 0), RL_OK);
    ck_near(r.frac_total, 3.0 / 19, 1e-12);
    ck_near(r.peak_inflight, 16, 0);
    in.sched = RL_CALC_SCHED_INTERLEAVED;
    in.v = 2;
    ck_assert_int_eq(rl_calc_bubble(&in, &r, NULL, 0), RL_OK);
    ck_near(r.frac_ideal, 3.0 / 32, 1e-12);
    ck_near(r.frac_total, 1.5 / 17.5, 1e-12);
    ck_assert(fabs(100 * r.frac_total - 8.6) < 0.05);
    /* Korthikanti et al. §4.2.3: the interleaved first stage holds p·(1 + (p-1)/(p·v)) micro-batches */
    ck_near(r.peak_inflight, 4 * (1 + 3.0 / 8), 1e-12);
    in.sched = RL_CALC_SCHED_NAIVE;
    in.v = 0;
    ck_assert_int_eq(rl_calc_bubble(&in, &r, NULL, 0), RL_OK);
    ck_near(r.frac_total, 0.75, 1e-12);
    /* zero bubble ZB-H1 (Qi et al. 2023), T_F = T_B = T_W: a third of 1F1B's bubble time */
    in.sched = RL_CALC_SCHED_ZB_H1;
    ck_assert_int_eq(rl_calc_bubble(&in, &r, NULL, 0), RL_OK);
    ck_near(r.bubble_slots, 1, 1e-12); /* 1F1B: 3 slots of T_F+T_B(+T_W); here (p-1)·T = 1 slot */
    ck_near(r.frac_total, 1.0 / (16 + 1), 1e-12);
    ck_near(r.peak_inflight, 4, 0);
    /* m not a multiple of p for interleaved: an error saying what to use */
    char err[256] = "";
    rl_calc_bubble_in bad = { .p = 4, .m = 6, .v = 2, .sched = RL_CALC_SCHED_INTERLEAVED };
    ck_assert_int_eq(rl_calc_bubble(&bad, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "multiple of p"));
    /* interleaved with one chunk per rank is 1F1B under another name: refused, not given a peak of 2p - 1 */
    rl_calc_bubble_in one = { .p = 4, .m = 8, .v = 1, .sched = RL_CALC_SCHED_INTERLEAVED };
    ck_assert_int_eq(rl_calc_bubble(&one, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "--schedule 1f1b"));
    one.v = 2, one.p = 1, one.m = 2;
    ck_assert_int_eq(rl_calc_bubble(&one, &r, err, sizeof err), RL_ERR_ARG);
    ck_assert_int_eq(rl_calc_schedule_parse("zb-h1"), RL_CALC_SCHED_ZB_H1);
    ck_assert_int_eq(rl_calc_schedule_parse("2f2b"), -1);
}
END_TEST

/* Acceptance: bubble table through --json (Narayanan et al. 2021 formulas; course figures). */
START_TEST(test_bubble_table_json)
{
    static const struct { int p, m, v; const char *sched; double total; } t[] = {
        { 4, 16, 1, "1f1b", 3.0 / 19 }, { 4, 16, 1, "gpipe", 3.0 / 19 }, { 4, 16, 2, "interleaved", 3.0 / 35 },
        { 8, 32, 1, "1f1b", 7.0 / 39 }, { 8, 32, 4, "interleaved", 7.0 / (128 + 7) }, { 4, 1, 1, "naive", 0.75 },
        { 4, 16, 1, "zb-h1", 3.0 / 51 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char a[128];
        snprintf(a, sizeof a, "bubble --pp %d --mb %d --v %d --schedule %s", t[i].p, t[i].m, t[i].v, t[i].sched);
        if (t[i].v == 1)
            snprintf(a, sizeof a, "bubble --pp %d --mb %d --schedule %s", t[i].p, t[i].m, t[i].sched);
        json_t *j = calc_json(a);
        ck_near(jnum(j, "bubble_fraction_total"), t[i].total, 1e-12);
        ck_assert(json_is_number(json_object_get(j, "bubble_fraction_ideal")));
        ck_assert(json_is_number(json_object_get(j, "peak_inflight_microbatches")));
        json_decref(j);
    }
    /* --v alone picks the interleaved schedule */
    json_t *j = calc_json("bubble --pp 4 --mb 16 --v 2");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "inputs"), "schedule")), "interleaved");
    ck_near(jnum(j, "bubble_fraction_ideal"), 3.0 / 32, 1e-12);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------------ FLOPs, MFU, MoE */
START_TEST(test_flops_mfu)
{
    rl_calc_flops_in in = { .params = 70e9, .tokens = 2e12 };
    rl_calc_flops_out r;
    ck_assert_int_eq(rl_calc_flops(&in, &r, NULL, 0), RL_OK);
    ck_near(r.flops_6nd, 6 * 70e9 * 2e12, 1e-12);
    ck_near(r.total, 8.4e23, 1e-12);
    /* PaLM appendix B: 6N + 12·L·H·Q·T per token; L 80, H 64, Q 128, T 4096 */
    in.layers = 80, in.hidden = 8192, in.heads = 64, in.seq = 4096;
    ck_assert_int_eq(rl_calc_flops(&in, &r, NULL, 0), RL_OK);
    ck_near(r.head_dim, 128, 0);
    ck_near(r.per_token_attn, 12.0 * 80 * 64 * 128 * 4096, 1e-12);
    ck_near(r.total, (6 * 70e9 + 12.0 * 80 * 64 * 128 * 4096) * 2e12, 1e-12);
    json_t *j = calc_json("flops --params 70B --tokens 2T --layers 80 --hidden 8192 --heads 64 --seq 4096");
    ck_near(jnum(j, "flops_6nd"), 8.4e23, 1e-12);
    ck_near(jnum(j, "per_token_attention"), 12.0 * 80 * 64 * 128 * 4096, 1e-12);
    ck_near(jnum(j, "flops_total"), (6 * 70e9 + 12.0 * 80 * 8192 * 4096) * 2e12, 1e-12);
    json_decref(j);
    /* MFU: 4.2 PFLOP in 1.5 s on 8 H100 (989 TFLOP/s dense bf16 each) */
    rl_calc_mfu_in mi = { .flops = 4.2e15, .time = 1.5, .gpus = 8, .hw = rl_hw_find("h100-nvlink") };
    rl_calc_mfu_out mo;
    ck_assert_int_eq(rl_calc_mfu(&mi, &mo, NULL, 0), RL_OK);
    ck_near(mo.mfu, 4.2e15 / 1.5 / (8 * 989e12), 1e-12);
    j = calc_json("mfu --flops 4.2e15 --time 1.5 --gpus 8 --hw a100-pcie");
    ck_near(jnum(j, "mfu"), 4.2e15 / 1.5 / (8 * 312e12), 1e-12);
    ck_near(jnum(j, "peak_flops_per_s"), 8 * 312e12, 1e-12);
    json_decref(j);
    mi.time = 0;
    ck_assert_int_eq(rl_calc_mfu(&mi, &mo, NULL, 0), RL_ERR_ARG);
}
END_TEST

START_TEST(test_moe)
{
    rl_calc_moe_in in = { .tokens = 4096, .experts = 8, .topk = 2, .cf = 1.25, .hidden = 4096 };
    rl_calc_moe_out r;
    ck_assert_int_eq(rl_calc_moe(&in, &r, NULL, 0), RL_OK);
    ck_near(r.capacity, 4096 * 2 / 8 * 1.25, 0); /* 1280 */
    ck_near(r.dispatch_bytes, 4096.0 * 2 * 4096 * 2, 0);
    ck_near(r.total_bytes, 2 * 4096.0 * 2 * 4096 * 2, 0);
    ck_near(r.per_token_bytes, 2 * 2 * 4096 * 2, 0); /* 2 bytes counted once */
    /* ceil: 1000 tokens over 3 experts → 334; 1.1·100/10 = 11 exactly, not 12 */
    rl_calc_moe_in c = { .tokens = 1000, .experts = 3, .topk = 1, .cf = 1.0, .hidden = 8 };
    ck_assert_int_eq(rl_calc_moe(&c, &r, NULL, 0), RL_OK);
    ck_near(r.capacity, 334, 0);
    c.tokens = 100, c.experts = 10, c.cf = 1.1;
    ck_assert_int_eq(rl_calc_moe(&c, &r, NULL, 0), RL_OK);
    ck_near(r.capacity, 11, 0);
    c.topk = 11;
    ck_assert_int_eq(rl_calc_moe(&c, &r, NULL, 0), RL_ERR_ARG);
    json_t *j = calc_json("moe --tokens 4K --experts 8 --topk 2 --cf 1.25 --hidden 4096");
    ck_near(jnum(j, "capacity"), 1250, 0); /* 4K = 4000 tokens (decimal) */
    ck_near(jnum(j, "dispatch_bytes"), 4000.0 * 2 * 4096 * 2, 0);
    ck_near(jnum(j, "combine_bytes"), 4000.0 * 2 * 4096 * 2, 0);
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------------ planner */
/* Rows whose step time and memory tie exactly are ordered by tp, pp, b, zero, recompute: a model
 * whose DP collectives dwarf every other term (Ψ = 1e30, K = 1e-20, 1e200 FLOP/s) makes such ties. */
START_TEST(test_plan_ties)
{
    rl_hw hw = *rl_hw_find("h100-2node-ib");
    hw.peak_flops_bf16 = 1e200;
    rl_calc_plan_in in = { .params = 1e30, .layers = 8, .heads = 8, .hidden = 512, .seq = 64, .gbs = 16, .gpus = 8,
                           .hw = &hw, .k = 1e-20 };
    rl_calc_plan_row *r;
    int n, ties = 0, tp_ties = 0, zero_ties = 0;
    char err[512];
    ck_assert_int_eq(rl_calc_plan(&in, &r, &n, err, sizeof err), RL_OK);
    for (int i = 1; i < n; i++) {
        const rl_calc_plan_row *a = &r[i - 1], *b = &r[i];
        ck_assert(a->step_time <= b->step_time);
        if (a->step_time != b->step_time || a->mem_total != b->mem_total)
            continue;
        int ka[5] = { a->tp, a->pp, a->b, a->zero, (int)a->recompute }, kb[5] = { b->tp, b->pp, b->b, b->zero,
                                                                                  (int)b->recompute };
        int k = 0;
        while (k < 5 && ka[k] == kb[k])
            k++;
        ck_assert_msg(k < 5 && ka[k] < kb[k], "rows %d and %d tie but are not in tp, pp, b, zero, recompute order", i - 1, i);
        ties++, tp_ties += k == 0, zero_ties += k == 3;
    }
    ck_assert(ties > 0 && tp_ties > 0 && zero_ties > 0);
    free(r);
}
END_TEST

START_TEST(test_plan)
{
    rl_calc_plan_in in = { .params = 70e9, .layers = 80, .hidden = 8192, .heads = 64, .seq = 4096,
                           .gbs = 256, .gpus = 16, .hw = rl_hw_find("h100-2node-ib") };
    rl_calc_plan_row *rows;
    int n;
    char err[512];
    ck_assert_int_eq(rl_calc_plan(&in, &rows, &n, err, sizeof err), RL_OK);
    ck_assert_int_gt(n, 10);
    int seen_oom = 0, tp16 = 0, few = 0;
    for (int i = 0; i < n; i++) {
        const rl_calc_plan_row *r = &rows[i];
        ck_assert_int_eq(r->tp * r->pp * r->dp, 16);
        ck_assert_int_eq(r->m * r->b * r->dp, 256);
        ck_assert_int_eq(80 % r->pp, 0);
        int oom = r->mem_total > 80e9;
        ck_assert_int_eq(!!(r->warnings & RL_CALC_WARN_OOM), oom);
        ck_assert_msg(!(seen_oom && !oom), "a fitting plan is ranked after one that does not fit");
        if (i > 0 && !!(rows[i - 1].warnings & RL_CALC_WARN_OOM) == oom)
            ck_assert(rows[i - 1].step_time <= r->step_time);
        seen_oom |= oom;
        if (r->tp == 16) {
            tp16 = 1;
            ck_assert(r->warnings & RL_CALC_WARN_TP_NODES);
        } else {
            ck_assert(!(r->warnings & RL_CALC_WARN_TP_NODES));
        }
        ck_assert_int_eq(!!(r->warnings & RL_CALC_WARN_FEW_MB), r->pp > 1 && r->m < 4 * r->pp);
        few |= r->pp > 1 && r->m < 4 * r->pp;
        /* memory: ZeRO states of Ψ/(TP·PP) with Nd = DP, recomputed */
        double psi = 70e9 / (r->tp * r->pp), d = r->dp;
        double want = r->zero == 0 ? 16 * psi : r->zero == 1 ? 4 * psi + 12 * psi / d
                    : r->zero == 2 ? 2 * psi + 14 * psi / d : 16 * psi / d;
        ck_near(r->mem_states, want, 1e-12);
        ck_near(r->mem_total, r->mem_states + r->mem_act, 1e-12);
        ck_assert(r->step_time > 0 && r->mfu > 0 && r->mfu < 1);
        /* the row's terms as calc.h defines them: m micro-batches plus the (PP−1)-slot bubble */
        ck_near(r->step_time, r->compute_time + r->tp_time + r->pp_time + r->bubble_time + r->dp_time, 1e-12);
        ck_near(r->bubble_time * r->m, (r->pp - 1) * (r->compute_time + r->tp_time + r->pp_time), 1e-12);
    }
    ck_assert(tp16 && few && seen_oom);
    /* 70B does not fit in 80 GB without sharding: the top plan shards (TP·PP > 1 or ZeRO) */
    ck_assert(!(rows[0].warnings & RL_CALC_WARN_OOM));
    ck_assert(rows[0].tp * rows[0].pp > 1 || rows[0].zero > 0);
    free(rows);
    in.gbs = 3; /* no DP degree divides 3 except 1 */
    ck_assert_int_eq(rl_calc_plan(&in, &rows, &n, err, sizeof err), RL_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(rows[i].dp, 1);
    free(rows);
    in.heads = 0;
    ck_assert_int_eq(rl_calc_plan(&in, &rows, &n, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_null(rows);
    json_t *j = calc_json("plan --params 7B --layers 32 --hidden 4096 --heads 32 --seq 4096 --gbs 64 --gpus 8 --top 5");
    json_t *plans = json_object_get(j, "plans");
    ck_assert(json_is_array(plans));
    ck_assert_int_eq((int)json_array_size(plans), 5);
    json_t *p0 = json_array_get(plans, 0);
    static const char *keys[] = { "tp", "pp", "dp", "m", "b", "zero", "step_time_s", "mem_total_bytes", "mfu" };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        ck_assert_msg(json_is_number(json_object_get(p0, keys[k])), "plan key %s", keys[k]);
    ck_assert(json_is_true(json_object_get(p0, "fits")));
    ck_assert(json_is_array(json_object_get(p0, "warnings")));
    ck_assert(jnum(j, "candidates") >= jnum(j, "fitting"));
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------------ parsing and CLI */
START_TEST(test_parse_sizes)
{
    double v;
    ck_assert_int_eq(rl_calc_parse_count("7.5B", &v), 0);
    ck_near(v, 7.5e9, 0);
    ck_assert_int_eq(rl_calc_parse_count("70B", &v), 0);
    ck_near(v, 70e9, 0);
    ck_assert_int_eq(rl_calc_parse_count("4M", &v), 0);
    ck_near(v, 4e6, 0);
    ck_assert_int_eq(rl_calc_parse_count("2T", &v), 0);
    ck_near(v, 2e12, 0);
    ck_assert_int_eq(rl_calc_parse_count("1e9", &v), 0);
    ck_near(v, 1e9, 0);
    ck_assert_int_eq(rl_calc_parse_count("7.5X", &v), -1);
    ck_assert_int_eq(rl_calc_parse_count("-3", &v), -1);
    ck_assert_int_eq(rl_calc_parse_count("nan", &v), -1);
    ck_assert_int_eq(rl_calc_parse_count("", &v), -1);
    ck_assert_int_eq(rl_calc_parse_bytes("128M", &v), 0);
    ck_near(v, 128.0 * 1024 * 1024, 0);
    ck_assert_int_eq(rl_calc_parse_bytes("100MB", &v), 0);
    ck_near(v, 100e6, 0);
    ck_assert_int_eq(rl_calc_parse_bytes("1GiB", &v), 0);
    ck_near(v, 1073741824.0, 0);
    ck_assert_int_eq(rl_calc_parse_bytes("4096", &v), 0);
    ck_near(v, 4096, 0);
    ck_assert_int_eq(rl_calc_parse_bytes("12MiX", &v), -1);
}
END_TEST

START_TEST(test_cli_errors)
{
    static char out[16384];
    static const struct { const char *args, *msg; } cases[] = {
        { "calc zero --params 7.5B", "missing --dp" },
        { "calc zero --params lots --dp 8", "bad value 'lots' for --params" },
        { "calc zero --params 7B --dp 8 --nodes-of 3", "divide" },
        { "calc zero --params 7B --dp 8 --frobnicate 1", "unknown option '--frobnicate'" },
        { "calc zero --params 7B --dp", "--dp needs a value" },
        { "calc allreduce --bytes 1M", "missing --ranks" },
        { "calc allreduce --bytes 1M --ranks 8 --hw dgx-9000", "unknown hardware profile 'dgx-9000'" },
        { "calc all_gather --bytes 1M --ranks 8 --algo tree", "all_reduce only" },
        { "calc allreduce --bytes 1M --ranks 8 --algo star", "unknown algorithm 'star'" },
        { "calc tp --b 2 --s 4096 --h 8192", "missing --t" },
        { "calc activation --s 2048 --b 1 --h 12288 --a 96 --recompute some", "unknown recompute mode 'some'" },
        { "calc bubble --pp 4", "missing --mb" },
        { "calc bubble --pp 4 --mb 6 --v 2", "multiple of p" },
        { "calc bubble --pp 4 --mb 16 --schedule 2f2b", "unknown schedule '2f2b'" },
        { "calc bubble --pp 0 --mb 16", "--pp: '0' is not a whole number from 1 to 1000000000" },
        { "calc flops --params 7B --tokens 1T --layers 32", "needs all of --layers, --hidden, --heads and --seq" },
        { "calc mfu --flops 1e15", "missing --time" },
        { "calc moe --tokens 4096 --experts 8 --topk 9 --cf 1.25 --hidden 4096", "top-k must be between 1 and E" },
        { "calc plan --params 70B --layers 80", "missing --hidden" },
        { "calc zero --params 1.5 --dp 4", "--params: '1.5' is 1.5, not a whole number from 1" },
        { "calc zero --params 7B --dp 4 --comm-bytes 0", "--comm-bytes: '0' is not a number from 0.5 to 16" },
        { "calc tp --b 1.5 --s 4096 --h 8192 --t 8", "--b: '1.5' is 1.5, not a whole number" },
        { "calc tp --b 2 --s 4096 --h 8192 --t 8 --dtype-bytes 0", "--dtype-bytes: '0' is not a number" },
        { "calc allreduce --bytes 0.5 --ranks 8", "--bytes: '0.5' is 0.5, not a whole number of bytes" },
        { "calc allreduce --bytes 1e30 --ranks 8", "not a whole number of bytes from 0 to 1e+15" },
        { "calc activation --s 2048 --b 1 --h 4096 --a 30", "the heads a = 30 do not divide the hidden size" },
        { "calc activation --s 2048 --b 1 --h 4096 --a 32 --t 3", "t = 3 does not divide the heads a = 32" },
        { "calc flops --params 7B --tokens 1T --layers 32 --hidden 4096 --heads 30 --seq 2048", "H = 30 do not" },
        { "calc warp-drive", "unknown topic 'warp-drive'" },
        { "calc", "name a topic" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = calc_run(cases[i].args, out, sizeof out);
        ck_assert_msg(rc == 2, "ringlab %s exited %d, expected 2: %s", cases[i].args, rc, out);
        ck_assert_msg(strstr(out, cases[i].msg), "ringlab %s: expected '%s' in: %s", cases[i].args, cases[i].msg, out);
        ck_assert_msg(strstr(out, "usage: ringlab calc"), "ringlab %s: no usage in: %s", cases[i].args, out);
    }
    /* help: exit 0, documents the JSON keys and the planner's model */
    ck_assert_int_eq(calc_run("calc --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "JSON keys"));
    ck_assert_ptr_nonnull(strstr(out, "GiB = 2^30"));
    ck_assert_int_eq(calc_run("calc zero --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "zero1, zero2, zero3, hsdp"));
    ck_assert_int_eq(calc_run("calc plan --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "Model:"));
    ck_assert_ptr_nonnull(strstr(out, "m < 4·PP"));
    /* the printed ZeRO example: inputs, formula, GB and GiB */
    ck_assert_int_eq(calc_run("calc zero --params 7.5B --dp 64", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "formula:"));
    ck_assert_ptr_nonnull(strstr(out, "31.406"));
    ck_assert_ptr_nonnull(strstr(out, "GB = 1e9 bytes, GiB = 2^30 bytes"));
    ck_assert_int_eq(calc_run("calc bubble --pp 4 --mb 16", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "15.79% of total time"));
}
END_TEST

/* 1 when word appears in text with no letter on either side ("nan", not "Narayanan"). */
static int has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
        if ((p == text || !isalpha((unsigned char)p[-1])) && !isalpha((unsigned char)p[n]))
            return 1;
    return 0;
}

/* Every topic with each of its numeric options at the ends of its declared range: a result in
 * finite numbers, or a refusal with a message; never inf, nan or a key left out of the JSON. */
START_TEST(test_calc_range_corners)
{
    static const char *const base[] = {
        "zero --params 7B --dp 8", "allreduce --bytes 1M --ranks 8", "reduce_scatter --bytes 1M --ranks 8",
        "all_gather --bytes 1M --ranks 8", "all_to_all --bytes 1M --ranks 8", "tp --b 1 --s 2048 --h 4096 --t 4",
        "activation --s 2048 --b 1 --h 4096 --a 32", "bubble --pp 4 --mb 16", "flops --params 7B --tokens 1T",
        "mfu --flops 1e15 --time 1", "moe --tokens 4096 --experts 8 --topk 2 --cf 1.25 --hidden 4096",
        "plan --params 7B --layers 32 --hidden 4096 --heads 32 --seq 2048 --gbs 64 --gpus 8",
    };
    static char decls[8192], out[1 << 20];
    int runs = 0, ok = 0;
    for (size_t b = 0; b < sizeof base / sizeof base[0]; b++) {
        char args[256];
        snprintf(args, sizeof args, "calc %s %s", base[b], RL_OPTNUM_LIST_FLAG);
        ck_assert_int_eq(calc_run(args, decls, sizeof decls), 0);
        char *save = NULL;
        for (char *d = strtok_r(decls, "\n", &save); d; d = strtok_r(NULL, "\n", &save)) {
            char name[64], kind[16];
            double lim[2];
            ck_assert_int_eq(sscanf(d, "%63s %lf %lf %15s", name, &lim[0], &lim[1], kind), 4);
            if (lim[1] <= 0)
                continue;
            for (int k = 0; k < 2; k++)
                for (int json = 0; json < 2; json++) {
                    snprintf(args, sizeof args, "calc %s %s %.17g%s", base[b], name, lim[k], json ? " --json" : "");
                    int rc = calc_run(args, out, sizeof out);
                    runs++;
                    ck_assert_msg(rc == 0 || ((rc == 1 || rc == 2) && strstr(out, "ringlab calc")),
                                  "ringlab %s: exit %d without a message:\n%.1500s", args, rc, out);
                    ck_assert_msg(rc != 0 || (!has_word(out, "inf") && !has_word(out, "nan") && !has_word(out, "null")),
                                  "ringlab %s printed a number that is not finite:\n%.3000s", args, out);
                    ok += rc == 0;
                }
        }
    }
    ck_assert_int_ge(runs, 150);
    ck_assert_int_ge(ok, runs / 2);
}
END_TEST

Suite *calc_suite(void)
{
    Suite *s = suite_create("calc");
    TCase *f = tcase_create("formulas");
    tcase_add_test(f, test_zero_paper_example);
    tcase_add_test(f, test_zero_course_7b);
    tcase_add_test(f, test_coll_ring_tree);
    tcase_add_test(f, test_tp_70b_layer);
    tcase_add_test(f, test_activation_korthikanti);
    tcase_add_test(f, test_bubble);
    tcase_add_test(f, test_flops_mfu);
    tcase_add_test(f, test_moe);
    tcase_add_test(f, test_plan);
    tcase_add_test(f, test_plan_ties);
    tcase_add_test(f, test_parse_sizes);
    tcase_add_test(f, test_calc_range_corners);
    suite_add_tcase(s, f);
    TCase *acc = tcase_create("published-tables");
    tcase_add_test(acc, test_zero_paper_table_json);
    tcase_add_test(acc, test_coll_busbw_json);
    tcase_add_test(acc, test_activation_table_json);
    tcase_add_test(acc, test_bubble_table_json);
    suite_add_tcase(s, acc);
    TCase *cli = tcase_create("cli");
    tcase_add_test(cli, test_cli_errors);
    tcase_set_timeout(cli, 60);
    tcase_set_timeout(acc, 60);
    tcase_set_timeout(f, 60);
    suite_add_tcase(s, cli);
    return s;
}
