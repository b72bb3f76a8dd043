/* run_tests.c — the test runner: every `Suite *NAME_suite(void)` in common/tests,
 * tui/tests and grader/tests (collected by the Makefile into suites.gen.h) in one Check
 * runner, which prints Check's summary line last. CK_RUN_SUITE / CK_RUN_CASE select. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#define RL_SUITE(name) Suite *name(void);
#include "suites.gen.h"
#undef RL_SUITE

/* A test may start this binary as a child program (under mpirun, say), named by RL_TEST_CHILD. */
int rl_test_child_bootstrap_mpi(void);
int rl_test_child_dist_world(void);

int main(void)
{
    const char *child = getenv("RL_TEST_CHILD");
    if (child)
        return strcmp(child, "bootstrap_mpi") == 0 ? rl_test_child_bootstrap_mpi()
               : strcmp(child, "dist_world") == 0  ? rl_test_child_dist_world()
                                                   : 2;
    SRunner *sr = NULL;
#define RL_SUITE(name) \
    do { if (!sr) sr = srunner_create(name()); else srunner_add_suite(sr, name()); } while (0);
#include "suites.gen.h"
#undef RL_SUITE
    if (!sr)
        return 1;
    check_set_max_msg_size(1 << 20); /* a failing grade's whole output fits in its message */
    srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
