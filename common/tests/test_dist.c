/* test_dist.c — one process per rank (docs/launch.md): the decision between threads and
 * processes (rl_dist_decide), the launcher variables of Open MPI / MPICH, the refusals seen
 * from the command line, per-rank trace names, the comm_split member rule, and on a GPU
 * machine a world of one process (RANK=0 WORLD_SIZE=1) through NCCL. */
#include <check.h>
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
        /* sim and WORLD_SIZE=1, or unreadable variables: ignored */
        { SIM, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, "", "" },
        { SIM, 0, 0, -1, 0, 0, 0, 0, 1, 1, 0, 0, 0, "", "" },
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

/* ------------------------------------------------------------------ a GPU machine: a world of one process */


/* barrier, all_reduce, comm_split (into one group and into none) and a collective on the split. */
static int dist_one_fn(rl_ctx *ctx, void *arg)
{
    int *ok = arg;
    rl_comm *world = rl_comm_world(ctx);
    if (rl_world_size(ctx) != 1 || rl_rank(ctx) != 0 || !ctx->world->dist || !ctx->gpu)
        return 1;
    rl_barrier(world, 0);
    rl_tensor *t = rl_tensor_new_1d(ctx, "t", RL_F32, RL_MEM_COMM, 4);
    for (int i = 0; i < 4; i++)
        rl_tensor_set(t, i, (float)(i + 1));
    rl_all_reduce(world, t, t, RL_SUM, 0);
    rl_comm *sub = rl_comm_split(world, 7, 0);
    rl_comm *none = rl_comm_split(world, RL_COLOR_NONE, 0);
    if (!sub || none || rl_comm_size(sub) != 1 || rl_comm_rank(sub) != 0 || strcmp(rl_comm_name(sub), "world/2.7"))
        return 2;
    rl_barrier(sub, 0);
    rl_all_reduce(sub, t, t, RL_SUM, 0);
    rl_barrier(world, 0);
    *ok = rl_tensor_get(t, 3) == 4.0f && rl_comm_get_counters(world)->calls[RL_COLL_BARRIER] == 2 &&
          rl_comm_get_counters(sub)->calls[RL_COLL_ALL_REDUCE] == 1;
    rl_tensor_free(t);
    return 0;
}

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
    ck_assert_int_eq(rl_launch(&o, dist_one_fn, &ok, NULL), 0);
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
    tcase_add_test(tc, test_dist_world_of_one_on_gpu);
    suite_add_tcase(s, tc);
    return s;
}
