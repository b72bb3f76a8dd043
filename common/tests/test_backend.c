/* test_backend.c — the GPU backend's parts that need no GPU: --backend cuda/auto on a
 * machine without a driver (or a build without CUDA), and the multi-process bootstrap (env
 * parsing, the TCP exchange of the unique id between forked processes on 127.0.0.1, its
 * error messages, the MPI path's message in a build without MPI). */
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"
#include "bootstrap.h"
#include "ringlab.h"
#include "testutil.h"
#if defined(RL_HAVE_CUDA) && !defined(RL_FAKE_CUDA)
#include "cuda_backend.h"
#endif

/* Runs `ringlab ARGS` (stderr with stdout), returns the exit status and the output. */
static int run_ringlab(const char *args, char *out, size_t size)
{
    return rl_test_run_ringlab(rl_test_build(), "", args, out, size);
}

START_TEST(test_probe_says_why)
{
    char why[320] = "";
    int n = rl_backend_probe(why, sizeof why);
    if (n > 0)
        return; /* a GPU machine: nothing to explain */
    ck_assert_int_eq(n, 0);
    if (rl_backend_built_cuda())
        ck_assert_msg(strstr(why, "no CUDA driver/GPU found"), "why: %s", why);
    else
        ck_assert_msg(strstr(why, "no CUDA backend"), "why: %s", why);
    ck_assert_ptr_null(strchr(why, '\n'));
}
END_TEST

START_TEST(test_backend_cuda_without_gpu)
{
    static char out[16384];
    char why[320];
    int st = run_ringlab("bench all_reduce --backend cuda -b 8 -e 8 -n 1 -w 0", out, sizeof out);
    if (rl_backend_probe(why, sizeof why) > 0) {
        ck_assert_msg(st == 0, "a GPU is present, --backend cuda should run: %s", out);
        return;
    }
    ck_assert_msg(st != 0, "--backend cuda without a GPU must fail: %s", out);
    ck_assert_int_eq(rl_test_count(out, "ringlab:"), 1); /* one line, nothing else from the launcher */
    ck_assert_msg(strstr(out, "use --backend sim"), "%s", out);
    if (rl_backend_built_cuda())
        ck_assert_msg(strstr(out, "ringlab: no CUDA driver/GPU found; use --backend sim"), "%s", out);
    ck_assert_ptr_null(strstr(out, "out-of-place")); /* no table: nothing ran */
}
END_TEST

#if defined(RL_HAVE_CUDA) && !defined(RL_FAKE_CUDA)
/* 1 when a library whose path contains name is mapped into this process. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}
#endif

/* cuBLAS is opened by the first GPU rank, not loaded at the start of every process (which
 * costs each about 80 ms, sim runs included); what opens it finds it and its entry points. */
START_TEST(test_cublas_opened_at_first_use)
{
#if defined(RL_HAVE_CUDA) && !defined(RL_FAKE_CUDA)
    char err[320];
    ck_assert_msg(mapped("libcudart"), "the maps show no libcudart: is /proc/self/maps read right?");
    ck_assert_msg(!mapped("libcublas"), "libcublas is loaded before any GPU rank exists (linked again?)");
    ck_assert_msg(rl_cuda_blas_open(err, sizeof err) == 0, "%s", err);
    ck_assert_msg(mapped("libcublas.so"), "rl_cuda_blas_open returned 0 but libcublas is not mapped");
#endif
}
END_TEST

START_TEST(test_backend_auto_falls_back)
{
    static char out[65536];
    char why[320];
    int st = run_ringlab("bench all_reduce --backend auto --ranks 2 -b 8 -e 64 -n 1 -w 0", out, sizeof out);
    ck_assert_msg(st == 0, "%s", out);
    if (rl_backend_probe(why, sizeof why) > 0) {
        ck_assert_msg(strstr(out, "using cuda"), "%s", out);
        return;
    }
    ck_assert_msg(strstr(out, "--backend auto:") && strstr(out, "using sim"), "%s", out);
    if (rl_backend_built_cuda())
        ck_assert_msg(strstr(out, "no CUDA driver/GPU found"), "%s", out);
    /* --quiet silences the note but still falls back */
    st = run_ringlab("bench all_reduce --backend auto --quiet --ranks 2 -b 8 -e 8 -n 1 -w 0", out, sizeof out);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_null(strstr(out, "using sim"));
    /* the library call says the same */
    rl_opts o = rl_test_opts(2, NULL);
    int use_cuda = -1, ngpus = -1;
    o.backend = RL_BACKEND_AUTO;
    ck_assert_int_eq(rl_backend_resolve(&o, &use_cuda, &ngpus), 0);
    ck_assert_int_eq(use_cuda, 0);
    o.backend = RL_BACKEND_SIM;
    ck_assert_int_eq(rl_backend_resolve(&o, &use_cuda, &ngpus), 0);
    ck_assert_int_eq(use_cuda, 0);
}
END_TEST

/* ------------------------------------------------------------------ bootstrap */

START_TEST(test_dist_env_parse)
{
    rl_dist_env e;
    char err[256];
    ck_assert_int_eq(rl_dist_env_parse(&e, "3", "8", "1", "node0", "29555", err, sizeof err), 0);
    ck_assert_int_eq(e.rank, 3);
    ck_assert_int_eq(e.world_size, 8);
    ck_assert_int_eq(e.local_rank, 1);
    ck_assert_str_eq(e.master_addr, "node0");
    ck_assert_int_eq(e.master_port, 29555);
    /* defaults: local rank = rank, 127.0.0.1:29500 */
    ck_assert_int_eq(rl_dist_env_parse(&e, "0", "1", NULL, NULL, NULL, err, sizeof err), 0);
    ck_assert_int_eq(e.local_rank, 0);
    ck_assert_str_eq(e.master_addr, "127.0.0.1");
    ck_assert_int_eq(e.master_port, 29500);
    /* bad values: one message naming the variable */
    struct { const char *r, *w, *l, *a, *p, *expect; } bad[] = {
        { "4", "4", NULL, NULL, NULL, "RANK='4'" },
        { "-1", "4", NULL, NULL, NULL, "RANK='-1'" },
        { "x", "4", NULL, NULL, NULL, "RANK='x'" },
        { "0", "0", NULL, NULL, NULL, "WORLD_SIZE='0'" },
        { "0", "two", NULL, NULL, NULL, "WORLD_SIZE='two'" },
        { "1", "2", "5", NULL, NULL, "LOCAL_RANK='5'" },
        { "1", "2", NULL, NULL, "70000", "MASTER_PORT='70000'" },
        { "1", "2", NULL, NULL, "", "MASTER_PORT=''" },
        { "1", "2", NULL, "a b", NULL, "MASTER_ADDR=" },
        { NULL, "2", NULL, NULL, NULL, "RANK is not set" },
        { "1", NULL, NULL, NULL, NULL, "WORLD_SIZE is not set" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        ck_assert_int_eq(rl_dist_env_parse(&e, bad[i].r, bad[i].w, bad[i].l, bad[i].a, bad[i].p, err, sizeof err), -1);
        ck_assert_msg(strstr(err, bad[i].expect), "case %zu: %s", i, err);
        ck_assert_ptr_null(strchr(err, '\n'));
    }
}
END_TEST

START_TEST(test_dist_env_read)
{
    rl_dist_env e;
    char err[256];
    const char *vars[] = { "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                           "SLURM_NTASKS", "SLURM_LOCALID" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 0); /* a single-process run */
    ck_assert_int_eq(e.world_size, 1);
    setenv("SLURM_PROCID", "2", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "0", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), 1);
    ck_assert_int_eq(e.rank, 2);
    ck_assert_int_eq(e.local_rank, 0);
    setenv("RANK", "1", 1); /* torchrun's variables win */
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_PORT", "0", 1);
    ck_assert_int_eq(rl_dist_env_read(&e, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "MASTER_PORT='0'"), "%s", err);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}
END_TEST


static void make_id(unsigned char *id, int n, int seed)
{
    for (int i = 0; i < n; i++)
        id[i] = (unsigned char)(i * 37 + seed * 11 + 5);
}

/* Child: bootstrap as rank r of n on port; exits 0 when the id matches, 10 + why otherwise. */
static void child_exchange(int r, int n, int port, int ws_claim, double timeout)
{
    rl_dist_env e;
    char err[512], ps[16], rs[16], ns[16];
    unsigned char id[128], want[128];
    alarm(20); /* never outlive the test */
    snprintf(ps, sizeof ps, "%d", port);
    snprintf(rs, sizeof rs, "%d", r);
    snprintf(ns, sizeof ns, "%d", ws_claim);
    if (rl_dist_env_parse(&e, rs, ns, NULL, "127.0.0.1", ps, err, sizeof err))
        _exit(11);
    make_id(want, sizeof want, 7);
    if (r == 0)
        memcpy(id, want, sizeof id);
    else
        memset(id, 0, sizeof id);
    if (rl_bootstrap_tcp(&e, id, sizeof id, timeout, err, sizeof err)) {
        _exit(12);
    }
    _exit(memcmp(id, want, sizeof id) ? 13 : 0);
    (void)n;
}

/* Waits for pid up to limit seconds (then kills it); returns its exit status or -1. */
static int wait_child(pid_t pid, double limit)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

START_TEST(test_tcp_id_exchange)
{
    enum { N = 5 };
    int port = rl_test_free_port();
    pid_t pids[N];
    /* start the others first: they retry until rank 0 listens */
    for (int r = N - 1; r >= 0; r--) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            child_exchange(r, N, port, N, 10.0);
        if (r == N - 1) {
            struct timespec ts = { 0, 100 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    for (int r = 0; r < N; r++)
        ck_assert_msg(wait_child(pids[r], 15.0) == 0, "rank %d did not get the id", r);
    /* a world of one needs no exchange */
    rl_dist_env e;
    char err[256];
    unsigned char id[16];
    ck_assert_int_eq(rl_dist_env_parse(&e, "0", "1", NULL, NULL, NULL, err, sizeof err), 0);
    ck_assert_int_eq(rl_bootstrap_tcp(&e, id, sizeof id, 1.0, err, sizeof err), 0);
}
END_TEST

START_TEST(test_tcp_nobody_listening)
{
    rl_dist_env e;
    char err[512], ps[16];
    unsigned char id[128];
    snprintf(ps, sizeof ps, "%d", rl_test_free_port());
    ck_assert_int_eq(rl_dist_env_parse(&e, "1", "2", NULL, "127.0.0.1", ps, err, sizeof err), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(rl_bootstrap_tcp(&e, id, sizeof id, 0.4, err, sizeof err), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_msg(took > 0.3 && took < 3.0, "gave up after %.2f s", took);
    ck_assert_msg(strstr(err, "nobody answered at 127.0.0.1:") && strstr(err, "start rank 0"), "%s", err);
    /* rank 0 alone: the others never come */
    ck_assert_int_eq(rl_dist_env_parse(&e, "0", "3", NULL, "127.0.0.1", ps, err, sizeof err), 0);
    ck_assert_int_eq(rl_bootstrap_tcp(&e, id, sizeof id, 0.3, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "only 1 of 3 ranks connected") && strstr(err, "missing rank(s) 1 2"), "%s", err);
    /* bad arguments are refused, not crashed on */
    ck_assert_int_eq(rl_bootstrap_tcp(&e, id, 0, 1.0, err, sizeof err), -1);
    ck_assert_int_eq(rl_bootstrap_tcp(NULL, id, 8, 1.0, err, sizeof err), -1);
}
END_TEST

START_TEST(test_tcp_refuses_wrong_world_size)
{
    int port = rl_test_free_port();
    pid_t server = fork();
    ck_assert_int_ge(server, 0);
    if (server == 0)
        child_exchange(0, 2, port, 2, 1.5); /* waits for one rank, then times out */
    rl_dist_env e;
    char err[512], ps[16];
    unsigned char id[128];
    snprintf(ps, sizeof ps, "%d", port);
    ck_assert_int_eq(rl_dist_env_parse(&e, "1", "3", NULL, "127.0.0.1", ps, err, sizeof err), 0);
    ck_assert_int_eq(rl_bootstrap_tcp(&e, id, sizeof id, 5.0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "refused") && strstr(err, "WORLD_SIZE differs"), "%s", err);
    ck_assert_int_ne(wait_child(server, 10.0), 0); /* rank 0 gave up: rank 1 never registered */
}
END_TEST

START_TEST(test_mpi_path)
{
    char err[512] = "";
    rl_dist_env e;
    unsigned char id[128];
    if (!rl_backend_built_mpi()) {
        ck_assert_int_eq(rl_bootstrap_mpi(&e, id, sizeof id, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "no MPI") && strstr(err, "MASTER_PORT"), "%s", err);
        return;
    }
    /* built with MPI: the argument checks answer without starting MPI */
    ck_assert_int_eq(rl_bootstrap_mpi(&e, id, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "bad arguments"), "%s", err);
}
END_TEST

/* Under mpirun (RL_TEST_CHILD=bootstrap_mpi): rank 0's id reaches every rank by MPI_Bcast,
 * and MPI's rank and size are the launcher's. Exit 0, or 20 + what went wrong. */
int rl_test_child_bootstrap_mpi(void)
{
    rl_dist_env e;
    char err[512];
    unsigned char id[128], want[128];
    make_id(want, sizeof want, 9);
    const char *r = getenv("OMPI_COMM_WORLD_RANK"), *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (r && atoi(r) == 0)
        memcpy(id, want, sizeof id);
    else
        memset(id, 0, sizeof id);
    if (rl_bootstrap_mpi(&e, id, sizeof id, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 21;
    }
    int rc = memcmp(id, want, sizeof id) ? 22 : (r && e.rank != atoi(r)) || (n && e.world_size != atoi(n)) ? 23 : 0;
    rl_bootstrap_mpi_finalize();
    return rc;
}

/* In a build with MPI and with mpirun on the PATH: three processes share an id by MPI_Bcast. */
START_TEST(test_mpi_bcast_under_mpirun)
{
    if (!rl_backend_built_mpi() || system("command -v mpirun >/dev/null 2>&1") != 0)
        return; /* (CI builds without MPI; the argument checks above still run) */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "RL_TEST_CHILD=bootstrap_mpi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "timeout 30 mpirun --oversubscribe -np 3 %s/tests/run_tests >/tmp/rl_mpi_child.log 2>&1",
             rl_test_build());
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mpirun -np 3 exited %d (see /tmp/rl_mpi_child.log)",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
END_TEST

/* --backend cuda's host side on the emulated GPU of the CUDA_FAKE build (build/fakegpu, made
 * by make test-unit): device tensors whose host pointer is NULL, and the device-memory
 * transport of every collective, f32 and bf16, on 3 and 4 ranks sharing the "GPU". A program
 * that wrote device memory through a host pointer crashes here (bench did on a real H200). */
START_TEST(test_cuda_host_side_on_emulated_gpu)
{
    const char *dir = getenv("RINGLAB_FAKEGPU_BUILD");
    if (!dir)
        return; /* (only make test-unit builds it; the sanitizer run skips this) */
    static char out[1 << 17];
    static const char *const colls[] = { "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
                                         "all_to_all", "all_to_allv", "sendrecv" };
    char args[256];
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
        for (int ranks = 3; ranks <= 4; ranks++)
            for (int bf16 = 0; bf16 <= 1; bf16++) {
                snprintf(args, sizeof args, "bench %s --backend cuda --ranks %d -b 1K -e 256K -f 16 -n 1 -w 1%s",
                         colls[c], ranks, bf16 ? " -d bfloat16" : "");
                int st = rl_test_run_ringlab(dir, "", args, out, sizeof out);
                ck_assert_msg(st == 0, "ringlab %s: exit %d\n%s", args, st, out);
                ck_assert_msg(strstr(out, "device-memory transport") && strstr(out, "# Wall time on the GPU") &&
                                  strstr(out, "# Out of bounds values : 0 OK"),
                              "ringlab %s:\n%s", args, out);
            }
}
END_TEST

/* The lines of out that do not name the backend (the launcher's "ringlab:" lines, the
 * charts' status line " N ranks . profile ..."), kept in place. */
static void strip_backend_lines(char *out)
{
    char *w = out;
    for (char *line = out; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        int ranks;
        char dot;
        int drop = memmem(line, len, "ringlab:", 8) || sscanf(line, " %d ranks %c", &ranks, &dot) == 2;
        if (!drop) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = 0;
}

/* The labs' reference solutions and ringlab train on the emulated GPU (device tensors, the device-memory
 * transport, the ops' CPU kernels on "device" memory) print what they print on sim: the
 * same losses, errors and figures, since the arithmetic and its order are the same. Lab 28
 * labels its timing lines as measured there, so its loss lines are compared. */
START_TEST(test_labs_on_emulated_gpu)
{
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD");
    if (!fake)
        return; /* (only make test-unit builds it) */
    static const struct {
        const char *lab, *args;
    } runs[] = {
        { "28_ddp", "--ranks 4 --steps 3" }, { "29_zero_fsdp", "--ranks 4 --steps 2" },
        { "30_tp_pp_sp_cp", "--ranks 4" },    { "31_3d_moe_debug", "--part 3d --steps 3" },
        { "31_3d_moe_debug", "--part moe" },  { "31_3d_moe_debug", "--part diagnose" },
    };
    static char sim[1 << 18], gpu[1 << 18];
    char cmd[1024];
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/solutions/%s/run %s --seed 1 2>&1", rl_test_build(), runs[i].lab, runs[i].args);
        ck_assert_msg(rl_test_run_cmd(cmd, sim, sizeof sim) == 0, "%s\n%s", cmd, sim);
        snprintf(cmd, sizeof cmd, "%s/solutions/%s/run %s --seed 1 --backend cuda 2>&1", fake, runs[i].lab,
                 runs[i].args);
        int st = rl_test_run_cmd(cmd, gpu, sizeof gpu);
        ck_assert_msg(st == 0 && strstr(gpu, "emulated GPU"), "%s: exit %d\n%s", cmd, st, gpu);
        if (strcmp(runs[i].lab, "28_ddp") == 0) {
            const char *a = strstr(sim, "\nLoss "), *b = strstr(gpu, "\nLoss ");
            ck_assert_msg(a && b && strncmp(a, b, (size_t)(strchr(a + 1, '\n') - a)) == 0, "%s\n%s\n-- sim:\n%s",
                          cmd, gpu, sim);
            continue;
        }
        strip_backend_lines(sim);
        strip_backend_lines(gpu);
        ck_assert_msg(strcmp(sim, gpu) == 0, "%s differs from the sim run:\n%s\n-- sim:\n%s", cmd, gpu, sim);
    }
    /* ringlab train: the three models (embedding, attention, cross-entropy, MoE routing) */
    static const char *const models[] = { "mlp", "transformer", "moe" };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "train --model %s --steps 5", models[i]);
        ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "", cmd, sim, sizeof sim), 0);
        snprintf(cmd, sizeof cmd, "train --model %s --steps 5 --backend cuda", models[i]);
        int st = rl_test_run_ringlab(fake, "", cmd, gpu, sizeof gpu);
        strip_backend_lines(sim);
        strip_backend_lines(gpu);
        ck_assert_msg(st == 0 && strcmp(sim, gpu) == 0, "ringlab %s: exit %d\n%s\n-- sim:\n%s", cmd, st, gpu, sim);
    }
}
END_TEST

/* The NCCL path of --backend cuda (one GPU per rank in one process: communicators, groups,
 * ncclCommSplit, calls queued on the comm stream, the watchdog's abort) on the emulated GPUs
 * of the CUDA_FAKE build, whose NCCL (fake_nccl.c) computes every collective as the sim
 * backend does: bench checks every collective's result; the labs print what they print on
 * sim (the ranks' calls meet on the host before NCCL runs them, so the virtual spans, the
 * counters and the mismatch check are sim's); a hang is caught by the watchdog and the run
 * ends, a wrong count by the mismatch check. */
START_TEST(test_nccl_path_on_emulated_gpus)
{
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD");
    if (!fake)
        return; /* (only make test-unit builds it) */
    static char out[1 << 17], sim[1 << 18];
    static const char *const colls[] = { "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
                                         "all_to_all", "all_to_allv", "sendrecv" };
    char cmd[1024];
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
        for (int bf16 = 0; bf16 <= 1; bf16++) {
            snprintf(cmd, sizeof cmd, "bench %s --backend cuda --ranks 4 -b 1K -e 256K -f 16 -n 1 -w 1%s", colls[c],
                     bf16 ? " -d bfloat16" : "");
            int st = rl_test_run_ringlab(fake, "RL_FAKE_GPUS=4", cmd, out, sizeof out);
            ck_assert_msg(st == 0 && strstr(out, "collectives through NCCL") &&
                              strstr(out, "# Out of bounds values : 0 OK") && !strstr(out, "FAIL"),
                          "ringlab %s on 4 emulated GPUs: exit %d\n%s", cmd, st, out);
        }
    static const struct {
        const char *lab, *args;
        int same; /* 1: the whole output equals sim's; 0: the Loss line (lab 28 labels its times measured) */
    } runs[] = {
        { "28_ddp", "--ranks 4 --steps 3", 0 },     { "29_zero_fsdp", "--ranks 4 --steps 2", 1 },
        { "30_tp_pp_sp_cp", "--ranks 4", 1 },        { "31_3d_moe_debug", "--part 3d --steps 3", 1 },
        { "31_3d_moe_debug", "--part moe", 1 },      { "31_3d_moe_debug", "--part diagnose", 1 },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/solutions/%s/run %s --seed 1 2>&1", rl_test_build(), runs[i].lab, runs[i].args);
        ck_assert_msg(rl_test_run_cmd(cmd, sim, sizeof sim) == 0, "%s\n%s", cmd, sim);
        snprintf(cmd, sizeof cmd, "RL_FAKE_GPUS=8 %s/solutions/%s/run %s --seed 1 --backend cuda 2>&1", fake,
                 runs[i].lab, runs[i].args);
        int st = rl_test_run_cmd(cmd, out, sizeof out);
        ck_assert_msg(st == 0 && strstr(out, "collectives through NCCL"), "%s: exit %d\n%s", cmd, st, out);
        const char *a = strstr(sim, "\nLoss "), *b = strstr(out, "\nLoss ");
        if (a)
            ck_assert_msg(b && strncmp(a, b, (size_t)(strchr(a + 1, '\n') - a)) == 0, "%s\n%s\n-- sim:\n%s", cmd,
                          out, sim);
        if (runs[i].same) {
            strip_backend_lines(sim);
            strip_backend_lines(out);
            ck_assert_msg(strcmp(sim, out) == 0, "%s differs from the sim run:\n%s\n-- sim:\n%s", cmd, out, sim);
        }
    }
    /* a rank that never enters a collective: NCCL waits forever; the watchdog reports and aborts */
    snprintf(cmd, sizeof cmd, "RL_FAKE_GPUS=4 timeout 60 %s/solutions/28_ddp/run --ranks 4 --steps 2 --backend cuda "
             "--fault hang:rank=1:seq=3 --timeout 2 2>&1", fake);
    int st = rl_test_run_cmd(cmd, out, sizeof out);
    ck_assert_msg(st == 3 && strstr(out, "collectives through NCCL") &&
                      strstr(out, "rank 1 (last completed seq 2) never called it; ranks 0, 2, 3 are waiting in it"),
                  "%s: exit %d\n%s", cmd, st, out);
    /* a wrong count: NCCL does not notice, but the calls meet on the host first and the run
     * stops as on sim, before NCCL runs the call */
    snprintf(cmd, sizeof cmd, "RL_FAKE_GPUS=4 timeout 60 %s/solutions/28_ddp/run --ranks 4 --steps 2 --backend cuda "
             "--fault mismatch:rank=2:seq=3 --timeout 5 2>&1", fake);
    st = rl_test_run_cmd(cmd, out, sizeof out);
    ck_assert_msg(st == 4 && strstr(out, "verdict: collective mismatch: rank ") &&
                      strstr(out, "all_reduce(count=1052161, f32, sum)") && strstr(out, "at seq 3 on world"),
                  "%s: exit %d\n%s", cmd, st, out);
}
END_TEST

/* The NVTX ranges of --backend cuda, seen through NVTX's injection interface: lab 28's reference
 * solution on the emulated GPU (whose NVTX calls are real when the build found the NVTX header)
 * with build/nvtx_probe.so loaded by NVTX_INJECTION64_PATH. Every collective runs inside a
 * range named after it on its rank's comm worker, every wait for one inside a "wait" range on
 * the rank thread; pushes and pops balance on each thread. */
START_TEST(test_nvtx_ranges_on_emulated_gpu)
{
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD");
    char lab[512], probe[4096], path[512], report_path[128], trace_path[128], cmd[6144];
    snprintf(lab, sizeof lab, "%s/solutions/28_ddp/run", fake ? fake : "");
    snprintf(path, sizeof path, "%s/nvtx_probe.so", rl_test_build());
    if (!fake || access(lab, X_OK) || !realpath(path, probe))
        return; /* (only make test-unit builds the emulated GPU; the probe needs the NVTX header) */
    snprintf(report_path, sizeof report_path, "/tmp/rl_nvtx_report_%d.txt", (int)getpid());
    snprintf(trace_path, sizeof trace_path, "/tmp/rl_nvtx_trace_%d.json", (int)getpid());
    static char out[1 << 17], report[1 << 14], trace[1 << 21];

    /* without the injection NVTX stays a no-op: no report */
    unlink(report_path);
    snprintf(cmd, sizeof cmd,
             "env -u NVTX_INJECTION64_PATH RINGLAB_NVTX_REPORT=%s %s --ranks 4 --steps 2 --backend cuda 2>&1",
             report_path, lab);
    ck_assert_msg(rl_test_run_cmd(cmd, out, sizeof out) == 0, "%s\n%s", cmd, out);
    ck_assert_msg(access(report_path, F_OK) != 0, "%s wrote an NVTX report without NVTX_INJECTION64_PATH", cmd);

    snprintf(cmd, sizeof cmd,
             "NVTX_INJECTION64_PATH=%s RINGLAB_NVTX_REPORT=%s %s --ranks 4 --steps 2 --backend cuda --trace %s 2>&1",
             probe, report_path, lab, trace_path);
    ck_assert_msg(rl_test_run_cmd(cmd, out, sizeof out) == 0, "%s\n%s", cmd, out);
    FILE *f = fopen(report_path, "r");
    ck_assert_msg(f, "%s: no NVTX report in %s (was the emulated GPU built with the NVTX header?)\n%s", cmd,
                  report_path, out);
    report[fread(report, 1, sizeof report - 1, f)] = 0;
    fclose(f);
    f = fopen(trace_path, "r");
    ck_assert_msg(f, "%s: no trace\n%s", cmd, out);
    size_t tn = fread(trace, 1, sizeof trace - 1, f);
    trace[tn] = 0;
    fclose(f);
    ck_assert_msg(tn < sizeof trace - 1, "%s is larger than the test's buffer", trace_path);
    unlink(report_path);
    unlink(trace_path);

    /* the report's "key: N" and "name N" lines */
    enum { PUSHES, POPS, POPS_WITHOUT_PUSH, OPEN_AT_EXIT, ENDS_WITHOUT_START, THREADS, MAX_DEPTH, ALL_REDUCE, WAIT,
           NKEYS };
    static const char *const keys[NKEYS] = { "pushes:", "pops:", "pops_without_push:", "open_at_exit:",
                                             "ends_without_start:", "threads:", "max_depth:", "all_reduce", "wait" };
    long long v[NKEYS];
    for (int k = 0; k < NKEYS; k++)
        v[k] = -1;
    for (const char *line = report; *line;) {
        char key[128];
        long long n;
        if (sscanf(line, "%127s %lld", key, &n) == 2)
            for (int k = 0; k < NKEYS; k++)
                if (strcmp(key, keys[k]) == 0)
                    v[k] = n;
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : line + strlen(line);
    }
    for (int k = 0; k < NKEYS; k++)
        ck_assert_msg(v[k] >= 0, "no '%s' line in the NVTX report:\n%s", keys[k], report);

    ck_assert_msg(v[PUSHES] > 0 && v[PUSHES] == v[POPS], "pushes and pops differ:\n%s", report);
    ck_assert_msg(v[POPS_WITHOUT_PUSH] == 0 && v[OPEN_AT_EXIT] == 0 && v[ENDS_WITHOUT_START] == 0,
                  "unbalanced NVTX ranges:\n%s", report);
    ck_assert_msg(v[MAX_DEPTH] >= 1, "%s", report);
    /* 4 rank threads (wait) and their 4 comm workers (collectives), and the 1-rank scaling run's */
    ck_assert_msg(v[THREADS] >= 8, "ranges on %lld threads; expected the 4 ranks' and their comm workers':\n%s",
                  v[THREADS], report);
    /* one all_reduce range per all_reduce event of the 4 ranks in the trace, plus those of the
     * untraced 1-rank scaling run lab 28 makes after it (same buckets, 2 steps: a quarter as many) */
    int traced = rl_test_count(trace, "\"name\":\"all_reduce\"");
    ck_assert_msg(traced > 0 && traced % 4 == 0, "%d all_reduce events in the trace", traced);
    ck_assert_msg(v[ALL_REDUCE] == traced + traced / 4,
                  "%lld all_reduce NVTX ranges; the trace has %d all_reduce events (4 ranks), so %d expected "
                  "with the 1-rank run's:\n%s",
                  v[ALL_REDUCE], traced, traced + traced / 4, report);
    /* every bucket's all-reduce is waited for once (rl_wait: a "wait" range on the rank thread),
     * and every exposed wait is a "wait all_reduce" event in the trace */
    ck_assert_msg(v[WAIT] == v[ALL_REDUCE], "%lld wait ranges for %lld all_reduce ranges:\n%s", v[WAIT],
                  v[ALL_REDUCE], report);
    ck_assert_msg(v[WAIT] >= rl_test_count(trace, "\"name\":\"wait all_reduce\""), "%s", report);
}
END_TEST

Suite *backend_suite(void)
{
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("backend");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_probe_says_why);
    tcase_add_test(tc, test_backend_cuda_without_gpu);
    tcase_add_test(tc, test_backend_auto_falls_back);
    tcase_add_test(tc, test_cublas_opened_at_first_use);
    tcase_add_test(tc, test_dist_env_parse);
    tcase_add_test(tc, test_dist_env_read);
    tcase_add_test(tc, test_tcp_id_exchange);
    tcase_add_test(tc, test_tcp_nobody_listening);
    tcase_add_test(tc, test_tcp_refuses_wrong_world_size);
    tcase_add_test(tc, test_mpi_path);
    tcase_add_test(tc, test_mpi_bcast_under_mpirun);
    tcase_add_test(tc, test_cuda_host_side_on_emulated_gpu);
    tcase_add_test(tc, test_labs_on_emulated_gpu);
    tcase_add_test(tc, test_nccl_path_on_emulated_gpus);
    tcase_add_test(tc, test_nvtx_ranges_on_emulated_gpu);
    suite_add_tcase(s, tc);
    return s;
}
