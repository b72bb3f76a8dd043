/* rules.c — the rules of grader/allow/ (rules.h). */
#include "rules.h"
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

int rl_rules_match(const char *pat, const char *name)
{
    size_t n = strlen(pat);
    if (n && pat[n - 1] == '*')
        return strncmp(pat, name, n - 1) == 0;
    return strcmp(pat, name) == 0;
}

int rl_rules_read(FILE *f, const char *name, rl_rules *rs)
{
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        char *hash = strchr(line, '#'), *why = "";
        if (hash) {
            *hash = 0;
            why = hash + 1;
            while (*why == ' ')
                why++;
            why[strcspn(why, "\n")] = 0;
        }
        char *save = NULL, *w = strtok_r(line, " \t\n", &save);
        if (!w)
            continue;
        rl_rule r = { 0 };
        r.why = dup_str(why, strlen(why));
        if (strcmp(w, "define") == 0) {
            char *fn = strtok_r(NULL, " \t\n", &save), *step = strtok_r(NULL, " \t\n", &save);
            if (!fn || !step) {
                fprintf(stderr, "rules: %s:%d: define needs a name and a step\n", name, lineno);
                free(r.why);
                rc = -1;
                break;
            }
            r.kind = 'd';
            r.func = dup_str(fn, strlen(fn));
            r.step = dup_str(step, strlen(step));
        } else if (strcmp(w, "allow") == 0 || strcmp(w, "deny") == 0) {
            r.kind = w[0] == 'a' ? 'a' : 'n';
            for (char *p; (p = strtok_r(NULL, " \t\n", &save));) {
                size_t n = strlen(p);
                if (r.kind == 'n' && r.npats == 0 && !r.func && n > 1 && p[n - 1] == ':') {
                    r.kind = 'f';
                    r.func = dup_str(p, n - 1);
                    continue;
                }
                r.pats = realloc(r.pats, (size_t)(r.npats + 1) * sizeof *r.pats);
                r.pats[r.npats++] = dup_str(p, n);
            }
        } else if (strcmp(w, "reference") == 0) {
            char *file = strtok_r(NULL, " \t\n", &save);
            r.kind = 'r';
            r.func = file ? dup_str(file, strlen(file)) : NULL;
            for (char *p; (p = strtok_r(NULL, " \t\n", &save));) {
                r.pats = realloc(r.pats, (size_t)(r.npats + 1) * sizeof *r.pats);
                r.pats[r.npats++] = dup_str(p, strlen(p));
            }
            if (!r.func || !r.npats) {
                fprintf(stderr, "rules: %s:%d: reference needs a file and at least one function\n", name, lineno);
                free(r.why);
                free(r.func);
                rc = -1;
                break;
            }
        } else {
            fprintf(stderr, "rules: %s:%d: unknown rule '%s' (define, allow, deny, reference)\n", name, lineno, w);
            free(r.why);
            rc = -1;
            break;
        }
        if (rs->n == rs->cap) {
            rs->cap = rs->cap ? 2 * rs->cap : 32;
            rs->r = realloc(rs->r, (size_t)rs->cap * sizeof *rs->r);
        }
        rs->r[rs->n++] = r;
    }
    free(line);
    return rc;
}

int rl_rules_read_file(const char *path, rl_rules *rs)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "rules: cannot read the rules file %s\n", path);
        return -1;
    }
    int rc = rl_rules_read(f, path, rs);
    fclose(f);
    return rc;
}

const rl_rule *rl_rules_define(const rl_rules *rs, const char *name)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->r[i].kind == 'd' && strcmp(rs->r[i].func, name) == 0)
            return &rs->r[i];
    return NULL;
}

const rl_rule *rl_rules_find(const rl_rules *rs, int kind, const char *func, const char *name)
{
    for (int i = 0; i < rs->n; i++) {
        const rl_rule *r = &rs->r[i];
        if (r->kind != kind || (kind == 'f' && strcmp(r->func, func) != 0))
            continue;
        for (int k = 0; k < r->npats; k++)
            if (rl_rules_match(r->pats[k], name))
                return r;
    }
    return NULL;
}

void rl_rules_free(rl_rules *rs)
{
    for (int i = 0; i < rs->n; i++) {
        for (int k = 0; k < rs->r[i].npats; k++)
            free(rs->r[i].pats[k]);
        free(rs->r[i].pats);
        free(rs->r[i].func);
        free(rs->r[i].step);
        free(rs->r[i].why);
    }
    free(rs->r);
}
