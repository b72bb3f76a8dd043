/* progress.c — ringlab progress: where a learner stands in every lab — each step's last
 * grade, the hints shown, whether the lab's files changed since that grade, and what to do
 * next. `make grade` records each grade (--record); `make progress` and `make watch` print.
 *
 * The record, one file per lab (DIR/NN_name.txt, DIR = build/progress), one line per step:
 *   STEP SCORE MAX UNIXTIME FILE:HASH,FILE:HASH...
 * where the files are the lab folder's .c/.h files as they were when graded, and answers.txt
 * for a step that has answers tests. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cli.h"
#include "err.h"
#include "hints.h"

#define MAX_STEPS RL_HINTS_MAX_STEPS
#define FILES_LEN 4096 /* a record's list; what does not fit is folded into one item */
#define FILES_FMT "%4095s"
#define OTHERS "+others" /* the item that stands for the files left out of the list */

typedef struct {
    char id[RL_HINTS_ID_LEN];
    int graded, score, max;
    int uses_answers; /* (while recording) a test of the step grades answers.txt */
    long long when;
    char files[FILES_LEN]; /* "ddp.c:0123abcd...,answers.txt:..." */
} step_rec;

typedef struct {
    int n;
    step_rec s[MAX_STEPS];
} lab_rec;

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: ringlab progress [LABDIR...] [--dir DIR] [--step STEP]\n"
               "       ringlab progress --record LABDIR RESULTS.json [--files LIST] [--dir DIR]\n"
               "       ringlab progress --files-of LABDIR\n"
               "  LABDIR        a lab's folder (default: every labs/NN_name)\n"
               "  --dir DIR     where the grades are recorded (default build/progress)\n"
               "  --step STEP   one step in detail: each test of its last grade, and what failed\n"
               "  --record      records a grade (make grade does it): each step in RESULTS.json, with\n"
               "                the lab's files as they are now, or as --files LIST (from --files-of\n"
               "                before the grade: a file saved during the grade is then stale)\n"
               "  --files-of    prints the list of the lab's graded files and their hashes\n");
    return rc;
}

/* The lab folder's name (labs/28_ddp/ -> 28_ddp), in out. */
static void lab_name(const char *dir, char *out, size_t size)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(out, size, "%.*s", (int)(n - b), dir + b);
}

/* 64-bit FNV-1a of a file's bytes (0 when it cannot be read). */
static uint64_t file_hash(const char *path)
{
    FILE *f = rl_file_read_regular(path);
    if (!f)
        return 0;
    uint64_t h = 1469598103934665603ull;
    int c;
    while ((c = getc(f)) != EOF)
        h = (h ^ (uint64_t)c) * 1099511628211ull;
    fclose(f);
    return h;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One file's share of the OTHERS hash: its name and its bytes' hash. */
static uint64_t item_hash(const char *name, uint64_t h)
{
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* Whether a file name can stand in a "name:hash,..." list as it is. */
static int listable(const char *name)
{
    if (!*name || strlen(name) > 255)
        return 0;
    for (const char *p = name; *p; p++)
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') && !strchr("._+-", *p))
            return 0;
    return 1;
}

/* The lab's graded files as "name:hash,..." in name order (its .c and .h files, answers.txt).
 * Files whose names cannot be listed, past 256 files, or past the list's size go into one last
 * item, OTHERS:hash, a hash of their names and hashes. */
static void lab_files(const char *dir, char *out, size_t size)
{
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[256];
    int n = 0, left_out = 0;
    uint64_t others = 0; /* a sum: the same whatever order readdir gives */
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        int src = len > 2 && e->d_name[len - 2] == '.' && (e->d_name[len - 1] == 'c' || e->d_name[len - 1] == 'h');
        if (!src && strcmp(e->d_name, "answers.txt"))
            continue;
        char *copy = n < 256 && listable(e->d_name) ? strdup(e->d_name) : NULL;
        if (copy)
            names[n++] = copy;
        else {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            others += item_hash(e->d_name, file_hash(path));
            left_out = 1;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    size_t room = size - (strlen(OTHERS) + 18); /* (",+others:" and 16 hex digits) */
    for (int i = 0; i < n; i++) {
        char path[1024], item[300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        uint64_t h = file_hash(path);
        size_t len = strlen(out);
        int k = snprintf(item, sizeof item, "%s%s:%016llx", len ? "," : "", names[i], (unsigned long long)h);
        if (len + (size_t)k < room)
            memcpy(out + len, item, (size_t)k + 1);
        else {
            left_out = 1;
            others += item_hash(names[i], h);
        }
        free(names[i]);
    }
    if (left_out) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s" OTHERS ":%016llx", len ? "," : "", (unsigned long long)others);
    }
}

/* Whether s is a list lab_files could have written ("name:hash,..."), else why not, in why. */
static int files_list_ok(const char *s, char *why, size_t size)
{
    if (strlen(s) >= FILES_LEN)
        return snprintf(why, size, "it is %zu bytes long (at most %d)", strlen(s), FILES_LEN - 1), 0;
    int k = 1;
    for (const char *p = s; *p; k++) {
        size_t len = strcspn(p, ","), name = strcspn(p, ":");
        char nm[300] = "";
        if (name < len && name < sizeof nm)
            snprintf(nm, sizeof nm, "%.*s", (int)name, p);
        int hex = name < len && len - name - 1 == 16 && strspn(p + name + 1, "0123456789abcdef") >= 16;
        if (!nm[0] || !hex || (!listable(nm) && strcmp(nm, OTHERS)))
            return snprintf(why, size, "item %d, '%.*s', is not NAME:HASH (a file name and 16 hex digits)", k,
                            (int)(len < 60 ? len : 60), p), 0;
        p += len;
        if (*p == ',' && !*++p)
            return snprintf(why, size, "it ends in a comma"), 0;
    }
    return 1;
}

/* The files of then that differ in now (changed, added or gone), as "ddp.c, answers.txt". */
static void changed_files(const char *then, const char *now, char *out, size_t size)
{
    out[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *a = pass ? now : then, *b = pass ? then : now;
        for (const char *p = a; *p;) {
            size_t len = strcspn(p, ","), name = strcspn(p, ":");
            char item[300], nm[300];
            snprintf(item, sizeof item, "%.*s", (int)len, p);
            snprintf(nm, sizeof nm, "%.*s", (int)(name < len ? name : len), p);
            const char *hit = strstr(b, item);
            int same = hit && (hit == b || hit[-1] == ',') && (hit[len] == ',' || !hit[len]);
            size_t o = strlen(out), k = strlen(nm);
            if (!same && !strstr(out, nm) && o + k + 3 <= size) { /* ", name" while it fits */
                if (o)
                    memcpy(out + o, ", ", 2), o += 2;
                memcpy(out + o, nm, k + 1);
            }
            p += len + (p[len] == ',');
        }
    }
}

/* Prints s cut or padded to w columns (UTF-8: a character is one column). */
static void print_cols(const char *s, int w)
{
    int cols = 0;
    const char *p = s;
    for (; *p && cols < w; cols++)
        do
            p++;
        while ((*p & 0xC0) == 0x80);
    printf("%.*s%*s", (int)(p - s), s, w - cols, "");
}

/* Removes answers.txt from a "name:hash,..." list, in place (a step without answers tests does
 * not depend on it). */
static void drop_answers(char *list)
{
    char *a = strstr(list, "answers.txt:");
    while (a && a != list && a[-1] != ',')
        a = strstr(a + 1, "answers.txt:");
    if (!a)
        return;
    char *end = a + strcspn(a, ",");
    if (*end == ',')
        memmove(a, end + 1, strlen(end + 1) + 1);
    else
        a[a == list ? 0 : -1] = 0;
}

static step_rec *find(lab_rec *r, const char *id, int add)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->s[i].id, id))
            return &r->s[i];
    if (!add || r->n == MAX_STEPS)
        return NULL;
    step_rec *s = &r->s[r->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    return s;
}

/* Reads a lab's record (a missing file is an empty one; a line that is not one is skipped). */
static void rec_load(const char *path, lab_rec *r, char *note, size_t nsize)
{
    memset(r, 0, sizeof *r);
    note[0] = 0;
    FILE *f = rl_file_read_regular(path);
    if (!f) {
        if (errno != ENOENT)
            snprintf(note, nsize, "%s: %s: no grade is read from it", path,
                     errno == EINVAL ? "not a regular file" : strerror(errno));
        return;
    }
    char line[FILES_LEN + 128], id[RL_HINTS_ID_LEN], files[FILES_LEN];
    int score, max, bad = 0;
    long long when;
    while (fgets(line, sizeof line, f)) {
        files[0] = 0;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%15s %d %d %lld " FILES_FMT, id, &score, &max, &when, files) < 4) {
            bad++;
            continue;
        }
        step_rec *s = find(r, id, 1);
        if (s) {
            s->graded = 1, s->score = score, s->max = max, s->when = when;
            snprintf(s->files, sizeof s->files, "%s", files);
        }
    }
    fclose(f);
    if (bad)
        snprintf(note, nsize, "%s: %d line%s that %s not a grade's record (left out; make grade writes them)", path,
                 bad, bad == 1 ? "" : "s", bad == 1 ? "is" : "are");
}

static int rec_save(const char *path, const lab_rec *r, const char *lab)
{
    char tmp[4200];
    FILE *f = rl_file_begin(path, tmp, sizeof tmp);
    if (!f)
        return -1;
    fprintf(f, "# the last grade of each step of %s (make grade writes it; make progress reads it)\n", lab);
    for (int i = 0; i < r->n; i++)
        if (r->s[i].graded)
            fprintf(f, "%s %d %d %lld %s\n", r->s[i].id, r->s[i].score, r->s[i].max, r->s[i].when, r->s[i].files);
    return rl_file_commit(f, tmp, path);
}

/* The grader's results file, or NULL with a message. */
static json_t *load_results(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j || !json_is_array(json_object_get(j, "tests"))) {
        fprintf(stderr, "ringlab progress: %s is not a grader's results file (%s)\n", path, j ? "no tests" : e.text);
        json_decref(j);
        return NULL;
    }
    return j;
}

static int record(const char *dir, const char *labdir, const char *results, const char *graded_files)
{
    char lab[256], path[1280], files[FILES_LEN];
    lab_name(labdir, lab, sizeof lab);
    snprintf(path, sizeof path, "%s/%s.txt", dir, lab);
    json_t *j = load_results(results);
    if (!j)
        return 1;
    lab_rec r, fresh;
    char note[600];
    rec_load(path, &r, note, sizeof note);
    memset(&fresh, 0, sizeof fresh);
    if (graded_files)
        snprintf(files, sizeof files, "%s", graded_files);
    else
        lab_files(labdir, files, sizeof files);
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(j, "tests"), i, t)
    {
        const char *id = json_string_value(json_object_get(t, "number"));
        if (id && atoi(id) != atoi(lab)) { /* a step of another lab: the wrong results file */
            fprintf(stderr, "ringlab progress: %s grades step %s, not a step of lab %s: give lab %s's results file\n",
                    results, id, lab, lab);
            json_decref(j);
            return 2;
        }
        step_rec *s = id ? find(&fresh, id, 1) : NULL;
        if (!s)
            continue;
        s->graded = 1;
        const char *name = json_string_value(json_object_get(t, "name"));
        s->uses_answers |= name && strstr(name, ": answers: ") != NULL;
        s->score += (int)json_integer_value(json_object_get(t, "score"));
        s->max += (int)json_integer_value(json_object_get(t, "max_score"));
    }
    json_decref(j);
    for (int k = 0; k < fresh.n; k++) {
        step_rec *s = find(&r, fresh.s[k].id, 1);
        if (!s)
            continue;
        *s = fresh.s[k];
        s->when = (long long)time(NULL);
        snprintf(s->files, sizeof s->files, "%s", files);
        if (!fresh.s[k].uses_answers)
            drop_answers(s->files);
    }
    if ((mkdir(dir, 0755) && errno != EEXIST) || rec_save(path, &r, lab)) {
        fprintf(stderr, "ringlab progress: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* Prints each test of the step's last grade (from the grader's results file) and what failed. */
static void step_detail(const char *results, const char *step)
{
    json_error_t e;
    json_t *j = json_load_file(results, 0, &e);
    if (!j) {
        printf("  (no results file %s: grade the step first)\n", results);
        return;
    }
    size_t i;
    json_t *t;
    int failed = 0;
    json_array_foreach(json_object_get(j, "tests"), i, t)
    {
        const char *id = json_string_value(json_object_get(t, "number"));
        if (!id || strcmp(id, step))
            continue;
        int sc = (int)json_integer_value(json_object_get(t, "score"));
        int mx = (int)json_integer_value(json_object_get(t, "max_score"));
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *out = json_string_value(json_object_get(t, "output"));
        printf("  %s %2d/%-2d %s\n", sc == mx ? "✓" : "✗", sc, mx, name ? name : "?");
        if (sc < mx && out && failed++ < 2) /* the first two failures' messages, folded */
            for (int ln = 0; ln < 8 && *out; ln++) {
                int len = (int)strcspn(out, "\n"), cut = len > 100 ? 100 : len;
                while (cut < len && cut > 60 && out[cut] != ' ') /* at a space where there is one */
                    cut--;
                while (cut < len && (out[cut] & 0xC0) == 0x80) /* never inside a UTF-8 character */
                    cut++;
                printf("        %.*s\n", cut, out);
                out += cut + (cut == len ? out[len] == '\n' : out[cut] == ' ');
            }
    }
    json_decref(j);
}

/* Prints one lab's steps; sets *next (once) to the first thing to do. */
static void show_lab(const char *labdir, const char *dir, const char *detail, char *next, size_t nsize)
{
    char lab[256], path[1280], files[FILES_LEN], err[512];
    lab_name(labdir, lab, sizeof lab);
    snprintf(path, sizeof path, "%s/%s.txt", dir, lab);
    lab_rec r;
    char note[600], hnote[600] = "";
    rec_load(path, &r, note, sizeof note);
    lab_files(labdir, files, sizeof files);
    rl_hints h;
    rl_hints_used u;
    snprintf(path, sizeof path, "%s/hints.md", labdir);
    if (rl_hints_load(path, &h, err, sizeof err)) {
        printf("lab %s: %s\n", lab, err);
        rl_hints_free(&h);
        return;
    }
    snprintf(path, sizeof path, "%s/hints-used.txt", labdir);
    if (rl_hints_used_load(path, &u, err, sizeof err)) { /* (as the grader would refuse it) */
        memset(&u, 0, sizeof u);
        snprintf(hnote, sizeof hnote, "%s; the hints are counted as 0 here and make grade refuses it", err);
    }
    int n = atoi(lab), got = 0, of = 0;
    printf("lab %s\n", lab);
    if (note[0])
        printf("  note: %s\n", note);
    if (hnote[0])
        printf("  note: %s\n", hnote);
    printf("  %-5s %-40s %7s  %-5s %s\n", "step", "", "score", "hints", "state");
    for (int k = 0; k < h.nsteps; k++) {
        const rl_hint_step *st = &h.steps[k];
        if (detail && strcmp(detail, st->id))
            continue;
        step_rec *s = find(&r, st->id, 0);
        int hints = rl_hints_used_get(&u, st->id);
        char state[512], score[32], changed[256] = "", todo[512] = "";
        if (s) {
            char now[FILES_LEN];
            snprintf(now, sizeof now, "%s", files);
            if (!strstr(s->files, "answers.txt:"))
                drop_answers(now);
            changed_files(s->files, now, changed, sizeof changed);
        }
        if (!s) {
            snprintf(score, sizeof score, "-");
            snprintf(state, sizeof state, "not graded yet");
            snprintf(todo, sizeof todo, "step %s (%s): read %s/README.md, write it, then make grade LAB=%d STEP=%s",
                     st->id, st->title, labdir, n, st->id);
        } else {
            snprintf(score, sizeof score, "%d/%d", s->score, s->max);
            got += s->score, of += s->max;
            char when[32];
            time_t w = (time_t)s->when;
            strftime(when, sizeof when, "%b %d %H:%M", localtime(&w));
            if (changed[0]) {
                snprintf(state, sizeof state, "stale: %s changed since its grade (%s)", changed, when);
                snprintf(todo, sizeof todo, "step %s: regrade it (%s changed): make grade LAB=%d STEP=%s", st->id,
                         changed, n, st->id);
            } else if (s->score >= s->max)
                snprintf(state, sizeof state, "full marks (%s)", when);
            else {
                snprintf(state, sizeof state, "%d point%s to find (%s)", s->max - s->score,
                         s->max - s->score == 1 ? "" : "s", when);
                char stuck[128] = "";
                if (hints < st->nrungs)
                    snprintf(stuck, sizeof stuck, "; stuck? make hint LAB=%d STEP=%s (%d of %d seen)", n, st->id,
                             hints, st->nrungs);
                snprintf(todo, sizeof todo, "step %s: %d of %d points — make grade LAB=%d STEP=%s says what fails%s",
                         st->id, s->score, s->max, n, st->id, stuck);
            }
        }
        printf("  %-5s ", st->id);
        print_cols(st->title, 40);
        printf(" %7s  %d/%d   %s\n", score, hints, st->nrungs, state);
        if (todo[0] && next && !next[0])
            snprintf(next, nsize, "%s", todo);
        if (detail) {
            snprintf(path, sizeof path, "%s/../results-%s.json", dir, lab);
            step_detail(path, st->id);
        }
    }
    if (!detail && of) {
        char total[32];
        snprintf(total, sizeof total, "%d/%d", got, of);
        printf("  %-46s %7s\n", "graded so far", total);
    }
    rl_hints_free(&h);
}

/* 1 when dir is a lab's folder (it has a hints.md); else says so and returns 0. */
static int is_lab_dir(const char *dir)
{
    char path[1280];
    struct stat st;
    snprintf(path, sizeof path, "%s/hints.md", dir);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    fprintf(stderr, "ringlab progress: '%s' is not a lab's folder (it has no hints.md; e.g. labs/28_ddp)\n", dir);
    return 0;
}

int rl_cmd_progress(int argc, char **argv)
{
    const char *dir = "build/progress", *step = NULL, *rec_lab = NULL, *rec_res = NULL, *files = NULL;
    const char *labs[16];
    int nlabs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout, 0);
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--step") && i + 1 < argc)
            step = argv[++i];
        else if (!strcmp(argv[i], "--files") && i + 1 < argc)
            files = argv[++i];
        else if (!strcmp(argv[i], "--files-of") && i + 1 < argc) {
            char list[FILES_LEN];
            if (!is_lab_dir(argv[i + 1]))
                return 2;
            lab_files(argv[i + 1], list, sizeof list);
            printf("%s\n", list);
            return 0;
        } else if (!strcmp(argv[i], "--record") && i + 2 < argc)
            rec_lab = argv[i + 1], rec_res = argv[i + 2], i += 2;
        else if (!strcmp(argv[i], "--dir") || !strcmp(argv[i], "--step") || !strcmp(argv[i], "--files") ||
                 !strcmp(argv[i], "--files-of") || !strcmp(argv[i], "--record"))
            return fprintf(stderr, "ringlab progress: %s needs %s\n", argv[i],
                           strcmp(argv[i], "--record") ? "a value" : "LABDIR and RESULTS.json"), usage(stderr, 2);
        else if (argv[i][0] == '-')
            return fprintf(stderr, "ringlab progress: unknown option '%s'\n", argv[i]), usage(stderr, 2);
        else if (nlabs < 16)
            labs[nlabs++] = argv[i];
    }
    char why[160];
    if (files && !files_list_ok(files, why, sizeof why))
        return fprintf(stderr, "ringlab progress: --files is not a list from --files-of: %s\n", why), usage(stderr, 2);
    if (rec_lab)
        return record(dir, rec_lab, rec_res, files);
    if (!nlabs) {
        DIR *d = opendir("labs");
        struct dirent *e;
        static char names[16][300];
        while (d && (e = readdir(d)) && nlabs < 16)
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
                snprintf(names[nlabs], sizeof names[nlabs], "labs/%s", e->d_name);
                labs[nlabs] = names[nlabs];
                nlabs++;
            }
        if (d)
            closedir(d);
        qsort(labs, (size_t)nlabs, sizeof *labs, by_name);
        if (!nlabs)
            return fprintf(stderr, "ringlab progress: no labs/ here: run it from the course's folder\n"), 2;
    }
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return fprintf(stderr, "ringlab progress: --dir '%s' is not a folder\n", dir), 2;
    int has_step = 0;
    for (int i = 0; i < nlabs; i++) { /* each a lab folder; the step, if one is named, in one of them */
        char path[1280], err[512];
        rl_hints h;
        if (!is_lab_dir(labs[i]))
            return 2;
        snprintf(path, sizeof path, "%s/hints.md", labs[i]);
        if (step && !rl_hints_load(path, &h, err, sizeof err))
            for (int k = 0; k < h.nsteps; k++)
                has_step |= !strcmp(h.steps[k].id, step);
        if (step)
            rl_hints_free(&h);
    }
    if (step && !has_step)
        return fprintf(stderr, "ringlab progress: no lab has a step '%s' (steps are named like 28.1)\n", step), 2;
    char next[600] = "", name[256];
    for (int i = 0; i < nlabs; i++) {
        lab_name(labs[i], name, sizeof name);
        if (!step || atoi(name) == atoi(step))
            show_lab(labs[i], dir, step, next, sizeof next);
    }
    printf("Next: %s\n", next[0] ? next : "every step graded has full marks and none is stale");
    return 0;
}
