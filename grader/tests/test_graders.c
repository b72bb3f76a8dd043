/* test_graders.c — every lab's grader graded: the reference solution scores full marks (and
 * writes valid Gradescope JSON) in under a minute, the untouched skeleton scores 0 without a
 * crash or a hang in under a minute, the solution copied over the skeleton scores full marks;
 * each bug planted in a copy of the solution (grader/tests/bugs/NN_name/NAME.sed) fails the
 * tests its header names, and each correct variant (grader/tests/variants/NN_name/NAME.sed)
 * scores full marks, on every one of the pinned seeds. The graders are the binaries the
 * Makefile built under $RINGLAB_BUILD (build/ or build/asan/). A new lab adds one row to
 * `lab_cases` below; a new bug or variant is one sed file. */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "calc.h"
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

/* Line of lab `num`'s grader output for the test of exactly this title, or NULL. */
static const char *test_line(const grade_out *g, const char *num, const char *title)
{
    char prefix[16], key[200];
    snprintf(prefix, sizeof prefix, "== %s.", num);
    snprintf(key, sizeof key, ": %s == ", title);
    const char *s = g->text;
    while ((s = strstr(s, prefix))) {
        const char *eol = strchr(s, '\n');
        size_t n = eol ? (size_t)(eol - s) : strlen(s);
        const char *k = strstr(s, key);
        if (k && k < s + n)
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

/* Lab 29's numbers for a learner, as `grade --questions` prints them. */
typedef struct numbers29 {
    double psi1, n1, mem2, n2, psi3, bw3;
    int pct1;
} numbers29;

static numbers29 questions29(const char *learner, char **text)
{
    char extra[160];
    grade_out g;
    snprintf(extra, sizeof extra, "--questions --learner %s", learner);
    run_grader("solutions/29_zero_fsdp/grade", "solutions/29_zero_fsdp/answers.txt", extra, &g);
    numbers29 q = { 0 };
    const char *h1 = strstr(g.text, "(Ψ = "), *h2 = strstr(g.text, "H2: each GPU has "),
               *h3 = strstr(g.text, "H3: a model of "), *at = h3 ? strstr(h3, " at ") : NULL;
    ck_assert_msg(g.status == 0 && h1 && h2 && h3 && at, "grade --questions --learner %s:\n%s", learner, g.text);
    ck_assert_int_eq(sscanf(h1, "(Ψ = %lf) on %lf GPUs, K = 12; within %d%%", &q.psi1, &q.n1, &q.pct1), 3);
    ck_assert_int_eq(sscanf(h2, "H2: each GPU has %lf GB for model states; %lf GPUs", &q.mem2, &q.n2), 2);
    ck_assert_int_eq(sscanf(h3, "H3: a model of %lf", &q.psi3), 1);
    ck_assert_int_eq(sscanf(at, " at %lf GB/s", &q.bw3), 1);
    q.psi3 *= 1e9;
    *text = g.text;
    return q;
}

/* The hand derivations differ per learner (make learner, make questions): two ids get
 * different numbers; answers worked for one id get full marks with it and fail with the
 * other's (which the grade names); no learner id fails saying how to set it. */
START_TEST(test_questions_per_learner)
{
    char *ta, *tb;
    numbers29 b = questions29("bob@uni.example", &tb);
    questions29("ada@uni.example", &ta);
    ck_assert_msg(strcmp(strstr(ta, "H1:"), strstr(tb, "H1:")), "two learners got the same numbers:\n%s", ta);
    free(ta);
    free(tb);
    /* bob's answers, worked with the cost model */
    char path[64], cmd[1024];
    snprintf(path, sizeof path, "/tmp/rl_learner_%d.txt", (int)getpid());
    rl_calc_zero_in in1 = { b.psi1, (int)b.n1, 12, 0, 2 }, in2 = { 1, (int)b.n2, 12, 0, 2 };
    rl_calc_zero_out z1, z2;
    ck_assert(rl_calc_zero(&in1, &z1, NULL, 0) == 0 && rl_calc_zero(&in2, &z2, NULL, 0) == 0);
    double h2[4];
    for (int k = 0; k < 4; k++)
        h2[k] = b.mem2 / z2.bytes[k];
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "learner = bob@uni.example\nh1_ddp_gb = %.6g\nh1_zero1_gb = %.6g\nh1_zero2_gb = %.6g\n"
               "h1_zero3_gb = %.6g\nh1_zero1_gib = %.6g\nh1_gpus_near_floor = %d\nh2_ddp_b = %.6g\nh2_zero1_b = %.6g\nh2_zero2_b = %.6g\n"
               "h2_zero3_b = %.6g\nh3_extra_gb = %.6g\nh3_extra_s = %.6g\n",
            z1.bytes[RL_CALC_DDP] / 1e9, z1.bytes[RL_CALC_ZERO1] / 1e9, z1.bytes[RL_CALC_ZERO2] / 1e9,
            z1.bytes[RL_CALC_ZERO3] / 1e9, z1.bytes[RL_CALC_ZERO1] / 1073741824.0, (300 + b.pct1 - 1) / b.pct1, h2[RL_CALC_DDP], h2[RL_CALC_ZERO1],
            h2[RL_CALC_ZERO2], h2[RL_CALC_ZERO3], 2 * b.psi3 / 1e9, 2 * b.psi3 / (b.bw3 * 1e9));
    fclose(f);
    static const char *const titles[] = { "answers: your model on your GPUs, in GB and GiB",
                                          "answers: the largest model your GPUs hold, per stage",
                                          "answers: FSDP's extra traffic for your model on your link" };
    for (int as_ada = 0; as_ada < 2; as_ada++) {
        grade_out g;
        run_grader("solutions/29_zero_fsdp/grade", path,
                   as_ada ? "--step 29.1 --step 29.4 --learner ada@uni.example" : "--step 29.1 --step 29.4", &g);
        for (int k = 0; k < 3; k++)
            ck_assert_msg(test_line(&g, "29", titles[k]) && test_failed(&g, "29", titles[k]) == as_ada,
                          "bob's answers graded as %s: '%s' should %s:\n%s", as_ada ? "ada's" : "bob's", titles[k],
                          as_ada ? "fail" : "pass", g.text);
        if (as_ada)
            ck_assert_msg(strstr(g.text, "says learner = bob@uni.example, but this submission is ada@uni.example's"),
                          "the grade does not say whose numbers it used:\n%s", g.text);
        free(g.text);
    }
    /* no learner id */
    snprintf(cmd, sizeof cmd, "sed -i 's/^learner = .*/learner =/' %s", path);
    ck_assert_int_eq(system(cmd), 0);
    grade_out g;
    run_grader("solutions/29_zero_fsdp/grade", path, "--step 29.1", &g);
    ck_assert_msg(test_failed(&g, "29", titles[0]) && strstr(g.text, "make learner ID="), "%s", g.text);
    free(g.text);
    unlink(path);
}
END_TEST

/* The numbers of one "  Hk:" line of `grade --questions`, in order ("13·10⁹" is one number). */
static int question_numbers(const char *text, const char *h, double *v, int max)
{
    char tag[16];
    snprintf(tag, sizeof tag, "  %s:", h);
    const char *at = strstr(text, tag), *end = at ? strchr(at, '\n') : NULL;
    ck_assert_msg(at && end, "no '%s' line in:\n%s", tag, text);
    int k = 0;
    for (at += strlen(tag); at < end && k < max;) {
        char *next;
        double x = strtod(at, &next);
        if (next == at || !isdigit((unsigned char)*at) || isalnum((unsigned char)at[-1])) { /* not bf16's 16 */
            at++;
            continue;
        }
        if (!strncmp(next, "·10⁹", strlen("·10⁹"))) {
            x *= 1e9;
            next += strlen("·10⁹");
        }
        v[k++] = x;
        at = next;
    }
    return k;
}

/* The `ringlab calc` commands that check lab NN's derivation h on the learner's numbers v:
 * what a learner runs once they have worked it. */
static int calc_commands(const char *lab, const char *h, const double *v, char cmds[][256])
{
    int c = 0;
#define CMD(...) snprintf(cmds[c++], 256, __VA_ARGS__)
    if (!strcmp(lab, "28")) {
        if (!strcmp(h, "H1"))
            for (int k = 0; k < 3; k++)
                CMD("calc %s --bytes %gMB --ranks %g", (const char *[]){ "allreduce", "reduce_scatter", "all_gather" }[k],
                    v[1], v[0]);
        if (!strcmp(h, "H2"))
            for (int k = 0; k < 2; k++)
                CMD("calc allreduce --bytes 1MB --ranks %g --hw h100-2node-ib --algo %s", v[0], k ? "tree" : "ring");
        if (!strcmp(h, "H3"))
            for (int k = 1; k < 3; k++)
                CMD("calc allreduce --bytes %.0f --ranks %g", 2 * v[0], v[k]);
        if (!strcmp(h, "H6"))
            for (int k = 0; k < 2; k++)
                CMD("calc allreduce --bytes %gMiB --ranks %g --hw %s", v[0], v[1], k ? "a100-pcie" : "h100-nvlink");
    } else if (!strcmp(lab, "29")) {
        if (!strcmp(h, "H1"))
            CMD("calc zero --params %.0f --dp %g", v[0], v[2]);
        if (!strcmp(h, "H2"))
            for (int k = 0; k < 2; k++)
                CMD("calc zero --params %.0f --dp %g", k ? v[0] * 1e9 : 1e9, v[1]);
        if (!strcmp(h, "H3"))
            CMD("calc zero --params %.0f --dp 8", v[0]);
    } else if (!strcmp(lab, "30")) {
        if (!strcmp(h, "H1"))
            CMD("calc tp --h %g --b %g --s %g --t %g", v[0], v[1], v[2], v[3]);
        if (!strcmp(h, "H3"))
            for (int k = 0; k < 4; k++)
                CMD("calc bubble --pp %g --mb %g --v %g --schedule %s", v[0], v[1], k == 3 ? v[2] : 1,
                    (const char *[]){ "naive", "gpipe", "1f1b", "interleaved" }[k]);
        if (!strcmp(h, "H4"))
            for (int k = 0; k < 2; k++)
                CMD("calc activation --s %g --b %g --h %g --a %g --t %g%s", v[0], v[1], v[2], v[3], v[4],
                    k ? " --sp" : "");
    } else if (!strcmp(lab, "31")) {
        if (!strcmp(h, "H1"))
            for (int k = 0; k < 2; k++)
                CMD("calc zero --params %.0f --dp %g", k ? v[0] : v[0] / (v[1] * v[2]), v[3]);
        if (!strcmp(h, "H2"))
            CMD("calc moe --tokens %g --experts %g --topk %g --cf %g --hidden %g", v[0], v[1], v[2], v[3], v[4]);
        if (!strcmp(h, "H5")) { /* Ψ, L, h, a, S, B, G, TP, PP */
            CMD("calc plan --params %.0f --layers %g --hidden %g --heads %g --seq %g --gbs %g --gpus %g "
                "--hw h100-2node-ib --top 20", v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
            CMD("calc bubble --pp %g --mb %g --schedule 1f1b", v[8], v[5] / (v[6] / (v[7] * v[8])));
        }
    }
#undef CMD
    return c;
}

/* Whether out prints the number x, in any decimal unit (x·10^3k: MB for GB, µs for ms) or as a
 * percentage: a number of out within 0.2% of it; a whole x below 1000 (a count) only as itself. */
static int number_printed(const char *out, double x)
{
    int count = x == floor(x) && fabs(x) < 1000;
    for (const char *at = out; *at; at++) {
        if (!isdigit((unsigned char)*at) || (at > out && (isalnum((unsigned char)at[-1]) || at[-1] == '.')))
            continue;
        char *end;
        double y = strtod(at, &end);
        if (count) {
            if (y == x)
                return 1;
        } else
            for (int k = -4; k <= 4; k++) { /* and as a percentage of a fraction or back */
                double want = x * (k == -4 ? 0.01 : k == 4 ? 100 : pow(10, 3 * k));
                if (fabs(y - want) <= 2e-3 * fabs(want))
                    return 1;
            }
        at = end - 1;
    }
    return 0;
}

/* Issue: each hand derivation asks for at least one quantity that no calc command prints for
 * the learner's numbers. For the reference learner of each lab, every derivation's calc
 * commands run on its numbers, and at least one of its answers (solutions/NN/answers.txt,
 * which grade full marks) appears in none of their outputs. */
START_TEST(test_derivations_ask_what_calc_does_not_print)
{
    static const struct {
        const char *lab, *dir, *hs[9];
    } labs[] = { { "28", "28_ddp", { "H1", "H2", "H3", "H4", "H5", "H6", "H7", "H8" } },
                 { "29", "29_zero_fsdp", { "H1", "H2", "H3" } },
                 { "30", "30_tp_pp_sp_cp", { "H1", "H3", "H4" } },
                 { "31", "31_3d_moe_debug", { "H1", "H2", "H3", "H4", "H5" } } };
    char *out = malloc(1 << 16);
    int commands = 0;
    for (size_t l = 0; l < sizeof labs / sizeof labs[0]; l++) {
        char bin[96], answers[96];
        snprintf(bin, sizeof bin, "solutions/%s/grade", labs[l].dir);
        snprintf(answers, sizeof answers, "solutions/%s/answers.txt", labs[l].dir);
        grade_out g;
        run_grader(bin, answers, "--questions", &g);
        long len;
        char *file = rl_test_slurp(answers, &len);
        ck_assert_ptr_nonnull(file);
        for (int h = 0; labs[l].hs[h]; h++) {
            double v[16];
            char cmds[8][256], prefix[8], all[1 << 15] = "";
            question_numbers(g.text, labs[l].hs[h], v, 16);
            int nc = calc_commands(labs[l].lab, labs[l].hs[h], v, cmds);
            size_t used = 0;
            for (int c = 0; c < nc; c++, commands++) {
                ck_assert_msg(rl_test_run_ringlab(rl_test_build(), "", cmds[c], out, 1 << 16) == 0,
                              "`ringlab %s` failed:\n%s", cmds[c], out);
                used += (size_t)snprintf(all + used, sizeof all - used < 2 ? 1 : sizeof all - used, "%s\n", out);
            }
            /* the derivation's answers: the lines "hN_... = value" */
            snprintf(prefix, sizeof prefix, "\nh%c_", labs[l].hs[h][1]);
            int keys = 0, hidden = 0;
            char seen[512] = "";
            for (const char *at = file; (at = strstr(at, prefix)); at++) {
                char key[64];
                double x;
                if (sscanf(at + 1, "%63s = %lf", key, &x) != 2)
                    continue;
                keys++;
                if (!number_printed(all, x))
                    hidden++;
                else
                    snprintf(seen + strlen(seen), sizeof seen - strlen(seen), " %s = %g", key, x);
            }
            ck_assert_msg(keys > 0, "lab %s %s: no answers in %s", labs[l].lab, labs[l].hs[h], answers);
            ck_assert_msg(hidden > 0, "lab %s %s: every answer is printed by a calc command on the learner's numbers "
                          "(%s); ask for one no command prints:\n%s", labs[l].lab, labs[l].hs[h], seen, all);
        }
        free(file);
        free(g.text);
    }
    ck_assert_int_ge(commands, 20);
    free(out);
}
END_TEST

/* The letter under which `grade --questions` shows a learner lab 28's right option of each
 * interview question (from the handout's options and grader/keys/), in letters[3]. */
static void interview_letters28(const char *learner, char letters[3])
{
    static const char *const keys[] = { "i1_reverse_order", "i2_tied_weights", "i3_step_spikes" };
    long len;
    char *readme = rl_test_slurp("labs/28_ddp/README.md", &len), *keyfile = rl_test_slurp("grader/keys/28_ddp.txt", &len);
    ck_assert(readme && keyfile);
    char extra[160];
    grade_out g;
    snprintf(extra, sizeof extra, "--questions --learner %s", learner);
    run_grader("solutions/28_ddp/grade", "solutions/28_ddp/answers.txt", extra, &g);
    for (int q = 0; q < 3; q++) {
        char mark[64];
        snprintf(mark, sizeof mark, "\n%s ", keys[q]);
        const char *k = strstr(keyfile, mark);
        ck_assert_msg(k, "no key for %s", keys[q]);
        int right = k[strlen(mark)] - 'a';
        snprintf(mark, sizeof mark, "\n**I%d. ", q + 1);
        const char *opt = strstr(readme, mark);
        ck_assert_ptr_nonnull(opt);
        for (int i = 0; i <= right; i++)
            opt = strstr(opt + 1, "\n- ");
        ck_assert_ptr_nonnull(opt);
        snprintf(mark, sizeof mark, "  I%d (%s): ", q + 1, keys[q]);
        const char *block = strstr(g.text, mark);
        ck_assert_msg(block, "grade --questions does not show %s:\n%s", keys[q], g.text);
        letters[q] = 0;
        for (int l = 0; l < 4 && !letters[q]; l++) {
            snprintf(mark, sizeof mark, "\n    (%c) ", 'a' + l);
            const char *at = strstr(block, mark);
            ck_assert_msg(at, "%s: no option (%c):\n%s", keys[q], 'a' + l, g.text);
            if (!strncmp(at + strlen(mark), opt + 3, 40))
                letters[q] = (char)('a' + l);
        }
        ck_assert_msg(letters[q], "%s: the right option is not among those shown to %s:\n%s", keys[q], learner, g.text);
    }
    free(g.text);
    free(readme);
    free(keyfile);
}

/* The interview questions' options come in each learner's own order: a learner who answers with
 * the letters make questions showed them scores the test, and the same letters under another
 * learner's id do not; once graded, each option's explanation is shown in the learner's letters. */
START_TEST(test_interview_letters_per_learner)
{
    char bob[3], ada[3], path[64], cmd[512];
    interview_letters28("bob@uni.example", bob);
    interview_letters28("ada@uni.example", ada);
    ck_assert_msg(memcmp(bob, ada, 3), "two learners got the same letters: %.3s", bob);
    snprintf(path, sizeof path, "/tmp/rl_interview_%d.txt", (int)getpid());
    snprintf(cmd, sizeof cmd, "sed -e 's/^learner = .*/learner = bob@uni.example/' -e 's/^i1_reverse_order = ./"
             "i1_reverse_order = %c/' -e 's/^i2_tied_weights = ./i2_tied_weights = %c/' -e 's/^i3_step_spikes = ./"
             "i3_step_spikes = %c/' solutions/28_ddp/answers.txt > %s", bob[0], bob[1], bob[2], path);
    ck_assert_int_eq(system(cmd), 0);
    const char *title = "answers: interview questions";
    for (int as_ada = 0; as_ada < 2; as_ada++) {
        grade_out g;
        run_grader("solutions/28_ddp/grade", path, as_ada ? "--step 28.5 -v --learner ada@uni.example" : "--step 28.5 -v",
                   &g);
        ck_assert_msg(test_line(&g, "28", title) && test_failed(&g, "28", title) == as_ada,
                      "bob's letters graded as %s's: the interview test should %s:\n%s", as_ada ? "ada" : "bob",
                      as_ada ? "fail" : "pass", g.text);
        if (!as_ada) {
            char want[64];
            snprintf(want, sizeof want, "I1 (i1_reverse_order = %c): right", bob[0]);
            ck_assert_msg(strstr(g.text, want) && rl_test_count(g.text, "Right: ") == 3 &&
                              rl_test_count(g.text, "Wrong: ") == 9,
                          "the explanations of every option, after the grade:\n%s", g.text);
            snprintf(want, sizeof want, "|   (%c) Right: ", bob[1]);
            ck_assert_msg(strstr(g.text, want), "I2's explanations are not in bob's letters (want '%s'):\n%s", want,
                          g.text);
        }
        free(g.text);
    }
    unlink(path);
}
END_TEST

/* A lab the suite grades: where it lives and what its untouched skeleton says first. */
typedef struct lab_case {
    const char *num, *dir;     /* "28", "28_ddp" */
    const char *tcase;         /* "lab28": CK_RUN_CASE=lab28 runs one lab */
    const char *todo_message;  /* what the untouched skeleton says first */
} lab_case;

static const lab_case lab_cases[] = {
    { "28", "28_ddp", "lab28", "step 28.1 (ring all-reduce) is not implemented yet — see labs/28_ddp/README.md" },
    { "29", "29_zero_fsdp", "lab29", "step 29.1 (memory model) is not implemented yet — see labs/29_zero_fsdp/README.md" },
    { "30", "30_tp_pp_sp_cp", "lab30",
      "step 30.1 (tensor-parallel MLP) is not implemented yet — see labs/30_tp_pp_sp_cp/README.md" },
    { "31", "31_3d_moe_debug", "lab31", "step 31.1 (device mesh) is not implemented yet — see labs/31_3d_moe_debug/README.md" },
};
#define NLABS ((int)(sizeof lab_cases / sizeof lab_cases[0]))

/* The seeds every planted bug and correct variant is graded with (make test pins them; a
 * grading run of the learner draws a fresh one). */
static const char *const pinned_seeds[] = { "1001", "2002" };
#define NSEEDS ((int)(sizeof pinned_seeds / sizeof pinned_seeds[0]))

/* A patched copy of a solution: a planted bug (grader/tests/bugs/NN_name/NAME.sed, the
 * tests in `caught-by` must FAIL) or a correct variant (grader/tests/variants/..., full
 * marks). Its sed script's header says which steps to grade and what must catch it:
 *   # step: 28.3 [28.4 ...]            (or "all")
 *   # caught-by: <test title>          (planted bugs; one line per test, at least one) */
typedef struct patched {
    int lab, bug;              /* index in lab_cases; 1 planted bug, 0 correct variant */
    char name[64];
    char steps[96];
    char caught_by[8][160];
    int ncaught;
} patched;

#define MAX_PATCHED 256
static patched patched_list[MAX_PATCHED];
static int npatched;

static char *trim_ws(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = 0;
    return s;
}

/* Reads the header of one sed script into p; a bad header is reported by the test itself. */
static void read_patched(const char *path, patched *p)
{
    FILE *f = fopen(path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f) && line[0] == '#') {
        char *l = trim_ws(line + 1);
        if (!strncmp(l, "step:", 5))
            snprintf(p->steps, sizeof p->steps, "%s", trim_ws(l + 5));
        else if (!strncmp(l, "caught-by:", 10) && p->ncaught < 8)
            snprintf(p->caught_by[p->ncaught++], sizeof p->caught_by[0], "%s", trim_ws(l + 10));
    }
    if (f)
        fclose(f);
}

/* Finds every planted bug and correct variant of every lab, in name order. */
static void scan_patched(void)
{
    npatched = 0;
    for (int li = 0; li < NLABS; li++) /* lab by lab (a lab's copies are one range), bugs first */
        for (int bug = 1; bug >= 0; bug--) {
            char dir[256];
            snprintf(dir, sizeof dir, "grader/tests/%s/%s", bug ? "bugs" : "variants", lab_cases[li].dir);
            struct dirent **ents = NULL;
            int n = scandir(dir, &ents, NULL, alphasort);
            for (int k = 0; k < n; k++) {
                size_t len = strlen(ents[k]->d_name);
                if (len > 4 && !strcmp(ents[k]->d_name + len - 4, ".sed") && npatched < MAX_PATCHED) {
                    patched *p = &patched_list[npatched++];
                    memset(p, 0, sizeof *p);
                    p->lab = li, p->bug = bug;
                    snprintf(p->name, sizeof p->name, "%.*s", (int)(len - 4), ents[k]->d_name);
                    char path[600];
                    snprintf(path, sizeof path, "%s/%s", dir, ents[k]->d_name);
                    read_patched(path, p);
                }
                free(ents[k]);
            }
            free(ents);
        }
}


/* Runs the graders' commands cmds[0..n) at the same time (each to a file of its own) and
 * fills outs[] as run_cmd does: the pinned seeds of a variant run side by side. */
static void run_cmds_parallel(char *const *cmds, int n, grade_out *outs)
{
    pid_t pids[8];
    char paths[8][64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "/tmp/rl_grade_%d_%d.out", (int)getpid(), i);
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            FILE *f = freopen(paths[i], "w", stdout);
            if (!f || dup2(fileno(stdout), 2) < 0)
                _exit(127);
            execl("/bin/sh", "sh", "-c", cmds[i], (char *)NULL);
            _exit(127);
        }
    }
    for (int i = 0; i < n; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        grade_out *g = &outs[i];
        memset(g, 0, sizeof *g);
        g->score = g->max = -1;
        long len;
        g->text = rl_test_slurp(paths[i], &len);
        unlink(paths[i]);
        if (!g->text)
            g->text = calloc(1, 1);
        g->seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        g->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        for (char *t = g->text; (t = strstr(t, "Score: ")); t++)
            sscanf(t, "Score: %d/%d", &g->score, &g->max);
    }
}

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

/* Answers are parsed strictly (one number and at most a unit word; one letter; a key answered
 * once), and exam mode says only that an answer of a test is wrong, and the seed at the end. */
START_TEST(test_answers_strict)
{
    char path[64], cmd[1024];
    snprintf(path, sizeof path, "/tmp/rl_answers_%d.txt", (int)getpid());
    static const struct {
        const char *sed, *want; /* a sed script on lab 28's reference answers; "" = still full marks */
        int exam;
    } cases[] = {
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 19.2 MB /; s/^h2_ring_steps = 4094 /h2_ring_steps = 4,094 /; "
          "s/^i1_reverse_order = c/i1_reverse_order = (c)/", "", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 0x6 /", "h1_total_mb = '0x6' is not one number", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 19 or 20 /", "h1_total_mb = '19 or 20' is not one number", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 19.2\\x00junk /", "h1_total_mb = '19.2?junk' is not one number", 0 },
        { "s/^h2_ring_steps = 4094 /h2_ring_steps = 40,94 /", "h2_ring_steps = '40,94' is not one number", 0 },
        { "s/^i1_reverse_order = c/i1_reverse_order = c because/", "answer with one letter", 0 },
        { "$a h5_wait_ms = 30", "h5_wait_ms is answered more than once", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 21 /", "h1_total_mb = 21 is not within", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 19200 /", "right digits at the wrong power of ten", 0 },
        { "s/^h1_total_mb = 19.2 /h1_total_mb = 21 /", "an answer of this test is not right (exam mode", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "sed -e '%s' solutions/28_ddp/answers.txt > %s", cases[i].sed, path);
        ck_assert_int_eq(system(cmd), 0);
        char extra[64];
        snprintf(extra, sizeof extra, "--step 28.5%s", cases[i].exam ? " --exam" : "");
        grade_out g;
        run_grader("solutions/28_ddp/grade", path, extra, &g);
        ck_assert_msg(!strstr(g.text, "off by") && !strstr(g.text, "%)"), "case %zu: a wrong number's message says how "
                      "far off it is (a learner would home in on the answer by trying):\n%s", i, g.text);
        if (!*cases[i].want)
            ck_assert_msg(g.status == 0 && g.score == g.max, "case %zu (%s) must keep full marks:\n%s", i,
                          cases[i].sed, g.text);
        else
            ck_assert_msg(g.status == 1 && g.score < g.max && strstr(g.text, cases[i].want),
                          "case %zu (%s): expected a lost test saying '%s':\n%s", i, cases[i].sed, cases[i].want, g.text);
        if (cases[i].exam) {
            const char *first = strchr(g.text, '\n');
            ck_assert_msg(!strstr(g.text, "within") && !strstr(g.text, "h1_total_mb") && first &&
                              !memmem(g.text, (size_t)(first - g.text), "seed", 4),
                          "exam mode names the answer, its error or the seed before the end:\n%s", g.text);
        }
        free(g.text);
    }
    unlink(path);
}
END_TEST

/* The "cases:" lines each test printed under -v, as "STEP STEP-TITLE: TITLE\tcases..." lines joined (malloc'd). */
static char *cases_by_test(const grade_out *g)
{
    size_t cap = strlen(g->text) + 1, len = 0;
    char *out = calloc(1, cap);
    const char *title = NULL;
    int tlen = 0;
    for (const char *p = g->text; *p;) {
        const char *eol = strchr(p, '\n');
        int n = eol ? (int)(eol - p) : (int)strlen(p);
        if (!strncmp(p, "== ", 3)) {
            const char *e = strstr(p + 3, " == "); /* "== STEP STEP-TITLE: TITLE == ..." */
            title = p + 3;
            tlen = e && e < p + n ? (int)(e - title) : 0;
        } else if (title && !strncmp(p, "   | cases:", 11)) {
            len += (size_t)snprintf(out + len, cap - len, "%.*s\t%.*s\n", tlen, title, n - 5, p + 5);
        }
        p = eol ? eol + 1 : p + n;
    }
    return out;
}

/* The lines of text that start with a test of step `step` ("28.3"). */
static char *cases_of_step(const char *cases, const char *step)
{
    char *out = calloc(1, strlen(cases) + 1), key[32];
    size_t len = 0, k = (size_t)snprintf(key, sizeof key, "%s ", step); /* lines start "STEP STEP-TITLE: ..." */
    for (const char *p = cases; *p;) {
        const char *eol = strchr(p, '\n');
        int n = (int)(eol - p);
        if (!strncmp(p, key, k))
            len += (size_t)sprintf(out + len, "%.*s\n", n, p);
        p = eol + 1;
    }
    return out;
}

/* A grading run's randomized cases depend only on its seed (and each test's on the seed and
 * the test): the same seed draws the same cases, in a whole-lab run and a one-step run
 * alike; another seed draws others. Every lab prints its cases under -v ("cases: ..."). */
START_TEST(test_seed_replays_cases)
{
    const lab_case *l = &lab_cases[_i];
    char variant[64], answers[128];
    snprintf(variant, sizeof variant, "solutions/%s", l->dir);
    snprintf(answers, sizeof answers, "solutions/%s/answers.txt", l->dir);
    grade_out a;
    run_variant(variant, answers, "-v --seed 1001", &a);
    char *ca = cases_by_test(&a);
    ck_assert_msg(ca[0], "lab %s: no test printed its randomized cases ('cases: ...' under -v):\n%s", l->num, a.text);
    /* each step alone, same seed: the same cases as in the whole run; another seed: other
     * cases (looked for step by step, until one step's differ) */
    int differ = 0;
    for (const char *p = a.text; (p = strstr(p, "\n-- ")); p++) {
        char step[16];
        if (sscanf(p + 4, "%15s", step) != 1)
            continue;
        char *want = cases_of_step(ca, step);
        for (int seed = 1001; seed <= 2002; seed += 1001) {
            if (seed == 2002 && (differ || !want[0]))
                break;
            char extra[64];
            snprintf(extra, sizeof extra, "-v --seed %d --step %s", seed, step);
            grade_out s;
            run_variant(variant, answers, extra, &s);
            char *cs = cases_by_test(&s);
            if (seed == 1001)
                ck_assert_msg(!strcmp(cs, want), "lab %s, step %s alone with seed 1001 drew other cases than the "
                              "whole run:\n%s\n--- whole run:\n%s", l->num, step, cs, want);
            else
                differ = strcmp(cs, want) != 0;
            free(cs), free(s.text);
        }
        free(want);
    }
    ck_assert_msg(differ, "lab %s: seeds 1001 and 2002 drew the same cases in every step:\n%s", l->num, ca);
    free(ca), free(a.text);
}
END_TEST

/* The --step arguments of a patched copy's header ("28.3 28.4" → "--step 28.3 --step 28.4"). */
static void step_args(const patched *p, char *out, size_t size)
{
    out[0] = 0;
    char buf[96];
    snprintf(buf, sizeof buf, "%s", p->steps);
    for (char *tok = strtok(buf, " ,"); tok; tok = strtok(NULL, " ,")) {
        size_t k = strlen(out);
        snprintf(out + k, size - k, " --step %s", tok);
    }
}

/* _i numbers the patched copies of every lab: each is graded once per pinned seed. */
START_TEST(test_patched_variant)
{
    const patched *p = &patched_list[_i];
    const lab_case *l = &lab_cases[p->lab];
    const char *kind = p->bug ? "planted bug" : "correct variant";
    ck_assert_msg(p->steps[0], "%s %s (grader/tests/%s/%s/%s.sed): its header needs a '# step: N.M' line", kind,
                  p->name, p->bug ? "bugs" : "variants", l->dir, p->name);
    ck_assert_msg(!p->bug || p->ncaught > 0, "planted bug %s: its header needs at least one '# caught-by: <test "
                  "title>' line (the tests meant to catch it)", p->name);
    char variant[160], answers[128], extra[400], steps[200];
    snprintf(variant, sizeof variant, "variants/%s/%s_%s", l->dir, p->bug ? "bug" : "ok", p->name);
    snprintf(answers, sizeof answers, "solutions/%s/answers.txt", l->dir);
    step_args(p, steps, sizeof steps);
    if (!strcmp(p->steps, "all"))
        steps[0] = 0;
    char *cmds[NSEEDS];
    grade_out outs[NSEEDS];
    for (int k = 0; k < NSEEDS; k++) {
        snprintf(extra, sizeof extra, "--seed %s%s", pinned_seeds[k], steps);
        cmds[k] = malloc(1024);
        snprintf(cmds[k], 1024, "env -u CK_RUN_SUITE -u CK_RUN_CASE %s/%s/grade --answers %s %s", rl_test_build(),
                 variant, answers, extra);
    }
    run_cmds_parallel(cmds, NSEEDS, outs);
    for (int k = 0; k < NSEEDS; k++) {
        free(cmds[k]);
        grade_out g = outs[k];
        ck_assert_msg(g.max > 0 && !strstr(g.text, "timed out") && !strstr(g.text, "did not run"),
                      "%s %s, seed %s: the grader did not finish cleanly:\n%s", kind, p->name, pinned_seeds[k], g.text);
        if (p->bug) {
            for (int c = 0; c < p->ncaught; c++) {
                ck_assert_msg(test_line(&g, l->num, p->caught_by[c]), "planted bug %s: no test titled '%s' in "
                              "steps %s:\n%s", p->name, p->caught_by[c], p->steps, g.text);
                ck_assert_msg(test_failed(&g, l->num, p->caught_by[c]), "planted bug %s, seed %s: not caught by '%s':"
                              "\n%s", p->name, pinned_seeds[k], p->caught_by[c], g.text);
            }
            ck_assert_msg(g.status == 1 && g.score < g.max, "planted bug %s, seed %s: exit %d, score %d/%d", p->name,
                          pinned_seeds[k], g.status, g.score, g.max);
            ck_assert_msg(!strstr(g.text, "crashed:"), "planted bug %s, seed %s: the grader crashed instead of "
                          "failing the test with a message:\n%s", p->name, pinned_seeds[k], g.text);
        } else {
            ck_assert_msg(g.status == 0 && g.score == g.max, "correct variant %s, seed %s: must score full marks on "
                          "steps %s (exit %d, score %d/%d):\n%s", p->name, pinned_seeds[k], p->steps, g.status,
                          g.score, g.max, g.text);
        }
        free(g.text);
    }
}
END_TEST

/* make hint's record: a grade lists the hints shown per graded step and, with --hint-penalty,
 * takes that many points off the step (at most its points), in the text and the results; a
 * record that is not one stops the grade with a message. */
START_TEST(test_hints_listed_and_penalised)
{
    char hints[64], json[64], extra[256];
    snprintf(hints, sizeof hints, "/tmp/rl_hints_used_%d.txt", (int)getpid());
    snprintf(json, sizeof json, "/tmp/rl_hints_json_%d.json", (int)getpid());
    FILE *f = fopen(hints, "w");
    fprintf(f, "# shown\n28.2 2\n28.1 3\n");
    fclose(f);
    grade_out g;
    snprintf(extra, sizeof extra, "--step 28.2 --hints %s", hints);
    run_variant("solutions/28_ddp", "solutions/28_ddp/answers.txt", extra, &g);
    ck_assert_msg(g.status == 0 && g.score == g.max && strstr(g.text, "(2 hints shown)") && !strstr(g.text, "28.1"),
                  "no penalty: full marks, the step's hints listed:\n%s", g.text);
    int max = g.max;
    free(g.text);
    snprintf(extra, sizeof extra, "--step 28.2 --hints %s --hint-penalty 3 --json %s", hints, json);
    run_variant("solutions/28_ddp", "solutions/28_ddp/answers.txt", extra, &g);
    ck_assert_msg(g.status == 0 && g.score == max - 6 && strstr(g.text, "(2 hints shown: 6 points off)"),
                  "3 points a hint: 6 off the step, every test passed (exit 0):\n%s", g.text);
    free(g.text);
    long len;
    char *j = rl_test_slurp(json, &len);
    ck_assert_msg(j && strstr(j, "\"hints_shown\": \"28.2=2\"") && strstr(j, "\"score\": -6"), "%s", j ? j : "");
    free(j);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/results 28_ddp=%s", rl_test_build(), json);
    run_cmd(cmd, &g);
    char want[32];
    snprintf(want, sizeof want, "%d/%d", max - 6, max);
    ck_assert_msg(g.status == 0 && strstr(g.text, want), "results accepts the penalty as no failure (%s):\n%s", want,
                  g.text);
    free(g.text);
    f = fopen(hints, "w");
    fprintf(f, "28.2 -1\n");
    fclose(f);
    snprintf(extra, sizeof extra, "--step 28.2 --hints %s", hints);
    run_variant("solutions/28_ddp", "solutions/28_ddp/answers.txt", extra, &g);
    ck_assert_msg(g.status == 2 && strstr(g.text, ":1: a line is '<step> <hints shown>'"), "%s", g.text);
    free(g.text);
    unlink(hints);
    unlink(json);
}
END_TEST

/* The lab's patched copies in patched_list: [*first, *end). */
static void lab_patched(int li, int *first, int *end)
{
    *first = *end = -1;
    for (int i = 0; i < npatched; i++)
        if (patched_list[i].lab == li) {
            if (*first < 0)
                *first = i;
            *end = i + 1;
        }
}

Suite *graders_suite(void)
{
    Suite *s = suite_create("graders");
    double slow = rl_test_quick() ? 8.0 : 1.0; /* sanitizer builds run several times slower */
    scan_patched();
    for (int i = 0; i < NLABS; i++) {
        TCase *tc = tcase_create(lab_cases[i].tcase);
        tcase_set_timeout(tc, 240 * slow);
        tcase_add_loop_test(tc, test_solution_full_marks, i, i + 1);
        tcase_add_loop_test(tc, test_skeleton_scores_zero, i, i + 1);
        tcase_add_loop_test(tc, test_copy_full_marks, i, i + 1);
        if (!rl_test_quick())
            tcase_add_loop_test(tc, test_seed_replays_cases, i, i + 1);
        int first, end;
        lab_patched(i, &first, &end);
        /* planted bugs and correct variants: in the normal build only (the sanitizer run has
         * not built them, and they are about the graders, not the runtime) */
        if (first >= 0 && !rl_test_quick())
            tcase_add_loop_test(tc, test_patched_variant, first, end);
        suite_add_tcase(s, tc);
    }
    TCase *answers = tcase_create("answers");
    tcase_set_timeout(answers, 120 * slow);
    tcase_add_test(answers, test_answers_strict);
    tcase_add_test(answers, test_hints_listed_and_penalised);
    tcase_add_test(answers, test_questions_per_learner);
    tcase_add_test(answers, test_derivations_ask_what_calc_does_not_print);
    tcase_add_test(answers, test_interview_letters_per_learner);
    suite_add_tcase(s, answers);
    return s;
}
