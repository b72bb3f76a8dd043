/* grade.c — the grader runner: per test a sandboxed child that runs the code under test and
 * writes a record, then a judge that checks it (grade.h), each under the test's time limit;
 * a line per test, subtotals per step, `Score: X/Y`, Gradescope JSON; answers-file checks. */
#include "err.h"
#include "grade.h"
#include "hints.h"
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "apiwatch.h"
#include "optnum.h"
#include "rules.h"
#include "sandbox.h"

/* The runner's own bookkeeping (one grading run per process; a test's child inherits it). */
static const char *answers_path;
static rl_hints_used hints_used; /* --hints: the hints the learner was shown, per step */
static int hint_penalty;         /* --hint-penalty: points off a step per hint shown */
static const char *lab_answers_default; /* the lab's answers file (labs/NN_name/answers.txt): names its keys file */
static const rl_grade_lab *grading_lab;  /* the lab this process grades */
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

/* The course's salt for the learners' numbers: change it (one line) to give a course numbers of
 * its own; a grade on the learner's machine and in the autograder must use the same. */
#define COURSE_SALT "ringlab/course-numbers/1"

static char learner_id[128];      /* the learner id of this grade ("" when none) */
static int questions_mode;        /* --questions: prints this learner's numbers, grades nothing */

/* A number of this learner's own for a question (the course salt, the learner id, the question). */
static uint64_t learner_hash(const char *question)
{
    if (!learner_id[0] && !questions_mode)
        rl_grade_fail(__FILE__, __LINE__, "%s has no learner id, so your numbers and letters for this question are not "
                      "set: run make learner ID=<your course email or student id> once, then make questions LAB=<lab> "
                      "prints them", answers_path);
    uint64_t h = hash_str(hash_str(hash_str(0xcbf29ce484222325ull, COURSE_SALT), learner_id), question);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull; /* a finaliser: close ids land far apart */
    h ^= h >> 33;
    return h;
}

double rl_grade_learner_pick(const char *question, const double *choices, int n)
{
    uint64_t h = learner_hash(question);
    return n > 0 ? choices[h % (uint64_t)n] : 0;
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

/* ------------------------------------------------------------------ processes and records
 * Per test the grader forks the child (the code under test, sandboxed), which fills the
 * test's record — a shared mapping the grader made before the fork — and then the judge
 * (never code under test), which reads it; see grade.h. */

#define REC_MAGIC 0x726c2d7265636f72ull /* "rl-recor" */
#define REC_CAP ((uint64_t)1 << 30)   /* address space reserved for one test's record */
#define REC_MAXBLOCKS 4096

/* A run's header in the record; its output follows. */
typedef struct rec_block {
    uint64_t magic, nonce;
    uint32_t seq, pad;
    char label[64];
    uint64_t size;
} rec_block;

/* The head of a test's record. */
typedef struct rec_head {
    uint64_t magic, nonce, cap;
    uint64_t used;                        /* bytes in use from the head on (grows atomically) */
    uint32_t nblocks;                     /* finished runs */
    uint32_t done;                        /* 1: the test function returned or failed a check */
    uint32_t passed;                      /* 0: the child failed (a full record, an impossible run ...) */
    uint32_t pad;
    uint64_t msg_off, msg_len;            /* the child's failure message */
    uint64_t block_off[REC_MAXBLOCKS];
} rec_head;

enum { ROLE_GRADER = 0, ROLE_CHILD, ROLE_JUDGE };
static int role;                          /* which process this is */
static uint64_t run_nonce;                /* the grading run's nonce (a child's record must carry it) */
static rec_head *rec;                     /* this test's record (the judge maps it read-only) */
static uint64_t rec_used;                 /* judge: the record's size when the child ended */
static uint32_t rec_next;                 /* judge: the next run to take from the record */
static const char *child_report;          /* judge: why the child stopped short, or NULL */
static int verdict_fd = -1;               /* judge: the pipe to the grader */
static int failing;                       /* a check failed: the first one reports, others wait */
static char *called;                      /* grader, judge: the watched functions the code under test called, */
static size_t called_len;                 /* NUL-ended names read from the child's watch pipe (apiwatch.h) */

extern char __start_rl_learner_text[];    /* the code under test: the lab file's text, placed */
void rl_learner_text_end(void);           /* between these by the Makefile (grader/learner_end.c) */

#if defined(__SANITIZE_ADDRESS__)
#define RL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RL_ASAN 1
#endif
#endif

/* Makes the code under test executable (prot = PROT_READ | PROT_EXEC) or not (PROT_NONE). Not
 * under AddressSanitizer, which puts a constructor and a destructor into every object's code
 * (the grader's own process runs them). */
static void learner_text(int prot)
{
#ifdef RL_ASAN
    (void)prot;
#else
    uintptr_t lo = (uintptr_t)__start_rl_learner_text, hi = (uintptr_t)rl_learner_text_end;
    if (hi > lo && mprotect((void *)lo, hi - lo, prot)) {
        fprintf(stderr, "grade: cannot %s the code under test: %s\n", prot ? "map" : "unmap", strerror(errno));
        _exit(2);
    }
#endif
}

static int in_learner_text(uintptr_t a)
{
    return a >= (uintptr_t)__start_rl_learner_text && a < (uintptr_t)rl_learner_text_end;
}

/* A record for one test (the grader: a fresh shared mapping), or NULL. */
static rec_head *rec_new(void)
{
    void *m = mmap(NULL, REC_CAP, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    rec_head *h = m;
    h->magic = REC_MAGIC;
    h->nonce = run_nonce;
    h->cap = REC_CAP;
    h->used = (sizeof *h + 15) & ~(uint64_t)15;
    return h;
}

/* Child: len bytes of the record (16-byte aligned); its offset. A full record fails the test. */
static uint64_t rec_alloc(size_t len)
{
    uint64_t n = ((uint64_t)len + 15) & ~(uint64_t)15;
    uint64_t off = __atomic_fetch_add(&rec->used, n, __ATOMIC_RELAXED);
    if (off + n > REC_CAP || off + n < off)
        rl_grade_fail(__FILE__, __LINE__, "the test's record is full (%llu bytes): the run produced more output "
                      "than a test may keep", (unsigned long long)REC_CAP);
    return off;
}

/* Ends this process's test with a message: the child writes it into its record, the judge
 * sends it to the grader. Only the first failing thread reports; the others wait for the exit. */
__attribute__((noreturn)) static void finish(int passed, const char *msg)
{
    if (__atomic_exchange_n(&failing, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause();
    fflush(NULL);
    if (role == ROLE_CHILD) {
        if (msg) {
            size_t len = strlen(msg);
            uint64_t off = __atomic_fetch_add(&rec->used, (len + 16) & ~(uint64_t)15, __ATOMIC_RELAXED);
            if (off + len + 1 <= REC_CAP) {
                memcpy((char *)rec + off, msg, len + 1);
                rec->msg_off = off, rec->msg_len = len;
            }
        }
        rec->passed = (uint32_t)passed;
        __atomic_store_n(&rec->done, 1, __ATOMIC_RELEASE);
    } else if (role == ROLE_JUDGE) {
        const char *m = msg ? msg : "";
        size_t len = strlen(m);
        char tag = passed ? 'P' : 'F';
        if (write(verdict_fd, &tag, 1) == 1)
            for (size_t k = 0; k < len;) {
                ssize_t w = write(verdict_fd, m + k, len - k);
                if (w <= 0)
                    break;
                k += (size_t)w;
            }
    } else {
        fprintf(stderr, "grade: %s\n", msg ? msg : "");
        exit(2);
    }
    _exit(passed ? 0 : 1);
}

/* A malloc'd vprintf (NULL when out of memory). */
static char *str_vprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

void rl_grade_fail(const char *file, int line, const char *fmt, ...)
{
    (void)file, (void)line;
    va_list ap;
    va_start(ap, fmt);
    char *m = str_vprintf(fmt, ap);
    va_end(ap);
    finish(0, m ? m : "(out of memory for the message)");
}

int rl_grade_checks(void) { return role != ROLE_CHILD; }

int rl_grade_judging(void) { return rl_grade_checks(); }

FILE *rl_grade_tmpfile(void)
{
    char name[] = "rl-tmp-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0)
        return NULL;
    unlink(name);
    FILE *f = fdopen(fd, "w+");
    if (!f)
        close(fd);
    return f;
}

const void *rl_grade_run(const char *label, size_t size, rl_grade_produce fn, void *arg)
{
    if (role == ROLE_CHILD) {
        if (rec->nblocks >= REC_MAXBLOCKS)
            rl_grade_fail(__FILE__, __LINE__, "a test may make at most %d runs", REC_MAXBLOCKS);
        uint64_t off = rec_alloc(sizeof(rec_block) + size);
        rec_block *b = (rec_block *)((char *)rec + off);
        b->magic = REC_MAGIC, b->nonce = run_nonce, b->seq = rec->nblocks, b->size = size;
        snprintf(b->label, sizeof b->label, "%s", label);
        void *out = b + 1;
        fn(out, arg);
        rec->block_off[rec->nblocks] = off;
        __atomic_store_n(&rec->nblocks, rec->nblocks + 1, __ATOMIC_RELEASE);
        return out;
    }
    if (role != ROLE_JUDGE || !rec)
        rl_grade_fail(__FILE__, __LINE__, "grader bug: rl_grade_run(\"%s\") in a test that runs no code under test",
                      label);
    uint32_t k = rec_next++;
    if (k >= rec->nblocks)
        rl_grade_fail(__FILE__, __LINE__, "%s", child_report ? child_report
                      : "the test's record ends before this run (the record does not match the test)");
    uint64_t off = rec->block_off[k];
    const rec_block *b = (const rec_block *)((const char *)rec + off);
    if (off < sizeof *rec || off > rec_used || rec_used - off < sizeof *b || b->magic != REC_MAGIC ||
        b->nonce != run_nonce || b->seq != k || b->size != size || rec_used - off - sizeof *b < size ||
        strncmp(b->label, label, sizeof b->label))
        rl_grade_fail(__FILE__, __LINE__, "the test's record is malformed at run %u (%s): it was not written by this "
                      "run's child, or the code under test overwrote it", k, label);
    return b + 1;
}

rl_grade_blob rl_grade_keep(const void *data, size_t len)
{
    if (role != ROLE_CHILD)
        rl_grade_fail(__FILE__, __LINE__, "grader bug: rl_grade_keep outside a run of the child");
    rl_grade_blob b = { 0, 0 };
    if (!len)
        return b;
    b.off = rec_alloc(len);
    b.len = len;
    memcpy((char *)rec + b.off, data, len);
    return b;
}

rl_grade_blob rl_grade_keep_str(const char *s)
{
    return s && *s ? rl_grade_keep(s, strlen(s) + 1) : (rl_grade_blob){ 0, 0 };
}

rl_grade_blob rl_grade_keep_trace(const rl_trace *t)
{
    size_t len = 0;
    void *bytes = t ? rl_trace_pack(t, &len) : NULL;
    if (t && !bytes)
        rl_grade_fail(__FILE__, __LINE__, "out of memory packing the run's trace");
    rl_grade_blob b = rl_grade_keep(bytes, len);
    free(bytes);
    return b;
}

rl_trace *rl_grade_trace(rl_grade_blob b)
{
    if (!b.len)
        return NULL;
    char err[256];
    rl_trace *t = rl_trace_unpack(rl_grade_blob_get(b, 1, (size_t)b.len), (size_t)b.len, err, sizeof err);
    if (!t)
        rl_grade_fail(__FILE__, __LINE__, "the test's record is malformed (the run's trace: %s): the code under test "
                      "overwrote it", err);
    return t;
}

/* The bytes of b when b lies inside the record, else NULL. */
static const void *blob_bytes(rl_grade_blob b)
{
    uint64_t used = role == ROLE_JUDGE ? rec_used : __atomic_load_n(&rec->used, __ATOMIC_RELAXED);
    if (!rec || b.off < sizeof *rec || b.off > used || used - b.off < b.len)
        return NULL;
    return (const char *)rec + b.off;
}

const void *rl_grade_blob_get(rl_grade_blob b, size_t elem, size_t n)
{
    if (n == 0 && b.len == 0)
        return NULL;
    const void *p = blob_bytes(b);
    if (!p || !elem || b.len / elem != n || b.len % elem)
        rl_grade_fail(__FILE__, __LINE__, "the test's record is malformed (%llu bytes where %zu x %zu were "
                      "expected): the code under test overwrote it", (unsigned long long)b.len, n, elem);
    return p;
}

size_t rl_grade_blob_count(rl_grade_blob b, size_t elem) { return elem ? (size_t)(b.len / elem) : 0; }

const char *rl_grade_blob_str(rl_grade_blob b)
{
    if (!b.len)
        return "";
    const char *p = blob_bytes(b);
    if (!p || p[b.len - 1])
        rl_grade_fail(__FILE__, __LINE__, "the test's record is malformed (a text that does not end): the code "
                      "under test overwrote it");
    return p;
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

/* In the judge: a fault inside the code under test is a grader bug, said as such. */
static void on_judge_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    static const char m[] = "Fgrader bug: the judge reached the code under test outside rl_grade_run";
    if (si && in_learner_text((uintptr_t)si->si_addr)) {
        ssize_t k = write(verdict_fd, m, sizeof m - 1);
        (void)k;
    }
    signal(sig, SIG_DFL);
    raise(sig);
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
    char *s = str_vprintf(fmt, ap);
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

/* Reads and closes a capture file. */
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
    fclose(f);
    return buf;
}

/* The grader: takes what the child's watch has written into the pipe so far (fd: its read end,
 * non-blocking), so that the child never waits on a full pipe; keeps each name once in called.
 * (Each report is one write of a NUL-ended name, under PIPE_BUF bytes: never cut by another.) */
static char called_part[64];              /* grader: a name not yet ended in the pipe */
static size_t called_npart;

static void take_called(int fd)
{
    char *part = called_part;
    size_t npart = called_npart;
    char buf[1 << 16];
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR)) {
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i]) {
                if (npart < sizeof called_part - 1)
                    part[npart++] = buf[i];
                called_npart = npart;
                continue;
            }
            part[npart] = 0;
            called_npart = 0;
            npart = 0;
            int known = !part[0];
            for (size_t off = 0; !known && off < called_len; off += strlen(called + off) + 1)
                known = !strcmp(called + off, part);
            size_t len = strlen(part) + 1;
            char *more = known ? NULL : realloc(called, called_len + len + 1);
            if (more) {
                memcpy(more + called_len, part, len);
                called_len += len;
                more[called_len] = 0;
                called = more;
            }
        }
    }
}

/* Waits for pid at most limit seconds (then kills it), reading the watch's pipe (drain_fd, or
 * -1) meanwhile; returns the wait status. */
static int wait_limited(pid_t pid, double limit, int *timed_out, int drain_fd)
{
    *timed_out = 0;
    int status = 0;
    double end = mono_now() + limit;
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (drain_fd >= 0)
        fcntl(drain_fd, F_SETFL, fcntl(drain_fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        if (drain_fd >= 0)
            take_called(drain_fd);
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return 0;
        double left = end - mono_now();
        if (left <= 0) {
            *timed_out = 1;
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        struct pollfd p[2] = { { .fd = pfd, .events = POLLIN }, { .fd = drain_fd, .events = POLLIN } };
        if (pfd >= 0 || drain_fd >= 0)
            poll(pfd >= 0 ? p : p + 1, (nfds_t)((pfd >= 0) + (drain_fd >= 0)), pfd >= 0 ? (int)(left * 1000) + 1 : 2);
        else {
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
    }
    if (drain_fd >= 0)
        take_called(drain_fd);
    if (pfd >= 0)
        close(pfd);
    return status;
}

/* Why a child that ended with status did not finish its test (malloc'd), or NULL when it did. */
static char *child_outcome(int status, int timed_out, double limit, const char *output)
{
    if (timed_out)
        return str_printf("timed out after %g s (an endless loop or a deadlock; RL_GRADE_TIME_SCALE scales the "
                          "limit on slow machines)", limit);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        char *note = crash_note_in(output);
        char *r = note ? str_printf("crashed: SIG%s (%s), after your code had reported an error: %s",
                                    abbrev ? abbrev : "?", strsignal(sig), note)
                       : str_printf("crashed: SIG%s (%s)", abbrev ? abbrev : "?", strsignal(sig));
        free(note);
        return r;
    }
    if (rec->magic != REC_MAGIC || rec->nonce != run_nonce || rec->used > REC_CAP || rec->nblocks > REC_MAXBLOCKS)
        return strdup("the test's record was overwritten: the code under test wrote where it may not");
    if (!__atomic_load_n(&rec->done, __ATOMIC_ACQUIRE))
        return str_printf("the test's process ended (exit status %d) before the test finished: the code under test "
                          "called exit() or ended the process; return an error code instead (a test passes only "
                          "with its whole record)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (!rec->passed) {
        rl_grade_blob m = { rec->msg_off, rec->msg_len + 1 };
        const char *p = blob_bytes(m);
        return p && !p[rec->msg_len] ? strdup(p) : strdup("a check of the test failed (its message was lost)");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return str_printf("the test's process ended with exit status %d after the test", WEXITSTATUS(status));
    return NULL;
}

/* Removes a scratch folder and everything in it (links are removed, never followed). */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

extern const char rl_grade_rules_text[]; /* the lab's rules, built in (the Makefile: gen/rules-LAB.c) */

/* In the judge, after the test passed: fails it when the code under test called, at run time, a
 * runtime function that a rule denies to a function of the test's step (or to every function). */
static void check_api_calls(const rl_grade_test *t)
{
    rl_rules rs = { 0 };
    FILE *f = fmemopen((void *)rl_grade_rules_text, strlen(rl_grade_rules_text), "r");
    if (!f || rl_rules_read(f, "the lab's rules", &rs))
        rl_grade_fail(__FILE__, __LINE__, "grader bug: its rules (grader/allow/) do not read");
    fclose(f);
    for (size_t off = 0; off < called_len; off += strlen(called + off) + 1) {
        char fn[64];
        snprintf(fn, sizeof fn, "%s", called + off);
        const rl_rule *r = fn[0] ? rl_rules_find(&rs, 'n', NULL, fn) : NULL;
        const char *who = "a lab file";
        for (int k = 0; k < rs.n && fn[0] && !r; k++)
            if (rs.r[k].kind == 'd' && !strcmp(rs.r[k].step, t->step) && (r = rl_rules_find(&rs, 'f', rs.r[k].func, fn)))
                who = rs.r[k].func;
        if (r)
            rl_grade_fail(__FILE__, __LINE__, "while this test ran, the code under test called %s, which %s (step %s) may "
                          "not use%s%s. The grader watches the runtime's functions as they are called: reaching one "
                          "through a pointer or a helper counts too (the handout says what each step may use)",
                          fn, who, t->step, *r->why ? ": " : "", r->why);
    }
    rl_rules_free(&rs);
}

/* The grading run's scratch folder (each test's child works in a folder of its own below it). */
static char scratch_base[512];

/* Removes name (below the folder dirfd) and everything under it, with system calls only
 * (async-signal-safe: no fork, whose handlers may wait on a library's threads). */
static int remove_tree_at(int dirfd, const char *name, int depth)
{
    if (!unlinkat(dirfd, name, 0))
        return 1;
    int fd = depth > 32 ? -1 : openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    long n;
    int again = 1;
    while (again && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        again = 0;
        for (long off = 0; off < n;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *)(buf + off);
            off += d->reclen;
            if (strcmp(d->name, ".") && strcmp(d->name, ".."))
                again |= remove_tree_at(fd, d->name, depth + 1);
        }
        if (again) /* (the listing changed under us: read it again while something goes) */
            lseek(fd, 0, SEEK_SET);
    }
    close(fd);
    return !unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Ctrl-C, TERM, HUP, QUIT or a closed pipe (make grade | head) while grading: the scratch folder
 * goes too, then the signal ends the grader as it would have. */
static void remove_scratch_on_signal(int sig)
{
    if (scratch_base[0])
        remove_tree_at(AT_FDCWD, scratch_base, 0);
    signal(sig, SIG_DFL);
    raise(sig);
}

#define WATCH_FD 3 /* in the child: the write end of the pipe its watch reports to (apiwatch.h) */
extern char __executable_start[], _end[]; /* the program's own mappings (the linker's symbols) */

/* In the forked child: confines itself and runs the test; never returns. */
static void child_main(const rl_grade_test *t, FILE *cap, const char *dir, int watch_fd)
{
    role = ROLE_CHILD;
    setpgid(0, 0);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0)
        dup2(nul, 0);
    dup2(fileno(cap), 1);
    dup2(fileno(cap), 2);
    if (watch_fd != WATCH_FD && dup2(watch_fd, WATCH_FD) < 0)
        rl_grade_fail(__FILE__, __LINE__, "the grader could not set up its watch: %s", strerror(errno));
    close_range(WATCH_FD + 1, ~0u, 0);
    crash_note[0] = 0;
    int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], on_fatal_signal);
    struct rlimit fsz = { (rlim_t)64 << 20, (rlim_t)64 << 20 }, nproc = { 1024, 1024 };
    setrlimit(RLIMIT_FSIZE, &fsz);  /* what it may write: 64 MiB */
    setrlimit(RLIMIT_NPROC, &nproc); /* threads (a user that is not root: the autograder's) */
    learner_text(PROT_READ | PROT_EXEC);
    extern char __stop_rl_learner_text[]; /* the watch covers the closing page too (a lone ret) */
    rl_api_watch(__start_rl_learner_text, __stop_rl_learner_text, WATCH_FD);
    if (rl_api_watch_seal())
        rl_grade_fail(__FILE__, __LINE__, "the grader could not seal its watch: %s", strerror(errno));
    char err[256];
    int no_files = 0;
    rl_sandbox_keep keep = { .image_lo = __executable_start, .image_hi = _end, .fd = WATCH_FD };
    if (chdir(dir) || rl_sandbox_enter(".", &keep, &no_files, err, sizeof err))
        rl_grade_fail(__FILE__, __LINE__, "the grader could not confine the test's process (%s): it grades only "
                      "inside its sandbox (Linux with seccomp)", chdir(dir) ? strerror(errno) : err);
    (*t->fn)->fn(0);
    finish(1, NULL);
}

/* In the forked judge: runs the test against the child's record; never returns. */
static void judge_main(const rl_grade_test *t, FILE *cap, int fd)
{
    role = ROLE_JUDGE;
    verdict_fd = fd;
    dup2(fileno(cap), 1);
    dup2(fileno(cap), 2);
    struct sigaction sa = { 0 };
    sa.sa_sigaction = on_judge_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    if (rec) {
        rec_used = rec->used;
        mprotect(rec, REC_CAP, PROT_READ);
    }
    (*t->fn)->fn(0);
    if (rec)
        check_api_calls(t);
    finish(1, NULL);
}

/* Runs the judge of t (rec: the child's record, or NULL); returns its verdict message
 * (malloc'd; "" when it passed) or a grader failure in *reason. */
static int run_judge(const rl_grade_test *t, double limit, char **reason, char **output, double *secs)
{
    int fds[2];
    FILE *cap = tmpfile();
    if (pipe(fds) || !cap) {
        *reason = str_printf("the grader could not start the judge: %s", strerror(errno));
        if (cap)
            fclose(cap);
        return 0;
    }
    fflush(NULL);
    double t0 = mono_now();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        judge_main(t, cap, fds[1]);
    }
    close(fds[1]);
    rl_grade_text v = { 0 };
    int timed_out = 0, status = 0;
    if (pid > 0) {
        double end = t0 + limit;
        char buf[4096];
        for (;;) { /* the verdict as it comes (a long message would fill the pipe), until the judge ends */
            double left = end - mono_now();
            struct pollfd p = { .fd = fds[0], .events = POLLIN };
            int pr = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0) {
                timed_out = 1;
                break;
            }
            ssize_t k = read(fds[0], buf, sizeof buf);
            if (k <= 0)
                break;
            rl_grade_text_add(&v, "%.*s", (int)k, buf);
        }
        int late = 0;
        status = wait_limited(pid, timed_out ? 0 : 5, &late, -1);
        timed_out |= late;
    }
    *secs = mono_now() - t0;
    close(fds[0]);
    *output = slurp_file(cap);
    const char *m = rl_grade_text_str(&v);
    int passed = 0;
    if (pid < 0)
        *reason = str_printf("the grader could not start the judge: %s", strerror(errno));
    else if (m[0] == 'P' && !m[1] && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        passed = 1;
    else if (m[0] == 'F')
        *reason = strdup(m + 1);
    else
        *reason = str_printf("the grader's judge of this test failed (%s): a grader bug, or a record it could not "
                             "read", timed_out ? "timed out" : WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                                                                   : "no verdict");
    rl_grade_text_free(&v);
    return passed;
}

/* Runs one test: the child (unless the test runs no code under test), then the judge. */
static void run_one(const rl_grade_test *t, int index, double scale, outcome *o)
{
    memset(o, 0, sizeof *o);
    double limit = t->limit_s * scale;
    test_key = key_of(t); /* both processes inherit it: rl_grade_rng */
    free(called);
    called = NULL;
    called_len = 0;
    called_npart = 0;
    rec = NULL;
    rec_next = 0;
    child_report = NULL;
    char *report = NULL, dir[600];
    snprintf(dir, sizeof dir, "%s/t%d", scratch_base, index);
    int child_ok = 1;
    if (!(t->flags & RL_GRADE_NO_CHILD)) {
        FILE *cap = tmpfile();
        int wp[2] = { -1, -1 };
        rec = rec_new();
        if (!cap || !rec || pipe(wp) || mkdir(dir, 0700)) {
            o->reason = str_printf("the grader could not set up the test: %s", strerror(errno));
            o->output = calloc(1, 1);
            if (cap)
                fclose(cap);
            if (wp[0] >= 0)
                close(wp[0]), close(wp[1]);
            goto out;
        }
        fflush(NULL);
        double t0 = mono_now();
        pid_t pid = fork();
        if (pid == 0)
            child_main(t, cap, dir, wp[1]);
        close(wp[1]);
        int timed_out = 0, status = pid > 0 ? wait_limited(pid, limit, &timed_out, wp[0]) : 0;
        close(wp[0]);
        o->seconds = mono_now() - t0;
        o->output = slurp_file(cap);
        if (!o->output)
            o->output = calloc(1, 1);
        report = pid < 0 ? str_printf("the grader could not fork: %s", strerror(errno))
                         : child_outcome(status, timed_out, limit, o->output);
        child_ok = report == NULL;
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    child_report = report;
    char *jout = NULL, *why = NULL;
    double js = 0;
    int judged = run_judge(t, limit, &why, &jout, &js);
    o->seconds += js;
    if (!o->output) {
        o->output = jout ? jout : calloc(1, 1);
        jout = NULL;
    }
    free(jout);
    o->passed = judged && child_ok;
    o->reason = judged ? (report ? strdup(report) : NULL) : why;
    if (judged)
        free(why);
out:
    free(report);
    child_report = NULL;
    if (rec)
        munmap(rec, REC_CAP);
    rec = NULL;
    if (!o->passed && !o->reason)
        o->reason = strdup("(out of memory for the message)");
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
    int failed = 0;
    for (int i = 0; i < nsel; i++)
        failed += !res[i].passed;
    if (!failed)
        fprintf(f, "\n(none failed)\n");
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
    fprintf(f, "usage: grade [--step ID]... [--seed N] [--json FILE | --json-fd N] [--details FILE] [--answers FILE] "
               "[--exam] [--list] [--zero-json FILE REASON] [--hints FILE [--hint-penalty P]] [--learner ID] "
               "[--questions] [-v]\n"
               "Grades lab %s (%s); the handout is %s.\n"
               "  --step ID       grade only step ID (repeatable), e.g. --step %s\n"
               "  --seed N        the seed of the randomized cases (default RL_GRADE_SEED, else a fresh one)\n"
               "  --json FILE     also write the results in the Gradescope autograder format\n"
               "  --json-fd N     the same into the open file descriptor N (an autograder that runs the grader\n"
               "                  as a user who may not write the results)\n"
               "  --details FILE  also write every failed test's whole message and output\n"
               "  --answers FILE  the answers file (default %s)\n"
               "  --exam          exam mode (also RL_GRADE_EXAM=1): an answer is only right or wrong, a failed\n"
               "                  answers test does not say which answer, and the seed is printed at the end only\n"
               "  --list          list the tests and their points\n"
               "  --hints FILE    the hints shown to the learner (labs/NN/hints-used.txt; none while it does not\n"
               "                  exist yet): listed per step\n"
               "  --hint-penalty P  P points off a step per hint shown (at most the step's points; default 0)\n"
               "  --learner ID    whose numbers the hand derivations use (default: the answers file's learner line)\n"
               "  --questions     print this learner's numbers for the hand derivations, grade nothing\n"
               "  --zero-json FILE REASON   write results with every test at 0 for REASON, grade nothing\n"
               "  -v              also show what passing tests printed, and nothing shortened\n"
               "Environment: RL_GRADE_TIME_SCALE=F multiplies every time limit (e.g. 3 on a slow machine);\n"
               "RL_GRADE_SEED=N replays the randomized cases of a run that printed seed N.\n",
            lab->id, lab->title, lab->handout, lab->nsteps ? lab->steps[0].id : "1", lab->default_answers);
}

/* The learner id: --learner's (the autograder: the submission's owner), else the answers
 * file's `learner = ID`; a mismatch is reported and --learner's is used. 0, or -1 (printed). */
static int set_learner(const char *arg)
{
    char v[sizeof learner_id + 64];
    int r = rl_grade_answer(answers_path, "learner", v, sizeof v);
    if (r == -2) {
        fprintf(stderr, "grade: %s names its learner twice; keep one 'learner = ID' line\n", answers_path);
        return -1;
    }
    const char *id = arg ? arg : r == 1 ? v : "";
    /* as make learner takes it: a letter or digit, then letters, digits and . _ % + @ - */
    size_t len = strlen(id), ok = len && isalnum((unsigned char)id[0]) ? strspn(id, "abcdefghijklmnopqrstuvwxyz"
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+@-") : 0;
    if ((len || arg) && (ok != len || len == 0 || len > 100)) {
        fprintf(stderr, "grade: the learner id '");
        for (size_t k = 0; k < len && k < 64; k++) /* (shown safely: it may hold control characters) */
            fputc(isprint((unsigned char)id[k]) ? id[k] : '?', stderr);
        fprintf(stderr, "'%s is not one: a course email or student id of 1 to 100 characters, a letter or digit "
                "first, then letters, digits and . _ %% + @ - (make learner ID=ada@uni.edu)\n",
                arg ? " (--learner)" : "");
        return -1;
    }
    if (arg && r == 1 && strcmp(v, arg))
        printf("Note: %s says learner = %s, but this submission is %s's: the hand derivations are graded with %s's "
               "numbers (make learner ID=%s, then make questions, shows them)\n", answers_path, v, arg, arg, arg);
    memcpy(learner_id, id, strlen(id) + 1); /* shorter than learner_id: checked above */
    return 0;
}

/* 1 when path can be written (a file it had to create for the check is removed); else says
 * why, naming the option, and returns 0. */
static int writable(const char *path, const char *option)
{
    int e = rl_file_writable(path);
    if (e)
        fprintf(stderr, "grade: %s '%s': %s (a file in a folder that exists and that you may write to)\n", option,
                path, strerror(e));
    return !e;
}

static const rl_grade_step *find_step(const rl_grade_lab *lab, const char *id)
{
    for (int i = 0; i < lab->nsteps; i++)
        if (strcmp(lab->steps[i].id, id) == 0)
            return &lab->steps[i];
    return NULL;
}

/* The points a step loses for the hints shown (--hint-penalty), at most the points it earned. */
static int step_penalty(int used, int got)
{
    int off = used * hint_penalty;
    return off < got ? off : got;
}

/* Writes the Gradescope results (to path, or to the open descriptor fd when path is NULL). In
 * exam mode the answers tests are shown after the due date only. */
static int write_json(const char *path, int fd, const rl_grade_lab *lab, const rl_grade_test *const *sel,
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
        json_object_set_new(o, "visibility",
                            json_string(exam_mode && (t->flags & RL_GRADE_NO_CHILD) ? "after_due_date" : "visible"));
        json_array_append_new(tests, o);
        free(out);
    }
    char hints[256] = "";
    for (int s = 0; s < lab->nsteps; s++) {
        const char *id = lab->steps[s].id;
        int used = rl_hints_used_get(&hints_used, id), got = 0, any = 0;
        for (int i = 0; i < nsel; i++)
            if (!strcmp(sel[i]->step, id)) {
                any = 1;
                got += res[i].passed ? sel[i]->points : 0;
            }
        if (!any || !used)
            continue;
        snprintf(hints + strlen(hints), sizeof hints - strlen(hints), "%s%s=%d", hints[0] ? " " : "", id, used);
        int off = step_penalty(used, got);
        if (off) {
            char name[128];
            snprintf(name, sizeof name, "%s: %d hint%s shown (%d points off each)", id, used, used == 1 ? "" : "s",
                     hint_penalty);
            json_array_append_new(tests, json_pack("{s:s,s:s,s:i,s:i,s:s}", "name", name, "number", id, "score",
                                                   -off, "max_score", 0, "visibility", "visible"));
        }
    }
    char summary[160];
    snprintf(summary, sizeof summary, "Lab %s: %d/%d points (seed %llu)", lab->id, score, max,
             (unsigned long long)run_seed);
    char seed[24];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)run_seed);
    json_object_set_new(root, "extra_data", json_pack("{s:s,s:s}", "seed", seed, /* a string: seeds are 64-bit */
                                                      "hints_shown", hints));
    json_object_set_new(root, "score", json_integer(score));
    json_object_set_new(root, "max_score", json_integer(max));
    json_object_set_new(root, "execution_time", json_real(secs));
    json_object_set_new(root, "output", json_string(summary));
    json_object_set_new(root, "tests", tests);
    int rc;
    struct stat st;
    char tmp[4200];
    if (!path)
        rc = json_dumpfd(root, fd, JSON_INDENT(2));
    else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* (a device or a pipe: as it is) */
        rc = json_dump_file(root, path, JSON_INDENT(2));
    else { /* a file: written whole beside path and renamed over it, never left truncated */
        FILE *f = rl_file_begin(path, tmp, sizeof tmp);
        rc = !f ? -1 : json_dumpf(root, f, JSON_INDENT(2)) ? (fclose(f), unlink(tmp), -1) : rl_file_commit(f, tmp, path);
    }
    json_decref(root);
    return rc;
}

/* Writes results with every selected test at 0 and reason as each one's output (--zero-json:
 * a lab file that could not be graded). */
static int write_zero_json(const char *path, const rl_grade_lab *lab, const rl_grade_test *const *sel, int nsel,
                           const char *reason)
{
    outcome *res = calloc((size_t)nsel + 1, sizeof *res);
    int max = 0;
    for (int i = 0; i < nsel; i++) {
        res[i].reason = (char *)reason;
        res[i].output = "";
        max += sel[i]->points;
    }
    int rc = write_json(path, -1, lab, sel, res, nsel, 0, max, 0);
    free(res);
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

static void print_interview(const rl_grade_lab *lab, FILE *out);

int rl_grade_main(const rl_grade_lab *lab, int argc, char **argv)
{
    rl_program_start();
    learner_text(PROT_NONE); /* this process never runs code under test: only its children map it */
    const char *steps[32];
    int nsteps = 0, list = 0, verbose = 0, have_seed = 0, answers_given = 0;
    const char *json_path = NULL, *details_path = NULL, *zero_path = NULL, *zero_reason = NULL;
    int json_fd = -1;
    const char *learner_arg = NULL;
    answers_path = lab_answers_default = lab->default_answers;
    grading_lab = lab;
    const char *env_exam = getenv("RL_GRADE_EXAM");
    exam_mode = env_exam && *env_exam && strcmp(env_exam, "0");
    const char *env_scale = getenv("RL_GRADE_TIME_SCALE");
    double scale_v;
    char serr[256];
    if (env_scale && *env_scale && rl_optnum("RL_GRADE_TIME_SCALE", env_scale, 0.1, 100, 0, &scale_v, serr, sizeof serr)) {
        fprintf(stderr, "grade: %s (it multiplies every time limit: e.g. 3 on a slow machine)\n", serr);
        return 2;
    }
    const char *env_seed = getenv("RL_GRADE_SEED");
    int seed_arg = 0; /* --seed wins over RL_GRADE_SEED, which is then not read */
    for (int i = 1; i + 1 < argc; i++)
        seed_arg |= !strcmp(argv[i], "--seed");
    if (env_seed && *env_seed && !seed_arg) {
        if (parse_seed(env_seed, &run_seed)) {
            fprintf(stderr, "grade: RL_GRADE_SEED='%s' is not a seed; use the number a grading run printed "
                            "(decimal digits, e.g. RL_GRADE_SEED=12345)\n", env_seed);
            return 2;
        }
        have_seed = 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (((!strcmp(a, "--step") || !strcmp(a, "--json") || !strcmp(a, "--answers") || !strcmp(a, "--seed") ||
              !strcmp(a, "--details") || !strcmp(a, "--json-fd") || !strcmp(a, "--hints") ||
              !strcmp(a, "--hint-penalty") || !strcmp(a, "--learner")) && i + 1 >= argc) ||
            (!strcmp(a, "--zero-json") && i + 2 >= argc)) {
            fprintf(stderr, "grade: %s needs %s\n", a, strcmp(a, "--zero-json") ? "a value" : "FILE and REASON");
            usage(lab, stderr);
            return 2;
        }
        if (!strcmp(a, "--step")) {
            const char *v = argv[++i];
            if (!*v) {
                fprintf(stderr, "grade: --step '': name a step, e.g. --step %s (or leave --step out: every step)\n",
                        lab->steps[0].id);
                return 2;
            }
            if (!strcmp(v, "all"))
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
            if (!writable(details_path, "--details"))
                return 2;
        } else if (!strcmp(a, "--json")) {
            json_path = argv[++i];
        } else if (!strcmp(a, "--json-fd")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 1023 || fcntl((int)v, F_GETFD) < 0) {
                fprintf(stderr, "grade: --json-fd '%s' is not an open file descriptor\n", argv[i]);
                return 2;
            }
            json_fd = (int)v;
        } else if (!strcmp(a, "--zero-json")) {
            zero_path = argv[++i];
            zero_reason = argv[++i];
            if (!writable(zero_path, "--zero-json"))
                return 2;
            if (!zero_reason[strspn(zero_reason, " \t\n")]) {
                fprintf(stderr, "grade: --zero-json %s '%s': give the reason the learner will read, e.g. \"the build "
                        "failed\"\n", zero_path, zero_reason);
                return 2;
            }
        } else if (!strcmp(a, "--answers")) {
            answers_path = argv[++i];
            answers_given = 1;
        } else if (!strcmp(a, "--hints")) {
            char err[512];
            if (rl_hints_used_load(argv[++i], &hints_used, err, sizeof err)) {
                fprintf(stderr, "grade: %s\n", err);
                return 2;
            }
        } else if (!strcmp(a, "--hint-penalty")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 1000) {
                fprintf(stderr, "grade: --hint-penalty '%s' is not a whole number of points (0 to 1000)\n", argv[i]);
                return 2;
            }
            hint_penalty = (int)v;
        } else if (!strcmp(a, "--learner")) {
            learner_arg = argv[++i];
        } else if (!strcmp(a, "--questions")) {
            questions_mode = 1;
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

    struct stat ast; /* the answers file, given or the lab's: a regular file, or none (a FIFO would block) */
    int bad = stat(answers_path, &ast) ? (errno == ENOENT ? 0 : errno) : S_ISREG(ast.st_mode) ? 0 : -1;
    if (bad) {
        fprintf(stderr, "grade: %s '%s': %s (give the lab's answers.txt)\n", answers_given ? "--answers" : "the answers file",
                answers_path, bad > 0 ? strerror(bad) : "not a regular file");
        return 2;
    }
    if (answers_given && access(answers_path, F_OK)) /* (a submission without one is graded, as unanswered) */
        fprintf(stderr, "grade: note: --answers '%s' does not exist: the answers tests are graded as unanswered\n",
                answers_path);
    if (set_learner(learner_arg))
        return 2;
    if (questions_mode) {
        if (!learner_id[0]) {
            fprintf(stderr, "grade: %s has no learner id: run make learner ID=<your course email or student id> "
                            "once (it writes 'learner = ID' into every lab's answers.txt)\n", answers_path);
            return 2;
        }
        printf("Lab %s — your numbers for the hand derivations (learner %s):\n", lab->id, learner_id);
        if (lab->questions)
            lab->questions(stdout);
        else
            printf("  (this lab's derivations use the handout's numbers)\n");
        print_interview(lab, stdout);
        return 0;
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
    if (zero_path) {
        int rc = write_zero_json(zero_path, lab, sel, nsel, zero_reason);
        if (rc)
            fprintf(stderr, "grade: could not write %s: %s\n", zero_path, strerror(errno));
        free(sel);
        return rc ? 2 : 0;
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
    if (getrandom(&run_nonce, sizeof run_nonce, 0) != (ssize_t)sizeof run_nonce)
        run_nonce = fresh_seed() * 0x9E3779B97F4A7C15ull ^ (uint64_t)mono_now();
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch_base, sizeof scratch_base, "%s/rl-grade-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    struct rlimit as; /* each test's record reserves REC_CAP of address space (not memory) */
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur < REC_CAP + ((rlim_t)512 << 20)) {
        fprintf(stderr, "grade: the address-space limit (ulimit -v %llu KiB) is too small to grade: each test's "
                "record reserves %llu MiB of address space (not memory) and the tests need about 512 MiB more; "
                "grade with ulimit -v %llu or more (or unlimited)\n", (unsigned long long)(as.rlim_cur >> 10),
                (unsigned long long)(REC_CAP >> 20), (unsigned long long)((REC_CAP + ((uint64_t)512 << 20)) >> 10));
        free(sel);
        return 2;
    }
    if (!mkdtemp(scratch_base)) {
        fprintf(stderr, "grade: cannot make a scratch folder %s: %s\n", scratch_base, strerror(errno));
        free(sel);
        return 2;
    }
    static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };
    for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++)
        signal(stops[k], remove_scratch_on_signal);
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
            run_one(t, i, scale, o);
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
        int used = rl_hints_used_get(&hints_used, st->id), off = step_penalty(used, got);
        got -= off;
        if (any && off)
            printf("-- %s %s: %d/%d (%d hint%s shown: %d points off)\n", st->id, st->title, got, of, used,
                   used == 1 ? "" : "s", off);
        else if (any && used)
            printf("-- %s %s: %d/%d (%d hint%s shown)\n", st->id, st->title, got, of, used, used == 1 ? "" : "s");
        else if (any)
            printf("-- %s %s: %d/%d\n", st->id, st->title, got, of);
        score += got;
        max += of;
    }
    double secs = mono_now() - t_start;
    int rc = 0;
    for (int i = 0; i < nsel; i++)
        rc |= !res[i].passed;
    if (json_path || json_fd >= 0) {
        if (write_json(json_path, json_fd, lab, sel, res, nsel, score, max, secs)) {
            fprintf(stderr, "grade: could not write the results: %s\n", strerror(errno));
            rc = 1;
        } else if (json_path) {
            printf("Results written to %s (Gradescope format)\n", json_path);
        }
    }
    if (details_path) { /* (also when all passed: no stale details of an earlier grade are left) */
        if (write_details(details_path, lab, sel, res, nsel)) {
            fprintf(stderr, "grade: could not write %s: %s\n", details_path, strerror(errno));
            rc = 1;
        }
    }
    nftw(scratch_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
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
    if (rl_grade_parse_number(v, &got)) {
        snprintf(msg, size, "%s = '%s' is not one number (write e.g. 6e6, 0.25 or 1,234, optionally followed by the "
                 "unit word the question asks for, and nothing else)", key, v);
        return 0;
    }
    double err = fabs(got - expected), tol = rel_tol * fabs(expected);
    if (err <= tol || (expected == 0 && err <= rel_tol)) {
        return 1;
    }
    /* neither how far nor which way: a learner could otherwise home in on the number by trying */
    double decade = expected != 0 && got != 0 ? log10(fabs(got / expected)) : 0;
    if (exam_mode)
        exam_wrong(msg, size);
    else if (fabs(decade) > 0.5 && fabs(decade - round(decade)) <= log10(1 + rel_tol))
        snprintf(msg, size, "%s = %g has the right digits at the wrong power of ten: check the unit the question "
                 "asks for", key, got);
    else
        snprintf(msg, size, "%s = %g is not within %g%% of the expected value; check the formula, the numbers it "
                 "uses and the unit the question asks for", key, got, 100.0 * rel_tol);
    return 0;
}

/* ---------------------------------------------------------------- interview questions
 * The handout lists each question's four options without letters ("- " items under "**I1. ...**");
 * each learner sees them, from make questions, in an order of their own (from the learner id),
 * and answers with those letters. The keys (grader/keys/LAB.txt, kept out of the learners'
 * release) give the right option by its place in the handout, a to d, and why each option is
 * right or wrong ("KEY.a text"); they are read here, in a judge, never where lab code runs. */
#define IQ_MAX 8
#define IQ_LEN 700

typedef struct {
    int n;
    char stem[IQ_MAX][IQ_LEN];
    char opt[IQ_MAX][4][IQ_LEN];
} interview_text;

/* The lab folder of the lab's answers file (labs/28_ddp/answers.txt -> labs/28_ddp), in out. */
static void lab_folder(char *out, size_t size)
{
    const char *ans = lab_answers_default ? lab_answers_default : "";
    const char *slash = strrchr(ans, '/');
    snprintf(out, size, "%.*s", slash ? (int)(slash - ans) : 1, slash ? ans : ".");
}

/* Appends text to a field, one space between lines. */
static void iq_append(char *field, const char *text, int len)
{
    size_t at = strlen(field);
    snprintf(field + at, IQ_LEN - at, "%s%.*s", at ? " " : "", len, text);
}

/* Reads the interview questions of the lab's handout; 0, or -1 with msg saying why. */
static int interview_read(interview_text *q, char *msg, size_t size)
{
    char dir[512], path[600];
    lab_folder(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/README.md", dir);
    memset(q, 0, sizeof *q);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, size, "cannot read the handout %s, which holds the interview questions", path);
        return -1;
    }
    char line[1024];
    int in = 0, nopt = 0, open = 0; /* in the section; options of the current question; an option open */
    while (fgets(line, sizeof line, f)) {
        int len = (int)strcspn(line, "\r\n");
        if (!strncmp(line, "## ", 3)) {
            in = !strncmp(line, "## Interview questions", 22);
            continue;
        }
        if (!in)
            continue;
        if (!strncmp(line, "**I", 3) && isdigit((unsigned char)line[3])) {
            if (q->n == IQ_MAX)
                break;
            q->n++;
            nopt = 0, open = 0;
            const char *t = line + 3 + strspn(line + 3, "0123456789");
            t += strspn(t, ". ");
            int tl = (int)(line + len - t);
            if (tl >= 2 && !strncmp(t + tl - 2, "**", 2))
                tl -= 2;
            iq_append(q->stem[q->n - 1], t, tl);
        } else if (q->n && !strncmp(line, "- ", 2)) {
            open = nopt < 4;
            if (open)
                iq_append(q->opt[q->n - 1][nopt], line + 2, len - 2);
            nopt++;
        } else if (len == 0) {
            open = 0;
        } else if (open) {
            iq_append(q->opt[q->n - 1][nopt - 1], line + strspn(line, " "), len - (int)strspn(line, " "));
        }
        if (q->n && nopt > 4) {
            snprintf(msg, size, "%s: interview question I%d has more than four options", path, q->n);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    for (int i = 0; i < q->n; i++)
        if (!q->opt[i][3][0]) {
            snprintf(msg, size, "%s: interview question I%d has fewer than four options ('- ' items)", path, i + 1);
            return -1;
        }
    return 0;
}

/* The order of a question's options for this learner: perm[k] is the handout place (0..3) of
 * the option the learner sees as letter 'a' + k. */
static void interview_perm(const char *key, int perm[4])
{
    char question[160];
    snprintf(question, sizeof question, "interview/%s", key);
    rl_rng g = rl_rng_make(learner_hash(question), 0x6971);
    rl_grade_shuffle(&g, perm, 4);
}

/* The rest of the line of the keys file that starts with word (trimmed), in out: 1, 0 when no
 * line does, -1 when there is no keys file. */
static int keys_line(const char *word, char *out, size_t size)
{
    char dir[512], path[600], line[1024];
    lab_folder(dir, sizeof dir);
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    snprintf(path, sizeof path, "grader/keys/%s.txt", base);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = 0;
    size_t wl = strlen(word);
    while (!found && fgets(line, sizeof line, f))
        if (line[0] != '#' && !strncmp(line, word, wl) && (line[wl] == ' ' || line[wl] == '\t')) {
            const char *t = line + wl + strspn(line + wl, " \t");
            snprintf(out, size, "%.*s", (int)strcspn(t, "\r\n"), t);
            found = 1;
        }
    fclose(f);
    return found;
}

/* Prints text folded at width columns: first after lead, then each line after indent. */
static void print_folded(FILE *out, const char *lead, const char *indent, const char *text, int width)
{
    fputs(lead, out);
    int col = (int)strlen(lead);
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        int w = (int)strcspn(p, " ");
        if (!w)
            break;
        if (col > (int)strlen(indent) && col + 1 + w > width) {
            fprintf(out, "\n%s", indent);
            col = (int)strlen(indent);
        } else if (col > (int)strlen(lead) || p > text + strspn(text, " ")) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", w, p);
        col += w;
        p += w;
    }
    fputc('\n', out);
}

/* make questions: the interview questions with this learner's letters. */
static void print_interview(const rl_grade_lab *lab, FILE *out)
{
    if (!lab->interview)
        return;
    interview_text q;
    char msg[512];
    if (interview_read(&q, msg, sizeof msg)) {
        fprintf(out, "  (%s)\n", msg);
        return;
    }
    fprintf(out, "\n");
    print_folded(out, "", "", "Interview questions: answer each with the letter printed here; the options are in an "
                 "order of your own, so another learner's letters are not yours.", 100);
    for (int i = 0; i < q.n && lab->interview[i]; i++) {
        int perm[4];
        char lead[256];
        interview_perm(lab->interview[i], perm);
        snprintf(lead, sizeof lead, "  I%d (%s): ", i + 1, lab->interview[i]);
        print_folded(out, lead, "      ", q.stem[i], 100);
        for (int k = 0; k < 4; k++) {
            snprintf(lead, sizeof lead, "    (%c) ", 'a' + k);
            print_folded(out, lead, "        ", q.opt[i][perm[k]], 100);
        }
    }
}

/* One interview answer: 1 right, 0 not (msg says why), -1 when the keys are not here (msg
 * says so); *given is the learner's letter (0..3) or -1. */
static int check_choice(const char *path, const char *key, const int perm[4], int *given, char *msg, size_t size)
{
    char v[256], k[16];
    *given = -1;
    int r = rl_grade_answer(path, key, v, sizeof v);
    if (r != 1) {
        answer_missing(r, path, key, msg, size);
        return 0;
    }
    int letter = rl_grade_parse_choice(v);
    if (letter < 0) {
        snprintf(msg, size, "%s = '%s': answer with one letter (a, b, c or d) and nothing else", key, v);
        return 0;
    }
    *given = letter;
    int found = keys_line(key, k, sizeof k);
    if (found <= 0 || strlen(k) != 1 || k[0] < 'a' || k[0] > 'd') {
        snprintf(msg, size, "%s: %s", key, found < 0 ? "the interview questions are graded by the course's "
                 "autograder: their keys (grader/keys/) are not in the learners' release"
                 : "the key file grader/keys/ has no key for this question");
        return found < 0 ? -1 : 0;
    }
    if (perm[letter] == k[0] - 'a')
        return 1;
    snprintf(msg, size, "%s = %c is not the best answer", key, 'a' + letter);
    return 0;
}

int rl_grade_check_interview(const char *path, char *msg, size_t size)
{
    const char *const *keys = grading_lab ? grading_lab->interview : NULL;
    interview_text q;
    int nkeys = 0;
    while (keys && keys[nkeys])
        nkeys++;
    if (interview_read(&q, msg, size))
        return 0;
    if (q.n != nkeys || nkeys > IQ_MAX) {
        snprintf(msg, size, "the handout has %d interview questions and the grader %d: they must match", q.n, nkeys);
        return 0;
    }
    int all = 1, wrong = 0, no_keys = 0, perm[IQ_MAX][4], given[IQ_MAX], r[IQ_MAX];
    msg[0] = 0;
    for (int i = 0; i < nkeys; i++) {
        char one[512];
        interview_perm(keys[i], perm[i]);
        r[i] = check_choice(path, keys[i], perm[i], &given[i], one, sizeof one);
        all &= r[i] == 1;
        if (r[i] < 0 && no_keys++) /* no keys here: said once */
            continue;
        if (r[i] < 0)
            snprintf(one, sizeof one, "the interview questions are graded by the course's autograder: their keys "
                     "(grader/keys/) are not in the learners' release, so none is graded here");
        if (r[i] != 1 && (!exam_mode || given[i] < 0 || r[i] < 0)) { /* exam mode: not which answer is wrong */
            size_t at = strlen(msg);
            snprintf(msg + at, size - at, "%s%s", at ? "; " : "", one);
        }
        wrong += r[i] == 0 && given[i] >= 0;
    }
    /* why each option is right or wrong, in the learner's letters (the judge's output): the
     * questions answered wrong first */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nkeys; i++) {
            if (r[i] < 0 || given[i] < 0 || r[i] != pass)
                continue;
            printf("I%d (%s = %c): %s\n", i + 1, keys[i], 'a' + given[i], r[i] ? "right" : "not the best answer");
            for (int k = 0; k < 4; k++) {
                char word[80], why[600], lead[16];
                snprintf(word, sizeof word, "%s.%c", keys[i], 'a' + perm[i][k]);
                if (keys_line(word, why, sizeof why) != 1)
                    continue;
                snprintf(lead, sizeof lead, "  (%c) ", 'a' + k);
                print_folded(stdout, lead, "      ", why, 100);
            }
        }
    if (exam_mode && wrong) {
        size_t at = strlen(msg);
        snprintf(msg + at, size - at, "%s", at ? "; " : "");
        exam_wrong(msg + strlen(msg), size - strlen(msg));
    }
    return all;
}
