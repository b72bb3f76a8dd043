/* test_fuzz.c — the fuzz targets in make test: every build replays the regression corpus
 * (fuzz/regress/, the inputs that once crashed or hung) and the programs' own seeds through
 * each target; the clang sanitizer build also fuzzes each target for a short smoke
 * (RL_FUZZ_SMOKE_SECONDS, default 8). make fuzz runs them for longer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../common/tests/testutil.h"

static const char *const targets[] = { "trace", "flight", "answers", "options" };
#define NTARGETS (int)(sizeof targets / sizeof targets[0])

static char seeds[64];         /* a temporary folder with fuzz/seeds.sh's corpora, made once */
static char seeds_error[4096]; /* why it could not be made ("" when it was) */

static void seeds_setup(void)
{
    snprintf(seeds, sizeof seeds, "/tmp/rl_fuzz_XXXXXX");
    if (!mkdtemp(seeds)) {
        snprintf(seeds_error, sizeof seeds_error, "cannot make a folder in /tmp");
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "fuzz/seeds.sh %s/ringlab %s/seeds 2>&1", rl_test_build(), seeds);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(seeds_error, 1, sizeof seeds_error - 1, p) : 0;
    seeds_error[n] = 0;
    int st = p ? pclose(p) : -1;
    if (st == 0)
        seeds_error[0] = 0;
    else if (!seeds_error[0])
        snprintf(seeds_error, sizeof seeds_error, "`%s` failed", cmd);
}

static void seeds_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", seeds);
    if (system(cmd))
        fprintf(stderr, "cannot remove %s\n", seeds);
}

/* Every input of fuzz/regress/T and of the seeds, once, through the target built here. */
START_TEST(test_regress_and_seeds_replay)
{
    const char *t = targets[_i];
    ck_assert_msg(!seeds_error[0], "fuzz/seeds.sh failed:\n%s", seeds_error);
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "timeout 120 %s/fuzz/%s-replay fuzz/regress/%s %s/seeds/%s 2>&1", rl_test_build(), t,
             t, seeds, t);
    int rc = rl_test_run(cmd, &out);
    int n = 0;
    const char *at = strstr(out, "replayed ");
    ck_assert_msg(rc == 0 && at && sscanf(at, "replayed %d", &n) == 1, "fuzz target %s: `%s` exit %d:\n%s", t, cmd, rc,
                  out);
    ck_assert_msg(n >= 2, "fuzz target %s replayed only %d inputs: the regression corpus and the seeds are missing",
                  t, n);
    free(out);
}
END_TEST

/* libFuzzer from the seeds and the regression corpus for a few seconds: no crash, no leak, no
 * hang, no run past the memory limit. */
START_TEST(test_smoke)
{
    const char *t = targets[_i];
    char bin[256];
    snprintf(bin, sizeof bin, "%s/fuzz/%s-fuzz", rl_test_build(), t);
    if (access(bin, X_OK)) {
        ck_assert_msg(!getenv("CI"), "%s is missing: under CI the sanitizer build is clang's and builds the fuzz "
                      "targets (make deps installs clang)", bin);
        return; /* a gcc build: the replay above is its part */
    }
    ck_assert_msg(!seeds_error[0], "fuzz/seeds.sh failed:\n%s", seeds_error);
    const char *s = getenv("RL_FUZZ_SMOKE_SECONDS");
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "mkdir -p %s/corpus-%s && timeout 300 %s -max_total_time=%d -timeout=20 "
             "-rss_limit_mb=3072 -artifact_prefix=%s/ %s/corpus-%s %s/seeds/%s fuzz/regress/%s 2>&1", seeds, t, bin,
             s ? atoi(s) : 8, seeds, seeds, t, seeds, t, t);
    int rc = rl_test_run(cmd, &out);
    size_t len = strlen(out);
    ck_assert_msg(rc == 0, "fuzz target %s found an input that fails (exit %d): the input is in %s/ (crash-*, "
                  "leak-*, timeout-*); copy it into fuzz/regress/%s/, fix the code, and commit both. The end of its "
                  "output:\n%s", t, rc, seeds, t, out + (len > 3000 ? len - 3000 : 0));
    free(out);
}
END_TEST

Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("fuzz");
    tcase_set_timeout(tc, 400);
    tcase_add_unchecked_fixture(tc, seeds_setup, seeds_teardown);
    tcase_add_loop_test(tc, test_regress_and_seeds_replay, 0, NTARGETS);
    if (rl_test_quick()) /* the sanitizer build (clang's, in make test) */
        tcase_add_loop_test(tc, test_smoke, 0, NTARGETS);
    suite_add_tcase(s, tc);
    return s;
}
