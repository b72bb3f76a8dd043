/* grade.h — the grader framework every lab's grader uses. A lab grader is a list of Check
 * tests, each with its step, a title, points and a time limit; rl_grade_main runs each
 * one forked (Check's CK_FORK) under its limit, so a crash, an abort or an endless loop in
 * learner code loses that test's points — with the reason, "crashed: SIGSEGV" or "timed out
 * after 10 s" — and grading goes on. It prints one line per test in the style of the
 * OS-course graders, a subtotal per step, `Score: X/Y` last, and can write the Gradescope
 * autograder JSON.
 *
 * Command line of every lab grader (see usage in grade.c):
 *   --step 28.1      only that step (repeatable; "all" = every step)
 *   --seed N         the run's seed (default: RL_GRADE_SEED, else a fresh one, printed)
 *   --json FILE      also write the Gradescope results JSON (messages in full)
 *   --details FILE   also write every failed test's whole message and output
 *   --answers FILE   the lab's answers file (hand derivations, interview questions)
 *   --list           list the tests and their points
 *   -v               show the captured output of passing tests too, and nothing shortened
 * Environment: RL_GRADE_TIME_SCALE=F multiplies every time limit (slow machines);
 * RL_GRADE_SEED=N reproduces a run.
 *
 * Randomized cases. Every run has a seed (printed first and last); a test draws its cases
 * from rl_grade_rng(stream), which depends only on (the run's seed, the test's step and
 * title, stream) — so `RL_GRADE_SEED=N make grade STEP=28.3` replays exactly the cases a
 * failing run of the whole lab drew for 28.3.
 * Exit status: 0 with full marks of the selected tests, 1 otherwise, 2 on bad usage. */
#ifndef RL_GRADE_H
#define RL_GRADE_H
#include <check.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "rng.h"

/* One graded step of a lab ("28.1", "ring all-reduce"). */
typedef struct rl_grade_step {
    const char *id;
    const char *title;
} rl_grade_step;

/* One graded test: a Check test function (START_TEST) with its points and time limit. */
typedef struct rl_grade_test {
    const char *step;       /* the step id it belongs to */
    const char *title;      /* "odd counts" */
    int points;
    double limit_s;         /* wall-clock limit before RL_GRADE_TIME_SCALE */
    const TTest *const *fn; /* &name of a START_TEST(name) */
} rl_grade_test;

/* A lab's grader. */
typedef struct rl_grade_lab {
    const char *id;              /* "28" */
    const char *title;           /* "DDP: data parallelism and bucket overlap" */
    const char *handout;         /* "labs/28_ddp/README.md" */
    const char *default_answers; /* "labs/28_ddp/answers.txt" */
    const rl_grade_step *steps;
    int nsteps;
    const rl_grade_test *tests;
    int ntests;
} rl_grade_lab;

/* Runs a lab grader's command line; returns the process exit status. */
int rl_grade_main(const rl_grade_lab *lab, int argc, char **argv);

/* The answers file of this grading run (--answers, else the lab's default). */
const char *rl_grade_answers_path(void);
/* 1 in exam mode (--exam, RL_GRADE_EXAM=1): answers only right or wrong, the seed printed last only. */
int rl_grade_exam(void);
/* RL_GRADE_TIME_SCALE (1 when unset or invalid). */
double rl_grade_time_scale(void);
/* 1 under the sanitizer test run (RL_TEST_QUICK set): tests may shrink their work. */
int rl_grade_quick(void);
/* The run's seed. */
uint64_t rl_grade_seed(void);
/* In a test: a generator that depends only on (the run's seed, this test, stream). */
rl_rng rl_grade_rng(uint64_t stream);
/* In a test: a number from lo to hi (both included) drawn from g; a random order of 0..n-1. */
int rl_grade_pick(rl_rng *g, int lo, int hi);
void rl_grade_shuffle(rl_rng *g, int *perm, int n);
/* In a test: remembers an error the code under test reported, so that a crash that follows
 * (a freed buffer still in flight ...) is reported with it instead of a bare "crashed". */
void rl_grade_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A text that grows as needed: failure messages and case lists are never cut short. */
typedef struct rl_grade_text {
    char *s;            /* NULL while empty */
    size_t len, cap;
} rl_grade_text;
/* Appends printf-formatted text (on out of memory the text stays as it was). */
void rl_grade_text_add(rl_grade_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list. */
void rl_grade_text_vadd(rl_grade_text *t, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The text ("" when empty). */
const char *rl_grade_text_str(const rl_grade_text *t);
/* Frees the text and empties it. */
void rl_grade_text_free(rl_grade_text *t);

/* ------------------------------------------------------------------ answers files
 * An answers file has one answer per line, `key = value`; `#` starts a comment; blank
 * values mean "not answered"; a key answered twice is an error. A number is one number
 * (e-notation "6e6"; thousands grouped by ',' or '_' in threes) and at most one unit word,
 * which is ignored ("6 MB"; the question says which unit to use); a choice is one letter,
 * "b" or "(b)" or "b)". */

/* Looks key up in the answers file; returns 1 and copies the value (trimmed), 0 when the
 * key is missing or blank, -1 when the file cannot be read, -2 when it is answered twice. */
int rl_grade_answer(const char *path, const char *key, char *value, size_t size);
/* Checks a numeric answer against expected with a relative tolerance; on a wrong or
 * missing answer returns 0 with a message in msg. */
int rl_grade_check_number(const char *path, const char *key, double expected, double rel_tol,
                          char *msg, size_t size);
/* Checks a multiple-choice answer (one letter, any case); returns 1 when right. */
int rl_grade_check_choice(const char *path, const char *key, char expected, char *msg, size_t size);

/* In a test: the answer to key must be the number expected (relative tolerance tol). The
 * message holds the key and at most the answer's first 256 characters. */
#define CHECK_NUM(key, expected, tol)                                                          \
    do {                                                                                       \
        char msg_[1024];                                                                       \
        ck_assert_msg(rl_grade_check_number(rl_grade_answers_path(), key, expected, tol, msg_, \
                                            sizeof msg_), "%s", msg_);                         \
    } while (0)

/* In a test: the answer to key must be the letter given. */
#define CHECK_CHOICE(key, letter)                                                                    \
    do {                                                                                             \
        char msg_[1024];                                                                             \
        ck_assert_msg(rl_grade_check_choice(rl_grade_answers_path(), key, letter, msg_, sizeof msg_), \
                      "%s", msg_);                                                                   \
    } while (0)

#endif
