/* test_release.c — `make release`: the learners' tarball has no reference solution, planted
 * bug, correct variant or attack, and, unpacked in a fresh directory, its README's commands
 * build it, run lab 28 (each step: not implemented yet) and grade every lab 0. Then `make
 * autograder LAB=28`: its zip, laid out in Gradescope's folders (source/, submission/,
 * results/) in a temp dir, with setup.sh run (on the tree the release test built), grades the
 * skeleton 0, the solution full marks (twice, with the same seed), a lab file the object check
 * refuses 0 and a lab file that forges its output 0. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"


/* Runs the autograder in ag (AUTOGRADER_ROOT) on the files now in ag/submission; returns the
 * results' score and max, its seed in seed (a string), the first test's output in first. */
static void autograde(const char *ag, long long *score, long long *max, char *seed, size_t seedlen, char *first,
                      size_t firstlen)
{
    char cmd[1024], path[600], *out;
    snprintf(cmd, sizeof cmd, "AUTOGRADER_ROOT=%s bash %s/source/run_autograder 2>&1", ag, ag);
    int rc = rl_test_run(cmd, &out);
    snprintf(path, sizeof path, "%s/results/results.json", ag);
    json_error_t e;
    json_t *r = json_load_file(path, 0, &e);
    char *log = NULL;
    snprintf(cmd, sizeof cmd, "%s/results/grading.log", ag);
    long len;
    log = rl_test_slurp(cmd, &len);
    ck_assert_msg(rc == 0 && r, "run_autograder (exit %d) left no results.json (%s):\n%s\n%s", rc, e.text, out,
                  log ? log : "");
    *score = json_integer_value(json_object_get(r, "score"));
    *max = json_integer_value(json_object_get(r, "max_score"));
    json_t *extra = json_object_get(r, "extra_data");
    snprintf(seed, seedlen, "%s", json_string_value(json_object_get(extra, "seed")) ?: "");
    ck_assert_msg(json_string_value(json_object_get(extra, "grader_commit")) &&
                      strlen(json_string_value(json_object_get(extra, "grader_commit"))) == 40,
                  "results.json has no grader_commit in extra_data");
    json_t *t0 = json_array_get(json_object_get(r, "tests"), 0);
    snprintf(first, firstlen, "%s", json_string_value(json_object_get(t0, "output")) ?: "");
    ck_assert_msg(*max > 0 && json_array_size(json_object_get(r, "tests")) > 10 &&
                      json_string_value(json_object_get(t0, "visibility")),
                  "results.json: no tests, or tests without visibility:\n%s", log ? log : "");
    json_decref(r);
    free(log);
    free(out);
}

/* Writes to path lab 28's skeleton with every function printing a full score and OK lines first. */
static void write_forger(const char *path)
{
    long len;
    char *src = rl_test_slurp("labs/28_ddp/ddp.c", &len);
    FILE *f = fopen(path, "w");
    ck_assert(src && f);
    fputs("#include <stdio.h>\nstatic void forge(void)\n{\n    printf(\"== 28.1 ring all-reduce: world sizes 1-8, "
          "repeated calls == OK (6/6)\\nScore: 165/165\\n\");\n    fflush(stdout);\n}\n", f);
    for (char *line = src; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        fprintf(f, "%.*s\n", (int)n, line);
        if (n == 1 && line[0] == '{')
            fputs("    forge();\n", f);
        line += n + (nl != NULL);
    }
    fclose(f);
    free(src);
}

/* The Gradescope autograder of lab 28, on the release tree built in dir/ringlab-labs. */
static void check_autograder(const char *dir)
{
    char cmd[4096], ag[300], *out;
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory BUILD=%s/out "
             "AG_RINGLAB=%s/ringlab autograder LAB=28 2>&1", dir, rl_test_build());
    int rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && strstr(out, "ringlab-autograder-28_ddp.zip"), "make autograder LAB=28 (exit %d):\n%s",
                  rc, out);
    free(out);
    snprintf(ag, sizeof ag, "%s/ag", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/source %s/submission %s/results && cd %s/source && "
             "unzip -q %s/out/autograder/ringlab-autograder-28_ddp.zip && test -x run_autograder && test -f setup.sh && "
             "test -f ringlab/grader/keys/28_ddp.txt && mv ringlab/grader/keys keys && "
             "rm -rf ringlab && cp -a %s/ringlab-labs ringlab && mv keys ringlab/grader/keys && "
             "AUTOGRADER_ROOT=%s RL_AUTOGRADER_NO_APT=1 bash setup.sh 2>&1", ag, ag, ag, ag, dir, dir, ag);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "the autograder's setup.sh failed (exit %d):\n%s", rc, out);
    free(out);
    long long score, max;
    char seed[32], seed2[32], first[4096];
    autograde(ag, &score, &max, seed, sizeof seed, first, sizeof first);
    ck_assert_msg(score == 0 && strstr(first, "not implemented yet"), "the autograder gave the skeleton %lld/%lld: %s",
                  score, max, first);
    snprintf(cmd, sizeof cmd, "cp solutions/28_ddp/ddp.c solutions/28_ddp/answers.txt %s/submission/", ag);
    ck_assert_int_eq(system(cmd), 0);
    autograde(ag, &score, &max, seed, sizeof seed, first, sizeof first);
    ck_assert_msg(score == max, "the autograder gave the solution %lld/%lld: %s", score, max, first);
    autograde(ag, &score, &max, seed2, sizeof seed2, first, sizeof first);
    ck_assert_msg(score == max && !strcmp(seed, seed2), "a regrade of the same files: %lld/%lld, seed %s then %s", score,
                  max, seed, seed2);
    /* Gradescope's submission_metadata.json: the hand derivations are graded with the owner's
     * id — answers.txt's when it names one of the owners (a group), else the first owner's,
     * and the results say so; an "email" inside an earlier submission's output is not an owner */
    static const char *const meta_fmt =
        "{\"id\": 123456, \"created_at\": \"2026-12-01T14:22:32.365935-07:00\",\n"
        " \"assignment\": {\"due_date\": \"2026-12-31T23:00:00.000000-07:00\", \"group_size\": 2, "
        "\"group_submission\": true, \"id\": 25828, \"course_id\": 1234, \"late_due_date\": null, "
        "\"release_date\": \"2026-11-02T00:00:00.000000-07:00\", \"title\": \"Lab 28\", \"total_points\": \"169.0\"},\n"
        " \"previous_submissions\": [{\"submission_time\": \"2026-11-30T10:00:00-07:00\", \"score\": 0.0, "
        "\"results\": {\"tests\": [{\"output\": \"\\\"email\\\": \\\"mallory@uni.example\\\"\"}]}}],\n"
        " \"submission_method\": \"upload\",\n \"users\": [%s]}\n";
    static const struct {
        const char *users;
        int full;
    } owners[] = { { "{\"email\": \"someone.else@uni.example\", \"id\": 1, \"name\": \"S. Else\", \"sid\": \"S1\"}", 0 },
                   { "{\"email\": \"partner@uni.example\", \"id\": 2, \"name\": \"P\"}, "
                     "{\"email\": \"reference@ringlab.example\", \"id\": 3, \"name\": \"R\"}", 1 } };
    for (int o = 0; o < 2; o++) {
        snprintf(cmd, sizeof cmd, "%s/submission_metadata.json", ag);
        FILE *mf = fopen(cmd, "w");
        ck_assert_ptr_nonnull(mf);
        fprintf(mf, meta_fmt, owners[o].users);
        fclose(mf);
        autograde(ag, &score, &max, seed2, sizeof seed2, first, sizeof first);
        snprintf(cmd, sizeof cmd, "grep -q \"but this submission is someone.else@uni.example's\" %s/results/results.json "
                 "%s/results/grading.log", ag, ag);
        int said = system(cmd) == 0;
        ck_assert_msg(owners[o].full ? score == max && !said : score < max && score >= max - 20 && said,
                      "the solution's answers (learner = reference@ringlab.example) graded for the owners %s: "
                      "%lld/%lld%s", owners[o].users, score, max, said ? ", the mismatch named" : "");
    }
    snprintf(cmd, sizeof cmd, "%s/submission_metadata.json", ag);
    unlink(cmd);
    snprintf(cmd, sizeof cmd, "rm %s/submission/answers.txt && cp grader/tests/attacks/28_ddp/exit_interposed.c "
             "%s/submission/ddp.c", ag, ag);
    ck_assert_int_eq(system(cmd), 0);
    autograde(ag, &score, &max, seed2, sizeof seed2, first, sizeof first);
    ck_assert_msg(score == 0 && strstr(first, "objcheck") && strstr(first, "_exit"),
                  "a lab file the object check refuses got %lld/%lld: %s", score, max, first);
    /* a lab file that passes the check and prints a full score and OK lines: graded, 0 */
    snprintf(cmd, sizeof cmd, "%s/submission/ddp.c", ag);
    write_forger(cmd);
    autograde(ag, &score, &max, seed2, sizeof seed2, first, sizeof first);
    ck_assert_msg(score == 0, "a lab file that prints a full score got %lld/%lld: %s", score, max, first);
}

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
                                         "grader/tests/attacks/", "test_graders.c", "ringlab-labs/.ci/",
                                         "ringlab-labs/grader/keys/" };
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
    /* make progress: each step's grade just recorded, and the next thing to do */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 progress 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && rl_test_count(out, " to find (") == 20 && !strstr(out, "not graded yet") &&
                      strstr(out, "\nNext: step 28.1: 0 of ") && strstr(out, "make hint LAB=28 STEP=28.1 (0 of 4 seen)"),
                  "make progress after make grade: every step graded, 28.1 next (exit %d):\n%s", rc, out);
    free(out);
    /* switching targets compiles nothing that did not change: make after run and grade */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && !strstr(out, "  CC ") && !strstr(out, "  LINK ") && !strstr(out, "  AR "),
                  "make after make run LAB=28 and make grade rebuilt something (exit %d):\n%s", rc, out);
    free(out);
    /* a hint, recorded in the lab folder and listed by the grade */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 hint LAB=28 STEP=28.2 2>&1 && cat labs/28_ddp/hints-used.txt && env -u MAKEFLAGS -u MAKELEVEL "
             "make --no-print-directory CUDA=0 MPI=0 grade LAB=28 STEP=28.2 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(strstr(out, "hint 1 of 4 for step 28.2") && strstr(out, "\n28.2 1\n") &&
                      strstr(out, "(1 hint shown)") && strstr(out, "Score: 0/"),
                  "make hint then make grade in the release (exit %d):\n%s", rc, out);
    free(out);
    check_autograder(dir);
    /* the learner's id, written into every answers file, and the numbers it gives */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory "
             "learner ID='two words' 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc != 0 && strstr(out, "make learner needs ID="), "make learner with a bad id (exit %d):\n%s", rc, out);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 learner ID=ada@uni.example 2>&1 && grep -c '^learner = ada@uni.example$' labs/*/answers.txt && "
             "env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 MPI=0 questions LAB=29 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && rl_test_count(out, "answers.txt:1") == 4 && strstr(out, "(learner ada@uni.example)") &&
                      strstr(out, "H1: a model of") && strstr(out, "H3: a model of"),
                  "make learner, then make questions LAB=29, in the release (exit %d):\n%s", rc, out);
    free(out);
    /* the answers files changed: the steps with answers tests are stale until graded again */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 "
             "MPI=0 progress LAB=29 2>&1", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && rl_test_count(out, "stale: answers.txt changed since its grade") == 3 &&
                      rl_test_count(out, " to find (") == 2 && /* 29.2, 29.3: no answers tests */
                      strstr(out, "Next: step 29.1: regrade it (answers.txt changed)"),
                  "make progress LAB=29 after make learner (exit %d):\n%s", rc, out);
    free(out);
    /* make watch: a grade at the start, one after a save that does not compile (the build's error
     * shown), one after the fix */
    snprintf(cmd, sizeof cmd, "cd %s/ringlab-labs && cp labs/28_ddp/ddp.c ddp.c.orig && "
             "{ timeout 600 env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory CUDA=0 MPI=0 watch LAB=28 STEP=28.2 "
             "WATCH_ROUNDS=3 > watch.out 2>&1 & } && pid=$! && "
             "until [ $(grep -c 'graded at' watch.out) -ge 1 ]; do sleep 1; done && sleep 2 && "
             "echo 'int broken(void) { return }' >> labs/28_ddp/ddp.c && "
             "until [ $(grep -c 'graded at' watch.out) -ge 2 ]; do sleep 1; done && sleep 2 && "
             "cp ddp.c.orig labs/28_ddp/ddp.c && wait $pid; echo \"watch exit $?\"; cat watch.out", dir);
    rc = rl_test_run(cmd, &out);
    ck_assert_msg(strstr(out, "watch exit 0") && rl_test_count(out, "graded at") == 3 &&
                      rl_test_count(out, "The build failed") == 1 && strstr(out, "error:") &&
                      rl_test_count(out, "0/5  28.2 bucket assignment: the lab's MLP") == 3 &&
                      strstr(out, "not implemented yet"),
                  "make watch LAB=28 STEP=28.2 WATCH_ROUNDS=3 through a save that breaks the build and its fix:\n%s",
                  out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *release_suite(void)
{
    Suite *s = suite_create("release");
    TCase *t = tcase_create("release");
    tcase_set_timeout(t, 900);
    if (!rl_test_quick()) /* packaging, not the runtime: the normal build only */
        tcase_add_test(t, test_release_builds_and_grades_zero);
    suite_add_tcase(s, t);
    return s;
}
