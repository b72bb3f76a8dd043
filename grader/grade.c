/* grade.c — the grader runner: one forked Check run per test under its time limit, a line
 * per test, subtotals per step, `Score: X/Y`, Gradescope JSON; and answers-file checks. */
#include "grade.h"
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The runner's own bookkeeping (one grading run per process; a test's child inherits it). */
static const char *answers_path;
static int exam_mode; /* --exam / RL_GRADE_EXAM=1: answers only right or wrong, the seed printed last only */
static uint64_t run_seed;
static uint64_t test_key;        /* hash of the running test's step and title */
static char crash_note[2048];    /* rl_grade_note: the last error the code under test reported */

#define CRASH_MARK "[grader] the crash came after this error: "

const char *rl_grade_answers_path(void) { return answers_path; }
int rl_grade_exam(void) { return exam_mode; }

uint64_t rl_grade_seed(void) { return run_seed; }

/* FNV-1a over a string, continuing from h. */
static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t key_of(const rl_grade_test *t)
{
    return hash_str(hash_str(0xcbf29ce484222325ull, t->step), t->title);
}

rl_rng rl_grade_rng(uint64_t stream)
{
    rl_rng r = rl_rng_make(run_seed ^ test_key, stream);
    rl_rng_next(&r);
    return r;
}

int rl_grade_pick(rl_rng *g, int lo, int hi)
{
    return hi <= lo ? lo : lo + (int)rl_rng_below(g, (uint64_t)(hi - lo) + 1);
}

void rl_grade_shuffle(rl_rng *g, int *perm, int n)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rl_rng_below(g, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void rl_grade_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(crash_note, sizeof crash_note, fmt, ap);
    va_end(ap);
}

void rl_grade_text_vadd(rl_grade_text *t, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int k = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (k < 0)
        return;
    if (t->len + (size_t)k + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + (size_t)k + 1)
            cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s)
            return;
        t->s = s;
        t->cap = cap;
    }
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    t->len += (size_t)k;
}

void rl_grade_text_add(rl_grade_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_grade_text_vadd(t, fmt, ap);
    va_end(ap);
}

const char *rl_grade_text_str(const rl_grade_text *t) { return t->s ? t->s : ""; }

void rl_grade_text_free(rl_grade_text *t)
{
    free(t->s);
    memset(t, 0, sizeof *t);
}

/* In a test's child: a fatal signal after rl_grade_note first writes the note. */
static void on_fatal_signal(int sig)
{
    if (crash_note[0]) {
        ssize_t k = write(2, "\n" CRASH_MARK, sizeof CRASH_MARK);
        k = write(2, crash_note, strlen(crash_note));
        k = write(2, "\n", 1);
        (void)k;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void child_setup(void)
{
    crash_note[0] = 0;
    int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], on_fatal_signal);
}

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
    char *reason;        /* why it failed, in full (malloc'd; NULL when passed) */
    char *output;        /* what the test printed (malloc'd, may be "") */
    double seconds;
} outcome;

/* A malloc'd printf. */
static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* The line of output after the crash note's mark (malloc'd), or NULL. */
static char *crash_note_in(const char *output)
{
    const char *m = strstr(output, CRASH_MARK);
    if (!m)
        return NULL;
    m += strlen(CRASH_MARK);
    return strndup(m, strcspn(m, "\n"));
}

/* Turns Check's message for an error into the grader's wording (malloc'd). */
static char *explain_error(const char *msg, double limit, const char *output)
{
    int sig;
    if (strstr(msg, "timeout expired"))
        return str_printf("timed out after %g s (an endless loop or a deadlock; RL_GRADE_TIME_SCALE "
                          "scales the limit on slow machines)", limit);
    if (sscanf(msg, "Received signal %d", &sig) == 1) {
        const char *abbrev = sigabbrev_np(sig);
        char *note = crash_note_in(output);
        char *r = note ? str_printf("crashed: SIG%s (%s), after your code had reported an error: %s", abbrev ? abbrev : "?",
                                    strsignal(sig), note)
                       : str_printf("crashed: SIG%s (%s)", abbrev ? abbrev : "?", strsignal(sig));
        free(note);
        return r;
    }
    if (strncmp(msg, "Early exit with return value", 28) == 0)
        return str_printf("the code under test called exit() (%s); return an error code instead", msg);
    return strdup(msg);
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
    test_key = key_of(t); /* the forked test inherits it: rl_grade_rng */
    Suite *s = suite_create(t->step);
    TCase *tc = tcase_create(t->title);
    tcase_add_checked_fixture(tc, child_setup, NULL);
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
        o->reason = str_printf("the test did not run (Check found no test '%s' in suite %s)", t->title, t->step);
    } else {
        TestResult *r = res[0];
        if (tr_rtype(r) == CK_PASS)
            o->passed = 1;
        else if (tr_rtype(r) == CK_ERROR)
            o->reason = explain_error(tr_msg(r), limit, o->output);
        else
            o->reason = strdup(tr_msg(r));
    }
    if (!o->passed && !o->reason)
        o->reason = strdup("(out of memory for the message)");
    free(res);
    srunner_free(sr);
    (void)lab;
}

/* Lines the terminal view keeps even when it shortens a text: the runtime's verdicts and
 * errors and the crash note. */
static int key_line(const char *line, int len)
{
    static const char *marks[] = { "verdict:", "ringlab: ", "ringlab watchdog", CRASH_MARK };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        size_t k = strlen(marks[i]);
        if ((size_t)len >= k && strncmp(line, marks[i], k) == 0)
            return 1;
    }
    return 0;
}

/* Prints text indented, in full when max_lines < 0; else its first max_lines non-empty
 * lines (and every key line after them), each cut at max_cols characters, then says what
 * was left out and where the whole text is. */
static void print_indented(const char *text, const char *prefix, int max_lines, int max_cols, const char *where)
{
    int lines = 0, cut_lines = 0;
    long cut_chars = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        if (len > 0) {
            int show = max_lines < 0 || lines < max_lines || key_line(p, len);
            if (show) {
                int w = max_cols < 0 || len <= max_cols ? len : max_cols;
                while (w < len && w > 0 && ((unsigned char)p[w] & 0xC0) == 0x80)
                    w--; /* never cut inside a UTF-8 character */
                printf("%s%.*s%s\n", prefix, w, p, w < len ? " [...]" : "");
                cut_chars += len - w;
                lines++;
            } else {
                cut_lines++;
                cut_chars += len;
            }
        }
        p = nl ? nl + 1 : p + len;
    }
    if (cut_lines || cut_chars)
        printf("%s[shortened here: %d more line%s, %ld characters left out; %s]\n", prefix, cut_lines,
               cut_lines == 1 ? "" : "s", cut_chars, where);
}

/* 1 when the captured output adds nothing to the reason (e.g. the not-implemented message). */
static int output_redundant(const outcome *o)
{
    if (!o->output[0])
        return 1;
    return strstr(o->output, "not implemented yet") && strstr(o->reason, "not implemented yet");
}

/* Writes every failed test's whole message and output (--details). */
static int write_details(const char *path, const rl_grade_lab *lab, const rl_grade_test *const *sel,
                         const outcome *res, int nsel)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "Lab %s, seed %llu: the whole message and output of every failed test\n", lab->id,
            (unsigned long long)run_seed);
    for (int i = 0; i < nsel; i++) {
        if (res[i].passed)
            continue;
        fprintf(f, "\n== %s %s ==\n%s\n", sel[i]->step, sel[i]->title, res[i].reason);
        if (res[i].output[0])
            fprintf(f, "-- what it printed --\n%s%s", res[i].output,
                    res[i].output[strlen(res[i].output) - 1] == '\n' ? "" : "\n");
    }
    return fclose(f);
}

static void usage(const rl_grade_lab *lab, FILE *f)
{
    fprintf(f, "usage: grade [--step ID]... [--seed N] [--json FILE] [--details FILE] [--answers FILE] [--exam] [--list] "
               "[-v]\n"
               "Grades lab %s (%s); the handout is %s.\n"
               "  --step ID       grade only step ID (repeatable), e.g. --step %s\n"
               "  --seed N        the seed of the randomized cases (default RL_GRADE_SEED, else a fresh one)\n"
               "  --json FILE     also write the results in the Gradescope autograder format\n"
               "  --details FILE  also write every failed test's whole message and output\n"
               "  --answers FILE  the answers file (default %s)\n"
               "  --exam          exam mode (also RL_GRADE_EXAM=1): an answer is only right or wrong, a failed\n"
               "                  answers test does not say which answer, and the seed is printed at the end only\n"
               "  --list          list the tests and their points\n"
               "  -v              also show what passing tests printed, and nothing shortened\n"
               "Environment: RL_GRADE_TIME_SCALE=F multiplies every time limit (e.g. 3 on a slow machine);\n"
               "RL_GRADE_SEED=N replays the randomized cases of a run that printed seed N.\n",
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
        char *out = str_printf("%s%s%s", res[i].passed ? "OK" : res[i].reason, res[i].output[0] ? "\n" : "",
                               res[i].output);
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "number", json_string(t->step));
        json_object_set_new(o, "score", json_integer(res[i].passed ? t->points : 0));
        json_object_set_new(o, "max_score", json_integer(t->points));
        json_object_set_new(o, "output", json_string(out ? out : "(out of memory for the message)"));
        json_object_set_new(o, "visibility", json_string("visible"));
        json_array_append_new(tests, o);
        free(out);
    }
    char summary[160];
    snprintf(summary, sizeof summary, "Lab %s: %d/%d points (seed %llu)", lab->id, score, max,
             (unsigned long long)run_seed);
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)run_seed);
    json_object_set_new(root, "extra_data", json_pack("{s:s}", "seed", seed)); /* a string: seeds are 64-bit */
    json_object_set_new(root, "score", json_integer(score));
    json_object_set_new(root, "max_score", json_integer(max));
    json_object_set_new(root, "execution_time", json_real(secs));
    json_object_set_new(root, "output", json_string(summary));
    json_object_set_new(root, "tests", tests);
    int rc = json_dump_file(root, path, JSON_INDENT(2));
    json_decref(root);
    return rc;
}

/* Parses a seed: decimal digits only, below 2^64. */
static int parse_seed(const char *s, uint64_t *out)
{
    if (!s || !*s || strlen(s) > 20)
        return -1;
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c))
            return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno)
        return -1;
    *out = v;
    return 0;
}

/* A fresh seed (kept to 9 digits, easy to type back). */
static uint64_t fresh_seed(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_sec;
    }
    return 1 + v % 999999999ull;
}

int rl_grade_main(const rl_grade_lab *lab, int argc, char **argv)
{
    const char *steps[32];
    int nsteps = 0, list = 0, verbose = 0, have_seed = 0;
    const char *json_path = NULL, *details_path = NULL;
    answers_path = lab->default_answers;
    const char *env_exam = getenv("RL_GRADE_EXAM");
    exam_mode = env_exam && *env_exam && strcmp(env_exam, "0");
    const char *env_seed = getenv("RL_GRADE_SEED");
    if (env_seed && *env_seed) {
        if (parse_seed(env_seed, &run_seed)) {
            fprintf(stderr, "grade: RL_GRADE_SEED='%s' is not a seed; use the number a grading run printed "
                            "(decimal digits, e.g. RL_GRADE_SEED=12345)\n", env_seed);
            return 2;
        }
        have_seed = 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--step") || !strcmp(a, "--json") || !strcmp(a, "--answers") || !strcmp(a, "--seed") ||
             !strcmp(a, "--details")) && i + 1 >= argc) {
            fprintf(stderr, "grade: %s needs a value\n", a);
            usage(lab, stderr);
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
        } else if (!strcmp(a, "--seed")) {
            if (parse_seed(argv[++i], &run_seed)) {
                fprintf(stderr, "grade: --seed '%s' is not a seed (decimal digits, e.g. --seed 12345)\n", argv[i]);
                return 2;
            }
            have_seed = 1;
        } else if (!strcmp(a, "--details")) {
            details_path = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json_path = argv[++i];
        } else if (!strcmp(a, "--answers")) {
            answers_path = argv[++i];
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "--exam")) {
            exam_mode = 1;
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

    if (!have_seed)
        run_seed = fresh_seed();
    check_set_max_msg_size(1 << 20); /* messages are never cut by Check */
    double scale = rl_grade_time_scale();
    printf("Grading lab %s (%s): %d test%s", lab->id, lab->title, nsel, nsel == 1 ? "" : "s");
    if (exam_mode)
        printf(", exam mode");
    else
        printf(", seed %llu", (unsigned long long)run_seed);
    if (scale != 1.0)
        printf(", time limits x%g", scale);
    printf("\n");
    char where[512];
    if (details_path)
        snprintf(where, sizeof where, "the whole text is in %s", details_path);
    else
        snprintf(where, sizeof where, "-v, --details FILE or --json FILE show all of it");
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
                print_indented(o->reason, "   ", verbose ? -1 : 12, verbose ? -1 : 600, where);
                if (!output_redundant(o))
                    print_indented(o->output, "   | ", verbose ? -1 : 12, verbose ? -1 : 300, where);
            } else if (verbose && o->output[0]) {
                print_indented(o->output, "   | ", -1, -1, where);
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
    if (details_path && score < max) {
        if (write_details(details_path, lab, sel, res, nsel)) {
            fprintf(stderr, "grade: could not write %s: %s\n", details_path, strerror(errno));
            rc = 1;
        }
    }
    printf("Seed %llu: RL_GRADE_SEED=%llu replays these cases.\n", (unsigned long long)run_seed,
           (unsigned long long)run_seed);
    printf("Score: %d/%d\n", score, max);
    fflush(stdout);
    for (int i = 0; i < nsel; i++) {
        free(res[i].output);
        free(res[i].reason);
    }
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
    char *line = NULL;
    size_t cap = 0;
    int found = 0, lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *k = trim(line), *v = trim(eq + 1);
        if (strcmp(k, key) || !*v)
            continue;
        if (found) { /* answered twice: which one counts would be a guess */
            found = -2;
            break;
        }
        snprintf(value, size, "%s", v);
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}

/* Parses one numeric answer: a number (digits, a decimal point, an exponent; the integer part
 * may group thousands with ',' or '_', three digits a group), then at most one unit word
 * (letters, '%', '/'; "MB", "us", "GB/s"). Returns 0 and the value, or -1. */
static int parse_answer_number(const char *v, double *out)
{
    char num[96];
    size_t n = 0;
    const char *p = v;
#define PUT(c) do { if (n + 1 >= sizeof num) return -1; num[n++] = (c); } while (0)
    if (*p == '+' || *p == '-')
        PUT(*p++);
    int digits = 0, group = 0, grouped = 0;
    while (isdigit((unsigned char)*p) || ((*p == ',' || *p == '_') && digits)) {
        if (*p == ',' || *p == '_') {
            if ((grouped && group != 3) || (!grouped && digits > 3) || !isdigit((unsigned char)p[1]))
                return -1;
            grouped = 1, group = 0, p++;
            continue;
        }
        PUT(*p++);
        digits++, group++;
    }
    if (grouped && group != 3)
        return -1;
    if (*p == '.') {
        PUT(*p++);
        for (; isdigit((unsigned char)*p); digits++)
            PUT(*p++);
    }
    if (!digits)
        return -1;
    if ((*p == 'e' || *p == 'E') &&
        (isdigit((unsigned char)p[1]) || ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
        PUT(*p++);
        if (*p == '+' || *p == '-')
            PUT(*p++);
        while (isdigit((unsigned char)*p))
            PUT(*p++);
    }
#undef PUT
    num[n] = 0;
    while (isspace((unsigned char)*p))
        p++;
    while (*p && (isalpha((unsigned char)*p) || *p == '%' || *p == '/' || (unsigned char)*p >= 0x80))
        p++; /* one unit word (µs is UTF-8) */
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return -1;
    errno = 0;
    *out = strtod(num, NULL);
    return errno || !isfinite(*out) ? -1 : 0;
}

/* The message for an answers-file lookup that found nothing usable (r = -1, 0 or -2). */
static void answer_missing(int r, const char *path, const char *key, char *msg, size_t size)
{
    if (r == -1)
        snprintf(msg, size, "cannot read the answers file %s", path ? path : "(none)");
    else if (r == -2)
        snprintf(msg, size, "%s is answered more than once in %s: keep one line for it", key, path);
    else
        snprintf(msg, size, "%s is not answered yet in %s", key, path);
}

/* The message of a wrong answer in exam mode: neither which answer nor by how much. */
static void exam_wrong(char *msg, size_t size)
{
    snprintf(msg, size, "an answer of this test is not right (exam mode says neither which one nor by how much)");
}

int rl_grade_check_number(const char *path, const char *key, double expected, double rel_tol,
                          char *msg, size_t size)
{
    char v[256];
    int r = rl_grade_answer(path, key, v, sizeof v);
    if (r != 1) {
        answer_missing(r, path, key, msg, size);
        return 0;
    }
    double got;
    if (parse_answer_number(v, &got)) {
        snprintf(msg, size, "%s = '%s' is not one number (write e.g. 6e6, 0.25 or 1,234, optionally followed by the "
                 "unit word the question asks for, and nothing else)", key, v);
        return 0;
    }
    double err = fabs(got - expected), tol = rel_tol * fabs(expected);
    if (err <= tol || (expected == 0 && err <= rel_tol)) {
        return 1;
    }
    if (exam_mode)
        exam_wrong(msg, size);
    else
        snprintf(msg, size, "%s = %g is off by %.1f%% (tolerance %g%%); check the formula and the unit the question "
                 "asks for", key, got, expected != 0 ? 100.0 * err / fabs(expected) : 100.0, 100.0 * rel_tol);
    return 0;
}

int rl_grade_check_choice(const char *path, const char *key, char expected, char *msg, size_t size)
{
    char v[256];
    int r = rl_grade_answer(path, key, v, sizeof v);
    if (r != 1) {
        answer_missing(r, path, key, msg, size);
        return 0;
    }
    const char *p = v + (v[0] == '(');
    size_t len = strlen(p);
    int closed = len == 2 && p[1] == ')';
    if (!isalpha((unsigned char)p[0]) || !(len == 1 || closed) || (v[0] == '(' && !closed)) {
        snprintf(msg, size, "%s = '%s': answer with one letter (a, b, c or d) and nothing else", key, v);
        return 0;
    }
    if (tolower((unsigned char)p[0]) == tolower((unsigned char)expected))
        return 1;
    if (exam_mode)
        exam_wrong(msg, size);
    else
        snprintf(msg, size, "%s = %c is not the best answer", key, tolower((unsigned char)p[0]));
    return 0;
}
