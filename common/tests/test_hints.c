/* test_hints.c — the hint ladders (common/hints.c, ringlab hint): every lab's hints.md has the
 * four rungs per step, `ringlab hint` shows one rung at a time and records it, and the
 * handouts and skeletons state contracts, not recipes (the recipes are the last rungs); `ringlab
 * progress` records each grade and says when a step's files changed since. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hints.h"
#include "testutil.h"

/* Each lab's own recipe text (besides recipe_bits below): its formulas and call sequences. */
static const char *const recipes28[] = {
    "int *pending;", "int *marked;", "int next_bucket;", "then ddp_reducer_reset", "and 8 more", NULL,
};
static const char *const recipes30[] = {
    "min(p−r−1, m)", "(p−r−1)·2 + (v−1)·p", "(k / (p·v))·p + k mod p", "chunk (k / p) mod v", "v−1 − (k / p) mod v",
    "(p−1)/(m+p−1)", "(p−1)/(v·m+p−1)", "rl_pp_op_peers(s, rank, op, &from, &to)", "from >= 0 ? in : NULL",
    "rl_all_reduce(m->tp", "rl_all_gather(m->tp", "rl_reduce_scatter(m->tp", "copy_block(m->w1",
    "rl_attention_forward(ctx, q, k, v, local_heads", "(b·nh + head)·sq + i", "(b·sq + i)·nh·hd",
    "log(1 + exp(lse_b − lse))", "mx + log(exp(", "(r − step) mod cp", "rank·seq/cp + i", "look-ahead",
    "next op's receive", "send what is still pending", "in ONE", NULL,
};
static const char *const recipes29[] = {
    "K = k > 0 ? k", "optim /= n", "n % group", "e->rank*U->shard", "e->step++", "RL_SUM, 0)", "1.0f / e->n",
    "--U->pending", "e->last_reduced = u", "RL_SUM, RL_ASYNC)", "U->first_unit + U->nunits - 1",
    "zero3_gather(u + 1)", "zero3_gather(u - 1)", "w / group, w % group", "w % group, w / group", "W % group",
    "1.0f / (e->n * R)", "the prefetch goes after it", "after u's", "int pending;",
    "int last_reduced;", "U->pending", NULL,
};
static const char *const recipes31[] = {
    "r % TP", "r / TP % CP", "lay->group[d][r]", "pending = op", "td_p2p(e, e->comms.pp, pending",
    "e->dp_rank * e->shard", "rl_reduce_scatter(dp", "rl_all_gather(dp", "e->loss_sum / m", "- zmax",
    "kept[e] < C", "rl_all_to_all(ep", "rl_scatter_add_rows(ctx, back", "hi[r] < s", "v[n/2 - 1]",
    "(m + pp - 1)", "plan_group_link(hw, tp, pp)", "highest seq there is below", "NOT a rank waiting inside",
    "records that start above", "flush the last send", NULL,
};

/* The labs whose steps are contracts with a hint ladder, their steps and their own recipe text. */
static const struct {
    const char *dir, *file, *header;
    const char *steps[8];
    const char *const *recipes;
} ladders[] = {
    { "labs/28_ddp", "ddp.c", "ddp.h", { "28.1", "28.2", "28.3", "28.4", "28.5" }, recipes28 },
    { "labs/30_tp_pp_sp_cp", "mp.c", "mp.h", { "30.1", "30.2", "30.3", "30.4", "30.5" }, recipes30 },
    { "labs/29_zero_fsdp", "zero.c", "zero.h", { "29.1", "29.2", "29.3", "29.4", "29.5" }, recipes29 },
    { "labs/31_3d_moe_debug", "lab31.c", "lab31.h", { "31.1", "31.2", "31.3", "31.4", "31.5" }, recipes31 },
};
#define NLADDERS ((int)(sizeof ladders / sizeof ladders[0]))

START_TEST(test_every_step_has_four_rungs)
{
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/hints.md", ladders[_i].dir);
    rl_hints h;
    ck_assert_msg(rl_hints_load(path, &h, err, sizeof err) == 0, "%s", err);
    int n = 0;
    for (; ladders[_i].steps[n]; n++) {
        const rl_hint_step *st = rl_hints_find(&h, ladders[_i].steps[n]);
        ck_assert_msg(st, "%s: no hints for step %s", path, ladders[_i].steps[n]);
        ck_assert_msg(st->nrungs == 4, "%s: step %s has %d rungs, not 4 (idea, structure, traps, near-code)", path,
                      st->id, st->nrungs);
        for (int r = 0; r < 4; r++)
            ck_assert_msg(strlen(st->rung_text[r]) > 80, "%s: step %s, rung %d ('%s') says almost nothing", path,
                          st->id, r + 1, st->rung_title[r]);
        ck_assert_msg(!strstr(st->rung_text[0], "```"), "%s: step %s: the first rung (the idea) holds code", path,
                      st->id);
    }
    ck_assert_int_eq(h.nsteps, n);
    rl_hints_free(&h);
}
END_TEST

/* Text a recipe is made of: index formulas, call sequences, the α-β formulas. None may stand in
 * a handout's steps, a skeleton's TODOs or the lab header's contracts (the hint ladder's last
 * rungs hold them). */
static const char *const recipe_bits[] = {
    "mod n", "(r−s", "(r-s", "(r+1", "(r−1", "(r-1", "% n", "r+1−s", "next_bucket++", "pending[",
    "2(n−1)·α", "2(n-1)*alpha", "log2(n)·α", "2·log₂n·α", "rl_group_start(ctx)", "for k = 0", "(k == K",
    "rank·accum_steps + k", "(r·accum_steps", "Instructions.",
};

START_TEST(test_contracts_not_recipes)
{
    char path[256];
    long len;
    const char *files[] = { "README.md", ladders[_i].file, ladders[_i].header };
    for (int f = 0; f < 3; f++) {
        snprintf(path, sizeof path, "%s/%s", ladders[_i].dir, files[f]);
        char *text = rl_test_slurp(path, &len);
        ck_assert_msg(text, "cannot read %s", path);
        /* the handout's steps: from the first "## Step" to the hand derivations */
        char *from = f == 0 ? strstr(text, "## Step") : text, *to = f == 0 ? strstr(text, "## Hand derivations") : NULL;
        ck_assert_msg(from, "%s: no '## Step' section", path);
        if (to)
            *to = 0;
        const size_t ncommon = sizeof recipe_bits / sizeof recipe_bits[0];
        for (size_t k = 0; k < ncommon || ladders[_i].recipes[k - ncommon]; k++) {
            const char *bit = k < ncommon ? recipe_bits[k] : ladders[_i].recipes[k - ncommon];
            const char *hit = strstr(from, bit);
            ck_assert_msg(!hit, "%s: '%s' is a recipe (an index formula or a call sequence) — state the contract; "
                                "recipes belong in the last rungs of hints.md:\n...%.120s", path, bit, hit);
        }
        free(text);
    }
}
END_TEST

/* Runs `ringlab hint ARGS` with the record in used; returns the exit status, output in out. */
static int hint(const char *used, const char *args, char *out, size_t size)
{
    char a[512];
    snprintf(a, sizeof a, "hint labs/28_ddp %s --used %s", args, used);
    return rl_test_run_ringlab(rl_test_build(), "", a, out, size);
}

START_TEST(test_hint_one_rung_at_a_time)
{
    char used[64], out[16384];
    long len;
    snprintf(used, sizeof used, "/tmp/rl_hints_%d.txt", (int)getpid());
    unlink(used);
    ck_assert_int_eq(hint(used, "", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "28.1") && strstr(out, "0 / 4"), "the summary lists the steps, none seen:\n%s", out);
    for (int k = 1; k <= 4; k++) {
        ck_assert_int_eq(hint(used, "28.1", out, sizeof out), 0);
        char want[64];
        snprintf(want, sizeof want, "hint %d of 4 for step 28.1", k);
        ck_assert_msg(strstr(out, want), "call %d: want '%s':\n%s", k, want, out);
        snprintf(want, sizeof want, "hint %d of 4", k + 1);
        ck_assert_msg(!strstr(out, want), "call %d showed the next rung too:\n%s", k, out);
        char *rec = rl_test_slurp(used, &len);
        snprintf(want, sizeof want, "\n28.1 %d\n", k);
        ck_assert_msg(rec && strstr(rec, want), "the record after %d hints:\n%s", k, rec ? rec : "(none)");
        free(rec);
    }
    /* all seen: it shows them all and records nothing more */
    ck_assert_int_eq(hint(used, "28.1", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "every hint of step 28.1") && rl_test_count(out, "-- hint ") == 4, "%s", out);
    /* --all reprints only what was seen, and records nothing */
    ck_assert_int_eq(hint(used, "28.3", out, sizeof out), 0);
    ck_assert_int_eq(hint(used, "28.3 --all", out, sizeof out), 0);
    ck_assert_msg(rl_test_count(out, "-- hint ") == 1 && strstr(out, "hint 1 of 4 for step 28.3"), "%s", out);
    char *rec = rl_test_slurp(used, &len);
    ck_assert_msg(strstr(rec, "\n28.3 1\n") && strstr(rec, "\n28.1 4\n"), "%s", rec);
    free(rec);
    ck_assert_int_eq(hint(used, "", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "4 / 4") && strstr(out, "1 / 4"), "%s", out);
    /* a step the lab does not have; a record that is not one */
    ck_assert_int_eq(hint(used, "28.9", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "no hints for step '28.9'") && strstr(out, "28.5"), "%s", out);
    FILE *f = fopen(used, "w");
    fprintf(f, "28.1 two\n");
    fclose(f);
    ck_assert_int_eq(hint(used, "28.1", out, sizeof out), 2);
    ck_assert_msg(strstr(out, ":1: a line is '<step> <hints shown>'"), "%s", out);
    /* a later line cannot take hints back: a step listed twice counts its larger number */
    f = fopen(used, "w");
    fprintf(f, "28.1 3\n28.2 1\n28.1 0\n");
    fclose(f);
    rl_hints_used u;
    char err[256];
    ck_assert_int_eq(rl_hints_used_load(used, &u, err, sizeof err), 0);
    ck_assert_int_eq(rl_hints_used_get(&u, "28.1"), 3);
    ck_assert_int_eq(rl_hints_used_get(&u, "28.2"), 1);
    /* a hint that cannot be recorded is not shown, and the record stays as it was */
    ck_assert_int_eq(hint("/nonexistent/used.txt", "28.1", out, sizeof out), 1);
    ck_assert_msg(strstr(out, "so it is not shown") && !strstr(out, "-- hint "), "%s", out);
    char a[512];
    snprintf(a, sizeof a, "hint labs/28_ddp 28.2 --used %s", used);
    ck_assert_int_eq(rl_test_run_ringlab(rl_test_build(), "ulimit -f 0;", a, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "File too large (the record is as it was)") && !strstr(out, "-- hint "), "%s", out);
    ck_assert_int_eq(rl_hints_used_load(used, &u, err, sizeof err), 0);
    ck_assert_int_eq(rl_hints_used_get(&u, "28.1"), 3);
    ck_assert_int_eq(rl_hints_used_get(&u, "28.2"), 1);
    unlink(used);
}
END_TEST

START_TEST(test_hints_file_errors)
{
    char path[64], err[256];
    snprintf(path, sizeof path, "/tmp/rl_hintsmd_%d.md", (int)getpid());
    const char *bad[] = { "### a rung before a step\ntext\n", "## 1.1 a step\nno rungs\n", "## \nempty id\n" };
    const char *why[] = { "before any step", "has no rungs", "'## <step id> <title>'" };
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        rl_hints h;
        ck_assert_int_eq(rl_hints_load(path, &h, err, sizeof err), -1);
        ck_assert_msg(strstr(err, why[i]), "case %d: %s", i, err);
        rl_hints_free(&h);
    }
    rl_hints h;
    ck_assert_int_eq(rl_hints_load("/nonexistent/hints.md", &h, err, sizeof err), -1);
    rl_hints_free(&h);
    /* files that never end, or are not files: refused at once, never read forever */
    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/rl_hints_fifo_%d", (int)getpid());
    unlink(fifo);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0); /* (no writer: opening it to read would wait for ever) */
    const char *const odd[] = { "/dev/zero", "/dev/full", "/tmp", fifo };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        rl_hints_used u;
        ck_assert_int_eq(rl_hints_used_load(odd[i], &u, err, sizeof err), -1);
        ck_assert_msg(strstr(err, odd[i]), "%s: %s", odd[i], err);
        ck_assert_int_eq(rl_hints_load(odd[i], &h, err, sizeof err), -1);
        rl_hints_free(&h);
        char out[4096];
        ck_assert_int_eq(hint(odd[i], "28.1", out, sizeof out), 2);
        ck_assert_msg(strstr(out, odd[i]), "hint --used %s:\n%s", odd[i], out);
    }
    unlink(fifo);
    unlink(path);
}
END_TEST

/* Collapses runs of blanks into one space; a line's leading comment star ( * ) or Markdown
 * '>' counts as blank. */
static void squeeze(char *t)
{
    char *w = t;
    int blank = 0;
    for (char *r = t; *r; r++) {
        int b = *r == ' ' || *r == '\n' || *r == '\t' || *r == '\r';
        if (*r == '\n') {
            char *k = r + 1 + strspn(r + 1, " \t");
            if ((*k == '*' && k[1] != '/') || *k == '>')
                r = k;
        }
        if (b) {
            blank = 1;
            continue;
        }
        if (blank && w > t)
            *w++ = ' ';
        blank = 0;
        *w++ = *r;
    }
    *w = 0;
}

/* Checks one quotation a grader's message makes, `FILE ...: "text"` (ref: README or a file
 * name): every piece of text between "..." is in that file of lab dir (or common/). */
static void check_quote(const char *grader, const char *dir, const char *ref, const char *text, char *bad, size_t size)
{
    char path[256];
    if (!strncmp(ref, "README", 6))
        snprintf(path, sizeof path, "%s/README.md", dir);
    else {
        snprintf(path, sizeof path, "%s/%s", dir, ref);
        if (access(path, R_OK))
            snprintf(path, sizeof path, "common/%s", ref);
    }
    long len;
    char *file = rl_test_slurp(path, &len);
    if (!file)
        return; /* not a file of the project (a paper, a library) */
    squeeze(file);
    char *q = strdup(text);
    for (char *piece = q, *next; piece; piece = next) {
        char *dots = strstr(piece, "...");
        next = dots ? dots + 3 : NULL;
        if (dots)
            *dots = 0;
        squeeze(piece);
        while (*piece == ' ')
            piece++;
        size_t n = strlen(piece);
        while (n && piece[n - 1] == ' ')
            piece[--n] = 0;
        if (n >= 6 && !strstr(file, piece) && strlen(bad) + n + 80 < size)
            snprintf(bad + strlen(bad), size - strlen(bad), "\n  %s quotes %s: \"%s\"", grader, path, piece);
    }
    free(q);
    free(file);
}

/* Every quotation of a handout, a skeleton or a header in a grader's messages is in that file:
 * a handout rewritten under the grader would leave it quoting text the learner cannot find. */
START_TEST(test_grader_quotes_hold)
{
    static const struct { const char *grader, *dir; } labs[] = {
        { "grader/grade28.c", "labs/28_ddp" }, { "grader/grade29.c", "labs/29_zero_fsdp" },
        { "grader/grade30.c", "labs/30_tp_pp_sp_cp" }, { "grader/grade31.c", "labs/31_3d_moe_debug" },
    };
    char bad[8192] = "";
    int nquotes = 0;
    for (int l = 0; l < 4; l++) {
        long len;
        char *src = rl_test_slurp(labs[l].grader, &len);
        ck_assert_ptr_nonnull(src);
        /* the source's string literals, adjacent ones joined, escapes undone */
        char *str = malloc((size_t)len + 1);
        size_t n = 0;
        for (char *p = src; *p;) {
            if (*p == '/' && p[1] == '/') {
                p += strcspn(p, "\n");
            } else if (*p == '/' && p[1] == '*') {
                char *e = strstr(p + 2, "*/");
                p = e ? e + 2 : p + strlen(p);
            } else if (*p == '\'') {
                p++;
                while (*p && *p != '\'')
                    p += *p == '\\' && p[1] ? 2 : 1;
                p += *p != 0;
            } else if (*p == '"') {
                for (p++; *p && *p != '"'; p++) {
                    if (*p == '\\' && p[1]) {
                        p++;
                        str[n++] = *p == 'n' ? ' ' : *p;
                    } else
                        str[n++] = *p;
                }
                p += *p != 0;
                char *after = p + strspn(p, " \t\n");
                if (*after == '"') {
                    p = after;
                    continue;
                }
                str[n] = 0;
                /* each `REF ...: "text"` in it */
                for (char *c = str; (c = strstr(c, ": \"")); c += 3) {
                    char *end = strchr(c + 3, '"');
                    if (!end)
                        break;
                    char *ref = c;
                    while (ref > str && ref[-1] != ' ' && ref[-1] != '(')
                        ref--;
                    char name[64];
                    snprintf(name, sizeof name, "%.*s", (int)strcspn(ref, " :,"), ref);
                    char *readme = strstr(str, "README ");
                    int is_readme = readme && readme < c && c - readme < 40 && !memchr(readme, '"', (size_t)(c - readme));
                    size_t nl = strlen(name);
                    int is_file = nl > 2 && (!strcmp(name + nl - 2, ".h") || !strcmp(name + nl - 2, ".c"));
                    if (is_readme || is_file) {
                        *end = 0;
                        check_quote(labs[l].grader, labs[l].dir, is_readme ? "README" : name, c + 3, bad, sizeof bad);
                        nquotes++;
                        *end = '"';
                    }
                }
                n = 0;
            } else {
                p++;
            }
        }
        free(str);
        free(src);
    }
    ck_assert_msg(!bad[0], "a grader quotes text its lab's files do not hold (reword the message or the file):%s", bad);
    ck_assert_int_ge(nquotes, 20);
}
END_TEST

/* The interview questions of a lab's handout: per question the four options' texts (squeezed). */
typedef struct iq {
    int n;                 /* questions */
    char *opt[8][4];
} iq;

static void iq_read(const char *readme, iq *q)
{
    memset(q, 0, sizeof *q);
    long len;
    char *t = rl_test_slurp(readme, &len);
    ck_assert_ptr_nonnull(t);
    char *sec = strstr(t, "## Interview questions");
    ck_assert_msg(sec, "%s: no '## Interview questions'", readme);
    char *end = strstr(sec + 3, "\n## ");
    if (end)
        *end = 0;
    /* "**I1. stem**" lines, each followed by its options as "- " items (continued indented) */
    for (char *at = sec; (at = strstr(at, "\n**I")) && q->n < 8; q->n++) {
        at += 4;
        char *next = strstr(at, "\n**I");
        for (int k = 0; k < 4; k++) {
            char *o = strstr(at, "\n- ");
            ck_assert_msg(o && (!next || o < next), "%s: question I%d has %d options, not four", readme, q->n + 1, k);
            o += 3;
            char *e = o;
            while ((e = strchr(e, '\n')) && e[1] == ' ' && e[2] == ' ')
                e++;
            e = e ? e : o + strlen(o);
            q->opt[q->n][k] = strndup(o, (size_t)(e - o));
            squeeze(q->opt[q->n][k]);
            at = e;
        }
        char *more = strstr(at, "\n- ");
        ck_assert_msg(!more || (next && more > next), "%s: question I%d has more than four options", readme, q->n + 1);
    }
    free(t);
}

/* Interview questions with real distractors: the right option (grader/keys/) is the longest in
 * at most a quarter of a lab's questions, and no option is more than 1.6 times as long as
 * another of its question (similar length, similar specificity); the keys say why each option
 * is right or wrong. */
START_TEST(test_interview_options_balanced)
{
    static const char *const labs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
    char path[128], bad[4096] = "";
    for (int l = 0; l < 4; l++) {
        snprintf(path, sizeof path, "labs/%s/README.md", labs[l]);
        iq q;
        iq_read(path, &q);
        snprintf(path, sizeof path, "grader/keys/%s.txt", labs[l]);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        char line[1024], key[128], letter[4];
        int k = 0, longest_right = 0;
        long klen;
        char *keys = rl_test_slurp(path, &klen);
        while (fgets(line, sizeof line, f) && k < q.n)
            if (line[0] != '#' && sscanf(line, "%127s %3s", key, letter) == 2 && !strchr(key, '.')) {
                int right = letter[0] - 'a', longest = 0;
                size_t mn = (size_t)-1, mx = 0;
                for (int o = 0; o < 4; o++) {
                    size_t n = strlen(q.opt[k][o]);
                    mn = n < mn ? n : mn, mx = n > mx ? n : mx;
                    if (n > strlen(q.opt[k][longest]))
                        longest = o;
                }
                longest_right += longest == right;
                for (int o = 0; o < 4; o++) { /* why each option is right or wrong, shown after the grade */
                    char want[160];
                    snprintf(want, sizeof want, "\n%s.%c %s: ", key, 'a' + o, o == right ? "Right" : "Wrong");
                    if (!strstr(keys, want) && strlen(bad) < sizeof bad - 200)
                        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  %s: no line '%s...'", path,
                                 want + 1);
                }
                if (mx * 10 > mn * 16 && strlen(bad) < sizeof bad - 200)
                    snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  %s I%d: options of %zu to %zu characters",
                             labs[l], k + 1, mn, mx);
                k++;
            }
        fclose(f);
        free(keys);
        ck_assert_int_eq(k, q.n);
        if (longest_right * 4 > q.n && strlen(bad) < sizeof bad - 200)
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad),
                     "\n  %s: the right option is the longest in %d of %d questions", labs[l], longest_right, q.n);
        for (int i = 0; i < q.n; i++)
            for (int o = 0; o < 4; o++)
                free(q.opt[i][o]);
    }
    ck_assert_msg(!bad[0], "interview options give the answer away (the longest is right, or lengths differ), or "
                  "lack their explanations:%s", bad);
}
END_TEST

/* t lower-cased, every ASCII character but letters and digits a space, spaces single, and a
 * space at each end (so " w1 w2 " finds whole words); returns t. */
static char *words_of(char *t)
{
    char *w = t;
    for (const char *r = t; *r; r++)
        if ((unsigned char)*r >= 0x80 || isalnum((unsigned char)*r))
            *w++ = (char)tolower((unsigned char)*r);
        else if (w == t || w[-1] != ' ')
            *w++ = ' ';
    if (w == t || w[-1] != ' ')
        *w++ = ' ';
    *w = 0;
    return t;
}

/* Issue: no interview option restates a sentence of its handout: no run of 6 words of an option
 * is found in the handout outside its interview questions. */
START_TEST(test_interview_options_not_in_handout)
{
    static const char *const labs[] = { "28_ddp", "29_zero_fsdp", "30_tp_pp_sp_cp", "31_3d_moe_debug" };
    char bad[4096] = "";
    int windows = 0;
    for (int l = 0; l < 4; l++) {
        char path[128];
        snprintf(path, sizeof path, "labs/%s/README.md", labs[l]);
        iq q;
        iq_read(path, &q);
        long len;
        char *t = rl_test_slurp(path, &len), *sec = strstr(t, "## Interview questions"), *end = strstr(sec + 3, "\n## ");
        ck_assert_ptr_nonnull(sec);
        memmove(sec, end ? end : "", strlen(end ? end : "") + 1); /* the handout without its questions */
        char *body = malloc(strlen(t) + 3);
        sprintf(body, " %s", t);
        words_of(body);
        for (int i = 0; i < q.n; i++)
            for (int o = 0; o < 4; o++) {
                char *opt = malloc(strlen(q.opt[i][o]) + 3);
                sprintf(opt, " %s", q.opt[i][o]);
                words_of(opt);
                /* every window of 6 words: from each word start, to the end of the 6th word */
                for (char *w = opt; w[1]; w = strchr(w + 1, ' ')) {
                    char *e = w;
                    int k = 0;
                    while (k < 6 && (e = strchr(e + 1, ' ')))
                        k++;
                    if (k < 6)
                        break;
                    char save = e[1];
                    e[1] = 0;
                    windows++;
                    if (strstr(body, w) && strlen(bad) < sizeof bad - 300)
                        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "\n  %s I%d option %d: '%s'", labs[l],
                                 i + 1, o + 1, w);
                    e[1] = save;
                }
                free(opt);
                free(q.opt[i][o]);
            }
        free(body);
        free(t);
    }
    ck_assert_msg(!bad[0], "interview options restate the handout (rephrase the option so it asks the learner to "
                  "reason, not to recognise a sentence):%s", bad);
    ck_assert_int_ge(windows, 200);
}
END_TEST

/* Runs `ringlab progress ARGS` in the folder d; returns the exit status, output in out. */
static int progress(const char *d, const char *args, char *out, size_t size)
{
    char cmd[16384], here[512];
    ck_assert_ptr_nonnull(getcwd(here, sizeof here));
    snprintf(cmd, sizeof cmd, "cd %s && %s/%s/ringlab progress %s 2>&1", d, here, rl_test_build(), args);
    return rl_test_run_cmd(cmd, out, size);
}

START_TEST(test_progress_records_and_goes_stale)
{
    char d[] = "/tmp/rl_progress_XXXXXX", cmd[2048], out[16384];
    ck_assert_ptr_nonnull(mkdtemp(d));
    snprintf(cmd, sizeof cmd, "mkdir -p %s/labs/28_ddp && cp labs/28_ddp/hints.md labs/28_ddp/ddp.c "
             "labs/28_ddp/answers.txt %s/labs/28_ddp/ && printf '28.2 2\n' > %s/labs/28_ddp/hints-used.txt", d, d, d);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/build/results-28_ddp.json", d);
    ck_assert_int_eq(system((snprintf(out, sizeof out, "mkdir -p %s/build", d), out)), 0);
    FILE *f = fopen(cmd, "w");
    fputs("{\"score\": 8, \"max_score\": 11, \"tests\": ["
          "{\"name\": \"28.1 ring: a\", \"number\": \"28.1\", \"score\": 3, \"max_score\": 3, \"output\": \"OK\"},"
          "{\"name\": \"28.1 ring: b\", \"number\": \"28.1\", \"score\": 0, \"max_score\": 2, "
          "\"output\": \"rank 1 holds 7 where 9 is expected\"},"
          "{\"name\": \"28.2 buckets: c\", \"number\": \"28.2\", \"score\": 4, \"max_score\": 4, \"output\": \"OK\"},"
          "{\"name\": \"28.5 scaling: answers: h1\", \"number\": \"28.5\", \"score\": 2, \"max_score\": 2},"
          "{\"name\": \"28.2: 2 hints shown\", \"number\": \"28.2\", \"score\": -1, \"max_score\": 0}]}", f);
    fclose(f);
    /* nothing recorded yet: every step waits, 28.1 first */
    ck_assert_int_eq(progress(d, "", out, sizeof out), 0);
    ck_assert_msg(rl_test_count(out, "not graded yet") == 5 && strstr(out, "Next: step 28.1 (ring all-reduce)"), "%s",
                  out);
    /* a grade recorded with the files as they were before it; a file saved during it is stale */
    char files[1024];
    ck_assert_int_eq(progress(d, "--files-of labs/28_ddp", files, sizeof files), 0);
    ck_assert_msg(strstr(files, "answers.txt:") && strstr(files, ",ddp.c:") && !strstr(files, "hints"), "%s", files);
    files[strcspn(files, "\n")] = 0;
    snprintf(cmd, sizeof cmd, "--record labs/28_ddp build/results-28_ddp.json --files '%s' --dir build/progress", files);
    ck_assert_int_eq(progress(d, cmd, out, sizeof out), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "3/5") && strstr(out, "2 points to find") && strstr(out, "3/4") &&
                      strstr(out, "3/4  2/4   1 point to find") && rl_test_count(out, "not graded yet") == 2 &&
                      strstr(out, "graded so far") && strstr(out, "8/11") &&
                      strstr(out, "Next: step 28.1: 3 of 5 points — make grade LAB=28 STEP=28.1 says what fails; "
                                  "stuck? make hint LAB=28 STEP=28.1 (0 of 4 seen)"),
                  "the record of a grade (28.1 3/5, 28.2 4/4 less a hint's point):\n%s", out);
    ck_assert_int_eq(progress(d, "--dir build/progress --step 28.1", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "✗  0/2  28.1 ring: b") && strstr(out, "rank 1 holds 7 where 9 is expected") &&
                      strstr(out, "✓  3/3") && !strstr(out, "28.2"), "the step in detail:\n%s", out);
    /* answers.txt changed: only the step with answers tests goes stale */
    snprintf(cmd, sizeof cmd, "echo 'h1_total_mb = 3' >> %s/labs/28_ddp/answers.txt", d);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(rl_test_count(out, "stale:") == 1 && strstr(out, "stale: answers.txt changed since its grade") &&
                      strstr(out, "2 points to find"), "after answers.txt changed:\n%s", out);
    snprintf(cmd, sizeof cmd, "echo '/* saved */' >> %s/labs/28_ddp/ddp.c", d);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(rl_test_count(out, "stale: ddp.c changed since its grade") == 2 &&
                      strstr(out, "stale: answers.txt, ddp.c changed since its grade") &&
                      strstr(out, "Next: step 28.1: regrade it (ddp.c changed)"), "after a save:\n%s", out);
    /* a regrade of one step leaves the others' records as they were */
    snprintf(cmd, sizeof cmd, "%s/build/one.json", d);
    f = fopen(cmd, "w");
    fputs("{\"tests\": [{\"name\": \"28.1 ring: a\", \"number\": \"28.1\", \"score\": 5, \"max_score\": 5}]}", f);
    fclose(f);
    ck_assert_int_eq(progress(d, "--record labs/28_ddp build/one.json --dir build/progress", out, sizeof out), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "5/5") && strstr(out, "full marks (") && rl_test_count(out, "stale:") == 2 &&
                      strstr(out, "Next: step 28.2: regrade it"), "after 28.1 regraded:\n%s", out);
    /* a results file that is not one records nothing */
    f = fopen(cmd, "w");
    fputs("Score: 165/165\n", f);
    fclose(f);
    ck_assert_int_eq(progress(d, "--record labs/28_ddp build/one.json --dir build/progress", out, sizeof out), 1);
    ck_assert_msg(strstr(out, "is not a grader's results file"), "%s", out);
    /* --files must be a list --files-of could have printed */
    static const char *bad_files[] = { "ddp.c", "ddp.c:123", "ddp.c:0123456789abcdeg", "a b.c:0123456789abcdef",
                                       "ddp.c:0123456789abcdef,", ",ddp.c:0123456789abcdef", ":0123456789abcdef" };
    for (size_t i = 0; i < sizeof bad_files / sizeof *bad_files; i++) {
        snprintf(cmd, sizeof cmd, "--record labs/28_ddp build/one.json --dir build/progress --files '%s'", bad_files[i]);
        ck_assert_int_eq(progress(d, cmd, out, sizeof out), 2);
        ck_assert_msg(strstr(out, "--files is not a list from --files-of") && strstr(out, "usage:"), "%s: %s",
                      bad_files[i], out);
    }
    /* a folder whose list does not fit: the rest is folded into one item, and a record of it is
     * not stale the moment it is made */
    snprintf(cmd, sizeof cmd, "cd %s/labs/28_ddp && for i in $(seq 100 260); do echo $i > "
             "a_rather_long_helper_file_name_number_$i.h; done && echo x > 'odd name.c'", d);
    ck_assert_int_eq(system(cmd), 0);
    char many[8192];
    ck_assert_int_eq(progress(d, "--files-of labs/28_ddp", many, sizeof many), 0);
    many[strcspn(many, "\n")] = 0;
    ck_assert_msg(strlen(many) < 4096 && strstr(many, ",+others:") && !strstr(many, "odd"), "%zu: %s", strlen(many),
                  many);
    snprintf(cmd, sizeof cmd, "%s/build/one.json", d); /* (a full grade of 28.1) */
    f = fopen(cmd, "w");
    fputs("{\"tests\": [{\"name\": \"28.1 ring: a\", \"number\": \"28.1\", \"score\": 5, \"max_score\": 5}]}", f);
    fclose(f);
    char *rec = malloc(16384);
    snprintf(rec, 16384, "--record labs/28_ddp build/one.json --dir build/progress --files '%s'", many);
    ck_assert_int_eq(progress(d, rec, out, sizeof out), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "5/5") && rl_test_count(out, "stale:") == 2, "%s", out); /* (28.2, 28.5) */
    snprintf(cmd, sizeof cmd, "echo y >> '%s/labs/28_ddp/odd name.c'", d);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(rl_test_count(out, "stale:") == 3 && strstr(out, "+others changed"), "%s", out);
    free(rec);
    /* a record or a hints file that is not one: said, not dropped in silence */
    snprintf(cmd, sizeof cmd, "echo 'garbage here' >> %s/build/progress/28_ddp.txt && echo 'nonsense' > "
             "%s/labs/28_ddp/hints-used.txt", d, d);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "note: build/progress/28_ddp.txt: 1 line that is not a grade's record") &&
                      strstr(out, "hints-used.txt:1: a line is") && strstr(out, "make grade refuses it") &&
                      strstr(out, "5/5"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm %s/build/progress/28_ddp.txt && mkdir %s/build/progress/28_ddp.txt", d, d);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(progress(d, "--dir build/progress", out, sizeof out), 0);
    ck_assert_msg(strstr(out, "28_ddp.txt: not a regular file: no grade is read from it"), "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *hints_suite(void)
{
    Suite *s = suite_create("hints");
    TCase *tc = tcase_create("hints");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_every_step_has_four_rungs, 0, NLADDERS);
    tcase_add_loop_test(tc, test_contracts_not_recipes, 0, NLADDERS);
    tcase_add_test(tc, test_hint_one_rung_at_a_time);
    tcase_add_test(tc, test_hints_file_errors);
    tcase_add_test(tc, test_progress_records_and_goes_stale);
    tcase_add_test(tc, test_grader_quotes_hold);
    tcase_add_test(tc, test_interview_options_balanced);
    tcase_add_test(tc, test_interview_options_not_in_handout);
    suite_add_tcase(s, tc);
    return s;
}
