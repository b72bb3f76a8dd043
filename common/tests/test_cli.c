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
    static const char *const fixed[] = { "bench all_reduce", "train", "view", "view --demo" };
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

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, rl_test_quick() ? 600 : 240);
    tcase_add_test(tc, test_cli_sweep);
    suite_add_tcase(s, tc);
    return s;
}
