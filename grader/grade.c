/* grade.c — the grader runner: one forked Check run per test under its time limit, a line
 * per test, subtotals per step, `Score: X/Y`, Gradescope JSON; and answers-file checks. */
#include "grade.h"
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The runner's own bookkeeping (one grading run per process). */
static const char *answers_path;

const char *rl_grade_answers_path(void) { return answers_path; }

double rl_grade_time_scale(void)
{
    const char *s = getenv("RL_GRADE_TIME_SCALE");
    if (!s || !*s)
        return 1.0;
    char *end;
    double f = strtod(s, &end);
    return (end != s && f > 0 && isfinite(f)) ? f : 1.0;
}

int rl_grade_quick(void) { return getenv("RL_TEST_QUICK") != NULL; }

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The outcome of one test. */
typedef struct outcome {
    int passed;
    char reason[1024];   /* why it failed (one line or a few) */
    char *output;        /* what the test printed (malloc'd, may be "") */
    double seconds;
} outcome;

/* Turns Check's message for an error into the grader's wording. */
static void explain_error(const char *msg, double limit, char *out, size_t size)
{
    int sig;
    if (strstr(msg, "timeout expired")) {
        snprintf(out, size, "timed out after %g s (an endless loop or a deadlock; RL_GRADE_TIME_SCALE "
                            "scales the limit on slow machines)", limit);
    } else if (sscanf(msg, "Received signal %d", &sig) == 1) {
        const char *abbrev = sigabbrev_np(sig);
        snprintf(out, size, "crashed: SIG%s (%s)", abbrev ? abbrev : "?", strsignal(sig));
    } else if (strncmp(msg, "Early exit with return value", 28) == 0) {
        snprintf(out, size, "the code under test called exit() (%s); return an error code instead", msg);
    } else {
        snprintf(out, size, "%s", msg);
    }
}

/* Reads and removes a capture file. */
static char *slurp_file(FILE *f)
{
    fflush(f);
    long len = ftell(f);
    if (len < 0)
        len = 0;
    rewind(f);
    char *buf = malloc((size_t)len + 1);
    size_t k = buf ? fread(buf, 1, (size_t)len, f) : 0;
    if (buf)
        buf[k] = 0;
    return buf;
}

/* Runs one test forked under its limit, with its stdout and stderr captured. */
static void run_one(const rl_grade_lab *lab, const rl_grade_test *t, double scale, outcome *o)
{
    memset(o, 0, sizeof *o);
    double limit = t->limit_s * scale;
    Suite *s = suite_create(t->step);
    TCase *tc = tcase_create(t->title);
    tcase_add_test(tc, *t->fn);
    tcase_set_timeout(tc, limit);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);

    fflush(stdout);
    fflush(stderr);
    FILE *cap = tmpfile();
    int saved_out = dup(1), saved_err = dup(2);
    if (cap) {
        dup2(fileno(cap), 1);
        dup2(fileno(cap), 2);
    }
    double t0 = mono_now();
    srunner_run(sr, t->step, t->title, CK_SILENT);
    o->seconds = mono_now() - t0;
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    o->output = cap ? slurp_file(cap) : NULL;
    if (cap)
        fclose(cap);
    if (!o->output)
        o->output = calloc(1, 1);

    int n = srunner_ntests_run(sr);
    TestResult **res = srunner_results(sr);
    if (n < 1 || !res) {
        snprintf(o->reason, sizeof o->reason, "the test did not run (Check found no test '%s' in suite %s)",
                 t->title, t->step);
    } else {
        TestResult *r = res[0];
        if (tr_rtype(r) == CK_PASS) {
            o->passed = 1;
        } else if (tr_rtype(r) == CK_ERROR) {
            explain_error(tr_msg(r), limit, o->reason, sizeof o->reason);
        } else {
            snprintf(o->reason, sizeof o->reason, "%s", tr_msg(r));
        }
    }
    free(res);
    srunner_free(sr);
    (void)lab;
}

/* Prints up to max_lines lines of text, each indented. */
static void print_indented(const char *text, const char *prefix, int max_lines)
{
    int lines = 0;
    const char *p = text;
    while (*p && lines < max_lines) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        if (len > 0)
            printf("%s%.*s\n", prefix, len > 300 ? 300 : len, p), lines++;
        p = nl ? nl + 1 : p + len;
    }
    if (*p)
        printf("%s...\n", prefix);
}

/* 1 when the captured output adds nothing to the reason (e.g. the not-implemented message). */
static int output_redundant(const outcome *o)
{
    if (!o->output[0])
        return 1;
    return strstr(o->output, "not implemented yet") && strstr(o->reason, "not implemented yet");
}

static void usage(const rl_grade_lab *lab, FILE *f)
{
    fprintf(f, "usage: grade [--step ID]... [--json FILE] [--answers FILE] [--list] [-v]\n"
               "Grades lab %s (%s); the handout is %s.\n"
               "  --step ID       grade only step ID (repeatable), e.g. --step %s\n"
               "  --json FILE     also write the results in the Gradescope autograder format\n"
               "  --answers FILE  the answers file (default %s)\n"
               "  --list          list the tests and their points\n"
               "  -v              also show what passing tests printed\n"
               "Environment: RL_GRADE_TIME_SCALE=F multiplies every time limit (e.g. 3 on a slow machine).\n",
            lab->id, lab->title, lab->handout, lab->nsteps ? lab->steps[0].id : "1", lab->default_answers);
}

static const rl_grade_step *find_step(const rl_grade_lab *lab, const char *id)
{
    for (int i = 0; i < lab->nsteps; i++)
        if (strcmp(lab->steps[i].id, id) == 0)
            return &lab->steps[i];
    return NULL;
}

static int write_json(const char *path, const rl_grade_lab *lab, const rl_grade_test *const *sel,
                      const outcome *res, int nsel, int score, int max, double secs)
{
    json_t *root = json_object(), *tests = json_array();
    for (int i = 0; i < nsel; i++) {
        const rl_grade_test *t = sel[i];
        const rl_grade_step *st = find_step(lab, t->step);
        char name[256];
        snprintf(name, sizeof name, "%s %s: %s", t->step, st ? st->title : "", t->title);
        size_t cap = strlen(res[i].reason) + strlen(res[i].output) + 64;
        char *out = malloc(cap);
        snprintf(out, cap, "%s%s%s", res[i].passed ? "OK" : res[i].reason, res[i].output[0] ? "\n" : "",
                 res[i].output);
        if (strlen(out) > 8000)
            strcpy(out + 7980, "\n[...truncated]");
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "number", json_string(t->step));
        json_object_set_new(o, "score", json_integer(res[i].passed ? t->points : 0));
        json_object_set_new(o, "max_score", json_integer(t->points));
        json_object_set_new(o, "output", json_string(out));
        json_object_set_new(o, "visibility", json_string("visible"));
        json_array_append_new(tests, o);
        free(out);
    }
    char summary[128];
    snprintf(summary, sizeof summary, "Lab %s: %d/%d points", lab->id, score, max);
    json_object_set_new(root, "score", json_integer(score));
    json_object_set_new(root, "max_score", json_integer(max));
    json_object_set_new(root, "execution_time", json_real(secs));
    json_object_set_new(root, "output", json_string(summary));
    json_object_set_new(root, "tests", tests);
    int rc = json_dump_file(root, path, JSON_INDENT(2));
    json_decref(root);
    return rc;
}

int rl_grade_main(const rl_grade_lab *lab, int argc, char **argv)
{
    const char *steps[32];
    int nsteps = 0, list = 0, verbose = 0;
    const char *json_path = NULL;
    answers_path = lab->default_answers;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--step") || !strcmp(a, "--json") || !strcmp(a, "--answers")) && i + 1 >= argc) {
            fprintf(stderr, "grade: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--step")) {
            const char *v = argv[++i];
            if (!*v || !strcmp(v, "all"))
                continue;
            if (!find_step(lab, v)) {
                fprintf(stderr, "grade: lab %s has no step '%s'; its steps are:", lab->id, v);
                for (int k = 0; k < lab->nsteps; k++)
                    fprintf(stderr, " %s", lab->steps[k].id);
                fprintf(stderr, "\n");
                return 2;
            }
            if (nsteps < 32)
                steps[nsteps++] = v;
        } else if (!strcmp(a, "--json")) {
            json_path = argv[++i];
        } else if (!strcmp(a, "--answers")) {
            answers_path = argv[++i];
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            verbose = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(lab, stdout);
            return 0;
        } else {
            fprintf(stderr, "grade: unknown argument '%s'\n", a);
            usage(lab, stderr);
            return 2;
        }
    }

    /* the selected tests, in table order */
    const rl_grade_test **sel = calloc((size_t)lab->ntests + 1, sizeof *sel);
    int nsel = 0;
    for (int i = 0; i < lab->ntests; i++) {
        int keep = nsteps == 0;
        for (int k = 0; k < nsteps; k++)
            keep |= !strcmp(lab->tests[i].step, steps[k]);
        if (keep)
            sel[nsel++] = &lab->tests[i];
    }
    if (list) {
        for (int i = 0; i < nsel; i++) {
            const rl_grade_step *st = find_step(lab, sel[i]->step);
            printf("%-5s %-28s %-52s %3d pts  limit %g s\n", sel[i]->step, st ? st->title : "", sel[i]->title,
                   sel[i]->points, sel[i]->limit_s);
        }
        free(sel);
        return 0;
    }

    double scale = rl_grade_time_scale();
    printf("Grading lab %s (%s): %d test%s", lab->id, lab->title, nsel, nsel == 1 ? "" : "s");
    if (scale != 1.0)
        printf(", time limits x%g", scale);
    printf("\n");
    outcome *res = calloc((size_t)nsel + 1, sizeof *res);
    int score = 0, max = 0;
    double t_start = mono_now();
    for (int s = 0; s < lab->nsteps; s++) {
        const rl_grade_step *st = &lab->steps[s];
        int got = 0, of = 0, any = 0;
        for (int i = 0; i < nsel; i++) {
            const rl_grade_test *t = sel[i];
            if (strcmp(t->step, st->id))
                continue;
            any = 1;
            outcome *o = &res[i];
            run_one(lab, t, scale, o);
            int pts = o->passed ? t->points : 0;
            got += pts;
            of += t->points;
            printf("== %s %s: %s == %s (%d/%d) (%.1fs)\n", t->step, st->title, t->title, o->passed ? "OK" : "FAIL",
                   pts, t->points, o->seconds);
            if (!o->passed) {
                print_indented(o->reason, "   ", 8);
                if (!output_redundant(o))
                    print_indented(o->output, "   | ", 10);
            } else if (verbose && o->output[0]) {
                print_indented(o->output, "   | ", 20);
            }
            fflush(stdout);
        }
        if (any)
            printf("-- %s %s: %d/%d\n", st->id, st->title, got, of);
        score += got;
        max += of;
    }
    double secs = mono_now() - t_start;
    int rc = score == max ? 0 : 1;
    if (json_path) {
        if (write_json(json_path, lab, sel, res, nsel, score, max, secs)) {
            fprintf(stderr, "grade: could not write %s: %s\n", json_path, strerror(errno));
            rc = 1;
        } else {
            printf("Results written to %s (Gradescope format)\n", json_path);
        }
    }
    printf("Score: %d/%d\n", score, max);
    fflush(stdout);
    for (int i = 0; i < nsel; i++)
        free(res[i].output);
    free(res);
    free(sel);
    return rc;
}

/* ------------------------------------------------------------------ answers files */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

int rl_grade_answer(const char *path, const char *key, char *value, size_t size)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return -1;
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *k = trim(line), *v = trim(eq + 1);
        if (strcmp(k, key) == 0) {
            snprintf(value, size, "%s", v);
            found = *v != 0;
        }
    }
    fclose(f);
    return found;
}

int rl_grade_check_number(const char *path, const char *key, double expected, double rel_tol,
                          char *msg, size_t size)
{
    char v[256];
    int r = rl_grade_answer(path, key, v, sizeof v);
    if (r < 0) {
        snprintf(msg, size, "cannot read the answers file %s", path ? path : "(none)");
        return 0;
    }
    if (r == 0) {
        snprintf(msg, size, "%s is not answered yet in %s", key, path);
        return 0;
    }
    for (char *c = v; *c; c++) /* allow 1,234 and 1_234 as digit grouping */
        if (*c == ',' || *c == '_')
            memmove(c, c + 1, strlen(c)), c--;
    char *end;
    errno = 0;
    double got = strtod(v, &end);
    if (end == v || errno || !isfinite(got)) {
        snprintf(msg, size, "%s = '%s' is not a number (write e.g. 6e6 or 0.25; the unit is the one the question asks for)",
                 key, v);
        return 0;
    }
    double err = fabs(got - expected), tol = rel_tol * fabs(expected);
    if (err <= tol || (expected == 0 && err <= rel_tol)) {
        return 1;
    }
    snprintf(msg, size, "%s = %g is off by %.1f%% (tolerance %g%%); check the formula and the unit the question asks for",
             key, got, expected != 0 ? 100.0 * err / fabs(expected) : 100.0, 100.0 * rel_tol);
    return 0;
}

int rl_grade_check_choice(const char *path, const char *key, char expected, char *msg, size_t size)
{
    char v[256];
    int r = rl_grade_answer(path, key, v, sizeof v);
    if (r <= 0) {
        snprintf(msg, size, r < 0 ? "cannot read the answers file %s" : "%s is not answered yet",
                 r < 0 ? (path ? path : "(none)") : key);
        if (r == 0)
            snprintf(msg, size, "%s is not answered yet in %s", key, path);
        return 0;
    }
    char c = v[0];
    if (c == '(' && v[1])
        c = v[1];
    c = (char)tolower((unsigned char)c);
    if (!isalpha((unsigned char)c) || (v[1] && v[0] != '(' && isalpha((unsigned char)v[1]))) {
        snprintf(msg, size, "%s = '%s': answer with one letter (a, b, c or d)", key, v);
        return 0;
    }
    if (c == tolower((unsigned char)expected))
        return 1;
    snprintf(msg, size, "%s = %c is not the best answer", key, c);
    return 0;
}
