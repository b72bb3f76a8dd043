/* answers.c — reading a learner's answers file: one `key = value` per line, a number with at
 * most one unit word, or one letter. No grading here: grade.c compares what these return. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "grade.h"

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
    FILE *f = path ? rl_file_read_regular(path) : NULL;
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int found = 0, lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        for (ssize_t i = 0; i < len; i++) /* a NUL byte would hide the rest of its line: show it as '?' */
            if (!line[i])
                line[i] = '?';
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

int rl_grade_parse_number(const char *v, double *out)
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

int rl_grade_parse_choice(const char *v)
{
    const char *p = v + (v[0] == '(');
    size_t len = strlen(p);
    int closed = len == 2 && p[1] == ')';
    int letter = tolower((unsigned char)p[0]) - 'a';
    if (letter < 0 || letter > 3 || !(len == 1 || closed) || (v[0] == '(' && !closed))
        return -1;
    return letter;
}
