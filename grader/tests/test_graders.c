/* test_graders.c — every lab's grader graded: the reference solution scores full marks (and
 * writes valid Gradescope JSON) in under a minute, the untouched skeleton scores 0 without a
 * crash or a hang in under a minute, the solution copied over the skeleton scores full marks,
 * and each bug planted in a copy of the solution (grader/tests/bugs/NN_name/NAME.sed) loses
 * the points of the tests meant to catch it. The graders are the binaries the Makefile built
 * under $RINGLAB_BUILD (build/ or build/asan/). A new lab adds one row to `lab_cases` below. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

typedef struct grade_out {
    char *text;          /* stdout and stderr of the grader */
    int status;          /* exit status (-1 if it did not exit normally) */
    double seconds;
    int score, max;      /* from the last `Score: X/Y` line (-1 if none) */
} grade_out;

/* Runs a shell command, capturing its output. */
static void run_cmd(const char *cmd, grade_out *g)
{
    memset(g, 0, sizeof *g);
    g->score = g->max = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    size_t cap = 1 << 16, len = 0;
    g->text = malloc(cap);
    size_t k;
    while ((k = fread(g->text + len, 1, cap - len - 1, p)) > 0) {
        len += k;
        if (cap - len < 4096)
            g->text = realloc(g->text, cap *= 2);
    }
    g->text[len] = 0;
    int st = pclose(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g->seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    g->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    for (char *s = g->text; (s = strstr(s, "Score: ")); s++)
        sscanf(s, "Score: %d/%d", &g->score, &g->max);
}

/* Runs a grader binary of the build ("labs/NN_name/grade", "solutions/...", "variants/..."). */
static void run_grader(const char *binary, const char *answers, const char *extra, grade_out *g)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "env -u CK_RUN_SUITE -u CK_RUN_CASE %s/%s --answers %s %s 2>&1", rl_test_build(), binary,
             answers, extra ? extra : "");
    run_cmd(cmd, g);
}

/* Line of lab `num`'s grader output for a test title, or NULL. */
static const char *test_line(const grade_out *g, const char *num, const char *title)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "== %s.", num);
    const char *s = g->text;
    while ((s = strstr(s, prefix))) {
        const char *eol = strchr(s, '\n');
        size_t n = eol ? (size_t)(eol - s) : strlen(s);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < 511 ? n : 511), s);
        if (strstr(line, title))
            return s;
        s += n;
    }
    return NULL;
}

static int test_failed(const grade_out *g, const char *num, const char *title)
{
    const char *l = test_line(g, num, title);
    if (!l)
        return 0;
    const char *eol = strchr(l, '\n');
    const char *f = strstr(l, "== FAIL");
    return f && (!eol || f < eol);
}

/* A bug planted in a copy of a solution, and the tests that must catch it (each must FAIL). */
typedef struct planted_bug {
    const char *bug, *step;
    const char *must_fail[3];
} planted_bug;

typedef struct lab_case {
    const char *num, *dir;     /* "28", "28_ddp" */
    const char *tcase;         /* "lab28": CK_RUN_CASE=lab28 runs one lab */
    const char *todo_message;  /* what the untouched skeleton says first */
    const planted_bug *bugs;
    int nbugs;
} lab_case;

static const planted_bug bugs28[] = {
    { "forget_average", "28.3", { "gradients = one-rank global-batch gradients", NULL } },
    { "reverse_bucket_order", "28.2", { "reverse registration order", "the lab's MLP", NULL } },
    { "serialize_after_backward", "28.3",
      { "first bucket's all-reduce starts before backward ends", "exposed comm below the bound", NULL } },
    { "through_rank0", "28.1", { "bytes sent = 2(n-1)/n x S", NULL } },
};

static const planted_bug bugs29[] = {
    { "skip_param_all_gather", "29.2", { "parameters after 3 steps = DDP+AdamW baseline", NULL } },
    { "full_grad_buffer", "29.3", { "gradient memory 2psi/N + buckets, no full buffer", NULL } },
    { "keep_gathered_params", "29.4", { "memory: shard + two units, all freed after the step", NULL } },
    { "prefetch_wrong_unit", "29.4", { "prefetch hides comm (exposed comm drops)", NULL } },
};

static const planted_bug bugs30[] = {
    { "forget_f_backward_all_reduce", "30.1",
      { "backward: dx and gradient shards = dense", "one all-reduce forward, one backward", NULL } },
    { "sp_all_reduce_not_reduce_scatter", "30.3", { "same comm volume as TP alone", NULL } },
    { "1f1b_wrong_warmup", "30.4", { "schedules validate (dependencies, no deadlock)", "gradients = unpipelined model", NULL } },
    { "lse_merge_no_rescale", "30.5", { "log-sum-exp merge", "ring attention = full attention", NULL } },
};

static const planted_bug bugs31[] = {
    { "dp_innermost", "31.1", { "3D layouts = mesh.h (coords, groups, nodes)", NULL } },
    { "zero1_gather_wrong_group", "31.2", { "dp2 x pp2 x tp2 = one-rank run after 3 steps", NULL } },
    { "no_capacity", "31.3", { "dropped tokens follow the capacity rule", NULL } },
    { "blame_waiting_rank", "31.4", { "hidden hang scenarios: culprit rank and seq", NULL } },
    { "few_microbatches_unflagged", "31.5", { "warnings: TP across nodes, m < 4p, out of memory", NULL } },
};

#define NBUGS(b) ((int)(sizeof b / sizeof b[0]))
static const lab_case lab_cases[] = {
    { "28", "28_ddp", "lab28", "step 28.1 (ring all-reduce) is not implemented yet — see labs/28_ddp/README.md", bugs28,
      NBUGS(bugs28) },
    { "29", "29_zero_fsdp", "lab29", "step 29.1 (memory model) is not implemented yet — see labs/29_zero_fsdp/README.md",
      bugs29, NBUGS(bugs29) },
    { "30", "30_tp_pp_sp_cp", "lab30",
      "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md", bugs30,
      NBUGS(bugs30) },
    { "31", "31_3d_moe_debug", "lab31", "step 31.1 (device mesh) is not implemented yet — see labs/31_3d_moe_debug/README.md",
      bugs31, NBUGS(bugs31) },
};
#define NLABS ((int)(sizeof lab_cases / sizeof lab_cases[0]))

/* Runs the grader of one build variant of a lab ("labs/28_ddp", "solutions/...", "variants/..."). */
static void run_variant(const char *variant, const char *answers, const char *extra, grade_out *g)
{
    char bin[256];
    snprintf(bin, sizeof bin, "%s/grade", variant);
    run_grader(bin, answers, extra, g);
}

START_TEST(test_solution_full_marks)
{
    const lab_case *l = &lab_cases[_i];
    char json[128], extra[200], variant[64], answers[128];
    snprintf(json, sizeof json, "/tmp/rl_grade%s_%d.json", l->num, (int)getpid());
    snprintf(extra, sizeof extra, "--json %s", json);
    snprintf(variant, sizeof variant, "solutions/%s", l->dir);
    snprintf(answers, sizeof answers, "solutions/%s/answers.txt", l->dir);
    grade_out g;
    run_variant(variant, answers, extra, &g);
    ck_assert_msg(g.status == 0 && g.max > 0 && g.score == g.max,
                  "lab %s: the reference solution must score full marks (exit %d, score %d/%d):\n%s", l->num, g.status,
                  g.score, g.max, g.text);
    if (!rl_test_quick()) /* sanitizer builds are several times slower */
        ck_assert_msg(g.seconds < 60, "grading the reference solution took %.1f s (limit 60 s)", g.seconds);
    /* the last line is the score */
    size_t len = strlen(g.text);
    while (len && g.text[len - 1] == '\n')
        g.text[--len] = 0;
    const char *last = strrchr(g.text, '\n');
    ck_assert_msg(last && strncmp(last + 1, "Score: ", 7) == 0, "the last line must be `Score: X/Y`");
    /* Gradescope JSON: score, tests[] with name, score, max_score, output */
    json_error_t err;
    json_t *root = json_load_file(json, 0, &err);
    ck_assert_msg(root != NULL, "results JSON does not parse: %s (line %d)", err.text, err.line);
    ck_assert_int_eq((int)json_number_value(json_object_get(root, "score")), g.score);
    json_t *tests = json_object_get(root, "tests");
    ck_assert(json_is_array(tests) && json_array_size(tests) > 20);
    int sum = 0, maxsum = 0;
    for (size_t i = 0; i < json_array_size(tests); i++) {
        json_t *t = json_array_get(tests, i);
        ck_assert(json_is_string(json_object_get(t, "name")) && json_is_string(json_object_get(t, "output")));
        ck_assert(json_is_number(json_object_get(t, "score")) && json_is_number(json_object_get(t, "max_score")));
        sum += (int)json_number_value(json_object_get(t, "score"));
        maxsum += (int)json_number_value(json_object_get(t, "max_score"));
    }
    ck_assert_int_eq(sum, g.score);
    ck_assert_int_eq(maxsum, g.max);
    json_decref(root);
    unlink(json);
    free(g.text);
}
END_TEST

START_TEST(test_skeleton_scores_zero)
{
    const lab_case *l = &lab_cases[_i];
    char variant[64], answers[128];
    snprintf(variant, sizeof variant, "labs/%s", l->dir);
    snprintf(answers, sizeof answers, "labs/%s/answers.txt", l->dir);
    grade_out g;
    run_variant(variant, answers, NULL, &g);
    ck_assert_msg(g.status == 1 && g.score == 0 && g.max > 0,
                  "lab %s: the untouched skeleton must score 0 and exit 1 (exit %d, score %d/%d):\n%s", l->num, g.status,
                  g.score, g.max, g.text);
    ck_assert_msg(!strstr(g.text, "crashed:") && !strstr(g.text, "timed out"),
                  "the skeleton must fail softly (no crash, no hang):\n%s", g.text);
    ck_assert_msg(strstr(g.text, l->todo_message), "the not-implemented message is missing:\n%s", g.text);
    if (!rl_test_quick()) /* sanitizer builds are several times slower */
        ck_assert_msg(g.seconds < 60, "grading the skeleton took %.1f s (limit 60 s)", g.seconds);
    free(g.text);
}
END_TEST

START_TEST(test_copy_full_marks)
{
    const lab_case *l = &lab_cases[_i];
    char variant[64], answers[256];
    snprintf(variant, sizeof variant, "variants/%s/copy", l->dir);
    snprintf(answers, sizeof answers, "%s/variants/%s/copy/answers.txt", rl_test_build(), l->dir);
    grade_out g;
    run_variant(variant, answers, NULL, &g);
    ck_assert_msg(g.status == 0 && g.max > 0 && g.score == g.max,
                  "lab %s: the solution copied over the skeleton must score full marks (exit %d, score %d/%d):\n%s",
                  l->num, g.status, g.score, g.max, g.text);
    free(g.text);
}
END_TEST

/* _i numbers every (lab, bug) pair: lab 0's bugs first, then lab 1's ... */
START_TEST(test_planted_bugs_caught)
{
    int i = _i, li = 0;
    while (i >= lab_cases[li].nbugs)
        i -= lab_cases[li++].nbugs;
    const lab_case *l = &lab_cases[li];
    const planted_bug *b = &l->bugs[i];
    char variant[128], answers[128], extra[64];
    snprintf(variant, sizeof variant, "variants/%s/bug_%s", l->dir, b->bug);
    snprintf(answers, sizeof answers, "solutions/%s/answers.txt", l->dir);
    snprintf(extra, sizeof extra, "--step %s", b->step);
    grade_out g;
    run_variant(variant, answers, extra, &g);
    ck_assert_msg(g.max > 0 && !strstr(g.text, "crashed:"), "bug %s: the grader did not finish cleanly:\n%s", b->bug,
                  g.text);
    for (int k = 0; k < 3 && b->must_fail[k]; k++)
        ck_assert_msg(test_failed(&g, l->num, b->must_fail[k]), "bug %s was not caught by '%s':\n%s", b->bug,
                      b->must_fail[k], g.text);
    ck_assert_msg(g.status != 0 && g.score < g.max, "bug %s: exit %d, score %d/%d", b->bug, g.status, g.score, g.max);
    free(g.text);
}
END_TEST

Suite *graders_suite(void)
{
    Suite *s = suite_create("graders");
    double slow = rl_test_quick() ? 8.0 : 1.0; /* sanitizer builds run several times slower */
    int first_bug = 0;
    for (int i = 0; i < NLABS; i++) {
        TCase *tc = tcase_create(lab_cases[i].tcase);
        tcase_set_timeout(tc, 240 * slow);
        tcase_add_loop_test(tc, test_solution_full_marks, i, i + 1);
        tcase_add_loop_test(tc, test_skeleton_scores_zero, i, i + 1);
        tcase_add_loop_test(tc, test_copy_full_marks, i, i + 1);
        tcase_add_loop_test(tc, test_planted_bugs_caught, first_bug, first_bug + lab_cases[i].nbugs);
        first_bug += lab_cases[i].nbugs;
        suite_add_tcase(s, tc);
    }
    return s;
}
