/* test_diagnose.c — failure analyses (common/diagnose.c): stragglers and hot experts on the
 * course's data, flight dumps written by real watchdog runs (hang, ungrouped p2p) and a
 * mismatch dump, the rules over several communicators and rolled-out recorders (in-memory
 * dumps), spikes and NaNs over per-(step, rank, layer) norms, including a run with the nan
 * fault. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diagnose.h"
#include "testutil.h"

START_TEST(test_course_step_times)
{
    /* 32 ranks near 2200 ms, rank 17 at 3150 ms */
    double ms[32];
    for (int r = 0; r < 32; r++)
        ms[r] = 2200 + ((r * 37) % 61) - 30;
    ms[17] = 3150;
    rl_diag_spread s;
    char err[256];
    ck_assert_int_eq(rl_diag_straggler(ms, 32, NULL, &s, err, sizeof err), RL_OK);
    ck_assert_int_eq(s.culprit, 17);
    ck_assert_int_eq(s.noutliers, 1);
    /* the CV / max-min limits alone would not flag it: cv ≈ 0.07, max/min ≈ 1.45 */
    ck_assert_int_eq(s.imbalanced, 0);
    ck_assert(s.cv < 0.1 && s.ratio < 1.5);
    ck_assert_msg(strstr(s.message, "rank 17") && strstr(s.message, "3150"), "%s", s.message);
    /* balanced ranks: nobody */
    for (int r = 0; r < 32; r++)
        ms[r] = 2200;
    ck_assert_int_eq(rl_diag_straggler(ms, 32, NULL, &s, err, sizeof err), RL_OK);
    ck_assert_int_eq(s.culprit, -1);
    ck_assert_ptr_nonnull(strstr(s.message, "no straggler"));
    /* the course's 1023 ranks at 20 ms and one at 80 ms: flagged by max/min > 3 too */
    static double big[1024];
    for (int r = 0; r < 1024; r++)
        big[r] = 20;
    big[512] = 80;
    ck_assert_int_eq(rl_diag_straggler(big, 1024, NULL, &s, err, sizeof err), RL_OK);
    ck_assert(s.culprit == 512 && s.imbalanced && fabs(s.ratio - 4) < 1e-12);
    ck_assert_int_eq(rl_diag_straggler(ms, 0, NULL, &s, err, sizeof err), RL_ERR_ARG);
    ms[3] = NAN;
    ck_assert_int_eq(rl_diag_straggler(ms, 32, NULL, &s, err, sizeof err), RL_ERR_ARG);
}
END_TEST

START_TEST(test_course_expert_hits)
{
    double hits[8] = { 950, 1020, 890, 3200, 450, 910, 880, 520 };
    rl_diag_spread s;
    ck_assert_int_eq(rl_diag_spread_of(hits, 8, NULL, &s, NULL, 0), RL_OK);
    double mean = 8820 / 8.0, ss = 0;
    for (int i = 0; i < 8; i++)
        ss += (hits[i] - mean) * (hits[i] - mean);
    ck_assert(fabs(s.mean - 1102.5) < 1e-9);
    ck_assert(fabs(s.cv - sqrt(ss / 8) / mean) < 1e-12); /* ≈ 0.74 > 0.4 */
    ck_assert(fabs(s.ratio - 3200.0 / 450) < 1e-12);     /* ≈ 7.1 > 3 */
    ck_assert_int_eq(s.imbalanced, 1);
    ck_assert_int_eq(s.culprit, 3);
    ck_assert_int_eq(s.argmin, 4);
}
END_TEST

static int hang_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_tensor *t = rl_tensor_new_1d(ctx, "g", RL_F32, RL_MEM_GRAD, 256);
    for (int i = 0; i < 6; i++)
        rl_wait(rl_all_reduce(rl_comm_world(ctx), t, t, RL_SUM, 0));
    return 0;
}

static int p2p_rank(rl_ctx *ctx, void *arg)
{
    (void)arg;
    rl_comm *w = rl_comm_world(ctx);
    int r = rl_rank(ctx), n = rl_world_size(ctx);
    rl_tensor *a = rl_tensor_new_1d(ctx, "a", RL_F32, RL_MEM_COMM, 8);
    rl_wait(rl_all_reduce(w, a, a, RL_SUM, 0));
    rl_send(w, a, (r + 1) % n, 0);
    rl_recv(w, a, (r + n - 1) % n, 0);
    return 0;
}

/* Runs fn under a fault with a 1 s watchdog and --trace; loads the flight dump. */
static void dump_of(rl_rank_fn fn, int n, const char *fault, rl_diag_flight *fl)
{
    rl_opts o = rl_test_opts(n, NULL);
    o.timeout_s = 1.0;
    char err[256], trace[96], flight[128];
    if (fault) {
        ck_assert_int_eq(rl_fault_parse(fault, &o.faults[0], err, sizeof err), 0);
        o.nfaults = 1;
    }
    snprintf(trace, sizeof trace, "/tmp/rl_diag_%d_%s.json", (int)getpid(), fault ? "hang" : "p2p");
    snprintf(flight, sizeof flight, "%s.flight.json", trace);
    o.trace_path = trace;
    fflush(stderr);
    int save = dup(2), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2); /* the watchdog's report */
    int rc = rl_launch(&o, fn, NULL, NULL);
    fflush(stderr);
    dup2(save, 2);
    close(save);
    close(devnull);
    ck_assert_int_eq(rc, RL_ERR_HANG);
    memset(fl, 0, sizeof *fl);
    ck_assert_msg(rl_diag_flight_load(flight, fl, err, sizeof err) == RL_OK, "%s", err);
    unlink(flight);
    unlink(trace);
}

START_TEST(test_real_hang_dump)
{
    rl_diag_flight fl;
    dump_of(hang_rank, 4, "hang:rank=2:seq=3", &fl);
    ck_assert_int_eq(fl.nranks, 4);
    ck_assert_ptr_nonnull(strstr(fl.verdict, "never called it"));
    rl_diag_result r;
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_HANG);
    ck_assert_int_eq(r.rank, 2);
    ck_assert_int_eq(r.seq, 3);
    ck_assert_str_eq(r.comm, "world");
    ck_assert_str_eq(r.op, "all_reduce");
    ck_assert_msg(strstr(r.message, "rank 2 never called all_reduce (its last seq there: 2) while 3 ranks wait"), "%s",
                  r.message);
    rl_diag_flight_free(&fl);
}
END_TEST

START_TEST(test_real_p2p_dump)
{
    rl_diag_flight fl;
    dump_of(p2p_rank, 3, NULL, &fl);
    rl_diag_result r;
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_P2P);
    ck_assert_str_eq(r.op, "send");
    ck_assert_ptr_nonnull(strstr(r.message, "never posted the matching recv"));
    rl_diag_flight_free(&fl);
}
END_TEST

/* A dump in flight.c's format where rank `bad` called another op/count at seq 5. */
static void write_mismatch_dump(const char *path, int n, int bad)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"ranks\": [");
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s{\"rank\": %d, \"records\": [", r ? "," : "", r);
        for (int s = 0; s <= 5; s++) {
            int odd = r == bad && s == 5;
            fprintf(f, "%s{\"seq\": %d, \"p2p_seq\": -1, \"op\": \"%s\", \"count\": %d, \"dtype\": \"f32\", \"peer\": -1, "
                       "\"comm\": \"world\", \"state\": \"%s\", \"t_enqueued\": %g, \"t_started\": 0, \"t_completed\": 0}",
                    s ? "," : "", s, odd ? "all_gather" : "all_reduce", odd ? 2048 : 1024, s < 5 ? "completed" : "started",
                    0.1 * s + 0.01 * r);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "], \"verdict\": \"synthetic\"}\n");
    fclose(f);
}

START_TEST(test_mismatch_dump)
{
    char path[96], err[256];
    snprintf(path, sizeof path, "/tmp/rl_diag_mm_%d.json", (int)getpid());
    write_mismatch_dump(path, 4, 1);
    rl_diag_flight fl = { 0 };
    ck_assert_int_eq(rl_diag_flight_load(path, &fl, err, sizeof err), RL_OK);
    rl_diag_result r;
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_MISMATCH);
    ck_assert_int_eq(r.rank, 1);
    ck_assert_int_eq(r.seq, 5);
    ck_assert_msg(strstr(r.message, "rank 1 called all_gather(count=2048, f32) but 3 ranks called all_reduce(count=1024"),
                  "%s", r.message);
    rl_diag_flight_free(&fl);
    /* two dumps merge (one per process) */
    memset(&fl, 0, sizeof fl);
    ck_assert_int_eq(rl_diag_flight_load(path, &fl, err, sizeof err), RL_OK);
    write_mismatch_dump(path, 4, 3);
    ck_assert_int_eq(rl_diag_flight_load(path, &fl, err, sizeof err), RL_OK);
    ck_assert_int_eq(fl.nrec, 2 * 4 * 6);
    rl_diag_flight_free(&fl);
    unlink(path);
    /* errors */
    ck_assert_int_eq(rl_diag_flight_load("/nonexistent/x.flight.json", &fl, err, sizeof err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "cannot read the flight dump"));
    FILE *f = fopen(path, "w");
    fputs("{\"other\": 1}", f);
    fclose(f);
    ck_assert_int_eq(rl_diag_flight_load(path, &fl, err, sizeof err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "not a flight dump"));
    unlink(path);
    rl_diag_flight_free(&fl);
    memset(&fl, 0, sizeof fl);
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_NONE);
}
END_TEST

START_TEST(test_spikes)
{
    enum { S = 10, R = 4, L = 3 };
    double n[S * R * L];
    for (int s = 0; s < S; s++)
        for (int r = 0; r < R; r++)
            for (int l = 0; l < L; l++)
                n[(s * R + r) * L + l] = 1.0 + 0.1 * l + 0.01 * ((s * 7 + r * 3) % 5);
    rl_diag_spike sp;
    char err[256];
    ck_assert_int_eq(rl_diag_spike_find(n, S, R, L, NULL, &sp, err, sizeof err), RL_OK);
    ck_assert_int_eq(sp.found, 0);
    /* 4× is inside the range, 8× is a spike */
    n[(4 * R + 1) * L + 0] = 4.0;
    ck_assert_int_eq(rl_diag_spike_find(n, S, R, L, NULL, &sp, err, sizeof err), RL_OK);
    ck_assert_int_eq(sp.found, 0);
    n[(4 * R + 1) * L + 0] = 8.0;
    ck_assert_int_eq(rl_diag_spike_find(n, S, R, L, NULL, &sp, err, sizeof err), RL_OK);
    ck_assert(sp.found && !sp.nonfinite && sp.step == 4 && sp.rank == 1 && sp.layer == 0);
    n[(4 * R + 1) * L + 0] = 1.0;
    /* a NaN at (step 6, rank 2, layer 1) spreading to later layers and, from step 7, to everyone */
    for (int s = 6; s < S; s++)
        for (int r = 0; r < R; r++)
            for (int l = 0; l < L; l++)
                if (s > 6 || (r == 2 && l >= 1))
                    n[(s * R + r) * L + l] = NAN;
    ck_assert_int_eq(rl_diag_spike_find(n, S, R, L, NULL, &sp, err, sizeof err), RL_OK);
    ck_assert(sp.found && sp.nonfinite && sp.step == 6 && sp.rank == 2 && sp.layer == 1);
    ck_assert_msg(strstr(sp.message, "step 6, rank 2, layer 1"), "%s", sp.message);
    /* gradient norms: backward meets the last layer first */
    rl_diag_spike_cfg g = { .reverse_layers = 1 };
    ck_assert_int_eq(rl_diag_spike_find(n, S, R, L, &g, &sp, err, sizeof err), RL_OK);
    ck_assert(sp.step == 6 && sp.rank == 2 && sp.layer == 2);
    ck_assert_int_eq(rl_diag_spike_find(NULL, S, R, L, NULL, &sp, err, sizeof err), RL_ERR_ARG);
}
END_TEST

/* The nan fault end to end: each rank runs 3 "layers" for 6 steps, asks the runtime whether
 * to inject a NaN, propagates it forward, and records its activation norms. */
enum { NS = 6, NR = 2, NL = 3 };
static int nan_rank(rl_ctx *ctx, void *arg)
{
    double *norms = arg;
    int r = rl_rank(ctx);
    for (int s = 0; s < NS; s++) {
        double x = 1.0 + 0.1 * r;
        for (int l = 0; l < NL; l++) {
            if (rl_fault_nan_due(ctx, s, l))
                x = NAN;
            x = x * 1.01 + 0.05; /* the layer */
            norms[(s * NR + r) * NL + l] = fabs(x);
        }
    }
    return 0;
}

START_TEST(test_nan_fault_run)
{
    static double norms[NS * NR * NL];
    rl_opts o = rl_test_opts(NR, NULL);
    char err[256];
    ck_assert_int_eq(rl_fault_parse("nan:rank=1:step=3:layer=1", &o.faults[0], err, sizeof err), 0);
    o.nfaults = 1;
    ck_assert_int_eq(rl_launch(&o, nan_rank, norms, NULL), 0);
    rl_diag_spike sp;
    ck_assert_int_eq(rl_diag_spike_find(norms, NS, NR, NL, NULL, &sp, err, sizeof err), RL_OK);
    ck_assert(sp.found && sp.nonfinite && sp.step == 3 && sp.rank == 1 && sp.layer == 1);
}
END_TEST

/* Appends one record to an in-memory dump (rec must have room). */
static void rec_add(rl_diag_flight *fl, int rank, const char *comm, int64_t seq, int64_t count, const char *dtype,
                    const char *state, double t)
{
    rl_diag_rec *r = &fl->rec[fl->nrec++];
    memset(r, 0, sizeof *r);
    r->rank = rank, r->seq = seq, r->p2p_seq = -1, r->count = count, r->peer = -1, r->t_enqueued = t;
    snprintf(r->op, sizeof r->op, "%s", seq >= 0 ? "all_reduce" : "send");
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    snprintf(r->comm, sizeof r->comm, "%s", comm);
    snprintf(r->state, sizeof r->state, "%s", state);
    if (rank + 1 > fl->nranks)
        fl->nranks = rank + 1;
}

/* Bad dumps are refused or ignored, never a crash, a hang or gigabytes: a record of rank -1
 * (ignored), seqs 0 and 10^18 (the seqs between are not walked), nranks 3·10^8 (refused); the
 * loader refuses ranks outside 0..4095, one that wraps from 64 bits, and a seq below -1. */
START_TEST(test_bad_dumps)
{
    rl_diag_rec buf[16];
    rl_diag_flight fl;
    rl_diag_result r;
    memset(&fl, 0, sizeof fl);
    fl.rec = buf;
    rec_add(&fl, 0, "world", 0, 8, "f32", "completed", 0.1);
    rec_add(&fl, 1, "world", 0, 8, "f32", "completed", 0.1);
    rec_add(&fl, 0, "world", 1000000000000000000LL, 8, "f32", "started", 0.2);
    fl.rec[fl.nrec] = fl.rec[0];
    fl.rec[fl.nrec++].rank = -1;
    time_t t0 = time(NULL);
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_msg(time(NULL) - t0 <= 2, "a gap of 10^18 seqs took %ld s", (long)(time(NULL) - t0));
    ck_assert_int_eq(r.kind, RL_DIAG_HANG);
    ck_assert_int_eq(r.rank, 1);
    fl.nranks = 300000000;
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_ERR_ARG);
    static const char *const dumps[] = {
        "{\"ranks\": [{\"rank\": -1, \"records\": []}]}",
        "{\"ranks\": [{\"rank\": 300000000, \"records\": []}]}",
        "{\"ranks\": [{\"rank\": 4294967296, \"records\": []}]}",
        "{\"ranks\": [{\"rank\": 0, \"records\": [{\"seq\": -7, \"op\": \"all_reduce\", \"comm\": \"world\"}]}]}",
    };
    static const char *const why[] = { "rank -1, outside 0..4095", "rank 300000000, outside", "rank 4294967296, outside",
                                       "has seq -7" };
    char path[64], err[256];
    snprintf(path, sizeof path, "/tmp/rl_bad_dump_%d.json", (int)getpid());
    for (int k = 0; k < 4; k++) {
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(dumps[k], f);
        fclose(f);
        rl_diag_flight lf;
        memset(&lf, 0, sizeof lf);
        ck_assert_int_eq(rl_diag_flight_load(path, &lf, err, sizeof err), RL_ERR_ARG);
        ck_assert_msg(strstr(err, why[k]), "dump %d: %s", k, err);
        rl_diag_flight_free(&lf);
    }
    unlink(path);
}
END_TEST

/* Lab 31's `--part diagnose` diagnoses its own run's flight records: with --trace FILE it
 * writes FILE.flight.json and names the hung rank; when the run fails and leaves no records
 * (a folder that does not exist) it says so and exits 1, never reading an earlier dump. */
START_TEST(test_lab31_diagnose_reads_its_own_dump)
{
    char dir[] = "/tmp/rl_diag31_XXXXXX", cmd[1024], dump[256];
    static char out[1 << 16];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(dump, sizeof dump, "%s/t.json.flight.json", dir);
    FILE *f = fopen(dump, "w"); /* an earlier run's dump, which names another rank */
    ck_assert_ptr_nonnull(f);
    fputs("{\"records\": []}\n", f);
    fclose(f);
    static const char *const traces[] = { "%s/t.json", "%s/missing/t.json" };
    for (int k = 0; k < 2; k++) {
        char trace[256];
        snprintf(trace, sizeof trace, traces[k], dir);
        snprintf(cmd, sizeof cmd, "%s/solutions/31_3d_moe_debug/run --ranks 4 --part diagnose "
                 "--fault hang:rank=2:seq=7 --timeout 0.5 --trace %s 2>&1", rl_test_build(), trace);
        int st = rl_test_run_cmd(cmd, out, sizeof out);
        if (k == 0)
            ck_assert_msg(st == 0 && strstr(out, "diagnose(): hang at seq 7 on world: rank 2 never called"),
                          "%s: exit %d\n%s", cmd, st, out);
        else
            ck_assert_msg(st != 0 && strstr(out, "left no flight records to diagnose") && !strstr(out, "diagnose():"),
                          "%s: exit %d\n%s", cmd, st, out);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Two sub-communicators of 2 ranks, "world/4.0" (ranks 0, 1) and "world/4.5" (ranks 2, 3):
 * on A a hang at seq 3 (rank 1 missing) first enqueued at ta, on B at seq 2 either a hang
 * (rank 3 missing) or a dtype mismatch by rank 3, first enqueued at tb. Records reversed
 * when rev is set (the order of records must not matter). */
static void two_comms(rl_diag_flight *fl, rl_diag_rec *buf, double ta, double tb, int b_mismatch, int rev)
{
    memset(fl, 0, sizeof *fl);
    fl->rec = buf;
    for (int s = 0; s <= 3; s++) {
        rec_add(fl, 0, "world/4.0", s, 8, "f32", s < 3 ? "completed" : "started", s < 3 ? 0.01 * s : ta);
        if (s < 3)
            rec_add(fl, 1, "world/4.0", s, 8, "f32", "completed", 0.01 * s);
    }
    for (int s = 0; s <= 2; s++) {
        rec_add(fl, 2, "world/4.5", s, 8, "f32", s < 2 ? "completed" : "started", s < 2 ? 0.01 * s : tb);
        if (s < 2 || b_mismatch)
            rec_add(fl, 3, "world/4.5", s, 8, s == 2 ? "bf16" : "f32", s < 2 ? "completed" : "started",
                    s < 2 ? 0.01 * s : tb);
    }
    for (int i = 0; rev && i < fl->nrec / 2; i++) {
        rl_diag_rec x = fl->rec[i];
        fl->rec[i] = fl->rec[fl->nrec - 1 - i];
        fl->rec[fl->nrec - 1 - i] = x;
    }
}

START_TEST(test_rules_across_comms)
{
    rl_diag_rec buf[64];
    rl_diag_flight fl;
    rl_diag_result r;
    for (int rev = 0; rev < 2; rev++) {
        /* time first: A's hang is earlier than B's mismatch */
        two_comms(&fl, buf, 1.0, 2.0, 1, rev);
        ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
        ck_assert_int_eq(r.kind, RL_DIAG_HANG);
        ck_assert_int_eq(r.rank, 1);
        ck_assert_str_eq(r.comm, "world/4.0");
        /* B earlier */
        two_comms(&fl, buf, 2.0, 1.0, 0, rev);
        ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
        ck_assert_int_eq(r.kind, RL_DIAG_HANG);
        ck_assert_int_eq(r.rank, 3);
        ck_assert_int_eq(r.seq, 2);
        /* equal times: the mismatch (dtype differs) */
        two_comms(&fl, buf, 1.0, 1.0, 1, rev);
        ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
        ck_assert_int_eq(r.kind, RL_DIAG_MISMATCH);
        ck_assert_int_eq(r.rank, 3); /* a 1-1 tie: the majority is rank 2's call, rank 3 differs */
        ck_assert_str_eq(r.comm, "world/4.5");
        ck_assert_ptr_nonnull(strstr(r.message, "bf16"));
        /* equal times, both hangs: the name that sorts first */
        two_comms(&fl, buf, 1.0, 1.0, 0, rev);
        ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
        ck_assert_int_eq(r.kind, RL_DIAG_HANG);
        ck_assert_str_eq(r.comm, "world/4.0");
    }
}
END_TEST

START_TEST(test_rules_rolled_and_p2p)
{
    rl_diag_rec buf[64];
    rl_diag_flight fl;
    rl_diag_result r;
    /* world, 3 ranks: rank 2's records start at seq 5 (older ones rolled out), ranks 0 and 1 hold
     * 3..6, rank 1 never called 7 while 0 and 2 wait in it */
    memset(&fl, 0, sizeof fl);
    fl.rec = buf;
    for (int s = 3; s <= 7; s++) {
        rec_add(&fl, 0, "world", s, 8, "f32", s < 7 ? "completed" : "started", 0.1 * s);
        if (s < 7)
            rec_add(&fl, 1, "world", s, 8, "f32", "completed", 0.1 * s);
        if (s >= 5)
            rec_add(&fl, 2, "world", s, 8, "f32", s < 7 ? "completed" : "started", 0.1 * s);
    }
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_HANG);
    ck_assert_int_eq(r.rank, 1);
    ck_assert_int_eq(r.seq, 7);
    /* only p2p stuck: the lowest blocked rank, its oldest call (records in any order) */
    memset(&fl, 0, sizeof fl);
    fl.rec = buf;
    rec_add(&fl, 3, "world", -1, 8, "f32", "started", 0.5);
    rec_add(&fl, 1, "world", -1, 8, "f32", "started", 0.9);
    rec_add(&fl, 1, "world", -1, 8, "f32", "started", 0.7);
    rec_add(&fl, 0, "world", -1, 8, "f32", "completed", 0.1);
    fl.rec[0].p2p_seq = 4, fl.rec[1].p2p_seq = 6, fl.rec[2].p2p_seq = 5, fl.rec[3].p2p_seq = 1;
    ck_assert_int_eq(rl_diag_flight_analyze(&fl, &r), RL_OK);
    ck_assert_int_eq(r.kind, RL_DIAG_P2P);
    ck_assert_int_eq(r.rank, 1);
    ck_assert_int_eq(r.seq, 5);
}
END_TEST

Suite *diagnose_suite(void)
{
    Suite *s = suite_create("diagnose");
    TCase *tc = tcase_create("diagnose");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_course_step_times);
    tcase_add_test(tc, test_course_expert_hits);
    tcase_add_test(tc, test_real_hang_dump);
    tcase_add_test(tc, test_real_p2p_dump);
    tcase_add_test(tc, test_mismatch_dump);
    tcase_add_test(tc, test_spikes);
    tcase_add_test(tc, test_nan_fault_run);
    tcase_add_test(tc, test_rules_across_comms);
    tcase_add_test(tc, test_rules_rolled_and_p2p);
    tcase_add_test(tc, test_lab31_diagnose_reads_its_own_dump);
    tcase_add_test(tc, test_bad_dumps);
    suite_add_tcase(s, tc);
    return s;
}
