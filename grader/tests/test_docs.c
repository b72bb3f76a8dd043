/* test_docs.c — the handouts and READMEs say what the code does: every command they quote runs
 * (with the reference solutions, as a learner who finished would run it), the figures they
 * quote come out of the commands that make them, and no expected answer of the hand
 * derivations is printed in a handout or by a command it quotes. */
#include <check.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

static const char *const doc_files[] = { "labs/28_ddp/README.md", "labs/29_zero_fsdp/README.md",
                                         "labs/30_tp_pp_sp_cp/README.md", "labs/31_3d_moe_debug/README.md",
                                         "README.md", "docs/release/README.md", "docs/launch.md" };
#define NDOCS (int)(sizeof doc_files / sizeof doc_files[0])

/* Quoted text that is not a command to run, and why (the explicit skip list). */
static const struct {
    const char *has, *why;
} skips[] = {
    { "[", "a template: its [optional] parts are not a command" },
    { "<", "a template: its <placeholders> are not a command" },
    { "...", "a template: its ... is not a command" },
    { "|", "a template: a | lists alternatives" },
    { "NN", "a template: LAB=NN stands for a lab" },
    { "COMMAND", "a template: COMMAND stands for a tool" },
    { "FILE", "a template: FILE stands for a trace" },
    { "--tui", "the live terminal UI needs a terminal (the TUI's own tests drive it)" },
    { "--backend cuda", "needs a GPU (docs/gpu-runs.md records the GPU runs)" },
    { "ringlab needs ", "a message the build prints, quoted" },
    { "ringlab watchdog:", "a message a run prints, quoted" },
};

typedef struct {
    char *quoted; /* as the document writes it, without a trailing # comment */
    char *shell;  /* the command line that runs it */
    char *out;    /* its output (stdout and stderr) once run */
    int rc;
} doc_cmd;

typedef struct {
    int n;
    doc_cmd c[128];
} doc_cmds;

/* The lab folder of LAB=28 (labs/28_*), in out; 0 or -1. */
static int lab_dir(const char *num, char *out, size_t size)
{
    static const char *const dirs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
    for (int i = 0; i < 4; i++)
        if (!strncmp(dirs[i], num, 2) && strlen(num) == 2) {
            snprintf(out, size, "%s", dirs[i]);
            return 0;
        }
    return -1;
}

/* The value of NAME= in a make command line (quoted or not), in out; 1 when present. */
static int make_var(const char *cmd, const char *name, char *out, size_t size)
{
    char key[32];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(cmd, key);
    if (!p)
        return 0;
    p += strlen(key);
    size_t n = *p == '"' ? strcspn(++p, "\"") : strcspn(p, " ");
    snprintf(out, size, "%.*s", (int)n, p);
    return 1;
}

/* The shell command that runs a quoted one (NULL when it is not one this test knows how to
 * run): make run and make questions with the reference solution, the tools from build/. */
static char *shell_of(const char *q, const char *root, const char *tmp)
{
    char lab[32] = "", dir[64], args[512] = "", ranks[16] = "", cmd[2048];
    if (!strncmp(q, "make run ", 9) || !strncmp(q, "make questions ", 15)) {
        if (!make_var(q, "LAB", lab, sizeof lab) || lab_dir(lab, dir, sizeof dir))
            return NULL;
        if (q[5] == 'q')
            snprintf(cmd, sizeof cmd, "cd %s && %s/build/solutions/%s/grade --questions --answers solutions/%s/answers.txt",
                     root, root, dir, dir);
        else {
            make_var(q, "ARGS", args, sizeof args);
            make_var(q, "RANKS", ranks, sizeof ranks);
            snprintf(cmd, sizeof cmd, "cd %s && %s/build/solutions/%s/run%s%s %s", tmp, root, dir,
                     ranks[0] ? " --ranks " : "", ranks, args);
        }
    } else {
        const char *tool = !strncmp(q, "build/ringlab ", 14) ? q + 14 : !strncmp(q, "ringlab ", 8) ? q + 8 : NULL;
        if (!tool)
            return NULL;
        snprintf(cmd, sizeof cmd, "cd %s && %s/build/ringlab %s", tmp, root, tool);
    }
    return strdup(cmd);
}

/* Adds a quoted command (once). */
static void add_quoted(doc_cmds *d, const char *text, size_t len, const char *root, const char *tmp)
{
    char q[1024];
    snprintf(q, sizeof q, "%.*s", (int)len, text);
    char *hash = strstr(q, "  #"); /* a code block's comment */
    if (hash)
        *hash = 0;
    for (size_t n = strlen(q); n && q[n - 1] == ' '; n--)
        q[n - 1] = 0;
    if (strncmp(q, "make run ", 9) && strncmp(q, "make questions ", 15) && strncmp(q, "ringlab ", 8) &&
        strncmp(q, "build/ringlab ", 14))
        return;
    for (size_t i = 0; i < sizeof skips / sizeof skips[0]; i++)
        if (strstr(q, skips[i].has))
            return;
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->c[i].quoted, q))
            return;
    char *sh = shell_of(q, root, tmp);
    ck_assert_msg(sh, "a quoted command this test cannot run: '%s' (run it, or add a skip with its reason)", q);
    ck_assert_int_lt(d->n, 128);
    d->c[d->n++] = (doc_cmd){ strdup(q), sh, NULL, -1 };
}

/* Every command quoted in the documents: `inline code` and the lines of ``` blocks. */
static void collect(doc_cmds *d, const char *root, const char *tmp)
{
    memset(d, 0, sizeof *d);
    for (int f = 0; f < NDOCS; f++) {
        long len;
        char *t = rl_test_slurp(doc_files[f], &len);
        ck_assert_msg(t, "cannot read %s", doc_files[f]);
        int in_block = 0;
        for (char *line = t; *line;) {
            char *eol = strchr(line, '\n');
            size_t n = eol ? (size_t)(eol - line) : strlen(line);
            if (!strncmp(line, "```", 3))
                in_block = !in_block;
            else if (in_block)
                add_quoted(d, line + strspn(line, " $"), n - strspn(line, " $"), root, tmp);
            else
                for (char *a = line; (a = memchr(a, '`', n - (size_t)(a - line)));) {
                    char *b = memchr(a + 1, '`', n - (size_t)(a + 1 - line));
                    if (!b)
                        break;
                    add_quoted(d, a + 1, (size_t)(b - a - 1), root, tmp);
                    a = b + 1;
                }
            line = eol ? eol + 1 : line + n;
        }
        free(t);
    }
}

static void run_all(doc_cmds *d)
{
    for (int i = 0; i < d->n; i++) {
        char cmd[2300];
        snprintf(cmd, sizeof cmd, "timeout 600 sh -c '%s' 2>&1 </dev/null", d->c[i].shell);
        d->c[i].rc = rl_test_run(cmd, &d->c[i].out);
    }
}

static void free_all(doc_cmds *d)
{
    for (int i = 0; i < d->n; i++) {
        free(d->c[i].quoted);
        free(d->c[i].shell);
        free(d->c[i].out);
    }
}

/* Collapses every run of white space to one space, in place. */
static void squeeze(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++)
        if (!strchr(" \t\n", *r) || (w > s && w[-1] != ' '))
            *w++ = strchr(" \t\n", *r) ? ' ' : *r;
    *w = 0;
}

/* The number in text where pattern's %s stands (pattern: literal text, %s once, %_ for any one
 * word); 1 when found. */
static int find_value(const char *text, const char *pattern, char *value, size_t size)
{
    char re[1024] = "";
    size_t k = 0;
    for (const char *p = pattern; *p && k < sizeof re - 40; p++) {
        if (p[0] == '%' && p[1] == 's')
            k += (size_t)snprintf(re + k, sizeof re - k, "([0-9][0-9.,]*)"), p++;
        else if (p[0] == '%' && p[1] == '_')
            k += (size_t)snprintf(re + k, sizeof re - k, "[^ ]+"), p++;
        else {
            if (strchr(".[]()*+?^$\\{}|", *p))
                re[k++] = '\\';
            re[k++] = *p;
            re[k] = 0;
        }
    }
    regex_t r;
    ck_assert_msg(regcomp(&r, re, REG_EXTENDED) == 0, "bad pattern %s", re);
    regmatch_t m[2];
    int found = regexec(&r, text, 2, m, 0) == 0;
    if (found)
        snprintf(value, size, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), text + m[1].rm_so);
    regfree(&r);
    return found;
}

/* 1 when the printed value, rounded to the quoted one's decimals, is the quoted one. */
static int same_figure(const char *quoted, const char *printed)
{
    const char *dot = strchr(quoted, '.');
    int decimals = dot ? (int)strspn(dot + 1, "0123456789") : 0;
    return fabs(strtod(quoted, NULL) - strtod(printed, NULL)) <= 0.5 * pow(10, -decimals) + 1e-9;
}

/* The figures the documents quote from a run: the phrase around the figure in the document,
 * the command that makes it and the phrase around it in the command's output. */
static const struct {
    const char *doc, *phrase, *command, *printed;
} figures[] = {
    { "labs/28_ddp/README.md", "the reference run shows a step of %s µs", "make run LAB=28", "step time %s us" },
    { "labs/28_ddp/README.md", "and %s% hidden", "make run LAB=28", "overlap: %s% of comm hidden" },
    { "labs/28_ddp/README.md", "overlap falls from %s% to", "make run LAB=28", "overlap: %s% of comm hidden" },
    { "labs/28_ddp/README.md", "falls from %_ to %s% and the step", "make run LAB=28 ARGS=\"--bucket-cap-mb 25\"",
      "overlap: %s% of comm hidden" },
    { "labs/28_ddp/README.md", "and the step from %s µs to", "make run LAB=28", "step time %s us" },
    { "labs/28_ddp/README.md", "and the step from %_ µs to %s µs.", "make run LAB=28 ARGS=\"--bucket-cap-mb 25\"",
      "step time %s us" },
    { "labs/29_zero_fsdp/README.md", "exposed comm falls from about %s µs (ZeRO-1)",
      "make run LAB=29 ARGS=\"--stage zero1\"", "exposed comm %s us" },
    { "labs/29_zero_fsdp/README.md", "to about %s µs (ZeRO-2)", "make run LAB=29 ARGS=\"--stage zero2\"",
      "exposed comm %s us" },
    { "labs/29_zero_fsdp/README.md", "shows exposed comm of about %s µs", "make run LAB=29 ARGS=--no-prefetch",
      "exposed comm %s us" },
    { "labs/29_zero_fsdp/README.md", "and a step of about %s µs; with prefetch", "make run LAB=29 ARGS=--no-prefetch",
      "step time %s us" },
    { "labs/29_zero_fsdp/README.md", "with prefetch about %s µs and", "make run LAB=29", "exposed comm %s us" },
    { "labs/29_zero_fsdp/README.md", "with prefetch about %_ µs and %s µs.", "make run LAB=29", "step time %s us" },
    { "README.md", "the ZeRO paper's example: %s / ", "build/ringlab calc zero --params 7.5B --dp 64",
      "ddp %_ %s " },
    { "README.md", "the ZeRO paper's example: %_ / %s / ", "build/ringlab calc zero --params 7.5B --dp 64",
      "zero1 %_ %s " },
    { "README.md", "the ZeRO paper's example: %_ / %_ / %s / ", "build/ringlab calc zero --params 7.5B --dp 64",
      "zero2 %_ %s " },
    { "README.md", "the ZeRO paper's example: %_ / %_ / %_ / %s GB", "build/ringlab calc zero --params 7.5B --dp 64",
      "zero3 %_ %s " },
    { "README.md", "interleaved 1F1B: %s% of total time", "build/ringlab calc bubble --pp 4 --mb 16 --v 2",
      "bubble = %s% of total time" },
};

static char tmp_dir[64]; /* where the quoted commands run (they may write traces) */

/* The repository's folder in root; a fresh tmp_dir. */
static void docs_setup(char *root, size_t size)
{
    ck_assert_ptr_nonnull(getcwd(root, size));
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/rl_docs_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

/* Frees the commands and removes tmp_dir. */
static void docs_teardown(doc_cmds *d)
{
    free_all(d);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    ck_assert_int_eq(system(cmd), 0);
}
static const char *const lab_names[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };

/* 1 when v occurs in text as a number of its own (not inside a longer one). */
static int has_number(const char *text, const char *v)
{
    size_t n = strlen(v);
    for (const char *at = text; (at = strstr(at, v)); at++)
        if ((at == text || !strchr("0123456789.", at[-1])) && !strchr("0123456789", at[n]) &&
            !(at[n] == '.' && strchr("0123456789", at[n + 1])))
            return 1;
    return 0;
}

/* The significant digits of a number as written ("0.0336" 3, "4094" 4, "6.3e9" 2). */
static int significant_digits(const char *v)
{
    int n = 0, started = 0;
    for (const char *p = v; *p && *p != 'e' && *p != 'E'; p++)
        if (*p >= '0' && *p <= '9') {
            started |= *p != '0';
            n += started;
        }
    return n;
}

/* Appends to bad each numeric answer of the lab's reference answers (its learner's numbers)
 * that a document or a quoted command's output prints, as written or rounded to 3 or 4
 * significant digits. */
static void answers_not_in(const char *lab, const doc_cmds *d, char *bad, size_t size)
{
    char path[128], line[512], key[128], val[64];
    snprintf(path, sizeof path, "solutions/%s/answers.txt", lab);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *docs[NDOCS];
    for (int i = 0; i < NDOCS; i++) {
        long len;
        docs[i] = rl_test_slurp(doc_files[i], &len);
    }
    while (fgets(line, sizeof line, f)) {
        if (line[0] != 'h' || sscanf(line, "%127s = %63s", key, val) != 2 || !strchr("0123456789", val[0]))
            continue;
        double v = strtod(val, NULL);
        char forms[3][64];
        snprintf(forms[0], sizeof forms[0], "%s", val);
        snprintf(forms[1], sizeof forms[1], "%.3g", v);
        snprintf(forms[2], sizeof forms[2], "%.4g", v);
        for (int k = 0; k < 3; k++) {
            int dup = 0;
            for (int j = 0; j < k; j++)
                dup |= !strcmp(forms[j], forms[k]);
            double l2 = log2(v);
            if (dup || significant_digits(forms[k]) < 4 || (v >= 1 && l2 == floor(l2)))
                continue; /* fewer than 4 significant digits, or a power of two: too common to tell */
            for (int i = 0; i < NDOCS; i++)
                if (docs[i] && has_number(docs[i], forms[k]) && strlen(bad) < size - 300)
                    snprintf(bad + strlen(bad), size - strlen(bad), "\n  %s (%s's %s) is in %s", forms[k], lab, key,
                             doc_files[i]);
            for (int i = 0; i < d->n; i++)
                if (d->c[i].out && has_number(d->c[i].out, forms[k]) && strlen(bad) < size - 300)
                    snprintf(bad + strlen(bad), size - strlen(bad), "\n  %s (%s's %s) is printed by `%s`", forms[k],
                             lab, key, d->c[i].quoted);
        }
    }
    fclose(f);
    for (int i = 0; i < NDOCS; i++)
        free(docs[i]);
}

START_TEST(test_quoted_commands_run)
{
    char root[512], leaks[8192] = "";
    docs_setup(root, sizeof root);
    doc_cmds d;
    collect(&d, root, tmp_dir);
    ck_assert_msg(d.n >= 30, "only %d commands quoted in the documents: is the scan broken?", d.n);
    run_all(&d);
    char bad[8192] = "";
    for (int i = 0; i < d.n; i++) {
        /* a bare tool name ("ringlab calc zero", its options in the text) prints its usage */
        int mention = d.c[i].rc == 2 && !strchr(d.c[i].quoted, '-') && strstr(d.c[i].out, "usage:");
        if ((d.c[i].rc != 0 && !mention) && strlen(bad) < sizeof bad - 400)
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  `%s` (exit %d): %.300s", d.c[i].quoted,
                     d.c[i].rc, d.c[i].out);
    }
    /* no expected answer (the reference learner's) in a document or a quoted command's output */
    for (int l = 0; l < 4; l++)
        answers_not_in(lab_names[l], &d, leaks, sizeof leaks);
    docs_teardown(&d);
    ck_assert_msg(!bad[0], "commands the documents quote do not run (with the reference solutions):%s", bad);
    ck_assert_msg(!leaks[0], "expected answers are printed where a learner reads them:%s", leaks);
}
END_TEST

START_TEST(test_quoted_figures_hold)
{
    char root[512], bad[8192] = "";
    docs_setup(root, sizeof root);
    doc_cmds d = { 0 };
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++)
        add_quoted(&d, figures[f].command, strlen(figures[f].command), root, tmp_dir);
    run_all(&d);
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++) {
        long len;
        char *doc = rl_test_slurp(figures[f].doc, &len), quoted[64], printed[64];
        ck_assert_ptr_nonnull(doc);
        squeeze(doc);
        const doc_cmd *c = NULL;
        for (int i = 0; i < d.n; i++)
            if (!strcmp(d.c[i].quoted, figures[f].command))
                c = &d.c[i];
        ck_assert_ptr_nonnull(c);
        char *out = strdup(c->out);
        squeeze(out);
        if (!find_value(doc, figures[f].phrase, quoted, sizeof quoted))
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  %s no longer says '%s'", figures[f].doc,
                     figures[f].phrase);
        else if (c->rc != 0 || !find_value(out, figures[f].printed, printed, sizeof printed))
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  `%s` (exit %d) prints no '%s':\n%.400s",
                     c->quoted, c->rc, figures[f].printed, c->out);
        else if (!same_figure(quoted, printed))
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  %s: '%s' quotes %s; `%s` prints %s",
                     figures[f].doc, figures[f].phrase, quoted, c->quoted, printed);
        free(out);
        free(doc);
    }
    docs_teardown(&d);
    ck_assert_msg(!bad[0], "figures the documents quote are not what the code gives:%s", bad);
}
END_TEST

Suite *docs_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *t = tcase_create("docs");
    tcase_set_timeout(t, 1200);
    if (!rl_test_quick()) { /* the documents, not the runtime: the normal build only */
        tcase_add_test(t, test_quoted_commands_run);
        tcase_add_test(t, test_quoted_figures_hold);
    }
    suite_add_tcase(s, t);
    return s;
}
