/* testutil.h — helpers shared by the test suites. */
#ifndef RL_TESTUTIL_H
#define RL_TESTUTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include "ringlab.h"

/* Options for a quiet sim run of n ranks (profile h100-nvlink unless hw is given). */
static inline rl_opts rl_test_opts(int n, const char *hw)
{
    rl_opts o;
    rl_opts_init(&o);
    o.ranks = n;
    o.quiet = 1;
    o.timeout_s = 20;
    if (hw)
        o.hw = rl_hw_find(hw);
    return o;
}

/* 1 under the sanitizer run (make test-asan), where slow tests use smaller sizes. */
static inline int rl_test_quick(void) { return getenv("RL_TEST_QUICK") != NULL; }

/* The build directory of the binaries under test (build/ or build/asan/). */
static inline const char *rl_test_build(void)
{
    const char *b = getenv("RINGLAB_BUILD");
    return b ? b : "build";
}

/* Runs a shell command line (stderr with stdout); returns the exit status (-1 if it did not
 * exit) and the output in out. */
static inline int rl_test_run_cmd(const char *cmd, char *out, size_t size)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t k = fread(out, 1, size - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs `PREFIX DIR/ringlab ARGS` (PREFIX: "" or e.g. "env RANK=1"), as rl_test_run_cmd. */
static inline int rl_test_run_ringlab(const char *dir, const char *prefix, const char *args, char *out, size_t size)
{
    char cmd[1536];
    snprintf(cmd, sizeof cmd, "%s %s/ringlab %s 2>&1", prefix, dir, args);
    return rl_test_run_cmd(cmd, out, size);
}

#endif
