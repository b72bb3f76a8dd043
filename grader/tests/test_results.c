/* test_results.c — `make grade`'s score comes from the graders' results files
 * (grader/results.c): the sum of their tests, a missing or forged file fails, and the
 * course's combined Gradescope file adds the labs up. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

/* Writes a results file of two tests scoring a/2 and b/3, stating score/max. */
static void write_results(const char *path, int a, int b, int score, int max)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"score\": %d, \"max_score\": %d, \"execution_time\": 1.5, \"extra_data\": {\"seed\": \"7\"},"
               " \"tests\": [{\"name\": \"t1\", \"score\": %d, \"max_score\": 2},"
               " {\"name\": \"t2\", \"score\": %d, \"max_score\": 3}]}\n", score, max, a, b);
    fclose(f);
}

/* Runs the results tool with args; returns its exit status and output (malloc'd). */
static int results(const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/results %s 2>&1", rl_test_build(), args);
    return rl_test_run(cmd, out);
}

START_TEST(test_score_from_files)
{
    char a[64], b[64], all[64], args[512], *out;
    snprintf(a, sizeof a, "/tmp/rl_res_a_%d.json", (int)getpid());
    snprintf(b, sizeof b, "/tmp/rl_res_b_%d.json", (int)getpid());
    snprintf(all, sizeof all, "/tmp/rl_res_all_%d.json", (int)getpid());
    write_results(a, 2, 3, 5, 5);
    write_results(b, 0, 3, 3, 5);
    snprintf(args, sizeof args, "--out %s 28=%s 29=%s", all, a, b);
    int rc = results(args, &out);
    ck_assert_msg(rc == 1 && strstr(out, "lab 28: 5/5") && strstr(out, "lab 29: 3/5") && strstr(out, "Score: 8/10"),
                  "exit %d:\n%s", rc, out);
    free(out);
    json_t *j = json_load_file(all, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "score")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_score")), 10);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "tests")), 4);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(j, "extra_data"), "seeds"), "29")),
                     "7");
    json_decref(j);
    snprintf(args, sizeof args, "28=%s", a); /* full marks: exit 0 */
    rc = results(args, &out);
    ck_assert_msg(rc == 0 && strstr(out, "5/5"), "exit %d:\n%s", rc, out);
    free(out);
    unlink(a);
    unlink(b);
    unlink(all);
}
END_TEST

/* A file whose total is not its tests' sum, a test above its maximum, a missing file and
 * bad usage all fail: the score cannot be stated, only earned test by test. */
START_TEST(test_forged_or_missing_files_fail)
{
    char a[64], args[512], *out;
    snprintf(a, sizeof a, "/tmp/rl_res_f_%d.json", (int)getpid());
    write_results(a, 0, 0, 5, 5); /* states 5/5, its tests earned 0 */
    snprintf(args, sizeof args, "28=%s", a);
    int rc = results(args, &out);
    ck_assert_msg(rc == 1 && strstr(out, "add up to 0/5"), "exit %d:\n%s", rc, out);
    free(out);
    write_results(a, 9, 3, 5, 5); /* a test above its maximum */
    rc = results(args, &out);
    ck_assert_msg(rc == 1 && strstr(out, "without a valid score"), "exit %d:\n%s", rc, out);
    free(out);
    unlink(a);
    rc = results(args, &out); /* the grader did not finish */
    ck_assert_msg(rc == 1 && strstr(out, "no results") && strstr(out, "did not finish"), "exit %d:\n%s", rc, out);
    free(out);
    rc = results("", &out);
    ck_assert_msg(rc == 2 && strstr(out, "usage:"), "exit %d:\n%s", rc, out);
    free(out);
}
END_TEST

Suite *results_suite(void)
{
    Suite *s = suite_create("results");
    TCase *t = tcase_create("results");
    tcase_add_test(t, test_score_from_files);
    tcase_add_test(t, test_forged_or_missing_files_fail);
    suite_add_tcase(s, t);
    return s;
}
