/* testutil.h — helpers shared by the test suites. */
#ifndef RL_TESTUTIL_H
#define RL_TESTUTIL_H
#include <stdlib.h>
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

#endif
