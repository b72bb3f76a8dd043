/* results.c — the score of `make grade`, from the results files the graders wrote (never
 * from their printed output, which a lab's code could add lines to).
 *
 *   results [--out FILE.json] [--dir DIR] [--meta KEY=VALUE]... LAB=RESULTS.json ...
 *   results --submitters submission_metadata.json
 *
 * Reads each lab's Gradescope-format results (grade --json), prints one line per lab and
 * the total ("Score: X/Y"), and writes the whole course as one Gradescope results file
 * (--out; --meta adds KEY: VALUE to its extra_data, e.g. the grader's commit) and/or each
 * lab's file as DIR/results-LAB.json (--dir). A results file that is
 * missing or malformed counts 0 of nothing and fails the run: its grader did not finish.
 * Exit status 0 when every lab has full marks, 1 otherwise, 2 on bad usage or output.
 * --submitters prints the owners of a Gradescope submission, one per line: the email, a tab and
 * the student id ("" when none) of each of its "users"; exit 1 when it names none. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lab's results, or NULL with a line printed saying why. */
static json_t *load(const char *lab, const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) {
        printf("lab %s: no results (%s: %s) — its grader did not finish: see its output above\n", lab, path, e.text);
        return NULL;
    }
    json_t *s = json_object_get(j, "score"), *m = json_object_get(j, "max_score"), *t = json_object_get(j, "tests");
    if (!json_is_integer(s) || !json_is_integer(m) || !json_is_array(t) || json_integer_value(m) <= 0 ||
        json_integer_value(s) < 0 || json_integer_value(s) > json_integer_value(m)) {
        printf("lab %s: %s is not a grader's results file (score, max_score and tests)\n", lab, path);
        json_decref(j);
        return NULL;
    }
    long long sum = 0, max = 0;
    size_t i;
    json_t *o;
    json_array_foreach(t, i, o)
    {
        json_t *ts = json_object_get(o, "score"), *tm = json_object_get(o, "max_score");
        /* a test scores 0..max; a hint penalty is a test of max 0 and a score <= 0 */
        if (!json_is_integer(ts) || !json_is_integer(tm) || json_integer_value(tm) < 0 ||
            json_integer_value(ts) > json_integer_value(tm) ||
            (json_integer_value(ts) < 0 && json_integer_value(tm) != 0)) {
            printf("lab %s: %s has a test without a valid score\n", lab, path);
            json_decref(j);
            return NULL;
        }
        sum += json_integer_value(ts);
        max += json_integer_value(tm);
    }
    if (sum != json_integer_value(s) || max != json_integer_value(m)) {
        printf("lab %s: %s: its tests add up to %lld/%lld, not the %lld/%lld it states\n", lab, path, sum, max,
               (long long)json_integer_value(s), (long long)json_integer_value(m));
        json_decref(j);
        return NULL;
    }
    return j;
}

/* results --submitters FILE: the submission's owners, from Gradescope's metadata. */
static int submitters(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e), *users = json_object_get(j, "users"), *u;
    size_t i, n = 0;
    json_array_foreach(users, i, u)
    {
        const char *email = json_string_value(json_object_get(u, "email")), *sid = json_string_value(json_object_get(u, "sid"));
        if (email && *email && !strpbrk(email, "\t\n")) {
            printf("%s\t%s\n", email, sid && !strpbrk(sid, "\t\n") ? sid : "");
            n++;
        }
    }
    if (!n)
        fprintf(stderr, "results: %s names no submitter (%s)\n", path, j ? "no users[].email" : e.text);
    json_decref(j);
    return n ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *dir = NULL;
    if (argc == 3 && !strcmp(argv[1], "--submitters"))
        return submitters(argv[2]);
    json_t *meta = json_object();
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (!strcmp(argv[first], "--out") && first + 1 < argc)
            out = argv[++first];
        else if (!strcmp(argv[first], "--dir") && first + 1 < argc)
            dir = argv[++first];
        else if (!strcmp(argv[first], "--meta") && first + 1 < argc && strchr(argv[first + 1], '=')) {
            char *kv = argv[++first], *eq = strchr(kv, '=');
            *eq = 0;
            json_object_set_new(meta, kv, json_string(eq + 1));
        }
        else
            break;
    }
    if (first >= argc || argv[first][0] == '-') {
        fprintf(stderr, "usage: results [--out FILE.json] [--dir DIR] [--meta KEY=VALUE]... LAB=RESULTS.json ...\n");
        json_decref(meta);
        return 2;
    }
    json_t *all = json_object(), *tests = json_array(), *seeds = json_object();
    long long score = 0, max = 0;
    double secs = 0;
    int ok = 1, nlabs = argc - first;
    for (int a = first; a < argc; a++) {
        char *eq = strchr(argv[a], '=');
        if (!eq) {
            fprintf(stderr, "results: '%s' is not LAB=RESULTS.json\n", argv[a]);
            return 2;
        }
        *eq = 0;
        const char *lab = argv[a], *path = eq + 1;
        json_t *j = load(lab, path);
        if (!j) {
            ok = 0;
            continue;
        }
        long long s = json_integer_value(json_object_get(j, "score")), m = json_integer_value(json_object_get(j, "max_score"));
        if (nlabs > 1)
            printf("lab %s: %lld/%lld\n", lab, s, m);
        score += s;
        max += m;
        size_t i; /* passed: every test at its full score (a hint penalty, max 0, is no failure) */
        json_t *o;
        json_array_foreach(json_object_get(j, "tests"), i, o)
            ok &= json_integer_value(json_object_get(o, "max_score")) == 0 ||
                  json_integer_value(json_object_get(o, "score")) == json_integer_value(json_object_get(o, "max_score"));
        json_t *t = json_object_get(j, "execution_time");
        secs += json_is_number(t) ? json_number_value(t) : 0;
        json_array_extend(tests, json_object_get(j, "tests"));
        json_t *seed = json_object_get(json_object_get(j, "extra_data"), "seed");
        if (seed)
            json_object_set(seeds, lab, seed);
        if (dir) {
            char p[4096];
            snprintf(p, sizeof p, "%s/results-%s.json", dir, lab);
            if (json_dump_file(j, p, JSON_INDENT(2))) {
                fprintf(stderr, "results: cannot write %s\n", p);
                return 2;
            }
            printf("Results of lab %s written to %s (Gradescope format)\n", lab, p);
        }
        json_decref(j);
    }
    if (nlabs > 1)
        printf("Score: %lld/%lld\n", score, max);
    else
        printf("(the score above, as its results file records it: %lld/%lld)\n", score, max);
    if (out) {
        char summary[128];
        snprintf(summary, sizeof summary, "Score: %lld/%lld", score, max);
        json_object_set_new(all, "score", json_integer(score));
        json_object_set_new(all, "max_score", json_integer(max));
        json_object_set_new(all, "execution_time", json_real(secs));
        json_object_set_new(all, "output", json_string(summary));
        json_object_set(meta, "seeds", seeds);
        json_object_set(all, "extra_data", meta);
        json_object_set(all, "tests", tests);
        if (json_dump_file(all, out, JSON_INDENT(2))) {
            fprintf(stderr, "results: cannot write %s\n", out);
            return 2;
        }
        printf("Results written to %s (Gradescope format)\n", out);
    }
    json_decref(all);
    json_decref(tests);
    json_decref(seeds);
    json_decref(meta);
    return ok ? 0 : 1;
}
