/* test_release.c — `make release`: the learners' tarball has no reference solution, planted
 * bug, correct variant or attack, and, unpacked in a fresh directory, its README's commands
 * build it, run lab 28 (each step: not implemented yet) and grade every lab 0. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"


START_TEST(test_release_builds_and_grades_zero)
{
    char dir[] = "/tmp/rl_release_XXXXXX", cmd[2048], *out;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory BUILD=%s/out release 2>&1",
             dir);
    int rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && strstr(out, "RELEASE"), "make release failed (exit %d):\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "tar -tzf %s/out/ringlab-labs.tar.gz", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_int_eq(rc, 0);
    static const char *const never[] = { "ringlab-labs/solutions/", "grader/tests/bugs/", "grader/tests/variants/",
                                         "grader/tests/attacks/", "test_graders.c", "ringlab-labs/.ci/" };
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        ck_assert_msg(!strstr(out, never[i]), "the release holds %s:\n%s", never[i], out);
    ck_assert_msg(strstr(out, "ringlab-labs/labs/28_ddp/ddp.c") && strstr(out, "ringlab-labs/grader/grade28.c") &&
                      strstr(out, "ringlab-labs/README.md"), "the release lacks a lab, a grader or its README:\n%s", out);
    free(out);
    /* the README's commands, in the unpacked tree (CPU only, to keep the test short) */
    snprintf(cmd, sizeof cmd, "cd %s && tar -xzf out/ringlab-labs.tar.gz && cd ringlab-labs && "
             "grep -q 'make && make run LAB=28' README.md && "
             "env -u MAKEFLAGS -u MAKELEVEL make -j2 CUDA=0 MPI=0 >build.log 2>&1 || { tail -30 build.log; exit 9; }",
             dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "the release did not build (exit %d):\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 run LAB=28 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc != 0 && strstr(out, "not implemented yet"), "make run LAB=28 on the skeleton (exit %d):\n%s", rc,
                  out);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 grade 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc != 0 && strstr(out, "lab 28_ddp: 0/") && strstr(out, "lab 31_3d_moe_debug: 0/") &&
                      strstr(out, "\nScore: 0/") && !strstr(out, "crashed:") && !strstr(out, "timed out"),
                  "make grade on the release's skeletons must score 0 on every lab (exit %d):\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *release_suite(void)
{
    Suite *s = suite_create("release");
    TCase *t = tcase_create("release");
    tcase_set_timeout(t, 600);
    if (!rl_test_quick()) /* packaging, not the runtime: the normal build only */
        tcase_add_test(t, test_release_builds_and_grades_zero);
    suite_add_tcase(s, t);
    return s;
}
