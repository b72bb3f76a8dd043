/* test_dist.c — one process per rank (docs/launch.md): the decision between threads and
 * processes (rl_dist_decide), the launcher variables of Open MPI / MPICH, the refusals seen
 * from the command line, per-rank trace names, the comm_split member rule, a world of three
 * processes on the emulated GPUs of the CUDA_FAKE build, and on a GPU machine a world of one
 * process (RANK=0 WORLD_SIZE=1) through NCCL. */
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "backend.h"
#include "bootstrap.h"
#include "ringlab.h"
#include "testutil.h"

static const char *const launcher_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
    "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK", "MPI_LOCALNRANKS",
};

static void unset_launcher_vars(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        unsetenv(launcher_vars[i]);
}

/* Runs `env VARS ringlab ARGS` (stderr with stdout, launcher variables of this process
 * removed); returns the exit status and the output. */
static int run_ringlab_env(const char *vars, const char *args, char *out, size_t size)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix,
             "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK "
             "-u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE %s", vars);
    return rl_test_run_ringlab(rl_test_build(), prefix, args, out, size);
}

/* ------------------------------------------------------------------ the decision */

START_TEST(test_decide_table)
{
#define SIM RL_BACKEND_SIM
#define CUDA RL_BACKEND_CUDA
#define AUTO RL_BACKEND_AUTO
    struct {
        rl_backend backend;
        int use_cuda, ngpus, env_found, rank, world, local, under_mpi, built_mpi, built_nccl;
        int rc, dist, by_mpi;
        const char *msg1, *msg2; /* the message must contain both ("" = no message) */
    } cases[] = {
        /* no launcher: threads, whatever the backend */
        { SIM, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, "", "" },
        { CUDA, 1, 4, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, "", "" },
        /* sim with a launcher of several processes: refused, with both ways out */
        { SIM, 0, 0, 1, 1, 2, 1, 0, 1, 1, RL_ERR_ARG, 0, 0, "process 1 of 2, but --backend sim",
          "start one process with --ranks 2, or use --backend cuda on GPUs" },
        { AUTO, 0, 0, 1, 0, 4, 0, 0, 1, 1, RL_ERR_ARG, 0, 0, "--backend auto found no GPU", "--ranks 4" },
        /* sim and WORLD_SIZE=1: ignored; unreadable variables: refused, not guessed at */
        { SIM, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, "", "" },
        { SIM, 0, 0, -1, 0, 0, 0, 0, 1, 1, RL_ERR_ARG, 0, 0, "WORLD_SIZE is not set", "unset RANK and WORLD_SIZE" },
        { SIM, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, "", "" },
        /* cuda under a launcher: this process runs one rank */
        { CUDA, 1, 2, 1, 1, 2, 1, 0, 1, 1, 0, 1, 0, "", "" },
        { AUTO, 1, 8, 1, 5, 16, 5, 0, 1, 1, 0, 1, 0, "", "" },
        { CUDA, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, "", "" },    /* RANK=0 WORLD_SIZE=1 explicitly */
        { CUDA, 1, 2, 1, 3, 4, 1, 1, 1, 1, 0, 1, 1, "", "" },    /* under mpirun in an MPI build */
        { CUDA, 1, 2, 1, 3, 4, 1, 1, 0, 1, 0, 1, 0, "", "" },    /* mpirun, no MPI build: the env path */
        /* cuda under a launcher: errors */
        { CUDA, 1, 2, 1, 2, 4, 2, 0, 1, 1, RL_ERR_ARG, 0, 0, "LOCAL_RANK=2", "sees 2 GPUs (0..1)" },
        { CUDA, 1, 1, 1, 1, 2, 1, 0, 1, 1, RL_ERR_ARG, 0, 0, "LOCAL_RANK=1", "CUDA_VISIBLE_DEVICES" },
        { CUDA, 1, 2, 1, 1, 2, 1, 0, 1, 0, RL_ERR_UNSUPPORTED, 0, 0, "no NCCL", "--ranks 2" },
        { CUDA, 1, 2, -1, 0, 0, 0, 0, 1, 1, RL_ERR_ARG, 0, 0, "WORLD_SIZE is not set", "" },
        { CUDA, 1, 2, 0, 0, 0, 0, 1, 0, 1, RL_ERR_ARG, 0, 0, "this build has no MPI", "RANK, WORLD_SIZE" },
        { CUDA, 1, 2, 0, 0, 0, 0, 1, 1, 1, RL_ERR_ARG, 0, 0, "MPI did not say", "mpirun -x" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_dist_facts f;
        rl_dist_plan plan;
        char msg[640];
        memset(&f, 0, sizeof f);
        f.backend = cases[i].backend;
        f.use_cuda = cases[i].use_cuda;
        f.ngpus = cases[i].ngpus;
        f.env_found = cases[i].env_found;
        f.env.rank = cases[i].rank;
        f.env.world_size = cases[i].world;
        f.env.local_rank = cases[i].local;
        snprintf(f.env.master_addr, sizeof f.env.master_addr, "node0");
        f.env.master_port = 29501;
        f.env_err = "WORLD_SIZE is not set: a multi-process run needs RANK and WORLD_SIZE";
        f.under_mpi = cases[i].under_mpi;
        f.built_mpi = cases[i].built_mpi;
        f.built_nccl = cases[i].built_nccl;
        int rc = rl_dist_decide(&f, &plan, msg, sizeof msg);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d, want %d (%s)", i, rc, cases[i].rc, msg);
        ck_assert_msg(plan.dist == cases[i].dist && plan.by_mpi == cases[i].by_mpi, "case %zu: dist %d by_mpi %d", i,
                      plan.dist, plan.by_mpi);
        if (!cases[i].msg1[0]) {
            ck_assert_msg(msg[0] == 0, "case %zu: unexpected message: %s", i, msg);
        } else {
            ck_assert_msg(strstr(msg, cases[i].msg1) && strstr(msg, cases[i].msg2), "case %zu: %s", i, msg);
            ck_assert_msg(!strchr(msg, '\n') && strncmp(msg, "ringlab:", 8) != 0, "case %zu: one line: %s", i, msg);
        }
        if (plan.dist) {
            ck_assert_int_eq(plan.env.rank, cases[i].rank);
            ck_assert_int_eq(plan.env.world_size, cases[i].world);
            ck_assert_int_eq(plan.env.local_rank, cases[i].local);
            ck_assert_str_eq(plan.env.master_addr, "node0");
        }
    }
#undef SIM
#undef CUDA
#undef AUTO
}
END_TEST

START_TEST(test_env_mpi_fallbacks)
{
    rl_dist_env e;
    char err[256];
    unset_launcher_vars();
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 1);
    ck_assert_int_eq(e.rank, 3);
    ck_assert_int_eq(e.world_size, 4);
    ck_assert_int_eq(e.local_rank, 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "9", 1); /* checked like LOCAL_RANK */
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "LOCAL_RANK='9'"), "%s", err);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("SLURM_PROCID", "0", 1); /* Slurm's variables come first */
    setenv("SLURM_NTASKS", "2", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 1);
    ck_assert_int_eq(e.world_size, 2);
    setenv("RANK", "5", 1); /* and torchrun's before them */
    setenv("WORLD_SIZE", "6", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 1);
    ck_assert_int_eq(e.rank, 5);
    ck_assert_int_eq(e.world_size, 6);
    unset_launcher_vars();
    setenv("PMI_RANK", "2", 1); /* MPICH / Intel MPI */
    setenv("PMI_SIZE", "3", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 1);
    ck_assert_int_eq(e.rank, 2);
    ck_assert_int_eq(e.world_size, 3);
    ck_assert_int_eq(e.local_rank, 2);
    unset_launcher_vars();
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 0);
}
END_TEST

/* ------------------------------------------------------------------ from the command line */

START_TEST(test_sim_refuses_world_of_processes)
{
    static char out[65536];
    const char *bench = "bench all_reduce --backend sim -b 8 -e 8 -n 1 -w 0";
    int st = run_ringlab_env("RANK=1 WORLD_SIZE=2", bench, out, sizeof out);
    ck_assert_msg(st == 2, "exit %d: %s", st, out);
    ck_assert_msg(strstr(out, "ringlab: RANK/WORLD_SIZE say this is process 1 of 2, but --backend sim runs every "
                              "rank as a thread of one process: start one process with --ranks 2, or use --backend "
                              "cuda on GPUs"), "%s", out);
    ck_assert_int_eq(rl_test_count(out, "ringlab:"), 1);
    ck_assert_ptr_null(strstr(out, "out-of-place")); /* nothing ran */
    /* Open MPI's variables say the same */
    st = run_ringlab_env("OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3", bench, out, sizeof out);
    ck_assert_msg(st == 2 && strstr(out, "process 0 of 3"), "exit %d: %s", st, out);
    /* a world of one process: the variables are ignored, the run goes ahead on threads */
    st = run_ringlab_env("RANK=0 WORLD_SIZE=1", "bench all_reduce --backend sim --ranks 2 -b 8 -e 8 -n 1 -w 0", out,
                         sizeof out);
    ck_assert_msg(st == 0 && strstr(out, "2 ranks, backend sim") && strstr(out, "out-of-place"), "exit %d: %s", st,
                  out);
}
END_TEST

START_TEST(test_cuda_under_launcher)
{
    static char out[65536];
    char why[320], vars[128];
    int ngpus = rl_backend_probe(why, sizeof why);
    if (ngpus < 1) {
        /* no driver: the same one line as without the variables, and a failure */
        int st = run_ringlab_env("RANK=0 WORLD_SIZE=2", "bench all_reduce --backend cuda -b 8 -e 8 -n 1 -w 0", out,
                                 sizeof out);
        ck_assert_msg(st != 0, "%s", out);
        ck_assert_int_eq(rl_test_count(out, "ringlab:"), 1);
        ck_assert_msg(strstr(out, "use --backend sim"), "%s", out);
        if (rl_backend_built_cuda())
            ck_assert_msg(strstr(out, "ringlab: no CUDA driver/GPU found; use --backend sim"), "%s", out);
        ck_assert_ptr_null(strstr(out, "out-of-place"));
        return;
    }
    /* a GPU machine: a LOCAL_RANK past the visible GPUs is refused before anything starts */
    snprintf(vars, sizeof vars, "RANK=%d WORLD_SIZE=%d LOCAL_RANK=%d", ngpus, ngpus + 1, ngpus);
    int st = run_ringlab_env(vars, "bench all_reduce --backend cuda -b 8 -e 8 -n 1 -w 0", out, sizeof out);
    ck_assert_msg(st == 2, "exit %d: %s", st, out);
    ck_assert_msg(strstr(out, "LOCAL_RANK=") && strstr(out, "CUDA_VISIBLE_DEVICES"), "%s", out);
}
END_TEST

/* Labs 29-31 need every rank in one process: rl_require_one_process lets them run on
 * threads and refuses (with the way out) only a process that holds one rank of many. */
START_TEST(test_require_one_process)
{
    rl_opts o;
    char why[320];
    rl_opts_init(&o);
    ck_assert_int_eq(rl_require_one_process(&o, "lab 29"), 0); /* no launcher: threads */
    setenv("RANK", "1", 1); /* (the test runs in its own process) */
    setenv("WORLD_SIZE", "2", 1);
    ck_assert_int_eq(rl_require_one_process(&o, "lab 29"), 0); /* sim: rl_launch says why it refuses */
    o.backend = RL_BACKEND_CUDA;
    setenv("LOCAL_RANK", "0", 1);
    int expect = rl_backend_probe(why, sizeof why) > 0 && rl_backend_built_nccl() ? RL_ERR_ARG : 0;
    ck_assert_int_eq(rl_require_one_process(&o, "lab 29"), expect);
}
END_TEST

START_TEST(test_trace_rank_path)
{
    char buf[256];
    ck_assert_str_eq(rl_trace_rank_path("run.json", 0, buf, sizeof buf), "run.json");
    ck_assert_str_eq(rl_trace_rank_path("run.json", 3, buf, sizeof buf), "run.rank3.json");
    ck_assert_str_eq(rl_trace_rank_path("/tmp/a.json.d/run.json", 12, buf, sizeof buf), "/tmp/a.json.d/run.rank12.json");
    ck_assert_str_eq(rl_trace_rank_path("trace", 1, buf, sizeof buf), "trace.rank1");
    ck_assert_str_eq(rl_trace_rank_path(".json", 2, buf, sizeof buf), ".rank2.json");
}
END_TEST

/* ------------------------------------------------------------------ comm_split's rule */

START_TEST(test_split_members)
{
    /* parent ranks 0..5: colors and keys; ties in key go by parent rank */
    const int colors[6] = { 0, 1, 0, 1, RL_COLOR_NONE, 0 };
    const int keys[6] = { 5, 0, 5, -1, 0, 1 };
    int members[6], nr;
    ck_assert_int_eq(rl_split_members(6, colors, keys, 0, members, &nr), 3);
    ck_assert_int_eq(members[0], 5);
    ck_assert_int_eq(members[1], 0);
    ck_assert_int_eq(members[2], 2);
    ck_assert_int_eq(nr, 1);
    ck_assert_int_eq(rl_split_members(6, colors, keys, 2, members, &nr), 3);
    ck_assert_int_eq(nr, 2);
    ck_assert_int_eq(rl_split_members(6, colors, keys, 1, members, &nr), 2);
    ck_assert_int_eq(members[0], 3);
    ck_assert_int_eq(members[1], 1);
    ck_assert_int_eq(nr, 1);
    ck_assert_int_eq(rl_split_members(6, colors, keys, 4, members, &nr), 0);
    ck_assert_int_eq(nr, -1);
}
END_TEST

/* The in-process split follows the same rule: each rank's new rank and group as predicted. */
static int split_rank_fn(rl_ctx *ctx, void *arg)
{
    const int colors[6] = { 0, 1, 0, 1, RL_COLOR_NONE, 0 }, keys[6] = { 5, 0, 5, -1, 0, 1 };
    int *got = arg, r = rl_rank(ctx), members[6], want;
    int m = rl_split_members(6, colors, keys, r, members, &want);
    rl_comm *c = rl_comm_split(rl_comm_world(ctx), colors[r], keys[r]);
    if (m == 0) {
        got[r] = c == NULL ? 1 : 0;
        return 0;
    }
    int ok = c && rl_comm_rank(c) == want && rl_comm_size(c) == m;
    for (int i = 0; ok && i < m; i++)
        ok = rl_comm_global_rank(c, i) == members[i];
    char name[32];
    snprintf(name, sizeof name, "world/0.%d", colors[r]);
    got[r] = ok && strcmp(rl_comm_name(c), name) == 0;
    return 0;
}

START_TEST(test_split_in_process_same_rule)
{
    int got[6] = { 0 };
    rl_opts o = rl_test_opts(6, NULL);
    ck_assert_int_eq(rl_launch(&o, split_rank_fn, got, NULL), 0);
    for (int r = 0; r < 6; r++)
        ck_assert_msg(got[r] == 1, "rank %d's split differs from rl_split_members", r);
}
END_TEST

/* ------------------------------------------------------------------ the check of the ranks' calls */

/* rl_comm_check_fingerprints on 4 ranks' fingerprints: agreement passes; a rank that differs
 * is named against the fingerprint most ranks share, rank 0 included. */
static int fingerprint_fn(rl_ctx *ctx, void *arg)
{
    char (*msgs)[300] = arg;
    if (rl_rank(ctx) != 0)
        return 0;
    rl_op_desc d = { .kind = RL_COLL_ALL_REDUCE, .comm = rl_comm_world(ctx), .seq = 7, .send_numel = 10,
                     .recv_numel = 10, .dtype = RL_F32, .op = RL_SUM };
    int64_t all[4 * RL_FINGERPRINT_LEN];
    for (int r = 0; r < 4; r++)
        rl_comm_fingerprint(&d, all + r * RL_FINGERPRINT_LEN);
    snprintf(msgs[0], 300, "%d", rl_comm_check_fingerprints(&d, all, msgs[0], 300));
    all[2 * RL_FINGERPRINT_LEN + 1] = 11; /* rank 2 claims 11 elements */
    rl_comm_check_fingerprints(&d, all, msgs[1], 300);
    all[2 * RL_FINGERPRINT_LEN + 1] = 10;
    all[0 * RL_FINGERPRINT_LEN + 2] = RL_BF16; /* rank 0 sends bf16 */
    rl_comm_check_fingerprints(&d, all, msgs[2], 300);
    return 0;
}

START_TEST(test_fingerprints_name_the_odd_rank)
{
    char msgs[3][300] = { "", "", "" };
    rl_opts o = rl_test_opts(4, NULL);
    ck_assert_int_eq(rl_launch(&o, fingerprint_fn, msgs, NULL), 0);
    ck_assert_str_eq(msgs[0], "0");
    ck_assert_str_eq(msgs[1], "collective mismatch: rank 2 called all_reduce(count=11, f32, sum) at seq 7 on world "
                              "but rank 0 called all_reduce(count=10, f32, sum)");
    ck_assert_str_eq(msgs[2], "collective mismatch: rank 0 called all_reduce(count=10, bf16, sum) at seq 7 on world "
                              "but rank 1 called all_reduce(count=10, f32, sum)");
}
END_TEST

/* ------------------------------------------------------------------ worlds of processes */

/* For a world of one process per rank (any size): barrier, all_reduce, comm_split (by parity
 * with the keys reversed, and without rank 0) and all_reduce on the new communicators; *ok
 * when every size, rank, name, value and counter is as predicted. */
static int dist_world_fn(rl_ctx *ctx, void *arg)
{
    int *ok = arg, n = rl_world_size(ctx), me = rl_rank(ctx), par = me % 2;
    rl_comm *world = rl_comm_world(ctx);
    if (!ctx->world->dist || !ctx->gpu)
        return 1;
    rl_barrier(world, 0);
    rl_tensor *t = rl_tensor_new_1d(ctx, "t", RL_F32, RL_MEM_COMM, 4);
    for (int i = 0; i < 4; i++)
        rl_tensor_set(t, i, (float)((i + 1) * (me + 1)));
    rl_all_reduce(world, t, t, RL_SUM, 0);
    rl_comm *half = rl_comm_split(world, par, -me);                          /* seq 2 */
    rl_comm *rest = rl_comm_split(world, me == 0 ? RL_COLOR_NONE : 3, me); /* seq 3 */
    int size = 0, rank = 0;
    float sum = 0;
    for (int q = par; q < n; q += 2) {
        size++;
        rank += q > me; /* keys -q: the highest rank comes first */
        sum += (float)(q + 1);
    }
    char name[32];
    snprintf(name, sizeof name, "world/2.%d", par);
    int good = half && rl_comm_size(half) == size && rl_comm_rank(half) == rank && !strcmp(rl_comm_name(half), name) &&
               (me == 0 ? !rest : rest && rl_comm_size(rest) == n - 1 && rl_comm_rank(rest) == me - 1 &&
                                      !strcmp(rl_comm_name(rest), "world/3.3"));
    rl_tensor *u = rl_tensor_new_1d(ctx, "u", RL_F32, RL_MEM_COMM, 1), *v = rl_tensor_new_1d(ctx, "v", RL_F32, RL_MEM_COMM, 1);
    rl_tensor_set(u, 0, (float)(me + 1));
    rl_tensor_set(v, 0, 1.0f);
    if (good) {
        rl_barrier(half, 0);
        rl_all_reduce(half, u, u, RL_SUM, 0);
        if (rest)
            rl_all_reduce(rest, v, v, RL_SUM, 0);
    }
    rl_barrier(world, 0);
    for (int i = 0; i < 4; i++)
        good = good && rl_tensor_get(t, i) == (float)((i + 1) * n * (n + 1) / 2);
    *ok = good && rl_tensor_get(u, 0) == sum && rl_tensor_get(v, 0) == (float)(rest ? n - 1 : 1) &&
          rl_comm_get_counters(world).calls[RL_COLL_BARRIER] == 2 &&
          rl_comm_get_counters(half).calls[RL_COLL_ALL_REDUCE] == 1;
    rl_tensor_free(t);
    rl_tensor_free(u);
    rl_tensor_free(v);
    return 0;
}

/* RL_TEST_CHILD=dist_world: this process is one rank of dist_world_fn's world (launcher
 * variables set by the parent); exit status 0 when every check held. */
int rl_test_child_dist_world(void)
{
    int ok = 0;
    rl_opts o = rl_test_opts(1, NULL);
    o.backend = RL_BACKEND_CUDA;
    int st = rl_launch(&o, dist_world_fn, &ok, NULL);
    if (st || !ok)
        fprintf(stderr, "rank %s: rl_launch %d, checks %s\n", getenv("RANK"), st, ok ? "held" : "failed");
    return st || !ok;
}

/* Runs n processes of `VARS FAKE/PROG` from the CUDA_FAKE build, one rank each on emulated
 * GPUs (launcher variables set, one port); each one's exit status into rcs[] and the outputs
 * of all, rank by rank after a line "== rank R: exit S", into out. */
static void run_processes(const char *fake, int n, const char *vars, const char *prog, int *rcs, char *out,
                          size_t size)
{
    char cmd[2048];
    int port = rl_test_free_port(), pid = (int)getpid();
    snprintf(cmd, sizeof cmd,
             "for r in $(seq 0 %d); do (env -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID %s RL_FAKE_GPUS=%d RANK=$r "
             "WORLD_SIZE=%d LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=%d timeout 60 %s/%s "
             ">/tmp/rl_dist_%d_$r.log 2>&1; echo $? >/tmp/rl_dist_%d_$r.rc) & done; wait",
             n - 1, vars, n, n, port, fake, prog, pid, pid);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "for r in $(seq 0 %d); do echo \"== rank $r: exit $(cat /tmp/rl_dist_%d_$r.rc)\"; "
             "cat /tmp/rl_dist_%d_$r.log; rm -f /tmp/rl_dist_%d_$r.*; done", n - 1, pid, pid, pid);
    rl_test_run_cmd(cmd, out, size);
    for (int r = 0; r < n; r++) {
        char tag[32];
        snprintf(tag, sizeof tag, "== rank %d: exit ", r);
        const char *p = strstr(out, tag);
        rcs[r] = p ? atoi(p + strlen(tag)) : -1;
    }
}

/* Three processes, one rank each, on the emulated GPUs and NCCL of the CUDA_FAKE build (its
 * test binary as the child): the TCP unique-id exchange, NCCL across processes, barrier and
 * comm_split across processes (dist mode's all-gather of colors and keys). */
START_TEST(test_dist_processes_on_emulated_gpus)
{
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD");
    char bin[512], out[4096];
    snprintf(bin, sizeof bin, "%s/tests/run_tests", fake ? fake : "");
    if (!fake || access(bin, X_OK))
        return; /* (only make test-unit builds it) */
    int n = 3, rcs[3];
    run_processes(fake, n, "RL_TEST_CHILD=dist_world", "tests/run_tests", rcs, out, sizeof out);
    ck_assert_msg(rl_test_count(out, ": exit 0\n") == n, "%d processes, one rank each:\n%s", n, out);
}
END_TEST

/* Lab 28 (reference solution) as four processes on the emulated GPUs: every process trains
 * its rank and the ranks' shard losses average to the one-process (sim) run's loss; with a
 * hang injected, every process ends within the watchdog's limit with a report (the hung one
 * says so), none is left hanging; with a wrong count, every process stops on the check. */
START_TEST(test_dist_lab28_on_emulated_gpus)
{
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD");
    char lab[512];
    snprintf(lab, sizeof lab, "%s/solutions/28_ddp/run", fake ? fake : "");
    if (!fake || access(lab, X_OK))
        return; /* (only make test-unit builds it) */
    static char out[1 << 17], sim[1 << 17];
    int rcs[4];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/solutions/28_ddp/run --ranks 4 --steps 3 --seed 1 2>&1", rl_test_build());
    ck_assert_int_eq(rl_test_run_cmd(cmd, sim, sizeof sim), 0);
    double want = 0, sum = 0, loss;
    const char *p = strstr(sim, "\nLoss ");
    ck_assert_msg(p && sscanf(p, "\nLoss %lf", &want) == 1, "%s", sim);
    run_processes(fake, 4, "", "solutions/28_ddp/run --steps 3 --seed 1 --backend cuda", rcs, out, sizeof out);
    for (int r = 0; r < 4; r++) {
        ck_assert_msg(rcs[r] == 0, "rank %d: exit %d\n%s", r, rcs[r], out);
        char tag[32];
        snprintf(tag, sizeof tag, "== rank %d: exit", r);
        const char *q = strstr(out, tag);
        const char *l = r == 0 ? strstr(q, "\nLoss ") : strstr(q, "loss of this rank's shard ");
        ck_assert_msg(l && sscanf(l, r == 0 ? "\nLoss %lf" : "loss of this rank's shard %lf", &loss) == 1,
                      "rank %d printed no loss:\n%s", r, out);
        sum += loss;
    }
    ck_assert_msg(fabs(sum / 4 - want) < 2e-5, "mean of the shard losses %.5f, one-process run %.5f\n%s", sum / 4, want,
                  out);
    ck_assert_msg(strstr(out, "process for rank 3 of 4") && strstr(out, "collectives through NCCL"), "%s", out);
    run_processes(fake, 4, "", "solutions/28_ddp/run --steps 2 --fault hang:rank=1:seq=3 --timeout 3 --backend cuda",
                  rcs, out, sizeof out);
    for (int r = 0; r < 4; r++)
        ck_assert_msg(rcs[r] == 3, "rank %d: exit %d (3: the watchdog)\n%s", r, rcs[r], out);
    ck_assert_msg(strstr(out, "rank 1: --fault hang: this rank never entered collective seq 3 on world") &&
                      strstr(out, "verdict: rank 2: all_reduce seq 3 on world started"),
                  "%s", out);
    /* a wrong count: NCCL does not compare calls, so each collective is checked first across
     * processes (an all-gather of fingerprints); every process stops with the same message */
    run_processes(fake, 4, "",
                  "solutions/28_ddp/run --steps 2 --fault mismatch:rank=2:seq=3 --timeout 5 --backend cuda", rcs, out,
                  sizeof out);
    for (int r = 0; r < 4; r++)
        ck_assert_msg(rcs[r] == 4, "rank %d: exit %d (4: a mismatch)\n%s", r, rcs[r], out);
    ck_assert_msg(rl_test_count(out, "each collective is checked first") == 4 &&
                      rl_test_count(out, "verdict: collective mismatch: rank 2 called all_reduce(count=1052161, f32, "
                                         "sum) at seq 3 on world but rank 0 called all_reduce(count=1052160") == 4,
                  "%s", out);
}
END_TEST

START_TEST(test_dist_world_of_one_on_gpu)
{
    char why[320], port[16], path[64];
    if (rl_backend_probe(why, sizeof why) < 1 || !rl_backend_built_nccl())
        return; /* needs a GPU (docs/launch.md says what ran where) */
    unset_launcher_vars();
    snprintf(port, sizeof port, "%d", rl_test_free_port());
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("MASTER_PORT", port, 1);
    snprintf(path, sizeof path, "/tmp/rl_dist_%d.json", (int)getpid());
    int ok = 0;
    rl_opts o = rl_test_opts(1, NULL);
    o.backend = RL_BACKEND_CUDA;
    o.trace_path = path;
    ck_assert_int_eq(rl_launch(&o, dist_world_fn, &ok, NULL), 0);
    ck_assert_msg(ok, "collectives of the world of one process");
    ck_assert_int_eq(access(path, R_OK), 0); /* rank 0 writes the path itself */
    unlink(path);
    unset_launcher_vars();
}
END_TEST

Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("dist");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_decide_table);
    tcase_add_test(tc, test_env_mpi_fallbacks);
    tcase_add_test(tc, test_sim_refuses_world_of_processes);
    tcase_add_test(tc, test_cuda_under_launcher);
    tcase_add_test(tc, test_trace_rank_path);
    tcase_add_test(tc, test_require_one_process);
    tcase_add_test(tc, test_split_members);
    tcase_add_test(tc, test_split_in_process_same_rule);
    tcase_add_test(tc, test_fingerprints_name_the_odd_rank);
    tcase_add_test(tc, test_dist_world_of_one_on_gpu);
    tcase_add_test(tc, test_dist_processes_on_emulated_gpus);
    tcase_add_test(tc, test_dist_lab28_on_emulated_gpus);
    suite_add_tcase(s, tc);
    return s;
}
