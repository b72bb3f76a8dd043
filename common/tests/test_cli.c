/* test_cli.c — bad input on the command line, generated from the programs' own declarations:
 * every program prints its numeric options with their ranges (RL_OPTNUM_LIST_FLAG), and each
 * is tried missing, below and above its range, fractional, not a number, infinite, overflowing,
 * in hex and after a space; each must give exit 2 quickly, with a line naming the option and the
 * value, and the usage — never a crash, a hang or a run. Then the unknown flags and malformed
 * specs, the environment, trace paths that cannot be written, and output into a closed pipe. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "optnum.h"
#include "testutil.h"

#define MAX_ARGS 24

/* Runs argv (no shell) with input from /dev/null and env (NULL-ended "K=V" strings added to
 * the environment); stdout+stderr into out; killed after limit_s. Returns the exit status,
 * 128+signal when a signal ended it, or 124 on the time limit. */
static int run_argv(char *const argv[], char *const env[], double limit_s, char *out, size_t size)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        for (int i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int timed_out = 0;
    for (;;) {
        struct pollfd p = { fd[0], POLLIN, 0 };
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = limit_s - ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec));
        if (left <= 0) {
            kill(pid, SIGKILL);
            timed_out = 1;
            break;
        }
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        char buf[4096];
        ssize_t k = read(fd[0], buf, sizeof buf);
        if (k <= 0)
            break;
        size_t take = (size_t)k < size - 1 - len ? (size_t)k : size - 1 - len;
        memcpy(out + len, buf, take);
        len += take;
    }
    out[len] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return timed_out ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Splits a command line (words separated by spaces) into argv (pointers into buf). */
static int split(char *buf, char *argv[], int max)
{
    int n = 0;
    for (char *w = strtok(buf, " "); w && n < max - 1; w = strtok(NULL, " "))
        argv[n++] = w;
    argv[n] = NULL;
    return n;
}

/* Output that only a crash or a sanitizer prints. */
static const char *crash_text(const char *out)
{
    static const char *const marks[] = { "runtime error", "AddressSanitizer", "LeakSanitizer", "Segmentation",
                                         "core dumped", "Assertion" };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(out, marks[i]))
            return marks[i];
    return NULL;
}

/* The programs: each of ringlab's subcommands that takes numbers (calc: every topic its usage
 * lists) and, in the normal build, each lab's driver. Returns how many were written to prog. */
static int programs(char prog[][160], int max)
{
    const char *b = rl_test_build();
    static const char *const fixed[] = { "bench all_reduce", "bench gemm", "train", "view", "view --demo" };
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        snprintf(prog[n++], 160, "%s/ringlab %s", b, fixed[i]);
    char *argv[4] = { NULL, "calc", NULL, NULL }, path[160], out[8192];
    snprintf(path, sizeof path, "%s/ringlab", b);
    argv[0] = path;
    run_argv(argv, NULL, 20, out, sizeof out);
    const char *topics = strstr(out, "topics:\n");
    ck_assert_msg(topics, "`ringlab calc` lists no topics:\n%s", out);
    for (const char *p = strchr(topics, '\n') + 1; p && strncmp(p, "  ", 2) == 0 && n < max; p = strchr(p, '\n') + 1) {
        char topic[32];
        if (sscanf(p, " %31s", topic) == 1)
            snprintf(prog[n++], 160, "%s/ringlab calc %s", b, topic);
    }
    if (!rl_test_quick()) { /* the labs' drivers: the normal build only */
        static const char *const labs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
        for (size_t i = 0; i < 4 && n < max; i++)
            snprintf(prog[n++], 160, "%s/solutions/%s/run", b, labs[i]);
    }
    return n;
}

/* The values that lie outside [min, max] or are no number of the kind, for one declaration. */
static int bad_values(const char *kind, double min, double max, char vals[][48], int max_vals)
{
    int n = 0, whole = !strcmp(kind, "whole"), size = !strcmp(kind, "size");
#define ADD(...) (n < max_vals ? snprintf(vals[n++], 48, __VA_ARGS__) : 0)
    ADD("abc");
    ADD("1e999");
    ADD("nan");
    ADD("-inf");
    ADD("-1");
    if (!size) {
        ADD("inf");
        ADD("0x10");
        ADD(" 5");
        ADD("5x");
        ADD("99999999999999999999999");
        ADD("%.17g", min - fmax(1, fabs(min)));
        ADD("%.17g", max + fmax(1, fabs(max)));
        if (whole && min + 0.5 < max)
            ADD("%.17g", floor(min) + 0.5);
    } else if (max > 0) { /* a count or a byte size with a declared range: whole, inside it */
        ADD("%.17g", max * 2);
        ADD("%.17g", floor(min) + 0.5);
        if (min >= 1)
            ADD("%.17g", min - 1);
    }
#undef ADD
    return n;
}

START_TEST(test_cli_sweep)
{
    char prog[32][160], out[1 << 15];
    int np = programs(prog, 32), tried = 0;
    ck_assert_int_ge(np, 10);
    for (int p = 0; p < np; p++) {
        char line[256], *argv[MAX_ARGS];
        snprintf(line, sizeof line, "%.159s %s", prog[p], RL_OPTNUM_LIST_FLAG);
        split(line, argv, MAX_ARGS);
        int rc = run_argv(argv, NULL, 20, out, sizeof out);
        ck_assert_msg(rc == 0 && out[0], "`%s %s`: exit %d, expected the numeric options' declarations:\n%s", prog[p],
                      RL_OPTNUM_LIST_FLAG, rc, out);
        char decls[sizeof out], *save = NULL;
        snprintf(decls, sizeof decls, "%s", out);
        for (char *d = strtok_r(decls, "\n", &save); d; d = strtok_r(NULL, "\n", &save)) {
            char name[64], kind[16];
            double min, max;
            ck_assert_msg(sscanf(d, "%63s %lf %lf %15s", name, &min, &max, kind) == 4,
                          "%s: a declaration line is not 'NAME MIN MAX KIND': '%s'", prog[p], d);
            char vals[16][48];
            int nv = bad_values(kind, min, max, vals, rl_test_quick() ? 2 : 16);
            for (int v = -1; v < nv; v++) { /* -1: the option last, with no value */
                char cmd[256], *args[MAX_ARGS];
                snprintf(cmd, sizeof cmd, "%.159s", prog[p]);
                int na = split(cmd, args, MAX_ARGS - 2);
                args[na++] = name;
                if (v >= 0)
                    args[na++] = vals[v];
                args[na] = NULL;
                rc = run_argv(args, NULL, 10, out, sizeof out);
                tried++;
                const char *what = v < 0 ? "(no value)" : vals[v];
                ck_assert_msg(!crash_text(out), "`%s %s %s`: crashed (%s):\n%.2000s", prog[p], name, what,
                              crash_text(out), out);
                ck_assert_msg(rc == 2, "`%s %s '%s'` (declared %s from %g to %g): exit %d, expected 2 (refused):\n"
                              "%.1500s", prog[p], name, what, kind, min, max, rc, out);
                ck_assert_msg(strstr(out, name) && (v < 0 || strstr(out, vals[v])) && strstr(out, "usage"),
                              "`%s %s '%s'`: the message must name the option and the value, and the usage must "
                              "follow:\n%.1500s", prog[p], name, what, out);
            }
        }
    }
    ck_assert_int_ge(tried, rl_test_quick() ? 100 : 600);
}
END_TEST

/* Runs a command line (split on spaces; "%B" is the build folder) with env added; returns
 * the exit status, the output in out. */
static int run_line(const char *line, char *const env[], char *out, size_t size)
{
    char buf[512], *argv[MAX_ARGS];
    snprintf(buf, sizeof buf, "%s", line);
    char *b = strstr(buf, "%B");
    if (b) {
        char rest[512];
        snprintf(rest, sizeof rest, "%s%s", rl_test_build(), b + 2);
        snprintf(b, sizeof buf - (size_t)(b - buf), "%s", rest);
    }
    split(buf, argv, MAX_ARGS);
    return run_argv(argv, env, 30, out, size);
}

/* Unknown flags, unknown names and malformed specs: exit 2, the bad text named, the usage. */
START_TEST(test_cli_malformed)
{
    static const struct { const char *line, *bad; int labs; } cases[] = {
        { "%B/ringlab nosuchcommand", "nosuchcommand", 0 },
        { "%B/ringlab bench all_reduce --no-such-option", "--no-such-option", 0 },
        { "%B/ringlab bench nosuchcoll", "nosuchcoll", 0 },
        { "%B/ringlab bench all_reduce all_gather", "all_gather", 0 },
        { "%B/ringlab bench all_reduce -b 64Q", "64Q", 0 },
        { "%B/ringlab bench all_reduce -d int8", "int8", 0 },
        { "%B/ringlab bench all_reduce -f 2 -i 8", "give one of them", 0 },
        { "%B/ringlab bench all_reduce -o prod", "prod", 0 },
        { "%B/ringlab train --no-such-option", "--no-such-option", 0 },
        { "%B/ringlab train --model nope", "nope", 0 },
        { "%B/ringlab train --fault garbage", "garbage", 0 },
        { "%B/ringlab train --fault hang:rank=1", "hang:rank=1", 0 },
        { "%B/ringlab train --fault hang:rank=1:seq=x", "seq=x", 0 },
        { "%B/ringlab train --fault hang:rank=-1:seq=3", "rank=-1", 0 },
        { "%B/ringlab train --fault nan:rank=2:=3", "nan:rank=2:=3", 0 },
        { "%B/ringlab train --fault straggler:rank=0:ms=-5", "ms=-5", 0 },
        { "%B/ringlab train --fault straggler:rank=0:ms=1e18", "ms=1e18", 0 },
        { "%B/ringlab train --fault hot-expert:expert=1:frac=2", "frac=2", 0 },
        { "%B/ringlab train --fault hang:rank=0:seq=1", "it acts on the collectives of a run whose ranks communicate", 0 },
        { "%B/ringlab train --fault nan:rank=0:step=0", "lab 31's diagnose run injects it", 0 },
        { "%B/ringlab train --fault hot-expert:expert=1:frac=0.5", "it skews lab 31's MoE routing", 0 },
        { "%B/ringlab train --fault nan:rank=0:rank=1:step=0", "rank is given twice", 0 },
        { "%B/ringlab train --fault nan:rank=0x1:step=0", "rank=0x1 is not a plain decimal number", 0 },
        { "%B/ringlab train --fault hot-expert:expert=0:frac=nan", "(digits and a point, e.g. frac=0.6)", 0 },
        { "%B/ringlab train --fault straggler:rank=1:ms=5,hang:rank=1:seq=1", "give --fault again for another", 0 },
        { "%B/ringlab train --hw nope", "nope", 0 },
        { "%B/ringlab train --steps 3 --tui", "train prints its losses and has no live view", 0 },
        { "%B/ringlab train --backend nope", "nope", 0 },
        { "%B/ringlab train --tui=nope", "nope", 0 },
        { "%B/ringlab view --no-such-option", "--no-such-option", 0 },
        { "%B/ringlab view --synth nope --out x.json", "nope", 0 },
        { "%B/ringlab view --synth ddp --microbatches 7 --out x.json", "--microbatches applies to the pipeline", 0 },
        { "%B/ringlab view x.json --render nope", "nope", 0 },
        { "%B/ringlab view x.json --size 0x0", "0x0", 0 },
        { "%B/ringlab view x.json --narrate --at abc", "abc", 0 },
        { "%B/ringlab view --demo --no-such-option", "--no-such-option", 0 },
        { "%B/ringlab view x.json --narrate --at 1ms --render mesh --size 80x20", "--narrate, --render: give one", 0 },
        { "%B/ringlab view x.json --ticks --narrate --at 1ms", "--narrate, --ticks: give one", 0 },
        { "%B/ringlab calc nope", "nope", 0 },
        { "%B/ringlab calc zero --no-such", "--no-such", 0 },
        { "%B/ringlab calc zero --params 7Q --dp 8", "7Q", 0 },
        { "%B/ringlab calc zero --params 7B", "--dp", 0 },
        { "%B/ringlab calc tp --b 1 --s 2048 --h 4096 --t 3", "--t 3 does not divide --h 4096", 0 },
        { "%B/ringlab bench all_reduce --ranks 2 --fault nan:rank=0:step=1", "--fault nan has no effect here", 0 },
        { "%B/solutions/28_ddp/run --fault nan:rank=0:step=1", "lab 28: --fault nan has no effect here", 1 },
        { "%B/solutions/29_zero_fsdp/run --fault hot-expert:expert=1:frac=0.5", "--part moe --fault", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --fault nan:rank=0:step=1", "--part diagnose --fault", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part 3d --fault hot-expert:expert=1:frac=0.5", "--part 3d: --fault", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part moe --fault nan:rank=0:step=1", "--part moe: --fault nan", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part plan --fault hang:rank=0:seq=1", "--part plan: --fault hang", 1 },
        { "%B/solutions/28_ddp/run --no-such-option", "--no-such-option", 1 },
        { "%B/solutions/29_zero_fsdp/run --stage nope", "nope", 1 },
        { "%B/solutions/29_zero_fsdp/run --stage zero1 --group 2", "--group applies to --stage hsdp only", 1 },
        { "%B/solutions/29_zero_fsdp/run --stage zero2 --no-prefetch", "--no-prefetch applies to --stage zero3", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --schedule nope", "nope", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --heads 4 --ranks 8", "--heads 4 is not divisible by --ranks t = 8", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --stages 16", "--stages 16: the profile h100-nvlink models 8 GPUs", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --chunks 3", "--chunks 3 applies to --schedule interleaved only", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --schedule interleaved --microbatches 7", "(got p = 4, v = 2, m = 7)", 1 },
        { "%B/solutions/30_tp_pp_sp_cp/run --schedule interleaved --chunks 1", "v from 2 to 4", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part nope", "nope", 1 },
        { "%B/solutions/31_3d_moe_debug/run --order dp-tp", "dp-tp", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part 3d --experts 3", "--part 3d does not use --experts", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part mesh --top-k 5", "--part mesh does not use --top-k", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part plan --dp 3", "it takes none of the parts' options", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part moe --dp 2", "it takes --experts --top-k --capacity-factor", 1 },
        { "%B/solutions/31_3d_moe_debug/run --part 3d --order tp-cp-pp-dp", "--part 3d does not use --order", 1 },
    };
    char out[1 << 14];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].labs && rl_test_quick())
            continue; /* the labs' drivers: the normal build only */
        int rc = run_line(cases[i].line, NULL, out, sizeof out);
        ck_assert_msg(!crash_text(out), "`%s`: crashed:\n%.2000s", cases[i].line, out);
        ck_assert_msg(rc == 2 && strstr(out, cases[i].bad) && strstr(out, "usage"),
                      "`%s`: exit %d; expected 2, a message naming '%s', and the usage:\n%.1500s", cases[i].line, rc,
                      cases[i].bad, out);
    }
}
END_TEST

/* The environment: the grader's variables, the launcher's (RANK, WORLD_SIZE, MASTER_PORT) and
 * the emulated GPUs' count — a bad value is named, with exit 2 (or the backend's message). */
START_TEST(test_cli_environment)
{
    char out[1 << 14];
    static const char *const grade_env[] = { "RL_GRADE_TIME_SCALE=garbage", "RL_GRADE_TIME_SCALE=0",
                                             "RL_GRADE_SEED=garbage", "RL_GRADE_SEED=-5",
                                             "RL_GRADE_SEED=99999999999999999999999" };
    for (size_t i = 0; i < sizeof grade_env / sizeof grade_env[0] && !rl_test_quick(); i++) {
        char *env[] = { (char *)grade_env[i], NULL }, val[64];
        int rc = run_line("%B/solutions/28_ddp/grade --step 28.5 --answers solutions/28_ddp/answers.txt", env, out,
                          sizeof out);
        snprintf(val, sizeof val, "%s", strchr(grade_env[i], '=') + 1);
        ck_assert_msg(rc == 2 && strstr(out, val) && !strstr(out, "Score:"), "%s grade ...: exit %d; expected 2, "
                      "the value named, no grading:\n%.1500s", grade_env[i], rc, out);
    }
    static const struct { const char *env[3], *bad; } sim[] = { /* --backend sim: not ignored without a word */
        { { "RANK=abc", "WORLD_SIZE=2", NULL }, "RANK='abc'" },
        { { "RANK=5", "WORLD_SIZE=2", NULL }, "RANK='5'" },
        { { "RANK=0", "WORLD_SIZE=0", NULL }, "WORLD_SIZE" },
        { { "SLURM_PROCID=5", "SLURM_NTASKS=2", NULL }, "read from SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID" },
        { { "OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2", NULL }, "read from OMPI_COMM_WORLD_RANK" },
    };
    for (size_t i = 0; i < sizeof sim / sizeof sim[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "%s/ringlab train --steps 1 --backend sim", rl_test_build());
        int rc = run_line(line, (char *const *)sim[i].env, out, sizeof out);
        ck_assert_msg(!crash_text(out) && rc != 0 && rc < 128 && strstr(out, sim[i].bad) && !strstr(out, "loss"),
                      "%s %s %s: exit %d; expected a failure naming '%s':\n%.1500s", sim[i].env[0], sim[i].env[1],
                      line, rc, sim[i].bad, out);
    }
    const char *fake = getenv("RINGLAB_FAKEGPU_BUILD"); /* the emulated-GPU build (make test-unit) */
    if (!fake) {
        ck_assert_msg(!getenv("CI") || rl_test_quick(), "RINGLAB_FAKEGPU_BUILD is not set: run the suite through "
                      "make test");
        return;
    }
    static const struct { const char *env[5], *bad; } dist[] = {
        { { "RANK=abc", "WORLD_SIZE=2", NULL }, "RANK='abc'" },
        { { "RANK=0", "WORLD_SIZE=abc", NULL }, "abc" },
        { { "RANK=0", "WORLD_SIZE=0", NULL }, "WORLD_SIZE" },
        { { "SLURM_PROCID=5", "SLURM_NTASKS=2", NULL }, "read from SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID" },
        { { "OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2", NULL }, "read from OMPI_COMM_WORLD_RANK" },
        { { "RANK=5", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", NULL }, "RANK='5'" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=abc" }, "MASTER_PORT" },
        { { "RL_FAKE_GPUS=abc", NULL }, "RL_FAKE_GPUS: 'abc'" },
        { { "RL_FAKE_GPUS=0", NULL }, "RL_FAKE_GPUS: '0'" },
    };
    for (size_t i = 0; i < sizeof dist / sizeof dist[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "%s/ringlab bench all_reduce -b 1K -e 1K -n 1 -w 0 --backend cuda", fake);
        int rc = run_line(line, (char *const *)dist[i].env, out, sizeof out);
        ck_assert_msg(!crash_text(out) && rc != 0 && rc < 128 && strstr(out, dist[i].bad),
                      "%s %s %s: exit %d; expected a failure naming '%s':\n%.1500s", dist[i].env[0],
                      dist[i].env[1] ? dist[i].env[1] : "", line, rc, dist[i].bad, out);
    }
}
END_TEST

/* Where the output goes: a trace path that cannot be written, a full disk under stdout (both a
 * message and exit 1, not 0), and a closed pipe (the program stops at once, by SIGPIPE). */
START_TEST(test_cli_outputs)
{
    char out[1 << 15], cmd[600];
    static const char *const traces[] = { "/nonexistent/dir/run.json", "/dev/full" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s/ringlab train --steps 2 --trace %s", rl_test_build(), traces[i]);
        int rc = run_line(cmd, NULL, out, sizeof out);
        ck_assert_msg(rc == 1 && strstr(out, "cannot write trace") && strstr(out, traces[i]) && !crash_text(out),
                      "`%s`: exit %d; expected 1 and \"cannot write trace '%s'\":\n%.1500s", cmd, rc, traces[i], out);
        ck_assert_msg(i > 0 || (!strstr(out, "loss") && strstr(out, "nothing was run")),
                      "`%s`: the folder does not exist: refused before the run, not after it:\n%.1500s", cmd, out);
    }
    snprintf(cmd, sizeof cmd, "%s/ringlab train --steps 20 --lr 10", rl_test_build()); /* a diverging run */
    int rc = run_line(cmd, NULL, out, sizeof out);
    ck_assert_msg(rc == 1 && strstr(out, "the training diverged (try a smaller --lr)") && !strstr(out, "lower)"),
                  "`%s`: exit %d; expected 1 and the divergence said:\n%.1500s", cmd, rc, out);
    static const char *const full[] = { "calc zero --params 7B --dp 8", "bench all_reduce -b 1K -e 1K -n 1 -w 0",
                                        "view --synth 1f1b --out /dev/stdout" };
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s/ringlab %s 2>&1 >/dev/full", rl_test_build(), full[i]);
        char *o;
        int rc = rl_test_run(cmd, &o);
        ck_assert_msg(rc == 1 && strstr(o, "No space left on device"), "`ringlab %s > /dev/full`: exit %d; expected 1 "
                      "and a message:\n%.1500s", full[i], rc, o);
        free(o);
        /* stdout closed (>&-): said so; the first file opened does not take its number (view --bench's
         * trace did, and received the report) */
        snprintf(cmd, sizeof cmd, "%s/ringlab %s 2>&1 >&-", rl_test_build(), i == 2 ? "view --bench --events 2000 "
                 "--frames 1" : full[i]);
        rc = rl_test_run(cmd, &o);
        ck_assert_msg(rc == 1 && strstr(o, "standard output is closed") && !strstr(o, "not valid JSON"),
                      "`%s`: exit %d:\n%.1500s", cmd, rc, o);
        free(o);
    }
    static const char *const piped[] = { "bench all_reduce -b 1K -e 16M -n 2 -w 0", "view --bench --events 200000",
                                         ("calc plan --params 7B --layers 32 --hidden 4096 --heads 32 --seq 2048 "
                                          "--gbs 64 --gpus 8 --top 0") };
    for (size_t i = 0; i < sizeof piped / sizeof piped[0]; i++) {
        snprintf(cmd, sizeof cmd, "bash -c 'timeout 60 %s/ringlab %s 2>/tmp/rl_pipe_err.$$ | head -c 1 >/dev/null; "
                 "echo rc=${PIPESTATUS[0]}; cat /tmp/rl_pipe_err.$$; rm -f /tmp/rl_pipe_err.$$'", rl_test_build(),
                 piped[i]);
        char *o;
        rl_test_run(cmd, &o);
        int rc = -1;
        sscanf(o, "rc=%d", &rc);
        ck_assert_msg((rc == 0 || rc == 141) && !crash_text(o) && !strstr(o, "cannot write"),
                      "`ringlab %s | head -c 1`: exit %d (expected 0, or 141: SIGPIPE); its stderr:\n%.1500s", piped[i],
                      rc, o);
        free(o);
    }
}
END_TEST

/* A fault that never takes effect is reported, not silently ignored. */
START_TEST(test_cli_fault_never_fired)
{
    static const struct { const char *args, *want; } cases[] = {
        { "--fault hang:rank=1:seq=999", "--fault hang:rank=1:seq=999 never fired: that rank made fewer calls" },
        { "--fault straggler:rank=1:ms=5", "--fault straggler:rank=1 never fired: that rank began no step" },
    };
    for (size_t i = 0; i < 2; i++) {
        char cmd[512], out[1 << 14];
        snprintf(cmd, sizeof cmd, "%s/ringlab bench all_reduce --ranks 4 -b 1K -e 1K -n 1 -w 0 %s", rl_test_build(),
                 cases[i].args);
        int rc = run_line(cmd, NULL, out, sizeof out);
        ck_assert_msg(rc == 0 && strstr(out, cases[i].want), "`%s`: exit %d; expected 0 and \"%s\":\n%.1500s", cmd,
                      rc, cases[i].want, out);
    }
}
END_TEST

/* A long bench run says where it is on stderr (every 2 s) instead of running silent. */
START_TEST(test_cli_bench_progress)
{
    char cmd[512], *o;
    snprintf(cmd, sizeof cmd, "timeout 5 %s/ringlab bench all_reduce -b 4M -e 4M -n 100000 -w 0 2>&1 >/dev/null",
             rl_test_build());
    int rc = rl_test_run(cmd, &o);
    ck_assert_msg(rc == 124 && strstr(o, "# bench: ") && strstr(o, "row 1 of 1 (4194304 B), out-of-place, timed "
                  "iteration "), "`%s`: exit %d (124: still running, as meant); expected progress lines:\n%.1500s",
                  cmd, rc, o);
    free(o);
}
END_TEST

/* Under an address-space limit (ulimit -v), each lab either runs or says "out of memory" and exits 1,
 * at once, wherever the memory ran out: the ranks' stacks at launch (300000), a tensor, the model's
 * parameters, OpenBLAS's GEMM work buffer (higher limits). It used to spin for ever in OpenBLAS's
 * allocator (with no collective in flight, so no watchdog either), end in a watchdog "hang", or crash. */
START_TEST(test_cli_address_space_limit)
{
    static const char *const labs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
    static const int limits_kb[] = { 300000, 400000, 500000, 550000, 650000, 850000 };
    int later = 0; /* refusals after the launch: a tensor, the model, a GEMM buffer */
    for (size_t i = 0; i < 4; i++) {
        for (size_t k = 0; k < sizeof limits_kb / sizeof limits_kb[0]; k++) {
            char cmd[512], *o;
            snprintf(cmd, sizeof cmd, "ulimit -v %d && timeout 60 %s/solutions/%s/run 2>&1", limits_kb[k],
                     rl_test_build(), labs[i]);
            time_t t0 = time(NULL);
            int rc = rl_test_run(cmd, &o);
            double took = difftime(time(NULL), t0);
            int oom = strstr(o, "out of memory: ") != NULL;
            ck_assert_msg(((rc == 1 && oom) || (rc == 0 && !oom)) && !strstr(o, "watchdog") && !crash_text(o) &&
                          took < 45, "`%s`: exit %d after %.1f s; expected 0, or 1 with the out-of-memory message, "
                          "at once:\n%.1500s", cmd, rc, took, o);
            ck_assert_msg(k > 0 || strstr(o, "of address space"), "`%s`: expected the launch's check:\n%.1500s", cmd, o);
            later += rc == 1 && !strstr(o, "of address space (two thread stacks");
            free(o);
        }
    }
    ck_assert_msg(later >= 4, "only %d runs ran out of memory after their launch; the sweep tests too little", later);
}
END_TEST

/* A small stack limit: a soft one is raised and the run goes on; a hard one too small to
 * raise ends with the limit and the fix, never a segmentation fault. */
START_TEST(test_cli_stack_limit)
{
    static const struct { const char *limit, *prog; int rc; const char *want; } cases[] = {
        { "ulimit -Ss 64", "ringlab train --ranks 2 --steps 2", 0, "" },
        { "ulimit -Ss 64", "solutions/28_ddp/run", 0, "" },
        { "ulimit -Ss 200", "solutions/31_3d_moe_debug/grade --step 31.1", 0, "" },
        { "ulimit -s 64", "ringlab train --ranks 2 --steps 2", 1, "ulimit -s 64 KiB) is too small" },
        { "ulimit -s 64", "solutions/29_zero_fsdp/grade", 1, "(ulimit -s 8192)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512], *o;
        snprintf(cmd, sizeof cmd, "%s && timeout 120 %s/%s 2>&1", cases[i].limit, rl_test_build(), cases[i].prog);
        int rc = rl_test_run(cmd, &o);
        ck_assert_msg(rc == cases[i].rc && strstr(o, cases[i].want) && !crash_text(o),
                      "`%s`: exit %d; expected %d and \"%s\":\n%.1500s", cmd, rc, cases[i].rc, cases[i].want, o);
        free(o);
    }
}
END_TEST

/* The grader's own arguments: refused before anything is graded, naming what is wrong. */
START_TEST(test_cli_grade_arguments)
{
    static const struct { const char *args, *want; } cases[] = {
        { "--answers /tmp", "--answers '/tmp': not a regular file" },
        { "--step ''", "--step '': name a step" },
        { "--learner ''", "the learner id '' (--learner) is not one" },
        { "--learner --help", "the learner id '--help' (--learner) is not one" },
        { "--learner \"$(printf 'ada\\001x')\"", "the learner id 'ada?x'" },
        { "--details /nonexistent/details.txt", "--details '/nonexistent/details.txt': No such file" },
        { "--seed 12x", "--seed '12x' is not a seed" },
        { "--zero-json /tmp/rl_zero.json ''", "give the reason the learner will read" },
        { "--zero-json /tmp/rl_zero.json", "--zero-json needs FILE and REASON" },
        { "--zero-json /tmp/rl_zero.json ' '", "give the reason the learner will read" },
        { "--zero-json /nonexistent/z.json 'it does not build'", "--zero-json '/nonexistent/z.json': No such file" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512], *o;
        snprintf(cmd, sizeof cmd, "timeout 20 %s/solutions/28_ddp/grade %s 2>&1", rl_test_build(), cases[i].args);
        int rc = rl_test_run(cmd, &o);
        ck_assert_msg(rc == 2 && strstr(o, cases[i].want) && !strstr(o, "Score:"),
                      "`%s`: exit %d; expected 2, \"%s\" and nothing graded:\n%.1500s", cmd, rc, cases[i].want, o);
        free(o);
    }
    char cmd[512], *o;
    /* --seed wins over RL_GRADE_SEED (not even read then); a missing answers file is named */
    snprintf(cmd, sizeof cmd, "RL_GRADE_SEED=abc timeout 60 %s/solutions/28_ddp/grade --step 28.5 --seed 5 "
             "--answers /nonexistent/answers.txt 2>&1", rl_test_build());
    int rc0 = rl_test_run(cmd, &o);
    ck_assert_msg(rc0 == 1 && strstr(o, "Seed 5:") && strstr(o, "--answers '/nonexistent/answers.txt' does not exist: "
                  "the answers tests are graded as unanswered"), "`%s`: exit %d:\n%.1500s", cmd, rc0, o);
    free(o);
    /* an address-space limit too small to grade: said up front, nothing graded (each test of it
     * failed with "could not set up the test"); the normal build only: ASan's shadow needs the
     * address space */
    if (!rl_test_quick()) {
        snprintf(cmd, sizeof cmd, "ulimit -v 900000 && timeout 60 %s/solutions/28_ddp/grade --step 28.1 2>&1",
                 rl_test_build());
        rc0 = rl_test_run(cmd, &o);
        ck_assert_msg(rc0 == 2 && strstr(o, "(ulimit -v 900000 KiB) is too small to grade") && !strstr(o, "Score:"),
                      "`%s`: exit %d:\n%.1500s", cmd, rc0, o);
        free(o);
    }
    /* a results file or a trace that cannot be written whole is not left behind truncated */
    snprintf(cmd, sizeof cmd, "rm -f /tmp/rl_cli_fsz.json /tmp/rl_cli_fsz.trace.json; ulimit -f 1 && timeout 60 "
             "%s/solutions/28_ddp/grade --step 28.5 --json /tmp/rl_cli_fsz.json >/dev/null 2>&1; echo rc=$?; "
             "timeout 60 %s/solutions/28_ddp/run --quiet --trace /tmp/rl_cli_fsz.trace.json >/dev/null 2>&1; "
             "echo rc=$?; ls /tmp/rl_cli_fsz* 2>&1", rl_test_build(), rl_test_build());
    rl_test_run(cmd, &o);
    ck_assert_msg(!strstr(o, "rc=0") && strstr(o, "No such file"), "under ulimit -f 1:\n%s", o);
    free(o);
    /* the details file is written after every grade, and a failed write is an error */
    snprintf(cmd, sizeof cmd, "timeout 60 %s/solutions/28_ddp/grade --step 28.1 --details /dev/full 2>&1",
             rl_test_build());
    int rc = rl_test_run(cmd, &o);
    ck_assert_msg(rc == 1 && strstr(o, "could not write /dev/full"), "`%s`: exit %d:\n%.1500s", cmd, rc, o);
    free(o);
}
END_TEST

/* A grade stopped by INT, TERM or HUP leaves no scratch folder behind. */
START_TEST(test_cli_grade_stopped_cleans_up)
{
    char dir[] = "/tmp/rl_cli_stop_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    static const char *const sigs[] = { "INT", "TERM", "HUP", "QUIT" };
    for (size_t i = 0; i < 4; i++) {
        char cmd[512], *o;
        snprintf(cmd, sizeof cmd, "TMPDIR=%s timeout -s %s 1 %s/solutions/29_zero_fsdp/grade >/dev/null 2>&1; "
                 "sleep 0.3; ls -A %s", dir, sigs[i], rl_test_build(), dir);
        rl_test_run(cmd, &o);
        ck_assert_msg(!o[0], "after SIG%s the grader left in its TMPDIR:\n%s", sigs[i], o);
        free(o);
    }
    /* output into a pipe closed early (make grade | head): the same */
    char cmd[512], *o;
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s/solutions/29_zero_fsdp/grade 2>/dev/null | head -c 10 >/dev/null; "
             "sleep 0.5; ls -A %s", dir, rl_test_build(), dir);
    rl_test_run(cmd, &o);
    ck_assert_msg(!o[0], "after a closed pipe the grader left in its TMPDIR:\n%s", o);
    free(o);
    rmdir(dir);
}
END_TEST

/* make's variables: a lab or a step that does not exist, a world of 0 ranks. */
START_TEST(test_cli_make_variables)
{
    static const struct { const char *cmd, *want; } cases[] = {
        { "make -s run LAB=abc", "make run needs LAB=NN, one of:" },
        { "make -s run LAB=28 RANKS=0", "--ranks: '0' is not a whole number from 1 to 1024" },
        { "make -s grade LAB=28 STEP=28.9", "grade: lab 28 has no step '28.9'" },
        { "make -s hint LAB=28 STEP=28.9", "has no hints for step '28.9'" },
        { "make -s progress LAB=99", "no lab matches LAB=99" },
        { "make -s watch LAB=28 STEP=99.9", "no lab has a step '99.9'" },
        { "make -s progress LAB=28 STEP=28.9", "no lab has a step '28.9'" },
        { "build/ringlab progress labs/99_x", "'labs/99_x' is not a lab's folder" },
        { "build/ringlab progress --dir /dev/null", "--dir '/dev/null' is not a folder" },
        { "build/ringlab progress --step", "--step needs a value" },
        { "true; build/solutions/28_ddp/grade --step 28.1 --json /tmp/rl_cli_r28.json >/dev/null; "
          "build/ringlab progress --record labs/29_zero_fsdp /tmp/rl_cli_r28.json --dir /tmp/rl_cli_pp",
          "grades step 28.1, not a step of lab 29_zero_fsdp" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[256], *o;
        snprintf(cmd, sizeof cmd, "timeout 300 %s 2>&1", cases[i].cmd);
        int rc = rl_test_run(cmd, &o);
        ck_assert_msg(rc == 2 && strstr(o, cases[i].want), "`%s`: exit %d; expected 2 and \"%s\":\n%.1500s",
                      cases[i].cmd, rc, cases[i].want, o);
        free(o);
    }
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, rl_test_quick() ? 600 : 240);
    tcase_add_test(tc, test_cli_sweep);
    tcase_add_test(tc, test_cli_malformed);
    tcase_add_test(tc, test_cli_environment);
    tcase_add_test(tc, test_cli_outputs);
    tcase_add_test(tc, test_cli_bench_progress);
    tcase_add_test(tc, test_cli_fault_never_fired);
    tcase_add_test(tc, test_cli_grade_arguments);
    tcase_add_test(tc, test_cli_grade_stopped_cleans_up);
    if (!rl_test_quick()) { /* make runs the normal build's binaries; ASan's shadow needs the address space */
        tcase_add_test(tc, test_cli_make_variables);
        tcase_add_test(tc, test_cli_address_space_limit);
        tcase_add_test(tc, test_cli_stack_limit);
    }
    suite_add_tcase(s, tc);
    return s;
}
