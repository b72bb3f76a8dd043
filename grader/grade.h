/* grade.h — the grader framework every lab's grader uses. A lab grader is a list of tests
 * (Check's START_TEST functions), each with its step, a title, points and a time limit.
 *
 * Who runs what. The grader process never runs code under test. For each test it forks a
 * child, which runs the test function inside a sandbox (sandbox.h) and writes a record: every
 * stretch of work that runs code under test goes through rl_grade_run, whose output — the
 * values the code produced and the runtime's records of what it did (trace, counters, memory)
 * — is copied into a record the grader set up for this test, with a per-run nonce. Then the
 * grader forks the judge, a process that never runs code under test either: it runs the same
 * test function, draws the same cases from the seed, computes every reference itself, takes
 * each rl_grade_run's output from the child's record instead of running it, and makes every
 * comparison. A test passes only when the judge passed it and the child finished its record;
 * a child's exit status alone never passes, and a missing or malformed record fails. A
 * crash, an abort or an endless loop in the child loses that test's points — with the reason,
 * "crashed: SIGSEGV" or "timed out after 10 s" — and grading goes on. Tests that run no code
 * under test (answers files) are judged alone. It prints one line per test in the style of the
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
#include <stdio.h>
#include "rng.h"
#include "trace.h"

/* One graded step of a lab ("28.1", "ring all-reduce"). */
typedef struct rl_grade_step {
    const char *id;
    const char *title;
} rl_grade_step;

/* rl_grade_test.flags */
enum {
    RL_GRADE_NO_CHILD = 1, /* the test runs no code under test (an answers file): only the judge runs it */
};

/* One graded test: a Check test function (START_TEST) with its points and time limit. */
typedef struct rl_grade_test {
    const char *step;       /* the step id it belongs to */
    const char *title;      /* "odd counts" */
    int points;
    double limit_s;         /* wall-clock limit before RL_GRADE_TIME_SCALE (the child's, and the judge's) */
    const TTest *const *fn; /* &name of a START_TEST(name) */
    int flags;              /* RL_GRADE_NO_CHILD or 0 */
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
    void (*questions)(FILE *out); /* prints this learner's numbers for the hand derivations (NULL: none) */
    const char *const *interview; /* the interview questions' answer keys, in the handout's order (NULL-ended) */
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

/* ------------------------------------------------------------------ failing a test
 * Check's assertion macros, redefined: a failed check ends the test's process with its
 * message (the judge's verdict). The child makes no checks at all — it only records, and
 * carries on past what would fail — so work that only feeds checks (references) may be
 * skipped there (rl_grade_judging). */
__attribute__((noreturn, format(printf, 3, 4))) void rl_grade_fail(const char *file, int line, const char *fmt, ...);
/* 0 in the child (its checks count for nothing), else 1. */
int rl_grade_checks(void);
#undef ck_assert
#undef ck_assert_msg
#undef ck_abort_msg
#undef ck_assert_int_eq
#undef ck_assert_int_ge
#define ck_assert_msg(expr, ...) ((expr) || !rl_grade_checks() ? (void)0 : rl_grade_fail(__FILE__, __LINE__, __VA_ARGS__))
#define ck_assert(expr) ck_assert_msg(expr, "Assertion '%s' failed", #expr)
#define ck_abort_msg(...) (!rl_grade_checks() ? (void)0 : rl_grade_fail(__FILE__, __LINE__, __VA_ARGS__))
#define RL_GRADE_CMP_(X, OP, Y)                                                                                    \
    do {                                                                                                          \
        intmax_t x_ = (X), y_ = (Y);                                                                              \
        if (!(x_ OP y_) && rl_grade_checks())                                                                     \
            rl_grade_fail(__FILE__, __LINE__, "Assertion '%s' failed: %s == %jd, %s == %jd", #X " " #OP " " #Y, #X, \
                          x_, #Y, y_);                                                                            \
    } while (0)
#define ck_assert_int_eq(X, Y) RL_GRADE_CMP_(X, ==, Y)
#define ck_assert_int_ge(X, Y) RL_GRADE_CMP_(X, >=, Y)

/* ------------------------------------------------------------------ runs of code under test
 * rl_grade_run(label, size, fn, arg): in the child, runs fn(out, arg) with out zeroed (size
 * bytes in the record) and returns out; in the judge, returns the same bytes from the child's
 * record without running fn (and ends the test with the child's own failure when the child
 * never finished this run: a crash, a time-out, a failed check). Everything a test checks must
 * come from what rl_grade_run returned, and fn may only write out, what it keeps with
 * rl_grade_keep, and its own locals: the judge never runs it. The k-th call of a test is
 * matched with the child's k-th by its label and size. */
typedef void (*rl_grade_produce)(void *out, void *arg);
const void *rl_grade_run(const char *label, size_t size, rl_grade_produce fn, void *arg);

/* Bytes kept in the record (in fn of rl_grade_run): their place, not a pointer. */
typedef struct rl_grade_blob {
    uint64_t off, len;
} rl_grade_blob;
/* In fn: copies len bytes into the record. */
rl_grade_blob rl_grade_keep(const void *data, size_t len);
/* Kept text (NULL: an empty one). */
rl_grade_blob rl_grade_keep_str(const char *s);
/* The bytes of a kept blob, checked to hold exactly n elements of elem bytes (NULL when n is 0);
 * a blob that does not fit the record ends the test (a malformed record). */
const void *rl_grade_blob_get(rl_grade_blob b, size_t elem, size_t n);
/* A kept text ("" when empty). */
const char *rl_grade_blob_str(rl_grade_blob b);
/* The number of elem-byte elements in b. */
size_t rl_grade_blob_count(rl_grade_blob b, size_t elem);
/* In fn: a copy of trace t in the record (an empty blob for NULL). */
rl_grade_blob rl_grade_keep_trace(const rl_trace *t);
/* The trace kept in b (the caller frees it with rl_trace_free), NULL for an empty blob; a
 * malformed one ends the test. */
rl_trace *rl_grade_trace(rl_grade_blob b);
/* A temporary file in the test's scratch folder (already unlinked), or NULL: the child may
 * open files only there. */
FILE *rl_grade_tmpfile(void);
/* 1 in the judge, and wherever checks count (rl_grade_checks): work that only feeds checks
 * (references, comparisons) may be skipped where this is 0. */
int rl_grade_judging(void);

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
/* Parses one numeric answer: a number (digits, a decimal point, an exponent; the integer part
 * may group thousands with ',' or '_', three digits a group), then at most one unit word
 * (letters, '%', '/'; "MB", "us", "GB/s"). Returns 0 and the value, or -1. */
int rl_grade_parse_number(const char *v, double *out);
/* One multiple-choice letter, "b", "B", "(b)" or "b)": 0..3 for a..d, or -1. */
int rl_grade_parse_choice(const char *v);
/* Checks a numeric answer against expected with a relative tolerance; on a wrong or
 * missing answer returns 0 with a message in msg. */
int rl_grade_check_number(const char *path, const char *key, double expected, double rel_tol,
                          char *msg, size_t size);
/* Checks the lab's interview questions (rl_grade_lab.interview): each answer one letter (any case)
 * in the learner's own order of the options (make questions prints it); 1 when all are right,
 * else 0 with msg naming what is not (exam mode: not which). Prints, when the keys are here, why
 * each option is right or wrong, in the learner's letters. */
int rl_grade_check_interview(const char *path, char *msg, size_t size);

/* ------------------------------------------------------------------ this learner's numbers
 * A hand derivation is asked about numbers of the learner's own, not the handout's: the
 * answers file's `learner = ID` line (make learner ID=...; --learner ID overrides it — the
 * autograder passes the submission's owner), hashed with the course's salt and the question. */

/* One of the n choices, the same for a given learner and question on every run and machine.
 * In a test with no learner id set, fails the test saying how to set one. */
double rl_grade_learner_pick(const char *question, const double *choices, int n);

/* In a test: the answer to key must be the number expected (relative tolerance tol). The
 * message holds the key and at most the answer's first 256 characters. */
#define CHECK_NUM(key, expected, tol)                                                          \
    do {                                                                                       \
        char msg_[1024];                                                                       \
        ck_assert_msg(rl_grade_check_number(rl_grade_answers_path(), key, expected, tol, msg_, \
                                            sizeof msg_), "%s", msg_);                         \
    } while (0)

/* In a test: the answer to key must be the letter given. */
#define CHECK_INTERVIEW()                                                                            \
    do {                                                                                             \
        char msg_[2048];                                                                             \
        ck_assert_msg(rl_grade_check_interview(rl_grade_answers_path(), msg_, sizeof msg_), "%s", msg_); \
    } while (0)

#endif
