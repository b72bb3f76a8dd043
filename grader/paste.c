/* paste.c — token fingerprints of C functions (paste.h). */
#include "paste.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { K = 10, W = 6 }; /* tokens per k-gram, k-grams per window */

static const char *const keywords[] = { "auto", "break", "case", "char", "const", "continue", "default", "do",
                                        "double", "else", "enum", "extern", "float", "for", "goto", "if", "int",
                                        "long", "return", "short", "signed", "sizeof", "static", "struct", "switch",
                                        "typedef", "union", "unsigned", "void", "volatile", "while", NULL };

/* One token of the text: its normalised form (a keyword, "I", "N", "S" or a punctuation
 * character) and, for identifiers, the word itself. */
typedef struct token {
    char norm[12];
    const char *word;
    size_t len;
} token;

/* Splits text into tokens, comments and preprocessor lines left out; *n tokens (malloc'd). */
static token *tokenize(const char *p, int *n)
{
    int cap = 1024, k = 0;
    token *t = malloc((size_t)cap * sizeof *t);
    int bol = 1;
    while (t && *p) {
        if (k == cap) {
            token *m = realloc(t, (size_t)(cap *= 2) * sizeof *t);
            if (!m)
                break;
            t = m;
        }
        if (*p == '\n') {
            bol = 1, p++;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (bol && *p == '#') { /* a preprocessor line, with its continuations */
            while (*p && !(*p == '\n' && p[-1] != '\\'))
                p++;
            continue;
        }
        bol = 0;
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
            continue;
        }
        token *x = &t[k];
        memset(x, 0, sizeof *x);
        if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q)
                p += (*p == '\\' && p[1]) ? 2 : 1;
            p += *p != 0;
            strcpy(x->norm, q == '"' ? "S" : "N");
        } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
                   ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
                p++;
            strcpy(x->norm, "N");
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            x->word = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            x->len = (size_t)(p - x->word);
            strcpy(x->norm, "I");
            for (int i = 0; keywords[i]; i++)
                if (strlen(keywords[i]) == x->len && !strncmp(keywords[i], x->word, x->len))
                    strcpy(x->norm, keywords[i]);
        } else {
            x->norm[0] = *p++;
        }
        k++;
    }
    *n = t ? k : 0;
    return t;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The winnowed fingerprints of tokens [lo, hi) into f. */
static void fingerprint(const token *t, int lo, int hi, rl_fingerprint *f)
{
    int ng = hi - lo - K + 1;
    f->n = 0;
    f->h = malloc((size_t)(ng > 0 ? ng : 1) * sizeof *f->h);
    if (!f->h || ng <= 0)
        return;
    uint64_t *g = malloc((size_t)ng * sizeof *g);
    if (!g)
        return;
    for (int i = 0; i < ng; i++) { /* FNV-1a over the k-gram's normalised tokens, each ended by 0xff */
        uint64_t h = 0xcbf29ce484222325ull;
        for (int j = 0; j < K; j++) {
            for (const char *c = t[lo + i + j].norm; *c; c++)
                h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
            h = (h ^ 0xff) * 0x100000001b3ull;
        }
        g[i] = h;
    }
    int nw = ng >= W ? ng - W + 1 : 1;
    for (int i = 0; i < nw; i++) {
        uint64_t m = g[i];
        for (int j = i; j < i + W && j < ng; j++)
            m = g[j] < m ? g[j] : m;
        f->h[f->n++] = m;
    }
    free(g);
    qsort(f->h, (size_t)f->n, sizeof *f->h, cmp_u64);
    int u = 0;
    for (int i = 0; i < f->n; i++)
        if (!u || f->h[u - 1] != f->h[i])
            f->h[u++] = f->h[i];
    f->n = u;
}

rl_fingerprint *rl_paste_functions(const char *text, int *n)
{
    int nt, cap = 16;
    *n = 0;
    token *t = tokenize(text, &nt);
    rl_fingerprint *fs = calloc((size_t)cap, sizeof *fs);
    if (!t || !fs) {
        free(t), free(fs);
        return NULL;
    }
    /* a definition: at depth 0, NAME ( ... ) { ... } */
    for (int i = 0, depth = 0; i < nt; i++) {
        char c = t[i].norm[0];
        if (c == '{' && depth == 0 && i > 0 && t[i - 1].norm[0] == ')') {
            int open = i - 1;
            for (int par = 0; open >= 0; open--) { /* the '(' of the parameter list */
                par += t[open].norm[0] == ')' ? 1 : t[open].norm[0] == '(' ? -1 : 0;
                if (par == 0)
                    break;
            }
            int end = i + 1;
            for (int d = 1; end < nt && d; end++)
                d += t[end].norm[0] == '{' ? 1 : t[end].norm[0] == '}' ? -1 : 0;
            if (open > 0 && t[open - 1].word) {
                if (*n == cap) {
                    rl_fingerprint *m = realloc(fs, (size_t)(cap *= 2) * sizeof *fs);
                    if (!m)
                        break;
                    fs = m;
                }
                rl_fingerprint *f = &fs[(*n)++];
                memset(f, 0, sizeof *f);
                size_t len = t[open - 1].len < sizeof f->name - 1 ? t[open - 1].len : sizeof f->name - 1;
                memcpy(f->name, t[open - 1].word, len);
                fingerprint(t, open - 1, end, f);
            }
            i = end - 1;
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && depth > 0) {
            depth--;
        }
    }
    free(t);
    return fs;
}

double rl_paste_share(const rl_fingerprint *ref, const rl_fingerprint *f)
{
    if (!ref->n)
        return 0;
    int hits = 0;
    for (int i = 0, j = 0; i < ref->n && j < f->n;) {
        if (ref->h[i] == f->h[j])
            hits++, i++, j++;
        else if (ref->h[i] < f->h[j])
            i++;
        else
            j++;
    }
    return (double)hits / ref->n;
}

void rl_paste_free(rl_fingerprint *f)
{
    free(f->h);
    f->h = NULL;
    f->n = 0;
}
