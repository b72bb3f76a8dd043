/* run_tests.c — the test runner: every `Suite *NAME_suite(void)` in common/tests,
 * tui/tests and grader/tests (collected by the Makefile into suites.gen.h) in one Check
 * runner, which prints Check's summary line last. CK_RUN_SUITE / CK_RUN_CASE select. */
#include <check.h>
#include <stdlib.h>

#define RL_SUITE(name) Suite *name(void);
#include "suites.gen.h"
#undef RL_SUITE

int main(void)
{
    SRunner *sr = NULL;
#define RL_SUITE(name) \
    do { if (!sr) sr = srunner_create(name()); else srunner_add_suite(sr, name()); } while (0);
#include "suites.gen.h"
#undef RL_SUITE
    if (!sr)
        return 1;
    srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
